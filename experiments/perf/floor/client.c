/* gamma-floor's client: runs the tests and reports (gamma-floor.c). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../../pingpong/report.h"
#include "floor.h"
#include "gm_mac.h"
#include "gm_wire.h"

struct cli {
	struct fl_link *l;
	const struct fl_opts *o;
	struct pp_pattern pat;
	uint8_t rep; /* one number per bandwidth repetition of the whole run */
	bool silent; /* the server stopped answering: no use saying goodbye */
	struct fl_count got;
	double cpu_us; /* sender CPU (user + system) of the last repetition */
	uint64_t sent; /* frames the sender handed to the kernel in it */
};

enum fl_send { FL_SEND_ONE, FL_SEND_MMSG, FL_SEND_RING };
static const char *const send_how[] = {"one sendmsg per frame", "sendmmsg batches",
                                       "PACKET_TX_RING, one send() per batch"};

static double cpu_us(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 + (double)u.ru_utime.tv_usec +
	       (double)u.ru_stime.tv_usec;
}

/* Takes the next frame from the server if it is of this kind, repetition and
 * sequence number (body copied to out); anything else is dropped. */
static bool take(struct cli *c, uint8_t kind, uint8_t rep, uint32_t seq, void *out, unsigned n)
{
	unsigned len, caplen;
	const uint8_t *f = fl_link_peek(c->l, &len, &caplen);
	struct fl_hdr h;
	bool ok;

	if (!f)
		return false;
	ok = !memcmp(f + ETH_ALEN, c->l->to.sll_addr, ETH_ALEN) && !fl_hdr_get(f, len, &h) &&
	     h.kind == kind && h.rep == rep && h.seq == seq && len >= ETH_HLEN + FL_HDR + n;
	if (ok && n)
		memcpy(out, f + ETH_HLEN + FL_HDR, n);
	fl_link_release(c->l);
	return ok;
}

/* Sends a control frame until the answer comes (every 50 ms), for --timeout. */
static int handshake(struct cli *c, uint8_t kind, const void *body, unsigned n, uint8_t answer,
                     const char *what)
{
	double end = fl_now() + c->o->timeout, again = 0;

	for (;;) {
		double t = fl_now();

		if (t > end) {
			fprintf(stderr,
			        "gamma-floor: no answer to the %s for %.0f s: is the server "
			        "running on the host of that MAC, on the same link?\n",
			        what, c->o->timeout);
			c->silent = true;
			return -1;
		}
		if (t >= again) {
			if (fl_send_ctrl(c->l, &(struct fl_hdr){.kind = kind, .rep = 0, .seq = 0},
			                 body, n))
				return -1;
			again = t + 0.05;
		}
		if (take(c, answer, 0, 0, NULL, 0))
			return 0;
	}
}

static int run_lat(struct cli *c)
{
	const struct fl_opts *o = c->o;
	double *rtt = malloc(o->iters * sizeof(*rtt)), v[o->reps];
	unsigned long resent = 0, pongs = 0;

	if (!rtt)
		return -1;
	for (unsigned r = 0; r < o->reps; r++) {
		for (unsigned i = 0; i < o->warmup + o->iters; i++) {
			double t0 = fl_now(), again = t0 + 0.1, t;
			unsigned spins = 0;

			if (fl_send_ctrl(
			        c->l,
			        &(struct fl_hdr){.kind = FL_PING, .rep = (uint8_t)r, .seq = i},
			        NULL, 0))
				goto fail;
			while (!take(c, FL_PONG, (uint8_t)r, i, NULL, 0)) {
				if (++spins % 64)
					continue;
				t = fl_now();
				if (t > t0 + o->timeout) {
					fprintf(stderr,
					        "gamma-floor: ping %u of repetition %u: no "
					        "pong for %.0f s\n",
					        i, r, o->timeout);
					c->silent = true;
					goto fail;
				}
				if (t > again) { /* a lost frame: no protocol will resend it */
					if (fl_send_ctrl(c->l,
					                 &(struct fl_hdr){.kind = FL_PING,
					                                  .rep = (uint8_t)r,
					                                  .seq = i},
					                 NULL, 0))
						goto fail;
					resent++;
					again = t + 0.1;
				}
			}
			t = fl_now();
			pongs++;
			if (i >= o->warmup)
				rtt[i - o->warmup] = t - t0;
		}
		v[r] = pp_median(rtt, o->iters) / 2 * 1e6;
	}
	free(rtt);
	printf("# latency: 8-byte payload frames (%d bytes), one send per frame, the server "
	       "sends each back;\n#   half of the median round trip, median over %u repetitions\n",
	       ETH_HLEN + FL_HDR, o->reps);
	printf("latency,%d,%.3f,us\n", FL_HDR, pp_median(v, o->reps));
	printf("# verified: %lu pongs, each with its ping's repetition and sequence number (%lu "
	       "pings resent after 100 ms)\n",
	       pongs, resent);
	return 0;
fail:
	free(rtt);
	return -1;
}

/* Waits for room in the socket buffer or qdisc after EAGAIN/ENOBUFS. */
static void backoff(struct cli *c, int rc)
{
	if (rc == -EAGAIN)
		poll(&(struct pollfd){.fd = c->l->fd, .events = POLLOUT}, 1, 1);
	else
		usleep(20);
}

/* Up to b frames written into the transmit ring and sent: how many, or -errno. */
static int ring_batch(struct cli *c, uint32_t seq, unsigned b)
{
	unsigned body = c->o->size - FL_HDR, n = 0;
	uint8_t *f;

	while (n < b && (f = fl_link_tx_slot(c->l))) {
		fl_link_eth(c->l, f);
		fl_hdr_put(f + ETH_HLEN,
		           &(struct fl_hdr){.kind = FL_DATA, .rep = c->rep, .seq = seq + n});
		memcpy(f + ETH_HLEN + FL_HDR, pp_pattern_msg(&c->pat, seq + n), body);
		fl_link_tx_commit(c->l, ETH_HLEN + c->o->size);
		n++;
	}
	if (!n)
		return -EAGAIN; /* every slot still with the kernel */
	/* Queued frames stay queued until a send() takes them: retry here, so
	 * that none of this repetition leaks into the next. */
	for (;;) {
		int rc = fl_link_tx_flush(c->l);

		if (!rc)
			return (int)n;
		if (rc != -EAGAIN && rc != -ENOBUFS)
			return rc;
		poll(&(struct pollfd){.fd = c->l->tx_fd, .events = POLLOUT}, 1, 1);
	}
}

/* One repetition: frames until the server's STOP for this repetition. */
static int stream(struct cli *c, enum fl_send how, double *mbps)
{
	const struct fl_opts *o = c->o;
	bool mmsg = how == FL_SEND_MMSG;
	unsigned b = how == FL_SEND_ONE ? 1 : o->batch, off = fl_data_off(o->mac),
	         body = o->size - off;
	uint8_t(*hdr)[ETH_HLEN + FL_HDR + FL_MAC_ZONE] = calloc(b, sizeof(*hdr));
	struct iovec(*iov)[2] = calloc(b, sizeof(*iov));
	struct mmsghdr *m = calloc(b, sizeof(*m));
	double end = fl_now() + o->seconds + o->timeout;
	uint32_t seq = 0;
	unsigned long sends = 0;
	int rc = -1;

	if (!hdr || !iov || !m)
		goto out;
	for (unsigned i = 0; i < b; i++) {
		fl_link_eth(c->l, hdr[i]);
		iov[i][0] = (struct iovec){hdr[i], ETH_HLEN + off};
		m[i].msg_hdr.msg_iov = iov[i];
		m[i].msg_hdr.msg_iovlen = 2;
	}
	c->cpu_us = cpu_us();
	while (!take(c, FL_STOP, c->rep, 0, &c->got, sizeof(c->got))) {
		int n;

		if (how == FL_SEND_RING) {
			n = ring_batch(c, seq, b);
			goto sent;
		}
		for (unsigned i = 0; i < b; i++) {
			fl_hdr_put(
			    hdr[i] + ETH_HLEN,
			    &(struct fl_hdr){.kind = FL_DATA, .rep = c->rep, .seq = seq + i});
			iov[i][1] = (struct iovec){(void *)pp_pattern_msg(&c->pat, seq + i), body};
			if (o->mac)
				fl_seal(o->mac, hdr[i], &iov[i][1]);
		}
		n = mmsg ? fl_link_sendmmsg(c->l, m, b) : fl_link_send(c->l, iov[0], 2);
		if (n == 0 && !mmsg)
			n = 1;
	sent:
		if (n > 0)
			seq += (uint32_t)n;
		else if (how == FL_SEND_RING && n == -EAGAIN)
			poll(&(struct pollfd){.fd = c->l->tx_fd, .events = POLLOUT}, 1, 1);
		else if (n == -EAGAIN || n == -ENOBUFS)
			backoff(c, n);
		else {
			fprintf(stderr, "gamma-floor: send: %s\n", strerror(-n));
			goto out;
		}
		if (++sends % 1024 == 0 && fl_now() > end) {
			fprintf(stderr,
			        "gamma-floor: no STOP from the server %.0f s after the "
			        "interval\n",
			        o->timeout);
			c->silent = true;
			goto out;
		}
	}
	c->cpu_us = cpu_us() - c->cpu_us;
	c->sent = seq;
	struct fl_count *g = &c->got;
	uint64_t *w = &g->frames;
	for (unsigned i = 0; i < sizeof(*g) / sizeof(*w); i++)
		w[i] = be64toh(w[i]);
	*mbps = g->ns ? (double)g->bytes / ((double)g->ns * 1e-9) / 1e6 : 0;
	rc = 0;
out:
	free(hdr);
	free(iov);
	free(m);
	return rc;
}

/* 0, 1 on failure, 3 on corrupt data. */
static int run_bw(struct cli *c, enum fl_send how)
{
	const struct fl_opts *o = c->o;
	double v[o->reps], cpu[o->reps];
	struct fl_count t = {0};

	if (how == FL_SEND_RING && c->l->tx_fd < 0 && fl_link_tx_open(c->l, o->iface))
		return 1;
	for (unsigned r = 0; r < o->reps; r++, c->rep++) {
		if (stream(c, how, &v[r]))
			return 1;
		cpu[r] = c->sent ? c->cpu_us / (double)c->sent : 0;
		t.verified += c->got.verified;
		t.bytes += c->got.verified * o->size;
		t.lost += c->got.lost;
		t.invalid += c->got.invalid;
		t.late += c->got.late;
		if (!c->got.frames && !c->got.invalid) {
			fprintf(stderr,
			        "gamma-floor: the server verified no frames in the interval\n");
			return 1;
		}
	}
	printf("# bandwidth: frames of %u payload bytes (%u on the wire), %s;\n#   the receiver "
	       "counts %.2f s from the first frame, median over %u repetitions, MB = 10^6 B\n",
	       o->size, o->size + ETH_HLEN, send_how[how], o->seconds, o->reps);
	if (how != FL_SEND_ONE)
		printf("#   batches of %u frames\n", o->batch);
	/* The sender's CPU per frame is what a loaded machine leaves least
	 * distorted: the rate depends on who else runs, the cost much less. */
	printf("#   sender CPU (user + system, the kernel's delivery on veth included): "
	       "%.2f us per frame, median\n",
	       pp_median(cpu, o->reps));
	if (t.invalid) {
		printf("# DATA CORRUPTION: %llu frames of wrong length, pattern or MAC\n",
		       (unsigned long long)t.invalid);
		return 3;
	}
	printf("bandwidth,%u,%.3f,MB/s\n", o->size, pp_median(v, o->reps));
	printf("# verified: every byte of %llu frames (%llu bytes) at the receiver (%llu lost to a "
	       "full ring, not resent; %llu swapped with a later frame on the way)\n",
	       (unsigned long long)t.verified, (unsigned long long)t.bytes,
	       (unsigned long long)t.lost, (unsigned long long)t.late);
	return 0;
}

int fl_client(struct fl_link *l, const struct fl_opts *o)
{
	struct cli c = {.l = l, .o = o};
	struct fl_plan p = {htonl(o->size), htonl((uint32_t)(o->seconds * 1e6))};
	int rc = 0;

	fl_link_set_peer(l, o->peer);
	if (pp_pattern_init(&c.pat, o->size - fl_data_off(o->mac)))
		return 1;
	printf("# gamma-floor: raw AF_PACKET frames, EtherType 0x%04x, %s MTU %u, no protocol; "
	       "both sides busy-poll a TPACKET_V2 receive ring\n",
	       o->ethertype, o->iface, l->mtu);
	if (handshake(&c, FL_HELLO, &p, sizeof(p), FL_HELLO_ACK, "hello"))
		rc = 1;
	if (!rc && (o->tests & FL_TEST_LAT) && run_lat(&c))
		rc = 1;
	if (!rc && (o->tests & FL_TEST_BW))
		rc = run_bw(&c, FL_SEND_ONE);
	if (!rc && (o->tests & FL_TEST_MMSG))
		rc = run_bw(&c, FL_SEND_MMSG);
	if (!rc && (o->tests & FL_TEST_RING))
		rc = run_bw(&c, FL_SEND_RING);
	if (!rc && (o->tests & FL_TEST_MSG))
		rc = fl_msg_run(l, o, &c.pat);
	if (!c.silent && handshake(&c, FL_BYE, NULL, 0, FL_BYE_ACK, "goodbye"))
		rc = 1;
	pp_pattern_fini(&c.pat);
	return rc;
}
