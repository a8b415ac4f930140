/*
 * Reliability engine over a deterministic in-memory link that drops,
 * duplicates, reorders and corrupts frames, with a simulated clock (the
 * unit tests' one link, mock_link.h).
 * Every message carries its index and a payload derived from it; the
 * receiver checks order, exactly-once and every byte.
 */
#include <criterion/criterion.h>
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "gm_mac.h"
#include "gm_rel.h"
#include "mock_link.h"

#define HL          sizeof(struct gm_hdr)
#define WINDOW      32
#define DATA_WINDOW (WINDOW - 1) /* data frames leave the last slot to a NACK */
#define MTU         MOCK_MTU

/* Criterion runs each test in its own process: a test may change these. */
static unsigned g_window = WINDOW;
static size_t g_ooo_max, g_peer_max;
/* Messages go through gm_peer_send_crc, their mcrc chained from mcrc_seed. */
static bool g_send_crc;
/* ... and ride in the frame queued before them when it has room (gm_peer_append). */
static bool g_append;

/*
 * The link (mock_link.h) and, for some tests, what node 0's frames meet
 * first and copies of node 1's first frames (rel_tap).
 */
struct sim {
	struct mock_link l;
	unsigned drop_nth;   /* drop the nth frame node 0 sends (1-based), 0: none */
	unsigned drop_first; /* drop the first n frames node 0 sends */
	unsigned sent0;      /* frames node 0 handed to the link */
	/* Copies of the first frames node 1 sends, for replays. */
	uint8_t rec[8][MOCK_FRAME_MAX];
	size_t rec_len[8];
	unsigned nrec;
	struct node *nodes[2];
};

struct node {
	struct sim *sim;
	int id;
	struct gm_rel *rel;
	struct gm_port *port;
	struct gm_peer *peer; /* to the other node */
	uint8_t mac[6];
	/* receive side */
	uint32_t next_expected;
	uint64_t delivered, bytes_checked;
	bool order_error;
	/* send side */
	uint32_t sent, appended;
	uint8_t *acked, *failed; /* per cookie: count */
	unsigned peer_failed_calls;
	int peer_failed_err;
	bool awaited; /* an operation of this node waits on its peer */
	uint64_t failed_at;
	int failed_err;
};

static enum mock_verdict rel_tap(struct mock_link *l, int from, int to, const uint8_t *f,
                                 size_t len)
{
	struct sim *s = l->tap_ctx;

	if (from == 1 && s->nrec < 8) {
		memcpy(s->rec[s->nrec], f, len);
		s->rec_len[s->nrec++] = len;
	}
	if (from == 0 && ++s->sent0 && (s->sent0 == s->drop_nth || s->sent0 <= s->drop_first))
		return MOCK_DROP;
	return MOCK_PASS;
}

static uint8_t pattern(uint32_t idx, size_t j)
{
	return (uint8_t)(idx * 31u + j * 7u + (j >> 8));
}

static size_t msg_len(uint32_t idx)
{
	return (idx * 7919u) % (MTU - sizeof(struct gm_hdr) - sizeof(struct gm_msg_hdr) + 1);
}

static uint32_t mcrc_seed(uint32_t idx)
{
	return idx * 2654435761u;
}

/* One message: an EAGER frame's body, or one of a BUNDLE's; returns its length. */
static size_t check_msg(struct node *nd, const uint8_t *body, size_t len)
{
	struct gm_msg_hdr m;
	const uint8_t *p;

	cr_assert_geq(len, sizeof(m));
	gm_msg_hdr_decode(body, &m);
	if (m.msg_id != nd->next_expected)
		nd->order_error = true;
	cr_assert_eq(m.msg_id, nd->next_expected, "node %d got message %u, expected %u", nd->id,
	             m.msg_id, nd->next_expected);
	cr_assert_eq(m.msg_len, msg_len(m.msg_id));
	cr_assert_geq(len - sizeof(m), m.msg_len);
	p = body + sizeof(m);
	if (g_send_crc)
		cr_assert_eq(m.mcrc, gm_crc32c_reference(mcrc_seed(m.msg_id), p, msg_len(m.msg_id)),
		             "message %u: the CRC of its payload", m.msg_id);
	for (size_t j = 0; j < msg_len(m.msg_id); j++)
		cr_assert_eq(p[j], pattern(m.msg_id, j), "message %u byte %zu corrupt", m.msg_id,
		             j);
	nd->bytes_checked += msg_len(m.msg_id);
	nd->next_expected++;
	nd->delivered++;
	return sizeof(m) + m.msg_len;
}

static bool on_recv(void *ctx, struct gm_peer *peer, const struct gm_rx_frame *f)
{
	struct node *nd = ctx;
	const uint8_t *p = f->body;
	size_t left = f->body_len, n;

	cr_assert(f->hdr->type == GM_FT_EAGER || (g_append && f->hdr->type == GM_FT_BUNDLE));
	do {
		n = check_msg(nd, p, left);
		p += n;
		left -= n;
	} while (left && f->hdr->type == GM_FT_BUNDLE);
	cr_assert_eq(left, 0, "%zu bytes after the last message", left);
	if (!nd->peer)
		nd->peer = peer;
	return true;
}

static void on_acked(void *ctx, struct gm_peer *peer, void *cookie)
{
	struct node *nd = ctx;
	uintptr_t c = (uintptr_t)cookie;

	cr_assert(c >= 1 && c <= nd->sent);
	nd->acked[c - 1]++;
	cr_assert_eq(nd->acked[c - 1], 1, "cookie %lu acked twice", (unsigned long)c);
	cr_assert_eq(nd->failed[c - 1], 0);
}

static void on_failed_frame(void *ctx, struct gm_peer *peer, void *cookie, int err)
{
	struct node *nd = ctx;
	uintptr_t c = (uintptr_t)cookie;

	cr_assert(c >= 1 && c <= nd->sent);
	nd->failed[c - 1]++;
	nd->failed_err = err;
	cr_assert_eq(nd->failed[c - 1], 1);
	cr_assert_eq(nd->acked[c - 1], 0);
	cr_assert_eq(gm_peer_send(peer, GM_FT_EAGER, NULL, 0, NULL, 0, NULL), -FI_EIO);
}

static void on_peer_failed(void *ctx, struct gm_peer *peer, int err)
{
	struct node *nd = ctx;

	nd->peer_failed_calls++;
	nd->peer_failed_err = err;
	nd->failed_at = nd->sim->l.now;
}

static bool on_awaited(void *ctx, struct gm_peer *peer)
{
	return ((struct node *)ctx)->awaited;
}

static const struct gm_port_ops ops = {
    .recv = on_recv,
    .acked = on_acked,
    .failed_frame = on_failed_frame,
    .peer_failed = on_peer_failed,
    .awaited = on_awaited,
};

static const uint16_t PORT[2] = {100, 200};

/* Ports authenticate with g_secret (a MAC) when set, else with the 4-byte key. */
static const uint8_t *g_secret;

static void node_open_port(struct node *nd, uint32_t session, uint32_t key)
{
	struct gm_auth auth =
	    g_secret ? (struct gm_auth){g_secret, 32} : (struct gm_auth){&key, sizeof(key)};

	cr_assert_eq(gm_rel_port_open(nd->rel, PORT[nd->id], GM_CLASS_HIGH, &auth, session,
	                              session * 2654435761ull, &ops, nd, &nd->port),
	             0);
	nd->peer = NULL;
	nd->next_expected = 0;
}

static void node_init(struct sim *s, struct node *nd, int id, uint32_t session, size_t nmsg)
{
	struct gm_rel_cfg cfg = {
	    .mac = {0x02, 0, 0, 0, 0, (uint8_t)(0x0a + id)},
	    .ethertype = GM_ETHERTYPE_DEFAULT,
	    .dq = true,
	    .low_share = 4,
	    .window = g_window,
	    .rto_us = 1000,
	    .peer_timeout_ms = 200,
	    .max_frame = MTU,
	    .max_bufs = 4 * g_window,
	    .ooo_max = g_ooo_max,
	    .peer_max = g_peer_max,
	};

	memset(nd, 0, sizeof(*nd));
	nd->sim = s;
	nd->id = id;
	memcpy(nd->mac, cfg.mac, 6);
	/* Refuse part of a batch now and then: exercises the requeue path. */
	s->l.fault.split = 20;
	s->l.tap = rel_tap;
	s->l.tap_ctx = s;
	cr_assert_eq(mock_rel_create(&s->l, id, &cfg, &nd->rel), 0);
	nd->acked = calloc(nmsg + 1, 1);
	nd->failed = calloc(nmsg + 1, 1);
	s->nodes[id] = nd;
	node_open_port(nd, session, 0xC0FFEE);
}

static struct gm_peer *peer_to(struct node *nd, struct node *other)
{
	struct gm_addr a;

	memcpy(a.mac, other->mac, 6);
	a.port = PORT[other->id];
	return gm_peer_get(nd->port, &a);
}

static void encode_msg_hdr(void *thdr, uint32_t crc, void *arg)
{
	struct gm_msg_hdr m = *(const struct gm_msg_hdr *)arg;

	m.mcrc = crc;
	gm_msg_hdr_encode(thdr, &m);
}

/* Try to send message nd->sent; true if it was queued. */
static bool try_send(struct node *nd, struct gm_peer *pr)
{
	uint32_t idx = nd->sent;
	struct gm_msg_hdr m = {.msg_id = idx, .msg_len = msg_len(idx)};
	uint8_t th[sizeof(m)], payload[MTU];
	struct iovec iov[2];
	size_t len = msg_len(idx), half = len / 3;
	int rc;

	if (!gm_peer_can_send(pr))
		return false;
	for (size_t j = 0; j < len; j++)
		payload[j] = pattern(idx, j);
	gm_msg_hdr_encode(th, &m);
	iov[0] = (struct iovec){payload, half};
	iov[1] = (struct iovec){payload + half, len - half};
	if (g_append) {
		uint32_t crc = mcrc_seed(idx);
		void *owner = gm_peer_append(pr, sizeof(th), encode_msg_hdr, &m, iov, 2, &crc);

		if (owner) {
			cr_assert_eq(crc, gm_crc32c_reference(mcrc_seed(idx), payload, len));
			cr_assert_lt((uintptr_t)owner, idx + 1, "a rider's owner went before it");
			/* Nothing of its own to be acked: done once the owner is. */
			nd->acked[idx]++;
			nd->appended++;
			nd->sent++;
			return true;
		}
	}
	if (g_send_crc) {
		uint32_t crc = mcrc_seed(idx);

		rc = gm_peer_send_crc(pr, GM_FT_EAGER, sizeof(th), encode_msg_hdr, &m, iov, 2, &crc,
		                      (void *)(uintptr_t)(idx + 1));
		cr_assert(rc || crc == gm_crc32c_reference(mcrc_seed(idx), payload, len));
	} else {
		rc = gm_peer_send(pr, GM_FT_EAGER, th, sizeof(th), iov, 2,
		                  (void *)(uintptr_t)(idx + 1));
	}
	if (rc == -FI_EAGAIN)
		return false;
	cr_assert_eq(rc, 0);
	nd->sent++;
	cr_assert_leq(gm_rel_peer_in_flight(pr), g_window, "window exceeded");
	return true;
}

/* Deliver due frames, flush both engines, advance the clock 10 us. */
static void step(struct sim *s)
{
	mock_deliver(&s->l);
	mock_flush(&s->l);
	s->l.now += 10;
}

static void sim_free(struct sim *s)
{
	mock_free(&s->l);
	for (int n = 0; n < 2; n++) {
		gm_rel_destroy(s->nodes[n]->rel);
		free(s->nodes[n]->acked);
		free(s->nodes[n]->failed);
	}
}

static unsigned count(const uint8_t *v, size_t n)
{
	unsigned c = 0;

	for (size_t i = 0; i < n; i++)
		c += v[i];
	return c;
}

/* Stream nmsg messages a->b (and b->a if both), until all are acked. */
static void run_stream(struct mock_fault f, uint32_t sess_a, uint32_t sess_b, uint32_t nmsg,
                       bool both)
{
	struct sim s = {.l = {.rng = 0x9E3779B97F4A7C15ull, .fault = f}};
	struct node a, b;
	struct gm_peer *pa, *pb;
	uint64_t steps = 0;

	node_init(&s, &a, 0, sess_a, nmsg);
	node_init(&s, &b, 1, sess_b, nmsg);
	pa = peer_to(&a, &b);
	pb = peer_to(&b, &a);
	while (count(a.acked, nmsg) < nmsg || (both && count(b.acked, nmsg) < nmsg)) {
		while (a.sent < nmsg && try_send(&a, pa))
			;
		while (both && b.sent < nmsg && try_send(&b, pb))
			;
		step(&s);
		cr_assert_lt(++steps, 2000000, "no progress: a acked %u/%u, b delivered %lu",
		             count(a.acked, nmsg), nmsg, b.delivered);
	}
	cr_assert_eq(b.delivered, nmsg);
	if (g_append)
		cr_assert_gt(a.appended, nmsg / 10, "%u of %u messages rode in a bundle",
		             a.appended, nmsg);
	cr_assert_eq(count(a.failed, nmsg), 0);
	cr_assert_eq(a.peer_failed_calls + b.peer_failed_calls, 0);
	if (both) {
		cr_assert_eq(a.delivered, nmsg);
		cr_assert_eq(count(b.failed, nmsg), 0);
	}
	if (f.drop || f.corrupt) {
		struct gm_net_stats *sa = gm_rel_stats(a.rel), *sb = gm_rel_stats(b.rel);

		cr_assert_gt(sa->retransmits, 0);
		if (f.corrupt)
			cr_assert_gt(sa->bad_csum + sb->bad_csum + sa->bad_mac + sb->bad_mac +
			                 sa->bad_hdr + sb->bad_hdr + sa->bad_port + sb->bad_port +
			                 sa->bad_key + sb->bad_key + sa->bad_version +
			                 sb->bad_version,
			             0);
		if (f.dup)
			cr_assert_gt(sb->dup_dropped, 0);
		if (f.reorder)
			cr_assert_gt(sb->ooo_buffered, 0);
	}
	sim_free(&s);
}

Test(rel, clean_stream_in_order_exactly_once)
{
	run_stream((struct mock_fault){0}, 12345, 67890, 3000, false);
}

Test(rel, clean_stream_sends_few_explicit_acks)
{
	struct sim s = {.l = {.rng = 1}};
	struct node a, b;
	struct gm_peer *pa, *pb;

	node_init(&s, &a, 0, 1, 100);
	node_init(&s, &b, 1, 2, 100);
	pa = peer_to(&a, &b);
	pb = peer_to(&b, &a);
	/* Ping-pong: every ack rides on the reply, no ACK frames at all. */
	for (int i = 0; i < 100; i++) {
		cr_assert(try_send(&a, pa));
		while (b.delivered < (uint64_t)i + 1)
			step(&s);
		cr_assert(try_send(&b, pb));
		while (a.delivered < (uint64_t)i + 1)
			step(&s);
	}
	cr_assert_eq(gm_rel_stats(b.rel)->acks_sent, 0);
	cr_assert_eq(gm_rel_stats(a.rel)->acks_sent, 0);
	cr_assert_eq(count(a.acked, 100), 100);
	cr_assert_eq(count(b.acked, 99), 99);
	sim_free(&s);
}

Test(rel, lossy_link_delivers_everything)
{
	run_stream((struct mock_fault){.drop = 100, .dup = 50, .reorder = 250, .corrupt = 20}, 7, 8,
	           5000, false);
}

Test(rel, lossy_link_both_directions)
{
	run_stream((struct mock_fault){.drop = 50, .dup = 50, .reorder = 250, .corrupt = 10},
	           0xABCDEF01, 0x10FEDCBA, 3000, true);
}

Test(rel, sequence_wraparound)
{
	/* Streams start at their session: both cross 2^32 early on.  A window
	 * that does not divide 2^32 checks the slot arithmetic at the wrap. */
	g_window = 100;
	run_stream((struct mock_fault){.drop = 50, .dup = 30, .reorder = 200, .corrupt = 10},
	           0xFFFFFF00u, 0xFFFFFFF0u, 3000, true);
}

Test(rel, one_lost_frame_is_fast_retransmitted_from_the_sack)
{
	struct sim s = {.l = {.rng = 5}, .drop_nth = 5};
	struct node a, b;
	struct gm_peer *pa;
	struct gm_net_stats *sa, *sb;

	node_init(&s, &a, 0, 111, 20);
	node_init(&s, &b, 1, 222, 20);
	pa = peer_to(&a, &b);
	while (a.sent < 20)
		cr_assert(try_send(&a, pa));
	for (int i = 0; i < 50; i++) /* 500 us: well inside the 1 ms RTO */
		step(&s);
	sa = gm_rel_stats(a.rel);
	sb = gm_rel_stats(b.rel);
	cr_assert_eq(b.delivered, 20);
	cr_assert_eq(count(a.acked, 20), 20);
	cr_assert_eq(sa->fast_retransmits, 1);
	cr_assert_eq(sa->retransmits, 1);
	cr_assert_eq(sa->timeouts, 0);
	cr_assert_geq(sb->ooo_buffered, 15); /* the simulated link also reorders */
	cr_assert_gt(sb->acks_sent, 0);
	sim_free(&s);
}

/*
 * A whole window lost at once (a link that went down for a while): the
 * timeout resends the oldest frame only, and each partial ack after it
 * must bring the next lost frames out at once, twice as many per ack,
 * not one frame per (backed-off) timeout.  Seen on a real veth: 386 frames
 * took 48 s to come back after a 2 s outage, one per 128 ms RTO cap.
 */
Test(rel, a_lost_window_comes_back_after_one_timeout)
{
	struct sim s = {.l = {.rng = 9}, .drop_first = DATA_WINDOW};
	struct node a, b;
	struct gm_peer *pa;
	struct gm_net_stats *sa;

	node_init(&s, &a, 0, 333, WINDOW);
	node_init(&s, &b, 1, 444, WINDOW);
	pa = peer_to(&a, &b);
	while (a.sent < DATA_WINDOW)
		cr_assert(try_send(&a, pa));
	/* 5 ms: one 1 ms RTO and a few round trips, not 32 timeouts. */
	for (uint64_t t0 = s.l.now; s.l.now < t0 + 5000;)
		step(&s);
	sa = gm_rel_stats(a.rel);
	cr_assert_eq(b.delivered, DATA_WINDOW, "%lu of %u delivered", (unsigned long)b.delivered,
	             DATA_WINDOW);
	cr_assert_eq(count(a.acked, DATA_WINDOW), DATA_WINDOW);
	cr_assert_eq(sa->timeouts, 1, "%lu timeouts", (unsigned long)sa->timeouts);
	cr_assert_leq(sa->retransmits, DATA_WINDOW + 2, "%lu retransmits",
	              (unsigned long)sa->retransmits);
	sim_free(&s);
}

/* Hands up to max frames due for node dst to it, in the order they were sent. */
static unsigned deliver_in_order(struct sim *s, int dst, unsigned max)
{
	unsigned n = 0;

	while (n < max) {
		int best = -1;

		for (unsigned i = 0; i < s->l.nq; i++) {
			const struct mock_frame *f = s->l.q[i];

			if (f->dst == dst && f->when <= s->l.now &&
			    (best < 0 || f->order < s->l.q[best]->order))
				best = (int)i;
		}
		if (best < 0)
			break;
		struct mock_frame *f = s->l.q[best];
		s->l.q[best] = s->l.q[--s->l.nq];
		gm_rel_input(s->l.end[dst].rel, f->data, f->len, s->l.now);
		free(f);
		n++;
	}
	return n;
}

/*
 * A receiver off the CPU for several RTOs, with the whole window queued for
 * it (in its ring), then reading it a few frames per pass: its partial
 * acks, SACK empty, come before it reached the sender's timeout probe, so
 * they show nothing lost.  Only the probes may be resent, not the frames
 * it still has queued (it got two resends per frame acked: a flood of
 * duplicates on a loaded host).
 */
Test(rel, a_receiver_off_the_cpu_gets_no_resends_of_what_it_has_queued)
{
	struct sim s = {.l = {.rng = 5}};
	struct node a, b;
	struct gm_peer *pa;
	struct gm_net_stats *sa, *sb;

	node_init(&s, &a, 0, 333, WINDOW);
	node_init(&s, &b, 1, 444, WINDOW);
	s.l.fault.split = 0;
	pa = peer_to(&a, &b);
	while (a.sent < DATA_WINDOW)
		cr_assert(try_send(&a, pa));
	/* b sleeps 5 ms: 1 ms RTO, so a times out (twice: it backs off). */
	for (uint64_t t0 = s.l.now; s.l.now < t0 + 5000; s.l.now += 10)
		gm_rel_flush(a.rel, s.l.now);
	sa = gm_rel_stats(a.rel);
	cr_assert_geq(sa->timeouts, 2, "%lu timeouts", (unsigned long)sa->timeouts);
	/* b reads its ring 4 frames per pass; every 8 frames owe an ack at once. */
	for (uint64_t t0 = s.l.now; count(a.acked, DATA_WINDOW) < DATA_WINDOW; s.l.now += 10) {
		cr_assert_lt(s.l.now, t0 + 20000, "%u of %u acked", count(a.acked, DATA_WINDOW),
		             DATA_WINDOW);
		deliver_in_order(&s, 1, 4);
		deliver_in_order(&s, 0, UINT32_MAX);
		mock_flush(&s.l);
	}
	sb = gm_rel_stats(b.rel);
	cr_assert_eq(b.delivered, DATA_WINDOW);
	cr_assert_eq(sa->retransmits, sa->timeouts, "%lu retransmits, %lu timeouts",
	             (unsigned long)sa->retransmits, (unsigned long)sa->timeouts);
	cr_assert_eq(sb->dup_dropped, sa->timeouts, "%lu duplicates at the receiver",
	             (unsigned long)sb->dup_dropped);
	sim_free(&s);
}

Test(rel, dead_link_fails_peer_and_every_outstanding_frame)
{
	struct sim s = {.l = {.rng = 42}};
	struct node a, b;
	struct gm_peer *pa;
	unsigned acked, failed;

	node_init(&s, &a, 0, 1000, 500);
	node_init(&s, &b, 1, 2000, 500);
	pa = peer_to(&a, &b);
	while (a.sent < 200) {
		try_send(&a, pa);
		step(&s);
	}
	s.l.fault.dead = true;
	while (try_send(&a, pa))
		;
	cr_assert_gt(gm_rel_peer_in_flight(pa), 0);
	/* peer_timeout 200 ms: nothing before, everything by 2x that. */
	for (uint64_t t0 = s.l.now; s.l.now < t0 + 150000;)
		step(&s);
	cr_assert_eq(a.peer_failed_calls, 0);
	for (uint64_t t0 = s.l.now; s.l.now < t0 + 300000;)
		step(&s);
	cr_assert_eq(a.peer_failed_calls, 1);
	cr_assert_eq(a.peer_failed_err, -FI_EIO);
	cr_assert_eq(a.failed_err, -FI_EIO);
	acked = count(a.acked, a.sent);
	failed = count(a.failed, a.sent);
	cr_assert_gt(failed, 0);
	cr_assert_eq(acked + failed, a.sent, "every cookie completes once: %u + %u != %u", acked,
	             failed, a.sent);
	cr_assert(gm_rel_peer_failed(pa));
	cr_assert_not(gm_peer_can_send(pa));
	cr_assert_eq(gm_peer_send(pa, GM_FT_EAGER, NULL, 0, NULL, 0, NULL), -FI_EIO);
	cr_assert_eq(gm_rel_stats(a.rel)->peers_failed, 1);
	cr_assert_gt(gm_rel_stats(a.rel)->timeouts, 1);
	sim_free(&s);
}

/*
 * One message a->b, asking for its ack at once or not, and 30 us after b
 * has it: well inside the ack delay.  Returns a's peer.
 */
static struct gm_peer *one_delivered(struct sim *s, struct node *a, struct node *b, bool ack_now)
{
	struct gm_peer *pa;

	node_init(s, a, 0, 1000, 4);
	node_init(s, b, 1, 2000, 4);
	pa = peer_to(a, b);
	cr_assert(try_send(a, pa));
	if (ack_now)
		gm_peer_ack_now(pa);
	while (!b->delivered)
		step(s);
	for (int i = 0; i < 3; i++)
		step(s);
	return pa;
}

/*
 * A port closing right after a delivery still owes the (delayed) ack for
 * it: gm_rel_port_drain sends it, so the sender's frame is acknowledged
 * instead of retransmitted into silence until the peer timeout.
 */
Test(rel, port_drain_sends_the_delayed_ack_before_close)
{
	struct sim s = {.l = {.rng = 7}};
	struct node a, b;
	struct gm_peer *pa = one_delivered(&s, &a, &b, false);

	cr_assert_eq(gm_rel_peer_in_flight(pa), 1, "the ack was not delayed: nothing to test");
	gm_rel_port_drain(b.port, s.l.now);
	gm_rel_port_close(b.port);
	for (int i = 0; i < 3; i++)
		step(&s);
	cr_assert_eq(gm_rel_peer_in_flight(pa), 0, "the closing port's ack never arrived");
	cr_assert_eq(a.acked[0], 1);
	sim_free(&s);
}

/* The same frame with GM_F_ACKNOW (gm_peer_ack_now) is acked at once. */
Test(rel, a_frame_asking_for_its_ack_is_acked_at_once)
{
	struct sim s = {.l = {.rng = 7}};
	struct node a, b;
	struct gm_peer *pa = one_delivered(&s, &a, &b, true);

	cr_assert_eq(gm_rel_peer_in_flight(pa), 0, "the receiver delayed the ack asked for");
	cr_assert_eq(a.acked[0], 1);
	sim_free(&s);
}

/* Run the simulation for us microseconds, or until node nd's peer failed. */
static void run_for(struct sim *s, struct node *nd, uint64_t us)
{
	for (uint64_t t0 = s->l.now; s->l.now < t0 + us && !nd->peer_failed_calls;)
		step(s);
}

/* Both nodes exchange a few messages, all acked: nothing left in flight. */
static void settle(struct sim *s, struct node *a, struct node *b, struct gm_peer *pa,
                   struct gm_peer *pb)
{
	for (int i = 0; i < 5; i++) {
		cr_assert(try_send(a, pa));
		cr_assert(try_send(b, pb));
	}
	while (count(a->acked, 5) < 5 || count(b->acked, 5) < 5)
		step(s);
	run_for(s, a, 1000); /* the last delayed acks */
	cr_assert_eq(gm_rel_peer_in_flight(pa) + gm_rel_peer_in_flight(pb), 0);
}

Test(rel, awaited_peer_that_dies_idle_fails_within_peer_timeout)
{
	struct sim s = {.l = {.rng = 77}};
	struct node a, b;
	struct gm_peer *pa, *pb;

	node_init(&s, &a, 0, 31, 10);
	node_init(&s, &b, 1, 32, 10);
	pa = peer_to(&a, &b);
	pb = peer_to(&b, &a);
	settle(&s, &a, &b, pa, pb);
	/* Unawaited, a silent peer with nothing in flight is nobody's business. */
	s.l.fault.dead = true;
	run_for(&s, &a, 1000000);
	cr_assert_eq(a.peer_failed_calls, 0);
	cr_assert_eq(gm_rel_stats(a.rel)->probes, 0);
	/* Now an operation waits on it: failed by 200 ms after the wait began. */
	a.awaited = true;
	gm_peer_await(pa);
	uint64_t waited = s.l.now;
	run_for(&s, &a, 2000000);
	cr_assert_eq(a.peer_failed_calls, 1);
	cr_assert_eq(a.peer_failed_err, -FI_EIO);
	cr_assert_geq(a.failed_at, waited + 200000, "failed early: %lu us into the wait",
	              (unsigned long)(a.failed_at - waited));
	cr_assert_leq(a.failed_at, waited + 200000 + 20, "failed late: %lu us into the wait",
	              (unsigned long)(a.failed_at - waited));
	cr_assert_gt(gm_rel_stats(a.rel)->probes, 0);
	cr_assert_eq(count(a.acked, 10), 5, "the probes reached the upper half as cookies");
	cr_assert_eq(count(a.failed, 10), 0);
	cr_assert(gm_rel_peer_failed(pa));
	sim_free(&s);
}

Test(rel, awaited_peer_dying_mid_wait_fails_within_peer_timeout_of_its_last_frame)
{
	struct sim s = {.l = {.rng = 78}};
	struct node a, b;
	struct gm_peer *pa, *pb;

	node_init(&s, &a, 0, 41, 10);
	node_init(&s, &b, 1, 42, 10);
	pa = peer_to(&a, &b);
	pb = peer_to(&b, &a);
	settle(&s, &a, &b, pa, pb);
	a.awaited = true;
	gm_peer_await(pa);
	run_for(&s, &a, 500000); /* 2.5 peer timeouts alive: probed, answered */
	cr_assert_eq(a.peer_failed_calls, 0);
	cr_assert_gt(gm_rel_stats(a.rel)->probes, 0);
	/* Its last frame is the ack of the last probe, at most this long ago. */
	s.l.fault.dead = true;
	uint64_t died = s.l.now;
	run_for(&s, &a, 2000000);
	cr_assert_eq(a.peer_failed_calls, 1);
	cr_assert_eq(a.peer_failed_err, -FI_EIO);
	cr_assert_leq(a.failed_at, died + 200000 + 20, "failed %lu us after the link died",
	              (unsigned long)(a.failed_at - died));
	sim_free(&s);
}

Test(rel, awaited_live_idle_peer_is_probed_and_never_failed)
{
	struct sim s = {.l = {.rng = 79}};
	struct node a, b;
	struct gm_peer *pa, *pb;

	node_init(&s, &a, 0, 51, 10);
	node_init(&s, &b, 1, 52, 10);
	pa = peer_to(&a, &b);
	pb = peer_to(&b, &a);
	settle(&s, &a, &b, pa, pb);
	a.awaited = true;
	gm_peer_await(pa);
	run_for(&s, &a, 2000000); /* ten peer timeouts */
	cr_assert_eq(a.peer_failed_calls + b.peer_failed_calls, 0);
	uint64_t probes = gm_rel_stats(a.rel)->probes;
	/* One per quarter timeout of silence (50 ms): about 40 in 2 s. */
	cr_assert_geq(probes, 30);
	cr_assert_leq(probes, 45);
	cr_assert_eq(b.delivered, 5, "a probe reached the upper half");
	cr_assert_eq(count(a.acked, 10), 5);
	/* Once nothing waits any more, the probing stops. */
	a.awaited = false;
	run_for(&s, &a, 2000000);
	cr_assert_leq(gm_rel_stats(a.rel)->probes, probes + 1);
	cr_assert_eq(a.peer_failed_calls, 0);
	sim_free(&s);
}

Test(rel, peer_restart_fails_old_state_and_starts_fresh)
{
	struct sim s = {.l = {.rng = 7, .fault = {.drop = 30, .reorder = 100}}};
	struct node a, b;
	struct gm_peer *pa;
	unsigned before;

	node_init(&s, &a, 0, 1000, 2000);
	node_init(&s, &b, 1, 2000, 2000);
	pa = peer_to(&a, &b);
	while (a.sent < 300) {
		try_send(&a, pa);
		step(&s);
	}
	while (try_send(&a, pa))
		;
	/* b restarts: same port, new session, no memory of a. */
	gm_rel_port_close(b.port);
	node_open_port(&b, 0x5E55, 0xC0FFEE);
	before = a.sent;
	for (int i = 0; i < 2000 && !a.peer_failed_calls; i++)
		step(&s);
	cr_assert_eq(a.peer_failed_calls, 1);
	cr_assert_eq(a.peer_failed_err, -FI_ECONNRESET);
	cr_assert_eq(count(a.acked, before) + count(a.failed, before), before);
	/* The same gm_peer works again; b sees a fresh stream. */
	cr_assert_not(gm_rel_peer_failed(pa));
	b.next_expected = a.sent;
	b.delivered = 0;
	while (count(a.acked, a.sent + 1) + count(a.failed, a.sent + 1) < before + 500) {
		if (a.sent < before + 500)
			try_send(&a, pa);
		step(&s);
		cr_assert_lt(s.l.now, 100000000);
	}
	cr_assert_eq(b.delivered, 500, "b got %lu of the 500 new messages", b.delivered);
	cr_assert_eq(a.peer_failed_calls, 1);
	/* Accepted once b proved it is live, after a challenge. */
	cr_assert_eq(gm_rel_stats(a.rel)->restarts, 1);
	cr_assert_geq(gm_rel_stats(a.rel)->restart_challenges, 1);
	sim_free(&s);
}

static const uint8_t SECRET[32] = "gamma unit test job secret 32 B";

Test(rel, lossy_link_with_a_secret_delivers_everything)
{
	g_secret = SECRET;
	run_stream((struct mock_fault){.drop = 50, .dup = 50, .reorder = 250, .corrupt = 20}, 7, 8,
	           3000, true);
}

/*
 * The type header written after the payload: its frames must pass the
 * receiver's CRC (the body's checksum derived, not recomputed) or MAC,
 * and carry the payload's CRC, over a link that loses and corrupts.
 */
Test(rel, send_crc_frames_pass_their_check_without_a_secret)
{
	g_send_crc = true;
	run_stream((struct mock_fault){.drop = 50, .dup = 50, .reorder = 250, .corrupt = 20}, 7, 8,
	           3000, true);
}

Test(rel, send_crc_frames_pass_their_check_with_a_secret)
{
	g_send_crc = true;
	g_secret = SECRET;
	run_stream((struct mock_fault){.drop = 50, .dup = 50, .reorder = 250, .corrupt = 20}, 7, 8,
	           3000, true);
}

/*
 * Messages appended to the frame queued before them (BUNDLE) arrive, each
 * once and in order, through the CRC derived for the grown body or the
 * MAC over it, over a link that loses and corrupts.
 */
static void appended_stream(const uint8_t *secret)
{
	g_send_crc = true;
	g_append = true;
	g_secret = secret;
	run_stream((struct mock_fault){.drop = 50, .dup = 50, .reorder = 250, .corrupt = 20}, 7, 8,
	           3000, true);
}

Test(rel, appended_messages_arrive_without_a_secret)
{
	appended_stream(NULL);
}

Test(rel, appended_messages_arrive_with_a_secret)
{
	appended_stream(SECRET);
}

/* Only a frame that has not left takes riders: a receiver may hold one that has. */
Test(rel, a_frame_that_left_takes_no_riders)
{
	struct sim s = {.l = {.rng = 5}};
	struct node a, b;
	struct gm_peer *pa;
	uint8_t th[sizeof(struct gm_msg_hdr)] = {0}, x = 1;
	struct iovec iov = {&x, 1};
	uint32_t crc = 0;

	node_init(&s, &a, 0, 1, 4);
	node_init(&s, &b, 1, 2, 4);
	s.l.fault.split = 0;
	pa = peer_to(&a, &b);
	cr_assert_eq(gm_peer_send(pa, GM_FT_EAGER, th, sizeof(th), &iov, 1, (void *)1), 0);
	cr_assert_eq(gm_peer_append(pa, sizeof(th), encode_msg_hdr,
	                            &(struct gm_msg_hdr){.msg_len = 1}, &iov, 1, &crc),
	             (void *)1);
	mock_flush(&s.l);
	cr_assert_null(gm_peer_append(pa, sizeof(th), encode_msg_hdr,
	                              &(struct gm_msg_hdr){.msg_len = 1}, &iov, 1, &crc));
	cr_assert_eq(gm_peer_send(pa, GM_FT_CTS, th, sizeof(th), NULL, 0, (void *)2), 0);
	cr_assert_null(gm_peer_append(pa, sizeof(th), encode_msg_hdr,
	                              &(struct gm_msg_hdr){.msg_len = 1}, &iov, 1, &crc),
	               "a CTS takes no messages");
	sim_free(&s);
}

Test(rel, restart_with_a_secret_is_accepted_after_the_handshake)
{
	struct sim s = {.l = {.rng = 11, .fault = {.drop = 30, .reorder = 100}}};
	struct node a, b;
	struct gm_peer *pa;

	g_secret = SECRET;
	node_init(&s, &a, 0, 1000, 400);
	node_init(&s, &b, 1, 2000, 400);
	pa = peer_to(&a, &b);
	while (a.sent < 100) {
		try_send(&a, pa);
		step(&s);
	}
	gm_rel_port_close(b.port);
	node_open_port(&b, 0x5E55, 0xC0FFEE);
	for (int i = 0; i < 5000 && !a.peer_failed_calls; i++) {
		try_send(&a, pa);
		step(&s);
	}
	cr_assert_eq(a.peer_failed_err, -FI_ECONNRESET);
	cr_assert_eq(gm_rel_stats(a.rel)->restarts, 1);
	cr_assert_geq(gm_rel_stats(a.rel)->restart_challenges, 1);
	sim_free(&s);
}

/*
 * A valid frame from an earlier incarnation of b (recorded in another run,
 * same secret, same addresses), replayed into a live a<->b stream: a must
 * challenge it and keep its peer, and the stream must complete.
 */
static void replay_old_incarnation(const uint8_t *secret)
{
	struct sim old = {.l = {.rng = 21}}, s = {.l = {.rng = 22}};
	struct node a, b;
	struct gm_peer *pa, *pb;
	uint8_t frame[MTU + 14];
	size_t flen;
	struct gm_net_stats *st;

	g_secret = secret;
	node_init(&old, &a, 0, 1000, 10);
	node_init(&old, &b, 1, 0x01D, 10);
	pb = peer_to(&b, &a);
	cr_assert(try_send(&b, pb));
	step(&old);
	cr_assert_geq(old.nrec, 1);
	memcpy(frame, old.rec[0], old.rec_len[0]);
	flen = old.rec_len[0];
	sim_free(&old);

	node_init(&s, &a, 0, 1000, 300);
	node_init(&s, &b, 1, 0x2E3, 300);
	pa = peer_to(&a, &b);
	pb = peer_to(&b, &a);
	for (int i = 0; count(a.acked, 300) < 300 || count(b.acked, 300) < 300; i++) {
		while (a.sent < 300 && try_send(&a, pa))
			;
		while (b.sent < 300 && try_send(&b, pb))
			;
		if (i % 50 == 10)
			gm_rel_input(a.rel, frame, flen, s.l.now);
		step(&s);
		cr_assert_lt(i, 200000, "no progress");
	}
	st = gm_rel_stats(a.rel);
	cr_assert_eq(a.peer_failed_calls, 0);
	cr_assert_eq(count(a.failed, 300), 0);
	cr_assert_eq(st->restarts, 0);
	cr_assert_gt(st->restart_challenges, 0);
	cr_assert_eq(a.delivered, 300);
	cr_assert_eq(b.delivered, 300);
	sim_free(&s);
}

Test(rel, replayed_old_session_frame_does_not_reset_the_peer_with_a_secret)
{
	replay_old_incarnation(SECRET);
}

Test(rel, replayed_old_session_frame_does_not_reset_the_peer_without_a_secret)
{
	replay_old_incarnation(NULL);
}

/* A forged EAGER frame from b's address to a's port, sealed with mac (or its CRC). */
static size_t forge(uint8_t *f, struct gm_mac *mac, uint32_t key, uint32_t session, uint32_t seq,
                    uint16_t src_port)
{
	struct gm_hdr h = {
	    .version = GM_WIRE_VERSION,
	    .type = GM_FT_EAGER,
	    .flags = GM_F_SEQ,
	    .dst_port = PORT[0],
	    .src_port = src_port,
	    .key = key,
	    .session = session,
	    .seq = seq,
	    .len = sizeof(struct gm_msg_hdr),
	    .wnd = 8,
	    .nonce = seq,
	};
	struct gm_msg_hdr m = {.msg_id = 0};
	size_t len = 14 + HL + sizeof(m);

	memset(f, 0, len);
	memcpy(f, (uint8_t[]){0x02, 0, 0, 0, 0, 0x0a}, 6);
	memcpy(f + 6, (uint8_t[]){0x02, 0, 0, 0, 0, 0x0b}, 6);
	f[12] = 0x88;
	f[13] = 0xB5;
	gm_hdr_encode(f + 14, &h);
	gm_msg_hdr_encode(f + 14 + HL, &m);
	if (mac)
		gm_mac_seal(mac, f, len);
	else
		gm_frame_seal(f + 14, len - 14);
	return len;
}

Test(rel, mac_failures_are_counted_before_any_state)
{
	static const uint8_t other[32] = "not the job's secret, 32 bytes.";
	struct sim s = {.l = {.rng = 31}};
	struct node a, b;
	struct gm_mac *good, *bad;
	struct gm_net_stats *st;
	uint8_t f[256];
	size_t len;
	uint32_t id;

	g_secret = SECRET;
	node_init(&s, &a, 0, 1, 10);
	node_init(&s, &b, 1, 2, 10);
	st = gm_rel_stats(a.rel);
	cr_assert_eq(gm_mac_create(SECRET, sizeof(SECRET), &good), 0);
	cr_assert_eq(gm_mac_create(other, sizeof(other), &bad), 0);
	id = gm_mac_key_id(good);

	/* Another job's secret: another key id. */
	len = forge(f, bad, gm_mac_key_id(bad), 77, 77, 200);
	gm_rel_input(a.rel, f, len, 0);
	cr_assert_eq(st->bad_key, 1);
	/* Our key id, sealed with the wrong secret; CRC only; one byte changed. */
	len = forge(f, bad, id, 77, 77, 200);
	gm_rel_input(a.rel, f, len, 0);
	len = forge(f, NULL, id, 77, 77, 200);
	gm_rel_input(a.rel, f, len, 0);
	for (size_t i = 0; i < len; i++) {
		len = forge(f, good, id, 77, 77, 200);
		f[i] ^= 0x40;
		gm_rel_input(a.rel, f, len, 0);
	}
	cr_assert_eq(st->bad_mac + st->bad_key + st->bad_port + st->bad_hdr + st->bad_version,
	             1 + 2 + len);
	cr_assert_geq(st->bad_mac, 2 + 14 + GM_HDR_TAG_OFF - 8);
	cr_assert_eq(gm_rel_peers(a.rel), 0, "a bad frame created a peer");
	cr_assert_eq(a.delivered, 0);
	/* The intact frame is delivered, once. */
	len = forge(f, good, id, 77, 77, 200);
	gm_rel_input(a.rel, f, len, 0);
	gm_rel_input(a.rel, f, len, 0);
	cr_assert_eq(a.delivered, 1);
	cr_assert_eq(gm_rel_peers(a.rel), 1);
	gm_mac_destroy(good);
	gm_mac_destroy(bad);
	sim_free(&s);
}

/*
 * Two jobs, each with its own secret (MPI_Comm_spawn): frames sealed with
 * the sender's secret are refused by the other side (bad_key) and nothing
 * arrives; once each side binds the other to that one's secret, the frame
 * already queued is sealed again under it, and a lossy stream both ways
 * arrives whole.
 */
Test(rel, peers_bound_to_another_jobs_secret_exchange_everything)
{
	static const uint8_t other[32] = "the spawned job's secret, 32 B.";
	const uint32_t key4 = 0xC0FFEE, nmsg = 2000;
	struct sim s = {
	    .l = {.rng = 77, .fault = {.drop = 50, .dup = 50, .reorder = 250, .corrupt = 20}}};
	struct node a, b;
	struct gm_peer *pa, *pb;
	uint64_t steps = 0;

	g_secret = SECRET;
	node_init(&s, &a, 0, 1, nmsg);
	node_init(&s, &b, 1, 2, nmsg);
	cr_assert_eq(gm_port_set_auth(b.port, &(struct gm_auth){other, sizeof(other)}), 0);
	pa = peer_to(&a, &b);
	pb = peer_to(&b, &a);
	cr_assert(try_send(&a, pa));
	while (gm_rel_stats(b.rel)->bad_key < 3)
		step(&s);
	cr_assert_eq(b.delivered, 0);
	cr_assert_eq(gm_peer_set_auth(pa, &(struct gm_auth){&key4, sizeof(key4)}), -FI_EINVAL);
	cr_assert_eq(gm_peer_set_auth(pa, &(struct gm_auth){NULL, 0}), -FI_EINVAL);
	cr_assert_eq(gm_peer_set_auth(pa, &(struct gm_auth){other, sizeof(other)}), 0);
	cr_assert_eq(gm_peer_set_auth(pb, &(struct gm_auth){SECRET, sizeof(SECRET)}), 0);
	while (count(a.acked, nmsg) < nmsg || count(b.acked, nmsg) < nmsg) {
		while (a.sent < nmsg && try_send(&a, pa))
			;
		while (b.sent < nmsg && try_send(&b, pb))
			;
		step(&s);
		cr_assert_lt(++steps, 2000000, "no progress: a acked %u/%u, b acked %u/%u",
		             count(a.acked, nmsg), nmsg, count(b.acked, nmsg), nmsg);
	}
	cr_assert_eq(a.delivered, nmsg);
	cr_assert_eq(b.delivered, nmsg);
	cr_assert_eq(a.peer_failed_calls + b.peer_failed_calls, 0);
	sim_free(&s);
}

/*
 * Without a secret anyone can forge frames: 300 fake sources each send a
 * window of out-of-order frames while a and b stream both ways.  The caps
 * must keep the pool for real traffic and the peer table bounded.
 */
Test(rel, fake_out_of_order_flood_cannot_take_the_pool)
{
	struct sim s = {.l = {.rng = 41}};
	struct node a, b;
	struct gm_peer *pa, *pb;
	uint8_t f[256];
	unsigned nmsg = 2000, src = 0;
	struct gm_net_stats *st;

	g_peer_max = 64;
	node_init(&s, &a, 0, 1000, nmsg);
	node_init(&s, &b, 1, 2000, nmsg);
	st = gm_rel_stats(a.rel);
	pa = peer_to(&a, &b);
	pb = peer_to(&b, &a);
	for (int i = 0; count(a.acked, nmsg) < nmsg || count(b.acked, nmsg) < nmsg; i++) {
		for (int k = 0; k < 20 && src < 300 * (WINDOW - 1); k++, src++) {
			uint16_t port = (uint16_t)(1000 + src / (WINDOW - 1));
			uint32_t sess = 0x77000000u + port;
			size_t len =
			    forge(f, NULL, 0xC0FFEE, sess, sess + 1 + src % (WINDOW - 1), port);

			gm_rel_input(a.rel, f, len, s.l.now);
			cr_assert_leq(gm_rel_ooo_held(a.rel), 2 * WINDOW);
			cr_assert_leq(gm_rel_peers(a.rel), 64);
		}
		while (a.sent < nmsg && try_send(&a, pa))
			;
		while (b.sent < nmsg && try_send(&b, pb))
			;
		step(&s);
		cr_assert_lt(i, 500000, "no progress: a acked %u, b acked %u", count(a.acked, nmsg),
		             count(b.acked, nmsg));
	}
	cr_assert_geq(src, 300 * (WINDOW - 1), "the flood ended before the streams");
	cr_assert_eq(a.delivered, nmsg);
	cr_assert_eq(b.delivered, nmsg);
	cr_assert_eq(a.peer_failed_calls + b.peer_failed_calls, 0);
	cr_assert_gt(st->ooo_dropped, 0);
	cr_assert_gt(st->peers_reclaimed, 200);
	sim_free(&s);
}

/*
 * A forged SACK marks frames b never got.  After the timeout they must be
 * sent again: SACK is advisory.
 */
Test(rel, sack_is_cleared_on_timeout)
{
	struct sim s = {.l = {.rng = 51}, .drop_first = 10};
	struct node a, b;
	struct gm_peer *pa;
	uint8_t f[256];
	struct gm_hdr h = {
	    .version = GM_WIRE_VERSION,
	    .type = GM_FT_ACK,
	    .flags = GM_F_ACK,
	    .dst_port = PORT[0],
	    .src_port = PORT[1],
	    .key = 0xC0FFEE,
	    .session = 2000,
	    .ack = 1000,
	    .len = sizeof(struct gm_ack_body),
	    .wnd = WINDOW,
	};
	struct gm_ack_body ab = {.sack = htobe64(0x1FF)};

	node_init(&s, &a, 0, 1000, 10);
	node_init(&s, &b, 1, 2000, 10);
	pa = peer_to(&a, &b);
	while (a.sent < 10)
		cr_assert(try_send(&a, pa));
	step(&s); /* all ten leave, and are lost */
	memset(f, 0, sizeof(f));
	memcpy(f, a.mac, 6);
	memcpy(f + 6, b.mac, 6);
	f[12] = 0x88;
	f[13] = 0xB5;
	gm_hdr_encode(f + 14, &h);
	memcpy(f + 14 + HL, &ab, sizeof(ab));
	gm_frame_seal(f + 14, HL + sizeof(ab));
	gm_rel_input(a.rel, f, 14 + HL + sizeof(ab), s.l.now);
	/* peer timeout 200 ms */
	for (int i = 0; i < 15000 && count(a.acked, 10) < 10; i++)
		step(&s);
	cr_assert_eq(b.delivered, 10, "b got %lu of 10", b.delivered);
	cr_assert_eq(a.peer_failed_calls, 0);
	cr_assert_eq(count(a.acked, 10), 10);
	sim_free(&s);
}

/* Craft frames by hand to a's port: each must be counted and dropped. */
static void craft(uint8_t *f, size_t *len, uint16_t dst_port, uint32_t key, uint8_t version)
{
	struct gm_hdr h = {
	    .version = version,
	    .type = GM_FT_EAGER,
	    .flags = GM_F_SEQ,
	    .dst_port = dst_port,
	    .src_port = 200,
	    .key = key,
	    .session = 77,
	    .seq = 77,
	    .len = sizeof(struct gm_msg_hdr),
	    .wnd = 8,
	};
	struct gm_msg_hdr m = {.msg_id = 0, .msg_len = 0};
	const size_t mh = sizeof(m);

	memset(f, 0, 14 + HL + mh);
	memcpy(f, (uint8_t[]){0x02, 0, 0, 0, 0, 0x0a}, 6);
	memcpy(f + 6, (uint8_t[]){0x02, 0, 0, 0, 0, 0x0b}, 6);
	f[12] = 0x88;
	f[13] = 0xB5;
	gm_hdr_encode(f + 14, &h);
	gm_msg_hdr_encode(f + 14 + HL, &m);
	gm_frame_seal(f + 14, HL + mh);
	*len = 14 + HL + mh;
}

Test(rel, malformed_frames_are_counted_and_dropped)
{
	struct sim s = {.l = {.rng = 3}};
	struct node a, b;
	struct gm_net_stats *st;
	uint8_t f[256] = {0};
	size_t len;

	node_init(&s, &a, 0, 1, 10);
	node_init(&s, &b, 1, 2, 10);
	st = gm_rel_stats(a.rel);

	craft(f, &len, 100, 0xC0FFEE, GM_WIRE_VERSION);
	for (size_t cut = 0; cut < len; cut++) /* every truncation */
		gm_rel_input(a.rel, f, cut, 0);
	cr_assert_eq(st->bad_hdr + st->bad_csum, len);
	cr_assert_gt(st->bad_hdr, 0);

	craft(f, &len, 100, 0xC0FFEE, GM_WIRE_VERSION + 1);
	gm_rel_input(a.rel, f, len, 0);
	cr_assert_eq(st->bad_version, 1);

	craft(f, &len, 100, 0xC0FFEE, GM_WIRE_VERSION);
	f[14 + HL + 3] ^= 0x10;
	gm_rel_input(a.rel, f, len, 0);
	cr_assert_eq(st->bad_csum, 1 + 0);

	craft(f, &len, 101, 0xC0FFEE, GM_WIRE_VERSION);
	gm_rel_input(a.rel, f, len, 0);
	cr_assert_eq(st->bad_port, 1);

	craft(f, &len, 100, 0xBAD, GM_WIRE_VERSION);
	gm_rel_input(a.rel, f, len, 0);
	cr_assert_eq(st->bad_key, 1);

	/* Sequenced type without GM_F_SEQ, resealed: a bad header. */
	craft(f, &len, 100, 0xC0FFEE, GM_WIRE_VERSION);
	f[14 + 2] = 0;
	gm_frame_seal(f + 14, len - 14);
	gm_rel_input(a.rel, f, len, 0);
	cr_assert_eq(a.delivered, 0);

	/* Random garbage: never delivered, never crashes. */
	for (int i = 0; i < 20000; i++) {
		size_t n = mock_rnd(&s.l) % sizeof(f);

		craft(f, &len, 100, 0xC0FFEE, GM_WIRE_VERSION);
		for (int k = 0; k < 3; k++)
			f[14 + mock_rnd(&s.l) % HL] = (uint8_t)mock_rnd(&s.l);
		gm_rel_input(a.rel, f, n, 0);
	}
	cr_assert_eq(a.delivered, 0);

	/* And the intact frame goes through, once. */
	craft(f, &len, 100, 0xC0FFEE, GM_WIRE_VERSION);
	gm_rel_input(a.rel, f, len, 0);
	gm_rel_input(a.rel, f, len, 0);
	cr_assert_eq(a.delivered, 1);
	cr_assert_eq(st->dup_dropped, 1);
	sim_free(&s);
}

/* A frame the link refused goes out later with the seal it got, once. */
Test(rel, a_refused_frame_keeps_its_seal)
{
	struct sim s = {.l = {.rng = 61}};
	struct node a, b;
	struct gm_peer *pb;
	struct gm_hdr h;

	g_secret = SECRET;
	node_init(&s, &a, 0, 1000, 4);
	node_init(&s, &b, 1, 2000, 4);
	pb = peer_to(&b, &a);
	s.l.refuse = true;
	cr_assert(try_send(&b, pb));
	for (int i = 0; i < 5; i++) {
		s.l.now += 100;
		gm_rel_flush(b.rel, s.l.now);
	}
	s.l.refuse = false;
	s.l.now += 100;
	gm_rel_flush(b.rel, s.l.now);
	cr_assert_eq(s.nrec, 1);
	cr_assert_eq(gm_hdr_decode(s.rec[0] + 14, s.rec_len[0] - 14, &h), GM_WIRE_OK);
	/* node_open_port: nonce0 = session * 2654435761, below 2^62; one seal. */
	cr_assert_eq(h.nonce, ((2000ull * 2654435761ull) & ((1ull << 62) - 1)) + 1);
	for (int i = 0; i < 100 && a.delivered < 1; i++)
		step(&s);
	cr_assert_eq(a.delivered, 1);
	cr_assert_eq(gm_rel_stats(a.rel)->bad_mac, 0);
	sim_free(&s);
}

/*
 * b restarts while an attacker keeps replaying a valid frame of yet another
 * incarnation of b: the real restart is still accepted, the replay never.
 */
Test(rel, replays_do_not_hold_off_a_real_restart)
{
	struct sim old = {.l = {.rng = 71}}, s = {.l = {.rng = 72, .fault = {.drop = 20}}};
	struct node a, b;
	struct gm_peer *pa, *pb;
	uint8_t frame[MTU + 14];
	size_t flen;

	g_secret = SECRET;
	node_init(&old, &a, 0, 1000, 4);
	node_init(&old, &b, 1, 0x01D, 4);
	pb = peer_to(&b, &a);
	cr_assert(try_send(&b, pb));
	step(&old);
	memcpy(frame, old.rec[0], old.rec_len[0]);
	flen = old.rec_len[0];
	sim_free(&old);

	node_init(&s, &a, 0, 1000, 400);
	node_init(&s, &b, 1, 2000, 400);
	pa = peer_to(&a, &b);
	while (a.sent < 100) {
		try_send(&a, pa);
		step(&s);
	}
	gm_rel_port_close(b.port);
	node_open_port(&b, 0x5E55, 0xC0FFEE);
	for (int i = 0; i < 15000 && !a.peer_failed_calls; i++) {
		gm_rel_input(a.rel, frame, flen, s.l.now);
		try_send(&a, pa);
		step(&s);
	}
	cr_assert_eq(a.peer_failed_calls, 1);
	cr_assert_eq(a.peer_failed_err, -FI_ECONNRESET, "the restart was not accepted in time");
	cr_assert_eq(gm_rel_stats(a.rel)->restarts, 1);
	sim_free(&s);
}
