/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Message matching: the posted-receive and unexpected-message queues.
 * Both are searched head first, so receives match in the order they were
 * posted and messages in the order they arrived — MPI's non-overtaking rule.
 */
#include "gm_msg.h"

bool gm_match_tag(uint64_t want, uint64_t ignore, uint64_t tag)
{
	return ((want ^ tag) & ~ignore) == 0;
}

/* A held message (GM_ADDR_HELD) matches nothing, FI_ADDR_UNSPEC included. */
bool gm_match_src(fi_addr_t want, fi_addr_t src)
{
	return src != GM_ADDR_HELD && (want == FI_ADDR_UNSPEC || want == src);
}

struct gm_rx *gm_match_posted(struct gm_list *posted, fi_addr_t src, uint64_t tag)
{
	struct gm_list *pos, *tmp;

	gm_list_for_each_safe(posted, pos, tmp)
	{
		struct gm_rx *rx = gm_list_entry(pos, struct gm_rx, entry);

		if (gm_match_src(rx->src, src) && gm_match_tag(rx->tag, rx->ignore, tag))
			return rx;
	}
	return NULL;
}

/*
 * A claimed message is visible only to the receive carrying the claiming
 * context (FI_CLAIM); an unclaimed one to everybody but FI_CLAIM receives.
 */
struct gm_ux *gm_match_unexpected(struct gm_list *ux, fi_addr_t src, uint64_t tag, uint64_t ignore,
                                  void *claim_ctx, bool claim)
{
	struct gm_list *pos, *tmp;

	gm_list_for_each_safe(ux, pos, tmp)
	{
		struct gm_ux *u = gm_list_entry(pos, struct gm_ux, entry);

		if (claim) {
			if (u->claimed && u->claim_ctx == claim_ctx)
				return u;
			continue;
		}
		if (u->claimed || u->bound)
			continue;
		if (gm_match_src(src, u->src) && gm_match_tag(tag, ignore, u->tag))
			return u;
	}
	return NULL;
}
