/*
 * gm-nettest: drives gm_net (the provider's lower half) over a real
 * interface.  Modes:
 *   recv     -i IF -p PORT -n N            receive N messages, verify order and every byte;
 *                                          says "recv: streaming" after the first 1000;
 *                                          -l FILE: then keep acknowledging until FILE
 *                                          exists (the test creates it when the sender
 *                                          is done), so the sender gets its last acks
 *   send     -i IF -p PORT -d MAC:PORT -n N  send N messages of varying size (<= -s),
 *                                          wait until every one is acked
 *   pingpong -i IF -p PORT -d MAC:PORT -n N [-c]  8-byte ping-pong (-c: client, timed)
 *   self     -i IF -p PORT -n N [-c]       two ports in this process, send one to the other
 *                                          (-c: ping-pong between them, timed)
 * Common: -t SECONDS overall timeout (default 60), -T MS peer timeout,
 * -r RTO_US, -w WINDOW, -L low class, -k KEY, -x (sender: expect the peer to
 * fail: every outstanding frame must fail with -FI_EIO), -q quiet, -b busy-poll
 * (otherwise every mode sleeps in gm_net_wait when idle).
 * Exit 0 only when the data checked out.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "gm_defaults.h"
#include "gm_net.h"

static struct {
	const char *mode, *ifname, *linger;
	uint16_t port;
	struct gm_addr dst;
	bool have_dst, client, expect_fail, low, quiet, busy;
	uint64_t n;
	size_t max_size;
	unsigned timeout_s, peer_timeout_ms, rto_us, window;
	uint32_t key;
} o = {.timeout_s = 60,
       .peer_timeout_ms = GM_DEFAULT_PEER_TIMEOUT_MS,
       .rto_us = GM_DEFAULT_RTO_US,
       .window = 256,
       .key = 0x5EED};

static struct {
	uint64_t next, delivered, bytes, sent, acked, failed;
	int fail_err, peer_err;
	bool peer_failed, bad;
	struct gm_peer *peer;
	uint64_t pong;
	double t_last_ack, t_fail;
} s;

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Message idx carries the bytes of base[] from offset idx % 4093 on:
 * distinct for neighbours, and cheap to produce and compare. */
static uint8_t base[65536 + 4096];

static void base_init(void)
{
	uint32_t x = 2463534242u;

	for (size_t i = 0; i < sizeof(base); i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		base[i] = (uint8_t)x;
	}
}

static const uint8_t *pattern(uint64_t idx)
{
	return base + idx % 4093;
}

static size_t max_payload(struct gm_net *net)
{
	size_t m = gm_net_max_body(net) - sizeof(struct gm_msg_hdr);

	return o.max_size && o.max_size < m ? o.max_size : m;
}

static size_t msg_len(uint64_t idx, size_t maxp)
{
	if (idx % 97 == 0)
		return maxp; /* full frames now and then */
	return (size_t)((idx * 7919u) % (maxp + 1));
}

static size_t g_maxp;

static bool on_recv(void *ctx, struct gm_peer *peer, const struct gm_rx_frame *f)
{
	struct gm_msg_hdr m;
	const uint8_t *p;
	size_t len;

	if (f->hdr->type != GM_FT_EAGER || f->body_len < sizeof(m)) {
		fprintf(stderr, "FAIL: unexpected frame type %u len %zu\n", f->hdr->type,
		        f->body_len);
		s.bad = true;
		return true;
	}
	gm_msg_hdr_decode(f->body, &m);
	s.peer = peer;
	if (!strcmp(o.mode, "pingpong")) {
		/* ctx 2: the echoing port of "self -c"; otherwise the role is -c */
		bool server = ctx ? ctx == (void *)2 : !o.client;

		if (!ctx || !server)
			s.pong++;
		if (server) {
			int rc =
			    gm_peer_send(peer, GM_FT_EAGER, f->body, f->body_len, NULL, 0, NULL);
			if (rc)
				fprintf(stderr, "pong send: %s\n", fi_strerror(-rc)), s.bad = true;
		}
		return true;
	}
	len = f->body_len - sizeof(m);
	if (m.msg_id != (uint32_t)s.next || len != msg_len(s.next, g_maxp) || m.msg_len != len) {
		fprintf(stderr,
		        "FAIL: got message %u (%zu bytes), expected %" PRIu64 " (%zu bytes)\n",
		        m.msg_id, len, s.next, msg_len(s.next, g_maxp));
		s.bad = true;
		return true;
	}
	p = (const uint8_t *)f->body + sizeof(m);
	if (memcmp(p, pattern(s.next), len)) {
		size_t j = 0;

		while (p[j] == pattern(s.next)[j])
			j++;
		fprintf(stderr, "FAIL: message %" PRIu64 " byte %zu is %u, want %u\n", s.next, j,
		        p[j], pattern(s.next)[j]);
		s.bad = true;
		return true;
	}
	s.bytes += len;
	s.next++;
	s.delivered++;
	return true;
}

static void on_acked(void *ctx, struct gm_peer *peer, void *cookie)
{
	s.acked++;
	s.t_last_ack = now_s();
}

static void on_failed_frame(void *ctx, struct gm_peer *peer, void *cookie, int err)
{
	s.failed++;
	s.fail_err = err;
}

static void on_peer_failed(void *ctx, struct gm_peer *peer, int err)
{
	s.peer_failed = true;
	s.peer_err = err;
	s.t_fail = now_s();
}

static const struct gm_port_ops ops = {
    .recv = on_recv,
    .acked = on_acked,
    .failed_frame = on_failed_frame,
    .peer_failed = on_peer_failed,
};

static int parse_dst(const char *arg)
{
	unsigned m[6], port;

	if (sscanf(arg, "%x:%x:%x:%x:%x:%x/%u", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5], &port) !=
	        7 ||
	    port > 65535)
		return -1;
	for (int i = 0; i < 6; i++)
		o.dst.mac[i] = (uint8_t)m[i];
	o.dst.port = (uint16_t)port;
	o.have_dst = true;
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
	        "usage: gm-nettest recv|send|pingpong|self -i IF -p PORT [-d MAC/PORT] [-n N] "
	        "[-s MAXSIZE] [-t S] [-T MS] [-r US] [-w N] [-k KEY] [-l FILE] [-c] [-x] [-L] [-q] "
	        "[-b]\n");
	exit(2);
}

static void send_one(struct gm_net *net, struct gm_peer *pr)
{
	uint64_t idx = s.sent;
	size_t len = msg_len(idx, g_maxp);
	struct gm_msg_hdr m = {.msg_id = (uint32_t)idx, .msg_len = len};
	uint8_t th[sizeof(m)];
	struct iovec iov = {(void *)pattern(idx), len};
	int rc;

	gm_msg_hdr_encode(th, &m);
	rc = gm_peer_send(pr, GM_FT_EAGER, th, sizeof(th), &iov, 1, (void *)(uintptr_t)(idx + 1));
	if (rc == -FI_EAGAIN)
		return;
	if (rc) {
		if (!o.expect_fail)
			fprintf(stderr, "FAIL: gm_peer_send: %s\n", fi_strerror(-rc));
		s.bad = !o.expect_fail;
		s.peer_failed = true;
		return;
	}
	s.sent++;
}

static int run(struct gm_net *net, struct gm_port *port)
{
	double t0 = now_s(), deadline = t0 + o.timeout_s, t_start = 0, cpu0 = cpu_s();
	struct gm_peer *pr = o.have_dst ? gm_peer_get(port, &o.dst) : NULL;
	uint64_t warm = o.n / 10;

	if (o.have_dst && !pr)
		return fprintf(stderr, "FAIL: gm_peer_get\n"), 1;
	g_maxp = max_payload(net);
	if (!strcmp(o.mode, "recv")) {
		bool streaming = false;

		while (s.delivered < o.n && !s.bad && now_s() < deadline) {
			if (!gm_net_progress(net) && !o.busy)
				gm_net_wait(net, 10);
			/* a test that acts mid-stream waits for this, not for a time */
			if (!streaming && s.delivered >= 1000) {
				streaming = true;
				fprintf(stderr, "recv: streaming, %" PRIu64 " messages verified\n",
				        s.delivered);
			}
		}
		double cpu = cpu_s() - cpu0;

		while (o.linger && access(o.linger, F_OK) && now_s() < deadline)
			if (!gm_net_progress(net))
				gm_net_wait(net, 10);
		if (s.bad || s.delivered < o.n) {
			fprintf(stderr, "FAIL: received %" PRIu64 " of %" PRIu64 " messages\n",
			        s.delivered, o.n);
			return 1;
		}
		printf("OK recv %" PRIu64 " messages, %" PRIu64
		       " payload bytes verified; %.2f us CPU per message\n",
		       s.delivered, s.bytes, cpu / (double)s.delivered * 1e6);
		return 0;
	}
	if (!strcmp(o.mode, "send")) {
		double t1;

		t_start = s.t_last_ack = now_s();
		while (!s.bad && now_s() < deadline) {
			if (s.peer_failed)
				break;
			uint64_t before = s.sent;

			while (s.sent < o.n && gm_peer_can_send(pr) && !s.peer_failed)
				send_one(net, pr);
			if (!gm_net_progress(net) && s.sent == before && !o.busy)
				gm_net_wait(net, 10);
			if (s.acked == o.n)
				break;
		}
		t1 = now_s();
		if (o.expect_fail) {
			double lag = s.t_fail - s.t_last_ack;

			if (!s.peer_failed || s.peer_err != -FI_EIO || s.failed == 0 ||
			    s.fail_err != -FI_EIO || s.acked + s.failed != s.sent) {
				fprintf(stderr,
				        "FAIL: expected peer failure: failed=%d err=%d, frames "
				        "sent %" PRIu64 " acked %" PRIu64 " failed %" PRIu64 "\n",
				        s.peer_failed, s.peer_err, s.sent, s.acked, s.failed);
				return 1;
			}
			if (lag > 3.0 * o.peer_timeout_ms / 1000 + 1) {
				fprintf(stderr,
				        "FAIL: peer failure detected %.2f s after the last ack\n",
				        lag);
				return 1;
			}
			printf("OK peer failed (-FI_EIO) %.3f s after the last ack: sent %" PRIu64
			       " acked %" PRIu64 " failed %" PRIu64 "\n",
			       lag, s.sent, s.acked, s.failed);
			return 0;
		}
		if (s.bad || s.acked != o.n) {
			fprintf(stderr,
			        "FAIL: %" PRIu64 " of %" PRIu64 " acked (sent %" PRIu64
			        ", failed %" PRIu64 ")\n",
			        s.acked, o.n, s.sent, s.failed);
			return 1;
		}
		{
			struct gm_net_stats st;
			uint64_t bytes = 0;

			for (uint64_t i = 0; i < o.n; i++)
				bytes += msg_len(i, g_maxp) + sizeof(struct gm_msg_hdr);
			gm_net_get_stats(net, &st);
			printf("OK send %" PRIu64 " messages acked; %.0f frames/s, %.1f MB/s "
			       "(max body %zu); retransmits %" PRIu64 " (fast %" PRIu64
			       "), timeouts %" PRIu64 ", bad csum %" PRIu64
			       "; %.2f us CPU per message\n",
			       o.n, o.n / (t1 - t_start), bytes / (t1 - t_start) / 1e6,
			       gm_net_max_body(net), st.retransmits, st.fast_retransmits,
			       st.timeouts, st.bad_csum, (cpu_s() - cpu0) / (double)o.n * 1e6);
		}
		return 0;
	}
	/* pingpong */
	if (o.client) {
		uint8_t th[sizeof(struct gm_msg_hdr)] = {0};
		uint64_t payload = 0x0123456789abcdefull;
		struct iovec iov = {&payload, 8};

		for (uint64_t i = 0; i < o.n + warm && now_s() < deadline && !s.bad; i++) {
			uint64_t want = s.pong + 1;
			int rc;

			if (i == warm) {
				t_start = now_s();
				cpu0 = cpu_s();
			}
			while ((rc = gm_peer_send(pr, GM_FT_EAGER, th, sizeof(th), &iov, 1,
			                          NULL)) == -FI_EAGAIN)
				gm_net_progress(net);
			if (rc)
				return fprintf(stderr, "FAIL: send: %s\n", fi_strerror(-rc)), 1;
			while (s.pong < want && now_s() < deadline)
				if (!gm_net_progress(net) && !o.busy)
					gm_net_wait(net, 10);
		}
		if (s.pong < o.n + warm)
			return fprintf(stderr, "FAIL: %" PRIu64 " pongs\n", s.pong), 1;
		printf(
		    "OK pingpong 8 B: %.2f us half round trip, this process used %.2f us CPU per "
		    "half round trip (%" PRIu64 " iterations)\n",
		    (now_s() - t_start) / (2.0 * o.n) * 1e6, (cpu_s() - cpu0) / (2.0 * o.n) * 1e6,
		    o.n);
		return 0;
	}
	while (s.pong < o.n + warm && now_s() < deadline && !s.bad)
		if (!gm_net_progress(net) && !o.busy)
			gm_net_wait(net, 10);
	for (double t = now_s(); now_s() < t + 0.2;)
		gm_net_progress(net);
	return s.pong >= o.n + warm ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct gm_net_params p = {
	    .ethertype = GM_ETHERTYPE_DEFAULT,
	    .dq = GM_DEFAULT_DQ,
	    .low_share = GM_DEFAULT_LOW_SHARE,
	    .rx_ring_kb = GM_DEFAULT_RX_RING_KB,
	    .log = {gm_log_stderr, "gm-nettest"},
	};
	struct gm_net *net;
	struct gm_port *port;
	int c, rc;

	if (argc < 2)
		usage();
	o.mode = argv[1];
	optind = 2;
	while ((c = getopt(argc, argv, "i:p:d:n:s:t:T:r:w:k:l:cxLqb")) != -1) {
		switch (c) {
		case 'i':
			o.ifname = optarg;
			break;
		case 'p':
			o.port = (uint16_t)atoi(optarg);
			break;
		case 'd':
			if (parse_dst(optarg))
				usage();
			break;
		case 'n':
			o.n = strtoull(optarg, NULL, 0);
			break;
		case 's':
			o.max_size = strtoul(optarg, NULL, 0);
			break;
		case 't':
			o.timeout_s = (unsigned)atoi(optarg);
			break;
		case 'T':
			o.peer_timeout_ms = (unsigned)atoi(optarg);
			break;
		case 'r':
			o.rto_us = (unsigned)atoi(optarg);
			break;
		case 'w':
			o.window = (unsigned)atoi(optarg);
			break;
		case 'k':
			o.key = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'c':
			o.client = true;
			break;
		case 'x':
			o.expect_fail = true;
			break;
		case 'L':
			o.low = true;
			break;
		case 'l':
			o.linger = optarg;
			break;
		case 'q':
			o.quiet = true;
			break;
		case 'b':
			o.busy = true;
			break;
		default:
			usage();
		}
	}
	if (!o.ifname ||
	    ((!strcmp(o.mode, "send") || !strcmp(o.mode, "pingpong")) && !o.have_dst) ||
	    (strcmp(o.mode, "recv") && strcmp(o.mode, "send") && strcmp(o.mode, "pingpong") &&
	     strcmp(o.mode, "self")))
		usage();
	p.stats = !o.quiet;
	base_init();
	p.ifname = o.ifname;
	p.window = o.window;
	p.rto_us = o.rto_us;
	p.peer_timeout_ms = o.peer_timeout_ms;
	rc = gm_net_open(&p, &net);
	if (rc) {
		fprintf(stderr, "gm_net_open(%s): %s\n", o.ifname, fi_strerror(-rc));
		return rc == -FI_EPERM ? 77 : 1;
	}
	rc = gm_port_open(net, o.port, o.low ? GM_CLASS_LOW : GM_CLASS_HIGH,
	                  &(struct gm_auth){&o.key, sizeof(o.key)}, &ops, NULL, &port);
	if (rc) {
		fprintf(stderr, "gm_port_open(%u): %s\n", o.port, fi_strerror(-rc));
		gm_net_close(net);
		return 1;
	}
	{
		uint8_t mac[6];

		gm_net_mac(net, mac);
		fprintf(stderr, "%s: %02x:%02x:%02x:%02x:%02x:%02x/%u\n", o.mode, mac[0], mac[1],
		        mac[2], mac[3], mac[4], mac[5], gm_port_num(port));
	}
	if (!strcmp(o.mode, "self")) {
		/* Two endpoints of one process on one interface: the second
		 * port receives what the first sends to our own MAC. */
		struct gm_port *port2;

		rc = gm_port_open(net, 0, GM_CLASS_HIGH, &(struct gm_auth){&o.key, sizeof(o.key)},
		                  &ops, o.client ? (void *)2 : NULL, &port2);
		if (rc) {
			fprintf(stderr, "gm_port_open(any): %s\n", fi_strerror(-rc));
			gm_net_close(net);
			return 1;
		}
		gm_net_mac(net, o.dst.mac);
		o.dst.port = gm_port_num(port2);
		o.have_dst = true;
		if (o.client) { /* one-process ping-pong: the stack without a scheduler */
			o.mode = "pingpong";
			rc = run(net, port);
			gm_net_close(net);
			return rc;
		}
		o.mode = "send";
		rc = run(net, port);
		if (!rc && (s.delivered != o.n || s.bad)) {
			fprintf(stderr, "FAIL: self: %" PRIu64 " of %" PRIu64 " delivered\n",
			        s.delivered, o.n);
			rc = 1;
		} else if (!rc) {
			printf("OK self %" PRIu64 " messages, %" PRIu64 " payload bytes verified\n",
			       s.delivered, s.bytes);
		}
		gm_net_close(net);
		return rc;
	}
	rc = run(net, port);
	gm_net_close(net);
	return rc;
}
