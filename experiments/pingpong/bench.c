/* Latency, bandwidth, message rate and loaded latency, both roles. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "report.h"

enum { K_LAT = 1, K_BW, K_ACK, K_BG, K_BGACK, K_BGSTOP };

#define WINDOW_BYTES (64u << 20)

static uint64_t tag(int kind, uint64_t seq)
{
	return (uint64_t)kind << 56 | (seq & ((1ull << 56) - 1));
}

uint32_t pp_bw_window(const struct pp_plan *p, uint32_t size)
{
	uint32_t cap = size ? WINDOW_BYTES / size : p->window;
	if (cap < 1)
		cap = 1;
	return p->window < cap ? p->window : cap;
}

static void *alloc_buf(size_t len)
{
	void *p = NULL;
	if (posix_memalign(&p, 4096, len ? len : 1))
		return NULL;
	memset(p, 0, len);
	return p;
}

int pp_bench_init(struct pp_bench *b, struct pp_fab *f, const struct pp_opts *o)
{
	const struct pp_plan *p = &o->plan;
	memset(b, 0, sizeof(*b));
	b->f = f;
	b->o = o;
	b->p = p;
	b->server = o->server;

	size_t rx = 8 * (size_t)p->window;
	for (uint32_t i = 0; i < p->n_sizes; i++)
		if (p->sizes[i] > rx)
			rx = p->sizes[i];
	for (uint32_t i = 0; i < p->n_bw_sizes; i++) {
		size_t w = (size_t)pp_bw_window(p, p->bw_sizes[i]) * p->bw_sizes[i];
		if (w > rx)
			rx = w;
	}
	uint32_t n_ops = p->window > p->bg_window ? p->window : p->bg_window;
	b->rx = alloc_buf(rx);
	b->ops = calloc(n_ops, sizeof(*b->ops));
	b->opp = calloc(n_ops + 1, sizeof(*b->opp));
	if (p->tests & PP_TEST_BG) {
		b->bg.rx = alloc_buf((size_t)p->bg_window * p->bg_size);
		b->bg.ops = calloc(p->bg_window, sizeof(*b->bg.ops));
		if (!b->bg.rx || !b->bg.ops || pp_pattern_init(&b->bgpat, p->bg_size))
			goto oom;
	}
	if (!b->rx || !b->ops || !b->opp)
		goto oom;
	return 0;
oom:
	pp_err("out of memory for %zu bytes of receive buffers", rx);
	return -1;
}

void pp_bench_fini(struct pp_bench *b)
{
	free(b->rx);
	free(b->ops);
	free(b->opp);
	free(b->bg.rx);
	free(b->bg.ops);
	pp_pattern_fini(&b->pat);
	pp_pattern_fini(&b->bgpat);
}

/* Checks length, tag and every byte of a received message. */
static int verify(struct pp_bench *b, const struct pp_pattern *pat, const char *what, int kind,
                  uint64_t seq, uint8_t *buf, const struct pp_op *op)
{
	if (op->len != pat->size) {
		pp_err("%s: %s message #%" PRIu64 " has %zu bytes, expected %zu", PP_CORRUPTION,
		       what, seq, op->len, pat->size);
		return -1;
	}
	if (op->tag != tag(kind, seq)) {
		pp_err("%s: %s message #%" PRIu64 " arrived with tag %#" PRIx64
		       ", expected %#" PRIx64,
		       PP_CORRUPTION, what, seq, op->tag, tag(kind, seq));
		return -1;
	}
	if (b->p->corrupt && b->server && !b->corrupted && op->len) {
		buf[op->len / 2] ^= 0x20;
		b->corrupted = true;
	}
	long bad = pp_pattern_check(pat, seq, buf);
	if (bad) {
		const uint8_t *want = pp_pattern_msg(pat, seq);
		pp_err("%s: %zu-byte %s message #%" PRIu64 ": byte %ld is 0x%02x, expected 0x%02x",
		       PP_CORRUPTION, pat->size, what, seq, bad - 1, buf[bad - 1], want[bad - 1]);
		return -1;
	}
	b->verified_msgs++;
	b->verified_bytes += op->len;
	return 0;
}

/*
 * The client times every round trip and reports half the median: on a shared
 * host the mean mostly measures how long the scheduler kept a busy-polling
 * process off the CPU, the median what the transport itself takes.
 */
static int lat_loop(struct pp_bench *b, uint32_t size, uint32_t warmup, uint32_t iters,
                    double *usec)
{
	struct pp_fab *f = b->f;
	uint32_t total = warmup + iters;
	struct pp_op *rop = &b->ops[0], *sop = &b->ops[1];
	struct pp_op *both[2] = {rop, sop};
	double *rtt = NULL;
	int ret = -1;

	if (pp_pattern_init(&b->pat, size))
		return -1;
	if (!b->server && !(rtt = malloc(sizeof(*rtt) * (iters ? iters : 1)))) {
		pp_err("out of memory for %u round-trip times", iters);
		return -1;
	}
	if (b->server && pp_recv(f, 0, b->rx, size, tag(K_LAT, 0), rop))
		goto out;
	for (uint32_t i = 0; i < total; i++) {
		uint64_t ping = 2 * (uint64_t)i, pong = ping + 1;

		if (b->server) {
			if (pp_wait1(f, rop, "a ping") ||
			    verify(b, &b->pat, "ping", K_LAT, ping, b->rx, rop))
				goto out;
			/* The next receive is posted before the reply leaves. */
			if (i + 1 < total && pp_recv(f, 0, b->rx, size, tag(K_LAT, ping + 2), rop))
				goto out;
			if (pp_send(f, 0, pp_pattern_msg(&b->pat, pong), size, tag(K_LAT, pong),
			            sop) ||
			    pp_wait1(f, sop, "a pong to be sent"))
				goto out;
		} else {
			double t0 = pp_now();

			if (pp_recv(f, 0, b->rx, size, tag(K_LAT, pong), rop) ||
			    pp_send(f, 0, pp_pattern_msg(&b->pat, ping), size, tag(K_LAT, ping),
			            sop) ||
			    pp_wait(f, both, 2, "a pong"))
				goto out;
			if (i >= warmup)
				rtt[i - warmup] = pp_now() - t0;
			if (verify(b, &b->pat, "pong", K_LAT, pong, b->rx, rop))
				goto out;
		}
	}
	*usec = rtt && iters ? pp_median(rtt, iters) / 2 * 1e6 : 0;
	ret = 0;
out:
	free(rtt);
	return ret;
}

int pp_lat(struct pp_bench *b, uint32_t size, double *usec)
{
	return lat_loop(b, size, b->p->warmup, b->p->iters, usec);
}

/*
 * Thousands of round trips (0.1-0.5 s), not a handful: on the VMs here the
 * first ~10000 round trips after a pause ran 1.5-2x slower (8 B over gamma:
 * 7-9 us, then 4.2-5.5), which inflated whichever size came first.
 */
int pp_connect_warmup(struct pp_bench *b)
{
	double ignored;
	return lat_loop(b, 8, 0, PP_SETUP_ROUND_TRIPS, &ignored);
}

static int post_window(struct pp_bench *b, uint32_t size, uint32_t window, uint64_t k)
{
	for (uint32_t j = 0; j < window; j++)
		if (pp_recv(b->f, 0, b->rx + (size_t)j * size, size, tag(K_BW, k * window + j),
		            &b->ops[j]))
			return -1;
	return 0;
}

int pp_bw(struct pp_bench *b, uint32_t size, uint32_t window, uint32_t windows, double *per_sec)
{
	struct pp_fab *f = b->f;
	uint32_t warm = windows / 10 ? windows / 10 : 1, total = warm + windows;
	double t0 = pp_now();

	if (pp_pattern_init(&b->pat, size))
		return -1;
	for (uint32_t j = 0; j < window; j++)
		b->opp[j] = &b->ops[j];
	b->opp[window] = &b->ack;
	if (b->server && post_window(b, size, window, 0))
		return -1;
	for (uint64_t k = 0; k < total; k++) {
		if (k == warm)
			t0 = pp_now();
		if (b->server) {
			/* Checking each message as it lands overlaps the check with the
			 * arrival of the rest of the window; its buffer is then posted at
			 * once for the next window, whose tags cannot match this one. */
			for (uint32_t j = 0; j < window; j++) {
				uint8_t *buf = b->rx + (size_t)j * size;
				uint64_t seq = k * window + j;
				if (pp_wait1(f, &b->ops[j], "a window of bandwidth messages") ||
				    verify(b, &b->pat, "bandwidth", K_BW, seq, buf, &b->ops[j]))
					return -1;
				if (k + 1 < total &&
				    pp_recv(f, 0, buf, size, tag(K_BW, seq + window), &b->ops[j]))
					return -1;
			}
			if (pp_send(f, 0, b->ackbuf, 0, tag(K_ACK, k), &b->ack) ||
			    pp_wait1(f, &b->ack, "an ack to be sent"))
				return -1;
		} else {
			if (pp_recv(f, 0, b->ackbuf, sizeof(b->ackbuf), tag(K_ACK, k), &b->ack))
				return -1;
			for (uint32_t j = 0; j < window; j++) {
				uint64_t seq = k * window + j;
				if (pp_send(f, 0, pp_pattern_msg(&b->pat, seq), size,
				            tag(K_BW, seq), &b->ops[j]))
					return -1;
			}
			if (pp_wait(f, b->opp, window + 1, "the ack of a bandwidth window"))
				return -1;
			if (b->ack.len != 0) {
				pp_err("%s: ack of %zu bytes, expected 0", PP_CORRUPTION,
				       b->ack.len);
				return -1;
			}
		}
	}
	double t = pp_now() - t0;
	*per_sec = (double)windows * window / t;
	return 0;
}

/* The background stream runs from the wait loops of the foreground. */
static int bg_client_window(struct pp_bench *b)
{
	struct pp_fab *f = b->f;
	struct pp_bg *g = &b->bg;
	uint32_t w = b->p->bg_window, size = b->p->bg_size;
	if (pp_recv(f, 1, g->ackbuf, sizeof(g->ackbuf), tag(K_BGACK, g->window), &g->ack))
		return -1;
	for (uint32_t j = 0; j < w; j++) {
		uint64_t seq = g->window * w + j;
		if (pp_send(f, 1, pp_pattern_msg(&b->bgpat, seq), size, tag(K_BG, seq), &g->ops[j]))
			return -1;
	}
	return 0;
}

static int bg_client_pump(void *arg)
{
	struct pp_bench *b = arg;
	struct pp_bg *g = &b->bg;
	if (g->finished || !g->ack.done)
		return 0;
	for (uint32_t j = 0; j < b->p->bg_window; j++)
		if (!g->ops[j].done)
			return 0;
	g->window++;
	g->bytes += (uint64_t)b->p->bg_window * b->p->bg_size;
	if (!g->running) {
		g->finished = true;
		return 0;
	}
	return bg_client_window(b);
}

static int bg_server_post(struct pp_bench *b)
{
	struct pp_bg *g = &b->bg;
	uint32_t w = b->p->bg_window, size = b->p->bg_size;
	for (uint32_t j = 0; j < w; j++)
		if (pp_recv(b->f, 1, g->rx + (size_t)j * size, size, tag(K_BG, g->window * w + j),
		            &g->ops[j]))
			return -1;
	return 0;
}

static int bg_server_pump(void *arg)
{
	struct pp_bench *b = arg;
	struct pp_bg *g = &b->bg;
	uint32_t w = b->p->bg_window, size = b->p->bg_size;
	if (!g->ack.done)
		return 0;
	for (uint32_t j = 0; j < w; j++)
		if (!g->ops[j].done)
			return 0;
	for (uint32_t j = 0; j < w; j++)
		if (verify(b, &b->bgpat, "background", K_BG, g->window * w + j,
		           g->rx + (size_t)j * size, &g->ops[j]))
			return -1;
	uint64_t acked = g->window++;
	g->bytes += (uint64_t)w * size;
	if (bg_server_post(b))
		return -1;
	/* Acks are empty: always injectable in practice; otherwise wait for it. */
	return pp_send(b->f, 1, g->ackbuf, 0, tag(K_BGACK, acked), &g->ack);
}

static int bg_start(struct pp_bench *b)
{
	struct pp_bg *g = &b->bg;
	struct pp_fab *f = b->f;
	g->window = g->bytes = 0;
	g->finished = false;
	g->running = true;
	if (b->server) {
		g->ack.done = 1;
		if (pp_recv(f, 1, g->ackbuf, sizeof(g->ackbuf), tag(K_BGSTOP, 0), &g->stop) ||
		    bg_server_post(b))
			return -1;
		f->pump = bg_server_pump;
	} else {
		if (bg_client_window(b))
			return -1;
		f->pump = bg_client_pump;
	}
	f->pump_arg = b;
	return 0;
}

static int bg_stop(struct pp_bench *b)
{
	struct pp_bg *g = &b->bg;
	struct pp_fab *f = b->f;
	if (b->server) {
		/* The stop follows the last window's ack, so no data is left in flight. */
		if (pp_wait1(f, &g->stop, "the end of the background stream"))
			return -1;
		f->pump = NULL;
		for (uint32_t j = 0; j < b->p->bg_window; j++) {
			if (pp_cancel(f, 1, &g->ops[j]))
				return -1;
			b->opp[j] = &g->ops[j];
		}
		b->opp[b->p->bg_window] = &g->ack;
		return pp_wait(f, b->opp, b->p->bg_window + 1, "cancelled background receives");
	}
	g->running = false;
	double deadline = pp_now() + f->timeout_s;
	while (!g->finished) {
		if (pp_wait1(f, &g->ack, "the last background ack"))
			return -1;
		if (bg_client_pump(b))
			return -1;
		if (!g->finished && pp_progress(f))
			return -1;
		if (pp_now() > deadline) {
			pp_err("timed out waiting for the background sends to complete");
			return -1;
		}
	}
	f->pump = NULL;
	return pp_send(f, 1, g->ackbuf, 0, tag(K_BGSTOP, 0), &g->stop) ||
	       pp_wait1(f, &g->stop, "the background stop to be sent");
}

int pp_lat_loaded(struct pp_bench *b, double *usec, double *bg_mbs)
{
	double t0 = pp_now();
	if (bg_start(b) || pp_lat(b, 8, usec) || bg_stop(b))
		return -1;
	*bg_mbs = b->bg.bytes / (pp_now() - t0) / 1e6;
	return 0;
}
