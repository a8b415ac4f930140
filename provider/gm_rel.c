/* SPDX-License-Identifier: BSD-2-Clause */
/* The reliability engine (see gm_rel.h).  No I/O, no clock, no logging. */
#include "gm_rel.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "gm_dq.h"
#include "gm_mac.h"

#define ETH_HLEN       GM_ETH_HLEN
#define HDR_LEN        sizeof(struct gm_hdr)
#define PEER_BUCKETS   256
#define BATCH          64
#define POOL_CHUNK     64
#define POOL_BYTES_CAP (64u << 20)
/*
 * Delayed acks.  A receiver that got sequenced frames owes an ack, but the
 * ack rides for free on the next frame back, which in request/response
 * traffic (ping-pong, MPI) follows within microseconds.  So an explicit ACK
 * goes only when nothing went back within ACK_DELAY_US, or ACK_EVERY frames
 * (window/4 if less) are unacked: a streaming sender never stalls on its
 * window, and a stream of 9000-byte frames costs an ack per ~10 frames (at
 * 20 us it was one per 4.4, each a syscall and a trip through the kernel on
 * both sides).  An
 * explicit ACK costs no extra syscall on the data path: it rides in the same
 * sendmmsg batch as queued data (ahead of it: 54 bytes).  Gaps and
 * duplicates are acked at once (with the SACK bitmap) so the sender can
 * retransmit fast.
 */
#define ACK_DELAY_US 100
/*
 * When the kernel refuses frames (the socket's send buffer is full: the
 * link or its qdisc is the bottleneck), a class waits this long before the
 * next attempt instead of spending a failing syscall on every progress
 * call.  The send buffer holds hundreds of microseconds of traffic at any
 * realistic link rate, so the link never runs dry meanwhile.
 */
#define TX_BACKOFF_US       20
#define ACK_EVERY           64
#define FAST_RETX_DUPTHRESH 3
/* Peers looked at per reclaim attempt: bounds the work a flood of new sources causes. */
#define RECLAIM_SCAN 64

struct gm_buf {
	struct gm_dq_item dqi; /* first: a dq item is a buffer */
	struct gm_buf *next_free;
	struct gm_peer *peer;
	void *cookie;
	uint64_t tx_time;
	uint32_t seq;
	uint32_t len;      /* bytes from the Ethernet header on */
	uint32_t hlen;     /* of those, in data; the rest is in iov[1 .. nzc] */
	uint32_t body_crc; /* transmit: the body's part of the checksum (gm_wire.h) */
	bool sent, sacked, fast_done;
	bool rx_crc;  /* receive: body_crc is the checked body's CRC */
	bool sealed;  /* sealed for a transmission the link refused (gm_rel_flush) */
	bool resent;  /* its acknowledgement says nothing about the round trip (Karn) */
	uint8_t retx; /* queued as a retransmission: RETX_RTO or RETX_FAST, counted once sent */
	uint8_t nzc;  /* zero-copy payload pieces (gm_peer_send_zc), 0: all in data */
	/* Not cleared by buf_get: iov[0] is set at each transmission, the
	 * rest is the user's memory a zero-copy frame sends from. */
	struct iovec iov[1 + GM_ZC_IOV];
	uint8_t data[] __attribute__((aligned(16)));
};

struct gm_peer {
	struct gm_addr addr;
	struct gm_port *port;
	struct gm_peer *hnext;         /* hash chain */
	struct gm_peer *pnext, *pprev; /* the port's peer list */
	struct gm_peer *ack_next;      /* owes an ack */
	void *ctx;
	const struct gm_secret *sec; /* frames to it are sealed with this; NULL: the port's */
	bool failed, ack_listed, ack_now;
	bool from_input; /* created by a received frame, not by the upper half */
	bool dormant;    /* its frames were moved to another rail (gm_peer_reclaim) */
	/*
	 * rx_blocked: the upper half refused the frame at rcv_nxt (gm_port_ops.recv);
	 * it waits in rxw, our acks advertise a window of 0 until gm_peer_rx_resume.
	 * peer_busy: the peer's last ack advertised 0 (it holds our frames).
	 */
	bool rx_blocked, peer_busy;

	/* transmit side */
	uint32_t snd_una, snd_nxt;
	unsigned peer_wnd;
	unsigned queued; /* its frames in the dq, not yet handed to the link */
	unsigned rto_us;
	unsigned srtt_us, rttvar_us; /* smoothed round trip and its variation; 0: no sample */
	uint64_t rto_deadline;       /* 0: nothing in flight */
	uint64_t last_progress;
	uint64_t stall_due; /* rails: when ops->stalled is asked again (0: half the rail timeout) */
	uint64_t retry_at;  /* rails: when gm_peer_retry last resent (0: not in this stall) */
	/*
	 * After a timeout, until the ack passes recover (snd_nxt then): the
	 * frames below it that went out before the timeout are presumed lost,
	 * and each ack brings out the next ones from recover_next, once the
	 * peer has shown it saw a frame sent since the timeout (an echo of at
	 * least recover_nonce): before that, a partial ack may come from a
	 * receiver that was merely off the CPU and still has the rest queued.
	 */
	bool recovering;
	uint32_t recover, recover_next;
	uint64_t recover_nonce;

	/* keepalive (gm_peer_await) */
	bool awaited, await_started;
	uint64_t await_since, last_heard; /* last_heard: 0 until a frame came */
	struct gm_buf **txw;              /* [seq % window] */

	/* receive side */
	bool rx_known;
	uint32_t remote_session;
	uint32_t old_session; /* its previous incarnation: stragglers are dropped */
	bool has_old_session;
	uint32_t rcv_nxt;
	unsigned unacked;
	uint64_t ack_deadline;
	struct gm_buf **rxw; /* out-of-order frames, [seq % window] */
	unsigned ooo;        /* frames held in rxw */

	/* restart handshake and the nonce we echo */
	bool challenged;         /* a frame with a new session was seen */
	uint64_t challenge;      /* first nonce we sent after that */
	uint64_t challenge_time; /* when: a challenge lasts one peer timeout */
	bool echo_known;
	uint32_t echo_session; /* the incarnation echo belongs to */
	uint64_t echo;         /* highest nonce received from it */
};

/*
 * A secret that peers of another job are bound to (gm_peer_set_auth):
 * frames to them are sealed with it, as their own endpoints check; theirs
 * come to us under the port's own.  One per secret, for the port's life.
 */
struct gm_secret {
	struct gm_secret *next;
	uint32_t key;
	struct gm_mac *mac;
	size_t len;
	uint8_t bytes[GM_SECRET_MAX];
};

struct gm_port {
	struct gm_rel *rel;
	struct gm_port *next;
	uint16_t num;
	enum gm_class cls;
	uint32_t key, session; /* key: the 4-byte job key, or the secret's key id */
	struct gm_mac *mac;    /* NULL: CRC-32C only */
	struct gm_secret *secrets;
	uint64_t tx_nonce;     /* nonce of the last frame sealed */
	struct gm_peer *ptail; /* oldest of peers: reclaim looks there first */
	const struct gm_port_ops *ops;
	void *ctx;
	struct gm_peer *peers;
	struct gm_peer *bucket[PEER_BUCKETS];
};

struct gm_rel {
	struct gm_rel_cfg cfg;
	struct gm_rel_link link;
	struct gm_port *ports;
	struct gm_dq dq;
	struct gm_net_stats st;
	uint64_t next_deadline;
	unsigned rto_cap_us;
	unsigned ring; /* per-peer slot arrays: a power of two >= window, so that
	                  seq & (ring - 1) stays contiguous across 2^32 */
	struct gm_peer *ack_list;
	unsigned ack_every;     /* unacked frames that make an ack due at once */
	uint64_t tx_backoff[2]; /* per class: no transmit attempt before this time */

	/* buffer pool: chunks of POOL_CHUNK buffers, grown on demand up to cap */
	struct gm_buf *free;
	size_t buf_size, nbufs, nfree, cap;
	void **chunks;
	size_t nchunks;

	size_t ooo_total, ooo_max; /* out-of-order buffers held, all peers */
	unsigned ooo_peer_max;
	size_t npeers, peer_max;
	/* The frame gm_rel_input is on: its body CRC, if its check computed one. */
	bool rx_crc_known;
	uint32_t rx_body_crc;

	uint8_t ackbuf[BATCH][ETH_HLEN + HDR_LEN + sizeof(struct gm_ack_body)];
};

/* The cookie of our own keepalive probes: the upper half never sees it. */
static char probe_cookie;

#define SLOT(rel, seq) ((seq) & ((rel)->ring - 1))

static inline int32_t seq_diff(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b);
}

/* ---- buffer pool ---- */

static bool pool_grow(struct gm_rel *rel)
{
	void **chunks;
	uint8_t *mem;

	if (rel->nbufs + POOL_CHUNK > rel->cap)
		return false;
	chunks = realloc(rel->chunks, (rel->nchunks + 1) * sizeof(*chunks));
	if (!chunks)
		return false;
	rel->chunks = chunks;
	mem = aligned_alloc(64, rel->buf_size * POOL_CHUNK);
	if (!mem)
		return false;
	rel->chunks[rel->nchunks++] = mem;
	for (unsigned i = 0; i < POOL_CHUNK; i++) {
		struct gm_buf *b = (struct gm_buf *)(mem + i * rel->buf_size);
		b->next_free = rel->free;
		rel->free = b;
	}
	rel->nbufs += POOL_CHUNK;
	rel->nfree += POOL_CHUNK;
	return true;
}

static struct gm_buf *buf_get(struct gm_rel *rel)
{
	struct gm_buf *b;

	if (!rel->free && !pool_grow(rel))
		return NULL;
	b = rel->free;
	rel->free = b->next_free;
	rel->nfree--;
	memset(b, 0, offsetof(struct gm_buf, iov));
	return b;
}

/* Every sequenced buffer in the dq is counted in its peer's queued. */
static void dq_add(struct gm_rel *rel, struct gm_buf *b, int cls, bool front)
{
	b->peer->queued++;
	gm_dq_push(&rel->dq, &b->dqi, cls, front);
}

static void buf_put(struct gm_rel *rel, struct gm_buf *b)
{
	if (b->dqi.queued) {
		b->peer->queued--;
		gm_dq_remove(&rel->dq, &b->dqi);
	}
	b->next_free = rel->free;
	rel->free = b;
	rel->nfree++;
}

static size_t pool_avail(const struct gm_rel *rel)
{
	return rel->nfree + (rel->cap - rel->nbufs);
}

/* ---- engine ---- */

int gm_rel_create(const struct gm_rel_cfg *cfg, const struct gm_rel_link *link, struct gm_rel **out)
{
	struct gm_rel *rel;

	if (!cfg->window || cfg->window > 65535 || cfg->max_frame < HDR_LEN + 64 ||
	    cfg->max_frame > 65535 || !cfg->rto_us || !cfg->peer_timeout_ms)
		return -FI_EINVAL;
	rel = calloc(1, sizeof(*rel));
	if (!rel)
		return -FI_ENOMEM;
	rel->cfg = *cfg;
	rel->link = *link;
	gm_dq_init(&rel->dq, cfg->dq, cfg->low_share);
	rel->next_deadline = UINT64_MAX;
	for (rel->ring = 1; rel->ring < cfg->window;)
		rel->ring <<= 1;
	rel->ack_every = (cfg->window + 3) / 4 < ACK_EVERY ? (cfg->window + 3) / 4 : ACK_EVERY;
	rel->buf_size = (offsetof(struct gm_buf, data) + ETH_HLEN + cfg->max_frame + 63) & ~63ul;
	rel->cap = cfg->max_bufs;
	if (!rel->cap) {
		rel->cap = POOL_BYTES_CAP / rel->buf_size;
		if (rel->cap < 4ul * cfg->window)
			rel->cap = 4ul * cfg->window;
	}
	rel->cap = (rel->cap + POOL_CHUNK - 1) / POOL_CHUNK * POOL_CHUNK;
	/* Whatever out-of-order frames hold, transmit keeps a window of buffers. */
	rel->ooo_max = cfg->ooo_max ? cfg->ooo_max : rel->cap / 2;
	if (rel->ooo_max > rel->cap - cfg->window)
		rel->ooo_max = rel->cap > cfg->window ? rel->cap - cfg->window : 0;
	rel->ooo_peer_max =
	    cfg->ooo_peer_max && cfg->ooo_peer_max < cfg->window ? cfg->ooo_peer_max : cfg->window;
	rel->peer_max = cfg->peer_max ? cfg->peer_max : GM_DEFAULT_PEER_MAX;
	/* Backoff cap: keep several retries inside the peer timeout. */
	rel->rto_cap_us = cfg->rto_us * 64;
	if (rel->rto_cap_us > cfg->peer_timeout_ms * 1000u / 4)
		rel->rto_cap_us = cfg->peer_timeout_ms * 1000u / 4;
	if (rel->rto_cap_us < cfg->rto_us)
		rel->rto_cap_us = cfg->rto_us;
	/* Preallocate one window's worth so the first burst never mallocs. */
	while (rel->nbufs < cfg->window && pool_grow(rel))
		;
	*out = rel;
	return 0;
}

void gm_rel_destroy(struct gm_rel *rel)
{
	if (!rel)
		return;
	while (rel->ports)
		gm_rel_port_close(rel->ports);
	for (size_t i = 0; i < rel->nchunks; i++)
		free(rel->chunks[i]);
	free(rel->chunks);
	free(rel);
}

struct gm_net_stats *gm_rel_stats(struct gm_rel *rel)
{
	return &rel->st;
}

size_t gm_rel_queued(const struct gm_rel *rel)
{
	return gm_dq_len(&rel->dq);
}

uint64_t gm_rel_next_deadline(const struct gm_rel *rel)
{
	return rel->next_deadline;
}

static void arm(struct gm_rel *rel, uint64_t when)
{
	if (when < rel->next_deadline)
		rel->next_deadline = when;
}

/* ---- ports and peers ---- */

/* What frames to the peer carry: its job's secret, or the port's own. */
static uint32_t peer_key(const struct gm_peer *pr)
{
	return pr->sec ? pr->sec->key : pr->port->key;
}

/*
 * The peer's key changed: frames queued or refused by the link carry the
 * old key id and were sealed under it.  Once here, not on every frame sent.
 */
static void peer_unseal(struct gm_peer *pr)
{
	for (unsigned i = 0; i < pr->port->rel->ring; i++) {
		struct gm_buf *b = pr->txw[i];

		if (b) {
			gm_hdr_set_key(b->data + ETH_HLEN, peer_key(pr));
			b->sealed = false;
		}
	}
}

static struct gm_mac *peer_mac(const struct gm_peer *pr)
{
	return pr->sec ? pr->sec->mac : pr->port->mac;
}

/* A 4-byte key, or a secret and its MAC state (gm_net.h struct gm_auth). */
static int auth_parse(const struct gm_auth *a, uint32_t *key, struct gm_mac **mac)
{
	*key = 0;
	*mac = NULL;
	if (!a || !a->len)
		return 0;
	if (a->len == sizeof(uint32_t)) {
		memcpy(key, a->key, sizeof(*key));
		return 0;
	}
	if (gm_mac_create(a->key, a->len, mac))
		return -FI_EINVAL;
	*key = gm_mac_key_id(*mac);
	return 0;
}

int gm_port_set_auth(struct gm_port *port, const struct gm_auth *auth)
{
	struct gm_mac *mac;
	uint32_t key;
	int rc = auth_parse(auth, &key, &mac);

	if (rc)
		return rc;
	gm_mac_destroy(port->mac);
	port->mac = mac;
	port->key = key;
	for (struct gm_peer *pr = port->peers; pr; pr = pr->pnext)
		if (!pr->sec)
			peer_unseal(pr);
	return 0;
}

int gm_peer_set_auth(struct gm_peer *pr, const struct gm_auth *auth)
{
	struct gm_port *port = pr->port;
	struct gm_secret *s;
	int rc;

	if (!auth || auth->len < GM_SECRET_MIN || auth->len > GM_SECRET_MAX)
		return -FI_EINVAL;
	for (s = port->secrets; s; s = s->next)
		if (s->len == auth->len && !memcmp(s->bytes, auth->key, auth->len))
			break;
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return -FI_ENOMEM;
		rc = auth_parse(auth, &s->key, &s->mac);
		if (rc) {
			free(s);
			return rc;
		}
		s->len = auth->len;
		memcpy(s->bytes, auth->key, auth->len);
		s->next = port->secrets;
		port->secrets = s;
	}
	pr->sec = s;
	peer_unseal(pr);
	return 0;
}

bool gm_peer_share_auth(struct gm_peer *dst, const struct gm_peer *src)
{
	return src->sec &&
	       !gm_peer_set_auth(dst, &(struct gm_auth){src->sec->bytes, src->sec->len});
}

int gm_rel_port_open(struct gm_rel *rel, uint16_t num, enum gm_class cls,
                     const struct gm_auth *auth, uint32_t session, uint64_t nonce0,
                     const struct gm_port_ops *ops, void *ctx, struct gm_port **out)
{
	struct gm_port *p;
	int rc;

	for (p = rel->ports; p; p = p->next)
		if (p->num == num)
			return -FI_EADDRINUSE;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -FI_ENOMEM;
	rc = auth_parse(auth, &p->key, &p->mac);
	if (rc) {
		free(p);
		return rc;
	}
	p->rel = rel;
	p->num = num;
	p->cls = cls;
	p->session = session;
	p->tx_nonce = nonce0 & ((1ull << 62) - 1);
	p->ops = ops;
	p->ctx = ctx;
	p->next = rel->ports;
	rel->ports = p;
	*out = p;
	return 0;
}

struct gm_rel *gm_rel_port_rel(const struct gm_port *port)
{
	return port->rel;
}

void *gm_rel_link_ctx(const struct gm_rel *rel)
{
	return rel->link.ctx;
}

uint16_t gm_port_num(const struct gm_port *port)
{
	return port->num;
}

uint32_t gm_port_key(const struct gm_port *port)
{
	return port->key;
}

static void rx_drop_all(struct gm_rel *rel, struct gm_peer *pr)
{
	for (unsigned i = 0; i < rel->ring && pr->ooo; i++) {
		if (pr->rxw[i]) {
			buf_put(rel, pr->rxw[i]);
			pr->rxw[i] = NULL;
			pr->ooo--;
			rel->ooo_total--;
		}
	}
}

static void peer_drop_buffers(struct gm_rel *rel, struct gm_peer *pr)
{
	for (unsigned i = 0; i < rel->ring; i++) {
		if (pr->txw[i]) {
			buf_put(rel, pr->txw[i]);
			pr->txw[i] = NULL;
		}
	}
	rx_drop_all(rel, pr);
}

static void ack_list_remove(struct gm_rel *rel, struct gm_peer *pr)
{
	struct gm_peer **pp;

	if (!pr->ack_listed)
		return;
	for (pp = &rel->ack_list; *pp; pp = &(*pp)->ack_next) {
		if (*pp == pr) {
			*pp = pr->ack_next;
			break;
		}
	}
	pr->ack_listed = false;
}

void gm_rel_port_drain(struct gm_port *port, uint64_t now)
{
	for (struct gm_peer *pr = port->peers; pr; pr = pr->pnext)
		if (pr->ack_listed && pr->unacked)
			pr->ack_now = true;
	gm_rel_flush(port->rel, now);
}

void gm_rel_port_close(struct gm_port *port)
{
	struct gm_rel *rel = port->rel;
	struct gm_port **pp;
	struct gm_peer *pr, *n;

	for (pr = port->peers; pr; pr = n) {
		n = pr->pnext;
		ack_list_remove(rel, pr);
		peer_drop_buffers(rel, pr);
		free(pr->txw);
		free(pr);
		rel->npeers--;
	}
	gm_mac_destroy(port->mac);
	while (port->secrets) {
		struct gm_secret *s = port->secrets;

		port->secrets = s->next;
		gm_mac_destroy(s->mac);
		explicit_bzero(s->bytes, sizeof(s->bytes));
		free(s);
	}
	for (pp = &rel->ports; *pp; pp = &(*pp)->next) {
		if (*pp == port) {
			*pp = port->next;
			break;
		}
	}
	free(port);
}

static unsigned peer_hash(const struct gm_addr *a)
{
	unsigned h = a->port * 31u;

	for (int i = 0; i < 6; i++)
		h = h * 131u + a->mac[i];
	return h % PEER_BUCKETS;
}

static void peer_reset_tx(struct gm_peer *pr)
{
	pr->snd_una = pr->snd_nxt = pr->port->session;
	pr->peer_wnd = pr->port->rel->cfg.window;
	pr->rto_us = pr->port->rel->cfg.rto_us;
	pr->rto_deadline = 0;
	pr->recovering = false;
}

static struct gm_peer *peer_find(struct gm_port *port, const struct gm_addr *a)
{
	struct gm_peer *pr;

	for (pr = port->bucket[peer_hash(a)]; pr; pr = pr->hnext)
		if (pr->addr.port == a->port && !memcmp(pr->addr.mac, a->mac, 6))
			return pr;
	return NULL;
}

static void peer_push_head(struct gm_port *port, struct gm_peer *pr)
{
	pr->pnext = port->peers;
	if (port->peers)
		port->peers->pprev = pr;
	else
		port->ptail = pr;
	port->peers = pr;
}

struct gm_peer *gm_peer_get(struct gm_port *port, const struct gm_addr *remote)
{
	struct gm_peer *pr = peer_find(port, remote);
	unsigned w = port->rel->ring, h;

	if (pr)
		return pr;
	pr = calloc(1, sizeof(*pr));
	if (!pr)
		return NULL;
	pr->txw = calloc(2ul * w, sizeof(*pr->txw));
	if (!pr->txw) {
		free(pr);
		return NULL;
	}
	pr->rxw = pr->txw + w;
	pr->addr = *remote;
	pr->port = port;
	peer_reset_tx(pr);
	h = peer_hash(remote);
	pr->hnext = port->bucket[h];
	port->bucket[h] = pr;
	peer_push_head(port, pr);
	port->rel->npeers++;
	return pr;
}

static void peer_unlink(struct gm_port *port, struct gm_peer *pr)
{
	if (pr->pprev)
		pr->pprev->pnext = pr->pnext;
	else
		port->peers = pr->pnext;
	if (pr->pnext)
		pr->pnext->pprev = pr->pprev;
	else
		port->ptail = pr->pprev;
	pr->pnext = pr->pprev = NULL;
}

/*
 * Reclaimable: made by received frames, unknown to the upper half (which
 * holds no pointer to it, and to which nothing it sent was of use), with
 * nothing of ours in flight: what spoofed sources leave behind, half-open
 * or idle.  Nobody relies on its sequence state; a real source that is
 * reclaimed before it was delivered anything starts over on its next
 * (retransmitted) frame, having lost nothing.
 */
static bool peer_reclaimable(const struct gm_peer *pr)
{
	return pr->from_input && !pr->ctx && pr->snd_una == pr->snd_nxt;
}

static void peer_free(struct gm_rel *rel, struct gm_port *port, struct gm_peer *pr)
{
	struct gm_peer **pp;

	for (pp = &port->bucket[peer_hash(&pr->addr)]; *pp; pp = &(*pp)->hnext) {
		if (*pp == pr) {
			*pp = pr->hnext;
			break;
		}
	}
	peer_unlink(port, pr);
	ack_list_remove(rel, pr);
	rx_drop_all(rel, pr);
	free(pr->txw);
	free(pr);
	rel->npeers--;
}

/*
 * Free one reclaimable peer, oldest first, looking at RECLAIM_SCAN peers at
 * most; those looked at and kept go to the front, so the next attempt sees
 * others.
 */
static bool peer_reclaim(struct gm_rel *rel)
{
	unsigned looked = 0;

	for (struct gm_port *port = rel->ports; port; port = port->next) {
		struct gm_peer *stop = port->peers;

		while (port->ptail && looked++ < RECLAIM_SCAN) {
			struct gm_peer *pr = port->ptail;

			if (peer_reclaimable(pr)) {
				peer_free(rel, port, pr);
				rel->st.peers_reclaimed++;
				return true;
			}
			if (pr == stop)
				break;
			peer_unlink(port, pr);
			peer_push_head(port, pr);
		}
	}
	return false;
}

/* A peer for a frame from a new source, within FI_GAMMA_PEER_MAX. */
static struct gm_peer *peer_from_input(struct gm_rel *rel, struct gm_port *port,
                                       const struct gm_addr *src)
{
	struct gm_peer *pr;

	if (rel->npeers >= rel->peer_max && !peer_reclaim(rel)) {
		rel->st.peers_refused++;
		return NULL;
	}
	pr = gm_peer_get(port, src);
	if (pr)
		pr->from_input = true;
	return pr;
}

const struct gm_addr *gm_peer_addr(const struct gm_peer *peer)
{
	return &peer->addr;
}

void gm_peer_set_ctx(struct gm_peer *peer, void *ctx)
{
	peer->ctx = ctx;
}

void *gm_peer_ctx(const struct gm_peer *peer)
{
	return peer->ctx;
}

uint32_t gm_rel_peer_in_flight(const struct gm_peer *peer)
{
	return peer->snd_nxt - peer->snd_una;
}

unsigned gm_peer_queued(const struct gm_peer *peer)
{
	return peer->queued;
}

bool gm_rel_peer_failed(const struct gm_peer *peer)
{
	return peer->failed;
}

size_t gm_rel_peers(const struct gm_rel *rel)
{
	return rel->npeers;
}

size_t gm_rel_ooo_held(const struct gm_rel *rel)
{
	return rel->ooo_total;
}

uint32_t gm_rel_peer_next_seq(const struct gm_peer *peer, uint32_t session)
{
	return peer->rx_known && peer->remote_session == session ? peer->rcv_nxt : session;
}

/*
 * Frames in flight to pr that a frame of this type may add to.  The last
 * slot is kept for a NACK: a sender that closes in the middle of a pull
 * has filled the window with RDATA, and its receiver must still learn that
 * the rest will not come (gm_msg_shutdown) instead of waiting for the peer
 * timeout.
 */
static unsigned send_limit(const struct gm_peer *pr, uint8_t type)
{
	unsigned w = pr->port->rel->cfg.window;

	if (pr->peer_wnd < w)
		w = pr->peer_wnd;
	return type == GM_FT_NACK || w < 2 ? w : w - 1;
}

bool gm_peer_failed(const struct gm_peer *peer)
{
	return peer->failed;
}

bool gm_peer_can_send(const struct gm_peer *peer)
{
	return !peer->failed && !peer->dormant &&
	       peer->snd_nxt - peer->snd_una < send_limit(peer, GM_FT_RDATA) &&
	       pool_avail(peer->port->rel) > 0;
}

/* The receive window we advertise: frames past rcv_nxt we will accept. */
static unsigned adv_window(const struct gm_rel *rel, const struct gm_peer *pr)
{
	size_t a = pool_avail(rel) + 1;

	if (pr->rx_blocked)
		return 0;
	return a < rel->cfg.window ? (unsigned)a : rel->cfg.window;
}

static void write_eth(const struct gm_rel *rel, uint8_t *f, const uint8_t dst[6])
{
	gm_eth_encode(f, dst, rel->cfg.mac, rel->cfg.ethertype);
}

/* A sequenced frame of body bytes to peer, headers written, not yet queued. */
static struct gm_buf *tx_frame(struct gm_peer *peer, uint8_t type, size_t body, void *cookie,
                               int *err)
{
	struct gm_port *port = peer->port;
	struct gm_rel *rel = port->rel;
	struct gm_buf *b;

	*err = -FI_EIO;
	if (peer->failed)
		return NULL;
	*err = -FI_EINVAL;
	if (HDR_LEN + body > rel->cfg.max_frame || type == GM_FT_ACK || !type || type >= GM_FT_MAX)
		return NULL;
	*err = -FI_EAGAIN;
	if (peer->dormant || peer->snd_nxt - peer->snd_una >= send_limit(peer, type))
		return NULL;
	b = buf_get(rel);
	if (!b)
		return NULL;
	b->peer = peer;
	b->cookie = cookie;
	b->seq = peer->snd_nxt;
	b->len = b->hlen = ETH_HLEN + HDR_LEN + body;
	write_eth(rel, b->data, peer->addr.mac);
	gm_hdr_encode(b->data + ETH_HLEN,
	              &(struct gm_hdr){
	                  .version = GM_WIRE_VERSION,
	                  .type = type,
	                  .flags = GM_F_SEQ | (port->cls == GM_CLASS_LOW ? GM_F_LOW : 0),
	                  .dst_port = peer->addr.port,
	                  .src_port = port->num,
	                  .key = peer_key(peer),
	                  .session = port->session,
	                  .seq = b->seq,
	                  .len = (uint16_t)body,
	              });
	return b;
}

static void tx_queue(struct gm_peer *peer, struct gm_buf *b)
{
	struct gm_rel *rel = peer->port->rel;

	peer->txw[SLOT(rel, b->seq)] = b;
	peer->snd_nxt++;
	dq_add(rel, b, peer->port->cls, false);
}

void gm_txf_gather(const struct gm_txf *f, void *dst)
{
	uint8_t *p = dst;

	for (unsigned i = 0; i < f->iovcnt; i++) {
		memcpy(p, f->iov[i].iov_base, f->iov[i].iov_len);
		p += f->iov[i].iov_len;
	}
}

static size_t iov_total(const struct iovec *iov, size_t iov_cnt)
{
	size_t n = 0;

	for (size_t i = 0; i < iov_cnt; i++)
		n += iov[i].iov_len;
	return n;
}

/* Copy iov to p, chaining the CRC from crc; returns it. */
static uint32_t copy_crc(uint8_t *p, const struct iovec *iov, size_t iov_cnt, uint32_t crc)
{
	for (size_t i = 0; i < iov_cnt; i++) {
		crc = gm_crc32c_copy(crc, p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	return crc;
}

int gm_peer_send(struct gm_peer *peer, uint8_t type, const void *thdr, size_t thdr_len,
                 const struct iovec *iov, size_t iov_cnt, void *cookie)
{
	int err;
	struct gm_buf *b = tx_frame(peer, type, thdr_len + iov_total(iov, iov_cnt), cookie, &err);
	uint8_t *p;

	if (!b)
		return err;
	p = b->data + ETH_HLEN + HDR_LEN;
	/* Without a secret the CRC of the body comes with the copy; a MAC is
	 * computed as the frame leaves, since it covers the header too. */
	if (peer_mac(peer)) {
		memcpy(p, thdr, thdr_len);
		p += thdr_len;
		for (size_t i = 0; i < iov_cnt; i++) {
			memcpy(p, iov[i].iov_base, iov[i].iov_len);
			p += iov[i].iov_len;
		}
	} else {
		b->body_crc =
		    copy_crc(p + thdr_len, iov, iov_cnt, gm_crc32c_copy(0, p, thdr, thdr_len));
	}
	tx_queue(peer, b);
	return 0;
}

/*
 * gm_peer_send_crc and gm_peer_send_zc: the payload is copied into the
 * frame with its CRC, or left where it is (zc) and only read for its CRC.
 */
static int send_crc(struct gm_peer *peer, uint8_t type, size_t thdr_len, gm_thdr_fn enc, void *arg,
                    const struct iovec *iov, size_t iov_cnt, uint32_t *crc, void *cookie, bool zc)
{
	size_t plen = iov_total(iov, iov_cnt);
	int err;
	struct gm_buf *b = tx_frame(peer, type, thdr_len + plen, cookie, &err);
	uint8_t *p;
	uint32_t seed = *crc;

	if (!b)
		return err;
	p = b->data + ETH_HLEN + HDR_LEN;
	if (zc) {
		*crc = seed;
		for (size_t i = 0; i < iov_cnt; i++) {
			*crc = gm_crc32c(*crc, iov[i].iov_base, iov[i].iov_len);
			b->iov[1 + i] = iov[i];
		}
		b->nzc = (uint8_t)iov_cnt;
		b->hlen = (uint32_t)(ETH_HLEN + HDR_LEN + thdr_len);
	} else {
		*crc = copy_crc(p + thdr_len, iov, iov_cnt, seed);
	}
	enc(p, *crc, arg);
	/* The body's checksum is the payload's CRC from another seed, the
	 * CRC of the type header (gm_crc32c_shift), so no second pass. */
	if (!peer_mac(peer))
		b->body_crc = *crc ^ gm_crc32c_shift(seed ^ gm_crc32c(0, p, thdr_len), plen);
	tx_queue(peer, b);
	return 0;
}

int gm_peer_send_crc(struct gm_peer *peer, uint8_t type, size_t thdr_len, gm_thdr_fn enc, void *arg,
                     const struct iovec *iov, size_t iov_cnt, uint32_t *crc, void *cookie)
{
	return send_crc(peer, type, thdr_len, enc, arg, iov, iov_cnt, crc, cookie, false);
}

int gm_peer_send_zc(struct gm_peer *peer, uint8_t type, size_t thdr_len, gm_thdr_fn enc, void *arg,
                    const struct iovec *iov, size_t iov_cnt, uint32_t *crc, void *cookie)
{
	return send_crc(peer, type, thdr_len, enc, arg, iov, iov_cnt, crc, cookie,
	                iov_cnt <= GM_ZC_IOV);
}

void *gm_peer_append(struct gm_peer *peer, size_t thdr_len, gm_thdr_fn enc, void *arg,
                     const struct iovec *iov, size_t iov_cnt, uint32_t *crc)
{
	struct gm_rel *rel = peer->port->rel;
	size_t plen = iov_total(iov, iov_cnt), body;
	struct gm_buf *b;
	uint8_t *gm, *p;
	uint32_t seed = *crc;

	if (peer->failed || peer->snd_nxt == peer->snd_una)
		return NULL;
	b = peer->txw[SLOT(rel, peer->snd_nxt - 1)];
	/* Not once it has left (a receiver may hold it) or been sealed. */
	if (!b || !b->cookie || b->sent || b->sealed || b->retx || b->nzc)
		return NULL;
	gm = b->data + ETH_HLEN;
	if (gm_hdr_type(gm) != GM_FT_EAGER && gm_hdr_type(gm) != GM_FT_BUNDLE)
		return NULL;
	body = b->len - ETH_HLEN - HDR_LEN;
	if (HDR_LEN + body + thdr_len + plen > rel->cfg.max_frame)
		return NULL;
	p = b->data + b->len;
	*crc = copy_crc(p + thdr_len, iov, iov_cnt, seed);
	enc(p, *crc, arg);
	/* The body's CRC goes on through the rider: header, then payload,
	 * whose CRC from another seed is a shift away (gm_crc32c_shift). */
	if (!peer_mac(peer))
		b->body_crc =
		    *crc ^ gm_crc32c_shift(seed ^ gm_crc32c(b->body_crc, p, thdr_len), plen);
	body += thdr_len + plen;
	b->len = b->hlen = (uint32_t)(ETH_HLEN + HDR_LEN + body);
	gm_hdr_set_bundle(gm, (uint16_t)body);
	return b->cookie;
}

void gm_peer_ack_now(struct gm_peer *peer)
{
	struct gm_rel *rel = peer->port->rel;
	struct gm_buf *b;

	if (peer->snd_nxt == peer->snd_una)
		return;
	b = peer->txw[SLOT(rel, peer->snd_nxt - 1)];
	if (b)
		b->data[ETH_HLEN + offsetof(struct gm_hdr, flags)] |= GM_F_ACKNOW;
}

/* ---- failure ---- */

static void fail_peer(struct gm_rel *rel, struct gm_peer *pr, int err)
{
	const struct gm_port_ops *ops = pr->port->ops;
	void *pctx = pr->port->ctx;

	pr->failed = true;
	pr->awaited = false;
	rel->st.peers_failed++;
	ack_list_remove(rel, pr);
	pr->rto_deadline = 0;
	pr->unacked = 0;
	pr->ack_now = false;
	pr->rx_blocked = false;
	pr->peer_busy = false;
	rx_drop_all(rel, pr);
	while (pr->snd_una != pr->snd_nxt) {
		struct gm_buf *b = pr->txw[SLOT(rel, pr->snd_una)];
		void *cookie = b ? b->cookie : NULL;

		pr->txw[SLOT(rel, pr->snd_una)] = NULL;
		pr->snd_una++;
		if (b)
			buf_put(rel, b);
		if (ops->failed_frame && cookie != &probe_cookie)
			ops->failed_frame(pctx, pr, cookie, -FI_EIO);
	}
	if (ops->peer_failed)
		ops->peer_failed(pctx, pr, err);
}

/* ---- receive ---- */

static void ack_owe(struct gm_rel *rel, struct gm_peer *pr, bool now, uint64_t now_us)
{
	if (now)
		pr->ack_now = true;
	if (!pr->ack_listed) {
		pr->ack_listed = true;
		pr->ack_next = rel->ack_list;
		rel->ack_list = pr;
	}
	if (pr->ack_now) {
		arm(rel, now_us);
	} else if (!pr->ack_deadline) {
		pr->ack_deadline = now_us + ACK_DELAY_US;
		arm(rel, pr->ack_deadline);
	}
}

enum { RETX_RTO = 1, RETX_FAST = 2 };

/* Counted when it leaves: an ack may still overtake it in the queue. */
static void retransmit(struct gm_rel *rel, struct gm_buf *b, uint8_t why)
{
	if (b->dqi.queued)
		return;
	b->retx = why;
	b->resent = true;
	dq_add(rel, b, b->dqi.cls, false);
}

/*
 * Round-trip estimate (RFC 6298's smoothing).  FI_GAMMA_RTO is the floor:
 * the timeout only grows above it when the peer is measurably slow to
 * answer, as a descheduled process on a loaded host is, so that it is not
 * flooded with retransmissions of frames it already holds.
 */
static void rtt_sample(struct gm_rel *rel, struct gm_peer *pr, uint64_t rtt)
{
	unsigned r = rtt > rel->rto_cap_us ? rel->rto_cap_us : (unsigned)rtt;

	if (!pr->srtt_us) {
		pr->srtt_us = r ? r : 1;
		pr->rttvar_us = r / 2;
		return;
	}
	unsigned d = r > pr->srtt_us ? r - pr->srtt_us : pr->srtt_us - r;
	pr->rttvar_us = (3 * pr->rttvar_us + d) / 4;
	pr->srtt_us = (7 * pr->srtt_us + r) / 8;
	if (!pr->srtt_us)
		pr->srtt_us = 1;
}

static unsigned peer_rto(const struct gm_rel *rel, const struct gm_peer *pr)
{
	uint64_t rto = (uint64_t)pr->srtt_us + 4ull * pr->rttvar_us;

	if (rto < rel->cfg.rto_us)
		rto = rel->cfg.rto_us;
	return rto > rel->rto_cap_us ? rel->rto_cap_us : (unsigned)rto;
}

/*
 * A partial ack after a timeout, with an empty SACK: the receiver has the
 * frames up to ack and none of those just above, as after a lost burst (a
 * link down for a while, a full queue) that took a whole window.  Resend
 * two for each frame acked, as a slow start would: the window comes back
 * in a few round trips, not one frame per backed-off timeout.  (With
 * frames held above the gap, the SACK's fast retransmits fill the holes.)
 */
static void recover_more(struct gm_rel *rel, struct gm_peer *pr, unsigned acked)
{
	unsigned budget = 2 * acked;
	uint32_t s = seq_diff(pr->recover_next, pr->snd_una) > 0 ? pr->recover_next : pr->snd_una;

	for (; budget && seq_diff(s, pr->recover) < 0; s++) {
		struct gm_buf *b = pr->txw[SLOT(rel, s)];

		if (b->sent && !b->sacked && !b->dqi.queued) {
			retransmit(rel, b, RETX_RTO);
			budget--;
		}
	}
	pr->recover_next = s;
}

/*
 * lost_above: the ack came in an ACK frame whose SACK bitmap is empty, so
 * the receiver holds none of the frames just above ack, and that echoes a
 * frame sent after the timeout, so it has read everything sent before
 * (the link keeps order): what it lacks is lost, not still queued for it.
 */
static void process_ack(struct gm_rel *rel, struct gm_peer *pr, uint32_t ack, unsigned wnd,
                        bool lost_above, uint64_t now)
{
	const struct gm_port_ops *ops = pr->port->ops;
	void *pctx = pr->port->ctx;

	pr->peer_wnd = wnd ? wnd : 1;
	if (!wnd) {
		/* It holds our frames until its upper half takes them: alive, not failing. */
		pr->peer_busy = true;
		pr->last_progress = now;
	} else if (pr->peer_busy) {
		/* It takes frames again: what it could not hold goes out now, not at the RTO. */
		pr->peer_busy = false;
		if (pr->rto_deadline) {
			pr->rto_deadline = now;
			arm(rel, now);
		}
	}
	if (seq_diff(ack, pr->snd_una) <= 0 || seq_diff(ack, pr->snd_nxt) > 0)
		return;
	unsigned acked = (unsigned)seq_diff(ack, pr->snd_una);

	while (pr->snd_una != ack && !pr->failed) {
		struct gm_buf *b = pr->txw[SLOT(rel, pr->snd_una)];
		void *cookie = b->cookie;

		pr->txw[SLOT(rel, pr->snd_una)] = NULL;
		pr->snd_una++;
		if (b->sent && !b->resent && now >= b->tx_time)
			rtt_sample(rel, pr, now - b->tx_time);
		buf_put(rel, b);
		if (ops->acked && cookie != &probe_cookie)
			ops->acked(pctx, pr, cookie);
	}
	if (pr->recovering && !pr->failed) {
		if (seq_diff(ack, pr->recover) >= 0)
			pr->recovering = false;
		else if (lost_above)
			recover_more(rel, pr, acked);
	}
	pr->rto_us = peer_rto(rel, pr);
	pr->last_progress = now;
	pr->stall_due = 0;
	pr->retry_at = 0;
	if (pr->snd_una != pr->snd_nxt && pr->txw[SLOT(rel, pr->snd_una)]->sent) {
		pr->rto_deadline = now + pr->rto_us;
		arm(rel, pr->rto_deadline);
	} else {
		pr->rto_deadline = 0;
	}
	if (pr->dormant && pr->snd_una == pr->snd_nxt && !pr->failed) {
		/* Every VOID acknowledged: the other side skipped them, the rail works. */
		pr->dormant = false;
		rel->st.rails_revived++;
		if (ops->revived)
			ops->revived(pctx, pr);
	}
}

static void process_sack(struct gm_rel *rel, struct gm_peer *pr, uint32_t ack, uint64_t sack)
{
	unsigned above = 0;
	int top;

	if (!sack || seq_diff(ack, pr->snd_una) < 0)
		return;
	top = 63 - __builtin_clzll(sack);
	/* Walk down from the highest sacked frame, counting sacked ones above. */
	for (int i = top; i >= -1; i--) {
		uint32_t s = ack + 1 + i;
		struct gm_buf *b;

		if (seq_diff(s, pr->snd_nxt) >= 0 || seq_diff(s, pr->snd_una) < 0)
			continue;
		b = pr->txw[SLOT(rel, s)];
		if (!b || b->seq != s)
			continue;
		if (i >= 0 && (sack >> i) & 1) {
			b->sacked = true;
			above++;
		} else if (above >= FAST_RETX_DUPTHRESH && !b->fast_done && !b->sacked && b->sent) {
			b->fast_done = true;
			retransmit(rel, b, RETX_FAST);
		}
	}
}

/*
 * Hand the frame at rcv_nxt to the upper half and move past it.  False if
 * the upper half refused it for now (its caps, gm_port_ops.recv): nothing
 * changed, and the peer is blocked until gm_peer_rx_resume.
 */
static bool deliver(struct gm_port *port, struct gm_peer *pr, const uint8_t *gm,
                    const struct gm_hdr *h, bool crc_known, uint32_t body_crc)
{
	struct gm_rx_frame f = {.hdr = h,
	                        .body = gm + HDR_LEN,
	                        .body_len = h->len,
	                        .crc_known = crc_known,
	                        .body_crc = body_crc};

	/* rcv_nxt moves first: whatever the upper half sends acks this frame. */
	pr->rcv_nxt++;
	pr->unacked++;
	if (h->type == GM_FT_PING || port->ops->recv(port->ctx, pr, &f)) {
		pr->rx_blocked = false;
		return true;
	}
	pr->rcv_nxt--;
	pr->unacked--;
	pr->rx_blocked = true;
	port->rel->st.rx_refused++;
	return false;
}

/* Keep a frame at seq in rxw until its turn; false: no room, dropped (its
 * sender retransmits it). */
static bool rx_hold(struct gm_rel *rel, struct gm_peer *pr, const uint8_t *gm,
                    const struct gm_hdr *h)
{
	struct gm_buf *b;

	if (pr->ooo >= rel->ooo_peer_max || rel->ooo_total >= rel->ooo_max) {
		rel->st.ooo_dropped++;
		return false;
	}
	b = buf_get(rel);
	if (!b)
		return false;
	b->seq = h->seq;
	b->len = HDR_LEN + h->len;
	b->rx_crc = rel->rx_crc_known;
	b->body_crc = rel->rx_body_crc;
	memcpy(b->data, gm, b->len);
	pr->rxw[SLOT(rel, h->seq)] = b;
	pr->ooo++;
	rel->ooo_total++;
	return true;
}

/* The gap before rcv_nxt closed, or the upper half takes frames again:
 * hand over what waited.  True if any of it asked to be acked at once
 * (GM_F_ACKNOW). */
static bool deliver_held(struct gm_rel *rel, struct gm_port *port, struct gm_peer *pr)
{
	bool ack_now = false;

	while (!pr->failed) {
		struct gm_buf *b = pr->rxw[SLOT(rel, pr->rcv_nxt)];
		struct gm_hdr bh;

		if (!b)
			break;
		pr->rxw[SLOT(rel, pr->rcv_nxt)] = NULL;
		pr->ooo--;
		rel->ooo_total--;
		gm_hdr_decode(b->data, b->len, &bh);
		if (!deliver(port, pr, b->data, &bh, b->rx_crc, b->body_crc)) {
			/* Refused: nothing changed, it waits where it was. */
			pr->rxw[SLOT(rel, pr->rcv_nxt)] = b;
			pr->ooo++;
			rel->ooo_total++;
			break;
		}
		ack_now |= bh.flags & GM_F_ACKNOW;
		buf_put(rel, b);
	}
	return ack_now;
}

/*
 * VOID (gm_wire.h): its sender moved the frames from here up to end to
 * another rail.  Skip them: drop what is held of them, take end as the
 * next in order and hand over what waited behind.  It may arrive before,
 * among or after the frames it voids; one that voids nothing more is a
 * duplicate.
 */
static void receive_void(struct gm_rel *rel, struct gm_port *port, struct gm_peer *pr,
                         const uint8_t *gm, const struct gm_hdr *h, uint64_t now)
{
	unsigned w = rel->cfg.window;
	struct gm_void_hdr v;
	int32_t skip, span;

	if (h->len < sizeof(v)) {
		rel->st.bad_hdr++;
		return;
	}
	gm_void_hdr_decode(gm + HDR_LEN, &v);
	skip = seq_diff(v.end, pr->rcv_nxt);
	span = seq_diff(v.end, h->seq);
	if (skip <= 0 || (unsigned)skip > w || span <= 0 || (unsigned)span > w) {
		rel->st.dup_dropped++;
		ack_owe(rel, pr, true, now);
		return;
	}
	for (uint32_t s = pr->rcv_nxt; s != v.end; s++) {
		struct gm_buf *b = pr->rxw[SLOT(rel, s)];

		if (b && b->seq == s) {
			pr->rxw[SLOT(rel, s)] = NULL;
			pr->ooo--;
			rel->ooo_total--;
			buf_put(rel, b);
		}
	}
	rel->st.frames_voided += (unsigned)skip;
	pr->rcv_nxt = v.end;
	deliver_held(rel, port, pr);
	if (!pr->failed)
		ack_owe(rel, pr, true, now);
}

static void receive_seq(struct gm_rel *rel, struct gm_port *port, struct gm_peer *pr,
                        const uint8_t *gm, const struct gm_hdr *h, uint64_t now)
{
	unsigned w = rel->cfg.window;
	int32_t d = seq_diff(h->seq, pr->rcv_nxt);
	bool ack_now;

	if (h->type == GM_FT_VOID) {
		receive_void(rel, port, pr, gm, h, now);
		return;
	}
	if (d < 0 || (unsigned)d >= w) {
		/* Old (our ack was lost) or beyond the window: re-ack at once. */
		rel->st.dup_dropped++;
		ack_owe(rel, pr, true, now);
		return;
	}
	if (d > 0) {
		/* Dropped when there is no room, as if lost: its sender retransmits it. */
		if (pr->rxw[SLOT(rel, h->seq)])
			rel->st.dup_dropped++;
		else if (rx_hold(rel, pr, gm, h))
			rel->st.ooo_buffered++;
		ack_owe(rel, pr, true, now);
		return;
	}
	if (pr->rxw[SLOT(rel, h->seq)]) {
		/* Refused earlier and held: this is its retransmission. */
		rel->st.dup_dropped++;
		ack_owe(rel, pr, true, now);
		return;
	}
	if (!deliver(port, pr, gm, h, rel->rx_crc_known, rel->rx_body_crc)) {
		/* Our ack at once says window 0: its sender waits, but knows we live. */
		rx_hold(rel, pr, gm, h);
		ack_owe(rel, pr, true, now);
		return;
	}
	ack_now = deliver_held(rel, port, pr) || (h->flags & GM_F_ACKNOW);
	if (pr->failed)
		return;
	ack_owe(rel, pr, ack_now || pr->unacked >= rel->ack_every, now);
}

void gm_peer_rx_resume(struct gm_peer *peer)
{
	struct gm_rel *rel = peer->port->rel;

	if (!peer->rx_blocked || peer->failed)
		return;
	peer->rx_blocked = false;
	deliver_held(rel, peer->port, peer);
	/* The window it shows may open: say so now, its sender is waiting. */
	if (!peer->failed)
		ack_owe(rel, peer, true, 0);
}

static bool ack_stale(const struct gm_rel *rel, const struct gm_peer *pr, uint32_t ack)
{
	return seq_diff(ack, pr->snd_nxt) > 0 ||
	       seq_diff(ack, pr->snd_una) < -(int32_t)rel->cfg.window;
}

/*
 * A frame that passed its MAC but shows a known peer with a new session: a
 * restart, or a replay of a frame from one of the peer's earlier
 * incarnations (those still carry valid MACs).  Believing it would fail
 * everything in flight with the peer, so it must first prove it is live:
 * we answer with an ack, whose nonce is at least pr->challenge, and accept
 * a new session once a frame of it echoes a nonce we sent since.  With a
 * secret only a member of the job that received our challenge can do that;
 * without one, a station that sees our frames can.  Until then its frames
 * are dropped (it retransmits them) and the old state stays intact.  The
 * challenge is the peer's, not a session's, so that replays of other
 * sessions interleaved with a real restart do not keep restarting it; it
 * is renewed after a peer timeout, so that a frame echoing an old challenge
 * proves its sender was live recently.
 *
 * Not covered: a peer we have no state for takes the session of its first
 * valid frame.  The first frames of a stream, sent before their sender
 * heard from us, carry no ack; replayed to a later incarnation of our port
 * (same MAC and port number) that never met the sender, they are taken for
 * a new stream's start and delivered.  With a secret only frames of the
 * job itself can be replayed so, and a job that opens its endpoints once
 * (MPI) has no later incarnation.
 */
static bool restart_proven(struct gm_rel *rel, struct gm_port *port, struct gm_peer *pr,
                           const struct gm_hdr *h, uint64_t now)
{
	if (!pr->challenged || now - pr->challenge_time > rel->cfg.peer_timeout_ms * 1000ull) {
		pr->challenged = true;
		pr->challenge = port->tx_nonce + 1;
		pr->challenge_time = now;
		rel->st.restart_challenges++;
	} else if (h->echo >= pr->challenge && h->echo <= port->tx_nonce) {
		pr->challenged = false;
		return true;
	}
	ack_owe(rel, pr, true, now);
	return false;
}

/* Remember the peer's nonces, for the echo our frames carry back. */
static void note_echo(struct gm_peer *pr, const struct gm_hdr *h)
{
	if (!pr->echo_known || pr->echo_session != h->session) {
		pr->echo_known = true;
		pr->echo_session = h->session;
		pr->echo = h->nonce;
	} else if (h->nonce > pr->echo) {
		pr->echo = h->nonce;
	}
}

/* The frame's integrity under the port's secret, or its CRC without one. */
static bool frame_authentic(struct gm_rel *rel, const struct gm_port *port, const uint8_t *frame,
                            const struct gm_hdr *h)
{
	rel->rx_crc_known = false;
	if (port->mac) {
		if (gm_mac_check(port->mac, frame, ETH_HLEN + HDR_LEN + h->len) == GM_WIRE_OK)
			return true;
		rel->st.bad_mac++;
		return false;
	}
	if (gm_frame_check_crc(frame + ETH_HLEN, HDR_LEN + h->len, &rel->rx_body_crc) ==
	    GM_WIRE_OK) {
		rel->rx_crc_known = true;
		return true;
	}
	rel->st.bad_csum++;
	return false;
}

void gm_rel_input(struct gm_rel *rel, const void *frame, size_t len, uint64_t now)
{
	const uint8_t *gm = (const uint8_t *)frame + ETH_HLEN;
	struct gm_port *port;
	struct gm_peer *pr;
	struct gm_addr src;
	struct gm_hdr h;
	int rc;

	rel->st.rx_frames++;
	rel->st.rx_bytes += len;
	if (len < ETH_HLEN + HDR_LEN) {
		rel->st.bad_hdr++;
		return;
	}
	rc = gm_hdr_decode(gm, len - ETH_HLEN, &h);
	if (rc == GM_WIRE_EVERSION) {
		rel->st.bad_version++;
		return;
	}
	/*
	 * A frame longer than our MTU (a NIC may take more; the ring slot has
	 * slack) would overflow a reorder buffer: drop it like any bad header.
	 */
	if (rc || HDR_LEN + h.len > rel->cfg.max_frame) {
		rel->st.bad_hdr++;
		return;
	}
	for (port = rel->ports; port; port = port->next)
		if (port->num == h.dst_port)
			break;
	if (!port) {
		rel->st.bad_port++;
		return;
	}
	if (h.key != port->key) {
		rel->st.bad_key++;
		return;
	}
	/* Nothing below runs for a frame that is not authentic: no state yet. */
	if (!frame_authentic(rel, port, frame, &h))
		return;
	if (h.type != GM_FT_ACK && !(h.flags & GM_F_SEQ)) {
		rel->st.bad_hdr++;
		return;
	}
	memcpy(src.mac, (const uint8_t *)frame + 6, 6);
	src.port = h.src_port;
	pr = peer_find(port, &src);
	if (!pr && !(pr = peer_from_input(rel, port, &src)))
		return;
	if (pr->has_old_session && h.session == pr->old_session) {
		rel->st.dup_dropped++; /* sent before the peer restarted */
		return;
	}
	if (pr->rx_known && h.session != pr->remote_session) {
		if (!restart_proven(rel, port, pr, &h, now))
			return;
		/* The peer restarted: its old stream and ours to it are void. */
		rel->st.restarts++;
		if (!pr->failed)
			fail_peer(rel, pr, -FI_ECONNRESET);
		pr->failed = false;
		pr->rx_known = false;
		pr->old_session = pr->remote_session;
		pr->has_old_session = true;
		peer_reset_tx(pr);
	}
	note_echo(pr, &h);
	if (pr->failed)
		return;
	pr->last_heard = now;
	if ((h.flags & GM_F_ACK) && ack_stale(rel, pr, h.ack)) {
		/*
		 * It acks a stream we never sent: it still talks to an
		 * earlier incarnation of this port.  Drop, and answer with
		 * an ack that shows our session, so it resets.
		 */
		rel->st.dup_dropped++;
		if (h.type != GM_FT_ACK) {
			if (!pr->rx_known) {
				pr->rx_known = true;
				pr->remote_session = h.session;
				pr->rcv_nxt = h.session;
			}
			ack_owe(rel, pr, true, now);
		}
		return;
	}
	if (!pr->rx_known) {
		pr->rx_known = true;
		pr->remote_session = h.session;
		pr->rcv_nxt = h.session;
	}
	if (h.type == GM_FT_ACK) {
		struct gm_ack_body ab;

		rel->st.acks_rcvd++;
		gm_ack_body_decode(gm + HDR_LEN, &ab);
		/* SACK first: what it marks held, recovery (process_ack) skips. */
		if (h.flags & GM_F_ACK) {
			process_sack(rel, pr, h.ack, ab.sack);
			process_ack(rel, pr, h.ack, h.wnd, !ab.sack && h.echo >= pr->recover_nonce,
			            now);
		}
		return;
	}
	if (h.flags & GM_F_ACK)
		process_ack(rel, pr, h.ack, h.wnd, false, now);
	if (!pr->failed)
		receive_seq(rel, port, pr, gm, &h, now);
}

/* ---- timers ---- */

void gm_peer_await(struct gm_peer *peer)
{
	if (peer->awaited || peer->failed || peer->dormant)
		return;
	peer->awaited = true;
	peer->await_started = false;
	arm(peer->port->rel, 0); /* the next flush starts the clock */
}

/*
 * Keepalive for an awaited peer: silence is measured from the last frame
 * heard (or from when the wait began), whether or not anything is in
 * flight, so a peer is failed within peer_timeout_ms of its last sign of
 * life.  A quarter of that into a silence a sequenced probe goes out; the
 * RTO machinery resends it, and its ack (or any other frame) ends the
 * silence.  Returns true if the peer failed.
 */
static bool keepalive(struct gm_rel *rel, struct gm_peer *pr, uint64_t now, uint64_t *next)
{
	const uint64_t timeout = rel->cfg.peer_timeout_ms * 1000ull, idle = timeout / 4;
	uint64_t heard;

	if (!pr->await_started) {
		pr->await_started = true;
		pr->await_since = now;
	}
	heard = pr->last_heard > pr->await_since ? pr->last_heard : pr->await_since;
	if (now - heard < idle) {
		if (heard + idle < *next)
			*next = heard + idle;
		return false;
	}
	if (pr->port->ops->awaited && !pr->port->ops->awaited(pr->port->ctx, pr)) {
		pr->awaited = false;
		return false;
	}
	if (now - heard >= timeout) {
		rel->st.timeouts++;
		fail_peer(rel, pr, -FI_EIO);
		return true;
	}
	if (heard + timeout < *next)
		*next = heard + timeout;
	if (pr->snd_una != pr->snd_nxt)
		return false; /* the ack of what is in flight answers as well */
	if (gm_peer_probe(pr) && now + rel->cfg.rto_us < *next) /* no buffer: try again soon */
		*next = now + rel->cfg.rto_us;
	return false;
}

int gm_peer_probe(struct gm_peer *peer)
{
	int rc;

	if (peer->snd_una != peer->snd_nxt)
		return 0; /* the ack of what is in flight answers as well */
	rc = gm_peer_send(peer, GM_FT_PING, NULL, 0, NULL, 0, &probe_cookie);
	if (!rc)
		peer->port->rel->st.probes++;
	return rc;
}

/* ---- rails ---- */

/* A zero-copy frame's payload copied in behind its header (the pool buffer has room). */
static void buf_linearize(struct gm_buf *b)
{
	for (unsigned i = 1; i <= b->nzc; i++) {
		memcpy(b->data + b->hlen, b->iov[i].iov_base, b->iov[i].iov_len);
		b->hlen += (uint32_t)b->iov[i].iov_len;
	}
	b->nzc = 0;
}

/* Rewrite a frame in flight, in place and with its seq, as a VOID up to end. */
static void make_void(struct gm_buf *b, uint32_t end)
{
	uint8_t *gm = b->data + ETH_HLEN;
	struct gm_void_hdr v = {.end = end};
	struct gm_hdr h;

	gm_hdr_decode(gm, b->len - ETH_HLEN, &h);
	h.type = GM_FT_VOID;
	h.len = sizeof(v);
	gm_hdr_encode(gm, &h);
	gm_void_hdr_encode(gm + HDR_LEN, &v);
	b->len = b->hlen = ETH_HLEN + HDR_LEN + sizeof(v);
	b->nzc = 0;
	b->body_crc = gm_crc32c(0, gm + HDR_LEN, sizeof(v));
	b->cookie = &probe_cookie;
	b->sealed = false;
	b->sacked = false;
	b->fast_done = false;
}

unsigned gm_peer_reclaim(struct gm_peer *peer, gm_reclaim_fn fn, void *ctx)
{
	struct gm_rel *rel = peer->port->rel;
	unsigned moved = 0;
	int err;

	if (peer->failed || peer->dormant)
		return 0;
	for (uint32_t s = peer->snd_una; s != peer->snd_nxt; s++) {
		struct gm_buf *b = peer->txw[SLOT(rel, s)];
		const uint8_t *gm = b->data + ETH_HLEN;

		if (b->cookie != &probe_cookie) {
			buf_linearize(b);
			fn(ctx, gm[offsetof(struct gm_hdr, type)], gm + HDR_LEN,
			   b->len - ETH_HLEN - HDR_LEN, b->cookie);
			moved++;
		}
		make_void(b, peer->snd_nxt);
	}
	if (peer->snd_una == peer->snd_nxt) {
		/* Nothing in flight: one VOID of its own, the probe that revives it. */
		struct gm_buf *b =
		    tx_frame(peer, GM_FT_VOID, sizeof(struct gm_void_hdr), &probe_cookie, &err);

		if (b) {
			gm_void_hdr_encode(b->data + ETH_HLEN + HDR_LEN,
			                   &(struct gm_void_hdr){.end = b->seq + 1});
			b->body_crc =
			    gm_crc32c(0, b->data + ETH_HLEN + HDR_LEN, sizeof(struct gm_void_hdr));
			tx_queue(peer, b);
		}
	}
	peer->dormant = true;
	peer->awaited = false;
	rel->st.rails_failed++;
	rel->st.frames_moved += moved;
	return moved;
}

uint64_t gm_peer_retry(struct gm_peer *peer, uint64_t now)
{
	struct gm_rel *rel = peer->port->rel;

	if (!peer->retry_at && peer->snd_una != peer->snd_nxt) {
		struct gm_buf *b = peer->txw[SLOT(rel, peer->snd_una)];

		if (b->sent)
			retransmit(rel, b, RETX_RTO);
		peer->rto_us = peer_rto(rel, peer);
		peer->rto_deadline = now + peer->rto_us;
		arm(rel, peer->rto_deadline);
		peer->retry_at = now;
	}
	return peer->retry_at;
}

bool gm_peer_dormant(const struct gm_peer *peer)
{
	return peer->dormant;
}

bool gm_peer_idle(const struct gm_peer *peer)
{
	return peer->snd_una == peer->snd_nxt;
}

struct gm_port *gm_peer_port(const struct gm_peer *peer)
{
	return peer->port;
}

uint64_t gm_peer_last_heard(const struct gm_peer *peer)
{
	return peer->last_heard;
}

bool gm_peer_link_up(const struct gm_peer *peer)
{
	const struct gm_rel *rel = peer->port->rel;

	return !rel->link.up || rel->link.up(rel->link.ctx);
}

/*
 * Rails (cfg.stall_us): tell the upper half that frames to the peer wait
 * unacknowledged, at every retransmission timeout (it checks the link) and,
 * once they have waited half the rail timeout, every RTO floor (it compares
 * with the other rails).  Returns true if it moved them (the peer is
 * dormant now).
 */
static bool stall_check(struct gm_rel *rel, struct gm_peer *pr, uint64_t now, uint64_t *next)
{
	const struct gm_port_ops *ops = pr->port->ops;
	const uint64_t half = rel->cfg.stall_us / 2;
	uint64_t due;

	if (!rel->cfg.stall_us || !ops->stalled || pr->dormant)
		return false;
	due = pr->stall_due ? pr->stall_due : pr->last_progress + half;
	if (now >= due || now >= pr->rto_deadline) {
		if (now - pr->last_progress >= half)
			pr->stall_due = now + rel->cfg.rto_us;
		ops->stalled(pr->port->ctx, pr, now, now - pr->last_progress);
		if (pr->dormant || pr->failed)
			return true;
		due = pr->stall_due ? pr->stall_due : pr->last_progress + half;
	}
	if (due < *next)
		*next = due;
	return false;
}

static void peer_timers(struct gm_rel *rel, struct gm_peer *pr, uint64_t now, uint64_t *next)
{
	if (pr->failed || (pr->awaited && keepalive(rel, pr, now, next)) || !pr->rto_deadline)
		return;
	/* A dormant peer probes until its rail comes back: never failed for silence. */
	if (!pr->dormant && now - pr->last_progress >= rel->cfg.peer_timeout_ms * 1000ull) {
		rel->st.timeouts++;
		fail_peer(rel, pr, -FI_EIO);
		return;
	}
	if (stall_check(rel, pr, now, next)) {
		if (pr->rto_deadline && pr->rto_deadline < *next) /* its VOIDs' timer */
			*next = pr->rto_deadline;
		return;
	}
	if (now >= pr->rto_deadline) {
		/*
		 * Resend only the oldest unacked frame.  Its answer (an
		 * immediate ack with the SACK bitmap, since a duplicate or a
		 * gap is acked at once) tells which others are missing, and
		 * those go out by fast retransmit; resending the whole window
		 * would mostly duplicate frames a slow receiver already holds.
		 */
		bool probed = false;

		rel->st.timeouts++;
		pr->recovering = true;
		pr->recover = pr->snd_nxt;
		pr->recover_next = pr->snd_una;
		pr->recover_nonce = pr->port->tx_nonce + 1;
		for (uint32_t s = pr->snd_una; s != pr->snd_nxt; s++) {
			struct gm_buf *b = pr->txw[SLOT(rel, s)];

			/*
			 * SACK is advisory (as in TCP after a timeout): a receiver
			 * may have dropped what it sacked, and a forged SACK must
			 * not keep a frame from ever being resent.
			 */
			b->sacked = false;
			b->fast_done = false;
			if (!probed && b->sent) {
				retransmit(rel, b, RETX_RTO);
				probed = true;
				pr->recover_next = s + 1;
			}
		}
		pr->rto_us = pr->rto_us * 2 > rel->rto_cap_us ? rel->rto_cap_us : pr->rto_us * 2;
		/* A dead rail is probed every rail timeout, so it is soon used again. */
		if (pr->dormant && rel->cfg.stall_us && pr->rto_us > rel->cfg.stall_us)
			pr->rto_us = rel->cfg.stall_us;
		pr->rto_deadline = now + pr->rto_us;
	}
	if (pr->rto_deadline < *next)
		*next = pr->rto_deadline;
	if (!pr->dormant && pr->last_progress + rel->cfg.peer_timeout_ms * 1000ull < *next)
		*next = pr->last_progress + rel->cfg.peer_timeout_ms * 1000ull;
}

static void run_timers(struct gm_rel *rel, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	for (struct gm_port *port = rel->ports; port; port = port->next) {
		struct gm_peer *pr = port->peers;

		while (pr) {
			struct gm_peer *n = pr->pnext;

			peer_timers(rel, pr, now, &next);
			pr = n;
		}
	}
	for (struct gm_peer *pr = rel->ack_list; pr; pr = pr->ack_next) {
		if (pr->ack_now)
			next = now;
		else if (pr->ack_deadline && pr->ack_deadline < next)
			next = pr->ack_deadline;
	}
	rel->next_deadline = next;
}

/* ---- transmit ---- */

/*
 * What may change between transmissions: ack, window and echo.  Returns
 * whether the header changed, so that a frame the link refused and that
 * goes out again unchanged keeps its seal (the same message, the same
 * nonce) instead of costing another MAC.
 */
static bool stamp(struct gm_rel *rel, struct gm_peer *pr, uint8_t *gm)
{
	uint8_t old[GM_HDR_TAG_OFF];

	memcpy(old, gm, sizeof(old));
	gm_hdr_set_echo(gm, pr->echo_known ? pr->echo : 0);
	if (pr->rx_known) {
		gm_hdr_set_ack(gm, pr->rcv_nxt);
		pr->unacked = 0;
		pr->ack_deadline = 0;
	}
	gm_hdr_set_wnd(gm, (uint16_t)adv_window(rel, pr));
	return memcmp(old, gm, sizeof(old)) != 0;
}

/*
 * A new nonce, then the MAC or CRC (gm_wire.h); body_crc: CRC mode only.
 * The frame is len bytes at f, then more[nmore] (a zero-copy payload,
 * which the MAC reads again on every transmission).
 */
static void seal(struct gm_peer *pr, uint8_t *f, size_t len, const struct iovec *more,
                 unsigned nmore, uint32_t body_crc)
{
	struct gm_mac *mac = peer_mac(pr);

	gm_hdr_set_nonce(f + ETH_HLEN, ++pr->port->tx_nonce);
	if (mac)
		gm_mac_seal_iov(mac, f, len, more, nmore);
	else
		gm_frame_seal_body(f + ETH_HLEN, body_crc);
}

static uint64_t build_sack(const struct gm_rel *rel, const struct gm_peer *pr)
{
	unsigned w = rel->cfg.window;
	uint64_t sack = 0;

	for (unsigned i = 0; i < 64 && i + 1 < w; i++) {
		uint32_t s = pr->rcv_nxt + 1 + i;
		const struct gm_buf *b = pr->rxw[SLOT(rel, s)];

		if (b && b->seq == s)
			sack |= 1ull << i;
	}
	return sack;
}

static void build_ack(struct gm_rel *rel, struct gm_peer *pr, uint8_t *f)
{
	uint8_t *gm = f + ETH_HLEN;
	struct gm_ack_body ab = {.sack = build_sack(rel, pr)};

	write_eth(rel, f, pr->addr.mac);
	gm_hdr_encode(gm, &(struct gm_hdr){
	                      .version = GM_WIRE_VERSION,
	                      .type = GM_FT_ACK,
	                      .flags = 0, /* acks are high class: they unblock senders */
	                      .dst_port = pr->addr.port,
	                      .src_port = pr->port->num,
	                      .key = peer_key(pr),
	                      .session = pr->port->session,
	                      .len = sizeof(ab),
	                  });
	gm_ack_body_encode(gm + HDR_LEN, &ab);
	stamp(rel, pr, gm);
	seal(pr, f, ETH_HLEN + HDR_LEN + sizeof(ab), NULL, 0,
	     gm_crc32c(0, gm + HDR_LEN, sizeof(ab)));
}

/* Hand a batch of one class to the link; requeue what it did not take. */
static unsigned send_batch(struct gm_rel *rel, enum gm_class cls, const struct gm_txf *f,
                           struct gm_buf **bufs, unsigned n, uint64_t now)
{
	int rc = n ? rel->link.send(rel->link.ctx, cls, f, n) : 0;
	unsigned sent = rc > 0 ? (unsigned)rc : 0;

	rel->st.tx_calls += n > 0;

	for (unsigned i = 0; i < sent; i++) {
		if (bufs[i])
			bufs[i]->sealed = false; /* it left: the next transmission is another */
		if (bufs[i] && bufs[i]->retx) {
			rel->st.retransmits++;
			rel->st.fast_retransmits += bufs[i]->retx == RETX_FAST;
			bufs[i]->retx = 0;
		}
		rel->st.tx_frames++;
		rel->st.tx_bytes += f[i].len;
		if (cls == GM_CLASS_LOW)
			rel->st.tx_low++;
		else
			rel->st.tx_high++;
	}
	for (unsigned i = n; i-- > sent;) {
		if (bufs[i])
			dq_add(rel, bufs[i], bufs[i]->dqi.cls, true);
	}
	return sent;
}

int gm_rel_flush(struct gm_rel *rel, uint64_t now)
{
	struct gm_txf txf[2][BATCH * 2];
	struct iovec ackiov[BATCH];
	struct gm_buf *bufs[2][BATCH * 2];
	struct gm_peer *ackpeer[BATCH];
	int total = 0;

	if (now >= rel->next_deadline)
		run_timers(rel, now);
	for (;;) {
		unsigned n[2] = {0, 0}, nacks = 0, sent;
		struct gm_dq_item *it;
		bool short_write = false;

		/* Owed acks go first in the high batch. */
		for (struct gm_peer **pp = &rel->ack_list; *pp && nacks < BATCH;) {
			struct gm_peer *pr = *pp;

			if (!pr->ack_now && (!pr->unacked || now < pr->ack_deadline)) {
				if (!pr->unacked) {
					*pp = pr->ack_next;
					pr->ack_listed = false;
				} else {
					pp = &pr->ack_next;
				}
				continue;
			}
			build_ack(rel, pr, rel->ackbuf[nacks]);
			ackiov[nacks] = (struct iovec){rel->ackbuf[nacks], sizeof(rel->ackbuf[0])};
			txf[0][n[0]] = (struct gm_txf){&ackiov[nacks], 1, sizeof(rel->ackbuf[0])};
			bufs[0][n[0]++] = NULL;
			ackpeer[nacks++] = pr;
			rel->st.acks_sent++;
			pr->ack_now = false;
			*pp = pr->ack_next;
			pr->ack_listed = false;
		}
		while (n[0] + n[1] < BATCH + nacks && (it = gm_dq_pop(&rel->dq))) {
			struct gm_buf *b = (struct gm_buf *)it;
			struct gm_peer *pr = b->peer;
			int c = it->cls ? 1 : 0;

			pr->queued--;
			if (now < rel->tx_backoff[c]) {
				dq_add(rel, b, it->cls, true);
				break;
			}
			if (stamp(rel, pr, b->data + ETH_HLEN) || !b->sealed) {
				seal(pr, b->data, b->hlen, b->iov + 1, b->nzc, b->body_crc);
				b->sealed = true;
			}
			b->sent = true;
			b->tx_time = now;
			if (!pr->rto_deadline) {
				pr->rto_deadline = now + pr->rto_us;
				pr->last_progress = now;
				arm(rel, pr->rto_deadline);
			}
			b->iov[0] = (struct iovec){b->data, b->hlen};
			txf[c][n[c]] = (struct gm_txf){b->iov, 1u + b->nzc, b->len};
			bufs[c][n[c]++] = b;
		}
		if (!n[0] && !n[1])
			break;
		sent = send_batch(rel, GM_CLASS_HIGH, txf[0], bufs[0], n[0], now);
		if (sent < n[0]) {
			short_write = true;
			rel->tx_backoff[0] = now + TX_BACKOFF_US;
		}
		for (unsigned i = sent; i < nacks; i++) {
			/* an ack the link refused: owe it again */
			rel->st.acks_sent--;
			ack_owe(rel, ackpeer[i], true, now);
		}
		total += sent;
		sent = send_batch(rel, GM_CLASS_LOW, txf[1], bufs[1], n[1], now);
		total += sent;
		if (sent < n[1]) {
			short_write = true;
			rel->tx_backoff[1] = now + TX_BACKOFF_US;
		}
		if (short_write)
			break;
	}
	return total;
}
