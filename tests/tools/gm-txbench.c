/*
 * gm-txbench: the measurement behind gm_link.c's transmit path.  Sends N
 * raw gamma-typed frames out of an interface two ways and reports wall and
 * CPU time per frame (CPU time is the figure that survives a busy machine):
 *   sendmmsg   one syscall per batch of 64, frames straight from user buffers
 *   txring     PACKET_TX_RING (TPACKET_V2): copy into ring slots, one send()
 *              per batch of 64, slots reclaimed as the kernel frees them
 * usage: gm-txbench IFNAME [N] [FRAME_LEN]    (needs CAP_NET_RAW)
 * Point it at a veth whose peer is up; the frames are dropped at the peer.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static int open_sock(int ifindex)
{
	int fd = socket(AF_PACKET, SOCK_RAW, 0);
	struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_ifindex = ifindex};

	if (fd < 0 || bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		perror("packet socket");
		exit(errno == EPERM ? 77 : 1);
	}
	return fd;
}

static void report(const char *name, unsigned long n, size_t len, double w, double c)
{
	printf("%-9s %lu frames of %zu B: %.0f frames/s, %.1f MB/s, %.3f us CPU per frame\n", name,
	       n, len, n / w, n * (double)len / w / 1e6, c / n * 1e6);
}

static void bench_sendmmsg(int ifindex, const uint8_t *frame, size_t len, unsigned long n)
{
	int fd = open_sock(ifindex);
	struct sockaddr_ll dst = {.sll_family = AF_PACKET,
	                          .sll_protocol = htons(0x88B5),
	                          .sll_ifindex = ifindex,
	                          .sll_halen = 6};
	struct mmsghdr msg[BATCH];
	struct iovec iov = {(void *)frame, len};
	unsigned long sent = 0;
	double w0, c0;

	for (int i = 0; i < BATCH; i++)
		msg[i].msg_hdr = (struct msghdr){
		    .msg_name = &dst, .msg_namelen = sizeof(dst), .msg_iov = &iov, .msg_iovlen = 1};
	w0 = wall();
	c0 = cpu();
	while (sent < n) {
		int rc = sendmmsg(fd, msg, BATCH, 0);

		if (rc > 0)
			sent += (unsigned long)rc;
		else if (errno != ENOBUFS && errno != EAGAIN)
			return perror("sendmmsg");
	}
	report("sendmmsg", sent, len, wall() - w0, cpu() - c0);
	close(fd);
}

static void bench_txring(int ifindex, const uint8_t *frame, size_t len, unsigned long n)
{
	int fd = open_sock(ifindex), v = TPACKET_V2;
	struct tpacket_req req = {.tp_block_size = 1 << 16, .tp_block_nr = 64};
	size_t fsz = TPACKET_ALIGN(TPACKET2_HDRLEN + len), off;
	unsigned long sent = 0;
	unsigned head = 0, per_block;
	uint8_t *ring;
	double w0, c0;

	while (fsz > req.tp_block_size)
		req.tp_block_size <<= 1;
	per_block = req.tp_block_size / (unsigned)fsz;
	req.tp_frame_size = (unsigned)fsz;
	req.tp_frame_nr = per_block * req.tp_block_nr;
	if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &v, sizeof(v)) < 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_TX_RING, &req, sizeof(req)) < 0)
		return perror("PACKET_TX_RING");
	ring = mmap(NULL, (size_t)req.tp_block_size * req.tp_block_nr, PROT_READ | PROT_WRITE,
	            MAP_SHARED, fd, 0);
	if (ring == MAP_FAILED)
		return perror("mmap");
	off = TPACKET2_HDRLEN - sizeof(struct sockaddr_ll);
	w0 = wall();
	c0 = cpu();
	while (sent < n) {
		unsigned queued = 0;

		while (queued < BATCH && sent + queued < n) {
			struct tpacket2_hdr *h =
			    (void *)(ring + (size_t)(head / per_block) * req.tp_block_size +
			             (size_t)(head % per_block) * fsz);
			unsigned st = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);

			if (st == TP_STATUS_WRONG_FORMAT)
				return fprintf(stderr, "txring: wrong format\n"), (void)0;
			if (st != TP_STATUS_AVAILABLE)
				break; /* the kernel has not freed it yet */
			memcpy((uint8_t *)h + off, frame, len);
			h->tp_len = (unsigned)len;
			__atomic_store_n(&h->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
			head = (head + 1) % req.tp_frame_nr;
			queued++;
		}
		if (send(fd, NULL, 0, MSG_DONTWAIT) < 0 && errno != EAGAIN && errno != ENOBUFS)
			return perror("send");
		sent += queued;
		if (!queued) {
			struct pollfd p = {.fd = fd, .events = POLLOUT};
			poll(&p, 1, 10);
		}
	}
	send(fd, NULL, 0, 0); /* wait until the ring drained */
	report("txring", sent, len, wall() - w0, cpu() - c0);
	munmap(ring, (size_t)req.tp_block_size * req.tp_block_nr);
	close(fd);
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 0) : 200000;
	size_t len = argc > 3 ? strtoul(argv[3], NULL, 0) : 1514;
	int ifindex = argc > 1 ? (int)if_nametoindex(argv[1]) : 0;
	static uint8_t frame[65536];

	if (!ifindex || len < 60 || len > sizeof(frame))
		return fprintf(stderr, "usage: gm-txbench IFNAME [N] [FRAME_LEN]\n"), 2;
	memset(frame, 0x02, 12);
	frame[12] = 0x88;
	frame[13] = 0xB5;
	for (size_t i = 14; i < len; i++)
		frame[i] = (uint8_t)i;
	for (int round = 0; round < 2; round++) {
		bench_sendmmsg(ifindex, frame, len, n);
		bench_txring(ifindex, frame, len, n);
	}
	return 0;
}
