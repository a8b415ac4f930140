/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The endpoint's side of the message protocol's seam (gm_msg.h): its
 * completions go to the bound CQs and counters, its addresses come from
 * the bound AV.  Runs under the domain lock, inside gm_msg calls.
 */
#include "gm.h"
#include "gm_defaults.h"

#include <time.h>

/* Past the sizes fi_info advertises: mtl/ofi does not heed them. */
_Static_assert(GM_DEFAULT_TX_MAX >= GM_TX_SIZE && GM_DEFAULT_RX_MAX >= GM_RX_SIZE,
               "endpoint pools smaller than the sizes advertised");

static bool want_completion(bool selective, uint64_t flags)
{
	return !selective || (flags & FI_COMPLETION);
}

static void up_done(void *ctx, enum gm_msg_side side, uint64_t op_flags, const struct gm_msg_cqe *e)
{
	struct gm_ep *ep = ctx;
	bool tx = side == GM_MSG_TX;
	struct gm_cq *cq = tx ? ep->tx_cq : ep->rx_cq;
	struct gm_cntr *cntr = tx ? ep->send_cntr : ep->recv_cntr;

	if (e->err) {
		if (cq)
			gm_cq_write_err(cq, e->context, e->flags, e->len, e->buf, e->data, e->tag,
			                e->olen, e->err, e->prov_errno);
		gm_cntr_inc_err(cntr);
		return;
	}
	/* fi_inject: no completion at all, only the counter. */
	if (cq && !(tx && (op_flags & GM_TX_SILENT)) &&
	    want_completion(tx ? ep->tx_selective : ep->rx_selective, op_flags))
		gm_cq_write(cq, e->context, e->flags, e->len, e->buf, e->data, e->tag, e->src);
	gm_cntr_inc(cntr);
}

static void up_report(void *ctx, const struct gm_msg_cqe *e)
{
	struct gm_ep *ep = ctx;

	if (!ep->rx_cq)
		return;
	if (e->err)
		gm_cq_write_err(ep->rx_cq, e->context, e->flags, e->len, e->buf, e->data, e->tag,
		                e->olen, e->err, e->prov_errno);
	else
		gm_cq_write(ep->rx_cq, e->context, e->flags, e->len, e->buf, e->data, e->tag,
		            e->src);
}

static void up_send_lost(void *ctx)
{
	struct gm_ep *ep = ctx;

	gm_cntr_inc_err(ep->send_cntr);
}

static void up_corrupt(void *ctx)
{
	struct gm_ep *ep = ctx;

	gm_net_count_bad_msg(ep->dom->net);
}

static const struct gm_addr *up_av_addr(void *ctx, fi_addr_t fi_addr)
{
	struct gm_ep *ep = ctx;

	return ep->av ? gm_av_get(ep->av, fi_addr) : NULL;
}

static fi_addr_t up_av_find(void *ctx, const struct gm_addr *addr)
{
	struct gm_ep *ep = ctx;

	return ep->av ? gm_av_find(ep->av, addr) : FI_ADDR_NOTAVAIL;
}

static fi_addr_t up_av_find_rail(void *ctx, unsigned rail, const struct gm_addr *addr)
{
	struct gm_ep *ep = ctx;

	return ep->av ? gm_av_find_rail(ep->av, rail, addr) : FI_ADDR_NOTAVAIL;
}

static uint64_t up_av_gen(void *ctx)
{
	struct gm_ep *ep = ctx;

	return ep->av ? ep->av->gen : 0;
}

static uint64_t up_now_ms(void *ctx)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static const struct gm_msg_upcalls gm_ep_upcalls = {
    .done = up_done,
    .report = up_report,
    .send_lost = up_send_lost,
    .corrupt = up_corrupt,
    .av_addr = up_av_addr,
    .av_find = up_av_find,
    .av_find_rail = up_av_find_rail,
    .av_gen = up_av_gen,
    .now_ms = up_now_ms,
};

/* The smallest frame of the rails: any frame may move to another. */
static size_t max_body(const struct gm_domain *dom)
{
	size_t b = gm_net_max_body(dom->net);

	for (unsigned r = 1; r < dom->nrails; r++)
		if (gm_net_max_body(dom->nets[r]) < b)
			b = gm_net_max_body(dom->nets[r]);
	return b;
}

/*
 * Several rails: chunks of a striped pull in flight per rail, a window's
 * worth (the bytes gm_net_open lets a peer have in flight) and one more,
 * so that a rail always has the next chunk queued behind its window.
 */
static unsigned stripe_depth(size_t body)
{
	size_t frames = gm_params.window > 0 ? (size_t)gm_params.window : GM_DEFAULT_WINDOW;
	size_t bytes = frames * body;

	if (gm_params.window <= 0 && bytes > GM_DEFAULT_WINDOW_BYTES)
		bytes = GM_DEFAULT_WINDOW_BYTES;
	return (unsigned)((bytes + GM_STRIPE_CHUNK_BYTES - 1) / GM_STRIPE_CHUNK_BYTES + 1);
}

void gm_ep_msg_init(struct gm_ep *ep)
{
	const struct gm_msg_cfg cfg = {
	    .prov = &gm_prov,
	    .max_body = max_body(ep->dom),
	    .rail_timeout_ms = (unsigned)gm_params.rail_timeout_ms,
	    .stripe_chunk = GM_STRIPE_CHUNK_BYTES,
	    .stripe_depth = stripe_depth(max_body(ep->dom)),
	    .rndv_threshold = gm_params.rndv_threshold,
	    .ux_max = gm_params.ux_max,
	    .ux_peer_max = gm_params.ux_peer_max,
	    .ux_unknown_max = gm_params.ux_unknown_max,
	    .ux_unknown = gm_params.ux_unknown,
	    .ux_unknown_hold_ms = (unsigned)gm_params.ux_unknown_hold_ms,
	    .tx_max = GM_DEFAULT_TX_MAX,
	    .rx_max = GM_DEFAULT_RX_MAX,
	};

	gm_msg_init(&ep->msg, &cfg, &gm_ep_upcalls, ep);
}
