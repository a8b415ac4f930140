/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The active-message protocol: how a libfabric message becomes frames and
 * back.  Each frame type has one handler in the dispatch table at the end.
 *
 *   small   EAGER: header and data in one frame.
 *   medium  START + FRAG...: fragmented, reassembled in order (the net
 *           delivers a peer's frames in order, and a sender never
 *           interleaves two messages' fragments).
 *   large   RTS, then the receiver pulls once matched: CTS, RDATA...  An
 *           unexpected large message therefore costs the receiver no
 *           buffer until a receive for it exists.
 *
 * So a message can finish before one its peer sent earlier (an eager one
 * overtakes a pull).  Receives are nevertheless completed in the order
 * they matched a peer's messages, i.e. in the order the peer sent them:
 * a finished receive is parked until every earlier one from that peer is
 * completed.  ob1 depends on it: Open MPI 4.1's datatype engine misplaces
 * data (by tens of bytes) or overruns when it unpacks the fragments of one
 * message out of order into some derived types (issue #19; btl tcp
 * striped over two links does the same).  Only matched messages wait, and
 * each finishes without the application's help, so the wait is bounded.
 *
 * A send completes once its data is buffered (see tx_maybe_complete).
 * Everything here runs under the caller's lock (gm_msg.h).
 */
#include "gm_msg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>

#define MSG_WARN(m, ...) FI_WARN((m)->cfg.prov, FI_LOG_EP_DATA, __VA_ARGS__)

/* Largest medium message accepted unexpected; beyond, senders use RTS. */
#define GM_MAX_UNEXPECTED_MEDIUM (16u << 20)

static uint64_t now_ms(const struct gm_msg *m)
{
	return m->up->now_ms(m->up_ctx);
}

/* ---- connections ---- */

void gm_msg_init(struct gm_msg *m, const struct gm_msg_cfg *cfg, const struct gm_msg_upcalls *up,
                 void *up_ctx)
{
	*m = (struct gm_msg){.up = up, .up_ctx = up_ctx, .cfg = *cfg};
	m->min_multi_recv = 64;
	m->next_recv_id = 1;
	for (int i = 0; i < 2; i++) {
		gm_list_init(&m->posted[i]);
		gm_list_init(&m->unexpected[i]);
	}
	gm_list_init(&m->rndv_rx);
	gm_list_init(&m->conn_list);
	gm_list_init(&m->tx_pending);
	gm_list_init(&m->tx_live);
}

static struct gm_conn *conn_of_peer(struct gm_msg *m, struct gm_peer *peer)
{
	struct gm_conn *conn = gm_peer_ctx(peer);

	if (conn)
		return conn;
	conn = calloc(1, sizeof(*conn));
	if (!conn)
		return NULL;
	conn->msg = m;
	conn->peer = peer;
	conn->fi_addr = FI_ADDR_NOTAVAIL;
	gm_list_init(&conn->tx_queue);
	gm_list_init(&conn->cts_wait);
	gm_list_init(&conn->pend_entry);
	gm_list_init(&conn->rx_parked);
	gm_list_add_tail(&m->conn_list, &conn->msg_entry);
	gm_peer_set_ctx(peer, conn);
	return conn;
}

struct gm_conn *gm_msg_conn(struct gm_msg *m, fi_addr_t fi_addr)
{
	const struct gm_addr *addr;
	struct gm_peer *peer;
	struct gm_conn *conn;

	if (fi_addr < m->conns_cap && m->conns[fi_addr])
		return m->conns[fi_addr];
	if (!(addr = m->up->av_addr(m->up_ctx, fi_addr)))
		return NULL;
	if (fi_addr >= m->conns_cap) {
		size_t cap = m->conns_cap ? m->conns_cap : 64;
		while (cap <= fi_addr)
			cap *= 2;
		struct gm_conn **c = realloc(m->conns, cap * sizeof(*c));
		if (!c)
			return NULL;
		memset(c + m->conns_cap, 0, (cap - m->conns_cap) * sizeof(*c));
		m->conns = c;
		m->conns_cap = cap;
	}
	peer = gm_peer_get(m->port, addr);
	if (!peer)
		return NULL;
	conn = conn_of_peer(m, peer);
	if (!conn)
		return NULL;
	conn->fi_addr = fi_addr;
	m->conns[fi_addr] = conn;
	return conn;
}

/* The sender's fi_addr for completions and directed receives. */
static fi_addr_t conn_src(struct gm_conn *conn)
{
	struct gm_msg *m = conn->msg;

	if (conn->fi_addr == FI_ADDR_NOTAVAIL) {
		fi_addr_t a = m->up->av_find(m->up_ctx, gm_peer_addr(conn->peer));
		if (a != FI_ADDR_NOTAVAIL && gm_msg_conn(m, a) == conn)
			conn->fi_addr = a;
	}
	return conn->fi_addr;
}

/* FI_GAMMA_UX_UNKNOWN (see gm_msg.h): whether messages from outside the AV are held. */
static bool hold_unknown(const struct gm_msg *m)
{
	if (m->cfg.ux_unknown != GM_UNKNOWN_AUTO)
		return m->cfg.ux_unknown == GM_UNKNOWN_HOLD;
	return gm_port_key(m->port) != 0;
}

/* The source a new message from conn matches by: GM_ADDR_HELD if held. */
static fi_addr_t msg_src(struct gm_conn *conn)
{
	fi_addr_t src = conn_src(conn);

	return src == FI_ADDR_NOTAVAIL && hold_unknown(conn->msg) ? GM_ADDR_HELD : src;
}

/* From a source not (yet) in the AV: held, or delivered with FI_ADDR_NOTAVAIL. */
static bool ux_unknown(const struct gm_ux *ux)
{
	return ux->src == FI_ADDR_NOTAVAIL || ux->src == GM_ADDR_HELD;
}

/* ---- send side ---- */

static void tx_report(struct gm_tx *tx)
{
	struct gm_msg *m = tx->msg;
	struct gm_msg_cqe e = {
	    .context = tx->context,
	    .flags = tx->flags & (FI_SEND | FI_MSG | FI_TAGGED),
	    .src = FI_ADDR_NOTAVAIL,
	    .err = tx->err,
	};

	tx->reported = true;
	if (tx->internal)
		return;
	if (tx->err)
		e.tag = tx->tag;
	m->up->done(m->up_ctx, GM_MSG_TX, tx->flags, &e);
}

/*
 * Once every frame of a send sits in the net's retransmit buffers, the
 * user's buffer is free: that is when the send completes, unless the
 * caller asked for FI_TRANSMIT_COMPLETE or FI_DELIVERY_COMPLETE, which
 * wait for the peer's acknowledgement.  The tx itself lives until every
 * frame is acknowledged (or failed), since the net holds it as a cookie.
 * A send still queued or waiting for its CTS when its peer fails is
 * finished by port_peer_failed, which the net calls after failing each
 * frame.
 */
static void tx_maybe_complete(struct gm_tx *tx)
{
	if (tx->state != GM_TX_SENT)
		return;
	if (!tx->reported &&
	    (!tx->unacked || !(tx->flags & (FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE))))
		tx_report(tx);
	if (!tx->unacked) {
		gm_list_del(&tx->live_entry);
		free(tx);
	}
}

static void conn_mark_pending(struct gm_conn *conn)
{
	if (gm_list_empty(&conn->pend_entry))
		gm_list_add_tail(&conn->msg->tx_pending, &conn->pend_entry);
}

/* Hand one frame of tx to the net.  Returns 0, -FI_EAGAIN or -FI_EIO. */
static int tx_send_one(struct gm_tx *tx, size_t max_body)
{
	uint8_t thdr[sizeof(struct gm_msg_hdr)];
	struct iovec iov[GM_IOV_LIMIT];
	size_t thlen, chunk, niov = 0;
	uint32_t mcrc = tx->mcrc;
	uint8_t type;
	int ret;

	if (!tx->first_sent) {
		type = tx->first_type;
		thlen = type == GM_FT_CTS ? sizeof(struct gm_cts_hdr) : sizeof(struct gm_msg_hdr);
		chunk = type == GM_FT_CTS || type == GM_FT_RTS ? 0 : max_body - thlen;
	} else {
		type = tx->state == GM_TX_PULLED ? GM_FT_RDATA : GM_FT_FRAG;
		thlen = sizeof(struct gm_frag_hdr);
		chunk = max_body - thlen;
	}
	if (chunk > tx->limit - tx->off)
		chunk = tx->limit - tx->off;
	if (chunk)
		niov = gm_iov_slice(tx->iov, tx->iov_count, tx->off, chunk, iov);
	/* The header precedes the payload, so the message CRC is a pass of its own. */
	for (size_t i = 0; i < niov; i++)
		mcrc = gm_crc32c(mcrc, iov[i].iov_base, iov[i].iov_len);
	if (type == GM_FT_CTS) {
		memcpy(thdr, tx->inject_buf, thlen);
	} else if (!tx->first_sent) {
		struct gm_msg_hdr h = {
		    .msg_id = tx->msg_id,
		    .mflags = ((tx->flags & FI_TAGGED) ? GM_M_TAGGED : 0) |
		              ((tx->flags & FI_REMOTE_CQ_DATA) ? GM_M_DATA : 0),
		    .tag = tx->tag,
		    .data = tx->data,
		    .msg_len = tx->len,
		    .mcrc = mcrc,
		};
		gm_msg_hdr_encode(thdr, &h);
	} else {
		struct gm_frag_hdr f = {
		    .msg_id = tx->state == GM_TX_PULLED ? tx->recv_id : tx->msg_id,
		    .offset = tx->off,
		    .mcrc = mcrc,
		};
		gm_frag_hdr_encode(thdr, &f);
	}
	ret = gm_peer_send(tx->conn->peer, type, thdr, thlen, iov, niov, tx);
	if (ret)
		return ret;
	tx->first_sent = true;
	tx->off += chunk;
	tx->mcrc = mcrc;
	tx->unacked++;
	return 0;
}

/* Push queued frames of one conn into the net until its window is full. */
static void conn_push(struct gm_conn *conn)
{
	size_t max_body = conn->msg->cfg.max_body;
	struct gm_list *pos, *tmp;

	gm_list_for_each_safe(&conn->tx_queue, pos, tmp)
	{
		struct gm_tx *tx = gm_list_entry(pos, struct gm_tx, entry);

		do {
			int ret = tx_send_one(tx, max_body);
			if (ret == -FI_EAGAIN) {
				conn_mark_pending(conn);
				return;
			}
			if (ret) {
				tx->err = ret == -FI_EIO ? FI_EIO : -ret;
				break;
			}
		} while (tx->off < tx->limit);
		gm_list_del(&tx->entry);
		if (tx->err)
			tx->state = GM_TX_SENT;
		else if (tx->first_type == GM_FT_RTS && tx->state == GM_TX_QUEUED)
			tx->state = GM_TX_WAIT_CTS;
		else
			tx->state = GM_TX_SENT;
		if (tx->state == GM_TX_WAIT_CTS) {
			gm_list_add_tail(&conn->cts_wait, &tx->entry);
			gm_peer_await(conn->peer);
		} else
			tx_maybe_complete(tx);
	}
	gm_list_del(&conn->pend_entry);
}

static void conn_queue(struct gm_conn *conn, struct gm_tx *tx)
{
	bool was_empty = gm_list_empty(&conn->tx_queue);

	gm_list_add_tail(&conn->tx_queue, &tx->entry);
	/* Behind a blocked frame, wait: order is per peer. */
	if (was_empty)
		conn_push(conn);
}

ssize_t gm_msg_send(struct gm_msg *m, const struct iovec *iov, size_t count, fi_addr_t dest,
                    uint64_t tag, uint64_t data, void *context, uint64_t flags)
{
	struct gm_conn *conn;
	struct gm_tx *tx;
	uint64_t len = gm_iov_len(iov, count);
	size_t max_body;

	conn = gm_msg_conn(m, dest);
	if (!conn) {
		MSG_WARN(m, "send to fi_addr %lu: not in the address vector\n",
		         (unsigned long)dest);
		return -FI_EINVAL;
	}
	if ((flags & FI_INJECT) && len > GM_INJECT_SIZE)
		return -FI_EINVAL;
	if (len > GM_MAX_MSG_SIZE)
		return -FI_EMSGSIZE;
	tx = malloc(sizeof(*tx));
	if (!tx)
		return -FI_EAGAIN;
	*tx = (struct gm_tx){
	    .msg = m,
	    .conn = conn,
	    .context = context,
	    .flags = flags,
	    .tag = tag,
	    .data = data,
	    .len = len,
	    .limit = len,
	    .msg_id = conn->next_msg_id++,
	    .state = GM_TX_QUEUED,
	};
	gm_list_init(&tx->entry);
	gm_list_add_tail(&m->tx_live, &tx->live_entry);
	if (flags & FI_INJECT) {
		gm_iov_copy_from(iov, count, 0, tx->inject_buf, len);
		tx->iov[0] = (struct iovec){.iov_base = tx->inject_buf, .iov_len = len};
		tx->iov_count = 1;
	} else {
		memcpy(tx->iov, iov, count * sizeof(*iov));
		tx->iov_count = count;
	}
	max_body = conn->msg->cfg.max_body;
	if (sizeof(struct gm_msg_hdr) + len <= max_body)
		tx->first_type = GM_FT_EAGER;
	else if (len < m->cfg.rndv_threshold && len <= GM_MAX_UNEXPECTED_MEDIUM)
		tx->first_type = GM_FT_START;
	else {
		tx->first_type = GM_FT_RTS;
		tx->limit = 0; /* nothing goes until the receiver pulls */
	}
	conn_queue(conn, tx);
	return 0;
}

/* Queue a protocol frame (CTS) of our own. */
static int send_ctrl(struct gm_conn *conn, uint8_t type, const void *thdr, size_t len)
{
	struct gm_tx *tx = calloc(1, sizeof(*tx));

	if (!tx)
		return -FI_ENOMEM;
	tx->msg = conn->msg;
	tx->conn = conn;
	tx->internal = true;
	tx->first_type = type;
	tx->state = GM_TX_QUEUED;
	memcpy(tx->inject_buf, thdr, len);
	gm_list_init(&tx->entry);
	gm_list_add_tail(&conn->msg->tx_live, &tx->live_entry);
	conn_queue(conn, tx);
	return 0;
}

static void ux_resolve_sources(struct gm_msg *m);

/* Held messages wait for the AV to change, or for their time to run out. */
static bool ux_resolve_due(const struct gm_msg *m)
{
	return m->ux_unresolved &&
	       (m->up->av_gen(m->up_ctx) != m->av_seen || now_ms(m) >= m->held_expiry_ms);
}

void gm_msg_progress(struct gm_msg *m)
{
	struct gm_list *pos, *tmp;

	gm_list_for_each_safe(&m->tx_pending, pos, tmp)
	    conn_push(gm_list_entry(pos, struct gm_conn, pend_entry));
	if (ux_resolve_due(m))
		ux_resolve_sources(m);
}

/* ---- receive side ---- */

static void rx_free(struct gm_rx *rx);

static void rx_report(struct gm_rx *rx, int err)
{
	struct gm_msg *m = rx->msg;
	uint64_t cflags = rx->flags & (FI_RECV | FI_MSG | FI_TAGGED);
	struct gm_rx *parent = rx->multi_parent;
	void *buf = parent ? rx->iov[0].iov_base : NULL;

	if (rx->has_data)
		cflags |= FI_REMOTE_CQ_DATA;
	if (parent && --parent->multi_refs == 0 && parent->multi_retired) {
		cflags |= FI_MULTI_RECV;
		rx_free(parent);
	}
	if (!err && rx->msg_len > rx->recv_len)
		err = FI_ETRUNC;
	m->up->done(m->up_ctx, GM_MSG_RX, rx->flags,
	            &(struct gm_msg_cqe){.context = rx->context,
	                                 .flags = cflags,
	                                 .len = rx->recv_len,
	                                 .buf = buf,
	                                 .data = rx->rdata,
	                                 .tag = rx->rtag,
	                                 .src = err ? FI_ADDR_NOTAVAIL : rx->rsrc,
	                                 .olen = err ? rx->msg_len - rx->recv_len : 0,
	                                 .err = err});
	rx_free(rx);
}

static void rx_free(struct gm_rx *rx)
{
	free(rx);
}

/* Complete rx, in match order among the receives matched to one peer's messages. */
static void rx_complete(struct gm_rx *rx, int err)
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
static struct gm_rx *rx_take(struct gm_rx *rx, uint64_t msg_len)
{
	if (!(rx->flags & FI_MULTI_RECV)) {
		gm_list_del(&rx->entry);
		return rx;
	}
	struct gm_rx *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	uint64_t left = rx->len - rx->multi_off;
	uint64_t take = msg_len < left ? msg_len : left;
	s->msg = rx->msg;
	s->context = rx->context;
	s->flags = rx->flags;
	s->src = rx->src;
	s->iov_count = 1;
	s->iov[0].iov_base = (char *)rx->iov[0].iov_base + rx->multi_off;
	s->iov[0].iov_len = take;
	s->len = take;
	s->multi_parent = rx;
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
static void msg_corrupt(struct gm_msg *m, struct gm_conn *conn, uint64_t offset)
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
static bool rx_place(struct gm_rx *rx, uint64_t off, const uint8_t *data, size_t dlen,
                     uint32_t want)
{
	uint32_t crc = rx->mcrc;
	size_t n = 0;

	if (off < rx->recv_len)
		n = rx->recv_len - off < dlen ? rx->recv_len - off : dlen;
	if (n)
		gm_iov_copy_to_crc(rx->iov, rx->iov_count, off, data, n, &crc);
	if (n < dlen)
		crc = gm_crc32c(crc, data + n, dlen - n);
	if (crc != want) {
		rx->corrupt = true;
		msg_corrupt(rx->msg, rx->conn, off);
		return false;
	}
	rx->mcrc = crc;
	return true;
}

/* The same for an unexpected message, into its own buffer. */
static bool ux_place(struct gm_ux *ux, uint64_t off, const uint8_t *data, size_t dlen,
                     uint32_t want)
{
	uint32_t crc = dlen ? gm_crc32c_copy(ux->mcrc, ux->buf + off, data, dlen) : ux->mcrc;

	if (crc != want) {
		ux->err = FI_EIO;
		msg_corrupt(ux->conn->msg, ux->conn, off);
		return false;
	}
	ux->mcrc = crc;
	return true;
}

static void rx_bind_msg(struct gm_rx *rx, struct gm_conn *conn, const struct gm_msg_hdr *h)
{
	rx->conn = conn;
	rx->match_seq = conn->rx_matched++;
	rx->msg_len = h->msg_len;
	rx->recv_len = h->msg_len < rx->len ? h->msg_len : rx->len;
	rx->rtag = h->tag;
	rx->rdata = h->data;
	rx->has_data = h->mflags & GM_M_DATA;
	rx->rsrc = conn_src(conn);
	rx->got = 0;
	rx->mcrc = 0;
	rx->corrupt = false;
}

/* The receiver side of rendezvous: pull the message into rx. */
static void rx_pull(struct gm_rx *rx, uint32_t msg_id)
{
	struct gm_cts_hdr c = {
	    .msg_id = msg_id, .recv_id = rx->msg->next_recv_id++, .len = rx->recv_len};
	uint8_t buf[sizeof(c)];

	rx->id = c.recv_id;
	if (!rx->recv_len) {
		/* Nothing to pull, but the sender still waits to be released. */
		gm_cts_hdr_encode(buf, &c);
		send_ctrl(rx->conn, GM_FT_CTS, buf, sizeof(buf));
		rx_complete(rx, 0);
		return;
	}
	gm_list_add_tail(&rx->msg->rndv_rx, &rx->rndv_entry);
	gm_peer_await(rx->conn->peer);
	gm_cts_hdr_encode(buf, &c);
	if (send_ctrl(rx->conn, GM_FT_CTS, buf, sizeof(buf))) {
		gm_list_del(&rx->rndv_entry);
		rx_complete(rx, FI_ENOMEM);
	}
}

/*
 * Unexpected messages are held within caps: FI_GAMMA_UX_MAX per endpoint
 * and FI_GAMMA_UX_PEER_MAX per peer; those from sources not in the AV have
 * a budget of their own, FI_GAMMA_UX_UNKNOWN_MAX, so that a flood of
 * forged ones cannot crowd out the job's.  A message already matched to a
 * receive (bound) is not unexpected any more and always gets its bytes.
 */
static bool ux_charge(struct gm_ux *ux, size_t n)
{
	struct gm_conn *conn = ux->conn;
	struct gm_msg *m = conn->msg;

	if (ux_unknown(ux)) {
		if (m->unknown_bytes + n > m->cfg.ux_unknown_max)
			return false;
		m->unknown_bytes += n;
		if (m->unknown_bytes > m->st.unknown_peak)
			m->st.unknown_peak = m->unknown_bytes;
	} else {
		if (!ux->bound &&
		    (conn->ux_bytes + n > m->cfg.ux_peer_max || m->ux_bytes + n > m->cfg.ux_max))
			return false;
		conn->ux_bytes += n;
		m->ux_bytes += n;
		if (m->ux_bytes > m->st.ux_peak)
			m->st.ux_peak = m->ux_bytes;
	}
	ux->charged += n;
	return true;
}

static void ux_uncharge(struct gm_ux *ux, size_t n)
{
	if (ux_unknown(ux)) {
		ux->conn->msg->unknown_bytes -= n;
	} else {
		ux->conn->msg->ux_bytes -= n;
		ux->conn->ux_bytes -= n;
	}
	ux->charged -= n;
}

/* Room for len bytes at ux->buf: it grows as fragments arrive, never past msg_len. */
static bool ux_reserve(struct gm_ux *ux, uint64_t len)
{
	size_t cap = ux->cap * 2 > len ? ux->cap * 2 : len;
	uint8_t *buf;

	if (len <= ux->cap)
		return true;
	if (cap > ux->msg_len)
		cap = ux->msg_len;
	if (!ux_charge(ux, cap - ux->cap))
		return false;
	buf = realloc(ux->buf, cap);
	if (!buf) {
		ux_uncharge(ux, cap - ux->cap);
		return false;
	}
	ux->buf = buf;
	ux->cap = cap;
	return true;
}

static void ux_free(struct gm_ux *ux)
{
	if (ux_unknown(ux))
		ux->conn->msg->ux_unresolved--;
	ux_uncharge(ux, ux->charged);
	free(ux->buf);
	free(ux);
}

/* Drop an unexpected message over a cap (or held too long), counting it. */
static void ux_drop(struct gm_ux *ux)
{
	struct gm_msg *m = ux->conn->msg;

	if (ux_unknown(ux)) {
		m->st.unknown_dropped++;
	} else {
		m->st.ux_dropped++;
		MSG_WARN(m,
		         "unexpected message of %lu bytes from fi_addr %lu dropped: over "
		         "FI_GAMMA_UX_MAX or FI_GAMMA_UX_PEER_MAX\n",
		         (unsigned long)ux->msg_len, (unsigned long)ux->src);
	}
	if (ux->conn->rx_cur == ux)
		ux->conn->rx_cur = NULL;
	ux_free(ux);
}

/* Give a complete unexpected message (or an RTS) to a receive. */
static void ux_deliver(struct gm_ux *ux, struct gm_rx *rx)
{
	struct gm_msg_hdr h = {.msg_id = ux->msg_id,
	                       .mflags = ux->mflags,
	                       .tag = ux->tag,
	                       .data = ux->data,
	                       .msg_len = ux->msg_len};

	rx_bind_msg(rx, ux->conn, &h);
	rx->rsrc = ux->src != FI_ADDR_NOTAVAIL ? ux->src : conn_src(ux->conn);
	gm_list_del(&ux->entry);
	if (ux->rts) {
		rx_pull(rx, ux->msg_id);
	} else if (ux->have == ux->msg_len) {
		if (!ux->err)
			gm_iov_copy_to(rx->iov, rx->iov_count, 0, ux->buf, rx->recv_len);
		rx->got = rx->recv_len;
		rx_complete(rx, ux->err);
	} else {
		/* Still arriving: the FRAG handler finishes it. */
		ux->bound = rx;
		gm_peer_await(ux->conn->peer);
		gm_list_add_tail(&rx->msg->unexpected[(ux->mflags & GM_M_TAGGED) ? 1 : 0],
		                 &ux->entry);
		return;
	}
	if (ux->conn->rx_cur == ux)
		ux->conn->rx_cur = NULL;
	ux_free(ux);
}

/* Drop an unexpected message unread; a pending sender is released with an empty pull. */
static void ux_discard(struct gm_ux *ux)
{
	gm_list_del(&ux->entry);
	if (ux->rts) {
		struct gm_cts_hdr c = {.msg_id = ux->msg_id, .recv_id = 0, .len = 0};
		uint8_t buf[sizeof(c)];
		gm_cts_hdr_encode(buf, &c);
		send_ctrl(ux->conn, GM_FT_CTS, buf, sizeof(buf));
	}
	if (ux->conn->rx_cur == ux)
		ux->conn->rx_cur = NULL;
	ux_free(ux);
}

/* A held message's sender is now in the AV: it meets the receives posted meanwhile. */
static void ux_release(struct gm_msg *m, struct gm_ux *ux, fi_addr_t src)
{
	int q = (ux->mflags & GM_M_TAGGED) ? 1 : 0;
	size_t n = ux->charged;
	struct gm_rx *rx;

	ux_uncharge(ux, n);
	m->ux_unresolved--;
	ux->src = src;
	ux->conn->ux_bytes += n; /* already held: moved over, even past the caps */
	m->ux_bytes += n;
	ux->charged = n;
	if (m->ux_bytes > m->st.ux_peak)
		m->st.ux_peak = m->ux_bytes;
	m->st.unknown_released++;
	if (ux->bound || ux->claimed)
		return; /* not held: a receive has it already */
	rx = gm_match_posted(&m->posted[q], src, q ? ux->tag : 0);
	if (rx && (rx = rx_take(rx, ux->msg_len)))
		ux_deliver(ux, rx);
}

/*
 * A held message from a source not in the AV is delivered to nobody (any
 * station on the segment can send one).  But a peer may start sending
 * before we insert it (peers start at different speeds), so such messages
 * wait, unmatchable, in arrival order: released once the AV has their
 * source, dropped after FI_GAMMA_UX_UNKNOWN_HOLD ms.  Unheld ones (policy
 * deliver) only learn their source, so that directed receives match them.
 */
static void ux_resolve_sources(struct gm_msg *m)
{
	uint64_t now = now_ms(m), hold = (uint64_t)m->cfg.ux_unknown_hold_ms, next = UINT64_MAX;
	struct gm_list *pos, *tmp;

	m->av_seen = m->up->av_gen(m->up_ctx);
	for (int q = 0; q < 2 && m->ux_unresolved; q++) {
		gm_list_for_each_safe(&m->unexpected[q], pos, tmp)
		{
			struct gm_ux *ux = gm_list_entry(pos, struct gm_ux, entry);
			fi_addr_t src;

			if (!ux_unknown(ux))
				continue;
			if ((src = conn_src(ux->conn)) != FI_ADDR_NOTAVAIL) {
				ux_release(m, ux, src);
			} else if (ux->src != GM_ADDR_HELD) {
				continue;
			} else if (now - ux->held_ms >= hold) {
				gm_list_del(&ux->entry);
				ux_drop(ux);
			} else if (ux->held_ms + hold < next) {
				next = ux->held_ms + hold;
			}
		}
	}
	m->held_expiry_ms = next;
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
	                                                         : conn_src(ux->conn)});
	if (flags & FI_DISCARD)
		ux_discard(ux);
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
	if (ux_resolve_due(m))
		ux_resolve_sources(m);
	if (flags & FI_PEEK)
		return recv_peek(m, q, src, tag, ignore, context, flags);
	if ((flags & FI_MULTI_RECV) && (q || count != 1))
		return -FI_EINVAL;

	rx = calloc(1, sizeof(*rx));
	if (!rx)
		return -FI_EAGAIN;
	rx->msg = m;
	rx->context = context;
	rx->flags = flags;
	rx->src = src;
	rx->tag = tag;
	rx->ignore = ignore;
	memcpy(rx->iov, iov, count * sizeof(*iov));
	rx->iov_count = count;
	rx->len = gm_iov_len(iov, count);
	gm_list_init(&rx->entry);
	gm_list_init(&rx->rndv_entry);

	if (flags & FI_CLAIM) {
		ux = gm_match_unexpected(&m->unexpected[q], src, tag, ignore, context, true);
		if (!ux) {
			free(rx);
			return -FI_EINVAL;
		}
		if (flags & FI_DISCARD) {
			rx->rtag = ux->tag;
			ux_discard(ux);
			rx_complete(rx, 0);
			return 0;
		}
		ux_deliver(ux, rx);
		return 0;
	}

	if (!(flags & FI_MULTI_RECV)) {
		ux = gm_match_unexpected(&m->unexpected[q], src, tag, ignore, NULL, false);
		if (ux) {
			ux_deliver(ux, rx);
			return 0;
		}
		if (src_failed(m, src)) {
			rx_complete(rx, FI_EIO);
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
			struct gm_rx *s = rx_take(rx, ux->msg_len);
			if (!s)
				break;
			ux_deliver(ux, s);
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
				rx_free(rx);
			return 0;
		}
	}
	return -FI_ENOENT;
}

/* ---- frame handlers ---- */

/* A new unexpected message with its first dlen bytes to come; NULL: dropped. */
static struct gm_ux *ux_new(struct gm_conn *conn, const struct gm_msg_hdr *h, bool rts, size_t dlen)
{
	struct gm_msg *m = conn->msg;
	struct gm_ux *ux = calloc(1, sizeof(*ux));

	if (!ux)
		return NULL;
	ux->conn = conn;
	ux->src = msg_src(conn);
	if (ux_unknown(ux))
		m->ux_unresolved++;
	if (ux->src == GM_ADDR_HELD) {
		ux->held_ms = now_ms(m);
		if (ux->held_ms + m->cfg.ux_unknown_hold_ms < m->held_expiry_ms)
			m->held_expiry_ms = ux->held_ms + m->cfg.ux_unknown_hold_ms;
		m->st.unknown_held++;
	}
	ux->tag = h->tag;
	ux->data = h->data;
	ux->msg_len = h->msg_len;
	ux->mflags = h->mflags;
	ux->msg_id = h->msg_id;
	ux->rts = rts;
	gm_list_init(&ux->entry);
	if (!ux_charge(ux, sizeof(*ux)) || !ux_reserve(ux, dlen)) {
		ux_drop(ux);
		return NULL;
	}
	return ux;
}

static struct gm_rx *match_posted(struct gm_msg *m, struct gm_conn *conn,
                                  const struct gm_msg_hdr *h)
{
	int q = (h->mflags & GM_M_TAGGED) ? 1 : 0;
	struct gm_rx *rx = gm_match_posted(&m->posted[q], msg_src(conn), q ? h->tag : 0);

	return rx ? rx_take(rx, h->msg_len) : NULL;
}

/* Abandon the medium message being reassembled from conn, failing its receive. */
static void conn_drop_partial(struct gm_conn *conn, int err)
{
	if (conn->rx_cur_rx) {
		rx_complete(conn->rx_cur_rx, err);
		conn->rx_cur_rx = NULL;
	}
	if (conn->rx_cur) {
		struct gm_ux *ux = conn->rx_cur;
		gm_list_del(&ux->entry);
		if (ux->bound)
			rx_complete(ux->bound, err);
		ux_free(ux);
		conn->rx_cur = NULL;
	}
}

static void on_msg_first(struct gm_msg *m, struct gm_conn *conn, uint8_t type, const void *body,
                         size_t len)
{
	struct gm_msg_hdr h;
	const uint8_t *data = (const uint8_t *)body + sizeof(h);
	size_t dlen = len - sizeof(h);
	struct gm_rx *rx;

	gm_msg_hdr_decode(body, &h);
	if ((type == GM_FT_EAGER && dlen != h.msg_len) ||
	    (type == GM_FT_START && (dlen > h.msg_len || h.msg_len > GM_MAX_UNEXPECTED_MEDIUM)) ||
	    (type == GM_FT_RTS && dlen != 0)) {
		MSG_WARN(m, "dropping malformed frame type %u (len %zu, msg_len %lu)\n", type, dlen,
		         (unsigned long)h.msg_len);
		return;
	}
	if (m->ux_unresolved && conn->fi_addr == FI_ADDR_NOTAVAIL &&
	    conn_src(conn) != FI_ADDR_NOTAVAIL)
		ux_resolve_sources(m); /* its held messages come first */
	if (conn->rx_cur || conn->rx_cur_rx) {
		/*
		 * A sender never interleaves messages, so the one in progress
		 * is cut short: fail it rather than leave its receive hanging.
		 */
		MSG_WARN(m, "message %u started before message %u ended: dropped\n", h.msg_id,
		         conn->rx_cur_id);
		conn_drop_partial(conn, FI_EIO);
	}
	rx = match_posted(m, conn, &h);
	if (rx) {
		rx_bind_msg(rx, conn, &h);
		if (type == GM_FT_RTS) {
			rx_pull(rx, h.msg_id);
			return;
		}
		rx_place(rx, 0, data, dlen, h.mcrc);
		rx->got = dlen;
		if (type == GM_FT_EAGER || rx->got == rx->msg_len) {
			rx_complete(rx, rx->corrupt ? FI_EIO : 0);
		} else {
			conn->rx_cur_rx = rx;
			conn->rx_cur = NULL;
			conn->rx_cur_id = h.msg_id;
			gm_peer_await(conn->peer);
		}
		return;
	}
	struct gm_ux *ux = ux_new(conn, &h, type == GM_FT_RTS, dlen);
	if (!ux)
		return;
	ux_place(ux, 0, data, dlen, h.mcrc);
	ux->have = dlen;
	if (type == GM_FT_START && ux->have < ux->msg_len) {
		conn->rx_cur = ux;
		conn->rx_cur_rx = NULL;
		conn->rx_cur_id = h.msg_id;
	}
	gm_list_add_tail(&m->unexpected[(h.mflags & GM_M_TAGGED) ? 1 : 0], &ux->entry);
}

static void on_eager(struct gm_msg *m, struct gm_conn *conn, const void *body, size_t len)
{
	on_msg_first(m, conn, GM_FT_EAGER, body, len);
}

static void on_start(struct gm_msg *m, struct gm_conn *conn, const void *body, size_t len)
{
	on_msg_first(m, conn, GM_FT_START, body, len);
}

static void on_rts(struct gm_msg *m, struct gm_conn *conn, const void *body, size_t len)
{
	on_msg_first(m, conn, GM_FT_RTS, body, len);
}

static void on_frag(struct gm_msg *m, struct gm_conn *conn, const void *body, size_t len)
{
	struct gm_frag_hdr f;
	const uint8_t *data = (const uint8_t *)body + sizeof(f);
	size_t dlen = len - sizeof(f);

	gm_frag_hdr_decode(body, &f);
	if (f.msg_id != conn->rx_cur_id || (!conn->rx_cur && !conn->rx_cur_rx)) {
		MSG_WARN(m, "dropping fragment of unknown message %u\n", f.msg_id);
		return;
	}
	if (conn->rx_cur_rx) {
		struct gm_rx *rx = conn->rx_cur_rx;
		if (f.offset != rx->got || f.offset + dlen > rx->msg_len) {
			MSG_WARN(m, "dropping out-of-place fragment\n");
			return;
		}
		if (!rx->corrupt)
			rx_place(rx, f.offset, data, dlen, f.mcrc);
		rx->got += dlen;
		if (rx->got == rx->msg_len) {
			conn->rx_cur_rx = NULL;
			rx_complete(rx, rx->corrupt ? FI_EIO : 0);
		}
		return;
	}
	struct gm_ux *ux = conn->rx_cur;
	if (f.offset != ux->have || f.offset + dlen > ux->msg_len) {
		MSG_WARN(m, "dropping out-of-place fragment\n");
		return;
	}
	if (!ux_reserve(ux, f.offset + dlen)) {
		gm_list_del(&ux->entry);
		if (ux->bound)
			rx_complete(ux->bound, FI_ENOMEM);
		ux_drop(ux);
		return;
	}
	if (!ux->err)
		ux_place(ux, f.offset, data, dlen, f.mcrc);
	ux->have += dlen;
	if (ux->have == ux->msg_len) {
		conn->rx_cur = NULL;
		if (ux->bound) {
			struct gm_rx *rx = ux->bound;
			int err = ux->err;
			gm_list_del(&ux->entry);
			if (!err)
				gm_iov_copy_to(rx->iov, rx->iov_count, 0, ux->buf, rx->recv_len);
			rx->got = rx->recv_len;
			ux_free(ux);
			rx_complete(rx, err);
		}
	}
}

static void on_cts(struct gm_msg *m, struct gm_conn *conn, const void *body, size_t len)
{
	struct gm_cts_hdr c;
	struct gm_list *pos, *tmp;

	gm_cts_hdr_decode(body, &c);
	gm_list_for_each_safe(&conn->cts_wait, pos, tmp)
	{
		struct gm_tx *tx = gm_list_entry(pos, struct gm_tx, entry);
		if (tx->msg_id != c.msg_id)
			continue;
		gm_list_del(&tx->entry);
		tx->recv_id = c.recv_id;
		tx->limit = c.len < tx->len ? c.len : tx->len;
		tx->off = 0;
		tx->mcrc = 0;
		if (!tx->limit) {
			tx->state = GM_TX_SENT;
			tx_maybe_complete(tx);
			return;
		}
		tx->state = GM_TX_PULLED;
		conn_queue(conn, tx);
		return;
	}
	MSG_WARN(m, "dropping CTS for unknown message %u\n", c.msg_id);
}

static void on_rdata(struct gm_msg *m, struct gm_conn *conn, const void *body, size_t len)
{
	struct gm_frag_hdr f;
	const uint8_t *data = (const uint8_t *)body + sizeof(f);
	size_t dlen = len - sizeof(f);
	struct gm_list *pos, *tmp;

	gm_frag_hdr_decode(body, &f);
	gm_list_for_each_safe(&m->rndv_rx, pos, tmp)
	{
		struct gm_rx *rx = gm_list_entry(pos, struct gm_rx, rndv_entry);
		if (rx->id != f.msg_id || rx->conn != conn)
			continue;
		if (f.offset != rx->got || f.offset + dlen > rx->recv_len) {
			MSG_WARN(m, "dropping out-of-place rendezvous data\n");
			return;
		}
		if (!rx->corrupt)
			rx_place(rx, f.offset, data, dlen, f.mcrc);
		rx->got += dlen;
		if (rx->got == rx->recv_len) {
			gm_list_del(&rx->rndv_entry);
			rx_complete(rx, rx->corrupt ? FI_EIO : 0);
		}
		return;
	}
	MSG_WARN(m, "dropping rendezvous data for unknown receive %u\n", f.msg_id);
}

typedef void (*gm_handler_fn)(struct gm_msg *m, struct gm_conn *conn, const void *body, size_t len);

static const gm_handler_fn gm_handlers[GM_FT_MAX] = {
    [GM_FT_EAGER] = on_eager, [GM_FT_START] = on_start, [GM_FT_FRAG] = on_frag,
    [GM_FT_RTS] = on_rts,     [GM_FT_CTS] = on_cts,     [GM_FT_RDATA] = on_rdata,
};

static void port_recv(void *ctx, struct gm_peer *peer, const struct gm_rx_frame *f)
{
	struct gm_msg *m = ctx;
	struct gm_conn *conn = conn_of_peer(m, peer);
	uint8_t type = f->hdr->type;

	if (!conn) {
		MSG_WARN(m, "out of memory for a new peer: frame dropped\n");
		return;
	}
	if (type >= GM_FT_MAX || !gm_handlers[type] || f->body_len < gm_wire_type_hlen(type)) {
		MSG_WARN(m, "dropping frame of unexpected type %u\n", type);
		return;
	}
	gm_handlers[type](m, conn, f->body, f->body_len);
}

static void port_acked(void *ctx, struct gm_peer *peer, void *cookie)
{
	struct gm_tx *tx = cookie;

	tx->unacked--;
	tx_maybe_complete(tx);
}

static void port_failed_frame(void *ctx, struct gm_peer *peer, void *cookie, int err)
{
	struct gm_tx *tx = cookie;

	if (tx->reported && !tx->err && !tx->internal) {
		/* Completed when buffered, lost now: the one trace left is the
		 * send counter's error count (README, "Send completion"). */
		tx->msg->st.sends_lost++;
		tx->msg->up->send_lost(tx->msg->up_ctx);
	}
	tx->err = err < 0 ? -err : err;
	tx->unacked--;
	tx_maybe_complete(tx);
}

/* Fail everything in flight with this peer. */
static void port_peer_failed(void *ctx, struct gm_peer *peer, int err)
{
	struct gm_msg *m = ctx;
	struct gm_conn *conn = gm_peer_ctx(peer);
	struct gm_list *pos, *tmp;
	int e = err < 0 ? -err : err;

	if (!conn)
		return;
	MSG_WARN(m, "peer fi_addr %ld failed: %s\n", (long)conn->fi_addr, fi_strerror(e));
	gm_list_for_each_safe(&conn->tx_queue, pos, tmp)
	{
		struct gm_tx *tx = gm_list_entry(pos, struct gm_tx, entry);
		gm_list_del(&tx->entry);
		tx->err = e;
		tx->state = GM_TX_SENT;
		tx_maybe_complete(tx);
	}
	gm_list_del(&conn->pend_entry);
	gm_list_for_each_safe(&conn->cts_wait, pos, tmp)
	{
		struct gm_tx *tx = gm_list_entry(pos, struct gm_tx, entry);
		gm_list_del(&tx->entry);
		tx->err = e;
		tx->state = GM_TX_SENT;
		tx_maybe_complete(tx);
	}
	gm_list_for_each_safe(&m->rndv_rx, pos, tmp)
	{
		struct gm_rx *rx = gm_list_entry(pos, struct gm_rx, rndv_entry);
		if (rx->conn != conn)
			continue;
		gm_list_del(&rx->rndv_entry);
		rx_complete(rx, e);
	}
	conn_drop_partial(conn, e);
	/* Receives only this peer could satisfy never will: fail them, so that
	 * whoever waits on the peer learns of its death even with nothing of
	 * its own in flight to it. */
	fi_addr_t src = conn_src(conn);
	if (src == FI_ADDR_NOTAVAIL)
		return;
	for (int q = 0; q < 2; q++) {
		gm_list_for_each_safe(&m->posted[q], pos, tmp)
		{
			struct gm_rx *rx = gm_list_entry(pos, struct gm_rx, entry);
			if (rx->src != src || (rx->flags & FI_MULTI_RECV))
				continue;
			gm_list_del(&rx->entry);
			rx_complete(rx, e);
		}
	}
}

/* Whether an operation waits on the peer (gm_peer_await): asked rarely, so it may search. */
static bool port_awaited(void *ctx, struct gm_peer *peer)
{
	struct gm_msg *m = ctx;
	struct gm_conn *conn = gm_peer_ctx(peer);
	struct gm_list *pos, *tmp;

	if (!conn)
		return false;
	if (!gm_list_empty(&conn->cts_wait) || conn->rx_cur_rx ||
	    (conn->rx_cur && conn->rx_cur->bound))
		return true;
	gm_list_for_each_safe(&m->rndv_rx, pos, tmp)
	{
		if (gm_list_entry(pos, struct gm_rx, rndv_entry)->conn == conn)
			return true;
	}
	if (conn->fi_addr == FI_ADDR_NOTAVAIL)
		return false;
	for (int q = 0; q < 2; q++) {
		gm_list_for_each_safe(&m->posted[q], pos, tmp)
		{
			if (gm_list_entry(pos, struct gm_rx, entry)->src == conn->fi_addr)
				return true;
		}
	}
	return false;
}

const struct gm_port_ops gm_msg_port_ops = {
    .recv = port_recv,
    .acked = port_acked,
    .failed_frame = port_failed_frame,
    .peer_failed = port_peer_failed,
    .awaited = port_awaited,
};

/* A receive dropped at close; a multi-recv buffer goes with its last slice. */
static void rx_close_free(struct gm_rx *rx)
{
	struct gm_rx *parent = rx->multi_parent;

	if (parent && --parent->multi_refs == 0 && parent->multi_retired)
		free(parent);
	free(rx);
}

void gm_msg_stats_print(const struct gm_msg *m, const char *ifname, FILE *out)
{
	fprintf(out,
	        "gamma msg stats %s port %u: unknown-source messages held %lu released %lu "
	        "dropped %lu (peak %zu B); unexpected dropped %lu (peak %zu B); sends lost "
	        "%lu\n",
	        ifname, m->port ? gm_port_num(m->port) : 0, (unsigned long)m->st.unknown_held,
	        (unsigned long)m->st.unknown_released, (unsigned long)m->st.unknown_dropped,
	        m->st.unknown_peak, (unsigned long)m->st.ux_dropped, m->st.ux_peak,
	        (unsigned long)m->st.sends_lost);
}

void gm_msg_close(struct gm_msg *m)
{
	struct gm_list *pos, *tmp;

	/* Slices first: they hold references on multi-recv buffers still posted. */
	gm_list_for_each_safe(&m->rndv_rx, pos, tmp)
	{
		struct gm_rx *rx = gm_list_entry(pos, struct gm_rx, rndv_entry);
		gm_list_del(&rx->rndv_entry);
		rx_close_free(rx);
	}
	gm_list_for_each_safe(&m->conn_list, pos, tmp)
	{
		struct gm_conn *conn = gm_list_entry(pos, struct gm_conn, msg_entry);
		struct gm_list *p2, *t2;
		if (conn->rx_cur_rx)
			rx_close_free(conn->rx_cur_rx);
		conn->rx_cur_rx = NULL;
		gm_list_for_each_safe(&conn->rx_parked, p2, t2)
		{
			gm_list_del(p2);
			rx_close_free(gm_list_entry(p2, struct gm_rx, entry));
		}
	}
	for (int q = 0; q < 2; q++) {
		gm_list_for_each_safe(&m->unexpected[q], pos, tmp)
		{
			struct gm_ux *ux = gm_list_entry(pos, struct gm_ux, entry);
			gm_list_del(&ux->entry);
			if (ux->bound)
				rx_close_free(ux->bound);
			ux_free(ux);
		}
	}
	for (int q = 0; q < 2; q++) {
		gm_list_for_each_safe(&m->posted[q], pos, tmp)
		{
			struct gm_rx *rx = gm_list_entry(pos, struct gm_rx, entry);
			gm_list_del(&rx->entry);
			free(rx);
		}
	}
	/*
	 * Every send goes, also those whose frames the net still holds: the
	 * port closes next and drops them without calling back.
	 */
	gm_list_for_each_safe(&m->tx_live, pos, tmp)
	    free(gm_list_entry(pos, struct gm_tx, live_entry));
	gm_list_init(&m->tx_live);
	gm_list_for_each_safe(&m->conn_list, pos, tmp)
	{
		struct gm_conn *conn = gm_list_entry(pos, struct gm_conn, msg_entry);
		gm_peer_set_ctx(conn->peer, NULL);
		free(conn);
	}
	free(m->conns);
	m->conns = NULL;
	m->conns_cap = 0;
}
