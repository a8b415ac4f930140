/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The raw link: AF_PACKET sockets on one interface.  One receive socket
 * with a TPACKET_V2 mmap ring and a kernel filter for our EtherType and
 * open ports, which also sends the high class to other hosts; one transmit
 * socket per traffic class for the rest (gm_link.c says why), so the kernel
 * (tc) sees the class as the skb priority.  Also port number reservation,
 * race-free across the processes of a network namespace.
 */
#ifndef GM_LINK_H
#define GM_LINK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "gm_net.h"

/* SO_PRIORITY of each class: with the stock priomap, band 0 and band 2. */
#define GM_PRIO_HIGH 6
#define GM_PRIO_LOW  2

struct gm_link;

struct gm_link_cfg {
	const char *ifname;
	uint16_t ethertype;
	/* The receive ring is rx_ring_kb big, but holds at least min_frames frames. */
	unsigned rx_ring_kb, min_frames;
	const char *rawd; /* helper to ask for the sockets without CAP_NET_RAW (gm_rawd.h) */
	struct gm_log log;
};

int gm_link_open(const struct gm_link_cfg *cfg, struct gm_link **out);
void gm_link_close(struct gm_link *l);
void gm_link_mac(const struct gm_link *l, uint8_t mac[6]);
size_t gm_link_mtu(const struct gm_link *l);
/* Frames the receive ring holds. */
unsigned gm_link_ring_frames(const struct gm_link *l);
int gm_link_rx_fd(const struct gm_link *l);
int gm_link_tx_fd(const struct gm_link *l, enum gm_class cls);

/* Let frames to exactly these ports through the kernel filter. */
int gm_link_set_ports(struct gm_link *l, const uint16_t *ports, unsigned n);

/*
 * Send n frames (Ethernet header included, each in one or more pieces) with
 * one syscall.  Returns how many the kernel took; frames it dropped (qdisc
 * full) count as taken, the reliability layer retransmits them.
 */
int gm_link_send(struct gm_link *l, enum gm_class cls, const struct gm_txf *frames, unsigned n);

typedef void (*gm_link_rx_fn)(void *ctx, const void *frame, size_t len);
/* Hand up to max ready frames to fn, high class before low.  Returns count. */
int gm_link_rx(struct gm_link *l, gm_link_rx_fn fn, void *ctx, unsigned max);
/* True when a frame waits in the receive ring (no system call). */
bool gm_link_rx_ready(const struct gm_link *l);
/* Frames the kernel dropped because the ring was full (since open). */
uint64_t gm_link_ring_drops(struct gm_link *l);

/*
 * Reserve a port number on this interface (port 0: any free one) among this
 * user's ports (gm_portres.c).  Returns a descriptor that holds it until
 * gm_link_port_release (or the process dies), or -FI_EADDRINUSE.
 */
int gm_link_port_reserve(struct gm_link *l, uint16_t port, uint16_t *got);
void gm_link_port_release(int fd);
/* The same by EtherType and interface index; log: where a warning goes (may be NULL). */
int gm_portres_take(uint16_t ethertype, int ifindex, uint16_t port, uint16_t *got,
                    const struct gm_log *log);

#endif /* GM_LINK_H */
