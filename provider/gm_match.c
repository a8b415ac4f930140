/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Message matching: the posted-receive and unexpected-message queues.
 * Both are searched head first, so receives match in the order they were
 * posted and messages in the order they arrived — MPI's non-overtaking rule.
 */
#include "gm.h"

#include <string.h>

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

uint64_t gm_iov_len(const struct iovec *iov, size_t cnt)
{
	uint64_t n = 0;

	for (size_t i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

/* Copy len bytes from src into the iov at byte offset off; returns bytes copied. */
size_t gm_iov_copy_to(const struct iovec *iov, size_t cnt, uint64_t off, const void *src,
                      size_t len)
{
	return gm_iov_copy_to_crc(iov, cnt, off, src, len, NULL);
}

/* The same, chaining *crc over the bytes copied unless crc is NULL. */
size_t gm_iov_copy_to_crc(const struct iovec *iov, size_t cnt, uint64_t off, const void *src,
                          size_t len, uint32_t *crc)
{
	size_t done = 0;

	for (size_t i = 0; i < cnt && done < len; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		size_t n = iov[i].iov_len - off;
		if (n > len - done)
			n = len - done;
		char *dst = (char *)iov[i].iov_base + off;
		if (crc)
			*crc = gm_crc32c_copy(*crc, dst, (const char *)src + done, n);
		else
			memcpy(dst, (const char *)src + done, n);
		done += n;
		off = 0;
	}
	return done;
}

size_t gm_iov_copy_from(const struct iovec *iov, size_t cnt, uint64_t off, void *dst, size_t len)
{
	size_t done = 0;

	for (size_t i = 0; i < cnt && done < len; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		size_t n = iov[i].iov_len - off;
		if (n > len - done)
			n = len - done;
		memcpy((char *)dst + done, (const char *)iov[i].iov_base + off, n);
		done += n;
		off = 0;
	}
	return done;
}
