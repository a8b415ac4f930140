/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gm_net: the provider's lower half — a reliable, ordered frame service over
 * raw Ethernet, in the spirit of rxd over udp.
 *
 *   gm_net   one per (process, interface): owns the AF_PACKET socket and its
 *            rings (gm_link.c), the two-priority transmit queues (gm_dq.c)
 *            and every port opened on it.  A libfabric domain holds one.
 *   gm_port  one per endpoint: a port number on the interface, allocated
 *            race-free across processes and released when the process dies.
 *   gm_peer  reliability state between one local port and one remote
 *            (MAC, port): sequence numbers, acks, retransmission, window
 *            (gm_rel.c).  Created on first send to, or first frame from, it.
 *
 * The upper half (messages, matching, libfabric objects) sees only this
 * header: it hands sequenced frames to gm_peer_send() and gets them back on
 * the other side through gm_port_ops.recv(), exactly once and in order.
 *
 * Locking: none inside.  The caller serializes every call on one gm_net
 * (the domain lock).  Callbacks run inside gm_net_progress() and may call
 * gm_peer_send().
 *
 * Errors are negative libfabric codes (-FI_EAGAIN, -FI_ENODEV, ...).
 */
#ifndef GM_NET_H
#define GM_NET_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <time.h>

#include "gm_log.h"
#include "gm_wire.h"

/* The raw address of an endpoint: what fi_getname returns, 8 bytes. */
struct gm_addr {
	uint8_t mac[6];
	uint16_t port; /* host order */
};

enum gm_class { GM_CLASS_HIGH = 0, GM_CLASS_LOW = 1 };

/*
 * One frame for the link: iovcnt pieces sent back to back as one frame of
 * len bytes, the first from the Ethernet header on.  A zero-copy frame
 * (gm_peer_send_zc) has its header in the engine's buffer and its payload
 * in the user's memory.
 */
struct gm_txf {
	struct iovec *iov;
	unsigned iovcnt;
	size_t len;
};
/* Its bytes gathered into dst (f->len of them). */
void gm_txf_gather(const struct gm_txf *f, void *dst);

/*
 * What a net is opened with.  A 0 in ethertype, window, rto_us,
 * peer_timeout_ms or rx_ring_kb takes the default (gm_defaults.h); a 0
 * window is GM_DEFAULT_WINDOW frames but at most GM_DEFAULT_WINDOW_BYTES
 * of them, and in any case at most half the receive ring.
 */
struct gm_net_params {
	const char *ifname;       /* FI_GAMMA_IFACE (one name) */
	uint16_t ethertype;       /* FI_GAMMA_ETHERTYPE */
	bool dq;                  /* FI_GAMMA_DQ: two queues (true) or one FIFO */
	unsigned low_share;       /* FI_GAMMA_LOW_SHARE: 1 low frame per N high when both wait */
	unsigned window;          /* FI_GAMMA_WINDOW: frames in flight per peer */
	unsigned rto_us;          /* FI_GAMMA_RTO: initial retransmit timeout */
	unsigned peer_timeout_ms; /* FI_GAMMA_PEER_TIMEOUT: silence before a peer is failed */
	unsigned rx_ring_kb;      /* FI_GAMMA_RX_RING: receive ring size */
	unsigned ooo_max;         /* FI_GAMMA_OOO_MAX: out-of-order frames held (0: default) */
	unsigned ooo_peer_max;    /* FI_GAMMA_OOO_PEER_MAX: ... per peer (0: the window) */
	unsigned peer_max;        /* FI_GAMMA_PEER_MAX: peers frames may create (0: default) */
	bool stats;               /* FI_GAMMA_STATS: print the counters to stderr at close */
	/* FI_GAMMA_RAIL_TIMEOUT, for a net that is one rail of several: when
	 * ops->stalled starts being asked.  0: a single rail, never asked. */
	unsigned rail_timeout_ms;
	/* FI_GAMMA_RAWD: the helper that opens the sockets for a process
	 * without CAP_NET_RAW (gm_rawd.h); NULL or "": none.  Must outlive the net. */
	const char *rawd;
	struct gm_log log; /* where warnings go; {0}: nowhere */
};

/*
 * How a port authenticates frames (gm_hdr.tag, gm_wire.h): len 0, no key;
 * len 4, a 32-bit job key (host order) and CRC-32C; len GM_SECRET_MIN to
 * GM_SECRET_MAX, a secret and a MAC (gm_mac.h).  Anything else: -FI_EINVAL.
 */
struct gm_auth {
	const void *key;
	size_t len;
};

struct gm_net;
struct gm_port;
struct gm_peer;

/*
 * A frame delivered to the upper half.  hdr is decoded to host order; body
 * points at the type-specific header (still in wire order, decode it with
 * gm_wire.h) followed by the payload.  Valid only during the callback.
 */
struct gm_rx_frame {
	const struct gm_hdr *hdr;
	const void *body;
	size_t body_len;
	/* Checked by CRC (a port without a secret): body_crc is gm_crc32c(0,
	 * body), so the upper half need not read the body again for its CRC. */
	bool crc_known;
	uint32_t body_crc;
};

struct gm_port_ops {
	/*
	 * A sequenced frame from peer, in order, exactly once.  Returning false
	 * refuses it for now, and must leave everything as it was: the frame
	 * is held (else dropped, and retransmitted), the peer's frames stop
	 * there and our acks show it a window of 0, which keeps it waiting but
	 * not failing us, until gm_peer_rx_resume offers the frame again.
	 */
	bool (*recv)(void *ctx, struct gm_peer *peer, const struct gm_rx_frame *f);
	/* The frame sent with this cookie was acknowledged by the peer. */
	void (*acked)(void *ctx, struct gm_peer *peer, void *cookie);
	/*
	 * The peer stopped answering (no ack for peer_timeout_ms) or restarted.
	 * Every unacked frame is dropped; their cookies are passed to
	 * failed_frame() first so the upper half can complete them in error.
	 */
	void (*failed_frame)(void *ctx, struct gm_peer *peer, void *cookie, int err);
	void (*peer_failed)(void *ctx, struct gm_peer *peer, int err);
	/*
	 * Whether an operation still waits on peer (see gm_peer_await).
	 * Asked only after the peer has been silent for a while; NULL: the
	 * peer stays awaited until it fails.
	 */
	bool (*awaited)(void *ctx, struct gm_peer *peer);
	/*
	 * Rails (gm_net_params.rail_timeout_ms): frames to peer have gone
	 * unacknowledged for stalled_us; asked at every retransmission
	 * timeout and, once stalled_us reached half the rail timeout, every
	 * RTO floor after.  The upper half may move the frames to another rail
	 * (gm_peer_reclaim).  now_us: the net's clock, as gm_peer_last_heard's.
	 */
	void (*stalled)(void *ctx, struct gm_peer *peer, uint64_t now_us, uint64_t stalled_us);
	/* A dormant peer (gm_peer_reclaim) answered: it takes frames again. */
	void (*revived)(void *ctx, struct gm_peer *peer);
};

/* Counters a user can read (FI_GAMMA_STATS=1 prints them at close). */
struct gm_net_stats {
	uint64_t tx_frames, rx_frames, tx_bytes, rx_bytes;
	/* Retransmissions that left (fast: SACK-triggered); timeouts: RTO expiries. */
	uint64_t retransmits, fast_retransmits, timeouts;
	uint64_t dup_dropped, ooo_buffered, acks_sent, acks_rcvd;
	uint64_t bad_csum, bad_hdr, bad_port, bad_key, bad_version;
	uint64_t ring_full_drops, peers_failed;
	uint64_t bad_msg_crc; /* messages failed by their end-to-end CRC (gm_msg_recv.c) */
	uint64_t tx_high, tx_low;
	/* bad_mac: failed the MAC (forged, corrupt, wrong secret); dropped first. */
	uint64_t bad_mac;
	/* Caps: out-of-order frames dropped at FI_GAMMA_OOO_MAX / _OOO_PEER_MAX;
	 * frames from new sources refused at FI_GAMMA_PEER_MAX, and unused
	 * peers reclaimed to make room. */
	uint64_t ooo_dropped, peers_refused, peers_reclaimed;
	/* Restarts accepted, and challenges sent to prove one (gm_rel.c). */
	uint64_t restarts, restart_challenges;
	uint64_t probes; /* keepalive probes sent to silent, awaited peers */
	/* Rails: peers whose frames were moved to another rail (gm_peer_reclaim),
	 * the frames moved, dormant peers that answered again, and frames this
	 * side skipped because their sender moved them (GM_FT_VOID). */
	uint64_t rails_failed, frames_moved, rails_revived, frames_voided;
	uint64_t tx_calls; /* hand-overs to the link (a sendmmsg each, gm_net_kick) */
	/* Frames the upper half could not take yet (its caps): held, the window shown 0. */
	uint64_t rx_refused;
};

int gm_net_open(const struct gm_net_params *p, struct gm_net **out);
void gm_net_close(struct gm_net *net);
void gm_net_mac(const struct gm_net *net, uint8_t mac[6]);
/* Largest gm_hdr.len this interface carries (MTU minus struct gm_hdr). */
size_t gm_net_max_body(const struct gm_net *net);
/* Receive, deliver, acknowledge, retransmit, transmit.  Returns events done. */
int gm_net_progress(struct gm_net *net);
/* Transmit what gm_peer_send queued, now, without receiving. */
int gm_net_flush(struct gm_net *net);
/*
 * A send was queued: transmit now if it is the first since the last
 * progress pass, else leave it for that pass.  A lone request (a ping-pong,
 * an MPI send) leaves at once; a burst of sends (a message-rate window, an
 * ob1 pipeline) costs one system call per pass instead of one per send.
 */
void gm_net_kick(struct gm_net *net);
/* Milliseconds until a timer (retransmission, delayed ack) or a queued frame
 * needs progress; -1: none. */
int gm_net_timeout_ms(const struct gm_net *net);
/*
 * Blocking, in two halves so that a caller serializing the net under a lock
 * can drop the lock while blocked: gm_net_wait_prepare (under the lock)
 * transmits what is queued and fills *ws with what to wait for and how long;
 * gm_net_wait_block touches only *ws, never the net.  Wait up to timeout_ms
 * (-1: forever) until progress may do something.
 */
struct gm_net_waitset {
	struct pollfd pfd[16]; /* the caller may add 13: other rails' nets, a wake-up */
	nfds_t nfds;
	bool bounded;
	struct timespec ts;
};
void gm_net_wait_prepare(struct gm_net *net, int timeout_ms, struct gm_net_waitset *ws);
int gm_net_wait_block(struct gm_net_waitset *ws);
/* Both halves, for single-threaded callers. */
int gm_net_wait(struct gm_net *net, int timeout_ms);
/* A descriptor that polls readable when gm_net_progress has work. */
int gm_net_fd(const struct gm_net *net);
void gm_net_get_stats(const struct gm_net *net, struct gm_net_stats *st);
/* A message failed its end-to-end CRC (gm_wire.h, mcrc): count it. */
void gm_net_count_bad_msg(struct gm_net *net);

/* port 0: any free port.  auth: how frames are stamped and checked (NULL: no key). */
int gm_port_open(struct gm_net *net, uint16_t port, enum gm_class cls, const struct gm_auth *auth,
                 const struct gm_port_ops *ops, void *ctx, struct gm_port **out);
/*
 * Replace the port's key or secret, for frames sealed and checked from now
 * on (queued frames are sealed when they leave).  For a secret learnt only
 * after the port's address was published (btl gamma's job secret).
 */
int gm_port_set_auth(struct gm_port *port, const struct gm_auth *auth);
/*
 * Seal frames to this peer with its job's secret (16 to 64 bytes), not the
 * port's: a peer of another job (MPI_Comm_spawn, connect/accept), whose
 * endpoint checks frames under its own job's secret.  Its frames to us come
 * under ours, so nothing changes on receive.  -FI_EINVAL for other sizes.
 */
int gm_peer_set_auth(struct gm_peer *peer, const struct gm_auth *auth);
/* dst takes the secret src is bound to; false if src has none (or no memory). */
bool gm_peer_share_auth(struct gm_peer *dst, const struct gm_peer *src);
/*
 * Send the acks the port owes (delayed ones included) and what is queued,
 * now: call before closing, while the port's callbacks may still run.
 */
void gm_port_drain(struct gm_port *port);
void gm_port_close(struct gm_port *port);
uint16_t gm_port_num(const struct gm_port *port);
/* The key its frames carry: the 4-byte key, the secret's id (gm_mac.h), or 0. */
uint32_t gm_port_key(const struct gm_port *port);

struct gm_peer *gm_peer_get(struct gm_port *port, const struct gm_addr *remote);
const struct gm_addr *gm_peer_addr(const struct gm_peer *peer);
void gm_peer_set_ctx(struct gm_peer *peer, void *ctx);
void *gm_peer_ctx(const struct gm_peer *peer);
/* True while the peer can take another frame (window and buffers). */
bool gm_peer_can_send(const struct gm_peer *peer);
/* True once the peer stopped answering, until it shows up restarted. */
bool gm_peer_failed(const struct gm_peer *peer);
/* Frames of ours to the peer queued here, not yet handed to the link. */
unsigned gm_peer_queued(const struct gm_peer *peer);
/*
 * An operation now waits on the peer although nothing of ours may be in
 * flight to it (a directed receive, a send waiting for its CTS, a pull
 * waiting for data): a peer that died then would never be noticed.  From
 * now on, while ops->awaited says so, the net probes the peer whenever it
 * has been silent for a quarter of peer_timeout_ms, and fails it
 * (peer_failed, -FI_EIO) once it has been silent for peer_timeout_ms.
 */
void gm_peer_await(struct gm_peer *peer);

/*
 * Rails.  gm_peer_reclaim: the rail to peer is given up while another rail
 * to the same endpoint works.  Every frame in flight to it is handed back,
 * oldest first, by fn (its type, and its body: the type header and payload
 * as queued; valid during the call) and forgotten without failing
 * anything; in their place the peer sends VOID frames (gm_wire.h), which
 * make the other side skip them.  The peer is then dormant: it takes no
 * frame (gm_peer_can_send false), retransmits its VOIDs as probes, is never
 * failed for silence, and once they are acknowledged it calls ops->revived
 * and works again with its sequence space intact.  Returns frames handed
 * back.
 */
typedef void (*gm_reclaim_fn)(void *ctx, uint8_t type, const void *body, size_t len, void *cookie);
unsigned gm_peer_reclaim(struct gm_peer *peer, gm_reclaim_fn fn, void *ctx);
bool gm_peer_dormant(const struct gm_peer *peer);
/* Nothing of ours in flight to peer. */
bool gm_peer_idle(const struct gm_peer *peer);
/* The port the peer belongs to. */
struct gm_port *gm_peer_port(const struct gm_peer *peer);
/* When a valid frame from peer last arrived (ops->stalled's clock); 0: never. */
uint64_t gm_peer_last_heard(const struct gm_peer *peer);
/*
 * Resend the oldest frame to peer now, with the retransmission timeout
 * back at its floor, once per stall (acknowledgements end a stall).
 * Returns when that was (0: nothing in flight).  A rail that answers
 * again after a pause of the whole peer (every rail backed off) gets this
 * fresh chance before it is given up.
 */
uint64_t gm_peer_retry(struct gm_peer *peer, uint64_t now_us);
/* A keepalive probe to peer (acked, never delivered), unless something is in flight. */
int gm_peer_probe(struct gm_peer *peer);
/* False when the peer's interface is down or has no carrier (IFF_RUNNING). */
bool gm_peer_link_up(const struct gm_peer *peer);

/*
 * Queue one sequenced frame of the given type to peer: thdr (the encoded
 * type-specific header, thdr_len bytes) followed by the iov payload.  The
 * data is copied, so the caller's buffers are free on return.  The total
 * must fit gm_net_max_body().  Returns 0, -FI_EAGAIN when the window is
 * full (retry after progress), or -FI_EIO when the peer has failed.
 */
int gm_peer_send(struct gm_peer *peer, uint8_t type, const void *thdr, size_t thdr_len,
                 const struct iovec *iov, size_t iov_cnt, void *cookie);

/*
 * gm_peer_send for a type header that depends on its payload (the message
 * CRC, gm_wire.h): the payload is copied first, its CRC-32C chained from
 * *crc into *crc in the same pass, then enc(thdr, *crc, arg) writes the
 * thdr_len bytes of type header in front of it.  One pass over the user's
 * data, whether the frame carries a MAC or a CRC.
 */
typedef void (*gm_thdr_fn)(void *thdr, uint32_t crc, void *arg);
int gm_peer_send_crc(struct gm_peer *peer, uint8_t type, size_t thdr_len, gm_thdr_fn enc, void *arg,
                     const struct iovec *iov, size_t iov_cnt, uint32_t *crc, void *cookie);

/*
 * gm_peer_send_crc without the copy: the frame's payload stays in the
 * caller's iov (at most GM_ZC_IOV pieces, else it is copied after all),
 * read once now for its CRC and again by every transmission (its MAC) and
 * retransmission.  So the caller must leave those bytes alone until the
 * frame's cookie is acked or failed (ops->acked, ops->failed_frame); the
 * engine forgets the iov before either callback.
 */
#define GM_ZC_IOV 4
int gm_peer_send_zc(struct gm_peer *peer, uint8_t type, size_t thdr_len, gm_thdr_fn enc, void *arg,
                    const struct iovec *iov, size_t iov_cnt, uint32_t *crc, void *cookie);

/*
 * Append one whole small message (an EAGER body: a thdr_len-byte type
 * header written by enc after the payload's CRC is chained into *crc, then
 * the iov payload, copied) to the last frame queued to peer, if that frame
 * has not left yet, is an EAGER or BUNDLE frame held in its buffer, and
 * has room, and has a cookie; the frame becomes a BUNDLE (gm_wire.h).
 * Returns that cookie, which answers for the rider when the frame is acked
 * or failed, or NULL when the message needs a frame of its own.
 */
void *gm_peer_append(struct gm_peer *peer, size_t thdr_len, gm_thdr_fn enc, void *arg,
                     const struct iovec *iov, size_t iov_cnt, uint32_t *crc);

/*
 * Ask the peer to acknowledge the frame just queued to it at once, not
 * after its ack delay (GM_F_ACKNOW): for the last frame of a send whose
 * completion waits for that acknowledgement.
 */
void gm_peer_ack_now(struct gm_peer *peer);
/* The upper half takes frames again: offer what recv refused, and tell the peer. */
void gm_peer_rx_resume(struct gm_peer *peer);

#endif /* GM_NET_H */
