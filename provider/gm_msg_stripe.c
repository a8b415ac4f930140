/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Striping a large message over several rails.  The receiver that matched
 * an RTS pulls in chunks (cfg.stripe_chunk bytes) instead of all at once:
 * one CTS per chunk, naming its offset, its length and the rail its RDATA
 * must take, and about a window's worth of chunks (cfg.stripe_depth) in
 * flight per live rail, so that each rail gets a new chunk as soon as it
 * delivered one: rails fill in proportion to how fast they drain.
 *
 * The CTS themselves go on the lead rail like every control frame, in
 * order, numbered (cts_id) so that one moved from a dead rail and arriving
 * twice is dropped.  The sender serves a send's chunks through one pull
 * server per rail (an internal gm_tx whose parent is the send), each
 * sending its chunks one after the other on its rail; a server whose rail
 * died sends on the lead rail from then on, after the frames moved from
 * the dead rail (gm_conn_push sends those first), so the frames of one
 * chunk always arrive in order, though a frame may come twice.
 *
 * So the receiver keeps, per chunk, how many of its bytes are in (the
 * received ranges of the pull: a prefix of each chunk asked for), drops a
 * frame below that as a duplicate, and completes the receive once every
 * chunk is in.  The message CRC of RDATA chains from its chunk's start
 * (gm_wire.h), so chunks are checked whatever order they complete in.
 */
#include "gm_msg_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- the receiver ---- */

/* The live rail with the fewest chunks in flight, below depth; -1: none. */
static int pick_rail(const struct gm_conn *conn, const struct gm_pull *p)
{
	unsigned n = conn->msg->nrails;
	int best = -1;
	bool any_live = false;

	for (unsigned i = 0; i < n; i++) {
		unsigned r = (p->next_rail + i) % n;

		if (!gm_rails_live(conn, r))
			continue;
		any_live = true;
		if (p->nout[r] < p->depth && (best < 0 || p->nout[r] < p->nout[best]))
			best = (int)r;
	}
	/* No rail answers: the lead's failure decides the connection's fate. */
	if (!any_live && p->nout[conn->lead] < p->depth)
		best = (int)conn->lead;
	return best;
}

/*
 * Ask for chunks while a rail and a slot have room.  A CTS that finds the
 * pool full is asked again by the next chunk that comes in or the next
 * progress pass (gm_rndv_retry): failing the receive would leave its
 * sender waiting to be pulled for as long as it answers.
 */
void gm_pull_issue(struct gm_rx *rx)
{
	struct gm_pull *p = rx->pull;
	struct gm_conn *conn = rx->conn;

	while (p->next_off < rx->recv_len) {
		struct gm_chunk *s = &p->slot[(p->next_off / p->chunk) % GM_PULL_SLOTS];
		uint64_t len = rx->recv_len - p->next_off;
		int r;

		if (s->busy || (r = pick_rail(conn, p)) < 0)
			break;
		if (len > p->chunk)
			len = p->chunk;
		struct gm_cts_hdr c = {.msg_id = p->msg_id,
		                       .recv_id = rx->id,
		                       .len = rx->recv_len,
		                       .offset = p->next_off,
		                       .chunk = len,
		                       .rail = (uint8_t)r};
		if (gm_send_cts(conn, &c)) {
			conn->msg->cts_starved = true;
			return;
		}
		*s = (struct gm_chunk){
		    .off = p->next_off, .len = len, .rail = (uint8_t)r, .busy = true};
		p->busy++;
		p->nout[r]++;
		p->next_off += len;
		p->next_rail = (unsigned)r + 1;
		conn->msg->st.stripe_chunks++;
	}
}

bool gm_pull_start(struct gm_rx *rx, uint32_t msg_id)
{
	struct gm_msg *m = rx->msg;
	uint64_t chunk = m->cfg.stripe_chunk ? m->cfg.stripe_chunk : GM_STRIPE_CHUNK;
	unsigned depth = m->cfg.stripe_depth ? m->cfg.stripe_depth : 2;
	struct gm_pull *p;

	if (rx->recv_len <= chunk || !(p = calloc(1, sizeof(*p))))
		return false; /* one piece (also without memory: it needs none) */
	/* The sender queues at most GM_SERVER_SPANS chunks per rail, and the
	 * slots must hold every rail's. */
	if (depth > GM_SERVER_SPANS)
		depth = GM_SERVER_SPANS;
	if (depth > GM_PULL_SLOTS / m->nrails)
		depth = GM_PULL_SLOTS / m->nrails;
	p->msg_id = msg_id;
	p->chunk = chunk;
	p->depth = depth;
	rx->pull = p;
	m->st.stripe_pulls++;
	gm_list_add_tail(&m->rndv_rx, &rx->rndv_entry);
	gm_peer_await(rx->conn->peer);
	gm_pull_issue(rx);
	return true;
}

void gm_pull_on_rdata(struct gm_rx *rx, const struct gm_frag_hdr *f, const uint8_t *data,
                      size_t dlen)
{
	struct gm_msg *m = rx->msg;
	struct gm_pull *p = rx->pull;
	struct gm_chunk *s = &p->slot[(f->offset / p->chunk) % GM_PULL_SLOTS];
	int err;

	if (!s->busy || f->offset < s->off || f->offset - s->off >= s->len) {
		/* Of a chunk that is in already (it came again on another rail)? */
		if (f->offset < p->next_off && gm_rails_dup(m))
			return;
		goto misplaced;
	}
	if (f->offset < s->off + s->got && gm_rails_dup(m))
		return;
	if (f->offset != s->off + s->got || dlen > s->len - s->got)
		goto misplaced;
	if (!rx->corrupt) {
		rx->mcrc = s->mcrc; /* the chunk's own chain (gm_wire.h) */
		gm_rx_place(rx, f->offset, data, dlen, f->mcrc);
		s->mcrc = rx->mcrc;
	}
	s->got += dlen;
	rx->got += dlen;
	if (s->got < s->len)
		return;
	s->busy = false;
	p->busy--;
	p->nout[s->rail]--;
	gm_pull_issue(rx);
	if (p->busy || p->next_off < rx->recv_len)
		return; /* more to come, or to ask for once the pool has room */
	err = rx->corrupt ? FI_EIO : 0;
	gm_list_del(&rx->rndv_entry);
	free(p);
	rx->pull = NULL;
	gm_rx_complete(rx, err);
	return;
misplaced:
	m->st.drop_rdata_misplaced++;
	MSG_WARN(m, "dropping out-of-place rendezvous data (offset %lu)\n",
	         (unsigned long)f->offset);
}

/* ---- the sender ---- */

static struct gm_tx *server_new(struct gm_tx *tx, unsigned rail)
{
	struct gm_msg *m = tx->msg;
	struct gm_tx *s = gm_pool_get(&m->tx_pool);

	if (!s)
		return NULL;
	*s = (struct gm_tx){
	    .msg = m,
	    .conn = tx->conn,
	    .internal = true,
	    .first_sent = true, /* every frame is RDATA */
	    .state = GM_TX_PULLED,
	    .recv_id = tx->recv_id,
	    .parent = tx,
	    .rail = (uint8_t)rail,
	    .iov_count = tx->iov_count,
	};
	memcpy(s->iov, tx->iov, sizeof(s->iov));
	gm_list_init(&s->entry);
	gm_list_add_tail(&m->tx_live, &s->live_entry);
	tx->srv[rail] = s;
	tx->unacked++; /* until the server is freed */
	return s;
}

/* Every byte pulled is in the net: the send and its servers are sent. */
static void stripe_done(struct gm_tx *tx)
{
	tx->state = GM_TX_SENT;
	tx->unacked++; /* a server's end must not free tx under this loop */
	for (unsigned r = 0; r < GM_RAILS_MAX; r++) {
		struct gm_tx *s = tx->srv[r];

		if (!s)
			continue;
		s->state = GM_TX_SENT;
		gm_tx_maybe_complete(s);
	}
	tx->unacked--;
	gm_tx_maybe_complete(tx);
}

void gm_stripe_fail(struct gm_tx *tx, int err)
{
	if (!tx->striped)
		return;
	tx->unacked++;
	for (unsigned r = 0; r < GM_RAILS_MAX; r++) {
		struct gm_tx *s = tx->srv[r];

		if (!s)
			continue;
		if (!gm_list_empty(&s->entry)) {
			gm_list_del(&s->entry);
			tx->conn->stripe_queued--;
		}
		s->nspans = 0;
		s->err = err;
		s->state = GM_TX_SENT;
		gm_tx_maybe_complete(s);
	}
	tx->unacked--;
}

/*
 * A send failed (err) while striped: it and its servers are done with, and
 * the receiver, which asked for chunks, is told (NACK) rather than left
 * waiting for them as long as we answer.
 */
static void stripe_fail_send(struct gm_tx *tx, int err)
{
	gm_list_del(&tx->entry); /* from cts_wait, if still asked for */
	tx->err = err;
	tx->state = GM_TX_SENT;
	gm_stripe_fail(tx, err);
	gm_tx_nack(tx, err);
}

void gm_stripe_fail_conn(struct gm_conn *conn, int err)
{
	for (unsigned q = 0; q < GM_RAILS_MAX; q++) {
		while (!gm_list_empty(&conn->stripe_q[q])) {
			struct gm_tx *s =
			    gm_list_entry(conn->stripe_q[q].next, struct gm_tx, entry);

			stripe_fail_send(s->parent, err);
		}
	}
}

static bool cts_bad(struct gm_msg *m, const struct gm_tx *tx, const struct gm_cts_hdr *c,
                    uint64_t limit)
{
	const struct gm_tx *s;

	if (!c->chunk || c->rail >= m->nrails || c->offset >= limit ||
	    c->chunk > limit - c->offset || c->chunk > limit - tx->served)
		return true;
	if (tx->striped && (limit != tx->limit || c->recv_id != tx->recv_id))
		return true;
	s = tx->srv[c->rail];
	return s && s->nspans == GM_SERVER_SPANS; /* more than the receiver may ask */
}

bool gm_stripe_on_cts(struct gm_msg *m, struct gm_conn *conn, struct gm_tx *tx,
                      const struct gm_cts_hdr *c)
{
	uint64_t limit = c->len < tx->len ? c->len : tx->len;
	struct gm_tx *s;

	if (cts_bad(m, tx, c, limit)) {
		m->st.drop_cts_bad++;
		MSG_WARN(m, "dropping CTS for message %u: chunk %lu+%lu of %lu on rail %u\n",
		         c->msg_id, (unsigned long)c->offset, (unsigned long)c->chunk,
		         (unsigned long)c->len, c->rail);
		return false;
	}
	if (!tx->striped) {
		tx->striped = true;
		tx->limit = limit;
		tx->recv_id = c->recv_id;
		tx->off = 0;
		tx->served = 0;
	}
	s = tx->srv[c->rail];
	if (!s && !(s = server_new(tx, c->rail))) {
		/* The pool is full: another rail's server takes the chunk. */
		for (unsigned r = 0; r < GM_RAILS_MAX && !s; r++)
			if (tx->srv[r] && tx->srv[r]->nspans < GM_SERVER_SPANS)
				s = tx->srv[r];
		if (!s) {
			m->st.drop_no_memory++;
			MSG_WARN(m, "no memory to serve message %u: send failed\n", tx->msg_id);
			stripe_fail_send(tx, FI_ENOMEM);
			return true;
		}
	}
	s->spans[(s->span_head + s->nspans) % GM_SERVER_SPANS] =
	    (struct gm_span){.off = c->offset, .len = c->chunk};
	if (s->nspans++ == 0) {
		s->off = c->offset;
		s->limit = c->offset + c->chunk;
		s->mcrc = 0;
	}
	tx->served += c->chunk;
	if (tx->served == tx->limit)
		gm_list_del(&tx->entry); /* every chunk asked for: out of cts_wait */
	if (gm_list_empty(&s->entry)) {
		gm_list_add_tail(&conn->stripe_q[s->rail], &s->entry);
		conn->stripe_queued++;
	}
	gm_conn_push(conn);
	return true;
}

enum push_result { PUSH_IDLE, PUSH_BLOCKED, PUSH_RESTART };

/* Send a server's chunks until its window is full or it has none left. */
static enum push_result server_push(struct gm_tx *s, size_t max_body)
{
	struct gm_conn *conn = s->conn;
	struct gm_tx *tx = s->parent;

	for (;;) {
		unsigned r;
		size_t sent = 0;
		int ret;

		/* Its rail died: the lead from now on, after what moved from there. */
		if (!s->on_lead && !gm_rails_live(conn, s->rail))
			s->on_lead = true;
		r = s->on_lead ? conn->lead : s->rail;
		ret = gm_tx_send_one(s, conn->rails[r] ? conn->rails[r] : conn->peer, max_body,
		                     &sent);
		if (ret == -FI_EAGAIN)
			return PUSH_BLOCKED;
		if (ret) {
			stripe_fail_send(tx, ret == -FI_EIO ? FI_EIO : -ret);
			return PUSH_RESTART;
		}
		conn->msg->st.rdata_bytes[r] += sent;
		tx->off += sent;
		if (s->off < s->limit)
			continue;
		/* This chunk is in the net: the next, if any. */
		s->span_head = (uint8_t)((s->span_head + 1) % GM_SERVER_SPANS);
		if (--s->nspans) {
			const struct gm_span *sp = &s->spans[s->span_head];

			s->off = sp->off;
			s->limit = sp->off + sp->len;
			s->mcrc = 0;
			continue;
		}
		gm_list_del(&s->entry);
		conn->stripe_queued--;
		if (tx->off == tx->limit) {
			stripe_done(tx);
			return PUSH_RESTART;
		}
		return PUSH_IDLE;
	}
}

bool gm_stripe_push(struct gm_conn *conn)
{
	size_t max_body = conn->msg->cfg.max_body;
	bool blocked;

again:
	blocked = false;
	for (unsigned q = 0; q < GM_RAILS_MAX && conn->stripe_queued; q++) {
		struct gm_list *pos, *tmp;

		gm_list_for_each_safe(&conn->stripe_q[q], pos, tmp)
		{
			switch (server_push(gm_list_entry(pos, struct gm_tx, entry), max_body)) {
			case PUSH_BLOCKED:
				blocked = true;
				break;
			case PUSH_RESTART: /* servers left the queues: walk them afresh */
				goto again;
			case PUSH_IDLE:
				break;
			}
		}
	}
	return blocked;
}
