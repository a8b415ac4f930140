/*
 * FI_SOCKADDR_IN (what an application asking for FI_SOCKADDR gets, as
 * fabtests' fi_av_test does): IPv4 addresses in fi_getinfo, fi_getname and
 * the AV, each address's own error, and messages both ways between such a
 * domain on IF_A and gamma's own format on IF_B.
 */
#include "gm-conform.h"

#include <arpa/inet.h>
#include <netinet/in.h>

static struct sockaddr_in sin_of(const char *ip, uint16_t port)
{
	struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons(port)};

	WANT(inet_pton(AF_INET, ip, &s.sin_addr) == 1, "bad IPv4 address %s", ip);
	return s;
}

/* ip with its last byte replaced: the subnet's broadcast, or another host */
static struct sockaddr_in sin_host(const char *ip, uint8_t host, uint16_t port)
{
	struct sockaddr_in s = sin_of(ip, port);

	s.sin_addr.s_addr = htonl((ntohl(s.sin_addr.s_addr) & ~0xffu) | host);
	return s;
}

static bool same_sin(const void *p, const struct sockaddr_in *want)
{
	const struct sockaddr_in *s = p;

	return s->sin_family == AF_INET && s->sin_port == want->sin_port &&
	       s->sin_addr.s_addr == want->sin_addr.s_addr;
}

static void check_sock_getinfo(const char *if_a, const char *ip_a, const char *ip_b)
{
	struct fi_info *h = base_hints(if_a), *info;
	struct sockaddr_in a4250 = sin_of(ip_a, 4250), a0 = sin_of(ip_a, 0),
	                   b4242 = sin_of(ip_b, 4242);

	h->addr_format = FI_SOCKADDR;
	CHK(fi_getinfo(VERS, NULL, "4250", FI_SOURCE, h, &info));
	WANT(!info->next && info->addr_format == FI_SOCKADDR_IN,
	     "FI_SOCKADDR: addr_format %u, expected FI_SOCKADDR_IN", info->addr_format);
	WANT(info->src_addrlen == sizeof(struct sockaddr_in) && same_sin(info->src_addr, &a4250),
	     "FI_SOCKADDR source is not %s:4250", ip_a);
	fi_freeinfo(info);
	CHK(fi_getinfo(VERS, ip_b, "4242", 0, h, &info));
	WANT(info->dest_addrlen == sizeof(struct sockaddr_in) && same_sin(info->dest_addr, &b4242),
	     "FI_SOCKADDR destination is not %s:4242", ip_b);
	WANT(same_sin(info->src_addr, &a0), "FI_SOCKADDR source with a destination: not %s:0",
	     ip_a);
	fi_freeinfo(info);
	WANT(fi_getinfo(VERS, "192.0.2.1", "4242", 0, h, &info) == -FI_ENODATA,
	     "off-link destination not refused");
	h->addr_format = FI_SOCKADDR_IN6;
	WANT(fi_getinfo(VERS, NULL, NULL, 0, h, &info) == -FI_ENODATA, "FI_SOCKADDR_IN6 offered");
	h->addr_format = FI_ADDR_STR;
	WANT(fi_getinfo(VERS, NULL, NULL, 0, h, &info) == -FI_ENODATA, "FI_ADDR_STR offered");
	fi_freeinfo(h);
	printf("ok: fi_getinfo FI_SOCKADDR gives FI_SOCKADDR_IN source/destination addresses\n");
}

#define NV 8

/* One of each: resolved, malformed, unusable, beyond the subnet, own, pending. */
static void bad_good(struct sockaddr_in v[NV], int err[NV], const char *ip_a, const char *ip_b,
                     const char *ip_c)
{
	const struct sockaddr_in list[NV] = {sin_of(ip_b, 7),        {0},
	                                     sin_of("224.0.0.1", 7), sin_host(ip_b, 255, 7),
	                                     sin_of("192.0.2.1", 7), sin_of(ip_a, 7),
	                                     sin_of("127.0.0.1", 7), sin_of(ip_c, 7)};
	const int e[NV] = {0, FI_EINVAL, FI_EADDRNOTAVAIL, FI_EADDRNOTAVAIL, FI_EHOSTUNREACH};

	memcpy(v, list, sizeof(list));
	memcpy(err, e, sizeof(e));
}

static void check_sock_av(struct side *s, const char *ip_a, const char *ip_b, const char *ip_c)
{
	struct fi_av_attr attr = {.type = FI_AV_TABLE};
	struct sockaddr_in v[NV], got;
	int want[NV], errs[NV];
	fi_addr_t fa[NV];
	struct fid_av *av;
	char str[64];
	size_t len;
	int ok = 0;

	bad_good(v, want, ip_a, ip_b, ip_c);
	for (int i = 0; i < NV; i++)
		ok += !want[i];
	CHK(fi_av_open(s->domain, &attr, &av, NULL));
	memset(errs, 0x55, sizeof(errs));
	WANT(fi_av_insert(av, v, NV, fa, FI_SYNC_ERR, errs) == ok, "FI_SYNC_ERR insert: not %d",
	     ok);
	for (int i = 0; i < NV; i++) {
		WANT(errs[i] == want[i], "address %d: error %d, expected %d", i, errs[i], want[i]);
		WANT(fa[i] == (want[i] ? FI_ADDR_NOTAVAIL : (fi_addr_t)i),
		     "address %d: fi_addr %lu (its slot is its index, failed or not)", i,
		     (unsigned long)fa[i]);
		len = sizeof(got);
		if (want[i]) {
			WANT(fi_av_lookup(av, i, &got, &len) == -FI_ENOENT, "lookup of failed %d",
			     i);
			continue;
		}
		CHK(fi_av_lookup(av, fa[i], &got, &len));
		WANT(len == sizeof(got) && same_sin(&got, &v[i]), "lookup %d: not as inserted", i);
	}
	char want_str[64];
	len = sizeof(str);
	fi_av_straddr(av, &v[0], str, &len);
	snprintf(want_str, sizeof(want_str), "fi_sockaddr_in://%s:7", ip_b);
	WANT(!strcmp(str, want_str) && len == strlen(str) + 1, "fi_av_straddr: '%s'", str);

	/* by name: fi_av_insertsvc, fi_av_insertsym (man page's 10.1.1.1 example) */
	struct sockaddr_in sym[4] = {sin_of(ip_b, 5000), sin_of(ip_b, 5001),
	                             sin_host(ip_b, 3, 5000), sin_host(ip_b, 3, 5001)};
	char ip3[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &sym[2].sin_addr, ip3, sizeof(ip3));
	WANT(fi_av_insertsvc(av, ip_b, "4321", fa, 0, NULL) == 1, "fi_av_insertsvc %s", ip_b);
	len = sizeof(got);
	CHK(fi_av_lookup(av, fa[0], &got, &len));
	struct sockaddr_in b4321 = sin_of(ip_b, 4321);
	WANT(same_sin(&got, &b4321), "fi_av_insertsvc: not %s:4321", ip_b);
	WANT(fi_av_insertsvc(av, "g00n13s", "4321", fa, 0, NULL) == 0 && fa[0] == FI_ADDR_NOTAVAIL,
	     "fi_av_insertsvc of an unknown host");
	WANT(fi_av_insertsvc(av, ip_b, "http", fa, 0, NULL) == 0 && fa[0] == FI_ADDR_NOTAVAIL,
	     "fi_av_insertsvc of a service that is no port");
	WANT(fi_av_insertsym(av, ip_b, 2, "5000", 2, fa, 0, NULL) == 4, "fi_av_insertsym");
	for (int i = 0; i < 4; i++) {
		len = sizeof(got);
		CHK(fi_av_lookup(av, fa[i], &got, &len));
		WANT(same_sin(&got, &sym[i]), "fi_av_insertsym address %d", i);
	}
	WANT(fi_av_insertsym(av, "g00n", 2, "5000", 1, fa, 0, NULL) == -FI_EINVAL,
	     "insertsym of two hosts named without a number");
	CHK(fi_close(&av->fid));

	/* FI_EVENT: one error entry per failed address, in order, then the completion */
	attr.flags = FI_EVENT;
	CHK(fi_av_open(s->domain, &attr, &av, NULL));
	CHK(fi_av_bind(av, &s->eq->fid, 0));
	WANT(fi_av_insert(av, v, NV, fa, FI_SYNC_ERR, errs) == -FI_EBADFLAGS,
	     "FI_SYNC_ERR on an FI_EVENT AV");
	WANT(fi_av_insert(av, v, NV, fa, FI_MORE, (void *)0xa5) == 0, "FI_EVENT insert");
	for (int i = 0; i < NV; i++) {
		struct fi_eq_err_entry ee = {0};
		struct fi_eq_entry e;
		uint32_t ev;
		if (!want[i])
			continue;
		WANT(fi_eq_read(s->eq, &ev, &e, sizeof(e), 0) == -FI_EAVAIL, "no error for %d", i);
		WANT(fi_eq_readerr(s->eq, &ee, 0) == sizeof(ee), "fi_eq_readerr");
		WANT(ee.fid == &av->fid && ee.context == (void *)0xa5 && ee.data == (uint64_t)i &&
		         ee.err == want[i],
		     "error entry: index %lu err %d, expected %d err %d", (unsigned long)ee.data,
		     ee.err, i, want[i]);
	}
	struct fi_eq_entry e;
	uint32_t ev;
	WANT(fi_eq_read(s->eq, &ev, &e, sizeof(e), 0) == sizeof(e) && ev == FI_AV_COMPLETE &&
	         e.data == (uint64_t)ok && e.context == (void *)0xa5,
	     "FI_AV_COMPLETE after the errors: event %u data %lu", ev, (unsigned long)e.data);
	for (int i = 0; i < NV; i++)
		WANT((fa[i] == FI_ADDR_NOTAVAIL) == !!want[i], "FI_EVENT fi_addr %d", i);
	CHK(fi_close(&av->fid));
	printf("ok: FI_SOCKADDR_IN AV: per-address errors (sync, FI_SYNC_ERR, FI_EVENT), lookup, "
	       "straddr, insertsvc, insertsym\n");
}

/* Native gamma AVs refuse what is no station, and resolve names too. */
static void check_native_av(struct side *a, struct side *b, const char *ip_b)
{
	const uint8_t group[ADDRLEN] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0},
	              zero[ADDRLEN] = {0};
	uint8_t got[ADDRLEN];
	size_t len = sizeof(got);
	fi_addr_t fa;

	WANT(fi_av_insert(a->av, group, 1, &fa, 0, NULL) == 0 && fa == FI_ADDR_NOTAVAIL,
	     "broadcast MAC inserted");
	WANT(fi_av_insert(a->av, zero, 1, &fa, 0, NULL) == 0 && fa == FI_ADDR_NOTAVAIL,
	     "all-zero MAC inserted");
	WANT(fi_av_insertsvc(a->av, ip_b, "4242", &fa, 0, NULL) == 1, "native insertsvc %s", ip_b);
	CHK(fi_av_lookup(a->av, fa, got, &len));
	WANT(len == ADDRLEN && !memcmp(got, b->name, 6) && *(uint16_t *)(got + 6) == 4242,
	     "native insertsvc: not %s's MAC, port 4242", b->ifname);
	printf("ok: native AV refuses group/zero MACs; insertsvc resolves a neighbour\n");
}

static void expect_from(struct side *s, void *ctx, fi_addr_t from, const char *what)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = {0};
	fi_addr_t src = FI_ADDR_UNSPEC;
	int r = wait_cq(s, &e, &src, &err);

	WANT(!r, "%s: completed in error %d", what, r);
	WANT(e.op_context == ctx && src == from, "%s: context %p source %lu, expected %p %lu", what,
	     e.op_context, (unsigned long)src, ctx, (unsigned long)from);
}

/*
 * A FI_SOCKADDR_IN endpoint on IF_A and b (gamma's format) on IF_B talk,
 * each naming the other as the source; then an address with no neighbour
 * entry is refused until the kernel has one, and works from then on.
 */
static void check_sock_traffic(struct side *a, struct side *b, const char *ip_a, const char *ip_b,
                               const char *ip_c)
{
	struct side s = {.ifname = a->ifname, .addr_format = FI_SOCKADDR};
	struct sockaddr_in me = sin_of(ip_a, 4250), to_b, to_c, got;
	uint8_t s_native[ADDRLEN];
	fi_addr_t s_b, s_c, b_s;
	char in[32] = "", out[32] = "sockaddr to gamma", cmd[256];
	size_t len = sizeof(got);
	uint16_t pb;
	int rx, tx;

	side_open(&s, 0, "4250");
	WANT(same_sin(s.name, &me), "fi_getname of a FI_SOCKADDR endpoint: not %s:4250", ip_a);
	check_sock_av(&s, ip_a, ip_b, ip_c);
	memcpy(&pb, b->name + 6, sizeof(pb));
	to_b = sin_of(ip_b, pb);
	to_c = sin_of(ip_c, pb);
	memcpy(s_native, a->name, 6); /* IF_A's MAC, s's port */
	memcpy(s_native + 6, &(uint16_t){4250}, 2);
	WANT(fi_av_insert(s.av, &to_b, 1, &s_b, 0, NULL) == 1, "insert %s", ip_b);
	WANT(fi_av_insert(b->av, s_native, 1, &b_s, 0, NULL) == 1, "insert s natively");

	CHK(fi_recv(b->ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, &rx));
	CHK(fi_send(s.ep, out, sizeof(out), NULL, s_b, &tx));
	expect_ok(&s, &tx, "send to an IP address");
	expect_from(b, &rx, b_s, "receive from the FI_SOCKADDR endpoint");
	WANT(!strcmp(in, out), "received '%s'", in);
	strcpy(out, "gamma to sockaddr");
	CHK(fi_recv(s.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, &rx));
	CHK(fi_send(b->ep, out, sizeof(out), NULL, b_s, &tx));
	expect_ok(b, &tx, "send to the FI_SOCKADDR endpoint");
	expect_from(&s, &rx, s_b, "receive, source named by its IP address");
	WANT(!strcmp(in, out), "received '%s'", in);

	/* IP_C: on the subnet, no neighbour entry: accepted, unusable until resolved */
	WANT(fi_av_insert(s.av, &to_c, 1, &s_c, 0, NULL) == 1, "insert of on-link %s", ip_c);
	CHK(fi_av_lookup(s.av, s_c, &got, &len));
	WANT(same_sin(&got, &to_c), "lookup of unresolved %s", ip_c);
	long r = fi_send(s.ep, out, sizeof(out), NULL, s_c, &tx);
	WANT(r < 0 && r != -FI_EAGAIN, "send to unresolved %s: %ld", ip_c, r);
	snprintf(cmd, sizeof(cmd),
	         "ip neigh replace %s lladdr %02x:%02x:%02x:%02x:%02x:%02x dev %s nud permanent",
	         ip_c, b->name[0], b->name[1], b->name[2], b->name[3], b->name[4], b->name[5],
	         a->ifname);
	WANT(system(cmd) == 0, "%s failed", cmd);
	strcpy(out, "resolved late");
	CHK(fi_recv(b->ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, &rx));
	CHK(fi_send(s.ep, out, sizeof(out), NULL, s_c, &tx));
	expect_ok(&s, &tx, "send once the neighbour is known");
	expect_from(b, &rx, b_s, "receive through the late-resolved address");
	WANT(!strcmp(in, out), "received '%s'", in);
	side_close(&s);
	printf("ok: FI_SOCKADDR_IN endpoint and gamma's format talk; an unresolved address "
	       "works once the kernel knows it\n");
}

void check_sockaddr(struct side *a, struct side *b, const char *ip_a, const char *ip_b,
                    const char *ip_c)
{
	check_sock_getinfo(a->ifname, ip_a, ip_b);
	check_native_av(a, b, ip_b);
	check_sock_traffic(a, b, ip_a, ip_b, ip_c);
}
