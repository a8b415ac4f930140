/* SPDX-License-Identifier: BSD-2-Clause */
/* Provider entry point: fi_prov_ini, parameters, and the provider object. */
#include "gm.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gm_net.h"

static void gm_cleanup(void);

struct fi_provider gm_prov = {
    .version = GM_PROV_VERSION,
    .fi_version = GM_FI_VERSION,
    .name = GM_PROV_NAME,
    .getinfo = gm_getinfo,
    .fabric = gm_fabric_open,
    .cleanup = gm_cleanup,
};

struct gm_params gm_params = {
    .ethertype = GM_ETHERTYPE_DEFAULT,
    .dq = true,
    .low_share = 8,
    .default_class = GM_CLASS_HIGH,
    .window = 1024,
    .rto_us = 2000,
    .peer_timeout_ms = 10000,
    .ux_max = 256u << 20,
    .ux_peer_max = 64u << 20,
    .ux_unknown_max = 1u << 20,
    .ux_unknown_hold_ms = 10000,
    .rx_ring_kb = 8192,
    .rndv_threshold = 65536,
    .progress_idle_us = 10000,
};

/* Caps on what unexpected messages may hold (gm_msg.c). */
static void gm_params_define_ux(void)
{
	fi_param_define(&gm_prov, "ux_max", FI_PARAM_SIZE_T,
	                "Bytes of unexpected messages an endpoint holds; beyond, new ones are "
	                "dropped and counted (default: 268435456)");
	fi_param_define(&gm_prov, "ux_peer_max", FI_PARAM_SIZE_T,
	                "Bytes of unexpected messages an endpoint holds from one peer (default: "
	                "67108864)");
	fi_param_define(&gm_prov, "ux_unknown_max", FI_PARAM_SIZE_T,
	                "Bytes an endpoint holds of messages from sources not (yet) in its address "
	                "vector, which are never delivered until the source is inserted (default: "
	                "1048576)");
	fi_param_define(&gm_prov, "ux_unknown", FI_PARAM_STRING,
	                "Messages from sources not in the address vector: hold (delivered only "
	                "once the source is inserted), deliver (with FI_ADDR_NOTAVAIL, as "
	                "fi_cq(3) has it), or auto: hold when the endpoint has an auth_key "
	                "(default: auto)");
	fi_param_define(&gm_prov, "ux_unknown_hold", FI_PARAM_INT,
	                "Milliseconds a message from a source not in the address vector waits for "
	                "the source to be inserted before it is dropped (default: 10000)");
}

static void gm_params_read_ux(void)
{
	char *s = NULL;
	size_t z;
	int v;

	if (!fi_param_get_size_t(&gm_prov, "ux_max", &z))
		gm_params.ux_max = z;
	if (!fi_param_get_size_t(&gm_prov, "ux_peer_max", &z))
		gm_params.ux_peer_max = z;
	if (!fi_param_get_size_t(&gm_prov, "ux_unknown_max", &z))
		gm_params.ux_unknown_max = z;
	if (!fi_param_get_int(&gm_prov, "ux_unknown_hold", &v) && v >= 0)
		gm_params.ux_unknown_hold_ms = v;
	if (!fi_param_get_str(&gm_prov, "ux_unknown", &s) && s) {
		if (!strcasecmp(s, "hold"))
			gm_params.ux_unknown = GM_UNKNOWN_HOLD;
		else if (!strcasecmp(s, "deliver"))
			gm_params.ux_unknown = GM_UNKNOWN_DELIVER;
		else if (strcasecmp(s, "auto"))
			GM_WARN(FI_LOG_CORE,
			        "FI_GAMMA_UX_UNKNOWN=%s: expected hold, deliver or auto; "
			        "using auto\n",
			        s);
	}
}

static void gm_params_define(void)
{
	fi_param_define(&gm_prov, "iface", FI_PARAM_STRING,
	                "Ethernet interface(s) to use, comma separated (default: every up, "
	                "non-loopback Ethernet interface)");
	fi_param_define(&gm_prov, "ethertype", FI_PARAM_INT,
	                "EtherType of gamma frames (default: 0x88B5)");
	fi_param_define(&gm_prov, "dq", FI_PARAM_BOOL,
	                "Double queue: serve high-class traffic before low-class (default: 1; "
	                "0 = one FIFO)");
	fi_param_define(&gm_prov, "low_share", FI_PARAM_INT,
	                "Starvation guard: when both queues wait, send one low-class frame after "
	                "this many high-class frames (default: 8)");
	fi_param_define(&gm_prov, "default_class", FI_PARAM_STRING,
	                "Traffic class of endpoints whose tclass is FI_TC_UNSPEC: high or low "
	                "(default: high)");
	fi_param_define(
	    &gm_prov, "window", FI_PARAM_INT,
	    "Frames in flight per peer before the sender waits for acks (default: 1024)");
	fi_param_define(&gm_prov, "rto", FI_PARAM_INT,
	                "Retransmission timeout floor in microseconds; above it the timeout "
	                "follows the measured round trip (default: 2000)");
	fi_param_define(&gm_prov, "peer_timeout", FI_PARAM_INT,
	                "Milliseconds without an ack, or of silence while an operation waits on "
	                "the peer (it is probed meanwhile), before a peer is declared dead and "
	                "its operations complete with FI_EIO (default: 10000)");
	fi_param_define(&gm_prov, "rx_ring", FI_PARAM_INT,
	                "Receive ring size in KiB (default: 8192)");
	fi_param_define(&gm_prov, "rndv_threshold", FI_PARAM_SIZE_T,
	                "Messages at least this large use rendezvous: the receiver pulls them "
	                "once matched (default: 65536)");
	fi_param_define(&gm_prov, "rawd", FI_PARAM_STRING,
	                "Helper that opens the raw packet sockets when this process lacks "
	                "CAP_NET_RAW (tools/gamma-rawd; default: " GM_RAWD_DEFAULT "; none: "
	                "never use it)");
	fi_param_define(&gm_prov, "ooo_max", FI_PARAM_INT,
	                "Out-of-order frames held for reordering, all peers of an interface "
	                "together; more are dropped (their senders retransmit) and counted as "
	                "'reorder drops', so that transmit always finds buffers (default: half the "
	                "buffer pool, at most the pool less one window)");
	fi_param_define(&gm_prov, "ooo_peer_max", FI_PARAM_INT,
	                "Out-of-order frames held per peer (default and maximum: FI_GAMMA_WINDOW)");
	fi_param_define(
	    &gm_prov, "peer_max", FI_PARAM_INT,
	    "Peers that received frames may create per interface; past it the oldest "
	    "one the application does not use (nothing sent to it) is reclaimed, or the "
	    "frame is dropped ('peers refused' / 'reclaimed'; default: 4096)");
	fi_param_define(
	    &gm_prov, "require_auth", FI_PARAM_BOOL,
	    "Refuse endpoints without a secret, an auth_key of 16 to 64 bytes (domain "
	    "or endpoint attribute).  With a secret every frame carries a Poly1305 MAC: "
	    "frames without the secret are dropped before they touch any state, and a "
	    "peer restart must be proven.  Without one (no auth_key, or a 4-byte one) "
	    "frames carry a CRC-32C and the 4-byte key: that catches corruption and "
	    "keeps jobs apart, but any station on the segment can forge or replay "
	    "frames (default: 0)");
	fi_param_define(&gm_prov, "progress_idle", FI_PARAM_INT,
	                "Microseconds the application must leave a domain alone (no CQ, counter "
	                "or data call) before the provider's progress thread acknowledges, "
	                "drains the ring and answers rendezvous for it; resolution: the kernel "
	                "tick, 1-4 ms (default: 10000)");
	fi_param_define(&gm_prov, "idle_sleep", FI_PARAM_INT,
	                "Milliseconds fi_cq_read may sleep in the CQ's wait object once it has "
	                "been polled in vain back to back for 20 us, so that ranks outnumbering "
	                "cores give the core away (Open MPI mtl/ofi cannot block); the next "
	                "frame ends the sleep. 0: fi_cq_read never sleeps (default: 0)");
	fi_param_define(&gm_prov, "stats", FI_PARAM_BOOL,
	                "Print frame, retransmission and drop counters when a domain closes "
	                "(default: 0)");
	gm_params_define_ux();
}

static void gm_params_read(void)
{
	char *s = NULL;
	int v;

	if (!fi_param_get_str(&gm_prov, "iface", &s) && s && *s)
		gm_params.iface = s;
	if (!fi_param_get_int(&gm_prov, "ethertype", &v))
		gm_params.ethertype = v;
	if (!fi_param_get_bool(&gm_prov, "dq", &v))
		gm_params.dq = v;
	if (!fi_param_get_int(&gm_prov, "low_share", &v) && v > 0)
		gm_params.low_share = v;
	s = NULL;
	if (!fi_param_get_str(&gm_prov, "default_class", &s) && s) {
		if (!strcasecmp(s, "low"))
			gm_params.default_class = GM_CLASS_LOW;
		else if (!strcasecmp(s, "high"))
			gm_params.default_class = GM_CLASS_HIGH;
		else
			GM_WARN(FI_LOG_CORE,
			        "FI_GAMMA_DEFAULT_CLASS=%s: expected high or low; using high\n", s);
	}
	if (!fi_param_get_int(&gm_prov, "window", &v) && v > 0)
		gm_params.window = v;
	if (!fi_param_get_int(&gm_prov, "rto", &v) && v > 0)
		gm_params.rto_us = v;
	if (!fi_param_get_int(&gm_prov, "peer_timeout", &v) && v > 0)
		gm_params.peer_timeout_ms = v;
	if (!fi_param_get_int(&gm_prov, "rx_ring", &v) && v > 0)
		gm_params.rx_ring_kb = v;
	size_t z;
	if (!fi_param_get_size_t(&gm_prov, "rndv_threshold", &z))
		gm_params.rndv_threshold = z;
	if (!fi_param_get_int(&gm_prov, "ooo_max", &v) && v > 0)
		gm_params.ooo_max = v;
	if (!fi_param_get_int(&gm_prov, "ooo_peer_max", &v) && v > 0)
		gm_params.ooo_peer_max = v;
	if (!fi_param_get_int(&gm_prov, "peer_max", &v) && v > 0)
		gm_params.peer_max = v;
	if (!fi_param_get_bool(&gm_prov, "require_auth", &v))
		gm_params.require_auth = v;
	if (!fi_param_get_bool(&gm_prov, "stats", &v))
		gm_params.stats = v;
	if (!fi_param_get_int(&gm_prov, "progress_idle", &v) && v > 0)
		gm_params.progress_idle_us = v;
	if (!fi_param_get_int(&gm_prov, "idle_sleep", &v) && v >= 0)
		gm_params.idle_sleep_ms = v;
	gm_params_read_ux();
}

static void gm_cleanup(void)
{
}

FI_EXT_INI
{
	gm_params_define();
	gm_params_read();
	return &gm_prov;
}
