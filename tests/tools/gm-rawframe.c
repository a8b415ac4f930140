/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gm-rawframe: send and receive raw Ethernet frames over AF_PACKET, to check
 * that a gamma-cluster link carries frames of an EtherType without any
 * provider code.
 *
 *   gm-rawframe send [-f FLAGS] [-s BYTES] [-i USEC] [-n FIRST] [-p PRIO]
 *                    IFACE DST_MAC ETHERTYPE COUNT
 *   gm-rawframe recv [-q] [-w] [-F SRC_MAC] IFACE ETHERTYPE COUNT TIMEOUT_MS
 *
 * The payload after the Ethernet header looks like a gamma header where a
 * tc classifier looks (version 1 at byte 0, FLAGS at byte 2) and then carries
 * a magic, a sequence number, its own length, a deterministic pattern and a
 * checksum of all of it.  The receiver verifies every byte, counts distinct
 * valid frames with sequence numbers 0..COUNT-1, and prints
 *   gm-rawframe: received V valid of COUNT (I invalid, D duplicate)
 * Exit status: 0 when all COUNT arrived, 1 when not (timeout), 2 on errors.
 * TIMEOUT_MS runs from the start, or with -w from SIGTERM: a test that
 * expects fewer than COUNT frames sends it once its sender is done, so a
 * receiver never gives up before the frames were even sent.
 * recv prints "gm-rawframe: ready" once its socket is bound (scripts wait
 * for it before starting the sender).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ETH_HLEN_   14
#define OFF_VERSION 0
#define OFF_FLAGS   2
#define OFF_MAGIC   4
#define OFF_SEQ     8
#define OFF_LEN     12
#define OFF_DATA    14
#define TRAILER     4 /* checksum */
#define MIN_PAYLOAD (OFF_DATA + TRAILER)
#define MAX_FRAME   65536

static const uint8_t magic[4] = {'G', 'M', 'R', 'F'};

static void usage(void)
{
	fprintf(stderr,
	        "usage: gm-rawframe send [-f FLAGS] [-s BYTES] [-i USEC] [-n FIRST] [-p PRIO] "
	        "IFACE DST_MAC\n"
	        "                        ETHERTYPE COUNT\n"
	        "       gm-rawframe recv [-q] [-w] [-F SRC_MAC] IFACE ETHERTYPE COUNT TIMEOUT_MS\n"
	        "  -F MAC    recv: ignore frames from other sources (other jobs on the host)\n"
	        "  -f FLAGS  byte 2 of the payload (gamma flags; 0x04 = low class), default 0\n"
	        "  -s BYTES  payload bytes after the Ethernet header (%d..%d), default 64\n"
	        "  -i USEC   pause between frames, default 0\n"
	        "  -n FIRST  sequence number of the first frame (default 0), so that several\n"
	        "            senders can feed one receiver\n"
	        "  -p PRIO   SO_PRIORITY of the sending socket (skb->priority), default unset\n"
	        "  -q        recv: do not print the ready line\n"
	        "  -w        recv: TIMEOUT_MS counts from SIGTERM (the sender is done), not the "
	        "start\n",
	        MIN_PAYLOAD, MAX_FRAME - ETH_HLEN_);
	exit(2);
}

static void die(const char *what)
{
	fprintf(stderr, "gm-rawframe: %s: %s\n", what, strerror(errno));
	exit(2);
}

static unsigned long parse_num(const char *s, const char *what, unsigned long max)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 0);
	if (errno || *s == '\0' || *end != '\0' || v > max) {
		fprintf(stderr, "gm-rawframe: invalid %s '%s' (0..%lu)\n", what, s, max);
		exit(2);
	}
	return v;
}

static uint8_t pattern(uint32_t seq, size_t i)
{
	return (uint8_t)(seq * 29u + i * 13u + (i >> 8) + 7u);
}

/* FNV-1a: simple, and any flipped or moved byte changes it. */
static uint32_t fnv1a(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return ntohl(v);
}

static int open_bound(const char *ifname, uint16_t proto, int *ifindex)
{
	/* Protocol 0 until bind: a socket opened with its protocol hears every
	   interface of the namespace until bind narrows it, and in the flat
	   cluster layout other tests' frames would land in its queue. */
	int fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0)
		die("socket(AF_PACKET) (needs root or CAP_NET_RAW)");
	*ifindex = (int)if_nametoindex(ifname);
	if (*ifindex == 0) {
		fprintf(stderr, "gm-rawframe: no interface '%s'\n", ifname);
		exit(2);
	}
	struct sockaddr_ll sll = {
	    .sll_family = AF_PACKET, .sll_protocol = htons(proto), .sll_ifindex = *ifindex};
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		die("bind");
	return fd;
}

static int do_send(int argc, char **argv)
{
	unsigned flags = 0, payload = 64, gap_us = 0;
	unsigned long first = 0;
	long prio = -1;
	unsigned long dropped = 0;
	int opt;
	while ((opt = getopt(argc, argv, "+f:s:i:n:p:")) != -1) {
		switch (opt) {
		case 'f':
			flags = parse_num(optarg, "flags", 255);
			break;
		case 's':
			payload = parse_num(optarg, "size", MAX_FRAME - ETH_HLEN_);
			break;
		case 'i':
			gap_us = parse_num(optarg, "interval", 10000000);
			break;
		case 'p':
			prio = (long)parse_num(optarg, "priority", 0x7fffffff);
			break;
		case 'n':
			first = parse_num(optarg, "first sequence number", 0xffffffffUL);
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 4)
		usage();
	if (payload < MIN_PAYLOAD) {
		fprintf(stderr, "gm-rawframe: size %u below the minimum %d\n", payload,
		        MIN_PAYLOAD);
		return 2;
	}
	const char *ifname = argv[optind];
	uint8_t dst[ETH_ALEN];
	if (sscanf(argv[optind + 1], "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx%*c", &dst[0], &dst[1], &dst[2],
	           &dst[3], &dst[4], &dst[5]) != 6) {
		fprintf(stderr, "gm-rawframe: invalid MAC '%s' (aa:bb:cc:dd:ee:ff)\n",
		        argv[optind + 1]);
		return 2;
	}
	uint16_t proto = (uint16_t)parse_num(argv[optind + 2], "ethertype", 0xffff);
	unsigned long count = parse_num(argv[optind + 3], "count", 0xffffffffUL);

	int ifindex;
	/* Protocol 0: this socket only sends, it must not queue received frames. */
	int fd = open_bound(ifname, 0, &ifindex);
	if (prio >= 0 &&
	    setsockopt(fd, SOL_SOCKET, SO_PRIORITY, &(int){(int)prio}, sizeof(int)) < 0)
		die("setsockopt(SO_PRIORITY)");
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0)
		die("SIOCGIFHWADDR");

	static uint8_t frame[MAX_FRAME];
	size_t len = ETH_HLEN_ + payload;
	struct ether_header *eh = (struct ether_header *)frame;
	memcpy(eh->ether_dhost, dst, ETH_ALEN);
	memcpy(eh->ether_shost, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	eh->ether_type = htons(proto);
	uint8_t *p = frame + ETH_HLEN_;
	struct sockaddr_ll to = {.sll_family = AF_PACKET,
	                         .sll_protocol = htons(proto),
	                         .sll_ifindex = ifindex,
	                         .sll_halen = ETH_ALEN};
	memcpy(to.sll_addr, dst, ETH_ALEN);

	for (unsigned long seq = first; seq < first + count; seq++) {
		memset(p, 0, OFF_DATA);
		p[OFF_VERSION] = 1;
		p[OFF_FLAGS] = (uint8_t)flags;
		memcpy(p + OFF_MAGIC, magic, 4);
		put32(p + OFF_SEQ, (uint32_t)seq);
		p[OFF_LEN] = (uint8_t)(payload >> 8);
		p[OFF_LEN + 1] = (uint8_t)payload;
		for (size_t i = OFF_DATA; i < payload - TRAILER; i++)
			p[i] = pattern((uint32_t)seq, i);
		put32(p + payload - TRAILER, fnv1a(p, payload - TRAILER));
		for (;;) {
			if (sendto(fd, frame, len, 0, (struct sockaddr *)&to, sizeof(to)) ==
			    (ssize_t)len)
				break;
			if (errno == EAGAIN || errno == EINTR) {
				usleep(100);
				continue;
			}
			/* The egress qdisc or filter dropped it (e.g. shaped loss):
			 * lost on the wire, as far as this check goes. */
			if (errno == ENOBUFS) {
				dropped++;
				break;
			}
			die("sendto");
		}
		if (gap_us)
			usleep(gap_us);
	}
	printf("gm-rawframe: sent %lu frames of %zu bytes, ethertype 0x%04x, flags 0x%02x"
	       " (%lu dropped by the local egress)\n",
	       count, len, proto, flags, dropped);
	close(fd);
	return 0;
}

/* 1 if the payload is a complete, intact frame from do_send. */
static int valid(const uint8_t *p, size_t n, uint32_t *seq)
{
	if (n < MIN_PAYLOAD || p[OFF_VERSION] != 1 || memcmp(p + OFF_MAGIC, magic, 4) != 0)
		return 0;
	size_t len = (size_t)p[OFF_LEN] << 8 | p[OFF_LEN + 1];
	if (len < MIN_PAYLOAD || len > n) /* n may exceed len: Ethernet padding */
		return 0;
	if (fnv1a(p, len - TRAILER) != get32(p + len - TRAILER))
		return 0;
	*seq = get32(p + OFF_SEQ);
	for (size_t i = OFF_DATA; i < len - TRAILER; i++)
		if (p[i] != pattern(*seq, i))
			return 0;
	return 1;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static volatile sig_atomic_t sender_done;

static void on_sender_done(int sig)
{
	(void)sig;
	sender_done = 1;
}

static int do_recv(int argc, char **argv)
{
	int quiet = 0, opt, from_set = 0, wait_term = 0;
	uint8_t want_src[6];
	while ((opt = getopt(argc, argv, "+qwF:")) != -1) {
		if (opt == 'q') {
			quiet = 1;
		} else if (opt == 'w') {
			wait_term = 1;
		} else if (opt == 'F') {
			if (sscanf(optarg, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &want_src[0],
			           &want_src[1], &want_src[2], &want_src[3], &want_src[4],
			           &want_src[5]) != 6)
				usage();
			from_set = 1;
		} else {
			usage();
		}
	}
	if (argc - optind != 4)
		usage();
	const char *ifname = argv[optind];
	uint16_t proto = (uint16_t)parse_num(argv[optind + 1], "ethertype", 0xffff);
	unsigned long count = parse_num(argv[optind + 2], "count", 1UL << 24);
	unsigned long timeout = parse_num(argv[optind + 3], "timeout", 3600000);

	int ifindex;
	int fd = open_bound(ifname, proto, &ifindex);
	/* Unpaced senders outrun us: give the socket room for a burst (root may
	 * exceed rmem_max). */
	int rcvbuf = 32 << 20;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	uint8_t *seen = calloc(count ? count : 1, 1);
	if (!seen)
		die("calloc");
	/* SIGTERM stays blocked but while waiting in ppoll: no wakeup is lost. */
	sigset_t waitmask;
	sigprocmask(SIG_SETMASK, NULL, &waitmask);
	if (wait_term) {
		struct sigaction sa = {.sa_handler = on_sender_done};
		sigset_t term;
		sigemptyset(&term);
		sigaddset(&term, SIGTERM);
		sigprocmask(SIG_BLOCK, &term, NULL);
		sigemptyset(&sa.sa_mask);
		sigaction(SIGTERM, &sa, NULL);
	}
	if (!quiet) {
		printf("gm-rawframe: ready\n");
		fflush(stdout);
	}

	static uint8_t frame[MAX_FRAME];
	unsigned long good = 0, bad = 0, dup = 0;
	long long deadline = wait_term ? -1 : now_ms() + (long long)timeout;
	while (good < count) {
		if (deadline < 0 && sender_done)
			deadline = now_ms() + (long long)timeout;
		long long left = deadline < 0 ? 0 : deadline - now_ms();
		if (deadline >= 0 && left <= 0)
			break;
		struct timespec tmo = {.tv_sec = left / 1000, .tv_nsec = left % 1000 * 1000000};
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int r = ppoll(&pfd, 1, deadline < 0 ? NULL : &tmo, &waitmask);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("poll");
		if (r == 0)
			break;
		struct sockaddr_ll from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(fd, frame, sizeof(frame), 0, (struct sockaddr *)&from, &fl);
		if (n < 0)
			die("recvfrom");
		if (from.sll_pkttype == PACKET_OUTGOING)
			continue;
		if (from_set && n >= ETH_HLEN_ && memcmp(frame + 6, want_src, 6))
			continue;
		uint32_t seq;
		if (n < ETH_HLEN_ || ntohs(((struct ether_header *)frame)->ether_type) != proto ||
		    !valid(frame + ETH_HLEN_, (size_t)n - ETH_HLEN_, &seq) || seq >= count) {
			bad++;
			continue;
		}
		if (seen[seq]) {
			dup++;
			continue;
		}
		seen[seq] = 1;
		good++;
	}
	printf("gm-rawframe: received %lu valid of %lu (%lu invalid, %lu duplicate)\n", good, count,
	       bad, dup);
	free(seen);
	close(fd);
	return good == count ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (strcmp(argv[1], "send") == 0)
		return do_send(argc - 1, argv + 1);
	if (strcmp(argv[1], "recv") == 0)
		return do_recv(argc - 1, argv + 1);
	usage();
}
