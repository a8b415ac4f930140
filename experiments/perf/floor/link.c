/* gamma-floor's raw link (link.h).  The receive ring is TPACKET_V2 of the
 * same size as gamma's default (FI_GAMMA_RX_RING, 8 MiB), so that the floor
 * and gamma lose frames to an overrun ring under the same conditions. */
#define _GNU_SOURCE
#include "link.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define RING_BYTES (8u << 20)

static int fail(struct fl_link *l, const char *ifname, const char *what)
{
	int e = errno;

	fprintf(stderr, "gamma-floor: %s on %s: %s%s\n", what, ifname, strerror(e),
	        e == EPERM ? " (raw sockets need root or CAP_NET_RAW)" : "");
	fl_link_close(l);
	return -e;
}

static int setup_ring(struct fl_link *l)
{
	int v = TPACKET_V2;
	long page = sysconf(_SC_PAGESIZE);
	struct tpacket_req req;

	/* Slot: tpacket2 header, the kernel's alignment slack, Ethernet header, MTU. */
	l->frame_size = TPACKET_ALIGN(TPACKET2_HDRLEN + 16 + ETH_HLEN + l->mtu + 4);
	l->block_size = (l->frame_size * 8 + page - 1) / page * page;
	l->per_block = (unsigned)(l->block_size / l->frame_size);
	req.tp_block_size = (unsigned)l->block_size;
	req.tp_block_nr = (unsigned)(RING_BYTES / l->block_size);
	if (req.tp_block_nr < 2)
		req.tp_block_nr = 2;
	req.tp_frame_size = (unsigned)l->frame_size;
	req.tp_frame_nr = req.tp_block_nr * l->per_block;
	if (setsockopt(l->fd, SOL_PACKET, PACKET_VERSION, &v, sizeof(v)) < 0 ||
	    setsockopt(l->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)) < 0)
		return -1;
	l->frame_nr = req.tp_frame_nr;
	l->ring_len = (size_t)req.tp_block_nr * l->block_size;
	l->ring = mmap(NULL, l->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, l->fd, 0);
	if (l->ring == MAP_FAILED) {
		l->ring = NULL;
		return -1;
	}
	return 0;
}

int fl_link_open(struct fl_link *l, const char *ifname, uint16_t ethertype)
{
	struct ifreq ifr = {0};
	int sndbuf = 4 << 20, one = 1;

	memset(l, 0, sizeof(*l));
	l->fd = l->tx_fd = -1;
	/* Protocol 0 until the ring exists: nothing queues before it. */
	l->fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (l->fd < 0)
		return fail(l, ifname, "raw packet socket");
	if (strlen(ifname) >= sizeof(ifr.ifr_name)) {
		errno = ENAMETOOLONG;
		return fail(l, ifname, "interface name");
	}
	strcpy(ifr.ifr_name, ifname);
	if (ioctl(l->fd, SIOCGIFMTU, &ifr) < 0)
		return fail(l, ifname, "SIOCGIFMTU");
	l->mtu = (unsigned)ifr.ifr_mtu;
	if (ioctl(l->fd, SIOCGIFHWADDR, &ifr) < 0)
		return fail(l, ifname, "SIOCGIFHWADDR");
	memcpy(l->mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	if (setup_ring(l))
		return fail(l, ifname, "PACKET_RX_RING");
	/* gamma's transmit sockets have the same send buffer. */
	if (setsockopt(l->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) < 0)
		return fail(l, ifname, "SO_SNDBUF");
	/* Frames other sockets of this host send are not ours (kernel >= 4.20;
	 * older ones show them as PACKET_OUTGOING, which peek skips). */
	setsockopt(l->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	l->to = (struct sockaddr_ll){.sll_family = AF_PACKET,
	                             .sll_protocol = htons(ethertype),
	                             .sll_ifindex = (int)if_nametoindex(ifname),
	                             .sll_halen = ETH_ALEN};
	if (!l->to.sll_ifindex)
		return fail(l, ifname, "if_nametoindex");
	if (bind(l->fd, (struct sockaddr *)&l->to, sizeof(l->to)) < 0)
		return fail(l, ifname, "bind");
	return 0;
}

void fl_link_close(struct fl_link *l)
{
	if (l->ring)
		munmap(l->ring, l->ring_len);
	if (l->tx_ring)
		munmap(l->tx_ring, l->ring_len);
	if (l->fd >= 0)
		close(l->fd);
	if (l->tx_fd >= 0)
		close(l->tx_fd);
	l->ring = l->tx_ring = NULL;
	l->fd = l->tx_fd = -1;
}

void fl_link_set_peer(struct fl_link *l, const uint8_t mac[ETH_ALEN])
{
	memcpy(l->to.sll_addr, mac, ETH_ALEN);
}

static struct tpacket2_hdr *slot(struct fl_link *l)
{
	return (void *)(l->ring + (size_t)(l->head / l->per_block) * l->block_size +
	                (size_t)(l->head % l->per_block) * l->frame_size);
}

const uint8_t *fl_link_peek(struct fl_link *l, unsigned *len, unsigned *caplen)
{
	for (;;) {
		struct tpacket2_hdr *h = slot(l);
		const struct sockaddr_ll *sll;

		if (!(__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER))
			return NULL;
		sll = (const void *)((uint8_t *)h + TPACKET_ALIGN(sizeof(*h)));
		if (sll->sll_pkttype != PACKET_OUTGOING) {
			*len = h->tp_len;
			*caplen = h->tp_snaplen;
			return (uint8_t *)h + h->tp_mac;
		}
		fl_link_release(l);
	}
}

double fl_link_stamp(struct fl_link *l)
{
	const struct tpacket2_hdr *h = slot(l);

	return (double)h->tp_sec + (double)h->tp_nsec * 1e-9;
}

void fl_link_eth(const struct fl_link *l, uint8_t out[ETH_HLEN])
{
	memcpy(out, l->to.sll_addr, ETH_ALEN);
	memcpy(out + ETH_ALEN, l->mac, ETH_ALEN);
	memcpy(out + 2 * ETH_ALEN, &l->to.sll_protocol, 2);
}

void fl_link_release(struct fl_link *l)
{
	__atomic_store_n(&slot(l)->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
	l->head = (l->head + 1) % l->frame_nr;
}

int fl_link_send(struct fl_link *l, struct iovec *iov, int n)
{
	struct msghdr m = {
	    .msg_name = &l->to, .msg_namelen = sizeof(l->to), .msg_iov = iov, .msg_iovlen = n};

	return sendmsg(l->fd, &m, MSG_DONTWAIT) < 0 ? -errno : 0;
}

int fl_link_sendmmsg(struct fl_link *l, struct mmsghdr *m, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		m[i].msg_hdr.msg_name = &l->to;
		m[i].msg_hdr.msg_namelen = sizeof(l->to);
	}
	int rc = sendmmsg(l->fd, m, n, MSG_DONTWAIT);

	return rc < 0 ? -errno : rc;
}

int fl_link_tx_open(struct fl_link *l, const char *ifname)
{
	int v = TPACKET_V2, e;
	struct tpacket_req req = {.tp_block_size = (unsigned)l->block_size,
	                          .tp_block_nr = (unsigned)(l->ring_len / l->block_size),
	                          .tp_frame_size = (unsigned)l->frame_size,
	                          .tp_frame_nr = l->frame_nr};

	l->tx_fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (l->tx_fd < 0 || setsockopt(l->tx_fd, SOL_PACKET, PACKET_VERSION, &v, sizeof(v)) < 0 ||
	    setsockopt(l->tx_fd, SOL_PACKET, PACKET_TX_RING, &req, sizeof(req)) < 0)
		goto fail;
	l->tx_ring = mmap(NULL, l->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, l->tx_fd, 0);
	if (l->tx_ring == MAP_FAILED) {
		l->tx_ring = NULL;
		goto fail;
	}
	if (bind(l->tx_fd, (struct sockaddr *)&l->to, sizeof(l->to)) < 0)
		goto fail;
	return 0;
fail:
	e = errno;
	fprintf(stderr, "gamma-floor: PACKET_TX_RING on %s: %s\n", ifname, strerror(e));
	return -e;
}

static struct tpacket2_hdr *tx_slot(struct fl_link *l)
{
	return (void *)(l->tx_ring + (size_t)(l->tx_head / l->per_block) * l->block_size +
	                (size_t)(l->tx_head % l->per_block) * l->frame_size);
}

uint8_t *fl_link_tx_slot(struct fl_link *l)
{
	struct tpacket2_hdr *h = tx_slot(l);

	if (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) != TP_STATUS_AVAILABLE)
		return NULL;
	/* TPACKET_V2 transmit: the frame follows the aligned header. */
	return (uint8_t *)h + TPACKET_ALIGN(sizeof(*h));
}

void fl_link_tx_commit(struct fl_link *l, unsigned len)
{
	struct tpacket2_hdr *h = tx_slot(l);

	h->tp_len = len;
	__atomic_store_n(&h->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
	l->tx_head = (l->tx_head + 1) % l->frame_nr;
}

int fl_link_tx_flush(struct fl_link *l)
{
	return send(l->tx_fd, NULL, 0, MSG_DONTWAIT) < 0 ? -errno : 0;
}
