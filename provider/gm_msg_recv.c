/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The receive side: posted receives, matching a new message to one
 * (FI_MULTI_RECV buffers give slices), placing payload with its message
 * CRC, and completing receives in the order they matched each peer's
 * messages (rx_matched, rx_reported, rx_parked; gm_msg_int.h says why).
 * FI_PEEK, FI_CLAIM and fi_cancel.
 */
#include "fi_gamma.h"
#include "gm_msg_int.h"

#include <stdlib.h>
#include <string.h>

static void rx_report(struct gm_rx *rx, int err)
{
	struct gm_msg *m = rx->msg;
	uint64_t cflags = rx->flags & (FI_RECV | FI_MSG | FI_TAGGED);
	struct gm_rx *parent = rx->multi_parent;
	void *buf = parent ? rx->iov[0].iov_base : NULL;

	if (rx->has_data)
		cflags |= FI_REMOTE_CQ_DATA;
	if (parent && parent->multi_refs == 1 && parent->multi_retired)
		cflags |= FI_MULTI_RECV; /* the last slice: the buffer is released */
	if (!err && rx->msg_len > rx->recv_len)
		err = FI_ETRUNC;
	m->up->done(m->up_ctx, GM_MSG_RX, rx->flags,
	            &(struct gm_msg_cqe){
	                .context = rx->context,
	                .flags = cflags,
	                .len = rx->recv_len,
	                .buf = buf,
	                .data = rx->rdata,
	                .tag = rx->rtag,
	                .src = err ? FI_ADDR_NOTAVAIL : rx->rsrc,
	                .olen = err ? rx->msg_len - rx->recv_len : 0,
	                .err = err,
	                .prov_errno = err == FI_EIO && rx->corrupt ? FI_GAMMA_ERR_MSG_CRC : err});
	gm_rx_free(rx);
}

/*
 * The one way a gm_rx goes back to its pool.  A multi-recv slice holds its
 * buffer (the parent): a retired buffer goes with its last slice.
 */
void gm_rx_free(struct gm_rx *rx)
{
	struct gm_pool *pool = &rx->msg->rx_pool;
	struct gm_rx *parent = rx->multi_parent;

	if (parent && --parent->multi_refs == 0 && parent->multi_retired)
		gm_pool_put(pool, parent);
	if (rx->pull)
		free(rx->pull); /* a striped pull that failed or was dropped */
	gm_pool_put(pool, rx);
}

/* Complete rx, in match order among the receives matched to one peer's messages. */
void gm_rx_complete(struct gm_rx *rx, int err)
{
	struct gm_conn *conn = rx->conn;
	struct gm_list *pos, *tmp;
	bool found;

	if (!conn) {
		rx_report(rx, err); /* never matched a message */
		return;
	}
	if (rx->match_seq != conn->rx_reported) {
		rx->parked_err = err;
		gm_list_add_tail(&conn->rx_parked, &rx->entry);
		return;
	}
	rx_report(rx, err);
	conn->rx_reported++;
	do {
		found = false;
		gm_list_for_each_safe(&conn->rx_parked, pos, tmp)
		{
			struct gm_rx *p = gm_list_entry(pos, struct gm_rx, entry);
			if (p->match_seq != conn->rx_reported)
				continue;
			gm_list_del(&p->entry);
			rx_report(p, p->parked_err);
			conn->rx_reported++;
			found = true;
			break;
		}
	} while (found);
}

/*
 * A posted receive matched a message of msg_len bytes.  For a multi-recv
 * buffer, carve a slice of it and return that instead; the buffer retires
 * once less than min_multi_recv is left.
 */
struct gm_rx *gm_rx_take(struct gm_rx *rx, uint64_t msg_len)
{
	if (!(rx->flags & FI_MULTI_RECV)) {
		gm_list_del(&rx->entry);
		return rx;
	}
	struct gm_rx *s = gm_pool_get(&rx->msg->rx_pool);
	if (!s) {
		rx->msg->multi_starved = true; /* see gm_rx_unstarve */
		return NULL;
	}
	uint64_t left = rx->len - rx->multi_off;
	uint64_t take = msg_len < left ? msg_len : left;
	*s = (struct gm_rx){
	    .msg = rx->msg,
	    .context = rx->context,
	    .flags = rx->flags,
	    .src = rx->src,
	    .iov = {{.iov_base = (char *)rx->iov[0].iov_base + rx->multi_off, .iov_len = take}},
	    .iov_count = 1,
	    .len = take,
	    .multi_parent = rx,
	};
	gm_list_init(&s->entry);
	rx->multi_off += take;
	rx->multi_refs++;
	if (rx->len - rx->multi_off < rx->msg->min_multi_recv) {
		gm_list_del(&rx->entry);
		rx->multi_retired = true;
	}
	return s;
}

/* A frame's mcrc disagreed with the bytes it brought: the message fails. */
void gm_msg_corrupt(struct gm_msg *m, struct gm_conn *conn, uint64_t offset)
{
	MSG_WARN(m,
	         "message from fi_addr %ld failed its CRC at offset %lu: completed with FI_EIO\n",
	         (long)conn->fi_addr, (unsigned long)offset);
	m->up->corrupt(m->up_ctx);
}

/*
 * Place a payload at off in rx (what fits: the rest is truncated) and check
 * the message CRC through it against the frame's; false on a mismatch.
 */
bool gm_rx_place(struct gm_rx *rx, uint64_t off, const uint8_t *data, size_t dlen, uint32_t want)
{
	uint32_t crc = rx->mcrc;
	size_t n = 0;

	if (off < rx->recv_len)
		n = rx->recv_len - off < dlen ? rx->recv_len - off : dlen;
	/* A plain copy where the frame check already gave the CRC: it writes
	 * the (cold) receive buffer much faster than a copy that checksums. */
	if (gm_frame_payload_crc(rx->msg, data, dlen, rx->mcrc, &crc)) {
		if (n)
			gm_iov_copy_to(rx->iov, rx->iov_count, off, data, n);
	} else {
		if (n)
			gm_iov_copy_to_crc(rx->iov, rx->iov_count, off, data, n, &crc);
		if (n < dlen)
			crc = gm_crc32c(crc, data + n, dlen - n);
	}
	if (crc != want) {
		rx->corrupt = true;
		gm_msg_corrupt(rx->msg, rx->conn, off);
		return false;
	}
	rx->mcrc = crc;
	return true;
}

void gm_rx_bind_msg(struct gm_rx *rx, struct gm_conn *conn, const struct gm_msg_hdr *h)
{
	rx->conn = conn;
	rx->match_seq = conn->rx_matched++;
	rx->msg_len = h->msg_len;
	rx->recv_len = h->msg_len < rx->len ? h->msg_len : rx->len;
	rx->rtag = h->tag;
	rx->rdata = h->data;
	rx->has_data = h->mflags & GM_M_DATA;
	rx->rsrc = gm_conn_src(conn);
	rx->got = 0;
	rx->mcrc = 0;
	rx->corrupt = false;
}

struct gm_rx *gm_rx_match_posted(struct gm_msg *m, struct gm_conn *conn, const struct gm_msg_hdr *h)
{
	int q = (h->mflags & GM_M_TAGGED) ? 1 : 0;
	struct gm_rx *rx;

	if (!q && !gm_rx_unstarve(m))
		return NULL; /* behind the messages still waiting for a slice */
	rx = gm_match_posted(&m->posted[q], gm_conn_msg_src(conn), q ? h->tag : 0);
	return rx ? gm_rx_take(rx, h->msg_len) : NULL;
}

/*
 * A multi-recv buffer that got no slice (the pool was full) left a message
 * unexpected that a posted receive would have taken.  Until every such
 * message has its receive, no newer untagged one may take a posted
 * receive, or it would overtake them.  Returns whether none is left.
 */
bool gm_rx_unstarve(struct gm_msg *m)
{
	struct gm_list *pos, *tmp;

	if (!m->multi_starved)
		return true;
	gm_list_for_each_safe(&m->unexpected[0], pos, tmp)
	{
		struct gm_ux *ux = gm_list_entry(pos, struct gm_ux, entry);
		struct gm_rx *rx, *s;

		if (ux->claimed || ux->bound || !(rx = gm_match_posted(&m->posted[0], ux->src, 0)))
			continue;
		if (!(s = gm_rx_take(rx, ux->msg_len)))
			return false;
		gm_ux_deliver(ux, s);
	}
	m->multi_starved = false;
	return true;
}

/* Abandon the medium message being reassembled from conn, failing its receive. */
void gm_conn_drop_partial(struct gm_conn *conn, int err)
{
	if (conn->rx_cur_rx) {
		gm_rx_complete(conn->rx_cur_rx, err);
		conn->rx_cur_rx = NULL;
	}
	if (conn->rx_cur) {
		struct gm_ux *ux = conn->rx_cur;
		gm_list_del(&ux->entry);
		if (ux->bound)
			gm_rx_complete(ux->bound, err);
		gm_ux_free(ux);
		conn->rx_cur = NULL;
	}
}

static int recv_peek(struct gm_msg *m, int q, fi_addr_t src, uint64_t tag, uint64_t ignore,
                     void *context, uint64_t flags)
{
	struct gm_ux *ux = gm_match_unexpected(&m->unexpected[q], src, tag, ignore, NULL, false);
	uint64_t cflags = (flags & (FI_MSG | FI_TAGGED)) | FI_RECV;

	if (!ux) {
		m->up->report(m->up_ctx, &(struct gm_msg_cqe){.context = context,
		                                              .flags = cflags,
		                                              .tag = tag,
		                                              .src = FI_ADDR_NOTAVAIL,
		                                              .err = FI_ENOMSG});
		return 0;
	}
	if (ux->mflags & GM_M_DATA)
		cflags |= FI_REMOTE_CQ_DATA;
	m->up->report(m->up_ctx, &(struct gm_msg_cqe){.context = context,
	                                              .flags = cflags,
	                                              .len = ux->msg_len,
	                                              .data = ux->data,
	                                              .tag = ux->tag,
	                                              .src = ux->src != FI_ADDR_NOTAVAIL
	                                                         ? ux->src
	                                                         : gm_conn_src(ux->conn)});
	if (flags & FI_DISCARD)
		gm_ux_discard(ux);
	else if (flags & FI_CLAIM) {
		ux->claimed = true;
		ux->claim_ctx = context;
	}
	return 0;
}

/* A receive directed at a peer that stopped answering could wait forever. */
static bool src_failed(struct gm_msg *m, fi_addr_t src)
{
	struct gm_conn *conn;

	if (src == FI_ADDR_UNSPEC || src >= m->conns_cap || !(conn = m->conns[src]))
		return false;
	return gm_peer_failed(conn->peer);
}

ssize_t gm_msg_recv(struct gm_msg *m, const struct iovec *iov, size_t count, fi_addr_t src,
                    uint64_t tag, uint64_t ignore, void *context, uint64_t flags)
{
	int q = (flags & FI_TAGGED) ? 1 : 0;
	struct gm_ux *ux;
	struct gm_rx *rx;

	if (!q) {
		tag = 0;
		ignore = 0;
	}
	if (gm_ux_resolve_due(m))
		gm_ux_resolve_sources(m);
	if (flags & FI_PEEK)
		return recv_peek(m, q, src, tag, ignore, context, flags);
	if ((flags & FI_MULTI_RECV) && (q || count != 1))
		return -FI_EINVAL;

	if (m->rx_pool.used >= m->cfg.rx_max || !(rx = gm_pool_get(&m->rx_pool))) {
		m->st.rx_refused++;
		return -FI_EAGAIN;
	}
	*rx = (struct gm_rx){
	    .msg = m,
	    .context = context,
	    .flags = flags,
	    .src = src,
	    .tag = tag,
	    .ignore = ignore,
	};
	memcpy(rx->iov, iov, count * sizeof(*iov));
	rx->iov_count = count;
	rx->len = gm_iov_len(iov, count);
	gm_list_init(&rx->entry);
	gm_list_init(&rx->rndv_entry);

	if (flags & FI_CLAIM) {
		ux = gm_match_unexpected(&m->unexpected[q], src, tag, ignore, context, true);
		if (!ux) {
			gm_rx_free(rx);
			return -FI_EINVAL;
		}
		if (flags & FI_DISCARD) {
			rx->rtag = ux->tag;
			gm_ux_discard(ux);
			gm_rx_complete(rx, 0);
			return 0;
		}
		gm_ux_deliver(ux, rx);
		return 0;
	}

	if (!(flags & FI_MULTI_RECV)) {
		ux = gm_match_unexpected(&m->unexpected[q], src, tag, ignore, NULL, false);
		if (ux) {
			gm_ux_deliver(ux, rx);
			return 0;
		}
		if (src_failed(m, src)) {
			gm_rx_complete(rx, FI_EIO);
			return 0;
		}
		struct gm_conn *conn = src == FI_ADDR_UNSPEC ? NULL : gm_msg_conn(m, src);
		if (conn)
			gm_peer_await(conn->peer);
	} else {
		gm_list_add_tail(&m->posted[q], &rx->entry);
		/* Drain whatever unexpected messages fit. */
		while (!rx->multi_retired &&
		       (ux = gm_match_unexpected(&m->unexpected[0], src, 0, 0, NULL, false))) {
			struct gm_rx *s = gm_rx_take(rx, ux->msg_len);
			if (!s)
				break;
			gm_ux_deliver(ux, s);
		}
		return 0;
	}
	gm_list_add_tail(&m->posted[q], &rx->entry);
	return 0;
}

int gm_msg_cancel(struct gm_msg *m, void *context)
{
	for (int q = 0; q < 2; q++) {
		struct gm_list *pos, *tmp;
		gm_list_for_each_safe(&m->posted[q], pos, tmp)
		{
			struct gm_rx *rx = gm_list_entry(pos, struct gm_rx, entry);
			if (rx->context != context)
				continue;
			gm_list_del(&rx->entry);
			m->up->report(m->up_ctx,
			              &(struct gm_msg_cqe){.context = context,
			                                   .flags = rx->flags &
			                                            (FI_RECV | FI_MSG | FI_TAGGED),
			                                   .tag = rx->tag,
			                                   .src = FI_ADDR_NOTAVAIL,
			                                   .err = FI_ECANCELED});
			if (rx->multi_refs)
				rx->multi_retired = true; /* freed by its last slice */
			else
				gm_rx_free(rx);
			return 0;
		}
	}
	return -FI_ENOENT;
}
