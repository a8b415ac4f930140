/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The receive socket's kernel filter, a classic BPF program: our EtherType;
 * incoming frames addressed to us (PACKET_HOST), or outgoing frames
 * addressed to our own MAC (local communication); then, for the provider's
 * own socket (gm_link.c), gm_hdr.dst_port one of ours.  Everything else
 * never reaches the ring.  gamma-rawd locks the same program, less the
 * ports and plus the interface, on the sockets it hands out
 * (rawd/rawd_filter.c).
 */
#ifndef GM_FILTER_H
#define GM_FILTER_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/filter.h>

/*
 * Ports compared one by one; with more, the filter lets every port through
 * and the reliability layer sorts them out (a classic BPF conditional jump
 * reaches at most 255 instructions ahead).
 */
#define GM_FILTER_MAX_PORTS 200
#define GM_FILTER_MAX_LEN   (14 + GM_FILTER_MAX_PORTS)

struct gm_filter_spec {
	uint16_t ethertype;
	const uint8_t *mac; /* the interface's: outgoing frames only to it */
	/* > 0: frames of this interface only (for a socket its holder may re-bind). */
	int ifindex;
	/*
	 * gm_hdr.dst_port one of these (none: no frame passes), or any port
	 * with more than GM_FILTER_MAX_PORTS of them or with any_port.
	 */
	const uint16_t *ports;
	unsigned nports;
	bool any_port;
	uint32_t keep; /* bytes of an accepted frame the socket keeps */
};

/* Writes the program into f (room for GM_FILTER_MAX_LEN); returns its length. */
unsigned gm_filter_build(struct sock_filter *f, const struct gm_filter_spec *spec);

#endif /* GM_FILTER_H */
