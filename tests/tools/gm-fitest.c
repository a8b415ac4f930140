/*
 * Functional test of provider "gamma" through the public libfabric API, over
 * two real interfaces (the two ends of a veth pair, or two cluster nodes).
 *
 *   gm-fitest pair IF_A IF_B [MAX_SIZE]   every message feature, both ways
 *   gm-fitest kill IF_A IF_B              a killed peer yields FI_EIO
 *   gm-fitest idle-kill IF_A IF_B         ... also when nothing was in flight
 *   gm-fitest ux-cap IF_A IF_B            unexpected messages beyond
 *                                         FI_GAMMA_UX_PEER_MAX wait, none lost
 *   gm-fitest burst IF_A IF_B             a burst of small sends with no
 *                                         progress call between them: all
 *                                         delivered in order (the caller
 *                                         checks the tx calls it took)
 *
 * Every received byte is checked against the pattern the sender wrote.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "gmf.h"

struct side {
	const char *ifname;
	struct gmf g;           /* info, fabric, domain, CQ, AV */
	struct fid_cntr *scntr; /* send counter */
	struct fid_ep *ep;
	fi_addr_t peer;
};

static struct side A, B;
static int failures;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "FAIL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

#define CHK(call)                                                                                  \
	do {                                                                                       \
		int _r = (int)(call);                                                              \
		if (_r < 0)                                                                        \
			die("%s:%d %s = %d (%s)", __FILE__, __LINE__, #call, _r,                   \
			    fi_strerror(-_r));                                                     \
	} while (0)

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void side_open(struct side *s, uint32_t tclass)
{
	struct fi_info *hints = fi_allocinfo();

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | FI_MULTI_RECV | FI_SOURCE;
	hints->mode = FI_CONTEXT;
	hints->fabric_attr->prov_name = strdup("gamma");
	hints->domain_attr->name = strdup(s->ifname);
	hints->domain_attr->threading = FI_THREAD_SAFE;
	hints->tx_attr->tclass = tclass;
	struct fi_info *info;
	const char *what = NULL;
	CHK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	fi_freeinfo(hints);
	if (strcmp(info->fabric_attr->prov_name, "gamma"))
		die("got provider %s", info->fabric_attr->prov_name);
	struct fi_av_attr av = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq = {.format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_UNSPEC};
	int r = gmf_open(&s->g, info, NULL, &cq, &av, &what);
	if (r < 0)
		die("%s: %d (%s)", what, r, fi_strerror(-r));
	struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC};
	CHK(fi_cntr_open(s->g.domain, &ca, &s->scntr, NULL));
	r = gmf_ep(&s->g, NULL, s->scntr, FI_SEND, &s->ep, &what);
	if (r < 0)
		die("%s: %d (%s)", what, r, fi_strerror(-r));
}

static void side_close(struct side *s)
{
	CHK(fi_close(&s->ep->fid));
	CHK(fi_close(&s->scntr->fid));
	CHK(gmf_close(&s->g));
}

static void connect_sides(struct side *a, struct side *b)
{
	char addr[64], str[64];
	size_t len = sizeof(addr), slen = sizeof(str);

	CHK(fi_getname(&b->ep->fid, addr, &len));
	if (fi_av_insert(a->g.av, addr, 1, &a->peer, 0, NULL) != 1)
		die("av_insert");
	fi_av_straddr(a->g.av, addr, str, &slen);
	if (strncmp(str, "gamma://", 8))
		die("straddr gave '%s'", str);
	printf("# %s -> %s\n", a->ifname, str);
}

static uint8_t pat(uint64_t seed, size_t i)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
	return (uint8_t)(x >> 56 ^ x >> 29);
}

static void fill(uint8_t *b, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(seed, i);
}

static size_t first_bad(const uint8_t *b, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pat(seed, i))
			return i;
	return n;
}

/* Wait for one completion on s, progressing the other side meanwhile. */
static int wait_comp(struct side *s, struct side *other, struct fi_cq_tagged_entry *e,
                     struct fi_cq_err_entry *err, double timeout)
{
	double t0 = now_s();
	fi_addr_t src;

	for (;;) {
		ssize_t r = fi_cq_readfrom(s->g.cq, e, 1, &src);
		if (r == 1)
			return 0;
		if (r == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			CHK(fi_cq_readerr(s->g.cq, err, 0));
			return -err->err;
		}
		if (r != -FI_EAGAIN)
			die("cq read %zd", r);
		if (other) {
			/* count 0: progress the other side, leave its completions queued */
			struct fi_cq_tagged_entry x;
			fi_cq_read(other->g.cq, &x, 0);
		}
		if (now_s() - t0 > timeout)
			die("no completion within %.0f s", timeout);
	}
}

static void expect_ok(struct side *s, struct side *o, void *ctx, const char *what)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int r = wait_comp(s, o, &e, &err, 120);

	if (r)
		die("%s: error completion %d (%s)", what, r, fi_strerror(-r));
	if (e.op_context != ctx)
		die("%s: completion for context %p, expected %p", what, e.op_context, ctx);
}

/* Send len bytes from a to b; the receive is posted before or after the send. */
static void xfer(struct side *a, struct side *b, size_t len, bool tagged, bool post_first,
                 uint64_t seed)
{
	uint8_t *sbuf = malloc(len + 1), *rbuf = malloc(len + 64);
	struct fi_context sctx, rctx;
	uint64_t tag = 0x8000000000000000ull | seed;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int done = 0;

	fill(sbuf, len, seed);
	memset(rbuf, 0xEE, len + 64);
	if (post_first) {
		if (tagged)
			CHK(fi_trecv(b->ep, rbuf, len, NULL, b->peer, tag, 0, &rctx));
		else
			CHK(fi_recv(b->ep, rbuf, len, NULL, b->peer, &rctx));
	}
	if (tagged)
		CHK(fi_tsend(a->ep, sbuf, len, NULL, a->peer, tag, &sctx));
	else
		CHK(fi_send(a->ep, sbuf, len, NULL, a->peer, &sctx));
	if (!post_first) {
		/* The message must wait unexpected before its receive exists: peek
		 * (answered at once, found or not) until it is there. */
		struct fi_context pctx;
		double t0 = now_s();
		for (bool seen = false; !seen;) {
			if (tagged) {
				struct fi_msg_tagged m = {
				    .addr = b->peer, .tag = tag, .context = &pctx};
				CHK(fi_trecvmsg(b->ep, &m, FI_PEEK));
			} else {
				struct fi_msg m = {.addr = b->peer, .context = &pctx};
				CHK(fi_recvmsg(b->ep, &m, FI_PEEK));
			}
			ssize_t r = fi_cq_read(b->g.cq, &e, 1);
			if (r == -FI_EAVAIL) {
				CHK(fi_cq_readerr(b->g.cq, &err, 0));
				if (err.err != FI_ENOMSG || err.op_context != &pctx)
					die("completion before any receive was posted");
			} else if (r != 1 || e.op_context != &pctx || e.len != len) {
				die("peek: %zd, len %zu (want %zu)", r, e.len, len);
			} else {
				seen = true;
			}
			if (fi_cq_read(a->g.cq, &e, 1) == 1) {
				if (e.op_context != &sctx)
					die("foreign send completion");
				done |= 1;
			}
			if (now_s() - t0 > 60)
				die("%zu B: the message never arrived", len);
		}
		if (tagged)
			CHK(fi_trecv(b->ep, rbuf, len, NULL, b->peer, tag, 0, &rctx));
		else
			CHK(fi_recv(b->ep, rbuf, len, NULL, b->peer, &rctx));
	}
	while (done != 3) {
		/* Keep both sides progressing: each one's acks depend on the other. */
		ssize_t r = fi_cq_read(b->g.cq, &e, (done & 2) ? 0 : 1);
		if (r == 1) {
			if (e.op_context != &rctx || e.len != len)
				die("recv completion ctx %p len %zu (want %zu)", e.op_context,
				    e.len, len);
			if (tagged && e.tag != tag)
				die("tag %lx want %lx", e.tag, tag);
			done |= 2;
		} else if (r == -FI_EAVAIL) {
			fi_cq_readerr(b->g.cq, &err, 0);
			die("recv error %d", err.err);
		}
		r = fi_cq_read(a->g.cq, &e, (done & 1) ? 0 : 1);
		if (r == 1) {
			if (e.op_context != &sctx)
				die("send completion ctx");
			done |= 1;
		} else if (r == -FI_EAVAIL) {
			fi_cq_readerr(a->g.cq, &err, 0);
			die("send error %d", err.err);
		}
	}
	size_t bad = first_bad(rbuf, len, seed);
	if (bad != len)
		die("%zu B %s: byte %zu differs", len, tagged ? "tagged" : "untagged", bad);
	for (size_t i = len; i < len + 64; i++)
		if (rbuf[i] != 0xEE)
			die("%zu B: byte %zu past the message was written", len, i);
	free(sbuf);
	free(rbuf);
}

static void test_sizes(size_t max)
{
	static const size_t sizes[] = {0,     1,      8,       64,      255,      256,     1400,
	                               1472,  1473,   4000,    8192,    9000,     32768,   65535,
	                               65536, 100000, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
	uint64_t seed = 1;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		if (sizes[i] > max)
			break;
		for (int mode = 0; mode < 4; mode++) {
			xfer(&A, &B, sizes[i], mode & 1, mode & 2, seed++);
			xfer(&B, &A, sizes[i], mode & 1, mode & 2, seed++);
		}
		printf("ok: %zu B tagged/untagged, expected/unexpected, both ways\n", sizes[i]);
	}
}

static void test_truncation(void)
{
	size_t lens[] = {100, 5000, 200000};

	for (int i = 0; i < 3; i++) {
		size_t len = lens[i], cap = len / 2;
		uint8_t *s = malloc(len), *r = malloc(len);
		struct fi_context sc, rc;
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;

		fill(s, len, 77 + i);
		memset(r, 0, len);
		CHK(fi_trecv(B.ep, r, cap, NULL, FI_ADDR_UNSPEC, 42, 0, &rc));
		CHK(fi_tsend(A.ep, s, len, NULL, A.peer, 42, &sc));
		int ret = wait_comp(&B, &A, &e, &err, 60);
		if (ret != -FI_ETRUNC)
			die("truncation %zu: got %d, want -FI_ETRUNC", len, ret);
		if (err.olen != len - cap || err.op_context != &rc)
			die("truncation: olen %zu want %zu", err.olen, len - cap);
		if (first_bad(r, cap, 77 + i) != cap || r[cap] != 0)
			die("truncation: prefix wrong or overrun");
		char buf[256];
		const char *msg = fi_cq_strerror(B.g.cq, err.prov_errno, NULL, buf, sizeof(buf));
		if (!msg || !*msg)
			die("no strerror");
		expect_ok(&A, &B, &sc, "truncated send");
		free(s);
		free(r);
	}
	printf("ok: truncation gives FI_ETRUNC with olen, prefix intact\n");
}

static void test_peek_claim_cancel(void)
{
	uint8_t s[3000], r[3000];
	struct fi_context sc, pc, rc, cc;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fi_msg_tagged m;
	struct iovec iov = {r, sizeof(r)};

	/* Nothing there yet: FI_PEEK fails with FI_ENOMSG. */
	m = (struct fi_msg_tagged){.msg_iov = NULL,
	                           .iov_count = 0,
	                           .addr = FI_ADDR_UNSPEC,
	                           .tag = 1234,
	                           .ignore = 0,
	                           .context = &pc};
	CHK(fi_trecvmsg(B.ep, &m, FI_PEEK));
	if (wait_comp(&B, &A, &e, &err, 10) != -FI_ENOMSG)
		die("peek of nothing: want FI_ENOMSG");

	fill(s, sizeof(s), 5);
	CHK(fi_tsenddata(A.ep, s, sizeof(s), NULL, 0xABCD, A.peer, 1234, &sc));
	expect_ok(&A, &B, &sc, "send for peek");
	double t0 = now_s();
	for (;;) {
		CHK(fi_trecvmsg(B.ep, &m, FI_PEEK | FI_CLAIM));
		int ret = wait_comp(&B, &A, &e, &err, 10);
		if (!ret)
			break;
		if (ret != -FI_ENOMSG || now_s() - t0 > 10)
			die("peek: %d", ret);
	}
	if (e.len != sizeof(s) || e.tag != 1234 || e.data != 0xABCD ||
	    !(e.flags & FI_REMOTE_CQ_DATA))
		die("peek: len %zu tag %lx data %lx", e.len, e.tag, e.data);
	/* A claimed message is invisible to ordinary receives. */
	CHK(fi_trecv(B.ep, r, sizeof(r), NULL, FI_ADDR_UNSPEC, 1234, 0, &cc));
	m = (struct fi_msg_tagged){
	    .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .tag = 1234, .context = &pc};
	memset(r, 0, sizeof(r));
	CHK(fi_trecvmsg(B.ep, &m, FI_CLAIM));
	expect_ok(&B, &A, &pc, "claim");
	if (first_bad(r, sizeof(r), 5) != sizeof(r))
		die("claimed data wrong");
	/* The ordinary receive is still posted: cancel it. */
	CHK(fi_cancel(&B.ep->fid, &cc));
	if (wait_comp(&B, &A, &e, &err, 10) != -FI_ECANCELED || err.op_context != &cc)
		die("cancel: want FI_ECANCELED");
	if (fi_cancel(&B.ep->fid, &rc) != -FI_ENOENT)
		die("cancel of nothing should be -FI_ENOENT");
	printf("ok: FI_PEEK (ENOMSG, found), FI_CLAIM, remote CQ data, fi_cancel\n");
}

static void test_order_and_wildcards(void)
{
	enum { N = 500 };
	static uint32_t s[N], r[N];
	static struct fi_context sc[N], rc[N];
	struct fi_cq_tagged_entry e;

	for (int i = 0; i < N; i++) {
		s[i] = 0x1000 + i;
		CHK(fi_tsend(A.ep, &s[i], 4, NULL, A.peer, 0x55, &sc[i]));
	}
	for (int i = 0; i < N; i++)
		CHK(fi_trecv(B.ep, &r[i], 4, NULL, FI_ADDR_UNSPEC, 0x50, 0xF, &rc[i]));
	int got = 0, sent = 0;
	double t0 = now_s();
	while (got < N || sent < N) {
		if (fi_cq_read(B.g.cq, &e, 1) == 1) {
			int i = (struct fi_context *)e.op_context - rc;
			if (i != got || e.tag != 0x55)
				die("order: completion %d for receive %d", got, i);
			got++;
		}
		if (fi_cq_read(A.g.cq, &e, 1) == 1)
			sent++;
		if (now_s() - t0 > 60)
			die("order: timeout (%d/%d received)", got, N);
	}
	for (int i = 0; i < N; i++)
		if (r[i] != 0x1000u + i)
			die("order: message %d holds %x", i, r[i]);
	printf("ok: %d tagged messages matched in order with an ignore mask\n", N);
}

static void test_multi_recv(void)
{
	enum { N = 20, SZ = 1000 };
	static uint8_t big[N * SZ / 2 + 64], s[N][SZ];
	struct fi_context sc[N], mc;
	struct fi_cq_tagged_entry e;
	struct iovec iov = {big, sizeof(big)};
	struct fi_msg m = {.msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .context = &mc};
	size_t min = SZ;

	CHK(fi_setopt(&B.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)));
	CHK(fi_recvmsg(B.ep, &m, FI_MULTI_RECV));
	for (int i = 0; i < N / 2; i++) {
		fill(s[i], SZ, 300 + i);
		CHK(fi_send(A.ep, s[i], SZ, NULL, A.peer, &sc[i]));
	}
	int got = 0, released = 0, sent = 0;
	double t0 = now_s();
	while (got < N / 2 || sent < N / 2) {
		if (fi_cq_read(B.g.cq, &e, 1) == 1) {
			if (e.op_context != &mc || e.len != SZ || !e.buf)
				die("multi-recv completion");
			if (first_bad(e.buf, SZ, 300 + got) != SZ)
				die("multi-recv data %d", got);
			if (e.flags & FI_MULTI_RECV)
				released++;
			got++;
		}
		if (fi_cq_read(A.g.cq, &e, 1) == 1)
			sent++;
		if (now_s() - t0 > 30)
			die("multi-recv timeout");
	}
	if (released != 1)
		die("multi-recv: buffer released %d times", released);
	printf("ok: FI_MULTI_RECV buffer took %d messages and was released once\n", got);
}

/* Blocking waits: fi_cq_sread, and the FD wait object with fi_trywait. */
static void test_waits(void)
{
	uint8_t s[100], r[100];
	struct fi_context sc, rc;
	struct fi_cq_tagged_entry e;
	struct fid *fids[1] = {&B.g.cq->fid};
	int fd;

	fill(s, sizeof(s), 9);
	CHK(fi_trecv(B.ep, r, sizeof(r), NULL, FI_ADDR_UNSPEC, 7, 0, &rc));
	CHK(fi_tsend(A.ep, s, sizeof(s), NULL, A.peer, 7, &sc));
	if (fi_cq_sread(B.g.cq, &e, 1, NULL, 10000) != 1 || e.op_context != &rc)
		die("fi_cq_sread did not return the receive");
	if (fi_cq_sread(A.g.cq, &e, 1, NULL, 10000) != 1 || e.op_context != &sc)
		die("fi_cq_sread did not return the send");
	if (first_bad(r, sizeof(r), 9) != sizeof(r))
		die("sread data wrong");
	double t0 = now_s();
	if (fi_cq_sread(B.g.cq, &e, 1, NULL, 200) != -FI_EAGAIN || now_s() - t0 < 0.15)
		die("fi_cq_sread on an empty CQ did not time out after 200 ms");

	CHK(fi_control(&B.g.cq->fid, FI_GETWAIT, &fd));
	CHK(fi_trecv(B.ep, r, sizeof(r), NULL, FI_ADDR_UNSPEC, 8, 0, &rc));
	CHK(fi_tsend(A.ep, s, sizeof(s), NULL, A.peer, 8, &sc));
	t0 = now_s();
	for (;;) {
		if (fi_trywait(B.g.fabric, fids, 1) == 0) {
			struct pollfd p = {.fd = fd, .events = POLLIN};
			poll(&p, 1, 1000);
		}
		if (fi_cq_read(B.g.cq, &e, 1) == 1)
			break;
		if (now_s() - t0 > 10)
			die("FD wait: no completion");
	}
	if (e.op_context != &rc)
		die("FD wait: wrong completion");
	expect_ok(&A, &B, &sc, "send for the FD wait");
	printf("ok: fi_cq_sread (completion and timeout), FD wait object with fi_trywait\n");
}

/*
 * Lost wakeups.  fi_trywait must see a completion already queued; and a
 * completion that B's progress thread writes while B's application sleeps
 * (the frame it would have polled for already taken) must still wake it,
 * through the FD as through fi_cq_sread.  Asserted on what every wait
 * returns, never on how long it took: a lost wakeup shows as a wait that
 * runs out (10 s) without its completion.
 */
static atomic_int sread_round, sread_done, sread_bad;
static struct fi_context sread_ctx[40];

static void *sread_thread(void *arg)
{
	int rounds = *(int *)arg;

	for (int i = 0; i < rounds; i++) {
		struct fi_cq_tagged_entry e;

		while (atomic_load(&sread_round) <= i)
			sched_yield(); /* the main thread posts round i's receive first */
		if (fi_cq_sread(B.g.cq, &e, 1, NULL, 10000) != 1 || e.op_context != &sread_ctx[i])
			atomic_fetch_add(&sread_bad, 1);
		atomic_store(&sread_done, i + 1);
	}
	return NULL;
}

static void send_transmit_complete(struct side *a, void *buf, size_t len, uint64_t tag,
                                   struct fi_context *ctx)
{
	struct iovec iov = {buf, len};
	struct fi_msg_tagged m = {
	    .msg_iov = &iov, .iov_count = 1, .addr = a->peer, .tag = tag, .context = ctx};

	/* Completes only once B acked it: B has the message by then. */
	CHK(fi_tsendmsg(a->ep, &m, FI_TRANSMIT_COMPLETE | FI_COMPLETION));
	expect_ok(a, NULL, ctx, "transmit-complete send");
}

static void test_wait_races(void)
{
	uint8_t s[64], r[64];
	struct fi_context sc, rc;
	struct fi_cq_tagged_entry e;
	struct fid *fids[1] = {&B.g.cq->fid};
	int fd, rounds = 20, threaded = 40;
	pthread_t th;

	fill(s, sizeof(s), 11);
	CHK(fi_control(&B.g.cq->fid, FI_GETWAIT, &fd));
	/* B's own send completes at once, buffered: it is queued now. */
	CHK(fi_trecv(A.ep, r, sizeof(r), NULL, FI_ADDR_UNSPEC, 20, 0, &rc));
	CHK(fi_tsend(B.ep, s, sizeof(s), NULL, B.peer, 20, &sc));
	if (fi_trywait(B.g.fabric, fids, 1) != -FI_EAGAIN)
		die("fi_trywait said safe to block with a completion queued");
	/* ... and the send counter moved since it was last read. */
	struct fid *cfids[1] = {&B.scntr->fid};
	if (fi_trywait(B.g.fabric, cfids, 1) != -FI_EAGAIN)
		die("fi_trywait said safe to block on a counter that moved");
	fi_cntr_read(B.scntr);
	if (fi_trywait(B.g.fabric, cfids, 1) != 0)
		die("fi_trywait on a counter read since it last moved did not let us block");
	expect_ok(&B, &A, &sc, "send before trywait");
	expect_ok(&A, &B, &rc, "receive of the send before trywait");

	for (int i = 0; i < rounds; i++) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		memset(r, 0, sizeof(r));
		CHK(fi_trecv(B.ep, r, sizeof(r), NULL, FI_ADDR_UNSPEC, 21, 0, &rc));
		if (fi_trywait(B.g.fabric, fids, 1) != 0)
			die("FD round %d: fi_trywait on an empty CQ did not let us block", i);
		send_transmit_complete(&A, s, sizeof(s), 21, &sc);
		if (poll(&p, 1, 10000) != 1)
			die("FD round %d: a completion written while B slept did not wake it", i);
		if (fi_cq_read(B.g.cq, &e, 1) != 1 || e.op_context != &rc)
			die("FD round %d: woken without the completion", i);
		if (first_bad(r, sizeof(r), 11) != sizeof(r))
			die("FD round %d: data wrong", i);
	}

	atomic_store(&sread_round, 0);
	atomic_store(&sread_done, 0);
	if (pthread_create(&th, NULL, sread_thread, &threaded))
		die("pthread_create");
	for (int i = 0; i < threaded; i++) {
		CHK(fi_trecv(B.ep, r, sizeof(r), NULL, FI_ADDR_UNSPEC, 22, 0, &sread_ctx[i]));
		atomic_store(&sread_round, i + 1);
		send_transmit_complete(&A, s, sizeof(s), 22, &sc);
		double t0 = now_s();
		while (atomic_load(&sread_done) <= i)
			if (now_s() - t0 > 30)
				die("sread round %d: the waiting thread never returned", i);
	}
	pthread_join(th, NULL);
	if (atomic_load(&sread_bad))
		die("%d of %d fi_cq_sread calls returned without their completion",
		    atomic_load(&sread_bad), threaded);
	printf("ok: fi_trywait sees a queued completion; %d FD waits and %d fi_cq_sread calls "
	       "each woke with the completion the progress thread wrote\n",
	       rounds, threaded);
}

/*
 * Progress without the application: B posts a receive for a rendezvous
 * message and then never calls into its domain; A's send, asking for
 * FI_TRANSMIT_COMPLETE, completes only once B answered the RTS and acked
 * every frame, which only B's progress thread can do.  Then B's CQ holds
 * exactly that one receive, with every byte.  Waits for completions, never
 * for time: without the thread, A's wait runs out (120 s).
 */
static void test_thread_answers(void)
{
	const size_t len = 1 << 20; /* above FI_GAMMA_RNDV_THRESHOLD: RTS, CTS, pull */
	uint8_t *s = malloc(len), *r = malloc(len);
	struct fi_context sc, rc;
	struct fi_cq_tagged_entry e;

	if (!s || !r)
		die("out of memory");
	fill(s, len, 21);
	memset(r, 0, len);
	CHK(fi_trecv(B.ep, r, len, NULL, FI_ADDR_UNSPEC, 21, 0, &rc));
	send_transmit_complete(&A, s, len, 21, &sc);
	if (fi_cq_read(B.g.cq, &e, 1) != 1 || e.op_context != &rc || e.len != len || e.tag != 21)
		die("B's receive did not complete with its message");
	if (fi_cq_read(B.g.cq, &e, 1) != -FI_EAGAIN)
		die("B's CQ holds more than the one receive");
	if (first_bad(r, len, 21) != len)
		die("B's progress thread delivered wrong data at %zu", first_bad(r, len, 21));
	free(s);
	free(r);
	printf("ok: B's progress thread answered a 1 MiB rendezvous and acked it while B's "
	       "application stayed away; one receive completion, every byte checked\n");
}

static void run_pair(size_t max)
{
	side_open(&A, FI_TC_UNSPEC);
	side_open(&B, FI_TC_UNSPEC);
	connect_sides(&A, &B);
	connect_sides(&B, &A);
	test_sizes(max);
	test_truncation();
	test_peek_claim_cancel();
	test_order_and_wildcards();
	test_multi_recv();
	test_waits();
	test_wait_races();
	test_thread_answers();
	side_close(&A);
	side_close(&B);
}

/* The child (B) takes one message, then dies; A must get FI_EIO, not hang. */
/*
 * Fork the peer: the child opens B, the parent A, and each inserts the
 * other.  Returns the child's pid, 0 in the child; *cmd is the pipe the
 * child reads the parent's further commands from.
 */
static pid_t fork_peer(int *cmd)
{
	int up[2], down[2];
	char addr[64];
	size_t len = sizeof(addr);
	pid_t pid;

	if (pipe(up) || pipe(down))
		die("pipe");
	pid = fork();
	if (pid == 0) {
		side_open(&B, FI_TC_UNSPEC);
		CHK(fi_getname(&B.ep->fid, addr, &len));
		if (write(up[1], addr, len) != (ssize_t)len || read(down[0], addr, 8) != 8)
			_exit(2);
		CHK(fi_av_insert(B.g.av, addr, 1, &B.peer, 0, NULL));
		*cmd = down[0];
		return 0;
	}
	side_open(&A, FI_TC_UNSPEC);
	if (read(up[0], addr, sizeof(addr)) <= 0)
		die("child did not start");
	CHK(fi_av_insert(A.g.av, addr, 1, &A.peer, 0, NULL));
	len = sizeof(addr);
	CHK(fi_getname(&A.ep->fid, addr, &len));
	if (write(down[1], addr, 8) != 8)
		die("pipe write");
	*cmd = down[1];
	return pid;
}

static void run_kill(void)
{
	int cmd;
	pid_t pid = fork_peer(&cmd);

	if (pid == 0) {
		uint8_t r[16];
		struct fi_context rc;
		CHK(fi_trecv(B.ep, r, sizeof(r), NULL, FI_ADDR_UNSPEC, 1, 0, &rc));
		expect_ok(&B, NULL, &rc, "child recv");
		/* keep acking until the parent's send completed, then die */
		struct pollfd p = {.fd = cmd, .events = POLLIN};
		while (poll(&p, 1, 0) == 0) {
			struct fi_cq_tagged_entry e;
			fi_cq_read(B.g.cq, &e, 1);
		}
		raise(SIGKILL);
	}
	uint8_t msg[16] = "hello";
	struct fi_context sc, sc2;
	/* Acknowledged before B dies: its data is not among what is lost. */
	send_transmit_complete(&A, msg, sizeof(msg), 1, &sc);
	if (write(cmd, "k", 1) != 1)
		die("pipe write");
	waitpid(pid, NULL, 0);
	static uint8_t big[1 << 20];
	struct fi_context sc3;
	double t0 = now_s();
	/* Completes at once (buffered); its data is lost with the peer. */
	CHK(fi_tsend(A.ep, msg, sizeof(msg), NULL, A.peer, 3, &sc3));
	expect_ok(&A, NULL, &sc3, "buffered send to the dead peer");
	CHK(fi_tsend(A.ep, big, sizeof(big), NULL, A.peer, 2, &sc2));
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int ret = wait_comp(&A, NULL, &e, &err, 60);
	if (ret != -FI_EIO || err.op_context != &sc2)
		die("send to dead peer: got %d, want -FI_EIO", ret);
	if (fi_cntr_readerr(A.scntr) != 2)
		die("send counter errors %lu, want 2: the failed send and the buffered one whose "
		    "data was lost",
		    (unsigned long)fi_cntr_readerr(A.scntr));
	char buf[256];
	printf("ok: send to a killed peer failed with FI_EIO after %.1f s: %s; the buffered send "
	       "whose data was lost counted as a send error\n",
	       now_s() - t0, fi_cq_strerror(A.g.cq, err.prov_errno, NULL, buf, sizeof(buf)));
	side_close(&A);
}

/*
 * The child (B) dies while A has nothing in flight to it: A only waits, on a
 * receive directed at B and on a rendezvous send whose CTS B never sends.
 * Both must fail with FI_EIO once B has been silent for
 * FI_GAMMA_PEER_TIMEOUT (found by keepalive probes: FI_GAMMA_STATS shows them).
 */
static void run_idle_kill(void)
{
	uint8_t hello[16] = "hello", seen[16];
	struct fi_context sc, rc, dc, bc;
	int cmd;
	char x;
	pid_t pid = fork_peer(&cmd);

	if (pid == 0) {
		struct fi_cq_tagged_entry e;
		struct fi_msg_tagged m = {.addr = FI_ADDR_UNSPEC, .tag = 6, .context = &rc};
		/* Wait until A's rendezvous request is here (never matched). */
		for (double t0 = now_s();;) {
			int r;
			CHK(fi_trecvmsg(B.ep, &m, FI_PEEK | FI_COMPLETION));
			r = wait_comp(&B, NULL, &e, &(struct fi_cq_err_entry){0}, 30);
			if (r == 0)
				break;
			if (r != -FI_ENOMSG || now_s() - t0 > 30)
				die("child: peek for the rendezvous request: %d", r);
		}
		/* Its ack rides on this message: nothing of A's is in flight after. */
		CHK(fi_tsend(B.ep, hello, sizeof(hello), NULL, B.peer, 1, &sc));
		expect_ok(&B, NULL, &sc, "child: seen");
		if (read(cmd, &x, 1) != 1)
			_exit(2);
		raise(SIGKILL);
	}
	static uint8_t big[1 << 20];
	CHK(fi_trecv(A.ep, seen, sizeof(seen), NULL, A.peer, 1, 0, &rc));
	CHK(fi_trecv(A.ep, NULL, 0, NULL, A.peer, 5, 0, &dc));
	CHK(fi_tsend(A.ep, big, sizeof(big), NULL, A.peer, 6, &bc));
	expect_ok(&A, NULL, &rc, "the child saw the rendezvous request");
	if (write(cmd, "x", 1) != 1)
		die("pipe write");
	waitpid(pid, NULL, 0);
	double t0 = now_s();
	int failed = 0;
	while (failed < 2) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		int r = wait_comp(&A, NULL, &e, &err, 120);
		if (r != -FI_EIO || (err.op_context != &dc && err.op_context != &bc))
			die("waits on the dead peer: got %d for %p, want -FI_EIO for the directed "
			    "receive and the rendezvous send",
			    r, r ? err.op_context : e.op_context);
		failed++;
	}
	printf("ok: idle peer killed: directed receive and rendezvous send failed with FI_EIO "
	       "after %.1f s\n",
	       now_s() - t0);
	side_close(&A);
}

/*
 * Run with FI_GAMMA_UX_PEER_MAX=200000: A sends eight 60000-byte (medium)
 * messages, each completing once B acknowledged it; B posts nothing until
 * three of them completed, so it holds them unexpected and the rest go
 * over its cap.  Those B must refuse and hold back, not drop: once B
 * receives, in order, every message arrives intact and every send
 * completes.  (provider-veth.sh checks B's counters: frames refused, the
 * peak held.)
 */
static void run_ux_cap(void)
{
	enum { N = 8, LEN = 60000, FIRST = 3 };
	static uint8_t sbuf[N][LEN], rbuf[LEN];
	struct fi_context sc[N], rc;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int sent = 0;

	side_open(&A, FI_TC_UNSPEC);
	side_open(&B, FI_TC_UNSPEC);
	connect_sides(&A, &B);
	connect_sides(&B, &A);
	for (int i = 0; i < N; i++) {
		struct iovec iov = {sbuf[i], LEN};
		struct fi_msg_tagged m = {.msg_iov = &iov,
		                          .iov_count = 1,
		                          .addr = A.peer,
		                          .tag = 100 + i,
		                          .context = &sc[i]};

		fill(sbuf[i], LEN, 100 + i);
		CHK(fi_tsendmsg(A.ep, &m, FI_TRANSMIT_COMPLETE | FI_COMPLETION));
	}
	for (; sent < FIRST; sent++) {
		int r = wait_comp(&A, &B, &e, &err, 120);

		if (r)
			die("send %d: error completion %d (%s)", sent, r, fi_strerror(-r));
	}
	for (int i = 0; i < N; i++) {
		memset(rbuf, 0, LEN);
		CHK(fi_trecv(B.ep, rbuf, LEN, NULL, FI_ADDR_UNSPEC, 100 + i, 0, &rc));
		expect_ok(&B, &A, &rc, "receive of a message sent past the cap");
		if (first_bad(rbuf, LEN, 100 + i) != LEN)
			die("message %d corrupt", i);
	}
	for (; sent < N; sent++) {
		int r = wait_comp(&A, &B, &e, &err, 120);

		if (r)
			die("send %d: error completion %d (%s)", sent, r, fi_strerror(-r));
	}
	printf("ok: FI_GAMMA_UX_PEER_MAX: %d unexpected %d-byte messages past the cap, each "
	       "intact, every send completed\n",
	       N, LEN);
	side_close(&A);
	side_close(&B);
}

/*
 * N small tagged sends back to back, then progress: every message arrives
 * intact and in send order.  The provider hands such a burst to the link
 * in a few calls (gm_net_kick); provider-veth.sh counts them.
 */
static void run_burst(void)
{
	enum { N = 256, LEN = 64 };
	static uint8_t sbuf[N][LEN], rbuf[N][LEN];
	struct fi_context sc[N], rc[N];
	struct fi_cq_tagged_entry e;
	int sent = 0, sdone = 0, rdone = 0;
	double t0 = now_s();

	side_open(&A, FI_TC_UNSPEC);
	side_open(&B, FI_TC_UNSPEC);
	connect_sides(&A, &B);
	connect_sides(&B, &A);
	for (int i = 0; i < N; i++) {
		fill(sbuf[i], LEN, 500 + i);
		CHK(fi_trecv(B.ep, rbuf[i], LEN, NULL, B.peer, 7, 0, &rc[i]));
	}
	while (sent < N) {
		ssize_t r = fi_tsend(A.ep, sbuf[sent], LEN, NULL, A.peer, 7, &sc[sent]);

		if (r == -FI_EAGAIN) { /* out of transmit resources: progress both, then on */
			if (fi_cq_read(A.g.cq, &e, 1) == 1 && e.op_context != &sc[sdone++])
				die("burst: send completions out of order");
			fi_cq_read(B.g.cq, &e, 0);
			if (now_s() - t0 > 120)
				die("burst: send %d refused for 120 s", sent);
			continue;
		}
		CHK(r);
		sent++;
	}
	while (sdone < N || rdone < N) {
		if (sdone < N && fi_cq_read(A.g.cq, &e, 1) == 1 && e.op_context != &sc[sdone++])
			die("burst: send completions out of order");
		if (rdone < N && fi_cq_read(B.g.cq, &e, 1) == 1) {
			/* Same tag, so matched in order: receive i holds message i. */
			if (e.op_context != &rc[rdone] || e.len != LEN)
				die("burst: receive %d completed as %p, %zu B", rdone, e.op_context,
				    e.len);
			if (first_bad(rbuf[rdone], LEN, 500 + rdone) != LEN)
				die("burst: message %d corrupt", rdone);
			rdone++;
		}
		if (now_s() - t0 > 120)
			die("burst: %d of %d sends, %d receives completed", sdone, N, rdone);
	}
	printf("ok: a burst of %d %d-byte sends, every one delivered intact and in order\n", N,
	       LEN);
	side_close(&A);
	side_close(&B);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s pair|kill|idle-kill|ux-cap|burst IF_A IF_B [MAX_SIZE]\n",
		        argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	A.ifname = argv[2];
	B.ifname = argv[3];
	if (!strcmp(argv[1], "pair"))
		run_pair(argc > 4 ? strtoull(argv[4], NULL, 0) : (64u << 20));
	else if (!strcmp(argv[1], "kill"))
		run_kill();
	else if (!strcmp(argv[1], "idle-kill"))
		run_idle_kill();
	else if (!strcmp(argv[1], "ux-cap"))
		run_ux_cap();
	else if (!strcmp(argv[1], "burst"))
		run_burst();
	else
		die("unknown mode %s", argv[1]);
	return failures ? 1 : 0;
}
