/* The measurements of gamma-pingpong. Client and server run the same
 * schedule, derived from the plan, so they agree on every message. */
#ifndef PP_BENCH_H
#define PP_BENCH_H

#include "fab.h"
#include "pattern.h"

struct pp_bg {
	bool running;  /* client: keep starting windows */
	bool finished; /* client: last window acked; server: stop received */
	uint64_t window;
	uint64_t bytes;
	uint8_t *rx;
	struct pp_op *ops;
	struct pp_op ack, stop;
	char ackbuf[8];
};

struct pp_bench {
	struct pp_fab *f;
	const struct pp_opts *o;
	const struct pp_plan *p;
	bool server;
	struct pp_pattern pat, bgpat;
	uint8_t *rx;
	struct pp_op *ops;
	struct pp_op **opp;
	struct pp_op ack;
	char ackbuf[8];
	bool corrupted; /* --selftest-corrupt already flipped its byte */
	uint64_t verified_msgs, verified_bytes;
	struct pp_bg bg;
};

int pp_bench_init(struct pp_bench *b, struct pp_fab *f, const struct pp_opts *o);
void pp_bench_fini(struct pp_bench *b);
/* Every bandwidth window holds at most this many bytes of receive buffers. */
uint32_t pp_bw_window(const struct pp_plan *p, uint32_t size);

/* PP_SETUP_ROUND_TRIPS untimed 8 B round trips, so that connection set-up
 * (e.g. ofi_rxm's) and a cold start stay out of the first measurement. */
#define PP_SETUP_ROUND_TRIPS 20000
int pp_connect_warmup(struct pp_bench *b);
/* Each returns the client's measurement (the server's value is meaningless). */
int pp_lat(struct pp_bench *b, uint32_t size, double *usec);
int pp_bw(struct pp_bench *b, uint32_t size, uint32_t window, uint32_t windows, double *per_sec);
/* 8 B latency while the second endpoint streams bulk data; also the bulk MB/s. */
int pp_lat_loaded(struct pp_bench *b, double *usec, double *bg_mbs);

#endif
