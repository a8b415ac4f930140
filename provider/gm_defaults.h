/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Every default, in one place: the provider's parameters (gm_init.c) start
 * from them and quote them in their fi_info -e help, the net core falls
 * back on them for a 0 in struct gm_net_params, the libfabric objects on
 * them for a 0 in their attributes, and tests that run "with the provider's
 * defaults" take them from here.  Plain literals, so that GM_STR can quote
 * them.  (FI_GAMMA_RAWD's default, the installed gamma-rawd, is the build's:
 * GM_RAWD_DEFAULT comes from provider/Makefile.am.)
 */
#ifndef GM_DEFAULTS_H
#define GM_DEFAULTS_H

#include "gm_wire.h" /* GM_ETHERTYPE_DEFAULT: part of the wire format */

#define GM_STR_(x) #x
#define GM_STR(x)  GM_STR_(x)

/* The net core (gm_net.h struct gm_net_params). */
#define GM_DEFAULT_DQ        1
#define GM_DEFAULT_LOW_SHARE 8
#define GM_DEFAULT_WINDOW    1024
/*
 * ...but no more frames than fill this many bytes, unless FI_GAMMA_WINDOW
 * says otherwise.  Every frame in flight sits in a sender's buffer and in a
 * slot of the receiver's ring, so a window of 1024 MTU-65000 frames (64 MiB
 * on each side, twice that of ring) streams through cold memory: capping
 * it at 4 MiB (64 such frames) took MTU-65000 streaming from 3.7 to 5.6
 * GB/s here; 4 MiB still covers a round trip of 600 us at 6 GB/s.
 */
#define GM_DEFAULT_WINDOW_BYTES    4194304
#define GM_DEFAULT_RTO_US          2000
#define GM_DEFAULT_PEER_TIMEOUT_MS 10000
/* Several rails: frames unacknowledged this long on one rail while another
 * answers move to the other (gm_msg_rails.c). */
#define GM_DEFAULT_RAIL_TIMEOUT_MS 50
/* Several rails: a rendezvous pull larger than this goes in chunks of it,
 * striped over the rails (gm_msg_stripe.c). */
#define GM_STRIPE_CHUNK_BYTES 262144
#define GM_DEFAULT_RX_RING_KB 8192
#define GM_DEFAULT_PEER_MAX   4096

/* The message protocol. */
#define GM_DEFAULT_CLASS GM_CLASS_HIGH /* gm_net.h */
/*
 * Above btl gamma's largest send (64 KiB and ob1's header), so that ob1's
 * own rendezvous is not followed by ours; medium messages then go as one
 * burst, without the RTS/CTS round trip (64 KiB half round trip at MTU
 * 9000: 42.4 -> 35.5 us).
 */
#define GM_DEFAULT_RNDV_THRESHOLD     262144
#define GM_DEFAULT_UX_MAX             268435456 /* 256 MiB */
#define GM_DEFAULT_UX_PEER_MAX        67108864  /* 64 MiB */
#define GM_DEFAULT_UX_UNKNOWN_MAX     1048576   /* 1 MiB */
#define GM_DEFAULT_UX_UNKNOWN_HOLD_MS 10000
/*
 * Frames of ours to one peer queued in the reliability layer, not yet
 * handed to the link, before a message's next frame waits.  Where the
 * kernel's path per frame is as slow as the link (veth, 1 Gbit/s: a
 * sendmmsg of 374 frames took 4.4 ms), a CTS we owe the peer queued behind
 * a whole message, and two ranks sending each other rendezvous messages
 * took turns instead of sending at once: MG's exchange of 532 KB messages
 * (two each way) 12.7-14.4 ms, 9.2-9.5 ms with 32 here (the wire's 9.0).
 * CTSs go ahead of queued messages (gm_msg_send.c, conn_queue_ctrl).
 */
#define GM_TX_AHEAD 32
/*
 * Sends and receives an endpoint holds at once (struct gm_msg_cfg), then
 * -FI_EAGAIN: 16 times the sizes advertised in fi_info (gm.h GM_TX_SIZE,
 * GM_RX_SIZE), which Open MPI's mtl/ofi does not heed (it retries a refused
 * receive until it is taken), but bounded: with the protocol's own share,
 * at most 23 MB of send and 9 MB of receive state.
 */
#define GM_DEFAULT_TX_MAX 16384
#define GM_DEFAULT_RX_MAX 16384

/* The libfabric objects, for a 0 in their attributes. */
#define GM_DEFAULT_CQ_SIZE  1024 /* fi_cq_attr.size */
#define GM_DEFAULT_EQ_SIZE  1024 /* fi_eq_attr.size */
#define GM_DEFAULT_AV_COUNT 64   /* fi_av_attr.count: entries allocated at open */

/* Progress (gm_domain.c). */
#define GM_DEFAULT_PROGRESS_IDLE_US 10000
#define GM_DEFAULT_IDLE_SLEEP_MS    0 /* fi_cq_read never sleeps */

#endif /* GM_DEFAULTS_H */
