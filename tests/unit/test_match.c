/* Matching: tag/ignore masks, source wildcards, queue order, claims. */
#include <criterion/criterion.h>

#include "gm_msg.h"

static struct gm_rx rxs[4];
static struct gm_ux uxs[4];

Test(match, tag_and_ignore_bits)
{
	cr_assert(gm_match_tag(0x1234, 0, 0x1234));
	cr_assert(!gm_match_tag(0x1234, 0, 0x1235));
	cr_assert(gm_match_tag(0x1230, 0xF, 0x123F));
	cr_assert(gm_match_tag(0x8000000000000000ull, 0, 0x8000000000000000ull));
	cr_assert(!gm_match_tag(0x8000000000000000ull, 0, 0));
	cr_assert(gm_match_tag(0, ~0ull, 0xDEADBEEF));
	cr_assert(gm_match_src(FI_ADDR_UNSPEC, 7));
	cr_assert(gm_match_src(7, 7));
	cr_assert(!gm_match_src(7, 8));
	cr_assert(gm_match_src(FI_ADDR_UNSPEC, FI_ADDR_NOTAVAIL));
	cr_assert(!gm_match_src(FI_ADDR_UNSPEC, GM_ADDR_HELD));
	cr_assert(!gm_match_src(7, GM_ADDR_HELD));
}

Test(match, posted_queue_in_post_order)
{
	struct gm_list q;

	gm_list_init(&q);
	rxs[0] = (struct gm_rx){.src = 3, .tag = 5};
	rxs[1] = (struct gm_rx){.src = FI_ADDR_UNSPEC, .tag = 5};
	rxs[2] = (struct gm_rx){.src = FI_ADDR_UNSPEC, .tag = 0, .ignore = ~0ull};
	for (int i = 0; i < 3; i++)
		gm_list_add_tail(&q, &rxs[i].entry);
	cr_assert_eq(gm_match_posted(&q, 3, 5), &rxs[0]);
	cr_assert_eq(gm_match_posted(&q, 4, 5), &rxs[1]);
	cr_assert_eq(gm_match_posted(&q, 4, 6), &rxs[2]);
	gm_list_del(&rxs[0].entry);
	cr_assert_eq(gm_match_posted(&q, 3, 5), &rxs[1]);
	gm_list_del(&rxs[2].entry);
	cr_assert_null(gm_match_posted(&q, 4, 6));
}

Test(match, unexpected_claims_and_bound_are_hidden)
{
	struct gm_list q;
	int ctx;

	gm_list_init(&q);
	uxs[0] = (struct gm_ux){.src = 1, .tag = 9};
	uxs[1] = (struct gm_ux){.src = 2, .tag = 9};
	uxs[2] = (struct gm_ux){.src = 2, .tag = 10};
	for (int i = 0; i < 3; i++)
		gm_list_add_tail(&q, &uxs[i].entry);
	cr_assert_eq(gm_match_unexpected(&q, FI_ADDR_UNSPEC, 9, 0, NULL, false), &uxs[0]);
	cr_assert_eq(gm_match_unexpected(&q, 2, 9, 0, NULL, false), &uxs[1]);
	cr_assert_eq(gm_match_unexpected(&q, 2, 8, 3, NULL, false), &uxs[1]);
	uxs[0].claimed = true;
	uxs[0].claim_ctx = &ctx;
	cr_assert_eq(gm_match_unexpected(&q, FI_ADDR_UNSPEC, 9, 0, NULL, false), &uxs[1]);
	cr_assert_eq(gm_match_unexpected(&q, FI_ADDR_UNSPEC, 0, 0, &ctx, true), &uxs[0]);
	cr_assert_null(gm_match_unexpected(&q, FI_ADDR_UNSPEC, 0, 0, &q, true));
	uxs[1].bound = &rxs[0];
	cr_assert_eq(gm_match_unexpected(&q, 2, 0, ~0ull, NULL, false), &uxs[2]);
}
