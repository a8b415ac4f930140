/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The reliability engine: ports, peers, sequence numbers, acknowledgements,
 * retransmission, flow control and the buffer pool.  Pure logic: it reads no
 * clock (time comes in as now_us) and touches no socket (frames go out
 * through gm_rel_link.send), so the unit tests run two engines over an
 * in-memory lossy link.  gm_net.c glues it to the AF_PACKET link.
 *
 * It implements the gm_port / gm_peer half of gm_net.h (gm_peer_*,
 * gm_port_num); gm_net.c adds port number allocation and the socket filter.
 *
 * Sequence space: a port picks a random session per open; its frames to any
 * peer start at seq = session (so a receiver knows where a stream starts
 * from the first frame it sees, whichever that is), and compare
 * wraparound-safe.
 *
 * Nothing a frame says is believed before it passed its port's key and MAC
 * (or CRC) check: bad frames are counted and dropped before any peer state
 * exists or changes.  A known peer's new session is a restart only once the
 * peer proved it is live (the handshake in gm_rel.c).
 */
#ifndef GM_REL_H
#define GM_REL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "gm_defaults.h"
#include "gm_net.h"

struct gm_rel;

struct gm_rel_cfg {
	uint8_t mac[6]; /* our source MAC */
	uint16_t ethertype;
	bool dq;
	unsigned low_share;
	unsigned window; /* frames in flight per peer, and receive window */
	unsigned rto_us;
	unsigned peer_timeout_ms;
	size_t max_frame; /* largest gm frame (gm_hdr + body), i.e. the MTU */
	size_t max_bufs;  /* buffer pool cap in frames, 0: default */
	/*
	 * Out-of-order frames held for all peers together (0: half the pool;
	 * at most the pool less one window, so that transmit always finds
	 * buffers) and per peer (0 or more than the window: the window).
	 */
	size_t ooo_max;
	unsigned ooo_peer_max;
	/* Peers that received frames may create (0: GM_DEFAULT_PEER_MAX). */
	size_t peer_max;
	/* One rail of several: ops->stalled is asked from this stall on (0: never). */
	unsigned stall_us;
};

struct gm_rel_link {
	/*
	 * Send n Ethernet frames of one class, in order.  Returns how many
	 * went (the rest are queued again and retried), or a negative errno
	 * (treated as 0 sent).  The frames may be referenced only during the
	 * call.
	 */
	int (*send)(void *ctx, enum gm_class cls, const struct gm_txf *frames, unsigned n);
	/* Whether the interface is up and has carrier (NULL: always). */
	bool (*up)(void *ctx);
	void *ctx;
};

int gm_rel_create(const struct gm_rel_cfg *cfg, const struct gm_rel_link *link,
                  struct gm_rel **out);
void gm_rel_destroy(struct gm_rel *rel);

/*
 * session: random per open (the incarnation); nonce0: random below 2^62,
 * where the port's frame nonces start (gm_mac.h).
 */
int gm_rel_port_open(struct gm_rel *rel, uint16_t num, enum gm_class cls,
                     const struct gm_auth *auth, uint32_t session, uint64_t nonce0,
                     const struct gm_port_ops *ops, void *ctx, struct gm_port **out);
/*
 * Before a port closes: send every ack it owes now, delayed or not, and
 * whatever the queue holds, so that peers see their last frames delivered
 * (FI_DELIVERY_COMPLETE) instead of retransmitting into silence.  Runs due
 * timers, hence may call the port's callbacks.
 */
void gm_rel_port_drain(struct gm_port *port, uint64_t now_us);
/* Drops every peer and queued frame of the port, without callbacks. */
void gm_rel_port_close(struct gm_port *port);
struct gm_rel *gm_rel_port_rel(const struct gm_port *port);
void *gm_rel_link_ctx(const struct gm_rel *rel);

/* One received Ethernet frame (from the destination MAC on). */
void gm_rel_input(struct gm_rel *rel, const void *frame, size_t len, uint64_t now_us);
/*
 * End of a progress pass: run due timers (retransmit, peer failure,
 * delayed acks), then send queued frames and owed acks.  Returns frames sent.
 */
int gm_rel_flush(struct gm_rel *rel, uint64_t now_us);
/* When gm_rel_flush next has timer work (UINT64_MAX: none). */
uint64_t gm_rel_next_deadline(const struct gm_rel *rel);
/* Frames waiting in the double queue (the link refused them). */
size_t gm_rel_queued(const struct gm_rel *rel);
struct gm_net_stats *gm_rel_stats(struct gm_rel *rel);

/* Test hooks: peer state, for assertions. */
uint32_t gm_rel_peer_in_flight(const struct gm_peer *peer);
bool gm_rel_peer_failed(const struct gm_peer *peer);
/* Peers on all ports, and out-of-order frames held for them. */
size_t gm_rel_peers(const struct gm_rel *rel);
size_t gm_rel_ooo_held(const struct gm_rel *rel);
/* The seq the peer's next in-order frame must carry if it uses this session. */
uint32_t gm_rel_peer_next_seq(const struct gm_peer *peer, uint32_t session);

#endif /* GM_REL_H */
