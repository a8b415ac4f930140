/* SPDX-License-Identifier: BSD-2-Clause */
/* Memory registrations for btl_get (btl_gamma_reg.h). */
#include "btl_gamma_reg.h"

#include <stdlib.h>
#include <string.h>

void gamma_regs_init(struct gamma_regs *r)
{
	memset(r, 0, sizeof(*r));
	r->free_head = GAMMA_REG_NONE;
	r->next_key = 1;
}

void gamma_regs_fini(struct gamma_regs *r)
{
	for (int i = 0; i < GAMMA_REG_CHUNKS; i++)
		free(r->chunk[i]);
	gamma_regs_init(r);
}

static struct mca_btl_base_registration_handle_t *slot(const struct gamma_regs *r, uint32_t id)
{
	if (id >= r->used)
		return NULL;
	return &r->chunk[id / GAMMA_REG_CHUNK][id % GAMMA_REG_CHUNK];
}

struct mca_btl_base_registration_handle_t *gamma_regs_add(struct gamma_regs *r, const void *base,
                                                          size_t len)
{
	struct mca_btl_base_registration_handle_t *h;
	uint32_t id;

	if (r->free_head != GAMMA_REG_NONE) {
		id = r->free_head;
		r->free_head = (uint32_t)slot(r, id)->base;
	} else {
		id = r->used;
		if (id / GAMMA_REG_CHUNK >= GAMMA_REG_CHUNKS)
			return NULL;
		if (!r->chunk[id / GAMMA_REG_CHUNK]) {
			r->chunk[id / GAMMA_REG_CHUNK] = calloc(GAMMA_REG_CHUNK, sizeof(*h));
			if (!r->chunk[id / GAMMA_REG_CHUNK])
				return NULL;
		}
		r->used++;
	}
	h = slot(r, id);
	h->base = (uint64_t)(uintptr_t)base;
	h->len = len;
	h->id = id;
	h->key = r->next_key++;
	if (!r->next_key)
		r->next_key = 1;
	return h;
}

void gamma_regs_remove(struct gamma_regs *r, struct mca_btl_base_registration_handle_t *h)
{
	h->key = 0;
	h->len = 0;
	h->base = r->free_head;
	r->free_head = h->id;
}

bool gamma_regs_allow(const struct gamma_regs *r, uint32_t id, uint32_t key, uint64_t addr,
                      uint64_t len)
{
	const struct mca_btl_base_registration_handle_t *h = slot(r, id);

	return h && h->key && key == h->key && addr >= h->base && addr - h->base <= h->len &&
	       len <= h->len - (addr - h->base);
}
