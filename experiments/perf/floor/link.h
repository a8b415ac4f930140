/* gamma-floor's raw link: one AF_PACKET socket bound to an interface and an
 * EtherType, a TPACKET_V2 receive ring, and plain sendmsg/sendmmsg. */
#ifndef FL_LINK_H
#define FL_LINK_H

#include <net/ethernet.h>
#include <linux/if_packet.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h> /* struct mmsghdr: needs _GNU_SOURCE */
#include <sys/uio.h>

struct fl_link {
	int fd;
	unsigned mtu;
	uint8_t mac[ETH_ALEN];
	struct sockaddr_ll to; /* the peer: ifindex, EtherType, MAC */
	uint8_t *ring;
	size_t ring_len, block_size, frame_size;
	unsigned frame_nr, per_block, head;
	/* PACKET_TX_RING (--tests ring): a socket of its own, the receive
	 * ring's size and slot layout. */
	int tx_fd;
	uint8_t *tx_ring;
	unsigned tx_head;
};

/* 0, or -errno with the reason on stderr (-EPERM: no CAP_NET_RAW). */
int fl_link_open(struct fl_link *l, const char *ifname, uint16_t ethertype);
void fl_link_close(struct fl_link *l);
void fl_link_set_peer(struct fl_link *l, const uint8_t mac[ETH_ALEN]);

/* The next frame another station sent us (Ethernet header first), or NULL.
 * *len is the frame's length on the wire, *caplen what the slot holds.
 * Every frame returned must be given back with fl_link_release. */
const uint8_t *fl_link_peek(struct fl_link *l, unsigned *len, unsigned *caplen);
void fl_link_release(struct fl_link *l);
/* When the kernel received the frame peek returned (CLOCK_REALTIME, s). */
double fl_link_stamp(struct fl_link *l);
/* The Ethernet header of a frame to the peer. */
void fl_link_eth(const struct fl_link *l, uint8_t out[ETH_HLEN]);

/* One frame made of n pieces, one system call: 0, or -errno (EAGAIN and
 * ENOBUFS mean "try again": socket buffer or qdisc full). */
int fl_link_send(struct fl_link *l, struct iovec *iov, int n);
/* Up to n prepared messages in one sendmmsg: how many left, or -errno. */
int fl_link_sendmmsg(struct fl_link *l, struct mmsghdr *m, unsigned n);

/*
 * The transmit ring: frames written into mapped slots, handed to the kernel
 * by one send() per batch; the kernel builds each skb around the slot's
 * pages instead of copying them.  fl_link_tx_open: 0 or -errno (message on
 * stderr).  fl_link_tx_slot: where the next frame (Ethernet header first)
 * goes, or NULL while the kernel still holds that slot.
 * fl_link_tx_commit queues it; fl_link_tx_flush sends what is queued:
 * 0 or -errno.
 */
int fl_link_tx_open(struct fl_link *l, const char *ifname);
uint8_t *fl_link_tx_slot(struct fl_link *l);
void fl_link_tx_commit(struct fl_link *l, unsigned len);
int fl_link_tx_flush(struct fl_link *l);

#endif
