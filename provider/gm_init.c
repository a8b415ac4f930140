/* SPDX-License-Identifier: BSD-2-Clause */
/* Provider entry point: fi_prov_ini, parameters, and the provider object. */
#include "gm.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gm_defaults.h"
#include "gm_net.h"

static void gm_cleanup(void);

/* Byte counts: far beyond any memory, far below overflow. */
#define BYTES_MAX (1ll << 50)

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
    .dq = GM_DEFAULT_DQ,
    .low_share = GM_DEFAULT_LOW_SHARE,
    .default_class = GM_DEFAULT_CLASS,
    .window = 0, /* gm_net_open: by the MTU */
    .rto_us = GM_DEFAULT_RTO_US,
    .peer_timeout_ms = GM_DEFAULT_PEER_TIMEOUT_MS,
    .rail_timeout_ms = GM_DEFAULT_RAIL_TIMEOUT_MS,
    .ux_max = GM_DEFAULT_UX_MAX,
    .ux_peer_max = GM_DEFAULT_UX_PEER_MAX,
    .ux_unknown_max = GM_DEFAULT_UX_UNKNOWN_MAX,
    .ux_unknown_hold_ms = GM_DEFAULT_UX_UNKNOWN_HOLD_MS,
    .rx_ring_kb = GM_DEFAULT_RX_RING_KB,
    .rndv_threshold = GM_DEFAULT_RNDV_THRESHOLD,
    .rawd = GM_RAWD_DEFAULT,
    .progress_idle_us = GM_DEFAULT_PROGRESS_IDLE_US,
    .idle_sleep_ms = GM_DEFAULT_IDLE_SLEEP_MS,
};

static void fi_log_hook(void *ctx, enum gm_log_level level, const char *func, int line,
                        const char *msg)
{
	enum fi_log_level l = level == GM_LOG_WARN ? FI_LOG_WARN : FI_LOG_INFO;

	if (fi_log_enabled(&gm_prov, l, FI_LOG_CORE))
		fi_log(&gm_prov, l, FI_LOG_CORE, func, line, "%s", msg);
}

const struct gm_log gm_fi_log = {.fn = fi_log_hook};

void gm_config_error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* libfabric's log is silent unless FI_LOG_LEVEL asks: a setting the
	 * user got wrong must be seen all the same. */
	fprintf(stderr, "libfabric gamma: %s", msg);
	GM_WARN(FI_LOG_CORE, "%s", msg);
}

/*
 * A numeric FI_GAMMA_<NAME>: true with *out when it is set to a whole
 * number (decimal, 0x hex) within [lo, hi]; set to anything else, it is
 * reported and false returned, so the default stays.  libfabric's own
 * parser would take "abc" as 0 and "64k" as 64 without a word.
 */
static bool param_num(const char *name, long long lo, long long hi, long long *out)
{
	char var[64], *end;
	const char *s;
	long long v;
	size_t i;

	i = (size_t)snprintf(var, sizeof(var), "FI_GAMMA_");
	for (; *name && i + 1 < sizeof(var); name++)
		var[i++] = (char)toupper((unsigned char)*name);
	var[i] = '\0';
	s = getenv(var);
	if (!s)
		return false;
	errno = 0;
	v = strtoll(s, &end, 0);
	while (end != s && isspace((unsigned char)*end))
		end++;
	if (end == s || *end || errno || v < lo || v > hi) {
		gm_config_error("%s=%s: expected a whole number from %lld to %lld; "
		                "using the default\n",
		                var, s, lo, hi);
		return false;
	}
	*out = v;
	return true;
}

/* The numeric parameters: where each goes and what it may be. */
static void gm_params_read_nums(void)
{
	static const struct {
		const char *name;
		long long lo, hi;
		int *i;    /* the destination: an int... */
		size_t *z; /* ...or a size_t */
	} nums[] = {
	    /* EtherTypes start at 0x0600: below, the field is an 802.3 length. */
	    {"ethertype", 0x0600, 0xffff, &gm_params.ethertype, NULL},
	    {"low_share", 1, INT_MAX, &gm_params.low_share, NULL},
	    {"window", 1, INT_MAX, &gm_params.window, NULL},
	    {"rto", 1, INT_MAX, &gm_params.rto_us, NULL},
	    {"peer_timeout", 1, INT_MAX, &gm_params.peer_timeout_ms, NULL},
	    {"rail_timeout", 1, INT_MAX, &gm_params.rail_timeout_ms, NULL},
	    {"rx_ring", 1, INT_MAX, &gm_params.rx_ring_kb, NULL},
	    {"rndv_threshold", 0, BYTES_MAX, NULL, &gm_params.rndv_threshold},
	    {"ooo_max", 1, INT_MAX, &gm_params.ooo_max, NULL},
	    {"ooo_peer_max", 1, INT_MAX, &gm_params.ooo_peer_max, NULL},
	    {"peer_max", 1, INT_MAX, &gm_params.peer_max, NULL},
	    {"progress_idle", 1, INT_MAX, &gm_params.progress_idle_us, NULL},
	    {"idle_sleep", 0, INT_MAX, &gm_params.idle_sleep_ms, NULL},
	    {"ux_max", 0, BYTES_MAX, NULL, &gm_params.ux_max},
	    {"ux_peer_max", 0, BYTES_MAX, NULL, &gm_params.ux_peer_max},
	    {"ux_unknown_max", 0, BYTES_MAX, NULL, &gm_params.ux_unknown_max},
	    {"ux_unknown_hold", 0, INT_MAX, &gm_params.ux_unknown_hold_ms, NULL},
	};
	long long v;

	for (size_t k = 0; k < sizeof(nums) / sizeof(nums[0]); k++) {
		if (!param_num(nums[k].name, nums[k].lo, nums[k].hi, &v))
			continue;
		if (nums[k].i)
			*nums[k].i = (int)v;
		else
			*nums[k].z = (size_t)v;
	}
}

/* Caps on what unexpected messages may hold (gm_msg_ux.c). */
static void gm_params_define_ux(void)
{
	fi_param_define(&gm_prov, "ux_max", FI_PARAM_SIZE_T,
	                "Bytes of unexpected messages an endpoint holds; beyond, a peer's "
	                "frames wait, unacknowledged, until receives take some (default: " GM_STR(
	                    GM_DEFAULT_UX_MAX) ")");
	fi_param_define(
	    &gm_prov, "ux_peer_max", FI_PARAM_SIZE_T,
	    "Bytes of unexpected messages an endpoint holds from one peer (default: " GM_STR(
	        GM_DEFAULT_UX_PEER_MAX) ")");
	fi_param_define(&gm_prov, "ux_unknown_max", FI_PARAM_SIZE_T,
	                "Bytes an endpoint holds of messages from sources not (yet) in its address "
	                "vector; beyond, their frames wait, unacknowledged (default: " GM_STR(
	                    GM_DEFAULT_UX_UNKNOWN_MAX) ")");
	fi_param_define(&gm_prov, "ux_unknown", FI_PARAM_STRING,
	                "Messages from sources not in the address vector: hold (delivered only "
	                "once the source is inserted), deliver (with FI_ADDR_NOTAVAIL, as "
	                "fi_cq(3) has it), or auto: hold when the endpoint has an auth_key "
	                "(default: auto)");
	fi_param_define(&gm_prov, "ux_unknown_hold", FI_PARAM_INT,
	                "Milliseconds a message from a source not in the address vector waits for "
	                "the source to be inserted before it is dropped (default: " GM_STR(
	                    GM_DEFAULT_UX_UNKNOWN_HOLD_MS) ")");
}

static void gm_params_read_ux(void)
{
	char *s = NULL;

	if (!fi_param_get_str(&gm_prov, "ux_unknown", &s) && s) {
		if (!strcasecmp(s, "hold"))
			gm_params.ux_unknown = GM_UNKNOWN_HOLD;
		else if (!strcasecmp(s, "deliver"))
			gm_params.ux_unknown = GM_UNKNOWN_DELIVER;
		else if (strcasecmp(s, "auto"))
			gm_config_error("FI_GAMMA_UX_UNKNOWN=%s: expected hold, deliver or auto; "
			                "using auto\n",
			                s);
	}
}

static void gm_params_define(void)
{
	fi_param_define(&gm_prov, "iface", FI_PARAM_STRING,
	                "Ethernet interface(s) to use, comma separated, each a domain; "
	                "eth0+eth1 is one domain over both (rails: failover, up to " GM_STR(
	                    GM_RAILS_MAX) ") (default: every up, non-loopback Ethernet "
	                                  "interface)");
	fi_param_define(&gm_prov, "ethertype", FI_PARAM_INT,
	                "EtherType of gamma frames (default: " GM_STR(GM_ETHERTYPE_DEFAULT) ")");
	fi_param_define(&gm_prov, "dq", FI_PARAM_BOOL,
	                "Double queue: serve high-class traffic before low-class (default: " GM_STR(
	                    GM_DEFAULT_DQ) "; "
	                                   "0 = one FIFO)");
	fi_param_define(&gm_prov, "low_share", FI_PARAM_INT,
	                "Starvation guard: when both queues wait, send one low-class frame after "
	                "this many high-class frames (default: " GM_STR(GM_DEFAULT_LOW_SHARE) ")");
	fi_param_define(&gm_prov, "default_class", FI_PARAM_STRING,
	                "Traffic class of endpoints whose tclass is FI_TC_UNSPEC: high or low "
	                "(default: high)");
	fi_param_define(&gm_prov, "window", FI_PARAM_INT,
	                "Frames in flight per peer before the sender waits for acks "
	                "(default: " GM_STR(GM_DEFAULT_WINDOW) ", at most " GM_STR(
	                    GM_DEFAULT_WINDOW_BYTES) " bytes of them and half the receive ring)");
	fi_param_define(&gm_prov, "rto", FI_PARAM_INT,
	                "Retransmission timeout floor in microseconds; above it the timeout "
	                "follows the measured round trip (default: " GM_STR(GM_DEFAULT_RTO_US) ")");
	fi_param_define(&gm_prov, "peer_timeout", FI_PARAM_INT,
	                "Milliseconds without an ack, or of silence while an operation waits on "
	                "the peer (it is probed meanwhile), before a peer is declared dead and "
	                "its operations complete with FI_EIO (default: " GM_STR(
	                    GM_DEFAULT_PEER_TIMEOUT_MS) ")");
	fi_param_define(
	    &gm_prov, "rail_timeout", FI_PARAM_INT,
	    "Several rails (FI_GAMMA_IFACE=a+b): milliseconds a rail's frames may "
	    "wait unacknowledged while another rail to the same peer answers, "
	    "before they move to that rail; a rail whose link is down moves at "
	    "its first retransmission timeout (default: " GM_STR(GM_DEFAULT_RAIL_TIMEOUT_MS) ")");
	fi_param_define(&gm_prov, "rx_ring", FI_PARAM_INT,
	                "Receive ring size in KiB (default: " GM_STR(GM_DEFAULT_RX_RING_KB) ")");
	fi_param_define(&gm_prov, "rndv_threshold", FI_PARAM_SIZE_T,
	                "Messages at least this large use rendezvous: the receiver pulls them "
	                "once matched (default: " GM_STR(GM_DEFAULT_RNDV_THRESHOLD) ")");
	fi_param_define(&gm_prov, "rawd", FI_PARAM_STRING,
	                "Helper that opens the raw packet sockets when this process lacks "
	                "CAP_NET_RAW (gamma-rawd; default: " GM_RAWD_DEFAULT "; none: "
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
	    "frame is dropped ('peers refused' / 'reclaimed'; default: " GM_STR(
	        GM_DEFAULT_PEER_MAX) ")");
	fi_param_define(&gm_prov, "require_auth", FI_PARAM_BOOL,
	                "Refuse endpoints without a secret, an auth_key of 16 to 64 bytes (domain "
	                "or endpoint attribute).  With a secret every frame carries a MAC: "
	                "frames without the secret are dropped before they touch any state, and a "
	                "peer restart must be proven.  Without one (no auth_key, or a 4-byte one) "
	                "frames carry a CRC-32C and the 4-byte key: that catches corruption and "
	                "keeps jobs apart, but any station on the segment can forge or replay "
	                "frames (default: 0)");
	fi_param_define(&gm_prov, "progress_idle", FI_PARAM_INT,
	                "Microseconds the application must leave a domain alone (no CQ, counter "
	                "or data call) before the provider's progress thread acknowledges, "
	                "drains the ring and answers rendezvous for it; resolution: the kernel "
	                "tick, 1-4 ms (default: " GM_STR(GM_DEFAULT_PROGRESS_IDLE_US) ")");
	fi_param_define(&gm_prov, "idle_sleep", FI_PARAM_INT,
	                "Milliseconds fi_cq_read may sleep in the CQ's wait object once it has "
	                "been polled in vain back to back for 20 us, so that ranks outnumbering "
	                "cores give the core away (Open MPI mtl/ofi cannot block); the next "
	                "frame ends the sleep. 0: fi_cq_read never sleeps (default: " GM_STR(
	                    GM_DEFAULT_IDLE_SLEEP_MS) ")");
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
	gm_params_read_nums();
	if (!fi_param_get_bool(&gm_prov, "dq", &v))
		gm_params.dq = v;
	s = NULL;
	if (!fi_param_get_str(&gm_prov, "default_class", &s) && s) {
		if (!strcasecmp(s, "low"))
			gm_params.default_class = GM_CLASS_LOW;
		else if (!strcasecmp(s, "high"))
			gm_params.default_class = GM_CLASS_HIGH;
		else
			gm_config_error(
			    "FI_GAMMA_DEFAULT_CLASS=%s: expected high or low; using high\n", s);
	}
	if (!fi_param_get_bool(&gm_prov, "require_auth", &v))
		gm_params.require_auth = v;
	if (!fi_param_get_bool(&gm_prov, "stats", &v))
		gm_params.stats = v;
	s = NULL;
	if (!fi_param_get_str(&gm_prov, "rawd", &s) && s)
		gm_params.rawd = strcmp(s, "none") ? s : "";
	gm_params_read_ux();
}

/* libfabric's fi_fini, at exit too, right before it unloads us. */
static void gm_cleanup(void)
{
	gm_domains_quiesce();
}

FI_EXT_INI
{
	gm_params_define();
	gm_params_read();
	return &gm_prov;
}
