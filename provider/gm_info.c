/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_getinfo: one fi_info per usable Ethernet interface (the domain), each
 * an FI_EP_RDM endpoint with the capabilities MPI libraries ask for.
 */
#include "gm.h"

#include <ifaddrs.h>
#include <linux/if_arp.h>
#include <linux/if_packet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define GM_MSG_ORDER (FI_ORDER_SAS | FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_WAR | FI_ORDER_WAW)

enum gm_class gm_tclass_to_class(uint32_t tclass)
{
	switch (tclass) {
	case FI_TC_LOW_LATENCY:
	case FI_TC_DEDICATED_ACCESS:
	case FI_TC_NETWORK_CTRL:
		return GM_CLASS_HIGH;
	case FI_TC_BULK_DATA:
	case FI_TC_SCAVENGER:
	case FI_TC_BEST_EFFORT:
		return GM_CLASS_LOW;
	default:
		return (enum gm_class)gm_params.default_class;
	}
}

/* A bridge port carries frames for its bridge, not for us. */
static bool is_bridge_port(const char *ifname)
{
	char path[64 + IF_NAMESIZE];
	struct stat st;

	snprintf(path, sizeof(path), "/sys/class/net/%s/brport", ifname);
	return stat(path, &st) == 0;
}

static bool iface_listed(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == n && !strncmp(p, name, n))
			return true;
		p = e ? e + 1 : NULL;
	}
	return false;
}

#define GM_MAX_IFACES 4096

unsigned gm_rails_count(const char *name)
{
	unsigned n = 1;

	for (const char *p = name; *p; p++)
		n += *p == '+';
	return n;
}

int gm_rail_name(const char *name, unsigned r, char out[IF_NAMESIZE])
{
	const char *p = name, *e;

	for (; r && p; r--)
		p = (p = strchr(p, '+')) ? p + 1 : NULL;
	if (!p)
		return -FI_EINVAL;
	e = strchr(p, '+');
	size_t l = e ? (size_t)(e - p) : strlen(p);
	if (!l || l >= IF_NAMESIZE)
		return -FI_EINVAL;
	memcpy(out, p, l);
	out[l] = '\0';
	return 0;
}

/* One offer's interfaces: one, or the rails of a multi-rail domain. */
struct gm_dom_entry {
	char name[GM_DOMAIN_NAME_MAX];
	unsigned nrails;
	uint8_t macs[GM_RAILS_MAX][6];
};

/* Ethernet interfaces, not loopback: name, MAC, and whether gamma takes it unasked. */
static int list_ethernet(char names[][IF_NAMESIZE], uint8_t macs[][6], bool *usual, int max)
{
	struct ifaddrs *ifa, *i;
	int n = 0;

	if (getifaddrs(&ifa))
		return 0;
	for (i = ifa; i && n < max; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_PACKET)
			continue;
		struct sockaddr_ll *ll = (struct sockaddr_ll *)i->ifa_addr;
		if (ll->sll_hatype != ARPHRD_ETHER || (i->ifa_flags & IFF_LOOPBACK))
			continue;
		usual[n] = (i->ifa_flags & IFF_UP) && !is_bridge_port(i->ifa_name);
		memcpy(macs[n], ll->sll_addr, 6);
		snprintf(names[n++], IF_NAMESIZE, "%s", i->ifa_name);
	}
	freeifaddrs(ifa);
	return n;
}

/* A multi-rail domain "a+b": every rail an Ethernet interface, none twice. */
static bool group_entry(const char *group, char (*names)[IF_NAMESIZE], uint8_t (*macs)[6], int n,
                        struct gm_dom_entry *d)
{
	unsigned k = gm_rails_count(group);
	char rail[IF_NAMESIZE];

	if (k < 2 || k > GM_RAILS_MAX || strlen(group) >= sizeof(d->name))
		return false;
	for (unsigned r = 0; r < k; r++) {
		int i;

		if (gm_rail_name(group, r, rail))
			return false;
		for (i = 0; i < n && strcmp(names[i], rail); i++)
			;
		if (i == n)
			return false;
		for (unsigned q = 0; q < r; q++)
			if (!memcmp(d->macs[q], macs[i], 6))
				return false;
		memcpy(d->macs[r], macs[i], 6);
	}
	snprintf(d->name, sizeof(d->name), "%s", group);
	d->nrails = k;
	return true;
}

/*
 * The domains on offer.  Single interfaces: up, Ethernet, not loopback,
 * those FI_GAMMA_IFACE lists if set, in the system's order; then its
 * multi-rail groups ("a+b"), in its order.  A group the hints name is
 * offered also when FI_GAMMA_IFACE is unset (btl_gamma_if_include a+b).
 */
static int list_domains(char (*names)[IF_NAMESIZE], uint8_t (*macs)[6], bool *usual,
                        struct gm_dom_entry *doms, int max, const char *hint)
{
	int n = list_ethernet(names, macs, usual, max), nd = 0;
	const char *list = gm_params.iface;

	for (int i = 0; i < n && nd < max; i++) {
		if (list ? !iface_listed(list, names[i]) : !usual[i])
			continue;
		snprintf(doms[nd].name, sizeof(doms[nd].name), "%s", names[i]);
		doms[nd].nrails = 1;
		memcpy(doms[nd++].macs[0], macs[i], 6);
	}
	for (const char *p = list; p && *p && nd < max;) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		char group[GM_DOMAIN_NAME_MAX];

		if (l < sizeof(group) && memchr(p, '+', l)) {
			memcpy(group, p, l);
			group[l] = '\0';
			if (group_entry(group, names, macs, n, &doms[nd]))
				nd++;
			else
				GM_INFO(FI_LOG_CORE,
				        "FI_GAMMA_IFACE: %s is no group of 2 to %d "
				        "distinct Ethernet interfaces\n",
				        group, GM_RAILS_MAX);
		}
		p = e ? e + 1 : NULL;
	}
	if (!list && hint && strchr(hint, '+') && nd < max &&
	    group_entry(hint, names, macs, n, &doms[nd]))
		nd++;
	return nd;
}

/*
 * Nothing to offer.  Without FI_GAMMA_IFACE (or with a domain hint that
 * names something else) that is a plain answer to a query; but when the
 * user's own list matched nothing on this host, the user made a mistake
 * and must hear of it, once.  (A list that names other hosts' interfaces
 * too is fine as long as one of them is here: one list serves a job.)
 */
static void iface_none_usable(const char *hint)
{
	static bool told;

	if (!gm_params.iface || hint || told) {
		GM_INFO(FI_LOG_CORE, "no usable Ethernet interface%s%s\n",
		        gm_params.iface ? " among FI_GAMMA_IFACE=" : "",
		        gm_params.iface ? gm_params.iface : "");
		return;
	}
	told = true;
	gm_config_error("FI_GAMMA_IFACE=%s: none of these is an Ethernet interface that is up on "
	                "this host ('ip -br link' lists them; a group a+b needs every member)\n",
	                gm_params.iface);
}

static struct fi_info *info_template(const char *ifname)
{
	struct fi_info *fi = fi_allocinfo();

	if (!fi)
		return NULL;
	fi->caps = GM_CAPS;
	fi->mode = 0;
	fi->addr_format = FI_FORMAT_UNSPEC;

	/* FI_LOCAL_COMM / FI_REMOTE_COMM are domain capabilities: not in tx/rx (fi_getinfo(3)) */
	fi->tx_attr->caps = GM_CAPS & ~(FI_RECV | FI_DIRECTED_RECV | FI_MULTI_RECV | FI_SOURCE |
	                                FI_LOCAL_COMM | FI_REMOTE_COMM);
	fi->tx_attr->op_flags = 0;
	fi->tx_attr->msg_order = GM_MSG_ORDER;
	fi->tx_attr->comp_order = FI_ORDER_NONE;
	fi->tx_attr->inject_size = GM_INJECT_SIZE;
	fi->tx_attr->size = GM_TX_SIZE;
	fi->tx_attr->iov_limit = GM_IOV_LIMIT;
	fi->tx_attr->rma_iov_limit = 0;
	fi->tx_attr->tclass = FI_TC_UNSPEC;

	fi->rx_attr->caps = GM_CAPS & ~(FI_SEND | FI_LOCAL_COMM | FI_REMOTE_COMM);
	fi->rx_attr->op_flags = 0;
	fi->rx_attr->msg_order = GM_MSG_ORDER;
	fi->rx_attr->comp_order = FI_ORDER_NONE;
	fi->rx_attr->total_buffered_recv = 0;
	fi->rx_attr->size = GM_RX_SIZE;
	fi->rx_attr->iov_limit = GM_IOV_LIMIT;

	fi->ep_attr->type = FI_EP_RDM;
	fi->ep_attr->protocol = FI_PROTO_UNSPEC;
	fi->ep_attr->protocol_version = GM_WIRE_VERSION;
	fi->ep_attr->max_msg_size = GM_MAX_MSG_SIZE;
	fi->ep_attr->msg_prefix_size = 0;
	fi->ep_attr->max_order_raw_size = GM_MAX_MSG_SIZE;
	fi->ep_attr->max_order_war_size = GM_MAX_MSG_SIZE;
	fi->ep_attr->max_order_waw_size = GM_MAX_MSG_SIZE;
	/* every one of the 64 tag bits is usable, bit 63 included */
	fi->ep_attr->mem_tag_format = 0xAAAAAAAAAAAAAAAAULL;
	fi->ep_attr->tx_ctx_cnt = 1;
	fi->ep_attr->rx_ctx_cnt = 1;

	fi->domain_attr->name = strdup(ifname);
	fi->domain_attr->threading = FI_THREAD_SAFE;
	fi->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
	fi->domain_attr->av_type = FI_AV_UNSPEC;
	fi->domain_attr->mr_mode = 0;
	fi->domain_attr->mr_key_size = sizeof(uint64_t);
	fi->domain_attr->cq_data_size = GM_CQ_DATA_SIZE;
	fi->domain_attr->cq_cnt = 256;
	fi->domain_attr->ep_cnt = 256;
	fi->domain_attr->tx_ctx_cnt = 256;
	fi->domain_attr->rx_ctx_cnt = 256;
	fi->domain_attr->max_ep_tx_ctx = 1;
	fi->domain_attr->max_ep_rx_ctx = 1;
	fi->domain_attr->cntr_cnt = 256;
	fi->domain_attr->mr_iov_limit = GM_IOV_LIMIT;
	fi->domain_attr->mr_cnt = 1 << 16;
	fi->domain_attr->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
	fi->domain_attr->max_err_data = 0;

	fi->fabric_attr->name = strdup(GM_FABRIC_NAME);
	fi->fabric_attr->prov_version = GM_PROV_VERSION;
	if (!fi->domain_attr->name || !fi->fabric_attr->name) {
		fi_freeinfo(fi);
		return NULL;
	}
	return fi;
}

/* The offer carries the key asked for: fi_domain/fi_endpoint take it from there. */
static bool copy_key(uint8_t **dst, size_t *dst_size, const uint8_t *key, size_t size)
{
	if (!key || !size)
		return true;
	*dst = malloc(size);
	if (!*dst)
		return false;
	memcpy(*dst, key, size);
	*dst_size = size;
	return true;
}

/* Narrow the template to the hints; false if the hints cannot be met. */
static bool apply_hints(struct fi_info *fi, const struct fi_info *h)
{
	if (!h)
		return true;
	if (h->caps & ~GM_CAPS)
		return false;
	if (h->addr_format != FI_FORMAT_UNSPEC) {
		if (!gm_fmt_ip(h->addr_format))
			return false;
		/* FI_SOCKADDR: the family gamma's neighbour tables serve first, IPv4 */
		fi->addr_format =
		    h->addr_format == FI_SOCKADDR_IN6 ? FI_SOCKADDR_IN6 : FI_SOCKADDR_IN;
	}
	if (h->caps)
		fi->caps = h->caps | (GM_CAPS & (FI_LOCAL_COMM | FI_REMOTE_COMM));
	if (h->ep_attr) {
		if (h->ep_attr->type != FI_EP_UNSPEC && h->ep_attr->type != FI_EP_RDM)
			return false;
		if (h->ep_attr->protocol != FI_PROTO_UNSPEC)
			return false;
		if (h->ep_attr->max_msg_size > GM_MAX_MSG_SIZE)
			return false;
		if (h->ep_attr->tx_ctx_cnt > 1 || h->ep_attr->rx_ctx_cnt > 1)
			return false;
		if (!gm_auth_key_size_ok(h->ep_attr->auth_key_size))
			return false;
	}
	if (h->domain_attr) {
		const struct fi_domain_attr *d = h->domain_attr;
		if (d->name && strcmp(d->name, fi->domain_attr->name))
			return false;
		if (d->threading != FI_THREAD_UNSPEC)
			fi->domain_attr->threading = d->threading;
		if (d->control_progress == FI_PROGRESS_AUTO ||
		    d->data_progress == FI_PROGRESS_AUTO) {
			/* manual progress only: the application drives us through the CQ */
			return false;
		}
		if (d->av_type != FI_AV_UNSPEC) {
			if (d->av_type != FI_AV_MAP && d->av_type != FI_AV_TABLE)
				return false;
			fi->domain_attr->av_type = d->av_type;
		}
		if (d->cq_data_size > GM_CQ_DATA_SIZE)
			return false;
		if (d->caps & ~(FI_LOCAL_COMM | FI_REMOTE_COMM))
			return false; /* no FI_SHARED_AV */
		if (d->mr_mode == FI_MR_BASIC || d->mr_mode == FI_MR_SCALABLE)
			fi->domain_attr->mr_mode = d->mr_mode;
		if (!gm_auth_key_size_ok(d->auth_key_size))
			return false;
	}
	if (h->fabric_attr) {
		if (h->fabric_attr->name && strcmp(h->fabric_attr->name, GM_FABRIC_NAME))
			return false;
	}
	if (h->tx_attr) {
		if (h->tx_attr->inject_size > GM_INJECT_SIZE ||
		    h->tx_attr->iov_limit > GM_IOV_LIMIT || h->tx_attr->size > GM_TX_SIZE)
			return false;
		if (h->tx_attr->msg_order & ~GM_MSG_ORDER)
			return false;
		fi->tx_attr->tclass = h->tx_attr->tclass;
		fi->tx_attr->op_flags = h->tx_attr->op_flags;
	}
	if (h->rx_attr) {
		if (h->rx_attr->iov_limit > GM_IOV_LIMIT || h->rx_attr->size > GM_RX_SIZE)
			return false;
		if (h->rx_attr->msg_order & ~GM_MSG_ORDER)
			return false;
		fi->rx_attr->op_flags = h->rx_attr->op_flags;
	}
	if (h->domain_attr && !copy_key(&fi->domain_attr->auth_key, &fi->domain_attr->auth_key_size,
	                                h->domain_attr->auth_key, h->domain_attr->auth_key_size))
		return false;
	if (h->ep_attr && !copy_key(&fi->ep_attr->auth_key, &fi->ep_attr->auth_key_size,
	                            h->ep_attr->auth_key, h->ep_attr->auth_key_size))
		return false;
	fi->tx_attr->caps &= fi->caps | FI_SEND;
	fi->rx_attr->caps &= fi->caps | FI_RECV;
	return true;
}

static void *dup_addr(const uint8_t mac[6], uint16_t port)
{
	struct gm_addr *a = malloc(sizeof(*a));

	if (a) {
		memcpy(a->mac, mac, 6);
		a->port = port;
	}
	return a;
}

static void *dup_sa(const union gm_sa *a, uint16_t port, size_t len)
{
	union gm_sa *d = malloc(sizeof(*d));

	if (d) {
		memcpy(d, a, len);
		gm_sa_set_port(d, port);
	}
	return d;
}

/* set_addrs for the IP formats: the source is one of the interface's addresses. */
static int set_addrs_sa(struct fi_info *fi, const struct gm_node *node, bool source,
                        const char *service, uint16_t port, const char *ifname,
                        const uint8_t own[6], const struct fi_info *h)
{
	int family = gm_fmt_family(fi->addr_format);
	size_t len = gm_fmt_len(fi->addr_format);
	uint16_t src_port = source ? port : 0;
	union gm_sa ip, hint = {0};
	uint8_t mac[6];

	if (node && source ? gm_node_sa(node, true, family, ifname, own, &ip)
	                   : gm_sa_own(ifname, family, &ip))
		return -FI_ENODATA;
	if (h && h->src_addr) {
		if (h->src_addrlen != len)
			return -FI_ENODATA;
		memcpy(&hint, h->src_addr, len);
		if (hint.sa.sa_family != family)
			return -FI_ENODATA;
		bool any = family == AF_INET ? hint.in.sin_addr.s_addr == INADDR_ANY
		                             : IN6_IS_ADDR_UNSPECIFIED(&hint.in6.sin6_addr);
		if (!any) {
			if (!gm_ip_on_iface(&hint.sa, ifname))
				return -FI_ENODATA;
			ip = hint;
		}
		if (!source || !service)
			src_port = gm_sa_port(&hint);
	}
	fi->src_addr = dup_sa(&ip, src_port, len);
	if (!fi->src_addr)
		return -FI_ENOMEM;
	fi->src_addrlen = len;
	if (node && !source) {
		if (gm_node_sa(node, false, family, ifname, own, &ip))
			return -FI_ENODATA;
		fi->dest_addr = dup_sa(&ip, port, len);
	} else if (h && h->dest_addr) {
		union gm_sa d = {0};
		if (h->dest_addrlen != len)
			return -FI_ENODATA;
		memcpy(&d, h->dest_addr, len);
		if (gm_sa_check(&d, family, ifname, own, mac) < 0)
			return -FI_ENODATA;
		fi->dest_addr = dup_sa(&d, gm_sa_port(&d), len);
	} else {
		return 0;
	}
	if (!fi->dest_addr)
		return -FI_ENOMEM;
	fi->dest_addrlen = len;
	return 0;
}

/*
 * The addresses of one offer: the source is this interface's MAC and the
 * port asked for (0: chosen by fi_endpoint); the destination, if named.
 * -FI_ENODATA when node or the hints' addresses do not fit this interface.
 */
static int set_addrs(struct fi_info *fi, const struct gm_node *node, bool source,
                     const char *service, uint16_t port, const char *ifname, const uint8_t own[6],
                     const struct fi_info *h)
{
	uint8_t mac[6];
	uint16_t src_port = source ? port : 0;

	if (gm_fmt_ip(fi->addr_format))
		return set_addrs_sa(fi, node, source, service, port, ifname, own, h);
	if (h && h->src_addr) {
		const struct gm_addr *sa = h->src_addr;
		if (h->src_addrlen != sizeof(*sa) || memcmp(sa->mac, own, 6))
			return -FI_ENODATA;
		if (!source || !service)
			src_port = sa->port;
	}
	if (node && source && gm_node_match(node, true, ifname, own, mac))
		return -FI_ENODATA;
	fi->src_addr = dup_addr(own, src_port);
	if (!fi->src_addr)
		return -FI_ENOMEM;
	fi->src_addrlen = sizeof(struct gm_addr);
	if (node && !source) {
		if (gm_node_match(node, false, ifname, own, mac))
			return -FI_ENODATA;
		fi->dest_addr = dup_addr(mac, port);
	} else if (h && h->dest_addr) {
		const struct gm_addr *da = h->dest_addr;
		if (h->dest_addrlen != sizeof(*da))
			return -FI_ENODATA;
		fi->dest_addr = dup_addr(da->mac, da->port);
	} else {
		return 0;
	}
	if (!fi->dest_addr)
		return -FI_ENOMEM;
	fi->dest_addrlen = sizeof(struct gm_addr);
	return 0;
}

/*
 * set_addrs for a multi-rail domain: gamma's own format only, an address
 * is one (MAC, port) per rail; a node names no such thing.
 */
static int set_addrs_rails(struct fi_info *fi, const struct gm_node *node, bool source,
                           const char *service, uint16_t port, const struct gm_dom_entry *d,
                           const struct fi_info *h)
{
	size_t len = d->nrails * sizeof(struct gm_addr);
	struct gm_addr *a;
	uint16_t src_port = source ? port : 0;

	if (gm_fmt_ip(fi->addr_format) || node)
		return -FI_ENODATA;
	if (h && h->src_addr) {
		const struct gm_addr *sa = h->src_addr;
		if (h->src_addrlen != len)
			return -FI_ENODATA;
		for (unsigned r = 0; r < d->nrails; r++)
			if (memcmp(sa[r].mac, d->macs[r], 6))
				return -FI_ENODATA;
		if (!source || !service)
			src_port = sa[0].port;
	}
	if (!(a = calloc(d->nrails, sizeof(*a))))
		return -FI_ENOMEM;
	for (unsigned r = 0; r < d->nrails; r++)
		memcpy(a[r].mac, d->macs[r], 6);
	a[0].port = src_port;
	fi->src_addr = a;
	fi->src_addrlen = len;
	if (h && h->dest_addr) {
		if (h->dest_addrlen != len || !(fi->dest_addr = malloc(len)))
			return h->dest_addrlen != len ? -FI_ENODATA : -FI_ENOMEM;
		memcpy(fi->dest_addr, h->dest_addr, len);
		fi->dest_addrlen = len;
	}
	return 0;
}

static int getinfo_on(char (*names)[IF_NAMESIZE], uint8_t (*macs)[6], bool *usual,
                      struct gm_dom_entry *doms, uint32_t version, const char *node,
                      const char *service, uint64_t flags, const struct fi_info *hints,
                      struct fi_info **info)
{
	struct fi_info *head = NULL, **tail = &head;
	struct gm_node nd, *ndp = NULL;
	bool source = (flags & FI_SOURCE) || !node;
	uint16_t port;
	int n, ret = 0;

	*info = NULL;
	if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
		return -FI_ENODATA;
	if (gm_addr_service(service, &port)) {
		GM_INFO(FI_LOG_CORE, "service '%s' is not a port number\n", service);
		return -FI_ENODATA;
	}
	n = list_domains(names, macs, usual, doms, GM_MAX_IFACES,
	                 hints && hints->domain_attr ? hints->domain_attr->name : NULL);
	if (!n) {
		iface_none_usable(hints && hints->domain_attr ? hints->domain_attr->name : NULL);
		return -FI_ENODATA;
	}
	if (node) {
		if (gm_node_resolve(node, flags, &nd)) {
			GM_INFO(FI_LOG_CORE, "cannot resolve node '%s'\n", node);
			return -FI_ENODATA;
		}
		ndp = &nd;
	}
	for (int i = 0; i < n && !ret; i++) {
		struct fi_info *fi = info_template(doms[i].name);
		if (!fi) {
			ret = -FI_ENOMEM;
			break;
		}
		int r = apply_hints(fi, hints) ? 0 : -FI_ENODATA;
		if (!r && doms[i].nrails > 1)
			r = set_addrs_rails(fi, ndp, source, service, port, &doms[i], hints);
		else if (!r)
			r = set_addrs(fi, ndp, source, service, port, doms[i].name, doms[i].macs[0],
			              hints);
		if (r) {
			fi_freeinfo(fi);
			if (r == -FI_ENOMEM)
				ret = r;
			continue;
		}
		*tail = fi;
		tail = &fi->next;
	}
	if (ndp)
		gm_node_free(ndp);
	if (!ret && !head) {
		if (node)
			GM_INFO(FI_LOG_CORE, "node '%s' is on none of our interfaces\n", node);
		ret = -FI_ENODATA;
	}
	if (ret) {
		fi_freeinfo(head);
		return ret;
	}
	*info = head;
	return 0;
}

int gm_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
               const struct fi_info *hints, struct fi_info **info)
{
	/* A host whose bridge serves many namespaces may list hundreds. */
	char(*names)[IF_NAMESIZE] = calloc(GM_MAX_IFACES, sizeof(*names));
	uint8_t(*macs)[6] = calloc(GM_MAX_IFACES, sizeof(*macs));
	bool *usual = calloc(GM_MAX_IFACES, sizeof(*usual));
	struct gm_dom_entry *doms = calloc(GM_MAX_IFACES, sizeof(*doms));
	int ret = -FI_ENOMEM;

	*info = NULL;
	if (names && macs && usual && doms)
		ret = getinfo_on(names, macs, usual, doms, version, node, service, flags, hints,
		                 info);
	free(names);
	free(macs);
	free(usual);
	free(doms);
	return ret;
}
