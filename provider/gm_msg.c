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

struct gm_conn *gm_conn_of_peer(struct gm_msg *m, struct gm_peer *peer)
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
	conn = gm_conn_of_peer(m, peer);
	if (!conn)
		return NULL;
	conn->fi_addr = fi_addr;
	m->conns[fi_addr] = conn;
	return conn;
}

/* The sender's fi_addr for completions and directed receives. */
fi_addr_t gm_conn_src(struct gm_conn *conn)
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
		gm_tx_maybe_complete(tx);
	}
	gm_list_del(&conn->pend_entry);
	gm_list_for_each_safe(&conn->cts_wait, pos, tmp)
	{
		struct gm_tx *tx = gm_list_entry(pos, struct gm_tx, entry);
		gm_list_del(&tx->entry);
		tx->err = e;
		tx->state = GM_TX_SENT;
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
    .recv = gm_msg_on_recv,
    .acked = gm_msg_on_acked,
    .failed_frame = gm_msg_on_failed_frame,
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
			gm_ux_free(ux);
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
