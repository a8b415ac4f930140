/*
 * IP socket addresses: FI_SOCKADDR (fabtests' fi_av_test asks for it; the
 * answer is FI_SOCKADDR_IN) and FI_SOCKADDR_IN6, in fi_getinfo, fi_getname
 * and the AV, each address's own error, and messages both ways between
 * such a domain on IF_A and gamma's own format on IF_B.
 */
#include "gm-conform.h"

#include <arpa/inet.h>
#include <netinet/in.h>

union ip_sa {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

static size_t sa_len(int family)
{
	return family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static union ip_sa sa_of(const char *ip, uint16_t port)
{
	union ip_sa s = {0};

	if (inet_pton(AF_INET, ip, &s.in.sin_addr) == 1) {
		s.in.sin_family = AF_INET;
		s.in.sin_port = htons(port);
	} else {
		WANT(inet_pton(AF_INET6, ip, &s.in6.sin6_addr) == 1, "bad IP address %s", ip);
		s.in6.sin6_family = AF_INET6;
		s.in6.sin6_port = htons(port);
	}
	return s;
}

/* ip with its last byte replaced: the IPv4 subnet's broadcast, or another host */
static union ip_sa sa_host(const char *ip, uint8_t host, uint16_t port)
{
	union ip_sa s = sa_of(ip, port);

	if (s.sa.sa_family == AF_INET)
		s.in.sin_addr.s_addr = htonl((ntohl(s.in.sin_addr.s_addr) & ~0xffu) | host);
	else
		s.in6.sin6_addr.s6_addr[15] = host;
	return s;
}

static bool same_sa(const void *p, const union ip_sa *want)
{
	union ip_sa s;

	memcpy(&s, p, sa_len(want->sa.sa_family));
	if (s.sa.sa_family != want->sa.sa_family)
		return false;
	if (s.sa.sa_family == AF_INET)
		return s.in.sin_port == want->in.sin_port &&
		       s.in.sin_addr.s_addr == want->in.sin_addr.s_addr;
	return s.in6.sin6_port == want->in6.sin6_port &&
	       !memcmp(&s.in6.sin6_addr, &want->in6.sin6_addr, sizeof(struct in6_addr));
}

static void check_sa_getinfo(const char *if_a, uint32_t fmt, const char *ip_a, const char *ip_b)
{
	struct fi_info *h = base_hints(if_a), *info;
	union ip_sa a4250 = sa_of(ip_a, 4250), a0 = sa_of(ip_a, 0), b4242 = sa_of(ip_b, 4242);
	uint32_t want = fmt == FI_SOCKADDR_IN6 ? FI_SOCKADDR_IN6 : FI_SOCKADDR_IN;
	size_t len = sa_len(a0.sa.sa_family);

	h->addr_format = fmt;
	CHK(fi_getinfo(VERS, NULL, "4250", FI_SOURCE, h, &info));
	WANT(!info->next && info->addr_format == want, "addr_format %u asked: %u, expected %u", fmt,
	     info->addr_format, want);
	WANT(info->src_addrlen == len && same_sa(info->src_addr, &a4250), "source is not %s:4250",
	     ip_a);
	fi_freeinfo(info);
	CHK(fi_getinfo(VERS, ip_b, "4242", 0, h, &info));
	WANT(info->dest_addrlen == len && same_sa(info->dest_addr, &b4242),
	     "destination is not %s:4242", ip_b);
	WANT(same_sa(info->src_addr, &a0), "source with a destination: not %s:0", ip_a);
	fi_freeinfo(info);
	WANT(fi_getinfo(VERS, want == FI_SOCKADDR_IN ? "192.0.2.1" : "2001:db8::1", "4242", 0, h,
	                &info) == -FI_ENODATA,
	     "off-link destination not refused");
	h->addr_format = FI_ADDR_STR;
	WANT(fi_getinfo(VERS, NULL, NULL, 0, h, &info) == -FI_ENODATA, "FI_ADDR_STR offered");
	fi_freeinfo(h);
	printf("ok: fi_getinfo addr_format %u gives %s source/destination addresses\n", fmt,
	       want == FI_SOCKADDR_IN ? "FI_SOCKADDR_IN" : "FI_SOCKADDR_IN6");
}

#define NV 8

/* One of each: resolved, malformed, unusable, beyond the subnet, own, pending. */
static void bad_good(union ip_sa v[NV], int err[NV], const char *ip_a, const char *ip_b,
                     const char *ip_c)
{
	bool v4 = sa_of(ip_a, 0).sa.sa_family == AF_INET;
	const union ip_sa list[NV] = {sa_of(ip_b, 7),
	                              {{0}},
	                              sa_of(v4 ? "224.0.0.1" : "ff02::1", 7),
	                              v4 ? sa_host(ip_b, 255, 7) : sa_of("::", 7),
	                              sa_of(v4 ? "192.0.2.1" : "2001:db8::1", 7),
	                              sa_of(ip_a, 7),
	                              sa_of(v4 ? "127.0.0.1" : "::1", 7),
	                              sa_of(ip_c, 7)};
	const int e[NV] = {0, FI_EINVAL, FI_EADDRNOTAVAIL, FI_EADDRNOTAVAIL, FI_EHOSTUNREACH};

	memcpy(v, list, sizeof(list));
	memcpy(err, e, sizeof(e));
}

/* The AV of s (an IP domain), as fi_av(3) has it; v[] packed as the format's addresses. */
static void check_sa_av(struct side *s, const char *ip_a, const char *ip_b, const char *ip_c)
{
	struct fi_av_attr attr = {.type = FI_AV_TABLE};
	union ip_sa v[NV], got;
	int family = sa_of(ip_a, 0).sa.sa_family;
	size_t alen = sa_len(family), len;
	uint8_t packed[NV * sizeof(union ip_sa)];
	int want[NV], errs[NV], ok = 0;
	char str[80], want_str[80];
	fi_addr_t fa[NV];
	struct fid_av *av;

	bad_good(v, want, ip_a, ip_b, ip_c);
	for (int i = 0; i < NV; i++) {
		memcpy(packed + i * alen, &v[i], alen);
		ok += !want[i];
	}
	CHK(fi_av_open(s->g.domain, &attr, &av, NULL));
	memset(errs, 0x55, sizeof(errs));
	WANT(fi_av_insert(av, packed, NV, fa, FI_SYNC_ERR, errs) == ok,
	     "FI_SYNC_ERR insert: not %d", ok);
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
		WANT(len == alen && same_sa(&got, &v[i]), "lookup %d: not as inserted", i);
	}
	len = sizeof(str);
	fi_av_straddr(av, &v[0], str, &len);
	snprintf(want_str, sizeof(want_str),
	         family == AF_INET ? "fi_sockaddr_in://%s:7" : "fi_sockaddr_in6://[%s]:7", ip_b);
	WANT(!strcmp(str, want_str) && len == strlen(str) + 1, "fi_av_straddr: '%s'", str);

	/* by name: fi_av_insertsvc, fi_av_insertsym (man page's 10.1.1.1 example) */
	union ip_sa sym[4] = {sa_of(ip_b, 5000), sa_of(ip_b, 5001), sa_host(ip_b, 3, 5000),
	                      sa_host(ip_b, 3, 5001)};
	union ip_sa b4321 = sa_of(ip_b, 4321);
	WANT(fi_av_insertsvc(av, ip_b, "4321", fa, 0, NULL) == 1, "fi_av_insertsvc %s", ip_b);
	len = sizeof(got);
	CHK(fi_av_lookup(av, fa[0], &got, &len));
	WANT(same_sa(&got, &b4321), "fi_av_insertsvc: not %s:4321", ip_b);
	WANT(fi_av_insertsvc(av, "g00n13s", "4321", fa, 0, NULL) == 0 && fa[0] == FI_ADDR_NOTAVAIL,
	     "fi_av_insertsvc of an unknown host");
	WANT(fi_av_insertsvc(av, ip_b, "http", fa, 0, NULL) == 0 && fa[0] == FI_ADDR_NOTAVAIL,
	     "fi_av_insertsvc of a service that is no port");
	WANT(fi_av_insertsym(av, ip_b, 2, "5000", 2, fa, 0, NULL) == 4, "fi_av_insertsym");
	for (int i = 0; i < 4; i++) {
		len = sizeof(got);
		CHK(fi_av_lookup(av, fa[i], &got, &len));
		WANT(same_sa(&got, &sym[i]), "fi_av_insertsym address %d", i);
	}
	WANT(fi_av_insertsym(av, "g00n", 2, "5000", 1, fa, 0, NULL) == -FI_EINVAL,
	     "insertsym of two hosts named without a number");
	CHK(fi_close(&av->fid));

	/* FI_EVENT: one error entry per failed address, in order, then the completion */
	attr.flags = FI_EVENT;
	CHK(fi_av_open(s->g.domain, &attr, &av, NULL));
	CHK(fi_av_bind(av, &s->g.eq->fid, 0));
	WANT(fi_av_insert(av, packed, NV, fa, FI_SYNC_ERR, errs) == -FI_EBADFLAGS,
	     "FI_SYNC_ERR on an FI_EVENT AV");
	WANT(fi_av_insert(av, packed, NV, fa, FI_MORE, (void *)0xa5) == 0, "FI_EVENT insert");
	for (int i = 0; i < NV; i++) {
		struct fi_eq_err_entry ee = {0};
		struct fi_eq_entry e;
		uint32_t ev;
		if (!want[i])
			continue;
		WANT(fi_eq_read(s->g.eq, &ev, &e, sizeof(e), 0) == -FI_EAVAIL, "no error for %d",
		     i);
		WANT(fi_eq_readerr(s->g.eq, &ee, 0) == sizeof(ee), "fi_eq_readerr");
		WANT(ee.fid == &av->fid && ee.context == (void *)0xa5 && ee.data == (uint64_t)i &&
		         ee.err == want[i],
		     "error entry: index %lu err %d, expected %d err %d", (unsigned long)ee.data,
		     ee.err, i, want[i]);
	}
	struct fi_eq_entry e;
	uint32_t ev;
	WANT(fi_eq_read(s->g.eq, &ev, &e, sizeof(e), 0) == sizeof(e) && ev == FI_AV_COMPLETE &&
	         e.data == (uint64_t)ok && e.context == (void *)0xa5,
	     "FI_AV_COMPLETE after the errors: event %u data %lu", ev, (unsigned long)e.data);
	for (int i = 0; i < NV; i++)
		WANT((fa[i] == FI_ADDR_NOTAVAIL) == !!want[i], "FI_EVENT fi_addr %d", i);
	CHK(fi_close(&av->fid));
	printf("ok: %s AV: per-address errors (sync, FI_SYNC_ERR, FI_EVENT), lookup, straddr, "
	       "insertsvc, insertsym\n",
	       family == AF_INET ? "FI_SOCKADDR_IN" : "FI_SOCKADDR_IN6");
}

/* Native gamma AVs refuse what is no station, and resolve names too (IPv6 as well). */
static void check_native_av(struct side *a, struct side *b, const char *ip_b, const char *ip6_b)
{
	struct fi_info *h = base_hints(a->ifname), *info;
	const uint8_t group[ADDRLEN] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0},
	              zero[ADDRLEN] = {0};
	uint8_t got[ADDRLEN];
	size_t len = sizeof(got);
	fi_addr_t fa;

	WANT(fi_av_insert(a->g.av, group, 1, &fa, 0, NULL) == 0 && fa == FI_ADDR_NOTAVAIL,
	     "broadcast MAC inserted");
	WANT(fi_av_insert(a->g.av, zero, 1, &fa, 0, NULL) == 0 && fa == FI_ADDR_NOTAVAIL,
	     "all-zero MAC inserted");
	WANT(fi_av_insertsvc(a->g.av, ip_b, "4242", &fa, 0, NULL) == 1, "native insertsvc %s",
	     ip_b);
	CHK(fi_av_lookup(a->g.av, fa, got, &len));
	WANT(len == ADDRLEN && !memcmp(got, b->name, 6) && *(uint16_t *)(got + 6) == 4242,
	     "native insertsvc: not %s's MAC, port 4242", b->ifname);
	CHK(fi_getinfo(VERS, ip6_b, "4242", 0, h, &info));
	WANT(info->dest_addrlen == ADDRLEN && !memcmp(info->dest_addr, b->name, 6),
	     "native fi_getinfo of IPv6 neighbour %s: not %s's MAC", ip6_b, b->ifname);
	fi_freeinfo(info);
	fi_freeinfo(h);
	printf("ok: native AV refuses group/zero MACs; insertsvc and getinfo resolve neighbours\n");
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

/* One message from `from` to `to`: it arrives intact, and its source is `src`. */
static void one_message(struct side *from, fi_addr_t to, struct side *rcv, fi_addr_t src,
                        const char *text)
{
	char in[32] = "", out[32];
	int rx, tx;

	snprintf(out, sizeof(out), "%s", text);
	CHK(fi_recv(rcv->ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, &rx));
	CHK(fi_send(from->ep, out, sizeof(out), NULL, to, &tx));
	expect_ok(from, &tx, text);
	expect_from(rcv, &rx, src, text);
	WANT(!strcmp(in, out), "%s: received '%s'", text, in);
}

/*
 * An IP-format endpoint on IF_A and b (gamma's format) on IF_B talk, each
 * naming the other as the source; then an address with no neighbour entry
 * is refused until the kernel has one, and works from then on.
 */
static void check_sa_traffic(struct side *a, struct side *b, uint32_t fmt, const char *ip_a,
                             const char *ip_b, const char *ip_c)
{
	struct side s = {.ifname = a->ifname, .addr_format = fmt};
	bool v4 = fmt != FI_SOCKADDR_IN6;
	uint16_t port = v4 ? 4250 : 4251; /* two endpoints: b's AV holds both */
	union ip_sa me = sa_of(ip_a, port), to_b, to_c, got;
	char service[8];
	uint8_t s_native[ADDRLEN];
	fi_addr_t s_b, s_c, b_s;
	size_t len = sizeof(got);
	char cmd[256], out[8] = "";
	uint16_t pb;
	int tx;

	snprintf(service, sizeof(service), "%u", port);
	side_open(&s, 0, service);
	WANT(same_sa(s.name, &me), "fi_getname of an IP-format endpoint: not %s:%u", ip_a, port);
	check_sa_av(&s, ip_a, ip_b, ip_c);
	memcpy(&pb, b->name + 6, sizeof(pb));
	to_b = sa_of(ip_b, pb);
	to_c = sa_of(ip_c, pb);
	memcpy(s_native, a->name, 6); /* IF_A's MAC, s's port */
	memcpy(s_native + 6, &port, 2);
	WANT(fi_av_insert(s.g.av, &to_b, 1, &s_b, 0, NULL) == 1, "insert %s", ip_b);
	WANT(fi_av_insert(b->g.av, s_native, 1, &b_s, 0, NULL) == 1, "insert s natively");
	one_message(&s, s_b, b, b_s, "IP address to gamma");
	one_message(b, b_s, &s, s_b, "gamma to IP address");

	/* IP_C: on the subnet, no neighbour entry: accepted, unusable until resolved */
	WANT(fi_av_insert(s.g.av, &to_c, 1, &s_c, 0, NULL) == 1, "insert of on-link %s", ip_c);
	CHK(fi_av_lookup(s.g.av, s_c, &got, &len));
	WANT(same_sa(&got, &to_c), "lookup of unresolved %s", ip_c);
	long r = fi_send(s.ep, out, sizeof(out), NULL, s_c, &tx);
	WANT(r < 0 && r != -FI_EAGAIN, "send to unresolved %s: %ld", ip_c, r);
	snprintf(cmd, sizeof(cmd),
	         "ip %s neigh replace %s lladdr %02x:%02x:%02x:%02x:%02x:%02x dev %s nud permanent",
	         v4 ? "-4" : "-6", ip_c, b->name[0], b->name[1], b->name[2], b->name[3], b->name[4],
	         b->name[5], a->ifname);
	WANT(system(cmd) == 0, "%s failed", cmd);
	one_message(&s, s_c, b, b_s, "resolved late");
	side_close(&s);
	printf("ok: %s endpoint and gamma's format talk; an unresolved address works once the "
	       "kernel knows it\n",
	       v4 ? "FI_SOCKADDR_IN" : "FI_SOCKADDR_IN6");
}

void check_sockaddr(struct side *a, struct side *b, char **ips)
{
	/* ips: IP_A IP_B IP_C, then the same in IPv6 */
	check_native_av(a, b, ips[1], ips[4]);
	check_sa_getinfo(a->ifname, FI_SOCKADDR, ips[0], ips[1]);
	check_sa_getinfo(a->ifname, FI_SOCKADDR_IN6, ips[3], ips[4]);
	check_sa_traffic(a, b, FI_SOCKADDR, ips[0], ips[1], ips[2]);
	check_sa_traffic(a, b, FI_SOCKADDR_IN6, ips[3], ips[4], ips[5]);
}
