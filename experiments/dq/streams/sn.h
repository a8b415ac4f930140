/* gamma-stream-node: one node's part of the double-queue stream experiment. */
#ifndef SN_H
#define SN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SN_MAX_PEERS 64
#define SN_MIN_SIZE  32 /* the message header */
#define SN_MAX_SIZE  (4u << 20)

enum sn_role { SN_GAMMA_SEND, SN_GAMMA_RECV, SN_TCP_SEND, SN_TCP_RECV, SN_NOW };

struct sn_opts {
	enum sn_role role;
	const char *dir;  /* gamma: where endpoints publish their addresses */
	const char *name; /* gamma: stream name, part of the address file names */
	const char *iface;
	int node;
	int peers[SN_MAX_PEERS];
	int n_peers;
	uint32_t size;
	bool high;          /* tclass FI_TC_LOW_LATENCY, else FI_TC_BULK_DATA */
	bool paced;         /* one message in flight, acknowledged by the receiver */
	double gap;         /* paced: seconds of silence after each acknowledgement */
	uint32_t bulk_size; /* gamma-send: also stream low-class bulk from this process */
	int bulk_window;
	int window;                   /* stream mode: sends in flight */
	bool poll;                    /* busy-poll the CQ instead of blocking */
	double start, warm, duration; /* CLOCK_MONOTONIC seconds */
	const char *start_file;       /* the start time is written here once all are ready */
	uint64_t count;               /* stop after this many messages (0: by time) */
	double timeout;               /* seconds past the end before giving up */
	const char *addr;             /* tcp-send: receiver's IPv4 address */
	int port;
	const char *cc; /* tcp-send: congestion control */
	int sndbuf;
};

int sn_parse_opts(int argc, char **argv, struct sn_opts *o);
void sn_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- messages (msg.c) ---------------------------------------------------- */

enum sn_type { SN_DATA = 1, SN_ACK = 2, SN_END = 3, SN_END_ACK = 4 };

/* Every message starts with this, little-endian as the host (one machine). */
struct sn_hdr {
	uint32_t magic;
	uint16_t type;
	uint16_t src;
	uint32_t seq;  /* DATA: per (sender, receiver) from 0; END: count sent */
	uint32_t size; /* whole message, header included */
	uint64_t send_ns;
	uint64_t check; /* hash of the header fields above */
};
#define SN_MAGIC 0x52545347u /* "GSTR" */

uint64_t sn_now_ns(void);
double sn_now(void);
void sn_sleep_until(double t);
/* After "ready": learn the start time (--start-file) and sleep until it.
 * Updates o->start; 0 or -1 (no start file before the timeout). */
int sn_await_start(const struct sn_opts *o);
/* Header and the payload pattern of (src, seq). */
void sn_fill(void *buf, enum sn_type type, int src, uint32_t seq, uint32_t size);
/* 0: intact.  Else a message says what is wrong. */
int sn_verify(const void *buf, size_t len, char *why, size_t why_len);

/* ---- statistics (stats.c) ----------------------------------------------- */

/* One-way times of the messages sent inside the measurement window. */
struct sn_stats {
	uint64_t n, bytes;
	double sum_us, max_us;
	double *v;
	size_t cap;
};

void sn_stats_add(struct sn_stats *s, double us, uint32_t bytes);
/* "msgs=.. sum_us=.. mean_us=.. p50_us=.. p99_us=.. max_us=.." */
void sn_stats_print(struct sn_stats *s, const char *prefix);
void sn_stats_free(struct sn_stats *s);

/* Per-peer sequence book-keeping of a receiver: every seq exactly once. */
struct sn_seen {
	uint8_t *bits;
	uint32_t cap;
	uint64_t got, dup;
};
bool sn_seen_mark(struct sn_seen *s, uint32_t seq); /* false: a duplicate */
/* Seqs 0..count-1 all present (and nothing else)? */
bool sn_seen_complete(const struct sn_seen *s, uint32_t count);

/* ---- the two transports ---------------------------------------------------- */

int sn_gamma_send(const struct sn_opts *o);
int sn_gamma_recv(const struct sn_opts *o);
int sn_tcp_send(const struct sn_opts *o);
int sn_tcp_recv(const struct sn_opts *o);

#endif
