/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The filter gamma-rawd locks on every receive socket it hands out
 * (rawd_sock.c): the provider's receive filter (provider/gm_filter.h) for
 * this interface, our EtherType and frames to this host, with no port
 * check: the provider's ports come and go with its endpoints and a locked
 * filter cannot follow them, so the provider checks ports on receipt.
 * The interface is checked because the socket's holder may re-bind it.
 */
#include "rawd.h"
#include "gm_filter.h"

unsigned rawd_rx_filter(struct sock_filter *f, int ifindex, uint16_t ethertype,
                        const uint8_t mac[6])
{
	const struct gm_filter_spec spec = {
	    .ethertype = ethertype,
	    .mac = mac,
	    .ifindex = ifindex,
	    .any_port = true,
	    .keep = 0x40000, /* whole frames, whatever the MTU */
	};

	return gm_filter_build(f, &spec);
}
