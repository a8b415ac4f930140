/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Address vector.  An address is struct gm_addr (MAC + port, 8 bytes) or,
 * in a domain whose fi_info has addr_format FI_SOCKADDR_IN(6), a struct
 * sockaddr_in(6) that gm_sockaddr.c maps onto one.  fi_addr_t is the index of
 * the entry for both FI_AV_TABLE and FI_AV_MAP: it is opaque to the
 * application either way, and an index makes the per-peer lookup on every
 * send a plain array access.
 *
 * The i-th address of an insert takes index first + i whether it fails or
 * not (a failed one leaves its slot unused), so the indices are known
 * before the insert returns, as FI_AV_TABLE with fi_addr NULL needs.
 * Resolution is local and immediate, so FI_EVENT inserts complete before
 * they return: their errors, then their FI_AV_COMPLETE, are on the EQ.
 */
#include "gm.h"
#include "gm_defaults.h"
#include "gm_nosys.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One address of an insert, resolved before the AV is locked. */
struct av_new {
	struct gm_addr a[GM_RAILS_MAX]; /* one per rail: [0] mostly */
	struct gm_av_sin s;
	int err; /* 0, or the (positive) fabric errno it fails with */
};

/* Under the domain lock: an IP address whose MAC the kernel may know by now. */
static void resolve_pending(struct gm_av *av, fi_addr_t i)
{
	struct gm_av_sin *s = &av->sins[i];
	uint8_t own[6];

	gm_net_mac(av->dom->net, own);
	if (gm_sa_check(&s->sa, s->sa.sa.sa_family, av->dom->ifname, own, av->addrs[i].mac)) {
		gm_sa_nudge(&s->sa, av->dom->ifname);
		GM_INFO(FI_LOG_AV, "fi_addr %lu: no neighbour entry on %s yet\n", (unsigned long)i,
		        av->dom->ifname);
		return;
	}
	s->pending = false;
	av->valid[i] = true;
	gm_av_index_resolved(av, i);
}

const struct gm_addr *gm_av_get(struct gm_av *av, fi_addr_t fi_addr)
{
	if (fi_addr >= av->count)
		return NULL;
	if (!av->valid[fi_addr] && av->sins && av->sins[fi_addr].pending)
		resolve_pending(av, fi_addr);
	return av->valid[fi_addr] ? &av->addrs[fi_addr * av->nrails] : NULL;
}

/* attr->count is a hint: inserts grow the AV past it, so never reserve more up front */
#define GM_AV_PREALLOC_MAX (1u << 16)

static int av_grow(struct gm_av *av, size_t need)
{
	size_t cap = av->cap ? av->cap : 64;

	if (need > SIZE_MAX / 2 / sizeof(struct gm_av_sin))
		return -FI_ENOMEM;
	while (cap < need)
		cap *= 2;
	if (cap == av->cap)
		return 0;
	struct gm_addr *a = realloc(av->addrs, cap * av->nrails * sizeof(*a));
	if (!a)
		return -FI_ENOMEM;
	av->addrs = a;
	bool *v = realloc(av->valid, cap * sizeof(*v));
	if (!v)
		return -FI_ENOMEM;
	av->valid = v;
	if (gm_fmt_ip(av->addr_format)) {
		struct gm_av_sin *s = realloc(av->sins, cap * sizeof(*s));
		if (!s)
			return -FI_ENOMEM;
		av->sins = s;
	}
	av->cap = cap;
	return 0;
}

/* A station address: not a group (multicast, broadcast) MAC, not all zeros. */
static bool mac_ok(const uint8_t mac[6])
{
	static const uint8_t zero[6];

	return !(mac[0] & 1) && memcmp(mac, zero, 6);
}

/* in: an address of the AV's family, as the application gave it (unaligned). */
static void resolve_sa(const struct gm_av *av, const void *in, const uint8_t own[6],
                       struct av_new *n)
{
	int family = gm_fmt_family(av->addr_format);
	int r;

	memset(&n->s, 0, sizeof(n->s));
	memcpy(&n->s.sa, in, gm_fmt_len(av->addr_format));
	/* keep what names the station, not what the application left in padding */
	if (family == AF_INET)
		memset(n->s.sa.in.sin_zero, 0, sizeof(n->s.sa.in.sin_zero));
	else
		n->s.sa.in6.sin6_flowinfo = 0;
	r = gm_sa_check(&n->s.sa, family, av->dom->ifname, own, n->a[0].mac);
	if (r < 0) {
		n->err = -r;
		return;
	}
	n->a[0].port = gm_sa_port(&n->s.sa);
	n->s.pending = r == GM_SA_PENDING;
	if (n->s.pending)
		gm_sa_nudge(&n->s.sa, av->dom->ifname);
}

static void resolve_raw(const struct gm_av *av, const void *in, const uint8_t own[6],
                        struct av_new *n)
{
	if (av->sins) {
		resolve_sa(av, in, own, n);
		return;
	}
	memcpy(n->a, in, sizeof(n->a[0]) * av->nrails);
	for (unsigned r = 0; r < av->nrails; r++)
		if (!mac_ok(n->a[r].mac))
			n->err = FI_EINVAL;
}

/*
 * node (a host name or address, fi_getinfo's sense) and a port, in the
 * AV's format: an IP address for the IP formats, else what gm_addr.c
 * resolves for fi_getinfo's destinations.
 */
static void resolve_node(const struct gm_av *av, const char *node, uint16_t port,
                         const uint8_t own[6], struct av_new *n)
{
	if (av->nrails > 1) {
		n->err = FI_EINVAL; /* a name says nothing of the other rails */
		return;
	}
	if (av->sins) {
		struct addrinfo hints = {.ai_family = gm_fmt_family(av->addr_format),
		                         .ai_socktype = SOCK_DGRAM};
		struct addrinfo *ai;
		int err = 0;

		if (getaddrinfo(node, NULL, &hints, &ai)) {
			n->err = FI_EADDRNOTAVAIL;
			return;
		}
		/* the first of the node's addresses this interface reaches, else the first's error
		 */
		for (const struct addrinfo *r = ai; r; r = r->ai_next) {
			union gm_sa sa = {0};
			struct av_new t = {0};
			if (r->ai_addrlen > sizeof(sa))
				continue;
			memcpy(&sa, r->ai_addr, r->ai_addrlen);
			gm_sa_set_port(&sa, port);
			resolve_sa(av, &sa, own, &t);
			if (!t.err) {
				*n = t;
				err = 0;
				break;
			}
			if (!err)
				err = t.err;
		}
		n->err = err;
		freeaddrinfo(ai);
		return;
	}
	struct gm_node nd;
	if (gm_node_resolve(node, 0, &nd)) {
		n->err = FI_EADDRNOTAVAIL;
		return;
	}
	if (gm_node_match(&nd, false, av->dom->ifname, own, n->a[0].mac))
		n->err = FI_EADDRNOTAVAIL;
	n->a[0].port = port;
	gm_node_free(&nd);
}

static int check_flags(const struct gm_av *av, uint64_t flags, void *context)
{
	if (flags & ~(FI_MORE | FI_SYNC_ERR))
		return -FI_EBADFLAGS;
	if ((flags & FI_SYNC_ERR) && (av->flags & FI_EVENT))
		return -FI_EBADFLAGS; /* synchronous inserts only */
	if ((flags & FI_SYNC_ERR) && !context)
		return -FI_EINVAL; /* context is the array of errors */
	if ((av->flags & FI_EVENT) && !av->eq)
		return -FI_ENOEQ;
	return 0;
}

/* Enter the resolved addresses; report as fi_av(3) has it for the AV's mode. */
static int av_commit(struct gm_av *av, const struct av_new *nw, size_t count, fi_addr_t *fi_addr,
                     uint64_t flags, void *context)
{
	size_t first, ok = 0;
	int ret;

	pthread_mutex_lock(&av->dom->lock);
	ret = av_grow(av, av->count + count);
	if (!ret && 2 * (av->count + count) * av->nrails > av->index_cap) /* every rail's indexed */
		ret = gm_av_index_rebuild(av, av->count + count);
	if (ret) {
		pthread_mutex_unlock(&av->dom->lock);
		return ret;
	}
	first = av->count;
	for (size_t i = 0; i < count; i++) {
		size_t x = first + i;
		memcpy(&av->addrs[x * av->nrails], nw[i].a, av->nrails * sizeof(nw[i].a[0]));
		av->valid[x] = !nw[i].err && !nw[i].s.pending;
		if (av->sins) {
			av->sins[x] = nw[i].s;
			av->sins[x].pending &= !nw[i].err;
		}
		if (fi_addr)
			fi_addr[i] = nw[i].err ? FI_ADDR_NOTAVAIL : x;
		ok += !nw[i].err;
	}
	av->count += count;
	gm_av_index_added(av, first);
	pthread_mutex_unlock(&av->dom->lock);

	if (!(av->flags & FI_EVENT)) {
		if (flags & FI_SYNC_ERR)
			for (size_t i = 0; i < count; i++)
				((int *)context)[i] = nw[i].err;
		return (int)ok;
	}
	for (size_t i = 0; i < count; i++) {
		if (!nw[i].err)
			continue;
		struct fi_eq_err_entry e = {.fid = &av->fid.fid,
		                            .context = context,
		                            .data = i,
		                            .err = nw[i].err,
		                            .prov_errno = nw[i].err};
		ssize_t w = gm_eq_report_err(av->eq, &e);
		if (w < 0)
			return (int)w;
	}
	struct fi_eq_entry e = {.fid = &av->fid.fid, .context = context, .data = ok};
	ssize_t w = gm_eq_report(av->eq, FI_AV_COMPLETE, &e, sizeof(e));
	return w < 0 ? (int)w : 0;
}

static int gm_av_insert(struct fid_av *fav, const void *addr, size_t count, fi_addr_t *fi_addr,
                        uint64_t flags, void *context)
{
	struct gm_av *av = gm_container_of(fav, struct gm_av, fid);
	size_t len = gm_fmt_len(av->addr_format) * (av->sins ? 1 : av->nrails);
	struct av_new *nw;
	uint8_t own[6];
	int ret = check_flags(av, flags, context);

	if (ret)
		return ret;
	if (count && !addr)
		return -FI_EINVAL;
	nw = calloc(count ? count : 1, sizeof(*nw));
	if (!nw)
		return -FI_ENOMEM;
	gm_net_mac(av->dom->net, own);
	for (size_t i = 0; i < count; i++)
		resolve_raw(av, (const uint8_t *)addr + i * len, own, &nw[i]);
	ret = av_commit(av, nw, count, fi_addr, flags, context);
	free(nw);
	return ret;
}

static int gm_av_insertsvc(struct fid_av *fav, const char *node, const char *service,
                           fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct gm_av *av = gm_container_of(fav, struct gm_av, fid);
	struct av_new n = {0};
	uint8_t own[6];
	uint16_t port;
	int ret = check_flags(av, flags, context);

	if (ret)
		return ret;
	if (!node)
		return -FI_EINVAL;
	gm_net_mac(av->dom->net, own);
	if (gm_addr_service(service, &port))
		n.err = FI_EINVAL;
	else
		resolve_node(av, node, port, own, &n);
	return av_commit(av, &n, 1, fi_addr, flags, context);
}

/*
 * The i-th node of fi_av_insertsym: an IP address plus i, or a name
 * whose numeric suffix is counted up (host09, host10, ...).
 */
static int sym_node(const char *node, size_t i, char *out, size_t len)
{
	struct in_addr ip;
	size_t n = strlen(node), d = n;

	struct in6_addr ip6;

	if (inet_pton(AF_INET, node, &ip) == 1) {
		ip.s_addr = htonl(ntohl(ip.s_addr) + (uint32_t)i);
		return inet_ntop(AF_INET, &ip, out, (socklen_t)len) ? 0 : -FI_EINVAL;
	}
	if (inet_pton(AF_INET6, node, &ip6) == 1) {
		uint64_t carry = i;
		for (int b = 15; b >= 0 && carry; b--, carry >>= 8) {
			carry += ip6.s6_addr[b];
			ip6.s6_addr[b] = (uint8_t)carry;
		}
		return inet_ntop(AF_INET6, &ip6, out, (socklen_t)len) ? 0 : -FI_EINVAL;
	}
	while (d && node[d - 1] >= '0' && node[d - 1] <= '9')
		d--;
	if (d == n || n - d > 18) { /* no suffix to count, or one that may overflow */
		if (i)
			return -FI_EINVAL;
		d = n;
	}
	unsigned long long v = d == n ? 0 : strtoull(node + d, NULL, 10) + i;
	int w = d == n ? snprintf(out, len, "%s", node)
	               : snprintf(out, len, "%.*s%0*llu", (int)d, node, (int)(n - d), v);
	return w < 0 || (size_t)w >= len ? -FI_EINVAL : 0;
}

static int gm_av_insertsym(struct fid_av *fav, const char *node, size_t nodecnt,
                           const char *service, size_t svccnt, fi_addr_t *fi_addr, uint64_t flags,
                           void *context)
{
	struct gm_av *av = gm_container_of(fav, struct gm_av, fid);
	struct av_new *nw;
	uint8_t own[6];
	uint16_t port;
	char name[NI_MAXHOST];
	int ret = check_flags(av, flags, context);

	if (ret)
		return ret;
	if (!node || gm_addr_service(service, &port) || (svccnt && svccnt - 1 > 65535u - port) ||
	    (nodecnt > 1 && sym_node(node, nodecnt - 1, name, sizeof(name))))
		return -FI_EINVAL;
	if (svccnt && nodecnt > SIZE_MAX / sizeof(*nw) / svccnt)
		return -FI_ENOMEM;
	size_t total = nodecnt * svccnt;
	nw = calloc(total ? total : 1, sizeof(*nw));
	if (!nw)
		return -FI_ENOMEM;
	gm_net_mac(av->dom->net, own);
	for (size_t i = 0; i < nodecnt && svccnt; i++) {
		struct av_new *h = &nw[i * svccnt];
		if (sym_node(node, i, name, sizeof(name)))
			h->err = FI_EINVAL;
		else
			resolve_node(av, name, port, own, h);
		for (size_t j = 1; j < svccnt; j++) {
			h[j] = *h;
			h[j].a[0].port = (uint16_t)(port + j);
			gm_sa_set_port(&h[j].s.sa, (uint16_t)(port + j));
		}
	}
	ret = av_commit(av, nw, total, fi_addr, flags, context);
	free(nw);
	return ret;
}

static int gm_av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct gm_av *av = gm_container_of(fid, struct gm_av, fid.fid);

	if (flags)
		return -FI_EBADFLAGS;
	if (bfid->fclass != FI_CLASS_EQ || av->eq)
		return -FI_EINVAL;
	av->eq = gm_eq_of(bfid);
	gm_eq_hold(av->eq, 1);
	return 0;
}

static int gm_av_remove(struct fid_av *fav, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	struct gm_av *av = gm_container_of(fav, struct gm_av, fid);
	int ret = 0;

	if (flags)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&av->dom->lock);
	for (size_t i = 0; i < count; i++) {
		fi_addr_t x = fi_addr[i];
		if (x >= av->count || !(av->valid[x] || (av->sins && av->sins[x].pending))) {
			ret = -FI_EINVAL;
			continue;
		}
		av->valid[x] = false;
		if (av->sins)
			av->sins[x].pending = false;
	}
	if (av->index_cap)
		gm_av_index_rebuild(av, av->count); /* same size: cannot fail */
	pthread_mutex_unlock(&av->dom->lock);
	return ret;
}

static int gm_av_lookup(struct fid_av *fav, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	struct gm_av *av = gm_container_of(fav, struct gm_av, fid);
	size_t len = gm_fmt_len(av->addr_format) * (av->sins ? 1 : av->nrails);
	size_t n = *addrlen < len ? *addrlen : len;
	bool found;

	pthread_mutex_lock(&av->dom->lock);
	/* an IP address not resolved yet is still the one inserted */
	found =
	    fi_addr < av->count && (av->valid[fi_addr] || (av->sins && av->sins[fi_addr].pending));
	if (found)
		memcpy(addr,
		       av->sins ? (void *)&av->sins[fi_addr].sa
		                : (void *)&av->addrs[fi_addr * av->nrails],
		       n);
	pthread_mutex_unlock(&av->dom->lock);
	if (!found)
		return -FI_ENOENT;
	*addrlen = len;
	return 0;
}

static const char *gm_av_straddr(struct fid_av *fav, const void *addr, char *buf, size_t *len)
{
	struct gm_av *av = gm_container_of(fav, struct gm_av, fid);
	char tmp[40 * GM_RAILS_MAX];
	int n;

	if (av->sins) {
		union gm_sa sa = {0};
		memcpy(&sa, addr, gm_fmt_len(av->addr_format));
		n = gm_sa_straddr(&sa, tmp, sizeof(tmp));
	} else {
		/* several rails: gamma://MAC/PORT+MAC/PORT */
		n = 0;
		for (unsigned r = 0; r < av->nrails; r++) {
			struct gm_addr a;
			memcpy(&a, (const uint8_t *)addr + r * sizeof(a), sizeof(a));
			n += snprintf(tmp + n, sizeof(tmp) - (size_t)n,
			              "%s%02x:%02x:%02x:%02x:%02x:%02x/%u", r ? "+" : "gamma://",
			              a.mac[0], a.mac[1], a.mac[2], a.mac[3], a.mac[4], a.mac[5],
			              a.port);
		}
	}
	if (*len > 0) {
		size_t c = (size_t)n < *len - 1 ? (size_t)n : *len - 1;
		memcpy(buf, tmp, c);
		buf[c] = '\0';
	}
	*len = (size_t)n + 1;
	return buf;
}

static int gm_av_close(struct fid *fid)
{
	struct gm_av *av = gm_container_of(fid, struct gm_av, fid.fid);

	if (av->refs)
		return -FI_EBUSY;
	pthread_mutex_lock(&av->dom->lock);
	av->dom->refs--;
	pthread_mutex_unlock(&av->dom->lock);
	if (av->eq)
		gm_eq_hold(av->eq, -1);
	free(av->addrs);
	free(av->valid);
	free(av->sins);
	free(av->index);
	free(av);
	return 0;
}

static struct fi_ops gm_av_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = gm_av_close,
    .bind = gm_av_bind,
    .control = gm_no_control,
    .ops_open = gm_no_ops_open,
};

static struct fi_ops_av gm_av_ops = {
    .size = sizeof(struct fi_ops_av),
    .insert = gm_av_insert,
    .insertsvc = gm_av_insertsvc,
    .insertsym = gm_av_insertsym,
    .remove = gm_av_remove,
    .lookup = gm_av_lookup,
    .straddr = gm_av_straddr,
    .av_set = NULL,
};

int gm_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **fav,
               void *context)
{
	struct gm_domain *dom = gm_container_of(domain, struct gm_domain, fid);
	struct gm_av *av;

	if (!attr)
		return -FI_EINVAL;
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP && attr->type != FI_AV_TABLE)
		return -FI_EINVAL;
	if (attr->flags & (FI_READ | FI_SYMMETRIC))
		return -FI_EBADFLAGS;
	if (attr->name)
		return -FI_ENOSYS; /* named (shared) AVs are not supported */
	if (dom->addr_format != FI_FORMAT_UNSPEC && !gm_fmt_ip(dom->addr_format))
		return -FI_EINVAL; /* a format this provider never offered */
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->dom = dom;
	av->type = attr->type == FI_AV_UNSPEC ? FI_AV_TABLE : attr->type;
	av->gen = 1; /* endpoints start at 0: their first lookup always runs */
	av->flags = attr->flags & FI_EVENT;
	av->addr_format = dom->addr_format;
	av->nrails = dom->nrails;
	attr->type = av->type;
	size_t want = attr->count ? attr->count : GM_DEFAULT_AV_COUNT;
	if (av_grow(av, want < GM_AV_PREALLOC_MAX ? want : GM_AV_PREALLOC_MAX)) {
		free(av->addrs);
		free(av->valid);
		free(av->sins);
		free(av);
		return -FI_ENOMEM;
	}
	av->fid.fid.fclass = FI_CLASS_AV;
	av->fid.fid.context = context;
	av->fid.fid.ops = &gm_av_fi_ops;
	av->fid.ops = &gm_av_ops;
	pthread_mutex_lock(&dom->lock);
	dom->refs++;
	pthread_mutex_unlock(&dom->lock);
	*fav = &av->fid;
	return 0;
}
