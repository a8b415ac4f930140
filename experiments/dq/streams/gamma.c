/* The streams over provider gamma: a sender and a receiver of messages on one
 * FI_EP_RDM endpoint whose traffic class is the stream's (the testing stream
 * high, a gamma local stream low). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "gmf.h"
#include "sn.h"

#define CTRL_SIZE 64 /* ACK, END, END_ACK: a bare header */
#define N_RECV    64
#define LINGER_S  0.2 /* keep acknowledging after the last message */

enum op_kind { OP_SEND, OP_RECV, OP_CTRL_SEND };

/* One posted operation; the context must come first (FI_CONTEXT). */
struct op {
	struct fi_context2 ctx;
	enum op_kind kind;
	bool busy;
	char *buf;
	size_t cap;
};

struct gs {
	const struct sn_opts *o;
	struct gmf f; /* info, fabric, domain (maybe another gs's), CQ, AV */
	struct fid_ep *ep;
	fi_addr_t peer[SN_MAX_PEERS];
	struct op *recv;
	int n_recv;
	struct op ctrl[SN_MAX_PEERS * 2];
	double deadline;
	const char *name;
	/* Called on every turn of a wait: drives an in-process bulk stream. */
	int (*pump)(void *arg);
	void *pump_arg;
	/* what the completion handler saw */
	void (*on_msg)(struct gs *g, struct op *op, size_t len);
	void *arg;
};

static int fab_err(const char *what, int r)
{
	sn_err("%s: %s", what, fi_strerror(r < 0 ? -r : r));
	return -1;
}

static int peer_index(const struct sn_opts *o, int node)
{
	for (int i = 0; i < o->n_peers; i++)
		if (o->peers[i] == node)
			return i;
	return -1;
}

static int publish_addr(struct gs *g)
{
	const struct sn_opts *o = g->o;
	uint8_t name[64];
	size_t len = sizeof(name);
	char path[4096], tmp[4200];
	FILE *f;
	int r = fi_getname(&g->ep->fid, name, &len);

	if (r)
		return fab_err("fi_getname", r);
	snprintf(path, sizeof(path), "%s/%s.%d.addr", o->dir, g->name, o->node);
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (!f) {
		sn_err("cannot write %s: %s", tmp, strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < len; i++)
		fprintf(f, "%02x", name[i]);
	fputc('\n', f);
	if (fclose(f) || rename(tmp, path)) {
		sn_err("cannot publish %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Wait for a peer's address file and put the address in the AV. */
static int insert_peer(struct gs *g, int i)
{
	const struct sn_opts *o = g->o;
	char path[4096], hex[160];
	uint8_t name[64];
	size_t len = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.%d.addr", o->dir, g->name, o->peers[i]);
	while (!(f = fopen(path, "r"))) {
		if (sn_now() > g->deadline) {
			sn_err("node %d never published its address (%s)", o->peers[i], path);
			return -1;
		}
		usleep(10000);
	}
	if (!fgets(hex, sizeof(hex), f))
		hex[0] = 0;
	fclose(f);
	for (char *p = hex; p[0] && p[1] && p[0] != '\n' && len < sizeof(name); p += 2) {
		unsigned v;
		if (sscanf(p, "%2x", &v) != 1)
			break;
		name[len++] = (uint8_t)v;
	}
	if (!len) {
		sn_err("%s holds no address", path);
		return -1;
	}
	int r = fi_av_insert(g->f.av, name, 1, &g->peer[i], 0, NULL);
	if (r != 1)
		return fab_err("fi_av_insert", r < 0 ? r : -FI_EINVAL);
	return 0;
}

static int post_recv(struct gs *g, struct op *op)
{
	for (;;) {
		ssize_t r = fi_recv(g->ep, op->buf, op->cap, NULL, FI_ADDR_UNSPEC, op);
		if (!r) {
			op->busy = true;
			return 0;
		}
		if (r != -FI_EAGAIN)
			return fab_err("fi_recv", (int)r);
		struct fi_cq_msg_entry e;
		(void)fi_cq_read(g->f.cq, &e, 0); /* progress only */
	}
}

/* Opens an endpoint of class high (or low); with dom, on that struct's domain. */
static int gs_open(struct gs *g, const struct sn_opts *o, bool high, const char *name,
                   struct gs *dom, int n_recv, size_t recv_size)
{
	struct fi_info *hints = fi_allocinfo();
	int r;

	memset(g, 0, sizeof(*g));
	g->o = o;
	g->name = name;
	g->deadline = (o->start > sn_now() ? o->start : sn_now()) + o->timeout;
	/* gamma-cluster exec names the node's interface in GAMMA_IFACE. */
	const char *ifc = o->iface ? o->iface : getenv("GAMMA_IFACE");
	if (ifc && *ifc)
		setenv("FI_GAMMA_IFACE", ifc, 1);
	if (!hints)
		return -1;
	hints->caps = FI_MSG;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup("gamma");
	/* The whole point: the class of every frame this endpoint sends. */
	hints->tx_attr->tclass = high ? FI_TC_LOW_LATENCY : FI_TC_BULK_DATA;
	struct fi_info *info;
	r = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (r) {
		sn_err(
		    "provider gamma offers no FI_EP_RDM endpoint (%s): source tools/gamma-env.sh "
		    "after make, and check the interface (FI_GAMMA_IFACE=%s)",
		    fi_strerror(-r), getenv("FI_GAMMA_IFACE") ? getenv("FI_GAMMA_IFACE") : "");
		return -1;
	}
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_MSG,
	                             .wait_obj = o->poll ? FI_WAIT_NONE : FI_WAIT_UNSPEC};
	struct fi_av_attr av_attr = {.type = FI_AV_UNSPEC, .count = SN_MAX_PEERS};
	const char *what = NULL;
	/* dom: one domain = one gm_net, so the provider's own double queue sees both. */
	if ((r = gmf_open(&g->f, info, dom ? &dom->f : NULL, &cq_attr, &av_attr, &what)) ||
	    (r = gmf_ep(&g->f, NULL, NULL, 0, &g->ep, &what)))
		return fab_err(what, r);
	g->recv = calloc((size_t)n_recv, sizeof(*g->recv));
	if (!g->recv)
		return -1;
	g->n_recv = n_recv;
	for (int i = 0; i < n_recv; i++) {
		g->recv[i].kind = OP_RECV;
		g->recv[i].cap = recv_size;
		g->recv[i].buf = malloc(recv_size);
		if (!g->recv[i].buf || post_recv(g, &g->recv[i]))
			return -1;
	}
	for (int i = 0; i < SN_MAX_PEERS * 2; i++) {
		g->ctrl[i].kind = OP_CTRL_SEND;
		g->ctrl[i].cap = CTRL_SIZE;
		g->ctrl[i].buf = malloc(CTRL_SIZE);
		if (!g->ctrl[i].buf)
			return -1;
	}
	if (publish_addr(g))
		return -1;
	for (int i = 0; i < o->n_peers; i++)
		if (insert_peer(g, i))
			return -1;
	return 0;
}

static void gs_close(struct gs *g)
{
	if (g->ep)
		fi_close(&g->ep->fid);
	gmf_close(&g->f);
	for (int i = 0; i < g->n_recv; i++)
		free(g->recv[i].buf);
	free(g->recv);
	for (int i = 0; i < SN_MAX_PEERS * 2; i++)
		free(g->ctrl[i].buf);
}

/* Read completions for up to timeout_ms (0: just progress).  -1 on error. */
static int gs_poll(struct gs *g, int timeout_ms)
{
	struct fi_cq_msg_entry e[16];
	bool block = !g->o->poll && !g->pump && timeout_ms > 0;
	ssize_t n =
	    block ? fi_cq_sread(g->f.cq, e, 16, NULL, timeout_ms) : fi_cq_read(g->f.cq, e, 16);

	if (g->pump && g->pump(g->pump_arg))
		return -1;
	if (n == -FI_EAGAIN || n == -FI_ETIMEDOUT)
		return 0;
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = {0};
		char buf[256];
		if (fi_cq_readerr(g->f.cq, &err, 0) < 0)
			return 0;
		sn_err("completion error: %s (%s)%s", fi_strerror(err.err),
		       fi_cq_strerror(g->f.cq, err.prov_errno, err.err_data, buf, sizeof(buf)),
		       err.err == FI_ETRUNC ? ": a message longer than the receive buffer" : "");
		return -1;
	}
	if (n < 0)
		return fab_err("fi_cq_read", (int)n);
	for (ssize_t i = 0; i < n; i++) {
		struct op *op = e[i].op_context;
		if (!op)
			continue;
		op->busy = false;
		if (op->kind == OP_RECV) {
			g->on_msg(g, op, e[i].len);
			if (post_recv(g, op))
				return -1;
		}
	}
	return 0;
}

static int gs_send(struct gs *g, struct op *op, size_t len, int peer)
{
	for (;;) {
		ssize_t r = fi_send(g->ep, op->buf, len, NULL, g->peer[peer], op);
		if (!r) {
			op->busy = true;
			return 0;
		}
		if (r != -FI_EAGAIN)
			return fab_err("fi_send", (int)r);
		if (gs_poll(g, 0))
			return -1;
		if (sn_now() > g->deadline) {
			sn_err("timed out: the provider took no more sends");
			return -1;
		}
	}
}

/* Control messages (bare headers) from a small pool of buffers. */
static int gs_ctrl(struct gs *g, enum sn_type type, uint32_t seq, int peer)
{
	for (;;) {
		for (int i = 0; i < SN_MAX_PEERS * 2; i++)
			if (!g->ctrl[i].busy) {
				sn_fill(g->ctrl[i].buf, type, g->o->node, seq,
				        sizeof(struct sn_hdr));
				return gs_send(g, &g->ctrl[i], sizeof(struct sn_hdr), peer);
			}
		if (gs_poll(g, 1))
			return -1;
		if (sn_now() > g->deadline) {
			sn_err("timed out waiting for a control buffer");
			return -1;
		}
	}
}

/* ---- sender --------------------------------------------------------------- */

struct sender {
	uint32_t sent[SN_MAX_PEERS];
	int ack_peer; /* paced: the ACK awaited (peer index, seq) */
	uint32_t ack_seq;
	bool acked;
	int end_acks;
	bool bad;
};

static void sender_msg(struct gs *g, struct op *op, size_t len)
{
	struct sender *s = g->arg;
	struct sn_hdr h;
	char why[160];

	if (sn_verify(op->buf, len, why, sizeof(why))) {
		sn_err("bad control message: %s", why);
		s->bad = true;
		return;
	}
	memcpy(&h, op->buf, sizeof(h));
	int p = peer_index(g->o, h.src);
	if (h.type == SN_ACK && p == s->ack_peer && h.seq == s->ack_seq)
		s->acked = true;
	else if (h.type == SN_END_ACK && p >= 0)
		s->end_acks++;
	else {
		sn_err("unexpected message type %u from node %u", h.type, h.src);
		s->bad = true;
	}
}

/* The in-process bulk stream: a low-class endpoint on the sender's domain. */
struct bulk {
	struct gs g;
	struct op *data;
	struct sender s;
	int next;
	bool stopping;
	char name[128];
};

static int bulk_pump(void *arg)
{
	struct bulk *b = arg;
	const struct sn_opts *o = b->g.o;

	for (int i = 0; !b->stopping && i < o->bulk_window; i++) {
		if (b->data[i].busy)
			continue;
		int p = b->next;
		b->next = (b->next + 1) % o->n_peers;
		sn_fill(b->data[i].buf, SN_DATA, o->node, b->s.sent[p], o->bulk_size);
		if (gs_send(&b->g, &b->data[i], o->bulk_size, p))
			return -1;
		b->s.sent[p]++;
	}
	return gs_poll(&b->g, 0) || b->s.bad ? -1 : 0;
}

static int bulk_open(struct bulk *b, const struct sn_opts *o, struct gs *high)
{
	snprintf(b->name, sizeof(b->name), "%sbulk", o->name);
	if (gs_open(&b->g, o, false, b->name, high, 8, CTRL_SIZE))
		return -1;
	b->g.on_msg = sender_msg;
	b->g.arg = &b->s;
	b->s.ack_peer = -1;
	b->data = calloc((size_t)o->bulk_window, sizeof(*b->data));
	if (!b->data)
		return -1;
	for (int i = 0; i < o->bulk_window; i++) {
		b->data[i].kind = OP_SEND;
		b->data[i].buf = malloc(o->bulk_size);
		if (!b->data[i].buf)
			return -1;
	}
	high->pump = bulk_pump;
	high->pump_arg = b;
	return 0;
}

/* Stop the bulk stream, tell its receivers how much came, wait until they know. */
static int bulk_finish(struct bulk *b, struct gs *high)
{
	const struct sn_opts *o = b->g.o;
	uint64_t total = 0;

	b->stopping = true;
	b->g.deadline = sn_now() + o->timeout;
	for (int p = 0; p < o->n_peers; p++) {
		if (gs_ctrl(&b->g, SN_END, b->s.sent[p], p))
			return -1;
		total += b->s.sent[p];
	}
	while (b->s.end_acks < o->n_peers) {
		if (gs_poll(&b->g, 1) || gs_poll(high, 0) || b->s.bad)
			return -1;
		if (sn_now() > b->g.deadline) {
			sn_err("timed out: bulk receivers did not confirm the end");
			return -1;
		}
	}
	printf("result role=gamma-send-bulk node=%d class=low sent=%llu size=%u\n", o->node,
	       (unsigned long long)total, o->bulk_size);
	return 0;
}

static void bulk_close(struct bulk *b)
{
	if (!b->data)
		return;
	gs_close(&b->g);
	for (int i = 0; i < b->g.o->bulk_window; i++)
		free(b->data[i].buf);
	free(b->data);
}

int sn_gamma_send(const struct sn_opts *o)
{
	struct bulk bulk = {0};
	double end, win0;
	struct sender s = {.ack_peer = -1};
	struct sn_stats rtt = {0};
	struct gs g = {0};
	int nbuf = o->paced ? 2 : o->window, rc = 1;
	struct op *data = calloc((size_t)nbuf, sizeof(*data));
	uint64_t total = 0;

	if (!data || gs_open(&g, o, o->high, o->name, NULL, 8, CTRL_SIZE))
		goto out;
	g.on_msg = sender_msg;
	g.arg = &s;
	if (o->bulk_size && bulk_open(&bulk, o, &g))
		goto out;
	for (int i = 0; i < nbuf; i++) {
		data[i].kind = OP_SEND;
		data[i].buf = malloc(o->size);
		if (!data[i].buf)
			goto out;
	}
	printf("ready gamma-send node %d\n", o->node);
	if (sn_await_start(o))
		goto out;
	win0 = o->start + o->warm;
	end = o->duration ? win0 + o->duration : 1e300;
	g.deadline = end + o->timeout;
	for (int p = 0;; p = (p + 1) % o->n_peers) {
		if (o->count ? s.sent[p] >= o->count : sn_now() >= end)
			break;
		/* A free buffer: every one is in flight in stream mode, so wait. */
		struct op *op = NULL;
		while (!op) {
			for (int i = 0; i < nbuf && !op; i++)
				if (!data[i].busy)
					op = &data[i];
			if (!op && gs_poll(&g, 1))
				goto out;
			if (!op && sn_now() > g.deadline) {
				sn_err("timed out: sends do not complete");
				goto out;
			}
		}
		sn_fill(op->buf, SN_DATA, o->node, s.sent[p], o->size);
		uint64_t t0;
		memcpy(&t0, op->buf + offsetof(struct sn_hdr, send_ns), 8);
		if (gs_send(&g, op, o->size, p))
			goto out;
		if (o->paced) {
			s.ack_peer = p;
			s.ack_seq = s.sent[p];
			s.acked = false;
			while (!s.acked) {
				if (gs_poll(&g, 100) || s.bad)
					goto out;
				if (sn_now() > g.deadline) {
					sn_err("timed out waiting for node %d to acknowledge "
					       "message %u",
					       o->peers[p], s.ack_seq);
					goto out;
				}
			}
			double half = (double)(sn_now_ns() - t0) / 2e3;
			if ((double)t0 / 1e9 >= win0 && (double)t0 / 1e9 < end)
				sn_stats_add(&rtt, half, o->size);
			/* The pause keeps the bulk stream of this process going. */
			for (double t = sn_now() + o->gap; o->gap > 0 && g.pump && sn_now() < t;)
				if (gs_poll(&g, 0))
					goto out;
			if (o->gap > 0 && !g.pump)
				sn_sleep_until(sn_now() + o->gap);
		} else if (gs_poll(&g, 0) || s.bad) {
			goto out;
		}
		s.sent[p]++;
		total++;
	}
	if (o->bulk_size && bulk_finish(&bulk, &g))
		goto out;
	g.pump = NULL;
	/* Tell every receiver how many it should have; wait until each knows. */
	g.deadline = sn_now() + o->timeout;
	for (int p = 0; p < o->n_peers; p++)
		if (gs_ctrl(&g, SN_END, s.sent[p], p))
			goto out;
	while (s.end_acks < o->n_peers) {
		if (gs_poll(&g, 100) || s.bad)
			goto out;
		if (sn_now() > g.deadline) {
			sn_err("timed out: %d of %d receivers confirmed the end", s.end_acks,
			       o->n_peers);
			goto out;
		}
	}
	printf("result role=gamma-send node=%d class=%s sent=%llu", o->node,
	       o->high ? "high" : "low", (unsigned long long)total);
	for (int p = 0; p < o->n_peers; p++)
		printf(" to%d=%u", o->peers[p], s.sent[p]);
	putchar('\n');
	if (o->paced)
		sn_stats_print(&rtt, "result role=gamma-send rtt-half");
	rc = 0;
out:
	sn_stats_free(&rtt);
	bulk_close(&bulk);
	gs_close(&g);
	for (int i = 0; data && i < nbuf; i++)
		free(data[i].buf);
	free(data);
	return rc;
}

/* ---- receiver ------------------------------------------------------------- */

struct receiver {
	struct sn_seen seen[SN_MAX_PEERS];
	int64_t end_count[SN_MAX_PEERS]; /* -1 until the END */
	bool end_acked[SN_MAX_PEERS];
	int ends;
	uint64_t bad;
	struct sn_stats st;
	double win0, win1;
	int err;
};

static void receiver_msg(struct gs *g, struct op *op, size_t len)
{
	struct receiver *r = g->arg;
	uint64_t now = sn_now_ns();
	struct sn_hdr h;
	char why[160];

	if (sn_verify(op->buf, len, why, sizeof(why))) {
		if (!r->bad++)
			sn_err("%s", why);
		return;
	}
	memcpy(&h, op->buf, sizeof(h));
	int p = peer_index(g->o, h.src);
	if (p < 0) {
		if (!r->bad++)
			sn_err("message from node %u, which is not in --peers", h.src);
		return;
	}
	switch (h.type) {
	case SN_DATA:
		if (!sn_seen_mark(&r->seen[p], h.seq) && !r->bad++)
			sn_err("duplicate message %u from node %u", h.seq, h.src);
		double sent = (double)h.send_ns / 1e9;
		if (sent >= r->win0 && sent < r->win1)
			sn_stats_add(&r->st, (double)(now - h.send_ns) / 1e3, h.size);
		if (g->o->paced && gs_ctrl(g, SN_ACK, h.seq, p))
			r->err = 1;
		break;
	case SN_END:
		/* Rendezvous messages may complete after a later small one: the
		 * END is answered once everything it counts is here. */
		r->end_count[p] = h.seq;
		break;
	default:
		if (!r->bad++)
			sn_err("unexpected message type %u from node %u", h.type, h.src);
	}
}

int sn_gamma_recv(const struct sn_opts *o)
{
	struct receiver r = {0};
	struct gs g = {0};
	int rc = 1, lost = 0;
	size_t cap = o->size > CTRL_SIZE ? o->size : CTRL_SIZE;

	for (int p = 0; p < SN_MAX_PEERS; p++)
		r.end_count[p] = -1;
	if (gs_open(&g, o, o->high, o->name, NULL, N_RECV, cap))
		goto out;
	g.on_msg = receiver_msg;
	g.arg = &r;
	printf("ready gamma-recv node %d\n", o->node);
	/* Messages may arrive before our start: the window is known once read. */
	r.win0 = 1e300;
	if (o->start_file ? sn_await_start(o) : 0)
		goto out;
	r.win0 = o->start + o->warm;
	r.win1 = o->duration ? r.win0 + o->duration : 1e300;
	g.deadline = (o->duration ? r.win1 : o->start) + o->timeout;
	while (r.ends < o->n_peers) {
		if (gs_poll(&g, 100) || r.err)
			goto out;
		for (int p = 0; p < o->n_peers; p++) {
			if (r.end_acked[p] || r.end_count[p] < 0 ||
			    r.seen[p].got + r.seen[p].dup < (uint64_t)r.end_count[p])
				continue;
			if (gs_ctrl(&g, SN_END_ACK, (uint32_t)r.end_count[p], p))
				goto out;
			r.end_acked[p] = true;
			r.ends++;
		}
		if (sn_now() > g.deadline) {
			sn_err("timed out: %d of %d senders ended with everything received", r.ends,
			       o->n_peers);
			for (int p = 0; p < o->n_peers; p++)
				if (!r.end_acked[p])
					sn_err("from node %d: %llu messages, END %s", o->peers[p],
					       (unsigned long long)r.seen[p].got,
					       r.end_count[p] < 0 ? "not received" : "received");
			rc = 3;
			goto out;
		}
	}
	/* The last acknowledgements must leave before the endpoint closes. */
	for (double t = sn_now() + LINGER_S; sn_now() < t;)
		if (gs_poll(&g, 10))
			break;
	uint64_t got = 0;
	for (int p = 0; p < o->n_peers; p++) {
		got += r.seen[p].got;
		if (!sn_seen_complete(&r.seen[p], (uint32_t)r.end_count[p])) {
			sn_err("from node %d: %llu distinct messages (%llu duplicates), sender "
			       "sent %lld",
			       o->peers[p], (unsigned long long)r.seen[p].got,
			       (unsigned long long)r.seen[p].dup, (long long)r.end_count[p]);
			lost = 1;
		}
	}
	char prefix[160];
	snprintf(prefix, sizeof(prefix),
	         "result role=gamma-recv node=%d class=%s received=%llu bad=%llu", o->node,
	         o->high ? "high" : "low", (unsigned long long)got, (unsigned long long)r.bad);
	sn_stats_print(&r.st, prefix);
	rc = r.bad || lost ? 3 : 0;
out:
	sn_stats_free(&r.st);
	for (int p = 0; p < SN_MAX_PEERS; p++)
		free(r.seen[p].bits);
	gs_close(&g);
	return rc;
}
