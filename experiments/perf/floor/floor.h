/* gamma-floor: shared types (see gamma-floor.c for the method). */
#ifndef FL_FLOOR_H
#define FL_FLOOR_H

#include <stdbool.h>
#include <stdint.h>

#include "../../pingpong/pattern.h"
#include "link.h"

/*
 * After the Ethernet header every frame starts with 8 bytes: kind, repetition,
 * a 16-bit count (the frames of its message: FL_MSG and FL_MSG_BACK only,
 * else zero), a 32-bit sequence number (network order).  A ping is just
 * these 8 bytes; a data frame continues with the pattern of its sequence
 * number up to the payload size.  Nothing else: no checksum, no ack.
 */
#define FL_HDR 8
enum fl_kind {
	FL_HELLO = 1, /* client -> server: struct fl_plan; answered by FL_HELLO_ACK */
	FL_HELLO_ACK,
	FL_DATA,
	FL_STOP, /* server -> client: the interval is over; struct fl_count */
	FL_PING,
	FL_PONG,
	FL_BYE, /* client -> server: done; answered by FL_BYE_ACK */
	FL_BYE_ACK,
	FL_MSG,      /* client -> server: a frame of a message (msg.c) */
	FL_MSG_BACK, /* server -> client: a frame of its answer */
};

struct fl_hdr {
	uint8_t kind, rep;
	uint16_t count;
	uint32_t seq;
};

/* HELLO's body (network order). */
struct fl_plan {
	uint32_t size;        /* data frame payload bytes, header included */
	uint32_t interval_us; /* how long the receiver counts */
};

/* STOP's body (network order): what the receiver counted in one repetition. */
struct fl_count {
	uint64_t frames;   /* verified frames after the first, inside the interval */
	uint64_t bytes;    /* their payload bytes */
	uint64_t ns;       /* from the first frame's arrival to the last one's */
	uint64_t verified; /* frames checked byte for byte, the first included */
	uint64_t lost;     /* gaps in the sequence numbers not filled later */
	uint64_t invalid;  /* wrong length or pattern */
	uint64_t late;     /* arrived after a later frame (filled a gap) */
};

enum fl_test {
	FL_TEST_LAT = 1,
	FL_TEST_BW = 2,
	FL_TEST_MMSG = 4,
	FL_TEST_RING = 8,
	FL_TEST_MSG = 16
};

#define FL_MSG_SIZES_MAX 16

/*
 * --mac-key: data frames of bw and mmsg, and every frame of msg's messages
 * both ways, carry gamma's frame MAC (gm_mac.h): after the floor's 8 header
 * bytes, the rest of a struct gm_hdr's 60 (its nonce and tag where gamma has
 * them), sealed by the sender and checked by the receiver, so the figure is
 * what a raw-frame transport pays with a MAC on every frame and nothing else.
 */
#define FL_MAC_ZONE 52
struct gm_mac;
struct iovec;

struct fl_opts {
	bool server;
	uint8_t peer[ETH_ALEN]; /* --client MAC */
	const char *iface;
	uint16_t ethertype;
	unsigned tests, reps, iters, warmup, size, batch;
	unsigned msg_sizes[FL_MSG_SIZES_MAX], n_msg_sizes; /* --msg-sizes */
	double seconds, timeout;
	struct gm_mac *mac; /* --mac-key, or NULL */
};

/* Where a data frame's pattern starts after the Ethernet header. */
static inline unsigned fl_data_off(const struct gm_mac *mac)
{
	return FL_HDR + (mac ? FL_MAC_ZONE : 0);
}

/* ---- the message test (msg.c) ---- */

/* seq = message id << FL_MSG_SHIFT | frame index */
#define FL_MSG_SHIFT      10
#define FL_MSG_FRAMES_MAX (1u << FL_MSG_SHIFT)

struct fl_msg {
	uint32_t id;
	uint8_t rep;
	unsigned count;      /* frames */
	unsigned body, last; /* payload bytes of every frame but the last, of the last */
};

struct fl_msg_server {
	bool active, answered;
	struct fl_msg m; /* the message being received, or the last one */
	unsigned got;
	uint64_t seen[FL_MSG_FRAMES_MAX / 64];
	unsigned long frames, answers, invalid;
};

/* Sends every frame of m as kind, in sendmmsg batches, sealed with mac
 * unless NULL: 0 or -1 (message on stderr). */
int fl_msg_send(struct fl_link *l, const struct fl_msg *m, uint8_t kind,
                const struct pp_pattern *pat, unsigned batch, struct gm_mac *mac);
/* 0 and *idx when frame f (len bytes) is a well-formed frame of a message
 * with its pattern (and, with mac, its MAC); -1 otherwise. */
int fl_msg_frame(const struct fl_hdr *h, const uint8_t *f, unsigned len, unsigned body,
                 const struct pp_pattern *pat, struct gm_mac *mac, unsigned *idx);
/* The server's end: takes one FL_MSG frame, answers a message once it holds
 * all of it.  0, or -1 when sending failed. */
int fl_msg_serve(struct fl_msg_server *s, struct fl_link *l, const struct fl_hdr *h,
                 const uint8_t *f, unsigned len, unsigned body, const struct pp_pattern *pat,
                 unsigned batch, struct gm_mac *mac);
/* The client's end, every --msg-sizes size: CSV rows; 0, 1 on failure, 3 on
 * corrupt data. */
int fl_msg_run(struct fl_link *l, const struct fl_opts *o, const struct pp_pattern *pat);

double fl_now(void);
/* The clock of the ring's arrival stamps (fl_link_stamp). */
double fl_wall(void);
void fl_hdr_put(uint8_t *p, const struct fl_hdr *h);
/* 0 when the frame has a floor header (*h filled), -1 when it is too short. */
int fl_hdr_get(const uint8_t *frame, unsigned len, struct fl_hdr *h);
/*
 * Seals a data frame: hdr holds its Ethernet and floor headers and the MAC
 * zone, payload the rest.  The nonce is the frame's kind, repetition and
 * sequence number, so no two frames a sender seals with different bytes
 * share one (a message sent again is the same bytes).
 */
void fl_seal(struct gm_mac *mac, uint8_t *hdr, const struct iovec *payload);
/* One control frame to the peer (retried while buffers are full): 0 or -1. */
int fl_send_ctrl(struct fl_link *l, const struct fl_hdr *h, const void *body, unsigned n);

int fl_server(struct fl_link *l, const struct fl_opts *o);
int fl_client(struct fl_link *l, const struct fl_opts *o);

#endif
