/* btl gamma's registrations (btl_gamma/btl_gamma_reg.c): which gets a peer may have served. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "btl_gamma_reg.h"

static uint8_t buf[4096];

Test(btl_reg, a_get_inside_a_live_registration_is_allowed)
{
	struct gamma_regs r;
	struct mca_btl_base_registration_handle_t *h;
	const uint64_t base = (uintptr_t)buf;

	gamma_regs_init(&r);
	h = gamma_regs_add(&r, buf, sizeof(buf));
	cr_assert_not_null(h);
	cr_assert_eq(h->base, base);
	cr_assert_eq(h->len, sizeof(buf));
	cr_assert_neq(h->key, 0);
	cr_assert(gamma_regs_allow(&r, h->id, h->key, base, sizeof(buf)), "the whole region");
	cr_assert(gamma_regs_allow(&r, h->id, h->key, base + 100, 200), "a piece");
	cr_assert(gamma_regs_allow(&r, h->id, h->key, base + sizeof(buf), 0),
	          "nothing, at its end");
	gamma_regs_fini(&r);
}

Test(btl_reg, a_get_outside_its_registration_is_refused)
{
	struct gamma_regs r;
	struct mca_btl_base_registration_handle_t *h;
	const uint64_t base = (uintptr_t)buf;

	gamma_regs_init(&r);
	h = gamma_regs_add(&r, buf + 1024, 1024);
	cr_assert_not_null(h);
	cr_assert_not(gamma_regs_allow(&r, h->id, h->key, base, 1024), "before it");
	cr_assert_not(gamma_regs_allow(&r, h->id, h->key, base + 1023, 2), "across its start");
	cr_assert_not(gamma_regs_allow(&r, h->id, h->key, base + 2047, 2), "across its end");
	cr_assert_not(gamma_regs_allow(&r, h->id, h->key, base + 2048, 1), "after it");
	cr_assert_not(gamma_regs_allow(&r, h->id, h->key, base + 1024, UINT64_MAX),
	              "a length that wraps");
	cr_assert_not(gamma_regs_allow(&r, h->id, h->key, UINT64_MAX, 2), "an address that wraps");
	cr_assert_not(gamma_regs_allow(&r, h->id, h->key + 1, base + 1024, 1), "another key");
	cr_assert_not(gamma_regs_allow(&r, h->id + 1, h->key, base + 1024, 1), "a slot never used");
	cr_assert_not(gamma_regs_allow(&r, UINT32_MAX, h->key, base + 1024, 1), "a wild slot");
	gamma_regs_fini(&r);
}

Test(btl_reg, a_handle_given_back_names_nothing_even_when_its_slot_is_reused)
{
	struct gamma_regs r;
	struct mca_btl_base_registration_handle_t *h, *again;
	const uint64_t base = (uintptr_t)buf;
	uint32_t id, key;

	gamma_regs_init(&r);
	h = gamma_regs_add(&r, buf, sizeof(buf));
	id = h->id;
	key = h->key;
	gamma_regs_remove(&r, h);
	cr_assert_not(gamma_regs_allow(&r, id, key, base, 1), "removed");
	cr_assert_not(gamma_regs_allow(&r, id, 0, base, 0), "key 0 of a free slot");
	again = gamma_regs_add(&r, buf, sizeof(buf));
	cr_assert_eq(again->id, id, "the slot is reused");
	cr_assert_neq(again->key, key, "under a new key");
	cr_assert_not(gamma_regs_allow(&r, id, key, base, 1), "the old key");
	cr_assert(gamma_regs_allow(&r, id, again->key, base, 1), "the new one");
	gamma_regs_fini(&r);
}

Test(btl_reg, the_table_refuses_when_full_and_takes_again_once_one_is_given_back)
{
	static struct mca_btl_base_registration_handle_t *h[GAMMA_REG_CHUNK * GAMMA_REG_CHUNKS];
	struct gamma_regs r;
	const size_t n = sizeof(h) / sizeof(h[0]);

	gamma_regs_init(&r);
	for (size_t i = 0; i < n; i++) {
		h[i] = gamma_regs_add(&r, buf, i % sizeof(buf));
		cr_assert_not_null(h[i], "registration %zu of %zu", i, n);
		cr_assert_eq(h[i]->id, i);
	}
	cr_assert_null(gamma_regs_add(&r, buf, 1), "one past the table");
	/* Slots stay where they are across chunks: ob1 holds the pointers. */
	cr_assert_eq(h[GAMMA_REG_CHUNK]->base, (uintptr_t)buf);
	cr_assert_eq(h[GAMMA_REG_CHUNK]->len, GAMMA_REG_CHUNK % sizeof(buf));
	gamma_regs_remove(&r, h[300]);
	gamma_regs_remove(&r, h[5]);
	cr_assert_eq(gamma_regs_add(&r, buf, 1), h[5], "the last given back first");
	cr_assert_eq(gamma_regs_add(&r, buf, 1), h[300]);
	cr_assert_null(gamma_regs_add(&r, buf, 1));
	gamma_regs_fini(&r);
}
