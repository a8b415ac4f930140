/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * AF_PACKET link (see gm_link.h).
 *
 * Receive: TPACKET_V2 ring.  TPACKET_V3 batches frames into blocks that the
 * kernel hands over only when a block fills or its retire timer fires
 * (milliseconds), which would put that timer on the latency path of every
 * ping-pong; V2 hands over each frame as soon as it is written.
 *
 * Transmit: sendmmsg(), one syscall per batch and class, straight from the
 * reliability layer's buffers (which hold every frame until acked anyway).
 * Measured against PACKET_TX_RING (TPACKET_V2, one send() per 64 frames)
 * with a one-off benchmark (c10ea09:tests/tools/gm-txbench.c) on a veth,
 * CPU time per frame on this 2-core machine (busy, so wall rates are noise): 1514 B frames 1.50 us
 * both; 9014 B frames sendmmsg 2.47 us, ring 2.9-3.4 us; 60 B frames
 * sendmmsg 1.38 us, ring 1.22 us.  The ring wins only for tiny frames and
 * needs a copy into it, slot reclaim (a slot returns only when the kernel
 * frees the skb) and pinned memory per class socket, so sendmmsg it is.
 * Building frames in the ring's slots instead of our buffers does not pay
 * either: gamma-floor --tests ring (experiments/perf/README.md) costs
 * 2.8/4.6/12.4 us of sender CPU per frame at MTU 1500/9000/65000 against
 * sendmmsg's 2.7/4.2/6.0 plus the copy it saves.
 * PACKET_QDISC_BYPASS is deliberately not set: the tc double-queue
 * classifier must see our frames.
 *
 * Local communication: frames to our own MAC never come back from the
 * wire, but an ETH_P_ALL packet socket sees every outgoing frame as
 * PACKET_OUTGOING.  The filter accepts such a frame only when its
 * destination MAC is ours, which makes it the loopback path; a frame is
 * seen once (the sending socket is never shown its own frames).  That tap
 * costs every other outgoing frame a clone and a filter run only to be
 * dropped (0.35 us per 1514 B frame, perf), so high-class frames to other
 * hosts leave by the receive socket itself, which the kernel skips; frames
 * to our own MAC and low-class frames (their own SO_PRIORITY) leave by the
 * class sockets.
 *
 * Without CAP_NET_RAW, the sockets come from the gamma-rawd helper
 * (gm_rawd.h): its receive socket carries a locked filter (this interface,
 * our EtherType, frames to this host), so our port filter cannot be added
 * and the reliability layer sorts ports out in user space instead.
 */
#define _GNU_SOURCE
#include "gm_link.h"

#include <arpa/inet.h>

#include <errno.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if_arp.h>
#include <stdbool.h>
#include <stddef.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "gm_filter.h"
#include "gm_rawd.h"

#define RX_BATCH_MAX 256

struct gm_link {
	char ifname[IF_NAMESIZE];
	int ifindex;
	uint16_t ethertype;
	uint8_t mac[6];
	size_t mtu;
	int rx_fd, tx_fd[2];
	uint8_t *ring;
	size_t ring_len, frame_size, block_size;
	unsigned frames_per_block, frame_nr, rx_head;
	uint64_t drops;
	bool filter_locked;     /* sockets from gamma-rawd */
	struct sockaddr_ll dst; /* ifindex and protocol for sendmmsg */
	const char *rawd;
	struct gm_log log;
};

static int err_from_errno(int e)
{
	return e == EPERM || e == EACCES ? -FI_EPERM : -e;
}

static int query_iface(struct gm_link *l)
{
	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int rc = 0;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", l->ifname);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
		rc = -errno;
		goto out;
	}
	if (!(ifr.ifr_flags & IFF_UP)) {
		GM_NET_WARN(&l->log, "interface %s is down; bring it up: ip link set %s up\n",
		            l->ifname, l->ifname);
		rc = -FI_ENETDOWN;
		goto out;
	}
	/* No carrier yet (a veth needs a moment after both ends are up):
	 * frames sent meanwhile are lost and retransmitted, so carry on. */
	if (!(ifr.ifr_flags & IFF_RUNNING))
		GM_NET_WARN(&l->log, "interface %s has no carrier (yet); frames wait for it\n",
		            l->ifname);
	if (ioctl(fd, SIOCGIFMTU, &ifr) < 0) {
		rc = -errno;
		goto out;
	}
	l->mtu = (size_t)ifr.ifr_mtu;
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
		rc = -errno;
		goto out;
	}
	if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER) {
		GM_NET_WARN(&l->log,
		            "interface %s is not Ethernet; pick another with FI_GAMMA_IFACE\n",
		            l->ifname);
		rc = -FI_ENODEV;
		goto out;
	}
	memcpy(l->mac, ifr.ifr_hwaddr.sa_data, 6);
out:
	close(fd);
	return rc;
}

/* -FI_EPERM without a word: the caller then asks gamma-rawd. */
static int packet_socket(struct gm_link *l, const char *what)
{
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0) {
		int e = errno;

		if (e != EPERM && e != EACCES)
			GM_NET_WARN(&l->log, "socket(AF_PACKET) for %s: %s\n", what, strerror(e));
		return err_from_errno(e);
	}
	return fd;
}

/* No CAP_NET_RAW: all three sockets from the helper, or one clear warning. */
static int sockets_from_rawd(struct gm_link *l)
{
	char err[RAWD_MSG_MAX + 64];
	int fds[RAWD_NFDS];

	if (gm_rawd_open(l->rawd, l->ifname, l->ethertype, fds, err, sizeof(err))) {
		GM_NET_WARN(
		    &l->log,
		    "cannot open raw packet sockets on %s: this process lacks CAP_NET_RAW, and "
		    "the gamma-rawd helper failed: %s; fix: run as root, or install gamma-rawd "
		    "(make install runs setcap cap_net_raw+ep on it; FI_GAMMA_RAWD names it) "
		    "and allow %s in its rawd.conf\n",
		    l->ifname, err, l->ifname);
		return -FI_EPERM;
	}
	l->rx_fd = fds[RAWD_FD_RX];
	l->tx_fd[GM_CLASS_HIGH] = fds[RAWD_FD_TX_HIGH];
	l->tx_fd[GM_CLASS_LOW] = fds[RAWD_FD_TX_LOW];
	l->filter_locked = true;
	GM_NET_INFO(&l->log, "%s: packet sockets from gamma-rawd (%s)\n", l->ifname, l->rawd);
	return 0;
}

static int bind_iface(struct gm_link *l, int fd, uint16_t proto)
{
	struct sockaddr_ll sll = {
	    .sll_family = AF_PACKET,
	    .sll_protocol = htons(proto),
	    .sll_ifindex = l->ifindex,
	};

	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		int e = errno;

		GM_NET_WARN(&l->log, "bind packet socket to %s: %s\n", l->ifname, strerror(e));
		return e == ENETDOWN ? -FI_ENETDOWN : err_from_errno(e);
	}
	return 0;
}

static int set_tx_opts(int fd, int prio)
{
	int sndbuf = 4 << 20;

	if (setsockopt(fd, SOL_SOCKET, SO_PRIORITY, &prio, sizeof(prio)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) < 0)
		return -errno;
	return 0;
}

/*
 * Write every page of a fresh ring once, before frames use it.  On a VM
 * whose free memory goes back to the host (balloon free-page reporting, as
 * on Firecracker), the first write to each page faults in the host, and in
 * the data path that came to ~4 us per frame over the ring's first pass:
 * 9 KB MPI_Sendrecv exchanges at MTU 1500 took 60 us for their first ~700
 * rounds (4000 frames, one 8 MiB ring) and 30 us after; with this, 30 us
 * from the first (experiments/perf/README.md, "A fresh process").  A locked
 * add of 0 changes nothing: gamma-rawd's socket is bound already, so the
 * kernel may be filling a slot as we pass it.
 */
static void prefault_ring(void *ring, size_t len, size_t page)
{
	for (size_t off = 0; off < len; off += page)
		__atomic_fetch_add((uint8_t *)ring + off, 0, __ATOMIC_RELAXED);
}

static int setup_rx_ring(struct gm_link *l, unsigned ring_kb, unsigned min_frames)
{
	int v = TPACKET_V2;
	long page = sysconf(_SC_PAGESIZE);
	size_t ring_bytes = (size_t)ring_kb * 1024;
	struct tpacket_req req;

	if (setsockopt(l->rx_fd, SOL_PACKET, PACKET_VERSION, &v, sizeof(v)) < 0)
		return -errno;
	/* Slot: tpacket2 header, alignment slack, Ethernet header, MTU. */
	l->frame_size = TPACKET_ALIGN(TPACKET2_HDRLEN + 16 + ETH_HLEN + l->mtu + 4);
	l->block_size = (l->frame_size * 8 + page - 1) / page * page;
	while (l->block_size > (4ul << 20) && l->block_size > (size_t)page)
		l->block_size = (l->block_size / 2 + page - 1) / page * page;
	if (l->block_size < l->frame_size)
		l->block_size = (l->frame_size + page - 1) / page * page;
	l->frames_per_block = (unsigned)(l->block_size / l->frame_size);
	req.tp_block_size = (unsigned)l->block_size;
	req.tp_block_nr = (unsigned)(ring_bytes / l->block_size);
	/* A full send window from one peer must fit, or a burst overflows. */
	if (req.tp_block_nr * l->frames_per_block < min_frames)
		req.tp_block_nr = (min_frames + l->frames_per_block - 1) / l->frames_per_block;
	if (req.tp_block_nr < 2)
		req.tp_block_nr = 2;
	req.tp_frame_size = (unsigned)l->frame_size;
	req.tp_frame_nr = req.tp_block_nr * l->frames_per_block;
	if (setsockopt(l->rx_fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)) < 0) {
		int e = errno;

		GM_NET_WARN(&l->log,
		            "PACKET_RX_RING (%u blocks of %u): %s; try a smaller "
		            "FI_GAMMA_RX_RING\n",
		            req.tp_block_nr, req.tp_block_size, strerror(e));
		return -e;
	}
	l->frame_nr = req.tp_frame_nr;
	l->ring_len = (size_t)req.tp_block_nr * l->block_size;
	l->ring =
	    mmap(NULL, l->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_LOCKED, l->rx_fd, 0);
	if (l->ring == MAP_FAILED) /* MAP_LOCKED may exceed RLIMIT_MEMLOCK */
		l->ring = mmap(NULL, l->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, l->rx_fd, 0);
	if (l->ring == MAP_FAILED) {
		l->ring = NULL;
		return -errno;
	}
	prefault_ring(l->ring, l->ring_len, (size_t)page);
	return 0;
}

int gm_link_open(const struct gm_link_cfg *cfg, struct gm_link **out)
{
	const char *ifname = cfg->ifname;
	struct gm_link *l;
	int rc;

	if (!ifname || !*ifname || strlen(ifname) >= IF_NAMESIZE) {
		GM_NET_WARN(&cfg->log, "no usable interface name given; set FI_GAMMA_IFACE\n");
		return -FI_ENODEV;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return -FI_ENOMEM;
	l->rx_fd = l->tx_fd[0] = l->tx_fd[1] = -1;
	snprintf(l->ifname, sizeof(l->ifname), "%s", ifname);
	l->ethertype = cfg->ethertype;
	l->rawd = cfg->rawd;
	l->log = cfg->log;
	l->ifindex = (int)if_nametoindex(ifname);
	if (!l->ifindex) {
		GM_NET_WARN(&l->log,
		            "interface %s does not exist (ip -br link lists them); "
		            "set FI_GAMMA_IFACE\n",
		            ifname);
		rc = -FI_ENODEV;
		goto fail;
	}
	rc = query_iface(l);
	if (rc)
		goto fail;
	if (l->mtu < sizeof(struct gm_hdr) + 64 || l->mtu > 65535 - ETH_HLEN) {
		GM_NET_WARN(&l->log, "interface %s has MTU %zu, outside what gamma carries\n",
		            ifname, l->mtu);
		rc = -FI_EINVAL;
		goto fail;
	}
	/*
	 * Receive socket: protocol 0 until the ring and the filter are in
	 * place, then ETH_P_ALL (only ETH_P_ALL taps see outgoing frames, our
	 * loopback path; the filter checks the EtherType).
	 */
	rc = l->rx_fd = packet_socket(l, "receive");
	if (rc == -FI_EPERM)
		rc = sockets_from_rawd(l);
	if (rc < 0)
		goto fail;
	rc = setup_rx_ring(l, cfg->rx_ring_kb, cfg->min_frames);
	if (rc)
		goto fail;
	rc = gm_link_set_ports(l, NULL, 0);
	if (rc)
		goto fail;
	rc = bind_iface(l, l->rx_fd, ETH_P_ALL);
	if (rc)
		goto fail;
	rc = set_tx_opts(l->rx_fd, GM_PRIO_HIGH);
	if (rc)
		goto fail;
	for (int c = 0; c < 2; c++) {
		if (!l->filter_locked) {
			rc = l->tx_fd[c] = packet_socket(l, "transmit");
			if (rc < 0)
				goto fail;
		}
		/* Protocol 0: a transmit-only socket gets no copies of traffic. */
		rc = bind_iface(l, l->tx_fd[c], 0);
		if (rc)
			goto fail;
		rc = set_tx_opts(l->tx_fd[c], c == GM_CLASS_HIGH ? GM_PRIO_HIGH : GM_PRIO_LOW);
		if (rc)
			goto fail;
	}
	l->dst = (struct sockaddr_ll){
	    .sll_family = AF_PACKET,
	    .sll_protocol = htons(l->ethertype),
	    .sll_ifindex = l->ifindex,
	    .sll_halen = 6,
	};
	*out = l;
	return 0;
fail:
	gm_link_close(l);
	return rc;
}

void gm_link_close(struct gm_link *l)
{
	if (!l)
		return;
	if (l->ring)
		munmap(l->ring, l->ring_len);
	if (l->rx_fd >= 0)
		close(l->rx_fd);
	for (int c = 0; c < 2; c++)
		if (l->tx_fd[c] >= 0)
			close(l->tx_fd[c]);
	free(l);
}

void gm_link_mac(const struct gm_link *l, uint8_t mac[6])
{
	memcpy(mac, l->mac, 6);
}

unsigned gm_link_ring_frames(const struct gm_link *l)
{
	return l->frame_nr;
}

size_t gm_link_mtu(const struct gm_link *l)
{
	return l->mtu;
}

int gm_link_rx_fd(const struct gm_link *l)
{
	return l->rx_fd;
}

int gm_link_tx_fd(const struct gm_link *l, enum gm_class cls)
{
	return l->tx_fd[cls == GM_CLASS_LOW];
}

/* The socket a frame leaves by (see the top of this file). */
static int frame_fd(const struct gm_link *l, enum gm_class cls, const void *frame)
{
	if (cls == GM_CLASS_HIGH && memcmp(frame, l->mac, 6))
		return l->rx_fd;
	return l->tx_fd[cls == GM_CLASS_LOW];
}

/* The kernel filter: gm_filter.h. */
int gm_link_set_ports(struct gm_link *l, const uint16_t *ports, unsigned n)
{
	const struct gm_filter_spec spec = {
	    .ethertype = l->ethertype, .mac = l->mac, .ports = ports, .nports = n, .keep = 0xffff};
	struct sock_filter f[GM_FILTER_MAX_LEN];
	struct sock_fprog prog;

	if (l->filter_locked) /* gamma-rawd's filter stays; ports are checked on receipt */
		return 0;
	prog.len = (unsigned short)gm_filter_build(f, &spec);
	prog.filter = f;
	if (setsockopt(l->rx_fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0) {
		int e = errno;

		GM_NET_WARN(&l->log, "SO_ATTACH_FILTER on %s: %s\n", l->ifname, strerror(e));
		return -e;
	}
	return 0;
}

int gm_link_send(struct gm_link *l, enum gm_class cls, const struct gm_txf *frames, unsigned n)
{
	struct mmsghdr msg[64];
	unsigned done = 0;

	while (done < n) {
		int fd = frame_fd(l, cls, frames[done].iov[0].iov_base);
		unsigned m = 0;
		int rc;

		/* One batch: up to 64 frames that leave by the same socket. */
		while (m < 64 && done + m < n &&
		       frame_fd(l, cls, frames[done + m].iov[0].iov_base) == fd) {
			msg[m].msg_hdr = (struct msghdr){
			    .msg_name = &l->dst,
			    .msg_namelen = sizeof(l->dst),
			    .msg_iov = frames[done + m].iov,
			    .msg_iovlen = frames[done + m].iovcnt,
			};
			m++;
		}
		/* sll_addr is ignored for SOCK_RAW: the frame carries its own header. */
		rc = sendmmsg(fd, msg, m, MSG_DONTWAIT);
		if (rc > 0) {
			done += (unsigned)rc;
			continue;
		}
		if (rc < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		/* Dropped on the way out (qdisc full, link flapping): the
		 * retransmit timer recovers it, so count it as gone. */
		done++;
	}
	return (int)done;
}

static inline struct tpacket2_hdr *slot(const struct gm_link *l, unsigned i)
{
	return (struct tpacket2_hdr *)(l->ring + (size_t)(i / l->frames_per_block) * l->block_size +
	                               (size_t)(i % l->frames_per_block) * l->frame_size);
}

bool gm_link_rx_ready(const struct gm_link *l)
{
	const struct tpacket2_hdr *h = slot(l, l->rx_head);

	return __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER;
}

int gm_link_rx(struct gm_link *l, gm_link_rx_fn fn, void *ctx, unsigned max)
{
	unsigned n = 0;

	if (max > RX_BATCH_MAX)
		max = RX_BATCH_MAX;
	if (max > l->frame_nr)
		max = l->frame_nr;
	while (n < max) {
		struct tpacket2_hdr *h = slot(l, (l->rx_head + n) % l->frame_nr);

		if (!(__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER))
			break;
		n++;
	}
	/* Two passes: the high class of the batch first, then the low class. */
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; i < n; i++) {
			struct tpacket2_hdr *h = slot(l, (l->rx_head + i) % l->frame_nr);
			const uint8_t *f = (const uint8_t *)h + h->tp_mac;
			size_t len = h->tp_snaplen;
			int low = gm_frame_is_low(f, len);

			if (low == pass)
				fn(ctx, f, len);
		}
	}
	for (unsigned i = 0; i < n; i++) {
		struct tpacket2_hdr *h = slot(l, (l->rx_head + i) % l->frame_nr);

		__atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
	}
	l->rx_head = (l->rx_head + n) % l->frame_nr;
	return (int)n;
}

uint64_t gm_link_ring_drops(struct gm_link *l)
{
	struct tpacket_stats st;
	socklen_t len = sizeof(st);

	/* Reading the statistics resets them: accumulate. */
	if (!getsockopt(l->rx_fd, SOL_PACKET, PACKET_STATISTICS, &st, &len))
		l->drops += st.tp_drops;
	return l->drops;
}

int gm_link_port_reserve(struct gm_link *l, uint16_t port, uint16_t *got)
{
	return gm_portres_take(l->ethertype, l->ifindex, port, got, &l->log);
}
