/*
 * Inside the message protocol: what its files (gm_msg*.c) share.  Each
 * frame type has one handler (gm_msg_frame.c, gm_msg_rndv.c).
 *
 *   small   EAGER: header and data in one frame.
 *   medium  START + FRAG...: fragmented, reassembled in order (the net
 *           delivers a peer's frames in order, and a sender never
 *           interleaves two messages' fragments).
 *   large   RTS, then the receiver pulls once matched: CTS, RDATA...  An
 *           unexpected large message therefore costs the receiver no
 *           buffer until a receive for it exists.
 *
 * So a message can finish before one its peer sent earlier (an eager one
 * overtakes a pull).  Receives are nevertheless completed in the order
 * they matched a peer's messages, i.e. in the order the peer sent them:
 * a finished receive is parked until every earlier one from that peer is
 * completed.  ob1 depends on it: Open MPI 4.1's datatype engine misplaces
 * data (by tens of bytes) or overruns when it unpacks the fragments of one
 * message out of order into some derived types (issue #19; btl tcp
 * striped over two links does the same).  Only matched messages wait, and
 * each finishes without the application's help, so the wait is bounded.
 */
#ifndef GM_MSG_INT_H
#define GM_MSG_INT_H

#include "gm_msg.h"

#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>

#include "gm_defaults.h"
#include "gm_wire.h"

#define MSG_WARN(m, ...) FI_WARN((m)->cfg.prov, FI_LOG_EP_DATA, __VA_ARGS__)

/* Largest medium message accepted unexpected; beyond, senders use RTS. */
#define GM_MAX_UNEXPECTED_MEDIUM (16u << 20)

/* Several rails: the default chunk of a striped pull (gm_msg_cfg.stripe_chunk). */
#define GM_STRIPE_CHUNK GM_STRIPE_CHUNK_BYTES
/* Chunks of one pull in flight at once, all rails together: chunk i uses
 * slot i % GM_PULL_SLOTS, so a rail that lags this many chunks behind
 * holds the others up instead of growing the receiver's state. */
#define GM_PULL_SLOTS 64

/* One chunk a striped pull asked for: [off, off + len), got bytes in so far. */
struct gm_chunk {
	uint64_t off, len, got;
	uint32_t mcrc; /* message CRC from off through the bytes got */
	uint8_t rail;  /* the rail its CTS named */
	bool busy;     /* asked for, not all in */
};

/* A receive pulling a message in chunks over the rails (rx->pull). */
struct gm_pull {
	uint32_t msg_id;   /* the sender's, from the RTS */
	uint64_t chunk;    /* bytes per chunk (the last may be shorter) */
	uint64_t next_off; /* the first byte not yet asked for */
	unsigned busy;     /* chunks asked for and not all in */
	unsigned nout[GM_RAILS_MAX];
	unsigned depth; /* chunks in flight per rail at most */
	unsigned next_rail;
	struct gm_chunk slot[GM_PULL_SLOTS];
};

/* gm_msg.c: connections */
struct gm_conn *gm_conn_new(struct gm_msg *m, struct gm_peer *peer, unsigned rail);
struct gm_conn *gm_conn_of_peer(struct gm_msg *m, struct gm_peer *peer);
bool gm_conn_awaited(struct gm_conn *conn);
fi_addr_t gm_conn_src(struct gm_conn *conn);
fi_addr_t gm_conn_msg_src(struct gm_conn *conn);

/* gm_msg_send.c */
void gm_tx_maybe_complete(struct gm_tx *tx);
void gm_tx_free(struct gm_tx *tx);
void gm_conn_push(struct gm_conn *conn);
void gm_conn_queue(struct gm_conn *conn, struct gm_tx *tx);
int gm_send_ctrl(struct gm_conn *conn, uint8_t type, const void *thdr, size_t len);
/* A CTS: c->cts_id is the connection's next (taken only if sent); 0, or -FI_ENOMEM (pool full). */
int gm_send_cts(struct gm_conn *conn, struct gm_cts_hdr *c);
/*
 * The receiver asked for tx's data and will not get (the rest of) it:
 * complete tx with reason and turn it into the NACK that tells the
 * receiver (gm_wire.h).  No allocation: a full pool is one such reason.
 */
void gm_tx_nack(struct gm_tx *tx, int reason);
/* tx's NACK type header into inject_buf (ctrl_len set, counted). */
void gm_tx_nack_encode(struct gm_tx *tx, int reason);
/* One frame of tx to peer: 0, -FI_EAGAIN, -FI_EIO; *sent: payload bytes it took. */
int gm_tx_send_one(struct gm_tx *tx, struct gm_peer *peer, size_t max_body, size_t *sent);
void gm_msg_on_acked(void *ctx, struct gm_peer *peer, void *cookie);
void gm_msg_on_failed_frame(void *ctx, struct gm_peer *peer, void *cookie, int err);

/*
 * gm_msg_frame.c: the CRC of a payload that is the rest of the frame being
 * handled (data, dlen), chained from seed, without reading it again when
 * the frame's check computed its body's CRC (gm_rx_frame.crc_known).
 */
bool gm_frame_payload_crc(const struct gm_msg *m, const uint8_t *data, size_t dlen, uint32_t seed,
                          uint32_t *crc);

/* gm_msg_recv.c */
void gm_rx_free(struct gm_rx *rx);
bool gm_rx_unstarve(struct gm_msg *m);
void gm_rx_complete(struct gm_rx *rx, int err);
struct gm_rx *gm_rx_take(struct gm_rx *rx, uint64_t msg_len);
struct gm_rx *gm_rx_match_posted(struct gm_msg *m, struct gm_conn *conn,
                                 const struct gm_msg_hdr *h);
void gm_rx_bind_msg(struct gm_rx *rx, struct gm_conn *conn, const struct gm_msg_hdr *h);
bool gm_rx_place(struct gm_rx *rx, uint64_t off, const uint8_t *data, size_t dlen, uint32_t want);
void gm_msg_corrupt(struct gm_msg *m, struct gm_conn *conn, uint64_t offset);
void gm_conn_drop_partial(struct gm_conn *conn, int err);

/* gm_msg_ux.c */
struct gm_ux *gm_ux_new(struct gm_conn *conn, const struct gm_msg_hdr *h, bool rts, size_t dlen);
bool gm_ux_place(struct gm_ux *ux, uint64_t off, const uint8_t *data, size_t dlen, uint32_t want);
bool gm_ux_reserve(struct gm_ux *ux, uint64_t len);
void gm_ux_free(struct gm_ux *ux);
void gm_ux_drop(struct gm_ux *ux);
void gm_ux_deliver(struct gm_ux *ux, struct gm_rx *rx);
void gm_ux_discard(struct gm_ux *ux);
bool gm_ux_resolve_due(const struct gm_msg *m);
void gm_ux_resolve_sources(struct gm_msg *m);
/* Some unexpected-message cap that conn's frames may meet is reached. */
static inline bool gm_ux_full(const struct gm_msg *m, const struct gm_conn *conn)
{
	return conn->ux_bytes >= m->cfg.ux_peer_max || m->ux_bytes >= m->cfg.ux_max ||
	       m->unknown_bytes >= m->cfg.ux_unknown_max;
}
bool gm_ux_admit(struct gm_msg *m, struct gm_conn *conn, uint8_t type, const void *body,
                 size_t len);
void gm_ux_resume(struct gm_msg *m);

/* gm_msg_rndv.c */
void gm_rx_pull(struct gm_rx *rx, uint32_t msg_id);
/* Pulls whose CTS found the pool full ask again (gm_msg_progress). */
void gm_rndv_retry(struct gm_msg *m);
void gm_rndv_on_cts(struct gm_msg *m, struct gm_conn *conn, const void *body, size_t len);
void gm_rndv_on_rdata(struct gm_msg *m, struct gm_conn *conn, const void *body, size_t len);
void gm_rndv_on_nack(struct gm_msg *m, struct gm_conn *conn, const void *body, size_t len);

/* gm_msg_rails.c: several rails */
struct gm_conn *gm_rails_conn_of_peer(struct gm_msg *m, struct gm_peer *peer);
void gm_rails_attach(struct gm_conn *conn, const struct gm_addr *addrs);
bool gm_rails_peer_failed(struct gm_conn *conn, struct gm_peer *peer, int err);
int gm_rails_push_moved(struct gm_conn *conn);
void gm_rails_drop_moved(struct gm_conn *conn, int err);
void gm_rails_pick_lead(struct gm_conn *conn);
bool gm_rails_dup_msg(struct gm_conn *conn, uint32_t msg_id); /* several rails only */
bool gm_rails_dup_cts(struct gm_conn *conn, uint32_t cts_id); /* several rails only */
void gm_rails_cts_taken(struct gm_conn *conn, uint32_t cts_id);
/* Whether rail r to conn's endpoint takes frames (not dormant, not failed). */
bool gm_rails_live(const struct gm_conn *conn, unsigned r);
/*
 * Several rails: a fragment, pull or CTS that matches nothing (or lands
 * before what was placed already) is a duplicate of one that came on the
 * other rail: dropped and counted, not reported.  One rail: false.
 */
static inline bool gm_rails_dup(struct gm_msg *m)
{
	if (m->nrails < 2)
		return false;
	m->st.rail_dups++;
	return true;
}
void gm_rails_on_stalled(void *ctx, struct gm_peer *peer, uint64_t now_us, uint64_t stalled_us);
void gm_rails_on_revived(void *ctx, struct gm_peer *peer);

/*
 * gm_msg_stripe.c: pulls in chunks over several rails.  Receiver: start a
 * pull (false: not striped, pull in one piece), and take its RDATA.
 * Sender: serve a chunk's CTS (false: dropped as impossible), push the
 * servers' frames (true: a window was full), and fail a send's servers
 * with it.
 */
bool gm_pull_start(struct gm_rx *rx, uint32_t msg_id);
void gm_pull_issue(struct gm_rx *rx);
void gm_pull_on_rdata(struct gm_rx *rx, const struct gm_frag_hdr *f, const uint8_t *data,
                      size_t dlen);
bool gm_stripe_on_cts(struct gm_msg *m, struct gm_conn *conn, struct gm_tx *tx,
                      const struct gm_cts_hdr *c);
bool gm_stripe_push(struct gm_conn *conn);
void gm_stripe_fail(struct gm_tx *tx, int err);
void gm_stripe_fail_conn(struct gm_conn *conn, int err);

/* gm_msg_frame.c */
bool gm_msg_on_recv(void *ctx, struct gm_peer *peer, const struct gm_rx_frame *f);

#endif /* GM_MSG_INT_H */
