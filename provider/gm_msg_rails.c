/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Several rails (FI_GAMMA_IFACE=eth0+eth1): a connection holds one gm_peer
 * per rail, each with its own reliability state.  Every frame goes on the
 * lead rail, the lowest-numbered live one, so one gm_rel orders them as on
 * a single link.  A rail whose frames wait unacknowledged for the rail
 * timeout while another rail to the same endpoint answers (or whose link is
 * down) is given up: gm_peer_reclaim hands back what it had in flight, and
 * that goes out again on the new lead rail before anything newer.  Some of
 * it may have arrived already, so the receiver drops what it already had:
 * message ids are consecutive per connection, fragments and pulled data
 * carry their offsets.  The dead rail probes until it answers, then leads
 * again once the rail above it has nothing in flight (so that nothing new
 * overtakes what is still on its way there).  The connection fails only
 * with its last rail.
 */
#include "gm_msg_int.h"

#include <stdlib.h>
#include <string.h>

/* A frame taken back from a dead rail, waiting for room on the lead. */
struct gm_moved {
	struct gm_list entry;
	void *cookie;
	uint8_t type;
	size_t len;
	uint8_t body[];
};

static int rail_of(const struct gm_conn *conn, const struct gm_peer *peer)
{
	for (unsigned r = 0; r < conn->msg->nrails; r++)
		if (conn->rails[r] == peer)
			return (int)r;
	return -1;
}

bool gm_rails_live(const struct gm_conn *conn, unsigned r)
{
	return conn->rails[r] && !gm_peer_dormant(conn->rails[r]) &&
	       !gm_peer_failed(conn->rails[r]);
}

/* The rail of a new peer from input, among the endpoint's ports. */
static int port_rail(const struct gm_msg *m, const struct gm_peer *peer)
{
	for (unsigned r = 0; r < m->nrails; r++)
		if (gm_peer_port(peer) == m->rail_ports[r])
			return (int)r;
	return -1;
}

struct gm_conn *gm_rails_conn_of_peer(struct gm_msg *m, struct gm_peer *peer)
{
	int r = port_rail(m, peer);
	const struct gm_addr *addr = gm_peer_addr(peer);
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	struct gm_conn *conn;

	if (r < 0)
		return NULL;
	/* A frame on another rail than rail 0 comes from an endpoint in the AV
	 * (it moved there), or from a stranger: it joins the former's conn. */
	if (r == 0)
		a = m->up->av_find(m->up_ctx, addr);
	else if (m->up->av_find_rail)
		a = m->up->av_find_rail(m->up_ctx, (unsigned)r, addr);
	if (a != FI_ADDR_NOTAVAIL && (conn = gm_msg_conn(m, a)) && conn->rails[r] == peer)
		return conn;
	return gm_conn_new(m, peer, (unsigned)r);
}

void gm_rails_attach(struct gm_conn *conn, const struct gm_addr *addrs)
{
	struct gm_msg *m = conn->msg;

	for (unsigned r = 0; r < m->nrails; r++) {
		struct gm_peer *p;

		if (conn->rails[r])
			continue;
		p = gm_peer_get(m->rail_ports[r], &addrs[r]);
		if (!p || (gm_peer_ctx(p) && gm_peer_ctx(p) != conn))
			continue; /* no memory, or a stranger's conn took it first */
		gm_peer_set_ctx(p, conn);
		conn->rails[r] = p;
		/* A secret the endpoint was bound to on another rail holds here too. */
		for (unsigned q = 0; q < m->nrails; q++)
			if (q != r && conn->rails[q] && gm_peer_share_auth(p, conn->rails[q]))
				break;
	}
	gm_rails_pick_lead(conn);
}

/*
 * The lowest live rail leads; a lower one that came back takes over only
 * once the lead has nothing in flight, so that frames on the way there
 * are not overtaken.
 */
void gm_rails_pick_lead(struct gm_conn *conn)
{
	unsigned n = conn->msg->nrails, best = n;

	for (unsigned r = 0; r < n && best == n; r++)
		if (gm_rails_live(conn, r))
			best = r;
	if (best == n || best == conn->lead)
		return;
	if (gm_rails_live(conn, conn->lead) && best < conn->lead &&
	    !gm_peer_idle(conn->rails[conn->lead]))
		return;
	conn->lead = best;
	conn->peer = conn->rails[best];
	if (gm_conn_awaited(conn))
		gm_peer_await(conn->peer);
}

static void keep_moved(void *ctx, uint8_t type, const void *body, size_t len, void *cookie)
{
	struct gm_conn *conn = ctx;
	struct gm_moved *mv = malloc(sizeof(*mv) + len);

	if (!mv) {
		gm_msg_on_failed_frame(conn->msg, conn->peer, cookie, -FI_ENOMEM);
		return;
	}
	mv->cookie = cookie;
	mv->type = type;
	mv->len = len;
	memcpy(mv->body, body, len);
	gm_list_add_tail(&conn->moved, &mv->entry);
}

/* Moved frames to the lead, in order: 0, or -FI_EAGAIN when its window is full. */
int gm_rails_push_moved(struct gm_conn *conn)
{
	struct gm_list *pos, *tmp;

	gm_list_for_each_safe(&conn->moved, pos, tmp)
	{
		struct gm_moved *mv = gm_list_entry(pos, struct gm_moved, entry);
		int rc = gm_peer_send(conn->peer, mv->type, mv->body, mv->len, NULL, 0, mv->cookie);

		if (rc == -FI_EAGAIN)
			return rc;
		gm_list_del(&mv->entry);
		if (rc)
			gm_msg_on_failed_frame(conn->msg, conn->peer, mv->cookie, rc);
		free(mv);
	}
	return 0;
}

/* The connection failed (err) or closes (0): moved frames go with it. */
void gm_rails_drop_moved(struct gm_conn *conn, int err)
{
	struct gm_list *pos, *tmp;

	gm_list_for_each_safe(&conn->moved, pos, tmp)
	{
		struct gm_moved *mv = gm_list_entry(pos, struct gm_moved, entry);

		gm_list_del(&mv->entry);
		if (err)
			gm_msg_on_failed_frame(conn->msg, conn->peer, mv->cookie, -err);
		free(mv);
	}
}

/* Give up rail r: its frames go to the next live rail. */
static void rail_fail(struct gm_conn *conn, unsigned r, bool link_down)
{
	struct gm_msg *m = conn->msg;
	unsigned moved = gm_peer_reclaim(conn->rails[r], keep_moved, conn);

	m->st.rail_failovers++;
	gm_rails_pick_lead(conn);
	MSG_WARN(m, "rail %u to fi_addr %ld %s: %u frames moved to rail %u\n", r,
	         (long)conn->fi_addr, link_down ? "is down" : "stopped answering", moved,
	         conn->lead);
	gm_conn_push(conn);
}

/*
 * The net's question (gm_port_ops.stalled).  A rail is dead when its link
 * is down, or when its frames have waited the rail timeout and, for the
 * last half of it, another rail answered while a fresh retransmission on
 * this one did not: a peer that is merely slow or descheduled stalls every
 * rail alike and must not make rails flap, and after such a pause the rail
 * whose timer fires first must not win.  Idle rails say nothing, so they
 * are probed from half the timeout on.
 */
void gm_rails_on_stalled(void *ctx, struct gm_peer *peer, uint64_t now, uint64_t stalled)
{
	struct gm_msg *m = ctx;
	struct gm_conn *conn = gm_peer_ctx(peer);
	const uint64_t timeout = m->cfg.rail_timeout_ms * 1000ull;
	uint64_t heard = 0, tried;
	bool other = false;
	int r;

	if (!conn || m->nrails < 2 || (r = rail_of(conn, peer)) < 0)
		return;
	for (unsigned o = 0; o < m->nrails; o++) {
		uint64_t h;

		if (o == (unsigned)r || !gm_rails_live(conn, o) || !gm_peer_link_up(conn->rails[o]))
			continue;
		other = true;
		if ((h = gm_peer_last_heard(conn->rails[o])) > heard)
			heard = h;
	}
	if (!other)
		return; /* the last rail: FI_GAMMA_PEER_TIMEOUT decides */
	if (!gm_peer_link_up(peer)) {
		rail_fail(conn, (unsigned)r, true);
		return;
	}
	if (2 * stalled < timeout)
		return;
	for (unsigned o = 0; o < m->nrails; o++)
		if (o != (unsigned)r && gm_rails_live(conn, o))
			gm_peer_probe(conn->rails[o]);
	if (!heard || now - heard >= stalled)
		return; /* nobody answered since the stall began */
	tried = gm_peer_retry(peer, now);
	if (stalled >= timeout && heard >= tried && now - tried >= timeout / 2)
		rail_fail(conn, (unsigned)r, false);
}

void gm_rails_on_revived(void *ctx, struct gm_peer *peer)
{
	struct gm_msg *m = ctx;
	struct gm_conn *conn = gm_peer_ctx(peer);

	if (!conn)
		return;
	m->st.rail_revivals++;
	MSG_WARN(m, "rail %d to fi_addr %ld answers again\n", rail_of(conn, peer),
	         (long)conn->fi_addr);
	gm_conn_push(conn); /* picks it as lead once the current one is idle */
}

/*
 * A rail's peer failed (gm_port_ops.peer_failed).  Returns whether the
 * connection fails with it: a single rail, the lead, or a restart (the
 * endpoint's new incarnation numbers its messages afresh).
 */
bool gm_rails_peer_failed(struct gm_conn *conn, struct gm_peer *peer, int err)
{
	if (err == -FI_ECONNRESET)
		conn->rx_msg_known = conn->rx_cts_known = false;
	if (conn->msg->nrails < 2 || peer == conn->peer)
		return true;
	MSG_WARN(conn->msg, "rail %d to fi_addr %ld failed\n", rail_of(conn, peer),
	         (long)conn->fi_addr);
	return false;
}

/*
 * Several rails: whether a message's first frame is one the connection had
 * (it came again on the rail its sender moved to).  Message ids are
 * consecutive per connection; wraparound-safe.
 */
bool gm_rails_dup_msg(struct gm_conn *conn, uint32_t msg_id)
{
	if (conn->rx_msg_known && (int32_t)(msg_id - conn->rx_next_msg_id) < 0) {
		conn->msg->st.rail_dups++;
		return true;
	}
	conn->rx_msg_known = true;
	conn->rx_next_msg_id = msg_id + 1;
	return false;
}

/*
 * Several rails: whether a CTS is one the connection had (see
 * gm_rails_dup_msg); gm_rails_cts_taken records one that served a send, so
 * that a CTS that served none (forged, or for no send) moves nothing on.
 */
bool gm_rails_dup_cts(struct gm_conn *conn, uint32_t cts_id)
{
	if (conn->rx_cts_known && (int32_t)(cts_id - conn->rx_next_cts_id) < 0) {
		conn->msg->st.rail_dups++;
		return true;
	}
	return false;
}

void gm_rails_cts_taken(struct gm_conn *conn, uint32_t cts_id)
{
	conn->rx_cts_known = true;
	conn->rx_next_cts_id = cts_id + 1;
}
