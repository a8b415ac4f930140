/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * IPv4 socket addresses (addr_format FI_SOCKADDR_IN, which is also what an
 * application asking for FI_SOCKADDR gets) and gamma addresses.  A domain
 * is one interface, and an IP address names a station on its link:
 *
 *   address  the station's MAC: ours for an address of the interface or a
 *            loopback one, else the kernel's neighbour (ARP) entry for it
 *            on the interface.
 *   port     the gamma port, the same 16-bit number (sin_port in network
 *            order, gm_addr.port in host order).
 *
 * An address on the interface's subnet whose MAC the kernel does not know
 * yet is accepted and resolved when first used (gm_av_get); gm_sin_nudge
 * asks the kernel to resolve it meanwhile.  gamma frames are not routed,
 * so an address beyond the subnets is refused, as are the unspecified,
 * multicast and broadcast addresses.
 */
#include "gm.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The discard service: the kernel's ARP request is the point, not the datagram. */
#define GM_NUDGE_PORT 9

static bool reserved(in_addr_t ip)
{
	return ip == INADDR_ANY || ip == INADDR_BROADCAST || IN_MULTICAST(ip);
}

int gm_sin_check(const struct sockaddr_in *sin, const char *ifname, const uint8_t own[6],
                 uint8_t mac[6])
{
	struct ifaddrs *ifa, *i;
	in_addr_t ip = ntohl(sin->sin_addr.s_addr);
	int ret = -FI_EHOSTUNREACH;

	if (sin->sin_family != AF_INET)
		return -FI_EINVAL;
	if (reserved(ip))
		return -FI_EADDRNOTAVAIL;
	if (gm_ip_is_loopback((const struct sockaddr *)sin)) {
		memcpy(mac, own, 6);
		return 0;
	}
	if (getifaddrs(&ifa))
		return -FI_ENOMEM;
	for (i = ifa; i && ret == -FI_EHOSTUNREACH; i = i->ifa_next) {
		if (!i->ifa_addr || !i->ifa_netmask || i->ifa_addr->sa_family != AF_INET ||
		    strcmp(i->ifa_name, ifname))
			continue;
		in_addr_t a = ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
		in_addr_t m = ntohl(((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr);
		if (ip == a) {
			memcpy(mac, own, 6);
			ret = 0;
		} else if ((ip & m) == (a & m)) {
			/* /31 and /32 have neither a network nor a broadcast address */
			bool host_bits_all = (ip & ~m) == ~m, host_bits_none = !(ip & ~m);
			ret = m < 0xfffffffeu && (host_bits_all || host_bits_none)
			          ? -FI_EADDRNOTAVAIL
			          : GM_SIN_PENDING;
		}
	}
	freeifaddrs(ifa);
	if (ret == GM_SIN_PENDING && gm_arp_lookup(sin, ifname, mac))
		ret = 0;
	return ret;
}

void gm_sin_nudge(const struct sockaddr_in *sin, const char *ifname)
{
	struct sockaddr_in to = *sin;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return;
	/* out of the domain's interface if we may say so; the route decides otherwise */
	(void)setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname, (socklen_t)strlen(ifname));
	to.sin_port = htons(GM_NUDGE_PORT);
	(void)sendto(fd, "", 0, 0, (struct sockaddr *)&to, sizeof(to));
	close(fd);
}

int gm_sin_own(const char *ifname, struct in_addr *ip)
{
	struct ifaddrs *ifa, *i;
	int ret = -FI_ENODATA;

	if (getifaddrs(&ifa))
		return -FI_ENOMEM;
	for (i = ifa; i && ret; i = i->ifa_next) {
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    !strcmp(i->ifa_name, ifname)) {
			*ip = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
			ret = 0;
		}
	}
	freeifaddrs(ifa);
	return ret;
}

void gm_sin_make(struct sockaddr_in *sin, struct in_addr ip, uint16_t port)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_addr = ip;
	sin->sin_port = htons(port);
}

int gm_node_sin(const struct gm_node *n, bool source, const char *ifname, const uint8_t own[6],
                struct in_addr *ip)
{
	uint8_t mac[6];

	if (!n->ai) { /* a MAC or an interface name: ours, as a source only */
		if (!source || (n->is_mac ? memcmp(n->mac, own, 6) : strcmp(n->name, ifname)))
			return -FI_ENODATA;
		return gm_sin_own(ifname, ip);
	}
	for (const struct addrinfo *r = n->ai; r; r = r->ai_next) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)r->ai_addr;

		if (r->ai_family != AF_INET)
			continue;
		if (source && gm_ip_is_loopback(r->ai_addr))
			return gm_sin_own(ifname, ip); /* peers cannot use 127.0.0.1 */
		if (source ? gm_ip_on_iface(r->ai_addr, ifname)
		           : gm_sin_check(sin, ifname, own, mac) >= 0) {
			*ip = sin->sin_addr;
			return 0;
		}
	}
	return -FI_ENODATA;
}

int gm_sin_straddr(const struct sockaddr_in *sin, char *buf, size_t len)
{
	char ip[INET_ADDRSTRLEN] = "?";

	inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
	return snprintf(buf, len, "fi_sockaddr_in://%s:%u", ip, ntohs(sin->sin_port));
}

int gm_addr_name(const struct fi_info *info, const char *ifname, const struct gm_addr *own,
                 void *addr, size_t *addrlen)
{
	size_t want = *addrlen;
	struct sockaddr_in sin;
	struct in_addr ip;

	if (!gm_fmt_sin(info->addr_format)) {
		*addrlen = sizeof(*own);
		if (want < sizeof(*own))
			return -FI_ETOOSMALL;
		memcpy(addr, own, sizeof(*own));
		return 0;
	}
	/* the address fi_getinfo chose, or the interface's first */
	if (info->src_addr && info->src_addrlen == sizeof(sin) &&
	    ((const struct sockaddr_in *)info->src_addr)->sin_family == AF_INET &&
	    ((const struct sockaddr_in *)info->src_addr)->sin_addr.s_addr != INADDR_ANY)
		ip = ((const struct sockaddr_in *)info->src_addr)->sin_addr;
	else if (gm_sin_own(ifname, &ip))
		return -FI_EADDRNOTAVAIL;
	gm_sin_make(&sin, ip, own->port);
	*addrlen = sizeof(sin);
	if (want < sizeof(sin))
		return -FI_ETOOSMALL;
	memcpy(addr, &sin, sizeof(sin));
	return 0;
}

int gm_addr_src_port(const struct fi_info *info, uint16_t *port)
{
	*port = 0;
	if (!info->src_addr)
		return 0;
	if (gm_fmt_sin(info->addr_format)) {
		const struct sockaddr_in *sin = info->src_addr;
		if (info->src_addrlen != sizeof(*sin) || sin->sin_family != AF_INET)
			return -FI_EINVAL;
		*port = ntohs(sin->sin_port);
		return 0;
	}
	if (info->src_addrlen != sizeof(struct gm_addr))
		return -FI_EINVAL;
	*port = ((const struct gm_addr *)info->src_addr)->port;
	return 0;
}
