/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory registrations for btl_get: the regions a peer may read, each a
 * slot with a key.  Pure logic, no Open MPI (tests/unit/test_btl_reg.c);
 * the caller locks.
 *
 * gamma has no NIC to pin memory for, so a registration is only a
 * promise: a peer's get is served when it names a live slot, that slot's
 * key and a range inside it.  A slot given back gets a new key when it is
 * handed out again, so a stale handle names nothing.
 */
#ifndef BTL_GAMMA_REG_H
#define BTL_GAMMA_REG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What ob1 carries to the peer in its RGET header, byte for byte. */
struct mca_btl_base_registration_handle_t {
	uint64_t base;
	uint64_t len;
	uint32_t id;  /* slot in the owner's table */
	uint32_t key; /* 0 while the slot is free */
};

/* Slots live in chunks that never move: ob1 keeps pointers to them. */
#define GAMMA_REG_CHUNK  256
#define GAMMA_REG_CHUNKS 256
#define GAMMA_REG_NONE   UINT32_MAX

struct gamma_regs {
	struct mca_btl_base_registration_handle_t *chunk[GAMMA_REG_CHUNKS];
	uint32_t used;      /* slots handed out at least once */
	uint32_t free_head; /* slots given back, linked through their base */
	uint32_t next_key;
};

void gamma_regs_init(struct gamma_regs *r);
void gamma_regs_fini(struct gamma_regs *r);
/* NULL when every slot is taken or memory is short. */
struct mca_btl_base_registration_handle_t *gamma_regs_add(struct gamma_regs *r, const void *base,
                                                          size_t len);
void gamma_regs_remove(struct gamma_regs *r, struct mca_btl_base_registration_handle_t *h);
/* Whether [addr, addr + len) lies inside the live registration id, key. */
bool gamma_regs_allow(const struct gamma_regs *r, uint32_t id, uint32_t key, uint64_t addr,
                      uint64_t len);

#endif
