/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the holder of gamma-rawd's sockets can and cannot do.  Run as an
 * unprivileged user with FI_GAMMA_RAWD naming a setcap'd helper whose
 * configuration allows interface A (not B); A and B are the two ends of a
 * veth pair.  Every claim of rawd/README.md is checked with
 * real frames, each frame tagged so that a receipt names its frame:
 *
 *   cannot: replace or detach the receive filter; receive another
 *           EtherType, or frames to another MAC, or frames on another
 *           interface (even after re-binding the socket there); receive
 *           anything on a transmit socket bound to ETH_P_ALL;
 *   can:    send any EtherType, on any interface (B too) — the documented
 *           limitation; set PACKET_RX_RING; SO_PRIORITY up to 6.
 *
 * Prints "ok: ..." per check and exits 0, or "FAIL: ..." and exits 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gm_rawd.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		printf((cond) ? "ok: " : "FAIL: ");                                                \
		printf(__VA_ARGS__);                                                               \
		printf("\n");                                                                      \
		failures += !(cond);                                                               \
	} while (0)

struct iface {
	const char *name;
	int index;
	uint8_t mac[6];
};

static void get_iface(struct iface *i, const char *name)
{
	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	i->name = name;
	i->index = (int)if_nametoindex(name);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (!i->index || fd < 0 || ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
		fprintf(stderr, "gm-rawd-probe: interface %s: %s\n", name, strerror(errno));
		exit(2);
	}
	memcpy(i->mac, ifr.ifr_hwaddr.sa_data, 6);
	close(fd);
}

/* A frame from `from` to `to` of EtherType type, carrying tag. */
static bool send_tagged(int fd, const struct iface *out, const uint8_t dst[6], uint16_t type,
                        uint32_t tag)
{
	uint8_t f[64] = {0};
	struct sockaddr_ll sll = {
	    .sll_family = AF_PACKET, .sll_ifindex = out->index, .sll_halen = 6};
	uint16_t t = htons(type);

	memcpy(f, dst, 6);
	memcpy(f + 6, out->mac, 6);
	memcpy(f + 12, &t, 2);
	memcpy(f + 14, "rawdprobe", 9);
	memcpy(f + 24, &tag, 4);
	memcpy(sll.sll_addr, dst, 6);
	return sendto(fd, f, sizeof(f), 0, (struct sockaddr *)&sll, sizeof(sll)) == sizeof(f);
}

/* Tags of probe frames that reach fd, until ms milliseconds pass without one. */
static unsigned collect(int fd, uint32_t *tags, unsigned max, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	unsigned n = 0;
	uint8_t f[2048];

	while (n < max && poll(&p, 1, ms) > 0) {
		ssize_t len = recv(fd, f, sizeof(f), MSG_DONTWAIT);

		if (len >= 28 && !memcmp(f + 14, "rawdprobe", 9))
			memcpy(&tags[n++], f + 24, 4);
	}
	return n;
}

static bool has(const uint32_t *tags, unsigned n, uint32_t tag)
{
	for (unsigned i = 0; i < n; i++)
		if (tags[i] == tag)
			return true;
	return false;
}

static int rebind(int fd, const struct iface *i, uint16_t proto)
{
	struct sockaddr_ll sll = {
	    .sll_family = AF_PACKET, .sll_protocol = htons(proto), .sll_ifindex = i->index};

	return bind(fd, (struct sockaddr *)&sll, sizeof(sll));
}

int main(int argc, char **argv)
{
	static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	struct sock_filter all[] = {BPF_STMT(BPF_RET | BPF_K, 0xffff)};
	struct sock_fprog prog = {.len = 1, .filter = all};
	char err[RAWD_MSG_MAX + 64];
	struct iface a, b;
	uint32_t tags[64];
	int fds[RAWD_NFDS], rx, tx, tx2, prio, rc;
	unsigned n;

	if (argc != 3) {
		fprintf(stderr, "usage: gm-rawd-probe ALLOWED_IF OTHER_IF (veth peers)\n");
		return 2;
	}
	get_iface(&a, argv[1]);
	get_iface(&b, argv[2]);
	rc = socket(AF_PACKET, SOCK_RAW, 0);
	if (rc >= 0) {
		fprintf(stderr, "gm-rawd-probe: this process has CAP_NET_RAW; run it without\n");
		return 2;
	}
	if (gm_rawd_open(getenv("FI_GAMMA_RAWD"), a.name, 0x88B5, fds, err, sizeof(err))) {
		printf("FAIL: gamma-rawd: %s\n", err);
		return 1;
	}
	rx = fds[RAWD_FD_RX];
	tx = fds[RAWD_FD_TX_HIGH];
	tx2 = fds[RAWD_FD_TX_LOW];
	printf("ok: gamma-rawd handed over 3 packet sockets on %s\n", a.name);

	rc = setsockopt(rx, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog));
	CHECK(rc < 0 && errno == EPERM, "receive filter cannot be replaced (SO_ATTACH_FILTER: %s)",
	      rc ? strerror(errno) : "succeeded");
	rc = setsockopt(rx, SOL_SOCKET, SO_DETACH_FILTER, &(int){0}, sizeof(int));
	CHECK(rc < 0 && errno == EPERM, "receive filter cannot be detached (SO_DETACH_FILTER: %s)",
	      rc ? strerror(errno) : "succeeded");
	rc = setsockopt(tx, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog));
	CHECK(rc < 0 && errno == EPERM, "transmit filter cannot be replaced (%s)",
	      rc ? strerror(errno) : "succeeded");
	prio = 6;
	CHECK(!setsockopt(tx, SOL_SOCKET, SO_PRIORITY, &prio, sizeof(prio)),
	      "SO_PRIORITY 6 may be set (the high class)");
	prio = 7;
	rc = setsockopt(tx, SOL_SOCKET, SO_PRIORITY, &prio, sizeof(prio));
	CHECK(rc < 0, "SO_PRIORITY 7 needs CAP_NET_ADMIN (%s)", rc ? strerror(errno) : "allowed");
	struct tpacket_req req = {
	    .tp_block_size = 4096, .tp_block_nr = 2, .tp_frame_size = 2048, .tp_frame_nr = 4};
	int s2 = fds[RAWD_FD_TX_LOW];
	rc = setsockopt(s2, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req));
	CHECK(!rc, "PACKET_RX_RING may be set on a received socket (%s)",
	      rc ? strerror(errno) : "yes");

	/* The receive socket on A, every protocol, as the provider binds it. */
	if (rebind(rx, &a, ETH_P_ALL) || rebind(tx, &a, ETH_P_ALL)) {
		printf("FAIL: bind: %s\n", strerror(errno));
		return 1;
	}
	struct packet_mreq mr = {.mr_ifindex = a.index, .mr_type = PACKET_MR_PROMISC};
	rc = setsockopt(rx, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr));
	CHECK(!rc, "may put %s in promiscuous mode (%s); the filter still drops others' frames",
	      a.name, rc ? strerror(errno) : "yes");
	int one = 1;
	rc = setsockopt(tx, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
	CHECK(!rc, "may set PACKET_QDISC_BYPASS, skipping tc on send (%s)",
	      rc ? strerror(errno) : "yes");
	/* Sent from B's end (a non-allowed interface: the limitation). */
	bool sent =
	    send_tagged(tx2, &b, a.mac, 0x88B5, 1) && send_tagged(tx2, &b, a.mac, 0x0800, 2) &&
	    send_tagged(tx2, &b, bcast, 0x88B5, 3) &&
	    send_tagged(tx2, &b, (const uint8_t[6]){0x02, 0, 0, 0, 0, 0x42}, 0x88B5, 4) &&
	    send_tagged(tx2, &a, a.mac, 0x88B5, 5) && send_tagged(tx2, &a, b.mac, 0x0806, 6);
	CHECK(sent, "any EtherType can be sent, on any interface (%s too): not prevented", b.name);
	n = collect(rx, tags, 64, 1000);
	CHECK(has(tags, n, 1), "receives EtherType 0x88B5 frames sent to %s", a.name);
	CHECK(has(tags, n, 5), "receives its own frames to its own MAC (local path)");
	CHECK(!has(tags, n, 2), "does not receive EtherType 0x0800 frames");
	CHECK(!has(tags, n, 3), "does not receive broadcast frames");
	CHECK(!has(tags, n, 4), "does not receive frames to another MAC");
	CHECK(!has(tags, n, 6), "does not receive outgoing frames to another MAC");
	n = collect(tx, tags, 64, 100);
	CHECK(n == 0, "a transmit socket bound to ETH_P_ALL receives nothing (%u frames)", n);

	/* Moved to B, the receive socket still sees nothing. */
	if (rebind(rx, &b, ETH_P_ALL)) {
		printf("FAIL: bind to %s: %s\n", b.name, strerror(errno));
		return 1;
	}
	collect(rx, tags, 64, 50);
	send_tagged(tx2, &a, b.mac, 0x88B5, 7);
	n = collect(rx, tags, 64, 1000);
	CHECK(!has(tags, n, 7), "re-bound to %s, it receives nothing there (%u frames)", b.name, n);
	printf(failures ? "gm-rawd-probe: %d checks failed\n"
	                : "gm-rawd-probe: all checks passed\n",
	       failures);
	return failures ? 1 : 0;
}
