/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The receive socket's kernel filter (gm_link.c attaches it), a classic BPF
 * program: our EtherType; incoming frames addressed to us (PACKET_HOST), or
 * outgoing frames addressed to our own MAC (local communication); and
 * gm_hdr.dst_port one of ours.  Everything else never reaches the ring.
 */
#ifndef GM_FILTER_H
#define GM_FILTER_H

#include <stdint.h>

#include <linux/filter.h>

/*
 * Ports compared one by one; with more, the filter lets every port through
 * and the reliability layer sorts them out (a classic BPF conditional jump
 * reaches at most 255 instructions ahead).
 */
#define GM_FILTER_MAX_PORTS 200
#define GM_FILTER_MAX_LEN   (12 + GM_FILTER_MAX_PORTS)

/* Writes the program into f (room for GM_FILTER_MAX_LEN); returns its length. */
unsigned gm_filter_build(struct sock_filter *f, uint16_t ethertype, const uint8_t mac[6],
                         const uint16_t *ports, unsigned n);

#endif /* GM_FILTER_H */
