/*
 * Failover between rails at the reliability engine's level: two nodes,
 * each with one engine per rail, over a simulated link per rail that can
 * be cut or taken down.  A small upper half streams numbered messages on
 * its lead rail, moves a dead rail's frames to the other one
 * (gm_peer_reclaim) and drops on receipt what it already had (message ids
 * are consecutive), as the message protocol does.  The receiver checks
 * order, exactly-once and every byte; no peer may fail.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "gm_rel.h"

#define MTU        1500
#define MAXQ       20000
#define RAILS      2
#define NMSG       4000
#define STALL_US   50000
#define RTO_US     1000
#define TIMEOUT_MS 2000

struct sim_frame {
	uint64_t when;
	int dst, rail;
	size_t len;
	uint8_t data[MTU + 14];
};

struct rail_ctx {
	struct node *nd;
	int rail;
};

struct moved {
	uint8_t type;
	size_t len;
	void *cookie;
	uint8_t body[MTU];
};

struct node {
	struct sim *sim;
	int id;
	struct rail_ctx rc[RAILS];
	struct gm_rel *rel[RAILS];
	struct gm_port *port[RAILS];
	struct gm_peer *peer[RAILS]; /* to the other node */
	uint8_t mac[RAILS][6];
	bool dead[RAILS]; /* this node moved the rail's frames away */
	unsigned revived;
	/* receive side */
	uint32_t next_expected;
	uint64_t delivered, dups;
	/* send side */
	uint32_t sent;
	uint8_t acked[NMSG + 256];
	struct moved *moved;
	unsigned nmoved, moved_head;
	uint64_t reclaimed_at;
	unsigned peer_failed_calls, failed_frames;
};

struct sim {
	uint64_t now;
	struct sim_frame *q[MAXQ];
	unsigned nq;
	struct node *nodes[2];
	bool cut[RAILS];    /* frames vanish */
	bool down[RAILS];   /* ... and the interface says so */
	unsigned cut_after; /* cut rail 0 after node 0 sent this many frames on it (0: never) */
	unsigned sent0;
};

static struct gm_peer *lead_peer(struct node *nd)
{
	for (int r = 0; r < RAILS; r++)
		if (!nd->dead[r])
			return nd->peer[r];
	return nd->peer[RAILS - 1];
}

static int sim_send(void *ctx, enum gm_class cls, const struct gm_txf *frames, unsigned n)
{
	struct rail_ctx *rc = ctx;
	struct sim *s = rc->nd->sim;

	for (unsigned i = 0; i < n; i++) {
		struct sim_frame *f;

		if (rc->nd->id == 0 && rc->rail == 0 && ++s->sent0 == s->cut_after)
			s->cut[0] = true;
		if (s->cut[rc->rail])
			continue;
		cr_assert_lt(s->nq, MAXQ);
		f = malloc(sizeof(*f));
		cr_assert_not_null(f);
		cr_assert_leq(frames[i].len, sizeof(f->data));
		*f = (struct sim_frame){.when = s->now + 20,
		                        .dst = !rc->nd->id,
		                        .rail = rc->rail,
		                        .len = frames[i].len};
		gm_txf_gather(&frames[i], f->data);
		s->q[s->nq++] = f;
	}
	return (int)n;
}

static bool sim_up(void *ctx)
{
	struct rail_ctx *rc = ctx;

	return !rc->nd->sim->down[rc->rail];
}

static uint8_t pattern(uint32_t idx, size_t j)
{
	return (uint8_t)(idx * 31u + j * 7u);
}

static size_t msg_len(uint32_t idx)
{
	return 1 + (idx * 7919u) % (MTU - sizeof(struct gm_hdr) - sizeof(struct gm_msg_hdr));
}

static int rail_of(struct node *nd, struct gm_peer *peer)
{
	for (int r = 0; r < RAILS; r++)
		if (nd->peer[r] == peer)
			return r;
	return -1;
}

static bool on_recv(void *ctx, struct gm_peer *peer, const struct gm_rx_frame *f)
{
	struct node *nd = ctx;
	struct gm_msg_hdr m;
	const uint8_t *p = (const uint8_t *)f->body + sizeof(m);

	cr_assert_eq(f->hdr->type, GM_FT_EAGER);
	gm_msg_hdr_decode(f->body, &m);
	if (m.msg_id < nd->next_expected) {
		nd->dups++; /* moved from a dead rail, but it had arrived */
		return true;
	}
	cr_assert_eq(m.msg_id, nd->next_expected, "got message %u, expected %u", m.msg_id,
	             nd->next_expected);
	cr_assert_eq(f->body_len - sizeof(m), msg_len(m.msg_id));
	for (size_t j = 0; j < msg_len(m.msg_id); j++)
		cr_assert_eq(p[j], pattern(m.msg_id, j), "message %u byte %zu", m.msg_id, j);
	nd->next_expected++;
	nd->delivered++;
	return true;
}

static void on_acked(void *ctx, struct gm_peer *peer, void *cookie)
{
	struct node *nd = ctx;
	uintptr_t c = (uintptr_t)cookie;

	cr_assert(c >= 1 && c <= nd->sent);
	cr_assert_eq(++nd->acked[c - 1], 1, "cookie %lu acked twice", (unsigned long)c);
}

static void on_failed_frame(void *ctx, struct gm_peer *peer, void *cookie, int err)
{
	((struct node *)ctx)->failed_frames++;
}

static void on_peer_failed(void *ctx, struct gm_peer *peer, int err)
{
	((struct node *)ctx)->peer_failed_calls++;
}

static void keep(void *ctx, uint8_t type, const void *body, size_t len, void *cookie)
{
	struct node *nd = ctx;
	struct moved *mv = &nd->moved[nd->nmoved++];

	cr_assert_leq(len, sizeof(mv->body));
	mv->type = type;
	mv->len = len;
	mv->cookie = cookie;
	memcpy(mv->body, body, len);
}

/*
 * The upper half's rule (gm_msg_rails.c's): a rail is dead when its link
 * is down, or when its frames have waited the rail timeout and, for the
 * last half of it, the other rail answered while a fresh retransmission
 * on this one did not; to find out, the other rail is probed.
 */
static void on_stalled(void *ctx, struct gm_peer *peer, uint64_t now, uint64_t stalled)
{
	struct node *nd = ctx;
	int r = rail_of(nd, peer), other = !r;
	uint64_t heard, tried;

	cr_assert_geq(r, 0);
	if (nd->dead[other])
		return; /* the last rail: only the peer timeout ends it */
	heard = gm_peer_last_heard(nd->peer[other]);
	if (gm_peer_link_up(peer)) {
		if (stalled * 2 < STALL_US)
			return;
		gm_peer_probe(nd->peer[other]);
		if (!heard || now - heard >= stalled)
			return;
		tried = gm_peer_retry(peer, now);
		if (stalled < STALL_US || heard < tried || now - tried < STALL_US / 2)
			return;
	}
	cr_assert_eq(nd->nmoved, nd->moved_head, "moved frames not resent yet");
	nd->nmoved = nd->moved_head = 0;
	gm_peer_reclaim(peer, keep, nd);
	cr_assert(gm_peer_dormant(peer));
	nd->dead[r] = true;
	nd->reclaimed_at = now;
}

static void on_revived(void *ctx, struct gm_peer *peer)
{
	struct node *nd = ctx;

	nd->dead[rail_of(nd, peer)] = false;
	nd->revived++;
}

static const struct gm_port_ops ops = {
    .recv = on_recv,
    .acked = on_acked,
    .failed_frame = on_failed_frame,
    .peer_failed = on_peer_failed,
    .stalled = on_stalled,
    .revived = on_revived,
};

static void node_init(struct sim *s, struct node *nd, int id)
{
	memset(nd, 0, sizeof(*nd));
	nd->sim = s;
	nd->id = id;
	nd->moved = calloc(64, sizeof(*nd->moved));
	s->nodes[id] = nd;
	for (int r = 0; r < RAILS; r++) {
		struct gm_rel_cfg cfg = {
		    .mac = {0x02, 0, 0, 0, (uint8_t)r, (uint8_t)(0x0a + id)},
		    .ethertype = GM_ETHERTYPE_DEFAULT,
		    .dq = true,
		    .low_share = 4,
		    .window = 32,
		    .rto_us = RTO_US,
		    .peer_timeout_ms = TIMEOUT_MS,
		    .max_frame = MTU,
		    .max_bufs = 128,
		    .stall_us = STALL_US,
		};
		uint32_t key = 0xC0FFEE;
		struct gm_auth auth = {&key, sizeof(key)};

		nd->rc[r] = (struct rail_ctx){nd, r};
		memcpy(nd->mac[r], cfg.mac, 6);
		cr_assert_eq(gm_rel_create(&cfg,
		                           &(struct gm_rel_link){
		                               .send = sim_send, .up = sim_up, .ctx = &nd->rc[r]},
		                           &nd->rel[r]),
		             0);
		cr_assert_eq(gm_rel_port_open(nd->rel[r], 100, GM_CLASS_HIGH, &auth,
		                              0x1000u * (uint32_t)(id + 1) + (uint32_t)r, 77, &ops,
		                              nd, &nd->port[r]),
		             0);
	}
}

static void connect_nodes(struct node *a, struct node *b)
{
	for (int r = 0; r < RAILS; r++) {
		struct gm_addr to_b = {.port = 100}, to_a = {.port = 100};

		memcpy(to_b.mac, b->mac[r], 6);
		memcpy(to_a.mac, a->mac[r], 6);
		a->peer[r] = gm_peer_get(a->port[r], &to_b);
		b->peer[r] = gm_peer_get(b->port[r], &to_a);
		cr_assert(a->peer[r] && b->peer[r]);
	}
}

/* Moved frames first, in order, then new messages: all on the lead rail. */
static void push(struct node *nd, uint32_t upto)
{
	struct gm_peer *pr = lead_peer(nd);

	while (nd->moved_head < nd->nmoved) {
		struct moved *mv = &nd->moved[nd->moved_head];

		if (gm_peer_send(pr, mv->type, mv->body, mv->len, NULL, 0, mv->cookie))
			return;
		nd->moved_head++;
	}
	while (nd->sent < upto) {
		uint32_t idx = nd->sent;
		struct gm_msg_hdr m = {.msg_id = idx, .msg_len = msg_len(idx)};
		uint8_t th[sizeof(m)], payload[MTU];
		struct iovec iov = {payload, msg_len(idx)};

		for (size_t j = 0; j < msg_len(idx); j++)
			payload[j] = pattern(idx, j);
		gm_msg_hdr_encode(th, &m);
		if (gm_peer_send(pr, GM_FT_EAGER, th, sizeof(th), &iov, 1,
		                 (void *)(uintptr_t)(idx + 1)))
			return;
		nd->sent++;
	}
}

static void step(struct sim *s)
{
	for (unsigned i = 0; i < s->nq;) {
		struct sim_frame *f = s->q[i];

		if (f->when > s->now) {
			i++;
			continue;
		}
		s->q[i] = s->q[--s->nq];
		gm_rel_input(s->nodes[f->dst]->rel[f->rail], f->data, f->len, s->now);
		free(f);
	}
	for (int n = 0; n < 2; n++)
		for (int r = 0; r < RAILS; r++)
			gm_rel_flush(s->nodes[n]->rel[r], s->now);
	s->now += 10;
}

static unsigned acked(const struct node *nd, uint32_t n)
{
	unsigned c = 0;

	for (uint32_t i = 0; i < n; i++)
		c += nd->acked[i];
	return c;
}

/* Stream n messages a->b until every one is acknowledged. */
static void stream(struct sim *s, struct node *a, struct node *b, uint32_t n)
{
	uint64_t steps = 0;

	while (acked(a, n) < n) {
		push(a, n);
		step(s);
		cr_assert_lt(++steps, 5000000, "stuck: %u of %u acked, %lu delivered", acked(a, n),
		             n, b->delivered);
	}
	cr_assert_eq(b->delivered, n);
	cr_assert_eq(a->peer_failed_calls + b->peer_failed_calls, 0, "a peer failed");
	cr_assert_eq(a->failed_frames, 0);
}

static void sim_free(struct sim *s)
{
	for (unsigned i = 0; i < s->nq; i++)
		free(s->q[i]);
	for (int n = 0; n < 2; n++) {
		for (int r = 0; r < RAILS; r++)
			gm_rel_destroy(s->nodes[n]->rel[r]);
		free(s->nodes[n]->moved);
	}
}

/* A rail cut mid-stream (frames vanish, the link looks up), then mended. */
static void cut_and_mend(bool link_down)
{
	struct sim s = {.cut_after = 700};
	struct node a, b;
	struct gm_net_stats *sa, *sb;
	uint64_t cut_at = 0, steps = 0;

	node_init(&s, &a, 0);
	node_init(&s, &b, 1);
	connect_nodes(&a, &b);
	while (acked(&a, NMSG) < NMSG) {
		push(&a, NMSG);
		step(&s);
		if (s.cut[0] && !cut_at) {
			cut_at = s.now;
			s.down[0] = link_down;
		}
		cr_assert_lt(++steps, 5000000);
	}
	cr_assert_eq(b.delivered, NMSG, "every message, once, in order");
	cr_assert_eq(a.peer_failed_calls + b.peer_failed_calls, 0, "no peer failed");
	cr_assert_eq(a.failed_frames, 0);
	cr_assert(a.dead[0] && !a.dead[1], "rail 0 given up, rail 1 kept");
	cr_assert_gt(a.nmoved, 0, "frames moved");
	/* Down at once: the first timeout sees it; cut: the rail timeout and a probe. */
	if (link_down)
		cr_assert_lt(a.reclaimed_at - cut_at, STALL_US / 2);
	else
		cr_assert_lt(a.reclaimed_at - cut_at, STALL_US + 10 * RTO_US);
	sa = gm_rel_stats(a.rel[0]);
	cr_assert_eq(sa->rails_failed, 1);
	cr_assert_eq(sa->frames_moved, a.nmoved);
	cr_assert_eq(gm_rel_stats(a.rel[1])->rails_failed, 0);

	/* Mended: the VOIDs are acknowledged, the rail revives and leads again. */
	s.cut[0] = s.down[0] = false;
	for (steps = 0; !a.revived; step(&s))
		cr_assert_lt(++steps, 200000, "rail 0 never revived");
	cr_assert(!gm_peer_dormant(a.peer[0]));
	sb = gm_rel_stats(b.rel[0]);
	cr_assert_gt(sb->frames_voided, 0, "the receiver skipped the moved frames");
	cr_assert_eq(sa->rails_revived, 1);
	uint64_t rail0_before = sb->rx_frames;
	stream(&s, &a, &b, NMSG + 200);
	cr_assert_geq(sb->rx_frames, rail0_before + 200, "rail 0 carries the new messages");
	sim_free(&s);
}

Test(rails, cut_rail_moves_its_frames_and_loses_nothing)
{
	cut_and_mend(false);
}

Test(rails, rail_whose_link_goes_down_moves_at_the_first_timeout)
{
	cut_and_mend(true);
}

/* Both rails silent for a while (a descheduled peer): no rail is given up. */
Test(rails, silence_on_every_rail_moves_nothing)
{
	struct sim s = {0};
	struct node a, b;
	uint64_t steps = 0;

	node_init(&s, &a, 0);
	node_init(&s, &b, 1);
	connect_nodes(&a, &b);
	while (a.sent < 500) {
		push(&a, 500);
		step(&s);
	}
	s.cut[0] = s.cut[1] = true;
	for (uint64_t until = s.now + 3 * STALL_US; s.now < until; step(&s))
		push(&a, 1000);
	s.cut[0] = s.cut[1] = false;
	while (acked(&a, 1000) < 1000) {
		push(&a, 1000);
		step(&s);
		cr_assert_lt(++steps, 5000000);
	}
	cr_assert_eq(b.delivered, 1000);
	cr_assert(!a.dead[0] && !a.dead[1]);
	cr_assert_eq(gm_rel_stats(a.rel[0])->rails_failed, 0);
	cr_assert_eq(a.peer_failed_calls + b.peer_failed_calls, 0);
	sim_free(&s);
}

/* Both rails cut for good: the dormant rail never fails, the last one does. */
Test(rails, every_rail_dead_fails_the_peer_on_the_last)
{
	struct sim s = {.cut_after = 300};
	struct node a, b;
	uint64_t steps = 0;

	node_init(&s, &a, 0);
	node_init(&s, &b, 1);
	connect_nodes(&a, &b);
	while (!a.dead[0]) {
		push(&a, 2000);
		step(&s);
		cr_assert_lt(++steps, 5000000);
	}
	s.cut[1] = true;
	while (!a.peer_failed_calls) {
		push(&a, 2000);
		step(&s);
		cr_assert_lt(++steps, 5000000, "the last rail never failed");
	}
	cr_assert(gm_rel_peer_failed(a.peer[1]));
	cr_assert(!gm_rel_peer_failed(a.peer[0]) && gm_peer_dormant(a.peer[0]));
	cr_assert_gt(a.failed_frames, 0, "what was in flight failed with the peer");
	sim_free(&s);
}
