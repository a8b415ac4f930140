/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_getinfo's node and service, resolved into gamma addresses (MAC + port).
 *
 *   service  a port number, 0..65535.
 *   node     an interface name, a MAC (aa:bb:cc:dd:ee:ff), or a host name /
 *            IP address.  As a source (FI_SOURCE) it must name one of our
 *            interfaces or an IP address assigned to one; as a destination
 *            an IP address is ours (local communication) or a neighbour the
 *            kernel already resolved on that interface (gm_sockaddr.c).
 *            A loopback address (localhost) is this host on every interface.
 *            A host name is looked up once per fi_getinfo, then matched
 *            against each interface.
 *
 * Anything else is -FI_ENODATA, as fi_getinfo(3) asks.
 */
#include "gm.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gm_addr_service(const char *service, uint16_t *port)
{
	char *end;
	unsigned long v;

	*port = 0;
	if (!service || !*service)
		return 0;
	v = strtoul(service, &end, 10);
	if (*end || v > 65535)
		return -FI_ENODATA;
	*port = (uint16_t)v;
	return 0;
}

static bool parse_mac(const char *s, uint8_t mac[6])
{
	unsigned b[6];
	char tail;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
	           &tail) != 6)
		return false;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return true;
}

/* Is the IPv4/IPv6 address one assigned to ifname? */
bool gm_ip_on_iface(const struct sockaddr *sa, const char *ifname)
{
	struct ifaddrs *ifa, *i;
	bool found = false;

	if (getifaddrs(&ifa))
		return false;
	for (i = ifa; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || strcmp(i->ifa_name, ifname) ||
		    i->ifa_addr->sa_family != sa->sa_family)
			continue;
		if (sa->sa_family == AF_INET)
			found = ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
			        ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
		else if (sa->sa_family == AF_INET6)
			found = !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr,
			                &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
			                sizeof(struct in6_addr));
	}
	freeifaddrs(ifa);
	return found;
}

/*
 * 127.0.0.1, ::1, "localhost": this host, which every interface of ours
 * reaches through local communication.
 */
bool gm_ip_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

/* A complete ARP entry for ip on ifname. */
bool gm_arp_lookup(const struct sockaddr_in *sin, const char *ifname, uint8_t mac[6])
{
	char line[256], ip[64], hw[64], dev[IF_NAMESIZE + 1];
	unsigned type, flags;
	bool found = false;
	FILE *f = fopen("/proc/net/arp", "r");

	if (!f)
		return false;
	if (!fgets(line, sizeof(line), f)) { /* header */
		fclose(f);
		return false;
	}
	while (!found && fgets(line, sizeof(line), f)) {
		struct in_addr a;

		if (sscanf(line, "%63s 0x%x 0x%x %63s %*s %16s", ip, &type, &flags, hw, dev) != 5)
			continue;
		found = (flags & 0x2) /* ATF_COM */ && !strcmp(dev, ifname) &&
		        inet_pton(AF_INET, ip, &a) == 1 && a.s_addr == sin->sin_addr.s_addr &&
		        parse_mac(hw, mac);
	}
	fclose(f);
	return found;
}

int gm_node_resolve(const char *node, uint64_t flags, struct gm_node *n)
{
	struct addrinfo hints = {.ai_socktype = SOCK_DGRAM};

	*n = (struct gm_node){.name = node};
	if (parse_mac(node, n->mac)) {
		n->is_mac = true;
		return 0;
	}
	if (if_nametoindex(node))
		return 0;
	/* once per call, not per interface: a name server may be slow to say no */
	if (flags & FI_NUMERICHOST)
		hints.ai_flags |= AI_NUMERICHOST;
	if (getaddrinfo(node, NULL, &hints, &n->ai))
		return -FI_ENODATA;
	return 0;
}

void gm_node_free(struct gm_node *n)
{
	if (n->ai)
		freeaddrinfo(n->ai);
	n->ai = NULL;
}

int gm_node_match(const struct gm_node *n, bool source, const char *ifname, const uint8_t own[6],
                  uint8_t mac[6])
{
	if (n->is_mac) {
		memcpy(mac, n->mac, 6);
		return !source || !memcmp(mac, own, 6) ? 0 : -FI_ENODATA;
	}
	if (!n->ai) { /* an interface name: a source, never a destination */
		if (!source || strcmp(n->name, ifname))
			return -FI_ENODATA;
		memcpy(mac, own, 6);
		return 0;
	}
	for (const struct addrinfo *r = n->ai; r; r = r->ai_next) {
		if (gm_ip_is_loopback(r->ai_addr) || gm_ip_on_iface(r->ai_addr, ifname)) {
			memcpy(mac, own, 6);
			return 0;
		}
		union gm_sa a = {0};
		if (source || r->ai_addrlen > sizeof(a))
			continue;
		memcpy(&a, r->ai_addr, r->ai_addrlen);
		/* a neighbour already resolved (ARP, IPv6 ND); not one still pending */
		if (gm_sa_check(&a, r->ai_family, ifname, own, mac) == 0)
			return 0;
	}
	return -FI_ENODATA;
}
