/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gm_net.h glue: one AF_PACKET link (gm_link.c) under one reliability
 * engine (gm_rel.c, which owns the double queue), plus port reservation
 * and the kernel filter's port list.  Clock: CLOCK_MONOTONIC, microseconds.
 */
#define _GNU_SOURCE
#include "gm_net.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "gm_defaults.h"
#include "gm_link.h"
#include "gm_rel.h"

#define RX_BATCH 256

struct gm_net_port {
	struct gm_port *port;
	uint16_t num;
	int fd; /* holds the port number reservation */
};

struct gm_net {
	struct gm_link *link;
	struct gm_rel *rel;
	struct gm_net_port *ports;
	unsigned nports, cap;
	uint64_t now;         /* time of the current progress pass */
	unsigned idle_passes; /* progress passes without reading the clock */
	bool kicked;          /* a send transmitted since the last progress pass */
	char ifname[32];
	bool stats;
	struct gm_log log;
};

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int net_send(void *ctx, enum gm_class cls, const struct gm_txf *frames, unsigned n)
{
	struct gm_net *net = ctx;

	return gm_link_send(net->link, cls, frames, n);
}

/* Rails: up with carrier.  Asked on retransmission timeouts only. */
static bool net_link_up(void *ctx)
{
	struct gm_net *net = ctx;
	struct ifreq ifr = {0};

	memcpy(ifr.ifr_name, net->ifname, sizeof(ifr.ifr_name) - 1);
	if (ioctl(gm_link_rx_fd(net->link), SIOCGIFFLAGS, &ifr))
		return true; /* cannot tell: the rail timeout decides */
	return (ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING);
}

int gm_net_open(const struct gm_net_params *p, struct gm_net **out)
{
	struct gm_net *net;
	uint16_t ethertype = p->ethertype ? p->ethertype : GM_ETHERTYPE_DEFAULT;
	unsigned window = p->window;
	struct gm_rel_cfg cfg;
	struct gm_rel_link rl;
	int rc;

	net = calloc(1, sizeof(*net));
	if (!net)
		return -FI_ENOMEM;
	snprintf(net->ifname, sizeof(net->ifname), "%s", p->ifname ? p->ifname : "");
	net->stats = p->stats;
	net->log = p->log;
	rc = gm_link_open(
	    &(struct gm_link_cfg){
	        .ifname = p->ifname,
	        .ethertype = ethertype,
	        .rx_ring_kb = p->rx_ring_kb ? p->rx_ring_kb : GM_DEFAULT_RX_RING_KB,
	        .min_frames = 2 * window, /* 0: as many as rx_ring_kb holds */
	        .rawd = p->rawd,
	        .log = p->log,
	    },
	    &net->link);
	if (rc)
		goto fail;
	if (!window) {
		size_t by_bytes = GM_DEFAULT_WINDOW_BYTES / gm_link_mtu(net->link);

		window = by_bytes < GM_DEFAULT_WINDOW ? (unsigned)by_bytes : GM_DEFAULT_WINDOW;
		if (window > gm_link_ring_frames(net->link) / 2)
			window = gm_link_ring_frames(net->link) / 2;
		if (!window)
			window = 1;
	}
	cfg = (struct gm_rel_cfg){
	    .ethertype = ethertype,
	    .dq = p->dq,
	    .low_share = p->low_share,
	    .window = window,
	    .rto_us = p->rto_us ? p->rto_us : GM_DEFAULT_RTO_US,
	    .peer_timeout_ms = p->peer_timeout_ms ? p->peer_timeout_ms : GM_DEFAULT_PEER_TIMEOUT_MS,
	    .max_frame = gm_link_mtu(net->link),
	    .ooo_max = p->ooo_max,
	    .ooo_peer_max = p->ooo_peer_max,
	    .peer_max = p->peer_max,
	    .stall_us = p->rail_timeout_ms * 1000u,
	};
	gm_link_mac(net->link, cfg.mac);
	rl = (struct gm_rel_link){.send = net_send, .up = net_link_up, .ctx = net};
	rc = gm_rel_create(&cfg, &rl, &net->rel);
	if (rc) {
		GM_NET_WARN(&net->log,
		            "%s: bad reliability parameters (window %u, rto %u us, "
		            "peer timeout %u ms)\n",
		            net->ifname, cfg.window, cfg.rto_us, cfg.peer_timeout_ms);
		goto fail;
	}
	*out = net;
	return 0;
fail:
	gm_link_close(net->link);
	free(net);
	return rc;
}

static void print_stats(const struct gm_net *net)
{
	struct gm_net_stats s;

	gm_net_get_stats(net, &s);
	fprintf(
	    stderr,
	    "gamma stats %s: tx %lu frames %lu B (high %lu low %lu), rx %lu frames %lu B; "
	    "retransmits %lu (fast %lu), timeouts %lu, dup %lu, ooo %lu, acks sent %lu rcvd %lu; "
	    "bad csum %lu hdr %lu port %lu key %lu version %lu; ring drops %lu; probes %lu; "
	    "bad msg crc %lu; peers failed %lu; bad mac %lu; reorder drops %lu; peers refused %lu "
	    "reclaimed %lu; restarts %lu challenges %lu; rails failed %lu frames moved %lu revived "
	    "%lu voided %lu; tx calls %lu; rx refused %lu\n",
	    net->ifname, s.tx_frames, s.tx_bytes, s.tx_high, s.tx_low, s.rx_frames, s.rx_bytes,
	    s.retransmits, s.fast_retransmits, s.timeouts, s.dup_dropped, s.ooo_buffered,
	    s.acks_sent, s.acks_rcvd, s.bad_csum, s.bad_hdr, s.bad_port, s.bad_key, s.bad_version,
	    s.ring_full_drops, s.probes, s.bad_msg_crc, s.peers_failed, s.bad_mac, s.ooo_dropped,
	    s.peers_refused, s.peers_reclaimed, s.restarts, s.restart_challenges, s.rails_failed,
	    s.frames_moved, s.rails_revived, s.frames_voided, s.tx_calls, s.rx_refused);
}

void gm_net_close(struct gm_net *net)
{
	if (!net)
		return;
	/* Last chance for owed acks (delayed ones too) and queued frames to
	   leave, while the ports that owe them still exist. */
	for (unsigned i = 0; i < net->nports; i++)
		gm_port_drain(net->ports[i].port);
	gm_rel_flush(net->rel, now_us());
	if (net->stats)
		print_stats(net);
	while (net->nports)
		gm_port_close(net->ports[0].port);
	gm_rel_destroy(net->rel);
	gm_link_close(net->link);
	free(net->ports);
	free(net);
}

void gm_net_mac(const struct gm_net *net, uint8_t mac[6])
{
	gm_link_mac(net->link, mac);
}

size_t gm_net_max_body(const struct gm_net *net)
{
	return gm_link_mtu(net->link) - sizeof(struct gm_hdr);
}

static void rx_one(void *ctx, const void *frame, size_t len)
{
	struct gm_net *net = ctx;

	gm_rel_input(net->rel, frame, len, net->now);
}

/*
 * A busy-polling application calls progress millions of times a second,
 * mostly for nothing; reading the clock was a third of such an idle pass.
 * With no frame waiting and nothing queued to send, only timers (delayed
 * acks, retransmissions) could be due, and they can wait a few passes.
 */
#define IDLE_PASSES_PER_CLOCK 8

int gm_net_progress(struct gm_net *net)
{
	bool ready = gm_link_rx_ready(net->link);
	int n = 0;

	net->kicked = false;
	if (!ready && !gm_rel_queued(net->rel) && ++net->idle_passes < IDLE_PASSES_PER_CLOCK)
		return 0;
	net->idle_passes = 0;
	net->now = now_us();
	/* An idle pass that only came for the timers has no ring to walk. */
	if (ready)
		n = gm_link_rx(net->link, rx_one, net, RX_BATCH);
	return n + gm_rel_flush(net->rel, net->now);
}

/*
 * Nothing queued, nothing to transmit: the timers and owed acks wait for
 * the next progress pass, as they would have a microsecond later.  Every
 * send and receive call flushes every rail of a multi-rail domain, and
 * most find nothing there (the clock read and the pass cost 2-3 % of an
 * 8-byte round trip on a second rail).
 */
int gm_net_flush(struct gm_net *net)
{
	return gm_rel_queued(net->rel) ? gm_rel_flush(net->rel, now_us()) : 0;
}

void gm_net_kick(struct gm_net *net)
{
	if (net->kicked || !gm_rel_queued(net->rel))
		return;
	net->kicked = true;
	gm_rel_flush(net->rel, now_us());
}

int gm_net_timeout_ms(const struct gm_net *net)
{
	uint64_t deadline = gm_rel_next_deadline(net->rel), now = now_us();

	if (gm_rel_queued(net->rel)) /* refused by the kernel, or a burst (gm_net_kick) */
		return 1;
	if (deadline == UINT64_MAX)
		return -1;
	return deadline <= now ? 0 : (int)((deadline - now + 999) / 1000);
}

void gm_net_wait_prepare(struct gm_net *net, int timeout_ms, struct gm_net_waitset *ws)
{
	uint64_t now = now_us(), deadline;

	gm_rel_flush(net->rel, now);
	deadline = gm_rel_next_deadline(net->rel);
	if (timeout_ms >= 0 && now + (uint64_t)timeout_ms * 1000 < deadline)
		deadline = now + (uint64_t)timeout_ms * 1000;
	ws->bounded = deadline != UINT64_MAX;
	if (ws->bounded) {
		uint64_t d = deadline > now ? deadline - now : 0;

		ws->ts.tv_sec = (time_t)(d / 1000000);
		ws->ts.tv_nsec = (long)(d % 1000000) * 1000;
	}
	ws->pfd[0] = (struct pollfd){.fd = gm_link_rx_fd(net->link), .events = POLLIN};
	ws->nfds = 1;
	/* The kernel refused frames: wait for room, also on the receive socket,
	 * by which high-class frames to other hosts leave. */
	if (gm_rel_queued(net->rel)) {
		ws->pfd[0].events |= POLLOUT;
		ws->pfd[1] = (struct pollfd){.fd = gm_link_tx_fd(net->link, GM_CLASS_HIGH),
		                             .events = POLLOUT};
		ws->pfd[2] = (struct pollfd){.fd = gm_link_tx_fd(net->link, GM_CLASS_LOW),
		                             .events = POLLOUT};
		ws->nfds = 3;
	}
}

int gm_net_wait_block(struct gm_net_waitset *ws)
{
	int rc = ppoll(ws->pfd, ws->nfds, ws->bounded ? &ws->ts : NULL, NULL);

	if (rc < 0)
		return errno == EINTR ? 0 : -errno;
	return rc;
}

int gm_net_wait(struct gm_net *net, int timeout_ms)
{
	struct gm_net_waitset ws;

	gm_net_wait_prepare(net, timeout_ms, &ws);
	return gm_net_wait_block(&ws);
}

int gm_net_fd(const struct gm_net *net)
{
	return gm_link_rx_fd(net->link);
}

void gm_net_get_stats(const struct gm_net *net, struct gm_net_stats *st)
{
	*st = *gm_rel_stats(net->rel);
	st->ring_full_drops = gm_link_ring_drops(net->link);
}

void gm_net_count_bad_msg(struct gm_net *net)
{
	gm_rel_stats(net->rel)->bad_msg_crc++;
}

static int update_filter(struct gm_net *net)
{
	uint16_t nums[net->nports + 1];

	for (unsigned i = 0; i < net->nports; i++)
		nums[i] = net->ports[i].num;
	return gm_link_set_ports(net->link, nums, net->nports);
}

int gm_port_open(struct gm_net *net, uint16_t port, enum gm_class cls, const struct gm_auth *auth,
                 const struct gm_port_ops *ops, void *ctx, struct gm_port **out)
{
	struct gm_port *p;
	struct {
		uint32_t session;
		uint64_t nonce0;
	} inc;
	uint16_t num;
	int fd, rc;

	if (!ops || !ops->recv)
		return -FI_EINVAL;
	if (net->nports == net->cap) {
		unsigned cap = net->cap ? net->cap * 2 : 4;
		struct gm_net_port *np = realloc(net->ports, cap * sizeof(*np));

		if (!np)
			return -FI_ENOMEM;
		net->ports = np;
		net->cap = cap;
	}
	fd = gm_link_port_reserve(net->link, port, &num);
	if (fd < 0) {
		if (fd == -FI_EADDRINUSE && port)
			GM_NET_INFO(&net->log, "%s: port %u is in use\n", net->ifname, port);
		else
			GM_NET_WARN(&net->log, "%s: cannot reserve a port: %s\n", net->ifname,
			            fi_strerror(-fd));
		return fd;
	}
	/* The nonces must not repeat under a secret (gm_mac.h): no fallback. */
	if (getrandom(&inc, sizeof(inc), 0) != sizeof(inc)) {
		GM_NET_WARN(&net->log, "%s: getrandom failed\n", net->ifname);
		close(fd);
		return -FI_EOTHER;
	}
	rc = gm_rel_port_open(net->rel, num, cls, auth, inc.session, inc.nonce0, ops, ctx, &p);
	if (rc) {
		gm_link_port_release(fd);
		return rc;
	}
	net->ports[net->nports++] = (struct gm_net_port){.port = p, .num = num, .fd = fd};
	rc = update_filter(net);
	if (rc) {
		gm_port_close(p);
		return rc;
	}
	*out = p;
	return 0;
}

void gm_port_drain(struct gm_port *port)
{
	gm_rel_port_drain(port, now_us());
}

void gm_port_close(struct gm_port *port)
{
	struct gm_net *net = gm_rel_link_ctx(gm_rel_port_rel(port));

	for (unsigned i = 0; i < net->nports; i++) {
		if (net->ports[i].port != port)
			continue;
		gm_link_port_release(net->ports[i].fd);
		net->ports[i] = net->ports[--net->nports];
		break;
	}
	gm_rel_port_close(port);
	update_filter(net);
}
