/*
 * The message protocol (gm_msg.h) of two endpoints over two reliability
 * engines (gm_rel.c) joined by a deterministic in-memory link that drops,
 * duplicates and delays frames, with a simulated clock (test_rel's link,
 * mock_link.h).  The libfabric
 * objects around the protocol are its upcalls (struct gm_msg_upcalls),
 * implemented here: a CQ that records, an AV of one address; everything
 * between the send call and the receive completion is the provider's own
 * code.
 *
 * Both nodes use their endpoints the way btl gamma does: a ring of
 * FI_ADDR_UNSPEC receive buffers, reposted once read, and sends straight
 * from buffers that are scribbled over the moment their send completes.
 * Every message carries its index, and its bytes are derived from
 * (sender, index, offset): the receiver checks every byte, exactly once.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/providers/fi_prov.h>

#include "fi_gamma.h"
#include "gm_defaults.h"
#include "gm_msg.h"
#include "gm_rel.h"
#include "mock_link.h"

#define MTU       MOCK_MTU
#define MAXQ      60000 /* frames on the wire at once */
#define NPOST     8     /* receive buffers per node, as the BTL posts a ring */
#define NSEND     32    /* sends in flight per node: more than the peer posted */
#define BUFSZ     (24 * 1024)
#define RNDV      (8 * 1024) /* FI_GAMMA_RNDV_THRESHOLD for the tests */
#define WINDOW    64
#define MULTI_LEN (4 * BUFSZ)
#define CQ_CAP    4096

/* ---- the link (mock_link.h), and what it does to frames ---- */

struct fault {
	struct mock_fault link;
	/* Change a payload byte of the tamper_nth frame of tamper_type and seal
	 * it again: a bug below the message layer that the frame check cannot see. */
	uint8_t tamper_type;
	unsigned tamper_nth;
	/* Lose node 1's acks: node 0's data is never acknowledged meanwhile. */
	bool hold_acks;
};

struct tsim {
	struct mock_link l;
	void *tap_ctx; /* a test's own tap's state */
	struct fault fault;
	unsigned tamper_seen;
	struct tnode *nodes[2];
};

struct tbuf {
	struct tnode *nd;
	uint8_t *mem;
	bool busy;
	bool is_send;
	bool multi;     /* an FI_MULTI_RECV buffer of MULTI_LEN bytes */
	bool completed; /* in the CQ, not yet read */
	size_t clen;
	int cerr;
	uint32_t idx;
	size_t len;
};

struct tnode {
	struct tsim *sim;
	int id;
	uint8_t mac[6];
	struct gm_rel *rel;
	struct gm_msg msg;
	struct tbuf rbuf[NPOST], sbuf[NSEND];
	/* send side */
	uint32_t next_send, nmsg, send_done;
	/* the CQ: completions in the order the provider wrote them */
	struct tcqe {
		struct tbuf *b;
		void *buf;
		size_t len;
		uint64_t flags;
		int err, prov_errno;
	} cq[CQ_CAP];
	unsigned cq_head, cq_count;
	/* receive side */
	uint32_t next_in_order;
	uint8_t *seen;
	uint32_t received;
	uint64_t bytes_checked;
	unsigned rx_errors, tx_errors;
	unsigned tx_refused, rx_refused; /* -FI_EAGAIN: the pool was full */
	int last_rx_err, last_rx_prov_errno;
};

static const uint16_t PORT[2] = {100, 200};

static enum mock_verdict tamper_tap(struct mock_link *l, int from, int to, const uint8_t *f,
                                    size_t len)
{
	struct tsim *s = l->tap_ctx;
	uint8_t c[MOCK_FRAME_MAX];

	if (s->fault.hold_acks && from == 1 && f[GM_ETH_HLEN + 1] == GM_FT_ACK)
		return MOCK_DROP;
	if (!s->fault.tamper_type || f[GM_ETH_HLEN + 1] != s->fault.tamper_type ||
	    ++s->tamper_seen != s->fault.tamper_nth)
		return MOCK_PASS;
	memcpy(c, f, len);
	c[len - 1] ^= 0x40;
	gm_frame_seal(c + GM_ETH_HLEN, len - GM_ETH_HLEN);
	mock_enqueue(l, to, c, len, MOCK_HOP_US);
	return MOCK_TAKEN;
}

/* ---- the upcalls: what the libfabric objects would do ---- */

static const struct fi_provider test_prov = {.name = "gamma-test"};
static unsigned g_bad_msgs;

static void record(struct tnode *nd, enum gm_msg_side side, const struct gm_msg_cqe *e);

static void up_done(void *ctx, enum gm_msg_side side, uint64_t op_flags, const struct gm_msg_cqe *e)
{
	record(ctx, side, e);
}

static void up_report(void *ctx, const struct gm_msg_cqe *e)
{
	cr_assert_fail("node %d: a peek or cancel completion, none was asked for",
	               ((struct tnode *)ctx)->id);
}

static unsigned g_sends_lost;
static bool g_sends_may_be_lost; /* the test loses sends on purpose */

static void up_send_lost(void *ctx)
{
	cr_assert(g_sends_may_be_lost, "node %d: a send lost after it completed",
	          ((struct tnode *)ctx)->id);
	g_sends_lost++;
}

static void up_corrupt(void *ctx)
{
	g_bad_msgs++;
}

static uint16_t g_av_port0; /* node 0's AV entry names this port of node 1 instead */

/* The AV has one entry, fi_addr 0: the other node. */
static const struct gm_addr *up_av_addr(void *ctx, fi_addr_t fi_addr)
{
	struct tnode *nd = ctx;
	static struct gm_addr a[2];
	struct tnode *other = nd->sim->nodes[!nd->id];

	if (fi_addr != 0)
		return NULL;
	memcpy(a[nd->id].mac, other->mac, 6);
	a[nd->id].port = nd->id == 0 && g_av_port0 ? g_av_port0 : PORT[other->id];
	return &a[nd->id];
}

static bool g_hide_peer;      /* node 1's AV lacks node 0 for now */
static uint64_t g_av_gen = 1; /* changes when it gets it */

static fi_addr_t up_av_find(void *ctx, const struct gm_addr *addr)
{
	const struct gm_addr *peer = up_av_addr(ctx, 0);

	if (g_hide_peer && ((struct tnode *)ctx)->id == 1)
		return FI_ADDR_NOTAVAIL;
	return !memcmp(addr->mac, peer->mac, 6) && addr->port == peer->port ? 0 : FI_ADDR_NOTAVAIL;
}

static uint64_t up_av_gen(void *ctx)
{
	return g_av_gen;
}

static uint64_t up_now_ms(void *ctx)
{
	return ((struct tnode *)ctx)->sim->l.now / 1000;
}

static const struct gm_msg_upcalls test_upcalls = {
    .done = up_done,
    .report = up_report,
    .send_lost = up_send_lost,
    .corrupt = up_corrupt,
    .av_addr = up_av_addr,
    .av_find = up_av_find,
    .av_gen = up_av_gen,
    .now_ms = up_now_ms,
};

/* The provider's defaults (gm_defaults.h), but for the rendezvous threshold. */
static struct gm_msg_cfg g_cfg = {.prov = &test_prov,
                                  .max_body = MTU - sizeof(struct gm_hdr),
                                  .rndv_threshold = RNDV,
                                  .ux_max = GM_DEFAULT_UX_MAX,
                                  .ux_peer_max = GM_DEFAULT_UX_PEER_MAX,
                                  .ux_unknown_max = GM_DEFAULT_UX_UNKNOWN_MAX,
                                  .ux_unknown_hold_ms = GM_DEFAULT_UX_UNKNOWN_HOLD_MS,
                                  .tx_max = GM_DEFAULT_TX_MAX,
                                  .rx_max = GM_DEFAULT_RX_MAX};
static unsigned g_tx_refused, g_rx_refused; /* over every node of a run */
static uint64_t g_bundled;                  /* ... and messages sent in a BUNDLE */

static uint8_t pattern(int sender, uint32_t idx, size_t j)
{
	uint32_t x = (uint32_t)j * 2654435761u ^ idx * 40503u ^ (uint32_t)sender * 977u;
	return (uint8_t)(x >> 13 ^ x);
}

static size_t (*g_len_of)(uint32_t idx);

static void fill(struct tbuf *b, int sender, uint32_t idx, size_t len)
{
	memcpy(b->mem, &idx, sizeof(idx));
	for (size_t j = sizeof(idx); j < len; j++)
		b->mem[j] = pattern(sender, idx, j);
}

static size_t g_post_len = BUFSZ; /* receive buffer size: smaller truncates */
static bool g_hold_posts;         /* the application posts no receive for now */
static uint64_t g_send_flags;     /* added to every send's flags */
static bool g_multi;              /* receive into two FI_MULTI_RECV buffers instead */

static void post_recv(struct tbuf *b)
{
	struct iovec iov = {.iov_base = b->mem, .iov_len = b->multi ? MULTI_LEN : g_post_len};

	struct gm_msg *m = &b->nd->msg;
	ssize_t r;

	if (g_hold_posts)
		return;
	memset(b->mem, 0xEE, iov.iov_len);
	b->busy = true;
	r = gm_msg_recv(m, &iov, 1, FI_ADDR_UNSPEC, 0, 0, b,
	                FI_RECV | FI_MSG | (b->multi ? FI_MULTI_RECV : 0));
	if (r == -FI_EAGAIN) {
		/* Refused only with rx_max receives out; posted again by sim_step. */
		cr_assert_geq(m->rx_pool.used, g_cfg.rx_max, "receive refused with %zu out",
		              m->rx_pool.used);
		b->busy = false;
		b->nd->rx_refused++;
		return;
	}
	cr_assert_eq(r, 0);
}

static void check_recv(struct tnode *nd, const uint8_t *mem, size_t len)
{
	uint32_t idx;
	int sender = !nd->id;

	cr_assert_geq(len, sizeof(idx), "node %d: %zu-byte message", nd->id, len);
	memcpy(&idx, mem, sizeof(idx));
	cr_assert_lt(idx, nd->sim->nodes[sender]->nmsg, "node %d: bad index %u", nd->id, idx);
	cr_assert_eq(len, g_len_of(idx) < g_post_len ? g_len_of(idx) : g_post_len,
	             "node %d message %u: %zu bytes, sent %zu", nd->id, idx, len, g_len_of(idx));
	for (size_t j = sizeof(idx); j < len; j++)
		cr_assert_eq(mem[j], pattern(sender, idx, j),
		             "node %d message %u (%zu bytes): byte %zu is %#x, sent %#x", nd->id,
		             idx, len, j, mem[j], pattern(sender, idx, j));
	cr_assert_eq(nd->seen[idx], 0, "node %d: message %u delivered twice", nd->id, idx);
	/* ob1 needs a peer's messages in the order they were sent (issue #19). */
	cr_assert_eq(idx, nd->next_in_order, "node %d: message %u completed before message %u",
	             nd->id, idx, nd->next_in_order);
	nd->next_in_order++;
	nd->seen[idx] = 1;
	nd->received++;
	nd->bytes_checked += len;
}

/* A completion is read later, as the BTL reads its CQ after progress. */
static void record(struct tnode *nd, enum gm_msg_side side, const struct gm_msg_cqe *e)
{
	struct tbuf *b = e->context;

	cr_assert_eq(b->nd, nd, "node %d: completion of node %d's buffer", nd->id, b->nd->id);
	cr_assert(b->busy && (b->multi || !b->completed), "completion for an idle buffer");
	cr_assert_eq(side, b->is_send ? GM_MSG_TX : GM_MSG_RX);
	if (b->multi)
		cr_assert(e->buf >= (void *)b->mem &&
		              (uint8_t *)e->buf + e->len <= b->mem + MULTI_LEN,
		          "multi-recv completion outside its buffer");
	b->completed = true;
	cr_assert_lt(nd->cq_count, CQ_CAP);
	nd->cq[(nd->cq_head + nd->cq_count++) % CQ_CAP] =
	    (struct tcqe){.b = b,
	                  .buf = e->buf,
	                  .len = e->len,
	                  .flags = e->flags,
	                  .err = e->err,
	                  .prov_errno = e->prov_errno};
}

static void read_completion(const struct tcqe *e)
{
	struct tbuf *b = e->b;
	struct tnode *nd = b->nd;
	size_t len = e->len;
	int err = e->err;
	const uint8_t *mem = b->multi ? e->buf : b->mem;

	if (b->multi) {
		cr_assert_eq(err, 0, "node %d: multi-recv completion with error %d", nd->id, err);
		check_recv(nd, mem, len);
		if (e->flags & FI_MULTI_RECV) {
			b->busy = false; /* released: post it again */
			post_recv(b);
		}
		return;
	}
	b->completed = false;
	b->busy = false;
	if (b->is_send) {
		if (err)
			nd->tx_errors++;
		nd->send_done++;
		/* The send's buffer is the caller's again: reuse it at once. */
		memset(b->mem, 0x5A, BUFSZ);
		return;
	}
	if (err == FI_ETRUNC && g_len_of(*(uint32_t *)b->mem) > g_post_len) {
		check_recv(nd, mem, len); /* what fits must be right */
	} else if (err) {
		nd->rx_errors++;
		nd->last_rx_err = err;
		nd->last_rx_prov_errno = e->prov_errno;
		nd->next_in_order++;
	} else {
		check_recv(nd, mem, len);
	}
	post_recv(b);
}

static unsigned g_window = WINDOW;

static void node_init(struct tsim *s, struct tnode *nd, int id, uint32_t nmsg, uint32_t nrecv)
{
	struct gm_rel_cfg cfg = {
	    .mac = {0x02, 0, 0, 0, 0, (uint8_t)(0x0a + id)},
	    .ethertype = GM_ETHERTYPE_DEFAULT,
	    .dq = true,
	    .low_share = 4,
	    .window = g_window,
	    .rto_us = 1000,
	    .peer_timeout_ms = 5000,
	    .max_frame = MTU,
	};
	struct gm_msg *m = &nd->msg;

	memset(nd, 0, sizeof(*nd));
	nd->sim = s;
	nd->id = id;
	nd->nmsg = nmsg;
	nd->seen = calloc(nrecv + 1, 1);
	memcpy(nd->mac, cfg.mac, 6);
	s->nodes[id] = nd;
	s->l.maxq = MAXQ;
	s->l.tap = tamper_tap;
	s->l.tap_ctx = s;
	cr_assert_eq(mock_rel_create(&s->l, id, &cfg, &nd->rel), 0);
	gm_msg_init(m, &g_cfg, &test_upcalls, nd);
	/* A 4-byte key, so frames carry CRCs: the tamper tests reseal frames
	 * they changed, a bug below this layer that no frame check sees. */
	static const uint32_t key = 0xC0FFEE;
	const struct gm_auth auth = {&key, sizeof(key)};
	cr_assert_eq(gm_rel_port_open(nd->rel, PORT[id], GM_CLASS_HIGH, &auth, 1000u + id * 77u,
	                              (uint64_t)id << 40, &gm_msg_port_ops, m, &m->port),
	             0);
	/* Every slice has room for the largest message. */
	m->min_multi_recv = BUFSZ;
	for (int i = 0; i < NPOST; i++) {
		bool multi = g_multi && i < 2;
		nd->rbuf[i] = (struct tbuf){
		    .nd = nd, .mem = malloc(multi ? MULTI_LEN : BUFSZ), .multi = multi};
		if (!g_multi || multi)
			post_recv(&nd->rbuf[i]);
	}
	for (int i = 0; i < NSEND; i++)
		nd->sbuf[i] = (struct tbuf){.nd = nd, .mem = malloc(BUFSZ), .is_send = true};
}

/* The node's engine and buffers, once its protocol is closed. */
static void node_free(struct tnode *nd)
{
	gm_rel_destroy(nd->rel);
	for (int i = 0; i < NPOST; i++)
		free(nd->rbuf[i].mem);
	for (int i = 0; i < NSEND; i++)
		free(nd->sbuf[i].mem);
	free(nd->seen);
}

static void node_fini(struct tnode *nd)
{
	gm_msg_close(&nd->msg);
	cr_assert_eq(nd->msg.tx_pool.used, 0, "node %d: %zu tx not back in the pool", nd->id,
	             nd->msg.tx_pool.used);
	cr_assert_eq(nd->msg.rx_pool.used, 0, "node %d: %zu rx not back in the pool", nd->id,
	             nd->msg.rx_pool.used);
	g_tx_refused += nd->tx_refused;
	g_rx_refused += nd->rx_refused;
	g_bundled += nd->msg.st.bundled;
	node_free(nd);
}

/* Start sends while a send buffer is free, split like the BTL's (header, data). */
static void node_send(struct tnode *nd)
{
	for (int i = 0; i < NSEND && nd->next_send < nd->nmsg; i++) {
		struct tbuf *b = &nd->sbuf[i];
		uint32_t idx = nd->next_send;
		size_t len = g_len_of(idx);
		struct iovec iov[2] = {{b->mem, 8 < len ? 8 : len},
		                       {b->mem + 8, len > 8 ? len - 8 : 0}};

		if (b->busy)
			continue;
		fill(b, nd->id, idx, len);
		b->busy = true;
		b->idx = idx;
		b->len = len;
		ssize_t r = gm_msg_send(&nd->msg, iov, len > 8 ? 2 : 1, 0, 0, 0, b,
		                        FI_SEND | FI_MSG | g_send_flags);
		if (r == -FI_EAGAIN) {
			/* Refused only with tx_max sends in flight; tried again next step. */
			cr_assert_geq(nd->msg.tx_pool.used, g_cfg.tx_max,
			              "send refused with %zu out", nd->msg.tx_pool.used);
			b->busy = false;
			nd->tx_refused++;
			return;
		}
		cr_assert_eq(r, 0);
		nd->next_send++;
	}
}

static void sim_step(struct tsim *s)
{
	mock_deliver(&s->l);
	for (int n = 0; n < 2; n++) {
		struct tnode *nd = s->nodes[n];
		while (nd->cq_count) {
			struct tcqe e = nd->cq[nd->cq_head];
			nd->cq_head = (nd->cq_head + 1) % CQ_CAP;
			nd->cq_count--;
			read_completion(&e);
		}
		for (int i = 0; i < NPOST; i++)
			if (!nd->rbuf[i].busy && (!g_multi || nd->rbuf[i].multi))
				post_recv(&nd->rbuf[i]);
		node_send(nd);
		gm_msg_progress(&nd->msg);
		gm_rel_flush(nd->rel, s->l.now);
	}
	mock_advance(&s->l);
}

static bool done(const struct tsim *s)
{
	for (int n = 0; n < 2; n++) {
		const struct tnode *nd = s->nodes[n];
		const struct tnode *other = s->nodes[!n];
		if (nd->send_done < nd->nmsg || other->received + other->rx_errors < nd->nmsg)
			return false;
	}
	return true;
}

/* Run both directions at once until every message arrived, or fail. */
static void run_expect(uint64_t seed, const struct fault *fault, uint32_t nmsg,
                       size_t (*len_of)(uint32_t), bool both, unsigned errors)
{
	struct tsim *s = calloc(1, sizeof(*s));
	struct tnode a, b;
	uint64_t steps = 0;

	s->l.rng = seed * 0x9E3779B97F4A7C15ull + 1;
	s->l.fault = fault->link;
	s->fault = *fault;
	g_len_of = len_of;
	node_init(s, &a, 0, nmsg, nmsg);
	node_init(s, &b, 1, both ? nmsg : 0, nmsg);
	while (!done(s)) {
		sim_step(s);
		cr_assert_lt(++steps, 20000000,
		             "no progress: a %u/%u sent, %u received; b %u/%u, %u", a.send_done,
		             a.nmsg, a.received, b.send_done, b.nmsg, b.received);
	}
	cr_assert_eq(a.rx_errors + b.rx_errors, errors,
	             "%u receive errors (last %d, %d), expected %u", a.rx_errors + b.rx_errors,
	             a.last_rx_err, b.last_rx_err, errors);
	cr_assert_eq(g_bad_msgs, errors, "%u messages counted corrupt, expected %u", g_bad_msgs,
	             errors);
	for (int n = 0; n < 2; n++) {
		struct tnode *nd = s->nodes[n];
		/* A corrupt message says why, for fi_cq_strerror (fi_gamma.h). */
		if (nd->rx_errors) {
			cr_assert_eq(nd->last_rx_err, FI_EIO);
			cr_assert_eq(nd->last_rx_prov_errno, FI_GAMMA_ERR_MSG_CRC,
			             "node %d: prov_errno %d", n, nd->last_rx_prov_errno);
		}
		cr_assert_eq(nd->tx_errors, 0, "node %d: %u send errors", n, nd->tx_errors);
		cr_assert_eq(nd->received + nd->rx_errors, s->nodes[!n]->nmsg);
	}
	g_bad_msgs = 0;
	node_fini(&a);
	node_fini(&b);
	mock_free(&s->l);
	free(s);
}

static void run(uint64_t seed, const struct fault *fault, uint32_t nmsg, size_t (*len_of)(uint32_t),
                bool both)
{
	run_expect(seed, fault, nmsg, len_of, both, 0);
}

/* Like ob1 over btl gamma: full buffers (rendezvous), now and then a short tail. */
static size_t len_btl(uint32_t idx)
{
	static const size_t tail[] = {544, 1436, 1437, 2892, 5000, RNDV - 1, RNDV, RNDV + 1};

	return idx % 5 == 4 ? tail[(idx / 5) % 8] : BUFSZ;
}

/* Every size class, many ending in a partial frame. */
static size_t len_mixed(uint32_t idx)
{
	return 4 + (idx * 7919u + idx * idx * 31u) % (BUFSZ - 3);
}

static const struct fault clean = {0};
static const struct fault lossy = {
    .link = {.drop = 20, .dup = 20, .reorder = 50, .reorder_us = 3000, .dup_us = 200}};

Test(msg, clean_one_way)
{
	run(1, &clean, 200, len_btl, false);
}

Test(msg, clean_both_ways)
{
	run(2, &clean, 200, len_btl, true);
}

Test(msg, lossy_both_ways_btl_sizes)
{
	for (uint64_t seed = 1; seed <= 8; seed++)
		run(seed, &lossy, 300, len_btl, true);
}

Test(msg, lossy_both_ways_mixed_sizes)
{
	for (uint64_t seed = 1; seed <= 8; seed++)
		run(seed, &lossy, 300, len_mixed, true);
}

/* Small messages: a node's burst of them shares frames (GM_FT_BUNDLE). */
static size_t len_small(uint32_t idx)
{
	return 4 + (idx * 7919u) % 700;
}

Test(msg, lossy_both_ways_small_messages_in_bundles)
{
	g_bundled = 0;
	run(8, &lossy, 3000, len_small, true);
	cr_assert_gt(g_bundled, 1000, "%lu of 6000 messages rode in another's frame",
	             (unsigned long)g_bundled);
}

/* One message in a bundle is corrupted below the frame check: only it fails. */
Test(msg, tampered_bundle_fails_its_last_message)
{
	struct fault f = {.tamper_type = GM_FT_BUNDLE, .tamper_nth = 5};

	g_bundled = 0;
	run_expect(9, &f, 400, len_small, false, 1);
	cr_assert_gt(g_bundled, 0);
}

static size_t len_tiny(uint32_t idx)
{
	return 4 + idx % 8;
}

/*
 * A bundle's messages completed when they were copied into it; if the
 * frame is lost with its peer, each of them is reported lost (send counter
 * errors, README "Send completion"), not only the frame's first.
 */
Test(msg, a_lost_bundle_reports_each_of_its_messages)
{
	struct tsim *s = calloc(1, sizeof(*s));
	struct tnode a, b;
	uint64_t steps = 0;

	s->l.rng = 10;
	s->l.fault.dead = true;
	g_len_of = len_tiny;
	g_sends_lost = 0;
	g_sends_may_be_lost = true;
	node_init(s, &a, 0, 10, 0);
	node_init(s, &b, 1, 0, 10);
	while (g_sends_lost < 10) {
		sim_step(s);
		cr_assert_lt(++steps, 20000000, "%u of 10 sends reported lost", g_sends_lost);
	}
	cr_assert_eq(a.send_done, 10);
	cr_assert_eq(a.tx_errors, 0, "they had completed when buffered");
	cr_assert_eq(a.msg.st.bundled, 9, "the first frame carried all ten, not %lu",
	             (unsigned long)a.msg.st.bundled + 1);
	cr_assert_eq(a.msg.st.sends_lost, 10);
	for (int i = 0; i < 1000; i++)
		sim_step(s);
	cr_assert_eq(g_sends_lost, 10, "reported once each");
	g_sends_may_be_lost = false;
	node_fini(&a);
	node_fini(&b);
	mock_free(&s->l);
	free(s);
}

/*
 * Sends that wait for their acknowledgement leave from the user's buffer
 * in every frame type (gm_peer_send_zc), resends included; the buffer is
 * scribbled over at completion, so a frame read from it later fails its
 * message.
 */
Test(msg, lossy_transmit_complete_sends_from_the_user_buffer)
{
	g_send_flags = FI_TRANSMIT_COMPLETE;
	for (uint64_t seed = 1; seed <= 4; seed++) {
		run(seed, &lossy, 300, len_mixed, true);
		run(seed, &lossy, 300, len_btl, true);
	}
	g_send_flags = 0;
}

/* A wrong byte in one frame of each kind fails exactly that message, with FI_EIO. */
static void tamper(uint8_t type, size_t (*len_of)(uint32_t), unsigned frames)
{
	static const unsigned at[] = {0, 1, 7, 30, 111}; /* in units of frames / 128 */

	for (unsigned i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		struct fault f = {.tamper_type = type, .tamper_nth = 1 + at[i] * frames / 128};
		run_expect(40 + i, &f, 200, len_of, true, 1);
	}
}

static size_t len_full(uint32_t idx)
{
	(void)idx;
	return BUFSZ;
}

/*
 * One pulled message from a to b while b's acks are lost, until b has it
 * all and a has resent on a timeout; then the acks go through.  Returns
 * whether a's send had completed by then.
 */
static bool pulled_send_done_before_acks(uint64_t flags)
{
	struct tsim *s = calloc(1, sizeof(*s));
	struct tnode a, b;
	uint64_t steps = 0;
	bool early;

	cr_assert_gt(BUFSZ, RNDV);
	s->l.rng = 7;
	s->fault.hold_acks = true;
	g_len_of = len_full;
	g_send_flags = flags;
	node_init(s, &a, 0, 1, 1);
	node_init(s, &b, 1, 0, 1);
	while (b.received < 1 || !gm_rel_stats(a.rel)->timeouts) {
		sim_step(s);
		cr_assert_lt(++steps, 2000000, "no progress: %u received", b.received);
	}
	early = a.send_done;
	s->fault.hold_acks = false;
	while (!done(s)) {
		sim_step(s);
		cr_assert_lt(++steps, 4000000, "the send never completed");
	}
	cr_assert_eq(a.tx_errors, 0);
	cr_assert_eq(b.rx_errors, 0);
	g_send_flags = 0;
	node_fini(&a);
	node_fini(&b);
	mock_free(&s->l);
	free(s);
	return early;
}

/*
 * A send with FI_TRANSMIT_COMPLETE leaves from the sender's buffer
 * (gm_peer_send_zc), so it may complete only once all of it is
 * acknowledged.  (Every test here scribbles over a send's buffer at its
 * completion, so a frame read from it later would fail its message.)
 */
Test(msg, transmit_complete_send_completes_once_acknowledged)
{
	cr_assert_not(pulled_send_done_before_acks(FI_TRANSMIT_COMPLETE),
	              "the send completed before its data was acknowledged");
}

/*
 * A plain send completes once its data is buffered, a pulled one too,
 * whose frames are copied then: waiting for acks that queue behind the
 * peer's own data on a loaded link cost NPB MG 10-25 % of its time.
 */
Test(msg, pulled_send_completes_when_buffered)
{
	cr_assert(pulled_send_done_before_acks(0), "the send waited for its acknowledgement");
}

/* Node 0's data frames sent after node 1's RTS reached it, until its CTS. */
struct cts_watch {
	uint64_t rts_at; /* when node 1's RTS arrives; 0: not sent yet */
	unsigned data_before_cts;
	bool cts_sent;
};

static enum mock_verdict cts_tap(struct mock_link *l, int from, int to, const uint8_t *f,
                                 size_t len)
{
	struct cts_watch *w = ((struct tsim *)l->tap_ctx)->tap_ctx;
	uint8_t type = f[GM_ETH_HLEN + offsetof(struct gm_hdr, type)];

	(void)to;
	(void)len;
	if (from == 1 && type == GM_FT_RTS && !w->rts_at)
		w->rts_at = l->now + MOCK_HOP_US;
	if (from == 0 && w->rts_at && l->now >= w->rts_at && !w->cts_sent) {
		if (type == GM_FT_CTS)
			w->cts_sent = true;
		else if (type != GM_FT_ACK)
			w->data_before_cts++;
	}
	return MOCK_PASS;
}

/*
 * A CTS does not wait behind our own data.  Node 0 streams pulled
 * messages over a link slower than its progress (each send call takes
 * two frames), and node 1 then sends one rendezvous message: node 0's CTS
 * leaves after at most GM_TX_AHEAD of its data frames, not after the
 * window's worth that its pulls have ready.  Where the kernel's path per
 * frame is as slow as the link, two ranks exchanging large messages
 * otherwise take turns.
 */
Test(msg, a_cts_goes_ahead_of_our_queued_data)
{
	struct tsim *s = calloc(1, sizeof(*s));
	struct cts_watch w = {0};
	struct tnode a, b;
	uint64_t steps = 0;

	g_window = 256;
	s->l.rng = 3;
	s->l.fault.take_max = 2;
	g_len_of = len_full;
	node_init(s, &a, 0, 64, 1);
	node_init(s, &b, 1, 0, 64);
	s->l.tap = cts_tap;
	s->tap_ctx = &w;
	/* Node 0's pulls first: node 1 posted receives for them at init. */
	while (gm_rel_stats(a.rel)->tx_frames < 100) {
		sim_step(s);
		cr_assert_lt(++steps, 2000000, "node 0 sends nothing");
	}
	b.nmsg = 1;
	while (!done(s)) {
		sim_step(s);
		cr_assert_lt(++steps, 4000000, "no progress: %u/64 received", b.received);
	}
	cr_assert(w.cts_sent, "node 0 never sent its CTS");
	cr_assert_leq(w.data_before_cts, GM_TX_AHEAD + 2,
	              "%u data frames of node 0 left before its CTS", w.data_before_cts);
	cr_assert_eq(a.tx_errors + a.rx_errors + b.tx_errors + b.rx_errors, 0);
	node_fini(&a);
	node_fini(&b);
	mock_free(&s->l);
	free(s);
}

Test(msg, tampered_rdata_fails_its_message)
{
	tamper(GM_FT_RDATA, len_btl, 5000);
}

Test(msg, tampered_frag_fails_its_message)
{
	tamper(GM_FT_FRAG, len_mixed, 300);
}

Test(msg, tampered_start_fails_its_message)
{
	tamper(GM_FT_START, len_mixed, 100);
}

Test(msg, tampered_eager_fails_its_message)
{
	tamper(GM_FT_EAGER, len_btl, 10);
}

/* Receive buffers smaller than many messages: each completes FI_ETRUNC with what fits. */
Test(msg, truncated_receives)
{
	g_post_len = RNDV + 1000;
	for (uint64_t seed = 1; seed <= 3; seed++)
		run(seed, &lossy, 200, len_mixed, true);
}

/* Two FI_MULTI_RECV buffers taking turns: slices in order, each message whole. */
Test(msg, multi_recv)
{
	g_multi = true;
	for (uint64_t seed = 1; seed <= 4; seed++)
		run(seed, &lossy, 300, len_mixed, true);
}

/* With tx_max sends or rx_max receives out, the next is refused with -FI_EAGAIN, no more. */
Test(msg, pools_refuse_with_eagain)
{
	struct tsim *s = calloc(1, sizeof(*s));
	struct tnode a, b;
	uint64_t steps = 0;

	g_cfg.tx_max = 4;
	g_cfg.rx_max = 3;
	s->l.rng = 7;
	g_len_of = len_btl;
	node_init(s, &a, 0, 60, 0);
	node_init(s, &b, 1, 0, 60);
	cr_assert_eq(b.rx_refused, NPOST - 3, "%u of %d receives refused", b.rx_refused, NPOST);
	node_send(&a);
	cr_assert_eq(a.next_send, 4, "%u sends taken", a.next_send);
	cr_assert_eq(a.tx_refused, 1);
	while (!done(s)) {
		sim_step(s);
		cr_assert_lt(++steps, 2000000, "no progress: %u/60 received", b.received);
	}
	cr_assert_eq(b.received, 60);
	cr_assert_gt(a.tx_refused, 1, "the pool never filled again");
	node_fini(&a);
	node_fini(&b);
	mock_free(&s->l);
	free(s);
}

/* Eager and medium messages, none pulled. */
static size_t len_unpulled(uint32_t idx)
{
	return 8 + (idx * 2731u) % (RNDV - 8);
}

/*
 * A sender outruns a receiver that posts nothing (an MPI rank computing
 * while its peer streams): once its unexpected messages reach
 * FI_GAMMA_UX_PEER_MAX the receiver refuses further frames, and the
 * reliability layer holds them and the sender back (window 0) instead of
 * losing them, for longer than the peer timeout without failing the
 * peer.  Once receives are posted every message arrives, intact and in
 * order.  Before, frames over the cap were dropped after their ack: the
 * messages were lost and the receives waited for ever.
 */
static void run_ux_cap(const struct fault *fault)
{
	enum { N = 300, CAP = 16384 };
	struct tsim *s = calloc(1, sizeof(*s));
	struct tnode a, b;
	uint64_t steps = 0, until;

	g_cfg.ux_peer_max = CAP;
	g_hold_posts = true;
	s->l.rng = 11;
	s->l.fault = fault->link;
	s->fault = *fault;
	g_len_of = len_unpulled;
	node_init(s, &a, 0, N, 0);
	node_init(s, &b, 1, 0, N);
	while (!b.msg.st.ux_refused) {
		sim_step(s);
		cr_assert_lt(++steps, 2000000, "the cap was never reached: %zu bytes held",
		             b.msg.ux_bytes);
	}
	/* Twice the peer timeout (node_init: 5 s) with nothing received. */
	until = s->l.now + 10000000;
	while (s->l.now < until) {
		sim_step(s);
		cr_assert_lt(++steps, 4000000, "the simulated clock stands still");
	}
	cr_assert_eq(b.received, 0);
	cr_assert_lt(a.send_done, N, "every send completed: nothing held the sender back");
	cr_assert_eq(a.tx_errors, 0, "the sender failed its peer while it was held back");
	/* Held: the cap, and at most one frame's message (its buffer) past it. */
	cr_assert_leq(b.msg.st.ux_peak, CAP + RNDV + sizeof(struct gm_ux),
	              "%zu unexpected bytes held, cap %d", b.msg.st.ux_peak, CAP);
	g_hold_posts = false;
	while (!done(s)) {
		sim_step(s);
		cr_assert_lt(++steps, 20000000, "no progress: %u of %d received", b.received, N);
	}
	cr_assert_eq(b.received, N); /* check_recv: each intact, in order, once */
	cr_assert_eq(a.tx_errors + b.rx_errors, 0);
	cr_assert_gt(gm_rel_stats(b.rel)->rx_refused, 0);
	node_fini(&a);
	node_fini(&b);
	mock_free(&s->l);
	free(s);
}

Test(msg, unexpected_messages_over_the_cap_wait_and_none_is_lost)
{
	run_ux_cap(&clean);
}

Test(msg, unexpected_messages_over_the_cap_wait_on_a_lossy_link)
{
	run_ux_cap(&lossy);
}

/*
 * A peer that is not in the receiver's AV yet (mtl/ofi inserts peers at
 * first use) sends more than FI_GAMMA_UX_UNKNOWN_MAX: its frames past the
 * budget wait, none is dropped, and once the AV has it every message
 * arrives, in order.  Before, they were dropped after their ack.
 */
Test(msg, a_source_not_yet_in_the_av_waits_at_its_budget)
{
	enum { N = 200, CAP = 16384 };
	struct tsim *s = calloc(1, sizeof(*s));
	struct tnode a, b;
	uint64_t steps = 0;

	g_cfg.ux_unknown_max = CAP;
	g_hide_peer = true;
	s->l.rng = 5;
	g_len_of = len_unpulled;
	node_init(s, &a, 0, N, 0);
	node_init(s, &b, 1, 0, N);
	while (!b.msg.st.ux_refused) {
		sim_step(s);
		cr_assert_lt(++steps, 2000000, "the budget was never reached: %zu bytes held",
		             b.msg.unknown_bytes);
	}
	cr_assert_eq(b.received, 0, "a message from outside the AV was delivered");
	cr_assert_leq(b.msg.st.unknown_peak, CAP + RNDV + sizeof(struct gm_ux));
	g_hide_peer = false;
	g_av_gen++;
	while (!done(s)) {
		sim_step(s);
		cr_assert_lt(++steps, 20000000, "no progress: %u of %d received", b.received, N);
	}
	cr_assert_eq(b.received, N); /* check_recv: each intact, in order, once */
	cr_assert_eq(b.msg.st.unknown_dropped, 0);
	cr_assert_gt(b.msg.st.unknown_released, 0);
	node_fini(&a);
	node_fini(&b);
	mock_free(&s->l);
	free(s);
}

/* Both directions over a lossy link with pools far smaller than the traffic. */
Test(msg, small_pools_lossy)
{
	g_cfg.tx_max = 5;
	g_cfg.rx_max = 3;
	for (uint64_t seed = 1; seed <= 3; seed++)
		run(seed, &lossy, 200, len_mixed, true);
	cr_assert_gt(g_tx_refused, 0);
	cr_assert_gt(g_rx_refused, 0);
}

/* FI_MULTI_RECV slices come from the receive pool too, beyond rx_max. */
Test(msg, small_pools_multi_recv)
{
	g_multi = true;
	g_cfg.tx_max = 5;
	g_cfg.rx_max = 2;
	for (uint64_t seed = 1; seed <= 3; seed++)
		run(seed, &lossy, 200, len_mixed, true);
}

/* ---- a raw station: any frame, sequenced by node 1's engine, to node 0's protocol ---- */

struct raw {
	struct tsim *sim;
	struct gm_port *port;
	struct gm_peer *peer;    /* node 0's endpoint */
	struct gm_cts_hdr cts;   /* the last CTS node 0 sent */
	struct gm_msg_hdr rts;   /* the last RTS node 0 sent */
	struct gm_nack_hdr nack; /* the last NACK node 0 sent */
	unsigned acked, rdata, nacks, rdata_after_nack;
};

static bool raw_recv(void *ctx, struct gm_peer *peer, const struct gm_rx_frame *f)
{
	struct raw *r = ctx;

	switch (f->hdr->type) {
	case GM_FT_CTS:
		gm_cts_hdr_decode(f->body, &r->cts);
		break;
	case GM_FT_RTS:
		gm_msg_hdr_decode(f->body, &r->rts);
		break;
	case GM_FT_RDATA:
		r->rdata++;
		r->rdata_after_nack += r->nacks != 0;
		break;
	case GM_FT_NACK:
		gm_nack_hdr_decode(f->body, &r->nack);
		r->nacks++;
		break;
	default:
		cr_assert_fail("node 0 sent the raw station a frame of type %u", f->hdr->type);
	}
	return true;
}

static void raw_acked(void *ctx, struct gm_peer *peer, void *cookie)
{
	((struct raw *)ctx)->acked++;
}

static void raw_failed_frame(void *ctx, struct gm_peer *peer, void *cookie, int err)
{
	cr_assert_fail("a raw frame failed: %d", err);
}

static void raw_peer_failed(void *ctx, struct gm_peer *peer, int err)
{
	cr_assert_fail("node 0 failed for the raw station: %d", err);
}

static const struct gm_port_ops raw_ops = {.recv = raw_recv,
                                           .acked = raw_acked,
                                           .failed_frame = raw_failed_frame,
                                           .peer_failed = raw_peer_failed};

/* Send one frame (dlen zero bytes of payload after thdr) and wait for node 0's ack. */
static void raw_send(struct raw *r, uint8_t type, const void *thdr, size_t thlen, size_t dlen)
{
	static const uint8_t zeros[1024];
	const struct iovec iov = {(void *)zeros, dlen};
	unsigned want = r->acked + 1;
	uint64_t steps = 0;

	cr_assert_leq(dlen, sizeof(zeros));
	cr_assert_eq(gm_peer_send(r->peer, type, thdr, thlen, &iov, dlen ? 1 : 0, r), 0);
	while (r->acked < want) {
		sim_step(r->sim);
		cr_assert_lt(++steps, 100000, "frame of type %u never acknowledged", type);
	}
}

static void raw_msg(struct raw *r, uint8_t type, uint32_t id, uint64_t msg_len, size_t dlen)
{
	static const uint8_t zeros[1024];
	const struct gm_msg_hdr h = {
	    .msg_id = id, .msg_len = msg_len, .mcrc = gm_crc32c(0, zeros, dlen)};
	uint8_t b[sizeof(h)];

	gm_msg_hdr_encode(b, &h);
	raw_send(r, type, b, sizeof(b), dlen);
}

static void raw_frag(struct raw *r, uint8_t type, uint32_t id, uint64_t offset, size_t dlen)
{
	const struct gm_frag_hdr f = {.msg_id = id, .offset = offset};
	uint8_t b[sizeof(f)];

	gm_frag_hdr_encode(b, &f);
	raw_send(r, type, b, sizeof(b), dlen);
}

/* Every frame the protocol drops is counted, once, in the FI_GAMMA_STATS line's fields. */
Test(msg, dropped_frames_are_counted)
{
	struct tsim *s = calloc(1, sizeof(*s));
	static const uint32_t key = 0xC0FFEE;
	const struct gm_auth auth = {&key, sizeof(key)};
	struct raw r = {.sim = s};
	struct tnode a, b;
	uint64_t steps = 0;
	const uint8_t cts_unknown[sizeof(struct gm_cts_hdr)] = {0, 0, 0, 77};
	char *line = NULL;
	size_t linelen = 0;

	s->l.rng = 3;
	g_len_of = len_btl;
	g_av_port0 = 300; /* node 0 knows the raw station as fi_addr 0: it pulls from it */
	node_init(s, &a, 0, 0, 0);
	node_init(s, &b, 1, 0, 0);
	cr_assert_eq(gm_rel_port_open(b.rel, 300, GM_CLASS_HIGH, &auth, 4242, 3ull << 40, &raw_ops,
	                              &r, &r.port),
	             0);
	struct gm_addr to = {.port = PORT[0]};
	memcpy(to.mac, a.mac, 6);
	cr_assert_not_null(r.peer = gm_peer_get(r.port, &to));

	raw_msg(&r, GM_FT_EAGER, 1, 10, 5);  /* 5 bytes of a 10-byte eager message */
	raw_frag(&r, GM_FT_FRAG, 9, 0, 100); /* nothing being reassembled */
	raw_send(&r, GM_FT_CTS, cts_unknown, sizeof(cts_unknown), 0); /* no send waits */
	raw_frag(&r, GM_FT_RDATA, 4242, 0, 100);                      /* no receive pulls */
	raw_msg(&r, GM_FT_START, 2, 5000, 1000); /* lands in a posted receive ... */
	raw_frag(&r, GM_FT_FRAG, 2, 2000, 100);  /* ... which this skips ahead in */
	raw_msg(&r, GM_FT_START, 3, 5000, 1000); /* cuts message 2 short */
	raw_msg(&r, GM_FT_RTS, 4, 20000, 0);     /* cuts message 3 short; pulled: */
	while (r.cts.msg_id != 4) {
		sim_step(s);
		cr_assert_lt(++steps, 100000, "node 0 never pulled the rendezvous message");
	}
	raw_frag(&r, GM_FT_RDATA, r.cts.recv_id, 100, 100); /* not where the pull starts */
	const struct gm_nack_hdr nack = {.msg_id = 4, .recv_id = r.cts.recv_id + 1};
	uint8_t nb[sizeof(nack)];
	gm_nack_hdr_encode(nb, &nack);
	raw_send(&r, GM_FT_NACK, nb, sizeof(nb), 0); /* of no pull */

	/* The engine drops these itself (bad_hdr): straight to the port ops, as it would. */
	struct gm_addr raw_addr = {.port = 300};
	memcpy(raw_addr.mac, b.mac, 6);
	struct gm_peer *from = gm_peer_get(a.msg.port, &raw_addr);
	const struct gm_hdr hdrs[] = {{.type = GM_FT_FRAG}, {.type = GM_FT_PING}, {.type = 0}};
	for (int i = 0; i < 3; i++) /* short of a fragment header; no handler; no type */
		gm_msg_port_ops.recv(
		    &a.msg, from,
		    &(struct gm_rx_frame){.hdr = &hdrs[i], .body = "abc", .body_len = 3});

	const struct gm_msg_stats *st = &a.msg.st;
	cr_assert_eq(st->drop_malformed, 1);
	cr_assert_eq(st->drop_bad_type, 3);
	cr_assert_eq(st->drop_frag_unknown, 1);
	cr_assert_eq(st->drop_cts_unknown, 1);
	cr_assert_eq(st->drop_rdata_unknown, 1);
	cr_assert_eq(st->drop_frag_misplaced, 1);
	cr_assert_eq(st->msgs_cut, 2);
	cr_assert_eq(st->drop_rdata_misplaced, 1);
	cr_assert_eq(st->drop_no_memory, 0);
	cr_assert_eq(st->drop_nack_unknown, 1);
	cr_assert_eq(a.rx_errors, 2, "the two messages cut short failed their receives");
	cr_assert_eq(a.last_rx_err, FI_EIO);
	cr_assert_eq(a.received, 0);

	/* The fields tests parse come first, as before; the new ones are appended, but for the
	 * striped bytes, one number per rail, which stay last. */
	FILE *out = open_memstream(&line, &linelen);
	gm_msg_stats_print(&a.msg, "ifx", out);
	fclose(out);
	cr_assert_eq(
	    strcmp(line,
	           "gamma msg stats ifx port 100: unknown-source messages held 0 "
	           "released 0 dropped 0 (peak 0 B); unexpected frames refused 0 (peak 0 "
	           "B); sends lost 0; frames dropped: malformed 1 bad-type 3 "
	           "unknown-frag 1 misplaced-frag 1 unknown-cts 1 unknown-rdata 1 "
	           "misplaced-rdata 1 no-memory 0; messages cut short 2; refused "
	           "(pool full) sends 0 receives 0; rail failovers 0 revivals 0 "
	           "duplicates 0; striped pulls 0 chunks 0 bad-cts 0; nacks sent 0 "
	           "pulls nacked 0 unknown-nack 1; bundled sends 0; striped bytes by rail 0\n"),
	    0, "%s", line);
	free(line);
	gm_rel_port_close(r.port);
	node_fini(&a);
	node_fini(&b);
	mock_free(&s->l);
	free(s);
}

/* A raw station on node 1's engine (port 300) that node 0 knows as fi_addr 0. */
static void raw_open(struct tsim *s, struct raw *r, struct tnode *a, struct tnode *b)
{
	static const uint32_t key = 0xC0FFEE;
	const struct gm_auth auth = {&key, sizeof(key)};
	struct gm_addr to = {.port = PORT[0]};

	*r = (struct raw){.sim = s};
	s->l.rng = 3;
	g_len_of = len_btl;
	g_av_port0 = 300;
	node_init(s, a, 0, 0, 0);
	node_init(s, b, 1, 0, 0);
	cr_assert_eq(gm_rel_port_open(b->rel, 300, GM_CLASS_HIGH, &auth, 4242, 3ull << 40, &raw_ops,
	                              r, &r->port),
	             0);
	memcpy(to.mac, a->mac, 6);
	cr_assert_not_null(r->peer = gm_peer_get(r->port, &to));
}

static void raw_nack(struct raw *r, uint32_t msg_id, uint32_t recv_id)
{
	const struct gm_nack_hdr n = {.msg_id = msg_id, .recv_id = recv_id, .reason = FI_ENOMEM};
	uint8_t b[sizeof(n)];

	gm_nack_hdr_encode(b, &n);
	raw_send(r, GM_FT_NACK, b, sizeof(b), 0);
}

/*
 * A one-piece pull that its sender refuses (NACK): the receive fails with
 * FI_EREMOTEIO and its state goes; NACKs naming another message or
 * receive, or coming again, are dropped and counted and fail nothing.
 */
Test(msg, nack_fails_the_pull_once)
{
	struct tsim *s = calloc(1, sizeof(*s));
	struct raw r;
	struct tnode a, b;
	uint64_t steps = 0;

	raw_open(s, &r, &a, &b);
	raw_msg(&r, GM_FT_RTS, 0, 20000, 0); /* matches a posted receive: pulled */
	while (r.cts.len != 20000) {
		sim_step(s);
		cr_assert_lt(++steps, 100000, "node 0 never pulled the rendezvous message");
	}
	raw_nack(&r, 1, r.cts.recv_id);     /* another message */
	raw_nack(&r, 0, r.cts.recv_id + 1); /* another receive */
	cr_assert_eq(a.msg.st.drop_nack_unknown, 2);
	cr_assert_eq(a.rx_errors, 0, "a NACK of another pull failed this one");
	cr_assert_not(gm_list_empty(&a.msg.rndv_rx));

	raw_nack(&r, 0, r.cts.recv_id);
	for (int i = 0; i < 10; i++) /* node 0 reads its CQ */
		sim_step(s);
	cr_assert_eq(a.rx_errors, 1);
	cr_assert_eq(a.last_rx_err, FI_EREMOTEIO);
	cr_assert_eq(a.msg.st.pulls_nacked, 1);
	cr_assert(gm_list_empty(&a.msg.rndv_rx), "the pull's state is gone");
	raw_nack(&r, 0, r.cts.recv_id); /* again */
	cr_assert_eq(a.msg.st.drop_nack_unknown, 3);
	cr_assert_eq(a.rx_errors, 1);
	cr_assert_eq(a.received, 0);

	gm_rel_port_close(r.port);
	node_fini(&a);
	node_fini(&b);
	mock_free(&s->l);
	free(s);
}

/* Node 0 sends a message of iov->iov_len bytes to the raw station; returns once its RTS came. */
static void raw_announced(struct tsim *s, struct raw *r, struct tnode *a, struct iovec *iov,
                          uint64_t *steps)
{
	a->sbuf[0].busy = true;
	cr_assert_eq(gm_msg_send(&a->msg, iov, 1, 0, 0, 0, &a->sbuf[0], FI_SEND | FI_MSG), 0);
	while (r->rts.msg_len != iov->iov_len) {
		sim_step(s);
		cr_assert_lt(++*steps, 100000, "no RTS");
	}
}

/* The raw station pulls the message node 0 announced, as receive recv_id. */
static void raw_pull(struct raw *r, uint32_t recv_id, size_t len)
{
	const struct gm_cts_hdr c = {.msg_id = r->rts.msg_id, .recv_id = recv_id, .len = len};
	uint8_t cb[sizeof(c)];

	gm_cts_hdr_encode(cb, &c);
	raw_send(r, GM_FT_CTS, cb, sizeof(cb), 0);
}

/* After node 0 closed: the raw station reads on until a NACK comes. */
static void raw_await_nack(struct tsim *s, struct raw *r, struct tnode *b, uint64_t *steps)
{
	while (!r->nacks) {
		mock_advance(&s->l);
		mock_deliver(&s->l);
		gm_rel_flush(b->rel, s->l.now);
		cr_assert_lt(++*steps, 200000, "no NACK came");
	}
}

/* Frees what is left once node 0's endpoint closed (its protocol and port are gone). */
static void closed_fini(struct tsim *s, struct raw *r, struct tnode *a, struct tnode *b)
{
	gm_rel_port_close(r->port);
	node_free(a);
	node_fini(b);
	mock_free(&s->l);
	free(s);
}

/*
 * A sender closing in the middle of a one-piece pull tells the receiver
 * (NACK, FI_ESHUTDOWN) after the data it had sent, when its window has
 * room: it does not leave the receive waiting for the peer timeout.
 */
Test(msg, closing_sender_nacks_a_pull_in_progress)
{
	struct tsim *s = calloc(1, sizeof(*s));
	const size_t len = 200 * 1024; /* well over a window of frames */
	uint8_t *mem = malloc(len);
	struct iovec iov = {mem, len};
	struct raw r;
	struct tnode a, b;
	uint64_t steps = 0;

	raw_open(s, &r, &a, &b);
	memset(mem, 0x33, len);
	raw_announced(s, &r, &a, &iov, &steps);
	raw_pull(&r, 77, len);
	/* Mid-pull, at a moment acks have opened node 0's window. */
	for (;;) {
		mock_deliver(&s->l);
		if (r.rdata > WINDOW && gm_peer_can_send(a.msg.conns[0]->peer))
			break;
		gm_msg_progress(&a.msg);
		gm_rel_flush(a.rel, s->l.now);
		gm_rel_flush(b.rel, s->l.now);
		mock_advance(&s->l);
		cr_assert_lt(++steps, 100000, "the pull never got going");
	}
	cr_assert_lt(r.rdata, (len + MTU - 1) / (MTU - 100), "the pull is not over yet");
	/* What gm_ep_close does: shutdown, drain, close the protocol, then the port. */
	gm_msg_shutdown(&a.msg);
	gm_rel_port_drain(a.msg.port, s->l.now);
	cr_assert_eq(a.msg.st.nacks_sent, 1);
	gm_msg_close(&a.msg);
	cr_assert_eq(a.msg.tx_pool.used, 0);
	gm_rel_port_close(a.msg.port);
	unsigned before = r.rdata;
	raw_await_nack(s, &r, &b, &steps);
	cr_assert_eq(r.nack.msg_id, r.rts.msg_id);
	cr_assert_eq(r.nack.recv_id, 77);
	cr_assert_eq(r.nack.reason, FI_ESHUTDOWN);
	cr_assert_geq(r.rdata, before, "the data in flight came before the NACK");
	cr_assert_eq(r.rdata_after_nack, 0);

	closed_fini(s, &r, &a, &b);
	free(mem);
}

/*
 * The same with the window full of RDATA, as a pull in full flow leaves
 * it: the NACK takes the slot data frames leave free, and goes at once.
 */
Test(msg, closing_sender_nacks_a_pull_with_a_full_window)
{
	struct tsim *s = calloc(1, sizeof(*s));
	const size_t len = 200 * 1024;
	uint8_t *mem = malloc(len);
	struct iovec iov = {mem, len};
	struct raw r;
	struct tnode a, b;
	uint64_t steps = 0;

	raw_open(s, &r, &a, &b);
	memset(mem, 0x44, len);
	raw_announced(s, &r, &a, &iov, &steps);
	raw_pull(&r, 78, len);
	/* Node 0 serves the pull, and nothing of it is acked yet. */
	while (gm_peer_can_send(a.msg.conns[0]->peer)) {
		gm_msg_progress(&a.msg);
		gm_rel_flush(a.rel, s->l.now);
		cr_assert_lt(++steps, 100000, "the window never filled");
	}
	cr_assert_eq(gm_rel_peer_in_flight(a.msg.conns[0]->peer), WINDOW - 1);
	gm_msg_shutdown(&a.msg);
	gm_rel_port_drain(a.msg.port, s->l.now);
	cr_assert_eq(a.msg.st.nacks_sent, 1);
	cr_assert_eq(gm_rel_peer_in_flight(a.msg.conns[0]->peer), WINDOW, "the NACK is in flight");
	gm_msg_close(&a.msg);
	gm_rel_port_close(a.msg.port);
	raw_await_nack(s, &r, &b, &steps);
	cr_assert_eq(r.nack.msg_id, r.rts.msg_id);
	cr_assert_eq(r.nack.recv_id, 78);
	cr_assert_eq(r.nack.reason, FI_ESHUTDOWN);
	cr_assert_eq(r.rdata, WINDOW - 1, "the window's data came before the NACK");
	cr_assert_eq(r.rdata_after_nack, 0);

	closed_fini(s, &r, &a, &b);
	free(mem);
}

/*
 * A sender closing with a message announced (RTS) and not pulled yet
 * tells the receiver too: a NACK naming no receive.
 */
Test(msg, closing_sender_nacks_an_rts_not_yet_pulled)
{
	struct tsim *s = calloc(1, sizeof(*s));
	const size_t len = 100 * 1024;
	uint8_t *mem = malloc(len);
	struct iovec iov = {mem, len};
	struct raw r;
	struct tnode a, b;
	uint64_t steps = 0;

	raw_open(s, &r, &a, &b);
	memset(mem, 0x55, len);
	raw_announced(s, &r, &a, &iov, &steps);
	gm_msg_shutdown(&a.msg);
	gm_rel_port_drain(a.msg.port, s->l.now);
	cr_assert_eq(a.msg.st.nacks_sent, 1);
	gm_msg_close(&a.msg);
	gm_rel_port_close(a.msg.port);
	raw_await_nack(s, &r, &b, &steps);
	cr_assert_eq(r.nack.msg_id, r.rts.msg_id);
	cr_assert_eq(r.nack.recv_id, 0);
	cr_assert_eq(r.nack.reason, FI_ESHUTDOWN);
	cr_assert_eq(r.rdata, 0);

	closed_fini(s, &r, &a, &b);
	free(mem);
}

/*
 * The receiving side of that NACK: the RTS waits unexpected, marked, and
 * the receive that matches it later fails at once with FI_EREMOTEIO,
 * pulling nothing (no CTS).  A NACK naming no receive and no RTS of this
 * peer is dropped and counted.
 */
Test(msg, nack_of_an_unexpected_rts_fails_its_receive)
{
	struct tsim *s = calloc(1, sizeof(*s));
	struct raw r;
	struct tnode a, b;
	const struct gm_msg_hdr h = {
	    .msg_id = 0, .mflags = GM_M_TAGGED, .tag = 7, .msg_len = 30000};
	uint8_t hb[sizeof(h)];
	struct tbuf tb;
	uint64_t steps = 0;

	raw_open(s, &r, &a, &b);
	gm_msg_hdr_encode(hb, &h);
	raw_send(&r, GM_FT_RTS, hb, sizeof(hb), 0); /* node 0 posted untagged receives only */
	cr_assert_not(gm_list_empty(&a.msg.unexpected[1]));
	raw_nack(&r, 1, 0); /* another message */
	cr_assert_eq(a.msg.st.drop_nack_unknown, 1);
	raw_nack(&r, 0, 0);
	cr_assert_eq(a.msg.st.pulls_nacked, 1);
	raw_nack(&r, 0, 0); /* again */
	cr_assert_eq(a.msg.st.drop_nack_unknown, 2);

	tb = (struct tbuf){.nd = &a, .mem = malloc(BUFSZ), .busy = true};
	const struct iovec iov = {tb.mem, BUFSZ};
	cr_assert_eq(gm_msg_recv(&a.msg, &iov, 1, FI_ADDR_UNSPEC, 7, 0, &tb, FI_RECV | FI_TAGGED),
	             0);
	while (!a.rx_errors) {
		sim_step(s);
		cr_assert_lt(++steps, 100000, "the receive never completed");
	}
	cr_assert_eq(a.last_rx_err, FI_EREMOTEIO);
	cr_assert_eq(r.cts.len, 0, "a CTS pulled from the closed sender");
	cr_assert(gm_list_empty(&a.msg.unexpected[1]));
	cr_assert(gm_list_empty(&a.msg.rndv_rx));
	cr_assert_eq(a.received, 0);

	gm_rel_port_close(r.port);
	node_fini(&a);
	node_fini(&b);
	free(tb.mem);
	mock_free(&s->l);
	free(s);
}

/*
 * The receiver's pool is full when a rendezvous message matches: its CTS
 * waits for room instead of failing the receive (its sender would wait to
 * be pulled for as long as it answers), and goes once the pool has some.
 */
Test(msg, cts_waits_for_a_full_pool)
{
	struct tsim *s = calloc(1, sizeof(*s));
	struct raw r;
	struct tnode a, b;
	struct gm_pool *pool = &a.msg.tx_pool;
	void **held;
	size_t nheld = 0;
	uint64_t steps = 0;

	raw_open(s, &r, &a, &b);
	cr_assert_not_null(held = calloc(pool->max, sizeof(*held)));
	while ((held[nheld] = gm_pool_get(pool)))
		nheld++;
	raw_msg(&r, GM_FT_RTS, 0, 20000, 0); /* matches a posted receive */
	for (int i = 0; i < 100; i++)
		sim_step(s);
	cr_assert_eq(a.rx_errors, 0, "the receive failed (%d) instead of waiting", a.last_rx_err);
	cr_assert_neq(r.cts.len, 20000, "a CTS went with the pool full");
	for (size_t i = 0; i < nheld; i++)
		gm_pool_put(pool, held[i]);
	free(held);
	while (r.cts.len != 20000) {
		sim_step(s);
		cr_assert_lt(++steps, 100000, "the CTS never went");
	}
	cr_assert_eq(r.cts.msg_id, 0);
	cr_assert_eq(a.rx_errors, 0);
	raw_nack(&r, 0, r.cts.recv_id); /* the raw station sends no data: end the pull */
	for (int i = 0; i < 10; i++)
		sim_step(s);
	cr_assert_eq(a.last_rx_err, FI_EREMOTEIO);

	gm_rel_port_close(r.port);
	node_fini(&a);
	node_fini(&b);
	mock_free(&s->l);
	free(s);
}
