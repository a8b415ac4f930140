/*
 * Conformance of provider "gamma" to the fi_* man pages, on the points
 * libfabric's fabtests check (they are not in Debian, so they cannot run in
 * make check).  One process, two domains on the two ends of a veth pair:
 *
 *   gm-conform IF_A IF_B IP_A IP_B IP_C IP6_A IP6_B IP6_C
 *
 * IF_A carries IP_A and IP6_A, IF_B IP_B and IP6_B, on one IPv4 /24 and
 * one IPv6 /64; IF_A has neighbour entries for IP_B and IP6_B, none for
 * IP_C and IP6_C, unused addresses of the subnets (the caller sets these
 * up; gm-conform-sock.c adds the entries for IP_C/IP6_C when it needs
 * them).  Every check asserts on returned values or received data.
 */
#include "gm-conform.h"

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <time.h>

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "FAIL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

struct fi_info *base_hints(const char *ifname)
{
	struct fi_info *h = fi_allocinfo();

	WANT(h, "fi_allocinfo");
	h->fabric_attr->prov_name = strdup("gamma");
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG | FI_TAGGED | FI_SOURCE;
	h->mode = FI_CONTEXT;
	if (ifname)
		h->domain_attr->name = strdup(ifname);
	return h;
}

/* A gmf step that failed: what names the call. */
static void gmf_chk(int r, const char *what)
{
	if (r)
		die("%s = %d (%s)", what, r, fi_strerror(-r));
}

/* The endpoint on its own fabric and domain, with an EQ; op_flags go to tx_attr. */
void side_open(struct side *s, uint64_t tx_op_flags, const char *service)
{
	struct fi_info *h = base_hints(s->ifname), *info;
	struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE};
	struct fi_av_attr ava = {.type = FI_AV_TABLE};
	struct fi_eq_attr eqa = {.wait_obj = FI_WAIT_UNSPEC};
	size_t len = sizeof(s->name);
	const char *what = "";

	h->tx_attr->op_flags = tx_op_flags;
	h->addr_format = s->addr_format;
	CHK(fi_getinfo(VERS, NULL, service, service ? FI_SOURCE : 0, h, &info));
	fi_freeinfo(h);
	gmf_chk(gmf_open(&s->g, info, NULL, &cqa, &ava, &what), what);
	gmf_chk(gmf_eq(&s->g, &eqa, &what), what);
	gmf_chk(gmf_ep(&s->g, NULL, NULL, 0, &s->ep, &what), what);
	CHK(fi_getname(&s->ep->fid, s->name, &len));
	s->namelen = len;
	WANT(len == (s->addr_format == FI_SOCKADDR_IN6 ? sizeof(struct sockaddr_in6)
	             : s->addr_format                  ? sizeof(struct sockaddr_in)
	                                               : ADDRLEN),
	     "fi_getname: %zu bytes", len);
}

void side_close(struct side *s)
{
	if (s->ep)
		CHK(fi_close(&s->ep->fid));
	if (s->cntr)
		CHK(fi_close(&s->cntr->fid));
	CHK(gmf_close(&s->g));
	memset(s, 0, sizeof(*s));
}

static void connect_pair(struct side *a, struct side *b)
{
	WANT(fi_av_insert(a->g.av, b->name, 1, &a->peer, 0, NULL) == 1, "fi_av_insert");
	WANT(fi_av_insert(b->g.av, a->name, 1, &b->peer, 0, NULL) == 1, "fi_av_insert");
}

int wait_cq(struct side *s, struct fi_cq_tagged_entry *e, fi_addr_t *src,
            struct fi_cq_err_entry *err)
{
	time_t end = time(NULL) + 30;
	fi_addr_t from;

	while (time(NULL) < end) {
		ssize_t r = fi_cq_readfrom(s->g.cq, e, 1, src ? src : &from);
		if (r == 1)
			return 0;
		if (r == -FI_EAVAIL) {
			CHK(fi_cq_readerr(s->g.cq, err, 0));
			return -err->err;
		}
		WANT(r == -FI_EAGAIN, "fi_cq_read on %s: %zd", s->ifname, r);
	}
	die("no completion on %s within 30 s", s->ifname);
	return 0;
}

void expect_ok(struct side *s, void *ctx, const char *what)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = {0};
	int r = wait_cq(s, &e, NULL, &err);

	WANT(!r, "%s: completed in error %d (%s)", what, r, fi_strerror(-r));
	WANT(e.op_context == ctx, "%s: completion for context %p, expected %p", what, e.op_context,
	     ctx);
}

/* ---- event queue ---- */

static void *eq_writer(void *arg)
{
	struct fi_eq_entry e = {.context = (void *)0x5eed};

	if (fi_eq_write(arg, FI_NOTIFY, &e, sizeof(e), 0) != sizeof(e))
		die("fi_eq_write from a thread");
	return NULL;
}

static bool fd_readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, 0) == 1;
}

static void check_eq(struct side *a)
{
	struct fi_eq_attr attr = {.size = 4, .wait_obj = FI_WAIT_UNSPEC, .flags = FI_WRITE};
	struct fi_eq_entry in = {.fid = &a->g.fabric->fid, .data = 42}, out;
	struct fi_eq_err_entry err = {0};
	struct fid_eq *eq;
	struct fid *fids[1];
	uint32_t ev;
	pthread_t t;
	int fd;

	CHK(fi_eq_open(a->g.fabric, &attr, &eq, NULL));
	CHK(fi_control(&eq->fid, FI_GETWAIT, &fd));
	fids[0] = &eq->fid;
	WANT(fi_trywait(a->g.fabric, fids, 1) == 0, "fi_trywait on an empty EQ");
	WANT(!fd_readable(fd), "empty EQ's fd is readable");
	WANT(fi_eq_read(eq, &ev, &out, sizeof(out), 0) == -FI_EAGAIN, "read of an empty EQ");
	WANT(fi_eq_readerr(eq, &err, 0) == -FI_EAGAIN, "readerr of an empty EQ");
	WANT(fi_eq_sread(eq, &ev, &out, sizeof(out), 50, 0) == -FI_EAGAIN, "sread timeout");
	WANT(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0) == sizeof(in), "fi_eq_write");
	WANT(fd_readable(fd), "EQ with an event: fd not readable");
	WANT(fi_trywait(a->g.fabric, fids, 1) == -FI_EAGAIN, "fi_trywait with an event");
	WANT(fi_eq_read(eq, &ev, &out, sizeof(out), FI_PEEK) == sizeof(out), "FI_PEEK read");
	memset(&out, 0, sizeof(out));
	WANT(fi_eq_read(eq, &ev, &out, sizeof(out), 0) == sizeof(out), "fi_eq_read");
	WANT(ev == FI_NOTIFY && out.data == 42 && out.fid == &a->g.fabric->fid,
	     "event data differs");
	WANT(!fd_readable(fd), "drained EQ's fd still readable");

	/* sread blocks until another thread writes */
	WANT(!pthread_create(&t, NULL, eq_writer, eq), "pthread_create");
	WANT(fi_eq_sread(eq, &ev, &out, sizeof(out), -1, 0) == sizeof(out), "fi_eq_sread");
	WANT(out.context == (void *)0x5eed, "sread: wrong event");
	pthread_join(t, NULL);

	/* overrun (fi_eq(3)): writes fail, then the reader learns of it */
	for (int i = 0; i < 4; i++)
		WANT(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0) == sizeof(in), "write %d", i);
	WANT(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0) == -FI_EOVERRUN, "overrun write");
	for (int i = 0; i < 4; i++)
		WANT(fi_eq_read(eq, &ev, &out, sizeof(out), 0) == sizeof(out), "read %d", i);
	WANT(fi_eq_read(eq, &ev, &out, sizeof(out), 0) == -FI_EAVAIL, "overrun not reported");
	WANT(fi_eq_readerr(eq, &err, 0) == sizeof(err) && err.err == FI_EOVERRUN, "readerr");
	WANT(fi_eq_strerror(eq, err.prov_errno, NULL, NULL, 0) != NULL, "fi_eq_strerror");

	/* an EQ bound to an endpoint stays until the endpoint closes */
	WANT(fi_close(&a->g.eq->fid) == -FI_EBUSY, "closing a bound EQ");
	CHK(fi_close(&eq->fid));
	printf("ok: event queue: write/read/peek/sread/fd/trywait/overrun/bind\n");
}

/* ---- addresses ---- */

static void check_av(struct side *a)
{
	struct fi_av_attr attr = {.type = FI_AV_TABLE, .flags = FI_EVENT};
	struct fi_eq_entry e;
	struct fid_av *av;
	fi_addr_t fa;
	uint32_t ev;

	WANT(fi_av_insert(a->g.av, NULL, 1, &fa, 0, NULL) == -FI_EINVAL, "fi_av_insert(NULL, 1)");
	CHK(fi_av_open(a->g.domain, &attr, &av, NULL));
	WANT(fi_av_insert(av, a->name, 1, &fa, 0, NULL) == -FI_ENOEQ, "FI_EVENT insert, no EQ");
	CHK(fi_av_bind(av, &a->g.eq->fid, 0));
	WANT(fi_av_insert(av, a->name, 1, &fa, 0, (void *)0xa7) == 0, "FI_EVENT insert");
	WANT(fi_eq_read(a->g.eq, &ev, &e, sizeof(e), 0) == sizeof(e), "no FI_AV_COMPLETE");
	WANT(ev == FI_AV_COMPLETE && e.data == 1 && e.context == (void *)0xa7,
	     "FI_AV_COMPLETE: event %u data %lu", ev, (unsigned long)e.data);
	CHK(fi_close(&av->fid));
	/* count is a hint (fi_av(3)): a huge one neither hangs nor reserves it all */
	struct fi_av_attr big = {.type = FI_AV_TABLE, .count = SIZE_MAX};
	CHK(fi_av_open(a->g.domain, &big, &av, NULL));
	WANT(fi_av_insert(av, a->name, 1, &fa, 0, NULL) == 1 && fa == 0, "insert, count SIZE_MAX");
	CHK(fi_close(&av->fid));
	printf("ok: fi_av_insert: NULL refused; FI_EVENT AV reports on its EQ; count is a hint\n");
}

static void check_getinfo(struct side *a, struct side *b, const char *ip_b)
{
	struct fi_info *h = base_hints(NULL), *fi, *info;
	const uint8_t *mac_b = b->name;
	int n = 0;

	WANT(fi_getinfo(VERS, "g00n13s", "4242", 0, h, &info) == -FI_ENODATA,
	     "unresolvable node not refused with -FI_ENODATA");
	WANT(fi_getinfo(VERS, NULL, "http", FI_SOURCE, h, &info) == -FI_ENODATA,
	     "service that is not a port not refused");
	CHK(fi_getinfo(VERS, ip_b, "4242", 0, h, &info));
	for (fi = info; fi; fi = fi->next) {
		const uint8_t *d = fi->dest_addr;
		WANT(fi->src_addr && fi->src_addrlen == ADDRLEN, "%s: no src_addr",
		     fi->domain_attr->name);
		WANT(d && fi->dest_addrlen == ADDRLEN, "%s: no dest_addr", fi->domain_attr->name);
		WANT(!memcmp(d, mac_b, 6), "%s: dest MAC is not %s's", fi->domain_attr->name,
		     b->ifname);
		WANT(*(const uint16_t *)(d + 6) == 4242, "dest port is not the service");
		WANT(!(fi->tx_attr->caps & (FI_LOCAL_COMM | FI_REMOTE_COMM)) &&
		         !(fi->rx_attr->caps & (FI_LOCAL_COMM | FI_REMOTE_COMM)),
		     "tx/rx caps carry domain caps");
		n++;
	}
	WANT(n == 2, "%s resolved on %d interfaces, expected 2 (ARP on %s, own on %s)", ip_b, n,
	     a->ifname, b->ifname);
	fi_freeinfo(info);

	/* FI_SOURCE node: only the interface it names, its MAC as source */
	CHK(fi_getinfo(VERS, ip_b, NULL, FI_SOURCE, h, &info));
	WANT(!info->next && !strcmp(info->domain_attr->name, b->ifname),
	     "FI_SOURCE %s: not exactly %s", ip_b, b->ifname);
	WANT(info->src_addr && !memcmp(info->src_addr, mac_b, 6), "FI_SOURCE: source MAC");
	fi_freeinfo(info);

	/* this host (fi_loopback's 127.0.0.1): every interface, its own MAC */
	CHK(fi_getinfo(VERS, "127.0.0.1", NULL, FI_SOURCE | FI_NUMERICHOST, h, &info));
	n = 0;
	for (fi = info; fi; fi = fi->next, n++)
		WANT(fi->src_addr &&
		         !memcmp(fi->src_addr,
		                 strcmp(fi->domain_attr->name, a->ifname) ? b->name : a->name, 6),
		     "127.0.0.1 as source on %s: not its MAC", fi->domain_attr->name);
	WANT(n == 2, "127.0.0.1 as source: %d interfaces, expected 2", n);
	fi_freeinfo(info);
	fi_freeinfo(h);
	printf("ok: fi_getinfo resolves node/service, refuses what it cannot, fills src_addr\n");
}

/* ---- data transfer ---- */

static void check_loopback(struct side *a)
{
	char out[64] = "to myself", in[64] = "";
	fi_addr_t self;
	int rx, tx;

	/* the source address fi_getinfo gave is the endpoint's own (fi_loopback) */
	WANT(!memcmp(a->g.info->src_addr, a->name, ADDRLEN), "src_addr differs from fi_getname");
	WANT(fi_av_insert(a->g.av, a->g.info->src_addr, 1, &self, 0, NULL) == 1, "insert self");
	CHK(fi_recv(a->ep, in, sizeof(in), NULL, self, &rx));
	CHK(fi_send(a->ep, out, sizeof(out), NULL, self, &tx));
	for (int i = 0; i < 2; i++) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		WANT(!wait_cq(a, &e, NULL, &err), "loopback completion in error");
		WANT(e.op_context == &rx || e.op_context == &tx, "loopback: stray completion");
	}
	WANT(!strcmp(in, out), "loopback: received '%s'", in);
	printf("ok: loopback to the endpoint's own source address\n");
}

static void check_inject_flag(struct side *a, struct side *b)
{
	char buf[32], in[3][32];
	int rx[3], tx[2];
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
	struct fi_msg msg = {.msg_iov = &iov, .iov_count = 1, .addr = a->peer, .context = &tx[0]};

	for (int i = 0; i < 3; i++)
		CHK(fi_recv(b->ep, in[i], sizeof(in[i]), NULL, b->peer, &rx[i]));
	/* fi_inject: no completion at all ... */
	strcpy(buf, "inject");
	CHK(fi_inject(a->ep, buf, sizeof(buf), a->peer));
	/* ... fi_sendmsg(FI_INJECT): buffer free on return, and a completion */
	strcpy(buf, "sendmsg-inject");
	CHK(fi_sendmsg(a->ep, &msg, FI_INJECT | FI_COMPLETION));
	memset(buf, 'x', sizeof(buf));
	expect_ok(a, &tx[0], "fi_sendmsg(FI_INJECT)");
	/* ... and FI_INJECT in tx op_flags (a's info) applies to fi_send */
	strcpy(buf, "opflag-inject");
	CHK(fi_send(a->ep, buf, sizeof(buf), NULL, a->peer, &tx[1]));
	memset(buf, 'y', sizeof(buf));
	expect_ok(a, &tx[1], "fi_send with FI_INJECT op flag");
	for (int i = 0; i < 3; i++)
		expect_ok(b, &rx[i], "receive");
	WANT(!strcmp(in[0], "inject") && !strcmp(in[1], "sendmsg-inject") &&
	         !strcmp(in[2], "opflag-inject"),
	     "injected data differs: '%s' '%s' '%s'", in[0], in[1], in[2]);
	printf("ok: FI_INJECT as a flag completes; fi_inject does not\n");
}

/* A poll set over b's CQ and a receive counter names each once it has news. */
static void check_poll(struct side *a, struct side *b)
{
	struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP};
	struct fid_cntr *cntr;
	struct fid_poll *ps;
	struct fi_poll_attr pa = {0};
	char in[16] = "", out[16] = "polled";
	bool cq_named = false, cntr_named = false, tx_done = false;
	void *ctx[4];
	int rx, tx, n;
	time_t end = time(NULL) + 30;

	CHK(fi_cntr_open(b->g.domain, &ca, &cntr, &cntr));
	CHK(fi_ep_bind(b->ep, &cntr->fid, FI_RECV));
	CHK(fi_poll_open(b->g.domain, &pa, &ps));
	CHK(fi_poll_add(ps, &b->g.cq->fid, 0));
	CHK(fi_poll_add(ps, &cntr->fid, 0));
	WANT(fi_poll_add(ps, &a->g.cq->fid, 0) == -FI_EINVAL, "another domain's CQ accepted");
	WANT(fi_poll(ps, ctx, 4) == 0, "fi_poll with nothing happened");
	CHK(fi_recv(b->ep, in, sizeof(in), NULL, b->peer, &rx));
	CHK(fi_send(a->ep, out, sizeof(out), NULL, a->peer, &tx));
	while (!(cq_named && cntr_named) && time(NULL) < end) {
		struct fi_cq_tagged_entry e;
		if (fi_cq_read(a->g.cq, &e, 1) == 1) /* a's progress: its send, its acks */
			tx_done |= e.op_context == &tx;
		CHK(n = fi_poll(ps, ctx, 4));
		for (int i = 0; i < n; i++) {
			WANT(ctx[i] == &b->g || ctx[i] == &cntr, "fi_poll: unknown context %p",
			     ctx[i]);
			cq_named |= ctx[i] == &b->g; /* the CQ's context (gmf_open) */
			cntr_named |= ctx[i] == &cntr;
		}
	}
	WANT(cq_named && cntr_named, "fi_poll never named the CQ (%d) / counter (%d)", cq_named,
	     cntr_named);
	WANT(fi_cntr_read(cntr) == 1, "receive counter %lu", (unsigned long)fi_cntr_read(cntr));
	expect_ok(b, &rx, "polled receive");
	if (!tx_done)
		expect_ok(a, &tx, "polled send");
	WANT(!strcmp(in, out), "polled data differs");
	WANT(fi_poll(ps, ctx, 4) == 0, "fi_poll: news after everything was read");
	CHK(fi_poll_del(ps, &cntr->fid, 0));
	WANT(fi_poll_del(ps, &cntr->fid, 0) == -FI_ENOENT, "fi_poll_del of a non-member");
	CHK(fi_close(&ps->fid));
	printf("ok: fi_poll names the CQ and counter with news, and only then\n");
	/* the counter stays bound to b's endpoint, closed with it */
	b->cntr = cntr;
}

/*
 * b receives a's FI_DELIVERY_COMPLETE send and closes at once: the ack it
 * owes must still go out, or a's send fails after the peer timeout.
 */
static void check_close_flushes_acks(struct side *a, struct side *b)
{
	char out[100] = "last words", in[100] = "";
	struct iovec iov = {.iov_base = out, .iov_len = sizeof(out)};
	struct fi_msg msg = {.msg_iov = &iov, .iov_count = 1, .addr = a->peer, .context = out};
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = {0};
	int rx, r;

	CHK(fi_recv(b->ep, in, sizeof(in), NULL, b->peer, &rx));
	CHK(fi_sendmsg(a->ep, &msg, FI_DELIVERY_COMPLETE | FI_COMPLETION));
	expect_ok(b, &rx, "receive of the last message");
	WANT(!strcmp(in, out), "last message differs");
	CHK(fi_close(&b->ep->fid));
	b->ep = NULL;
	r = wait_cq(a, &e, NULL, &err);
	WANT(!r, "FI_DELIVERY_COMPLETE send to a peer that closed after receiving: %s",
	     fi_strerror(-r));
	WANT(e.op_context == out, "wrong completion");
	printf("ok: endpoint close sends the acks it owes; the peer's send completes\n");
}

int main(int argc, char **argv)
{
	struct side a = {0}, b = {0};

	if (argc != 9) {
		fprintf(stderr, "usage: gm-conform IF_A IF_B IP_A IP_B IP_C IP6_A IP6_B IP6_C\n");
		return 2;
	}
	a.ifname = argv[1];
	b.ifname = argv[2];
	side_open(&a, FI_INJECT, "4243");
	side_open(&b, 0, NULL);
	WANT(*(uint16_t *)(a.name + 6) == 4243, "FI_SOURCE service 4243 not the endpoint's port");
	connect_pair(&a, &b);
	check_eq(&a);
	check_av(&a);
	check_getinfo(&a, &b, argv[4]);
	check_loopback(&a);
	check_inject_flag(&a, &b);
	check_poll(&a, &b);
	check_sockaddr(&a, &b, argv + 3);
	check_close_flushes_acks(&a, &b);
	side_close(&a);
	side_close(&b);
	printf("all conformance checks passed\n");
	return 0;
}
