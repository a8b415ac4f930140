/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gm_msg: the active-message protocol, the provider's upper half — how a
 * libfabric send or receive becomes frames on a gm_port and back.  One
 * struct gm_msg per endpoint.
 *
 * It sits between two seams.  Below, the net (gm_net.h): it sends with
 * gm_peer_send() and is called back through gm_msg_port_ops.  Above, the
 * libfabric objects (endpoint, CQ, counters, AV): it reaches them only
 * through struct gm_msg_upcalls, which the endpoint implements
 * (gm_ep_upcalls.c) and a test can implement with no libfabric object at
 * all.  It reads no provider parameter (struct gm_msg_cfg is copied in).
 *
 * Locking: none inside.  The caller serializes every call on one gm_msg
 * and on its port's net (the domain lock); the upcalls run inside these
 * calls and must not call back in.
 */
#ifndef GM_MSG_H
#define GM_MSG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/uio.h>

#include <rdma/fabric.h>

#include "gm_list.h"
#include "gm_net.h"
#include "gm_pool.h"

/* Limits of one operation (advertised in fi_info). */
#define GM_IOV_LIMIT    4
#define GM_INJECT_SIZE  256
#define GM_MAX_MSG_SIZE (1ULL << 40)
/* Interfaces of one multi-rail endpoint (FI_GAMMA_IFACE=eth0+eth1). */
#define GM_RAILS_MAX 4

/*
 * A message from a source outside the AV is either held until the AV has
 * its source (it then matches no receive: its src is GM_ADDR_HELD) or
 * delivered with FI_ADDR_NOTAVAIL, as fi_cq(3) has it.  auto: held when
 * the endpoint has an auth_key (a job that isolates itself), delivered
 * otherwise (Open MPI's mtl/ofi inserts peers only when it first sends).
 */
enum gm_unknown_policy { GM_UNKNOWN_AUTO, GM_UNKNOWN_HOLD, GM_UNKNOWN_DELIVER };
#define GM_ADDR_HELD ((fi_addr_t)-2)

/* What the protocol takes from the provider's parameters (FI_GAMMA_*). */
struct gm_msg_cfg {
	const struct fi_provider *prov;             /* logs as this provider */
	size_t max_body;                            /* largest frame body: gm_net_max_body() */
	size_t rndv_threshold;                      /* FI_GAMMA_RNDV_THRESHOLD */
	size_t ux_max, ux_peer_max, ux_unknown_max; /* unexpected-message caps, bytes */
	int ux_unknown;                             /* enum gm_unknown_policy */
	unsigned ux_unknown_hold_ms; /* how long a held message waits for its source */
	size_t tx_max;               /* sends in flight (until acknowledged): then -FI_EAGAIN */
	size_t rx_max;               /* receives posted and not completed: then -FI_EAGAIN */
	unsigned rail_timeout_ms;    /* FI_GAMMA_RAIL_TIMEOUT: a rail's frames unacknowledged
	                                this long, while another rail answers: moved */
	/* Several rails: a pull larger than one chunk goes in chunks of this
	 * many bytes (0: GM_STRIPE_CHUNK), at most depth of them (0: 2) pulled
	 * per live rail at once (gm_msg_stripe.c). */
	size_t stripe_chunk;
	unsigned stripe_depth;
};

enum gm_msg_side { GM_MSG_TX, GM_MSG_RX };

/* One completion, as fi_cq_write would take it; err 0 or a positive FI_E* code. */
struct gm_msg_cqe {
	void *context;
	uint64_t flags; /* FI_SEND|FI_RECV, FI_MSG|FI_TAGGED, FI_REMOTE_CQ_DATA, FI_MULTI_RECV */
	size_t len;
	void *buf;
	uint64_t data, tag;
	fi_addr_t src;
	size_t olen; /* errors: bytes that did not fit */
	int err;
	int prov_errno; /* errors: err, or FI_GAMMA_ERR_* when that says more */
};

/* What the protocol asks of the libfabric objects around it; ctx is gm_msg_init's. */
struct gm_msg_upcalls {
	/*
	 * An operation finished: its completion (an error one when e->err),
	 * unless the application asked for none (op_flags: the operation's
	 * own flags, FI_COMPLETION and the like), and its counter.
	 */
	void (*done)(void *ctx, enum gm_msg_side side, uint64_t op_flags,
	             const struct gm_msg_cqe *e);
	/* A receive-side completion with no counter, always written (FI_PEEK, fi_cancel). */
	void (*report)(void *ctx, const struct gm_msg_cqe *e);
	/* A send that completed when buffered was lost after all: the send counter's errors. */
	void (*send_lost)(void *ctx);
	/* A message failed its end-to-end CRC. */
	void (*corrupt)(void *ctx);
	/* The AV: fi_addr's address (NULL: none), an address's fi_addr (FI_ADDR_NOTAVAIL: none). */
	const struct gm_addr *(*av_addr)(void *ctx, fi_addr_t fi_addr);
	fi_addr_t (*av_find)(void *ctx, const struct gm_addr *addr);
	/* Several rails: the fi_addr whose address on rail (> 0) is addr.  av_addr
	 * then returns the entry's addresses, one per rail. */
	fi_addr_t (*av_find_rail)(void *ctx, unsigned rail, const struct gm_addr *addr);
	/* Changes whenever the AV gains addresses (0: no AV). */
	uint64_t (*av_gen)(void *ctx);
	/* A monotonic clock, milliseconds. */
	uint64_t (*now_ms)(void *ctx);
};

struct gm_msg;

/*
 * Upper-half state for one remote endpoint, hung on its gm_peer (on each,
 * with several rails: gm_msg_rails.c).
 */
struct gm_conn {
	struct gm_msg *msg;
	struct gm_peer *peer; /* the lead rail's: every frame to the endpoint goes there */
	struct gm_peer *rails[GM_RAILS_MAX]; /* several rails: the peer on each, or NULL */
	unsigned lead;                       /* ... peer == rails[lead] */
	struct gm_list moved;                /* frames taken back from a dead rail, resent first */
	uint32_t rx_next_msg_id;             /* several rails: messages below it are duplicates */
	bool rx_msg_known;
	bool rx_cts_known;
	uint32_t rx_next_cts_id;               /* several rails: CTS below it are duplicates */
	uint32_t next_cts_id;                  /* our next CTS to the peer */
	struct gm_list stripe_q[GM_RAILS_MAX]; /* pull servers (gm_tx) with chunks for each rail */
	unsigned stripe_queued;                /* ... on all of them */
	fi_addr_t fi_addr;                     /* FI_ADDR_NOTAVAIL until found in the AV */
	uint32_t next_msg_id;
	struct gm_list tx_queue; /* frames still to hand to the net, in order */
	struct gm_list cts_wait; /* rendezvous sends waiting to be pulled (or pulled in chunks) */
	struct gm_list msg_entry;
	struct gm_list pend_entry; /* on msg->tx_pending while a queue here waits for a window */
	struct gm_ux *rx_cur;      /* medium message being reassembled, if unexpected */
	struct gm_rx *rx_cur_rx;   /* ... or the posted receive it lands in */
	uint32_t rx_cur_id;
	size_t ux_bytes; /* held in unexpected messages from this peer (FI_GAMMA_UX_PEER_MAX) */
	struct gm_list refuse_entry; /* on msg->ux_refusing: refused at the caps */
	bool ux_warned;
	uint64_t rx_matched;      /* receives matched to this peer's messages so far */
	uint64_t rx_reported;     /* ... and completed to the application, in that order */
	struct gm_list rx_parked; /* finished receives waiting for an earlier one */
};

enum gm_tx_state { GM_TX_QUEUED, GM_TX_WAIT_CTS, GM_TX_PULLED, GM_TX_SENT };

/* A chunk a pull server still has to send: [off, off + len). */
struct gm_span {
	uint64_t off, len;
};
#define GM_SERVER_SPANS (GM_INJECT_SIZE / sizeof(struct gm_span))

struct gm_tx {
	struct gm_list entry;
	struct gm_list live_entry; /* on msg->tx_live until freed */
	struct gm_msg *msg;
	struct gm_conn *conn;
	void *context;
	uint64_t flags; /* FI_SEND|FI_MSG|FI_TAGGED, FI_COMPLETION, FI_REMOTE_CQ_DATA, FI_INJECT,
	                   and whatever else the caller passes on to the done upcall */
	uint64_t tag, data;
	struct iovec iov[GM_IOV_LIMIT];
	size_t iov_count;
	uint64_t len;   /* message length */
	uint64_t limit; /* bytes to send: len, or what the receiver pulled */
	uint64_t off;   /* bytes handed to the net so far */
	uint32_t msg_id;
	uint32_t recv_id;
	uint32_t mcrc;      /* message CRC of the bytes handed to the net so far */
	uint8_t first_type; /* EAGER, START, RTS; CTS or NACK for control frames */
	uint8_t ctrl_len;   /* control frame: its type header, ready in inject_buf */
	bool first_sent;
	bool internal; /* protocol frame of our own: no completion */
	bool reported; /* completion written; freed once every frame is acked */
	unsigned unacked;
	unsigned riders; /* messages that rode in this send's frame (gm_peer_append) */
	int err;
	enum gm_tx_state state;
	/*
	 * Pulled in chunks (gm_msg_stripe.c): a send has one pull server per
	 * rail that a chunk named (srv), each an internal gm_tx whose parent
	 * is the send.  The send counts its servers in unacked; served: bytes
	 * the receiver asked for so far.  A server sends its chunks on rail
	 * (or the lead rail, on_lead, once its own died), span by span.
	 */
	struct gm_tx *parent;
	struct gm_tx *srv[GM_RAILS_MAX];
	uint64_t served;
	uint8_t rail;
	bool on_lead; /* server: its rail died, it sends on the lead rail for good */
	bool striped;
	uint8_t nspans, span_head;
	union {
		uint8_t inject_buf[GM_INJECT_SIZE];
		struct gm_span spans[GM_SERVER_SPANS]; /* a server's queued chunks, a ring */
	};
};

struct gm_rx {
	struct gm_list entry;
	struct gm_msg *msg;
	void *context;
	uint64_t
	    flags; /* FI_RECV|FI_MSG|FI_TAGGED, FI_COMPLETION, FI_MULTI_RECV, FI_PEEK, FI_CLAIM */
	fi_addr_t src; /* FI_ADDR_UNSPEC: any */
	uint64_t tag, ignore;
	struct iovec iov[GM_IOV_LIMIT];
	size_t iov_count;
	uint64_t len;
	uint64_t multi_off; /* FI_MULTI_RECV: bytes consumed */
	/* set once matched */
	uint64_t msg_len, recv_len, got;
	uint32_t mcrc; /* message CRC of the bytes received so far */
	bool corrupt;  /* a frame's mcrc disagreed: completes with FI_EIO */
	uint64_t rtag, rdata;
	fi_addr_t rsrc;
	bool has_data;
	uint32_t id;      /* rendezvous: our id, echoed in RDATA */
	uint32_t send_id; /* ... and the sender's, from its RTS (a NACK names both) */
	bool cts_due;     /* its CTS waits for a pool entry (gm_msg.cts_starved) */
	struct gm_conn *conn;
	uint64_t match_seq; /* conn->rx_matched when it matched */
	int parked_err;     /* parked on conn->rx_parked (by entry) with this result */
	struct gm_list rndv_entry;
	struct gm_pull *pull; /* several rails: a pull in chunks (gm_msg_stripe.c), or NULL */
	void *buf_base;       /* FI_MULTI_RECV: where this message starts */
	struct gm_rx *multi_parent;
	unsigned multi_refs; /* parent: slices not yet completed */
	bool multi_retired;  /* parent: too little space left, no longer posted */
};

/* An unexpected message: arrived before a matching receive was posted. */
struct gm_ux {
	struct gm_list entry;
	struct gm_conn *conn;
	fi_addr_t src;
	uint64_t tag, data, msg_len;
	uint32_t mflags, msg_id;
	bool rts;     /* rendezvous: no data held, pulled when matched */
	uint8_t *buf; /* eager/medium data */
	uint64_t have;
	uint32_t mcrc;   /* message CRC of the bytes received so far */
	int err;         /* FI_EIO: a frame's mcrc disagreed (corrupt) or the message was cut
	                    short; FI_EREMOTEIO: its sender refused the pull */
	bool corrupt;    /* a frame's mcrc disagreed */
	void *claim_ctx; /* FI_CLAIM: reserved for the receive with this context */
	bool claimed;
	struct gm_rx *bound; /* matched while still being reassembled */
	size_t cap;          /* bytes allocated at buf: grows as fragments arrive */
	size_t charged;      /* bytes counted against the caps */
	uint64_t held_ms;    /* held (src GM_ADDR_HELD): when it arrived */
};

/* Upper-half counters, printed per endpoint by FI_GAMMA_STATS (gm_msg_stats_print). */
struct gm_msg_stats {
	uint64_t unknown_held;     /* messages from sources not in the AV, held */
	uint64_t unknown_released; /* ... (held or not) whose source then appeared in the AV */
	uint64_t unknown_dropped;  /* ... dropped: not in the AV within FI_GAMMA_UX_UNKNOWN_HOLD */
	uint64_t ux_refused; /* frames from known peers held back at FI_GAMMA_UX_MAX/_PEER_MAX */
	size_t ux_peak, unknown_peak; /* most bytes held at once */
	uint64_t sends_lost; /* sends completed when buffered whose data the peer never got */
	/* Frames dropped (each also logged): lengths that disagree (EAGER, START, RTS), ... */
	uint64_t drop_malformed;
	uint64_t drop_bad_type;       /* ... a type with no handler, or shorter than its header */
	uint64_t drop_frag_unknown;   /* ... FRAG of no message being reassembled */
	uint64_t drop_frag_misplaced; /* ... FRAG not at the next offset, or past the end */
	uint64_t drop_cts_unknown;    /* ... CTS for no send waiting to be pulled */
	uint64_t drop_rdata_unknown;  /* ... RDATA for no receive pulling */
	uint64_t drop_rdata_misplaced;
	uint64_t drop_no_memory; /* ... no memory for a new peer or an unexpected message */
	uint64_t msgs_cut;       /* messages failed (FI_EIO): their sender started another */
	uint64_t tx_refused, rx_refused; /* operations refused with -FI_EAGAIN: pool full */
	uint64_t bundled; /* small messages sent in the frame of the one before (BUNDLE) */
	/* Rails: rails given up (frames moved), rails used again, and frames
	 * dropped as duplicates of what came on the other rail. */
	uint64_t rail_failovers, rail_revivals, rail_dups;
	/* Striping: pulls made in chunks, chunks asked for (receiver), CTS
	 * dropped as impossible (a chunk past the pull, a rail we lack, ...),
	 * and RDATA payload bytes handed to each rail (sender). */
	uint64_t stripe_pulls, stripe_chunks, drop_cts_bad;
	uint64_t rdata_bytes[GM_RAILS_MAX];
	/* NACK: pulls we refused (sender), receives failed by the sender's
	 * refusal, and NACKs that named no pull of ours (receiver). */
	uint64_t nacks_sent, pulls_nacked, drop_nack_unknown;
};

/* The protocol state of one endpoint. */
struct gm_msg {
	const struct gm_msg_upcalls *up;
	void *up_ctx;
	struct gm_msg_cfg cfg;
	struct gm_port *port; /* opened by the caller with gm_msg_port_ops and this as ctx */
	/* Several rails (gm_msg_set_rails): one port per rail, [0] == port. */
	struct gm_port *rail_ports[GM_RAILS_MAX];
	unsigned nrails;
	/*
	 * Every gm_tx and gm_rx comes from these, and goes back through one
	 * function each (gm_tx_free, gm_rx_free).  Sends and receives are
	 * refused once cfg.tx_max or cfg.rx_max objects are out.  Past that,
	 * the receive pool holds rx_max more for multi-recv slices, and the
	 * send pool one CTS frame of our own for each receive or slice there
	 * can be: a pool full of the application's operations stalls no pull
	 * and no multi-recv buffer.
	 */
	struct gm_pool tx_pool, rx_pool;
	bool multi_starved;     /* a message waits for a multi-recv slice (gm_rx_unstarve) */
	bool cts_starved;       /* a pull waits for a pool entry for its CTS (gm_rndv_retry) */
	size_t min_multi_recv;  /* FI_OPT_MIN_MULTI_RECV */
	struct gm_conn **conns; /* by fi_addr */
	size_t conns_cap;
	struct gm_list conn_list;  /* every conn */
	struct gm_list tx_pending; /* conns with frames waiting for the window */
	struct gm_list tx_live;    /* every gm_tx not yet freed, for close */
	struct gm_list posted[2];  /* [0] untagged, [1] tagged receives */
	struct gm_list unexpected[2];
	struct gm_list rndv_rx;         /* receives pulling a rendezvous message */
	size_t ux_unresolved;           /* unexpected messages from outside the AV, held or not */
	size_t ux_bytes, unknown_bytes; /* held in unexpected messages (caps: cfg) */
	struct gm_list ux_refusing;     /* conns refused at the caps (refuse_entry) */
	uint64_t av_seen;               /* av_gen when held messages were last resolved */
	uint64_t held_expiry_ms;        /* the oldest held message's deadline */
	struct gm_msg_stats st;
	uint32_t next_recv_id;
	const struct gm_rx_frame *rx_frame; /* the frame its handler is on, or NULL */
};

extern const struct gm_port_ops gm_msg_port_ops;

void gm_msg_init(struct gm_msg *m, const struct gm_msg_cfg *cfg, const struct gm_msg_upcalls *up,
                 void *up_ctx);
/* A multi-rail endpoint: its port on each rail (ports[0] is m->port). */
void gm_msg_set_rails(struct gm_msg *m, struct gm_port *const *ports, unsigned n);
/*
 * The endpoint is about to close: tell every receiver pulling a message
 * from it that the rest will not come (NACK), while the ports still send
 * (before gm_port_drain).  Data frames leave the window's last slot to a
 * NACK, so one NACK per peer always goes; a second one that finds every
 * rail's window full is not sent, and that receiver learns of it only
 * when the peer times out.
 */
void gm_msg_shutdown(struct gm_msg *m);
/* The endpoint is closing: drop queued work without completions. */
void gm_msg_close(struct gm_msg *m);
ssize_t gm_msg_send(struct gm_msg *m, const struct iovec *iov, size_t count, fi_addr_t dest,
                    uint64_t tag, uint64_t data, void *context, uint64_t flags);
ssize_t gm_msg_recv(struct gm_msg *m, const struct iovec *iov, size_t count, fi_addr_t src,
                    uint64_t tag, uint64_t ignore, void *context, uint64_t flags);
void gm_msg_progress(struct gm_msg *m);
/* Message bytes in a message's first frame, and in each later one
 * (FI_OPT_GAMMA_MSG_FRAMES). */
void gm_msg_frames(const struct gm_msg *m, size_t *first, size_t *next);
int gm_msg_cancel(struct gm_msg *m, void *context);
/* The connection to fi_addr, made on first use; NULL: not in the AV, or no memory. */
struct gm_conn *gm_msg_conn(struct gm_msg *m, fi_addr_t fi_addr);
/* FI_OPT_GAMMA_PEER_AUTH_KEY: frames to fi_addr, on every rail, go under
 * this secret (gm_peer_set_auth). */
int gm_msg_set_peer_auth(struct gm_msg *m, fi_addr_t fi_addr, const struct gm_auth *auth);
/* FI_GAMMA_STATS: the line "gamma msg stats IFNAME port N: ..." */
void gm_msg_stats_print(const struct gm_msg *m, const char *ifname, FILE *out);

/* gm_match.c */
bool gm_match_tag(uint64_t want, uint64_t ignore, uint64_t tag);
bool gm_match_src(fi_addr_t want, fi_addr_t src);
struct gm_rx *gm_match_posted(struct gm_list *posted, fi_addr_t src, uint64_t tag);
struct gm_ux *gm_match_unexpected(struct gm_list *ux, fi_addr_t src, uint64_t tag, uint64_t ignore,
                                  void *claim_ctx, bool claim);

/* gm_iov.c */
uint64_t gm_iov_len(const struct iovec *iov, size_t cnt);
size_t gm_iov_copy_to(const struct iovec *iov, size_t cnt, uint64_t off, const void *src,
                      size_t len);
/* gm_iov_copy_to, chaining *crc (gm_crc32c) over the bytes copied (crc NULL: none). */
size_t gm_iov_copy_to_crc(const struct iovec *iov, size_t cnt, uint64_t off, const void *src,
                          size_t len, uint32_t *crc);
size_t gm_iov_copy_from(const struct iovec *iov, size_t cnt, uint64_t off, void *dst, size_t len);
/* The iovs covering len bytes of iov from off, into out (room for cnt); returns how many. */
size_t gm_iov_slice(const struct iovec *iov, size_t cnt, uint64_t off, size_t len,
                    struct iovec *out);

#endif /* GM_MSG_H */
