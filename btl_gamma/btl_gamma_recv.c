/* SPDX-License-Identifier: BSD-2-Clause */
/* Hand one received message to the PML's active-message callback, or,
 * for a peer's get, to btl_gamma_get.c. */
#include "btl_gamma.h"

#include <string.h>

#include "opal/util/output.h"

static volatile int32_t short_shown, tag_shown;

void gamma_recv_deliver(mca_btl_gamma_module_t *m, struct gamma_rxbuf *rx, size_t len,
                        fi_addr_t src)
{
	const struct gamma_hdr *h = (const struct gamma_hdr *)rx->buf;
	const mca_btl_active_message_callback_t *reg;
	mca_btl_base_segment_t seg;
	mca_btl_base_descriptor_t des;

	if (len < sizeof(*h)) {
		if (gamma_help_first(&short_shown))
			gamma_show_help("short message", m->ifname, len, gamma_hostname());
		else
			GAMMA_VERBOSE(10, "btl gamma: %s: dropped a %zu-byte message", m->ifname,
			              len);
		return;
	}
	if (h->tag == GAMMA_TAG_GET) {
		gamma_get_serve(m, src, rx->buf + sizeof(*h), len - sizeof(*h));
		return;
	}
	reg = &mca_btl_base_active_message_trigger[h->tag];
	if (!reg->cbfunc) {
		if (gamma_help_first(&tag_shown))
			gamma_show_help("unknown tag", m->ifname, (unsigned)h->tag,
			                gamma_hostname());
		else
			GAMMA_VERBOSE(10, "btl gamma: %s: dropped a message for tag %u", m->ifname,
			              h->tag);
		return;
	}
	/* The whole message, PML header included, is segment 0; the descriptor
	 * lives only for the call, as the PML copies what it keeps. */
	memset(&des, 0, sizeof(des));
	seg.seg_addr.pval = rx->buf + sizeof(*h);
	seg.seg_len = len - sizeof(*h);
	des.des_segments = &seg;
	des.des_segment_count = 1;
	GAMMA_VERBOSE(100, "btl gamma: %s: deliver tag %u, %zu bytes", m->ifname, h->tag,
	              (size_t)seg.seg_len);
	reg->cbfunc(&m->super, h->tag, &des, reg->cbdata);
}
