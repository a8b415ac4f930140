/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The message protocol of one endpoint: its state, its connections (one
 * per remote endpoint, found by fi_addr or by the net's peer), what a
 * peer's failure does to them, progress, close and FI_GAMMA_STATS.  The
 * protocol itself is described in gm_msg_int.h.
 */
#include "gm_msg_int.h"

#include <stdlib.h>
#include <string.h>

void gm_msg_init(struct gm_msg *m, const struct gm_msg_cfg *cfg, const struct gm_msg_upcalls *up,
                 void *up_ctx)
{
	*m = (struct gm_msg){.up = up, .up_ctx = up_ctx, .cfg = *cfg};
	m->nrails = 1;
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
	gm_list_init(&m->ux_refusing);
	gm_pool_init(&m->tx_pool, sizeof(struct gm_tx), cfg->tx_max + 2 * cfg->rx_max);
	gm_pool_init(&m->rx_pool, sizeof(struct gm_rx), 2 * cfg->rx_max);
}

void gm_msg_set_rails(struct gm_msg *m, struct gm_port *const *ports, unsigned n)
{
	m->nrails = n;
	for (unsigned r = 0; r < n; r++)
		m->rail_ports[r] = ports[r];
	m->port = ports[0];
}

/* A connection of peer, on rail (several rails: the other rails join later). */
struct gm_conn *gm_conn_new(struct gm_msg *m, struct gm_peer *peer, unsigned rail)
{
	struct gm_conn *conn = calloc(1, sizeof(*conn));

	if (!conn)
		return NULL;
	conn->msg = m;
	conn->peer = peer;
	conn->rails[rail] = peer;
	conn->lead = rail;
	conn->fi_addr = FI_ADDR_NOTAVAIL;
	gm_list_init(&conn->tx_queue);
	gm_list_init(&conn->cts_wait);
	gm_list_init(&conn->pend_entry);
	gm_list_init(&conn->refuse_entry);
	gm_list_init(&conn->rx_parked);
	gm_list_init(&conn->moved);
	for (unsigned r = 0; r < GM_RAILS_MAX; r++)
		gm_list_init(&conn->stripe_q[r]);
	gm_list_add_tail(&m->conn_list, &conn->msg_entry);
	gm_peer_set_ctx(peer, conn);
	return conn;
}

struct gm_conn *gm_conn_of_peer(struct gm_msg *m, struct gm_peer *peer)
{
	struct gm_conn *conn = gm_peer_ctx(peer);

	if (conn)
		return conn;
	if (m->nrails > 1)
		return gm_rails_conn_of_peer(m, peer);
	return gm_conn_new(m, peer, 0);
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
	conn = gm_peer_ctx(peer);
	if (!conn && !(conn = gm_conn_new(m, peer, 0)))
		return NULL;
	if (m->nrails > 1)
		gm_rails_attach(conn, addr);
	conn->fi_addr = fi_addr;
	m->conns[fi_addr] = conn;
	return conn;
}

int gm_msg_set_peer_auth(struct gm_msg *m, fi_addr_t fi_addr, const struct gm_auth *auth)
{
	struct gm_conn *conn = gm_msg_conn(m, fi_addr);
	int rc = 0;

	if (!conn)
		return m->up->av_addr(m->up_ctx, fi_addr) ? -FI_ENOMEM : -FI_EINVAL;
	if (m->nrails < 2)
		return gm_peer_set_auth(conn->peer, auth);
	for (unsigned r = 0; r < m->nrails && !rc; r++)
		if (conn->rails[r])
			rc = gm_peer_set_auth(conn->rails[r], auth);
	return rc;
}

/* The sender's fi_addr for completions and directed receives. */
fi_addr_t gm_conn_src(struct gm_conn *conn)
{
	struct gm_msg *m = conn->msg;

	if (conn->fi_addr == FI_ADDR_NOTAVAIL) {
		/* rail 0's address names the endpoint in the AV, whichever rail leads */
		struct gm_peer *p0 = conn->rails[0] ? conn->rails[0] : conn->peer;
		fi_addr_t a = m->up->av_find(m->up_ctx, gm_peer_addr(p0));
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
fi_addr_t gm_conn_msg_src(struct gm_conn *conn)
{
	fi_addr_t src = gm_conn_src(conn);

	return src == FI_ADDR_NOTAVAIL && hold_unknown(conn->msg) ? GM_ADDR_HELD : src;
}

void gm_msg_progress(struct gm_msg *m)
{
	struct gm_list *pos, *tmp;

	gm_list_for_each_safe(&m->tx_pending, pos, tmp)
	    gm_conn_push(gm_list_entry(pos, struct gm_conn, pend_entry));
	if (gm_ux_resolve_due(m))
		gm_ux_resolve_sources(m);
	gm_rx_unstarve(m);
	if (m->cts_starved)
		gm_rndv_retry(m);
	if (!gm_list_empty(&m->ux_refusing))
		gm_ux_resume(m);
}

/* Fail everything in flight with this peer. */
static void port_peer_failed(void *ctx, struct gm_peer *peer, int err)
{
	struct gm_msg *m = ctx;
	struct gm_conn *conn = gm_peer_ctx(peer);
	struct gm_list *pos, *tmp;
	int e = err < 0 ? -err : err;

	if (!conn || !gm_rails_peer_failed(conn, peer, err))
		return;
	MSG_WARN(m, "peer fi_addr %ld failed: %s\n", (long)conn->fi_addr, fi_strerror(e));
	gm_rails_drop_moved(conn, e);
	gm_list_for_each_safe(&conn->tx_queue, pos, tmp)
	{
		struct gm_tx *tx = gm_list_entry(pos, struct gm_tx, entry);
		gm_list_del(&tx->entry);
		tx->err = e;
		tx->state = GM_TX_SENT;
		gm_tx_maybe_complete(tx);
	}
	gm_list_del(&conn->pend_entry);
	gm_stripe_fail_conn(conn, e);
	gm_list_for_each_safe(&conn->cts_wait, pos, tmp)
	{
		struct gm_tx *tx = gm_list_entry(pos, struct gm_tx, entry);
		gm_list_del(&tx->entry);
		tx->err = e;
		tx->state = GM_TX_SENT;
		gm_stripe_fail(tx, e);
		gm_tx_maybe_complete(tx);
	}
	gm_list_for_each_safe(&m->rndv_rx, pos, tmp)
	{
		struct gm_rx *rx = gm_list_entry(pos, struct gm_rx, rndv_entry);
		if (rx->conn != conn)
			continue;
		gm_list_del(&rx->rndv_entry);
		gm_rx_complete(rx, e);
	}
	gm_conn_drop_partial(conn, e);
	/* Receives only this peer could satisfy never will: fail them, so that
	 * whoever waits on the peer learns of its death even with nothing of
	 * its own in flight to it. */
	fi_addr_t src = gm_conn_src(conn);
	if (src == FI_ADDR_NOTAVAIL)
		return;
	for (int q = 0; q < 2; q++) {
		gm_list_for_each_safe(&m->posted[q], pos, tmp)
		{
			struct gm_rx *rx = gm_list_entry(pos, struct gm_rx, entry);
			if (rx->src != src || (rx->flags & FI_MULTI_RECV))
				continue;
			gm_list_del(&rx->entry);
			gm_rx_complete(rx, e);
		}
	}
}

/* Whether an operation waits on the peer (gm_peer_await): asked rarely, so it may search. */
static bool port_awaited(void *ctx, struct gm_peer *peer)
{
	struct gm_conn *conn = gm_peer_ctx(peer);

	return conn && conn->peer == peer && gm_conn_awaited(conn);
}

bool gm_conn_awaited(struct gm_conn *conn)
{
	struct gm_msg *m = conn->msg;
	struct gm_list *pos, *tmp;

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
    .recv = gm_msg_on_recv,
    .acked = gm_msg_on_acked,
    .failed_frame = gm_msg_on_failed_frame,
    .peer_failed = port_peer_failed,
    .awaited = port_awaited,
    .stalled = gm_rails_on_stalled,
    .revived = gm_rails_on_revived,
};

void gm_msg_stats_print(const struct gm_msg *m, const char *ifname, FILE *out)
{
	/* One write: stderr is unbuffered and ranks share it. */
	char rails[GM_RAILS_MAX * 24] = "";
	size_t at = 0;

	for (unsigned r = 0; r < m->nrails; r++)
		at += (size_t)snprintf(rails + at, sizeof(rails) - at, " %lu",
		                       (unsigned long)m->st.rdata_bytes[r]);
	fprintf(out,
	        "gamma msg stats %s port %u: unknown-source messages held %lu released %lu "
	        "dropped %lu (peak %zu B); unexpected frames refused %lu (peak %zu B); sends lost "
	        "%lu; frames dropped: malformed %lu bad-type %lu unknown-frag %lu "
	        "misplaced-frag %lu unknown-cts %lu unknown-rdata %lu misplaced-rdata %lu "
	        "no-memory %lu; messages cut short %lu; refused (pool full) sends %lu "
	        "receives %lu; rail failovers %lu revivals %lu duplicates %lu; striped pulls %lu "
	        "chunks %lu bad-cts %lu; nacks sent %lu pulls nacked %lu unknown-nack %lu; bundled "
	        "sends %lu; striped bytes by rail%s\n",
	        ifname, m->port ? gm_port_num(m->port) : 0, (unsigned long)m->st.unknown_held,
	        (unsigned long)m->st.unknown_released, (unsigned long)m->st.unknown_dropped,
	        m->st.unknown_peak, (unsigned long)m->st.ux_refused, m->st.ux_peak,
	        (unsigned long)m->st.sends_lost, (unsigned long)m->st.drop_malformed,
	        (unsigned long)m->st.drop_bad_type, (unsigned long)m->st.drop_frag_unknown,
	        (unsigned long)m->st.drop_frag_misplaced, (unsigned long)m->st.drop_cts_unknown,
	        (unsigned long)m->st.drop_rdata_unknown, (unsigned long)m->st.drop_rdata_misplaced,
	        (unsigned long)m->st.drop_no_memory, (unsigned long)m->st.msgs_cut,
	        (unsigned long)m->st.tx_refused, (unsigned long)m->st.rx_refused,
	        (unsigned long)m->st.rail_failovers, (unsigned long)m->st.rail_revivals,
	        (unsigned long)m->st.rail_dups, (unsigned long)m->st.stripe_pulls,
	        (unsigned long)m->st.stripe_chunks, (unsigned long)m->st.drop_cts_bad,
	        (unsigned long)m->st.nacks_sent, (unsigned long)m->st.pulls_nacked,
	        (unsigned long)m->st.drop_nack_unknown, (unsigned long)m->st.bundled, rails);
}

/* Closing: tx's NACK now, or not at all (nothing is pushed after this). */
static void nack_now(struct gm_conn *conn, struct gm_tx *tx, int reason)
{
	if (tx->ctrl_len) {
		if (tx->first_type != GM_FT_NACK || tx->first_sent)
			return; /* a CTS of ours, or a NACK already sent */
	} else
		gm_tx_nack_encode(tx, reason);
	tx->first_sent = true; /* tried: once */
	/* Any rail that takes it: the pull is over, its order no longer matters
	 * (the receiver drops what comes after as duplicates). */
	for (unsigned i = 0; i < conn->msg->nrails; i++) {
		unsigned r = (conn->lead + i) % conn->msg->nrails;
		struct gm_peer *peer = conn->msg->nrails > 1 ? conn->rails[r] : conn->peer;

		if (!peer || (i && !gm_rails_live(conn, r)))
			continue;
		if (gm_peer_send(peer, GM_FT_NACK, tx->inject_buf, tx->ctrl_len, NULL, 0, tx) ==
		    0) {
			tx->unacked++;
			return;
		}
	}
}

void gm_msg_shutdown(struct gm_msg *m)
{
	struct gm_list *pos, *tmp;

	gm_list_for_each_safe(&m->conn_list, pos, tmp)
	{
		struct gm_conn *conn = gm_list_entry(pos, struct gm_conn, msg_entry);
		struct gm_list *p2;

		if (gm_peer_failed(conn->peer))
			continue;
		/* Pulled in one piece and not all sent, or NACKs not yet sent. */
		for (p2 = conn->tx_queue.next; p2 != &conn->tx_queue; p2 = p2->next) {
			struct gm_tx *tx = gm_list_entry(p2, struct gm_tx, entry);

			if ((tx->state == GM_TX_PULLED && !tx->internal) ||
			    tx->first_type == GM_FT_NACK)
				nack_now(conn, tx, FI_ESHUTDOWN);
		}
		/* Announced and not pulled yet (the NACK names no receive), or
		 * pulled in chunks: asked for more, or chunks not yet all sent. */
		for (p2 = conn->cts_wait.next; p2 != &conn->cts_wait; p2 = p2->next)
			nack_now(conn, gm_list_entry(p2, struct gm_tx, entry), FI_ESHUTDOWN);
		for (unsigned q = 0; q < GM_RAILS_MAX; q++)
			for (p2 = conn->stripe_q[q].next; p2 != &conn->stripe_q[q]; p2 = p2->next)
				nack_now(conn, gm_list_entry(p2, struct gm_tx, entry)->parent,
				         FI_ESHUTDOWN);
	}
}

void gm_msg_close(struct gm_msg *m)
{
	struct gm_list *pos, *tmp;

	/* Slices first: they hold references on multi-recv buffers still posted. */
	gm_list_for_each_safe(&m->rndv_rx, pos, tmp)
	{
		struct gm_rx *rx = gm_list_entry(pos, struct gm_rx, rndv_entry);
		gm_list_del(&rx->rndv_entry);
		gm_rx_free(rx);
	}
	gm_list_for_each_safe(&m->conn_list, pos, tmp)
	{
		struct gm_conn *conn = gm_list_entry(pos, struct gm_conn, msg_entry);
		struct gm_list *p2, *t2;
		if (conn->rx_cur_rx)
			gm_rx_free(conn->rx_cur_rx);
		conn->rx_cur_rx = NULL;
		gm_list_for_each_safe(&conn->rx_parked, p2, t2)
		{
			gm_list_del(p2);
			gm_rx_free(gm_list_entry(p2, struct gm_rx, entry));
		}
	}
	for (int q = 0; q < 2; q++) {
		gm_list_for_each_safe(&m->unexpected[q], pos, tmp)
		{
			struct gm_ux *ux = gm_list_entry(pos, struct gm_ux, entry);
			gm_list_del(&ux->entry);
			if (ux->bound)
				gm_rx_free(ux->bound);
			gm_ux_free(ux);
		}
	}
	for (int q = 0; q < 2; q++) {
		gm_list_for_each_safe(&m->posted[q], pos, tmp)
		{
			struct gm_rx *rx = gm_list_entry(pos, struct gm_rx, entry);
			gm_list_del(&rx->entry);
			gm_rx_free(rx);
		}
	}
	/*
	 * Every send goes, also those whose frames the net still holds: the
	 * port closes next and drops them without calling back.
	 */
	gm_list_for_each_safe(&m->tx_live, pos, tmp)
	    gm_tx_free(gm_list_entry(pos, struct gm_tx, live_entry));
	gm_list_for_each_safe(&m->conn_list, pos, tmp)
	{
		struct gm_conn *conn = gm_list_entry(pos, struct gm_conn, msg_entry);
		gm_rails_drop_moved(conn, 0);
		for (unsigned r = 0; r < GM_RAILS_MAX; r++)
			if (conn->rails[r])
				gm_peer_set_ctx(conn->rails[r], NULL);
		free(conn);
	}
	free(m->conns);
	m->conns = NULL;
	m->conns_cap = 0;
	gm_pool_fini(&m->tx_pool);
	gm_pool_fini(&m->rx_pool);
}
