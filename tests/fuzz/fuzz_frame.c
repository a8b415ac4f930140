/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer harness for everything a received frame touches: the
 * reliability engine's parser (gm_rel_input: decode, checksum, port, key,
 * session, ack/sack, sequence) and, for frames that pass it, the
 * active-message handlers of the message protocol (gm_msg.h), reached
 * through the real port ops.  The input is a script (fuzz_format.h) of frames
 * from two fake peers mixed with receives, sends and clock ticks, so the
 * handlers meet posted receives, unexpected messages, rendezvous pulls and
 * peer failures.  Receive buffers are malloc'd to their exact size, so
 * AddressSanitizer sees any byte written past a posted buffer; every
 * object is torn down after each input, so LeakSanitizer sees leaks.
 *
 * Linked here from the provider: the net's engine (gm_wire.c gm_crc.c
 * gm_mac.c gm_rel.c gm_dq.c) and the message protocol (gm_msg*.c
 * gm_match.c gm_iov.c).  This file implements the protocol's upcalls (the
 * CQ, counters and AV it reports to) as checks.
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/providers/fi_prov.h>

#include "fuzz_format.h"
#include "gm_msg.h"
#include "gm_rel.h"

#define MAX_POSTED 64
#define SRC_BYTES  (1u << 20)

/* ---- the upcalls: what the libfabric objects around the protocol do ---- */

static const struct fi_provider fuzz_prov = {.name = "gamma-fuzz"};
static struct gm_addr g_peer_addr[FZ_NPEERS];
static uint64_t g_completions;

/* A completion must name a context the harness handed out. */
static void check_context(void *context)
{
	if (context && ((uintptr_t)context & 0xffff0000u) != 0xc0de0000u) {
		fprintf(stderr, "completion with a context never posted: %p\n", context);
		abort();
	}
}

static void check_cqe(const struct gm_msg_cqe *e)
{
	check_context(e->context);
	if (e->err < 0) {
		fprintf(stderr, "error completion with error %d\n", e->err);
		abort();
	}
	if (!e->err &&
	    (e->len > SRC_BYTES * 4 || (e->src != FI_ADDR_NOTAVAIL && e->src >= FZ_NPEERS))) {
		fprintf(stderr, "completion of %zu bytes from %lu: impossible\n", e->len,
		        (unsigned long)e->src);
		abort();
	}
	g_completions++;
}

static void up_done(void *ctx, enum gm_msg_side side, uint64_t op_flags, const struct gm_msg_cqe *e)
{
	check_cqe(e);
}

static void up_report(void *ctx, const struct gm_msg_cqe *e)
{
	check_cqe(e);
}

static void up_nothing(void *ctx)
{
}

static const struct gm_addr *up_av_addr(void *ctx, fi_addr_t fi_addr)
{
	return fi_addr < FZ_NPEERS ? &g_peer_addr[fi_addr] : NULL;
}

static fi_addr_t up_av_find(void *ctx, const struct gm_addr *addr)
{
	for (int i = 0; i < FZ_NPEERS; i++)
		if (!memcmp(&g_peer_addr[i], addr, sizeof(*addr)))
			return (fi_addr_t)i;
	return FI_ADDR_NOTAVAIL;
}

static uint64_t up_av_gen(void *ctx)
{
	return 1;
}

static uint64_t up_now_ms(void *ctx);

static const struct gm_msg_upcalls fuzz_upcalls = {
    .done = up_done,
    .report = up_report,
    .send_lost = up_nothing,
    .corrupt = up_nothing,
    .av_addr = up_av_addr,
    .av_find = up_av_find,
    .av_gen = up_av_gen,
    .now_ms = up_now_ms,
};

/* Caps small enough that inputs reach them. */
static const struct gm_msg_cfg fuzz_cfg = {
    .prov = &fuzz_prov,
    .max_body = FZ_MTU - sizeof(struct gm_hdr),
    .rndv_threshold = 16384,
    .ux_max = 1u << 20,
    .ux_peer_max = 256u << 10,
    .ux_unknown_max = 64u << 10,
    .ux_unknown_hold_ms = 20,
    .tx_max = 24,
    .rx_max = 24,
};

/* ---- the fake link: every frame we send is sanity-checked and dropped ---- */

static int link_send(void *ctx, enum gm_class cls, const struct gm_txf *frames, unsigned n)
{
	(void)ctx, (void)cls;
	for (unsigned i = 0; i < n; i++) {
		static uint8_t f[GM_ETH_HLEN + FZ_MTU];
		struct gm_hdr h;

		if (frames[i].len > sizeof(f)) {
			fprintf(stderr, "the engine sent an oversized frame\n");
			abort();
		}
		gm_txf_gather(&frames[i], f);
		if (gm_hdr_decode(f + GM_ETH_HLEN, frames[i].len - GM_ETH_HLEN, &h) ||
		    gm_frame_check(f + GM_ETH_HLEN, sizeof(h) + h.len)) {
			fprintf(stderr, "the engine sent a malformed frame\n");
			abort();
		}
	}
	return (int)n;
}

/* ---- input reader ---- */

struct rd {
	const uint8_t *p;
	size_t left;
};

static uint8_t rd8(struct rd *r)
{
	if (!r->left)
		return 0;
	r->left--;
	return *r->p++;
}

static uint16_t rd16(struct rd *r)
{
	uint16_t hi = rd8(r);

	return (uint16_t)(hi << 8 | rd8(r));
}

static void rdn(struct rd *r, void *dst, size_t n)
{
	size_t k = n < r->left ? n : r->left;

	memcpy(dst, r->p, k);
	memset((uint8_t *)dst + k, 0, n - k);
	r->p += k;
	r->left -= k;
}

/* ---- one run ---- */

struct run {
	struct gm_rel *rel;
	struct gm_port *port;
	struct gm_msg msg;
	uint8_t *bufs[MAX_POSTED];
	unsigned nbufs;
	uint64_t now;
};

static const uint8_t our_mac[6] = {0x02, 0, 0, 0, 0, 0x01};
static uint8_t *g_src; /* what our sends carry */

static uint32_t peer_session(unsigned i)
{
	return 0x70000000u + i * 0x01000000u;
}

static void do_frame(struct run *run, struct rd *r)
{
	/* Up to FZ_OVERSIZE bytes beyond the MTU: links may hand up what the NIC took. */
	uint8_t ctl = rd8(r), frame[GM_ETH_HLEN + FZ_MTU + FZ_OVERSIZE];
	unsigned pi = rd8(r) % FZ_NPEERS;
	size_t blen = rd16(r) % (FZ_MTU + FZ_OVERSIZE - sizeof(struct gm_hdr) + 1), len;
	uint8_t *gm = frame + GM_ETH_HLEN;
	struct gm_hdr h;

	memcpy(frame, our_mac, 6);
	memcpy(frame + 6, g_peer_addr[pi].mac, 6);
	frame[12] = GM_ETHERTYPE_DEFAULT >> 8;
	frame[13] = GM_ETHERTYPE_DEFAULT & 0xff;
	rdn(r, gm, sizeof(h));
	rdn(r, gm + sizeof(h), blen);
	len = GM_ETH_HLEN + sizeof(h) + blen;

	/* Raw decode (no validation), repair, re-encode. */
	gm_hdr_decode(gm, sizeof(h), &h);
	if (!(ctl & FZ_RAW_SHAPE)) {
		h.version = GM_WIRE_VERSION;
		h.type = (uint8_t)(h.type % (GM_FT_MAX - 1) + 1);
		h.len = (uint16_t)blen;
	}
	if (!(ctl & FZ_RAW_ADDR)) {
		h.dst_port = FZ_PORT;
		h.src_port = g_peer_addr[pi].port;
		h.key = FZ_KEY;
		h.session = peer_session(pi);
	}
	if (!(ctl & FZ_RAW_FLAGS))
		h.flags = h.type == GM_FT_ACK ? (uint8_t)GM_F_ACK : (uint8_t)GM_F_SEQ;
	if (!(ctl & FZ_RAW_SEQ)) {
		struct gm_peer *pr = gm_peer_get(run->port, &g_peer_addr[pi]);

		if (pr)
			h.seq = gm_rel_peer_next_seq(pr, h.session);
	}
	gm_hdr_encode(gm, &h);
	if (!(ctl & FZ_RAW_CSUM))
		gm_frame_seal(gm, sizeof(h) + (h.len <= blen ? h.len : blen));
	if (ctl & FZ_CUT)
		len = rd8(r) * len / 256;
	gm_rel_input(run->rel, frame, len, run->now);
}

static void do_recv(struct run *run, struct rd *r)
{
	uint8_t fl = rd8(r);
	size_t len = rd16(r) * ((fl & FZ_BIG) ? 64u : 1u);
	uint8_t tag = rd8(r);
	uint64_t flags = FI_RECV | ((fl & FZ_TAGGED) ? FI_TAGGED : FI_MSG);
	fi_addr_t src = (fl & FZ_DIRECTED) ? (fi_addr_t)(tag & 1) : FI_ADDR_UNSPEC;
	struct iovec iov;
	uint8_t *buf;

	if (run->nbufs == MAX_POSTED)
		return;
	if ((fl & FZ_MULTI) && !(fl & FZ_TAGGED))
		flags |= FI_MULTI_RECV;
	/* Exact size (at least 1 byte, for a valid pointer): ASan guards the end. */
	buf = malloc(len ? len : 1);
	if (!buf)
		return;
	run->bufs[run->nbufs] = buf;
	iov = (struct iovec){.iov_base = buf, .iov_len = len};
	if (gm_msg_recv(&run->msg, &iov, 1, src, tag, (fl & 0x80) ? ~0ull : 0,
	                (void *)(uintptr_t)(0xc0de0000u + run->nbufs), flags) == 0)
		run->nbufs++;
	else
		free(buf);
}

static void do_send(struct run *run, struct rd *r)
{
	uint8_t fl = rd8(r);
	size_t len = rd16(r) * ((fl & FZ_BIG) ? 64u : 1u);
	fi_addr_t dest = rd8(r) % FZ_NPEERS;
	uint64_t flags = FI_SEND | ((fl & FZ_TAGGED) ? FI_TAGGED : FI_MSG) |
	                 ((fl & FZ_DATA) ? FI_REMOTE_CQ_DATA : 0);
	struct iovec iov = {.iov_base = g_src, .iov_len = len < SRC_BYTES ? len : SRC_BYTES};

	gm_msg_send(&run->msg, &iov, 1, dest, fl, 42, (void *)(uintptr_t)0xc0deffffu, flags);
}

static void run_setup(struct run *run)
{
	const struct gm_rel_cfg cfg = {
	    .mac = {0x02, 0, 0, 0, 0, 0x01},
	    .ethertype = GM_ETHERTYPE_DEFAULT,
	    .dq = true,
	    .low_share = 8,
	    .window = 16,
	    .rto_us = 1000,
	    .peer_timeout_ms = 50,
	    .max_frame = FZ_MTU,
	    .max_bufs = 128,
	};
	const struct gm_rel_link link = {.send = link_send};
	struct gm_msg *m = &run->msg;

	memset(run, 0, sizeof(*run));
	run->now = 1000000;
	gm_msg_init(m, &fuzz_cfg, &fuzz_upcalls, run);
	if (gm_rel_create(&cfg, &link, &run->rel) ||
	    gm_rel_port_open(run->rel, FZ_PORT, GM_CLASS_HIGH,
	                     &(struct gm_auth){&(uint32_t){FZ_KEY}, sizeof(uint32_t)}, FZ_SESSION,
	                     1, &gm_msg_port_ops, m, &m->port))
		abort();
	run->port = m->port;
}

static uint64_t up_now_ms(void *ctx)
{
	return ((struct run *)ctx)->now / 1000;
}

/* In the order gm_ep.c closes an endpoint, then the domain's net. */
static void run_teardown(struct run *run)
{
	gm_msg_close(&run->msg);
	if (run->msg.tx_pool.used || run->msg.rx_pool.used) {
		fprintf(stderr, "close left %zu tx and %zu rx out of their pools\n",
		        run->msg.tx_pool.used, run->msg.rx_pool.used);
		abort();
	}
	gm_rel_port_close(run->port);
	gm_rel_destroy(run->rel);
	for (unsigned i = 0; i < run->nbufs; i++)
		free(run->bufs[i]);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	for (unsigned i = 0; i < FZ_NPEERS; i++)
		g_peer_addr[i] = (struct gm_addr){.mac = {0x02, 0, 0, 0, 1, (uint8_t)i},
		                                  .port = (uint16_t)(100 + i)};
	g_src = malloc(SRC_BYTES);
	for (unsigned i = 0; i < SRC_BYTES; i++)
		g_src[i] = (uint8_t)(i * 7 + 3);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rd r = {data, size};
	struct run run;

	run_setup(&run);
	while (r.left) {
		uint8_t op = rd8(&r) % FZ_NOPS;

		if (op < FZ_RECV)
			do_frame(&run, &r);
		else if (op == FZ_RECV)
			do_recv(&run, &r);
		else if (op == FZ_SEND)
			do_send(&run, &r);
		else if (op == FZ_TICK) {
			run.now += rd8(&r) * 1000ull;
			gm_rel_flush(run.rel, run.now);
			gm_msg_progress(&run.msg);
		} else {
			gm_msg_cancel(&run.msg,
			              (void *)(uintptr_t)(0xc0de0000u + rd8(&r) % MAX_POSTED));
		}
		gm_rel_flush(run.rel, run.now);
		gm_msg_progress(&run.msg);
	}
	run_teardown(&run);
	return 0;
}
