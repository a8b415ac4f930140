/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * IP socket addresses (addr_format FI_SOCKADDR_IN, also what an application
 * asking for FI_SOCKADDR gets, and FI_SOCKADDR_IN6) and gamma addresses.
 * A domain is one interface, and an IP address names a station on its link:
 *
 *   address  the station's MAC: ours for an address of the interface or a
 *            loopback one, else the kernel's neighbour entry for it on the
 *            interface (ARP: /proc/net/arp; IPv6: a netlink dump).
 *   port     the gamma port, the same 16-bit number (network order in the
 *            sockaddr, host order in gm_addr.port).
 *
 * An address on the interface's subnets (an IPv6 link-local one always)
 * whose MAC the kernel does not know yet is accepted and resolved when
 * first used (gm_av_get); gm_sa_nudge asks the kernel to resolve it
 * meanwhile.  gamma frames are not routed, so an address beyond the
 * subnets is refused, as are the unspecified, multicast and broadcast
 * addresses.
 */
#include "gm.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The discard service: the kernel's ARP/ND request is the point, not the datagram. */
#define GM_NUDGE_PORT 9

size_t gm_fmt_len(uint32_t addr_format)
{
	if (addr_format == FI_SOCKADDR_IN6)
		return sizeof(struct sockaddr_in6);
	if (gm_fmt_ip(addr_format))
		return sizeof(struct sockaddr_in);
	return sizeof(struct gm_addr);
}

int gm_fmt_family(uint32_t addr_format)
{
	return addr_format == FI_SOCKADDR_IN6 ? AF_INET6 : AF_INET;
}

uint16_t gm_sa_port(const union gm_sa *a)
{
	return ntohs(a->sa.sa_family == AF_INET6 ? a->in6.sin6_port : a->in.sin_port);
}

void gm_sa_set_port(union gm_sa *a, uint16_t port)
{
	if (a->sa.sa_family == AF_INET6)
		a->in6.sin6_port = htons(port);
	else
		a->in.sin_port = htons(port);
}

/* A dump of the kernel's IPv6 neighbours on ifindex: a usable entry for ip? */
static bool nd_lookup(const struct in6_addr *ip, int ifindex, uint8_t mac[6])
{
	struct {
		struct nlmsghdr nh;
		struct ndmsg nd;
	} req = {.nh = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct ndmsg)),
	                .nlmsg_type = RTM_GETNEIGH,
	                .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
	                .nlmsg_seq = 1},
	         .nd = {.ndm_family = AF_INET6, .ndm_ifindex = ifindex}};
	const uint16_t usable =
	    NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT | NUD_NOARP;
	char buf[16384] __attribute__((aligned(NLMSG_ALIGNTO)));
	bool found = false, done = false;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0)
		return false;
	if (send(fd, &req, req.nh.nlmsg_len, 0) < 0)
		done = true;
	while (!done && !found) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		int left = (int)n;
		if (n <= 0)
			break;
		for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, left) && !found;
		     h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
				done = true;
				break;
			}
			struct ndmsg *nd = NLMSG_DATA(h);
			if (h->nlmsg_type != RTM_NEWNEIGH || nd->ndm_ifindex != ifindex ||
			    !(nd->ndm_state & usable))
				continue;
			const void *dst = NULL, *ll = NULL;
			int rl = (int)RTM_PAYLOAD(h);
			for (struct rtattr *a = RTM_RTA(nd); RTA_OK(a, rl); a = RTA_NEXT(a, rl)) {
				if (a->rta_type == NDA_DST && RTA_PAYLOAD(a) == sizeof(*ip))
					dst = RTA_DATA(a);
				else if (a->rta_type == NDA_LLADDR && RTA_PAYLOAD(a) == 6)
					ll = RTA_DATA(a);
			}
			if (dst && ll && !memcmp(dst, ip, sizeof(*ip))) {
				memcpy(mac, ll, 6);
				found = true;
			}
		}
	}
	close(fd);
	return found;
}

static bool reserved4(in_addr_t ip)
{
	return ip == INADDR_ANY || ip == INADDR_BROADCAST || IN_MULTICAST(ip);
}

#define NOT_HERE 2 /* gm_sa_check's verdict for one interface address: not its subnet */

/* Is ip (host order) on ifaddr/mask's subnet: GM_SA_PENDING, refused, or NOT_HERE? */
static int subnet4(in_addr_t ip, in_addr_t a, in_addr_t m)
{
	if ((ip & m) != (a & m))
		return NOT_HERE;
	/* /31 and /32 have neither a network nor a broadcast address */
	if (m < 0xfffffffeu && ((ip & ~m) == ~m || !(ip & ~m)))
		return -FI_EADDRNOTAVAIL;
	return GM_SA_PENDING;
}

static bool subnet6(const struct in6_addr *ip, const struct in6_addr *a, const struct in6_addr *m)
{
	for (int i = 0; i < 16; i++)
		if ((ip->s6_addr[i] ^ a->s6_addr[i]) & m->s6_addr[i])
			return false;
	return true;
}

int gm_sa_check(const union gm_sa *sa, int family, const char *ifname, const uint8_t own[6],
                uint8_t mac[6])
{
	struct ifaddrs *ifa, *i;
	int ifindex = (int)if_nametoindex(ifname);
	const struct in6_addr *ip6 = &sa->in6.sin6_addr;
	int ret = -FI_EHOSTUNREACH;

	if (sa->sa.sa_family != family)
		return -FI_EINVAL;
	if (family == AF_INET && reserved4(ntohl(sa->in.sin_addr.s_addr)))
		return -FI_EADDRNOTAVAIL;
	if (family == AF_INET6 && (IN6_IS_ADDR_UNSPECIFIED(ip6) || IN6_IS_ADDR_MULTICAST(ip6) ||
	                           IN6_IS_ADDR_V4MAPPED(ip6)))
		return -FI_EADDRNOTAVAIL;
	if (gm_ip_is_loopback(&sa->sa)) {
		memcpy(mac, own, 6);
		return 0;
	}
	if (family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(ip6)) {
		/* a link-local address is on whichever link its scope names */
		if (sa->in6.sin6_scope_id && (int)sa->in6.sin6_scope_id != ifindex)
			return -FI_EHOSTUNREACH;
		ret = GM_SA_PENDING;
	}
	if (getifaddrs(&ifa))
		return -FI_ENOMEM;
	for (i = ifa; i && ret != 0; i = i->ifa_next) {
		if (!i->ifa_addr || !i->ifa_netmask || i->ifa_addr->sa_family != family ||
		    strcmp(i->ifa_name, ifname))
			continue;
		int r;
		if (family == AF_INET) {
			in_addr_t ip = ntohl(sa->in.sin_addr.s_addr);
			in_addr_t a = ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
			in_addr_t m =
			    ntohl(((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr);
			r = ip == a ? 0 : subnet4(ip, a, m);
		} else {
			const struct in6_addr *a = &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
			const struct in6_addr *m =
			    &((struct sockaddr_in6 *)i->ifa_netmask)->sin6_addr;
			r = !memcmp(a, ip6, sizeof(*a)) ? 0
			    : subnet6(ip6, a, m)        ? GM_SA_PENDING
			                                : NOT_HERE;
		}
		if (r != NOT_HERE)
			ret = r;
		if (ret == 0)
			memcpy(mac, own, 6);
		if (ret == -FI_EADDRNOTAVAIL)
			break; /* the subnet's network or broadcast address */
	}
	freeifaddrs(ifa);
	if (ret == GM_SA_PENDING && (family == AF_INET ? gm_arp_lookup(&sa->in, ifname, mac)
	                                               : nd_lookup(ip6, ifindex, mac)))
		ret = 0;
	return ret;
}

void gm_sa_nudge(const union gm_sa *sa, const char *ifname)
{
	union gm_sa to = *sa;
	int fd = socket(sa->sa.sa_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return;
	/* out of the domain's interface if we may say so; the route decides otherwise */
	(void)setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname, (socklen_t)strlen(ifname));
	gm_sa_set_port(&to, GM_NUDGE_PORT);
	if (sa->sa.sa_family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&to.in6.sin6_addr))
		to.in6.sin6_scope_id = if_nametoindex(ifname);
	(void)sendto(fd, "", 0, 0, &to.sa,
	             sa->sa.sa_family == AF_INET6 ? sizeof(to.in6) : sizeof(to.in));
	close(fd);
}

int gm_sa_own(const char *ifname, int family, union gm_sa *out)
{
	struct ifaddrs *ifa, *i;
	bool linklocal = true;
	int ret = -FI_ENODATA;

	if (getifaddrs(&ifa))
		return -FI_ENOMEM;
	/* IPv6: a global address if there is one; link-local names only this link */
	for (i = ifa; i && linklocal; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != family || strcmp(i->ifa_name, ifname))
			continue;
		memset(out, 0, sizeof(*out));
		if (family == AF_INET) {
			out->in = *(struct sockaddr_in *)i->ifa_addr;
			linklocal = false;
		} else {
			out->in6 = *(struct sockaddr_in6 *)i->ifa_addr;
			linklocal = IN6_IS_ADDR_LINKLOCAL(&out->in6.sin6_addr);
			out->in6.sin6_scope_id = linklocal ? if_nametoindex(ifname) : 0;
		}
		gm_sa_set_port(out, 0);
		ret = 0;
	}
	freeifaddrs(ifa);
	return ret;
}

int gm_node_sa(const struct gm_node *n, bool source, int family, const char *ifname,
               const uint8_t own[6], union gm_sa *out)
{
	uint8_t mac[6];

	if (!n->ai) { /* a MAC or an interface name: ours, as a source only */
		if (!source || (n->is_mac ? memcmp(n->mac, own, 6) : strcmp(n->name, ifname)))
			return -FI_ENODATA;
		return gm_sa_own(ifname, family, out);
	}
	for (const struct addrinfo *r = n->ai; r; r = r->ai_next) {
		union gm_sa a = {0};

		if (r->ai_family != family || r->ai_addrlen > sizeof(a))
			continue;
		memcpy(&a, r->ai_addr, r->ai_addrlen);
		if (source && gm_ip_is_loopback(&a.sa))
			return gm_sa_own(ifname, family, out); /* peers cannot use ::1 */
		if (source ? gm_ip_on_iface(&a.sa, ifname)
		           : gm_sa_check(&a, family, ifname, own, mac) >= 0) {
			if (family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&a.in6.sin6_addr))
				a.in6.sin6_scope_id = if_nametoindex(ifname);
			gm_sa_set_port(&a, 0);
			*out = a;
			return 0;
		}
	}
	return -FI_ENODATA;
}

int gm_sa_straddr(const union gm_sa *a, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (a->sa.sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &a->in6.sin6_addr, ip, sizeof(ip));
		return snprintf(buf, len, "fi_sockaddr_in6://[%s]:%u", ip, gm_sa_port(a));
	}
	inet_ntop(AF_INET, &a->in.sin_addr, ip, sizeof(ip));
	return snprintf(buf, len, "fi_sockaddr_in://%s:%u", ip, gm_sa_port(a));
}

int gm_addr_name(const struct fi_info *info, const char *ifname, const struct gm_addr *own,
                 unsigned nrails, void *addr, size_t *addrlen)
{
	size_t want = *addrlen, len = gm_fmt_len(info->addr_format);
	int family = gm_fmt_family(info->addr_format);
	union gm_sa a;

	if (!gm_fmt_ip(info->addr_format))
		len *= nrails; /* gamma's own format: one (MAC, port) per rail */
	*addrlen = len;
	if (!gm_fmt_ip(info->addr_format)) {
		if (want < len)
			return -FI_ETOOSMALL;
		memcpy(addr, own, len);
		return 0;
	}
	/* the address fi_getinfo chose, or the interface's */
	if (info->src_addr && info->src_addrlen == len &&
	    ((const struct sockaddr *)info->src_addr)->sa_family == family)
		memcpy(&a, info->src_addr, len);
	else if (gm_sa_own(ifname, family, &a))
		return -FI_EADDRNOTAVAIL;
	gm_sa_set_port(&a, own->port);
	if (want < len)
		return -FI_ETOOSMALL;
	memcpy(addr, &a, len);
	return 0;
}

int gm_addr_src_port(const struct fi_info *info, unsigned nrails, uint16_t *port)
{
	size_t len = gm_fmt_len(info->addr_format);
	union gm_sa a;

	*port = 0;
	if (!info->src_addr)
		return 0;
	if (!gm_fmt_ip(info->addr_format))
		len *= nrails; /* rail 0's port first */
	if (info->src_addrlen != len)
		return -FI_EINVAL;
	if (!gm_fmt_ip(info->addr_format)) {
		*port = ((const struct gm_addr *)info->src_addr)->port;
		return 0;
	}
	memcpy(&a, info->src_addr, len);
	if (a.sa.sa_family != gm_fmt_family(info->addr_format))
		return -FI_EINVAL;
	*port = gm_sa_port(&a);
	return 0;
}
