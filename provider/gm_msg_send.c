/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The send side: a message becomes frames queued per connection in order
 * and handed to the net as its window opens (EAGER, START + FRAG, or RTS
 * for a rendezvous).  A send completes once its data is buffered (see
 * gm_tx_maybe_complete); the tx lives until every frame is acknowledged.
 */
#include "gm_msg_int.h"

#include <string.h>

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
 * finished by peer_failed (gm_msg.c), which the net calls after failing each
 * frame.
 */
void gm_tx_maybe_complete(struct gm_tx *tx)
{
	if (tx->state != GM_TX_SENT)
		return;
	if (!tx->reported &&
	    (!tx->unacked || !(tx->flags & (FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE))))
		tx_report(tx);
	if (!tx->unacked) {
		struct gm_tx *parent = tx->parent;
		int err = tx->err;

		gm_tx_free(tx);
		if (parent) {
			/* A pull server (gm_msg_stripe.c): the send counted it as unacked,
			 * and loses what its server lost. */
			for (unsigned r = 0; r < GM_RAILS_MAX; r++)
				if (parent->srv[r] == tx)
					parent->srv[r] = NULL;
			if (err && !parent->err) {
				gm_msg_on_failed_frame(parent->msg, parent->conn->peer, parent,
				                       err);
				return;
			}
			parent->unacked--;
			gm_tx_maybe_complete(parent);
		}
	}
}

void gm_tx_free(struct gm_tx *tx)
{
	gm_list_del(&tx->live_entry);
	gm_pool_put(&tx->msg->tx_pool, tx);
}

static void conn_mark_pending(struct gm_conn *conn)
{
	if (gm_list_empty(&conn->pend_entry))
		gm_list_add_tail(&conn->msg->tx_pending, &conn->pend_entry);
}

/* The type header of tx's next frame, once its payload's CRC is known. */
static void tx_encode_thdr(void *thdr, uint32_t mcrc, void *arg)
{
	struct gm_tx *tx = arg;

	if (!tx->first_sent) {
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
}

/*
 * Hand one frame of tx to peer.  Returns 0, -FI_EAGAIN or -FI_EIO.  Inlined
 * into gm_conn_push, as it was before pull servers called it too: the
 * call cost 20 instructions a frame (callgrind, test_msg).
 */
static inline __attribute__((always_inline)) int tx_send_one(struct gm_tx *tx, struct gm_peer *peer,
                                                             size_t max_body, size_t *sent)
{
	struct iovec iov[GM_IOV_LIMIT];
	size_t thlen, chunk, niov = 0;
	uint32_t mcrc = tx->mcrc;
	uint8_t type;
	bool zc;
	int ret;

	/* Few frames wait ahead of a CTS we may owe (GM_TX_AHEAD, conn_queue_ctrl). */
	if (!tx->ctrl_len && gm_peer_queued(peer) >= GM_TX_AHEAD)
		return -FI_EAGAIN;
	if (!tx->first_sent) {
		type = tx->first_type;
		thlen = tx->ctrl_len ? tx->ctrl_len : sizeof(struct gm_msg_hdr);
		chunk = tx->ctrl_len || type == GM_FT_RTS ? 0 : max_body - thlen;
	} else {
		type = tx->state == GM_TX_PULLED ? GM_FT_RDATA : GM_FT_FRAG;
		thlen = sizeof(struct gm_frag_hdr);
		chunk = max_body - thlen;
	}
	if (chunk > tx->limit - tx->off)
		chunk = tx->limit - tx->off;
	if (chunk)
		niov = gm_iov_slice(tx->iov, tx->iov_count, tx->off, chunk, iov);
	/*
	 * A send that completes only once acknowledged (FI_TRANSMIT_COMPLETE,
	 * FI_DELIVERY_COMPLETE; a pull server serves its send's flags) leaves
	 * its data where it is: its frames send, and resend, from the user's
	 * buffer.  At MTU 65000 that is one copy of three on the sender's core
	 * (experiments/perf/README.md).  Other sends complete when buffered:
	 * their payload is copied into the frame, with the message CRC in the
	 * same pass.  (Waiting for the acks costs a loaded reverse link's queue:
	 * NPB MG class A over mtl/ofi at 1 Gbit/s took 0.74 s with rendezvous
	 * sends completing when buffered, 0.82-0.94 s with them waiting.)
	 */
	zc = (tx->parent ? tx->parent->flags : tx->flags) &
	     (FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE);
	if (tx->ctrl_len)
		ret = gm_peer_send(peer, type, tx->inject_buf, thlen, NULL, 0, tx);
	else if (zc)
		ret = gm_peer_send_zc(peer, type, thlen, tx_encode_thdr, tx, iov, niov, &mcrc, tx);
	else
		ret = gm_peer_send_crc(peer, type, thlen, tx_encode_thdr, tx, iov, niov, &mcrc, tx);
	if (ret)
		return ret;
	/* Its completion waits for the ack of its last frame: no ack delay. */
	if (zc && tx->off + chunk >= tx->limit)
		gm_peer_ack_now(peer);
	tx->first_sent = true;
	tx->off += chunk;
	tx->mcrc = mcrc;
	tx->unacked++;
	*sent = chunk;
	return 0;
}

/* What tx_send_one puts in a first frame (EAGER or START) and in a FRAG. */
void gm_msg_frames(const struct gm_msg *m, size_t *first, size_t *next)
{
	*first = m->cfg.max_body - sizeof(struct gm_msg_hdr);
	*next = m->cfg.max_body - sizeof(struct gm_frag_hdr);
}

/* The same for the pull servers (gm_msg_stripe.c); gm_conn_push keeps it inlined. */
int gm_tx_send_one(struct gm_tx *tx, struct gm_peer *peer, size_t max_body, size_t *sent)
{
	return tx_send_one(tx, peer, max_body, sent);
}

/*
 * A small message whose predecessor to the same peer still waits to leave
 * rides in that frame (GM_FT_BUNDLE): a burst of small sends, as between
 * two progress passes (gm_domain_kick), costs one frame, one system call's
 * share and one acknowledgement.  Its data is copied, so it is sent, and
 * completes, at once like any buffered send; the frame's owner (its
 * cookie) answers for it if the frame is lost.  One rail only: striping
 * orders messages by rules of its own.
 */
static bool tx_ride(struct gm_tx *tx, struct gm_peer *peer)
{
	struct gm_tx *owner;
	uint32_t mcrc = 0;

	if (tx->first_type != GM_FT_EAGER || tx->first_sent || tx->msg->nrails > 1 ||
	    (tx->flags & (FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE)))
		return false;
	owner = gm_peer_append(peer, sizeof(struct gm_msg_hdr), tx_encode_thdr, tx, tx->iov,
	                       tx->iov_count, &mcrc);
	if (!owner)
		return false;
	owner->riders++;
	tx->msg->st.bundled++;
	tx->state = GM_TX_SENT;
	return true;
}

/* Push queued frames of one conn into the net until its window is full. */
void gm_conn_push(struct gm_conn *conn)
{
	size_t max_body = conn->msg->cfg.max_body, sent;
	struct gm_list *pos, *tmp;

again:
	if (conn->msg->nrails > 1) {
		/* What a dead rail had in flight goes first, on the lead. */
		gm_rails_pick_lead(conn);
		if (gm_rails_push_moved(conn)) {
			conn_mark_pending(conn);
			return;
		}
	}
	gm_list_for_each_safe(&conn->tx_queue, pos, tmp)
	{
		struct gm_tx *tx = gm_list_entry(pos, struct gm_tx, entry);

		if (tx_ride(tx, conn->peer)) {
			gm_list_del(&tx->entry);
			gm_tx_maybe_complete(tx);
			continue;
		}
		do {
			int ret = tx_send_one(tx, conn->peer, max_body, &sent);
			if (ret == -FI_EAGAIN) {
				/* Chunks on other rails need not wait for this window. */
				if (conn->stripe_queued)
					gm_stripe_push(conn);
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
			gm_tx_maybe_complete(tx);
	}
	if (conn->stripe_queued && gm_stripe_push(conn)) {
		conn_mark_pending(conn);
		return;
	}
	/* A pull server that failed queued its send's NACK (gm_tx_nack). */
	if (!gm_list_empty(&conn->tx_queue))
		goto again;
	gm_list_del(&conn->pend_entry);
}

void gm_conn_queue(struct gm_conn *conn, struct gm_tx *tx)
{
	bool was_empty = gm_list_empty(&conn->tx_queue);

	gm_list_add_tail(&conn->tx_queue, &tx->entry);
	/* Behind a blocked frame, wait: order is per peer. */
	if (was_empty)
		gm_conn_push(conn);
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
	if (m->tx_pool.used >= m->cfg.tx_max || !(tx = gm_pool_get(&m->tx_pool))) {
		m->st.tx_refused++;
		return -FI_EAGAIN;
	}
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
	gm_conn_queue(conn, tx);
	return 0;
}

/*
 * A CTS goes ahead of our queued messages, behind earlier CTSs: the peer's
 * message waits for it, while ours need not come first.  Nothing on the
 * receiving side minds: a CTS between the fragments of a medium message or
 * the frames of a pull is handled on its own (gm_rndv_on_cts).
 */
static void conn_queue_ctrl(struct gm_conn *conn, struct gm_tx *tx)
{
	struct gm_list *pos = conn->tx_queue.next;

	while (pos != &conn->tx_queue) {
		const struct gm_tx *q = gm_list_entry(pos, struct gm_tx, entry);

		if (!q->ctrl_len || q->first_type != GM_FT_CTS)
			break;
		pos = pos->next;
	}
	gm_list_insert_between(&tx->entry, pos->prev, pos);
	gm_conn_push(conn);
}

/* Queue a protocol frame (CTS) of our own. */
int gm_send_ctrl(struct gm_conn *conn, uint8_t type, const void *thdr, size_t len)
{
	struct gm_tx *tx = gm_pool_get(&conn->msg->tx_pool);

	if (!tx)
		return -FI_ENOMEM;
	*tx = (struct gm_tx){
	    .msg = conn->msg,
	    .conn = conn,
	    .internal = true,
	    .first_type = type,
	    .ctrl_len = (uint8_t)len,
	    .state = GM_TX_QUEUED,
	};
	memcpy(tx->inject_buf, thdr, len);
	gm_list_init(&tx->entry);
	gm_list_add_tail(&conn->msg->tx_live, &tx->live_entry);
	conn_queue_ctrl(conn, tx);
	return 0;
}

int gm_send_cts(struct gm_conn *conn, struct gm_cts_hdr *c)
{
	uint8_t buf[sizeof(*c)];

	int rc;

	c->cts_id = conn->next_cts_id;
	gm_cts_hdr_encode(buf, c);
	rc = gm_send_ctrl(conn, GM_FT_CTS, buf, sizeof(buf));
	if (!rc)
		conn->next_cts_id++;
	return rc;
}

void gm_tx_nack_encode(struct gm_tx *tx, int reason)
{
	const struct gm_nack_hdr n = {
	    .msg_id = tx->msg_id, .recv_id = tx->recv_id, .reason = (uint32_t)reason};

	gm_nack_hdr_encode(tx->inject_buf, &n);
	tx->ctrl_len = sizeof(n);
	tx->msg->st.nacks_sent++;
}

void gm_tx_nack(struct gm_tx *tx, int reason)
{
	struct gm_conn *conn = tx->conn;
	struct gm_msg *m = tx->msg;

	gm_list_del(&tx->entry);
	if (!tx->err)
		tx->err = reason;
	tx->state = GM_TX_SENT;
	if (!tx->reported)
		tx_report(tx);
	if (gm_peer_failed(conn->peer)) {
		/* Nobody left to tell: the receiver fails with the peer. */
		gm_tx_maybe_complete(tx);
		return;
	}
	MSG_WARN(m, "cannot serve message %u to fi_addr %ld (%s): NACK\n", tx->msg_id,
	         (long)conn->fi_addr, fi_strerror(reason));
	gm_tx_nack_encode(tx, reason);
	tx->first_type = GM_FT_NACK;
	tx->first_sent = false;
	tx->internal = true;
	tx->off = tx->limit = 0;
	tx->state = GM_TX_QUEUED;
	/* Sent by the next push: this may run inside one (a failing pull server). */
	gm_list_add_tail(&conn->tx_queue, &tx->entry);
	conn_mark_pending(conn);
}

void gm_msg_on_acked(void *ctx, struct gm_peer *peer, void *cookie)
{
	struct gm_tx *tx = cookie;

	tx->unacked--;
	gm_tx_maybe_complete(tx);
}

void gm_msg_on_failed_frame(void *ctx, struct gm_peer *peer, void *cookie, int err)
{
	struct gm_tx *tx = cookie;

	if (tx->reported && !tx->err && !tx->internal) {
		/* Completed when buffered, lost now: the one trace left is the
		 * send counter's error count (README, "Send completion"). */
		tx->msg->st.sends_lost++;
		tx->msg->up->send_lost(tx->msg->up_ctx);
	}
	/* Its riders completed when buffered, whatever it did. */
	for (; tx->riders; tx->riders--) {
		tx->msg->st.sends_lost++;
		tx->msg->up->send_lost(tx->msg->up_ctx);
	}
	tx->err = err < 0 ? -err : err;
	tx->unacked--;
	gm_tx_maybe_complete(tx);
}
