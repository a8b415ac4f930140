/* gamma-floor's server: echoes pings, counts data frames (gamma-floor.c). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <stdio.h>
#include <string.h>

#include "floor.h"
#include "gm_mac.h"
#include "gm_wire.h"

struct srv {
	struct fl_link *l;
	struct pp_pattern pat;
	struct fl_plan plan;
	bool have_peer, counting, stopped;
	uint8_t rep; /* the repetition being counted, or the last one stopped */
	double t0, tlast, stop_sent;
	uint32_t next_seq;
	struct fl_count c, total;
	struct fl_msg_server msg;
	unsigned long pongs, foreign;
	unsigned batch;
	struct gm_mac *mac; /* --mac-key */
};

static int send_stop(struct srv *s)
{
	struct fl_count w = {htobe64(s->c.frames),   htobe64(s->c.bytes), htobe64(s->c.ns),
	                     htobe64(s->c.verified), htobe64(s->c.lost),  htobe64(s->c.invalid),
	                     htobe64(s->c.late)};

	s->stop_sent = fl_wall(); /* compared with arrival stamps */
	return fl_send_ctrl(s->l, &(struct fl_hdr){.kind = FL_STOP, .rep = s->rep, .seq = 0}, &w,
	                    sizeof(w));
}

static int finish(struct srv *s)
{
	s->counting = false;
	s->stopped = true;
	s->total.verified += s->c.verified;
	s->total.bytes += s->c.verified * s->plan.size;
	s->total.lost += s->c.lost;
	s->total.invalid += s->c.invalid;
	s->total.late += s->c.late;
	return send_stop(s);
}

static int data(struct srv *s, const struct fl_hdr *h, const uint8_t *f, unsigned len, double t)
{
	if (s->stopped && h->rep == s->rep) /* in flight when we stopped, or STOP was lost */
		return t - s->stop_sent > 0.005 ? send_stop(s) : 0;
	if (!s->plan.size)
		return 0; /* no hello yet: not ours to count */
	if (!s->counting || h->rep != s->rep) {
		s->counting = true;
		s->stopped = false;
		s->rep = h->rep;
		s->t0 = s->tlast = t;
		s->next_seq = 0;
		memset(&s->c, 0, sizeof(s->c));
	}
	if (t >= s->t0 + s->plan.interval_us * 1e-6)
		return finish(s);
	if (len != ETH_HLEN + s->plan.size ||
	    (s->mac && gm_mac_check(s->mac, f, len) != GM_WIRE_OK) ||
	    pp_pattern_check(&s->pat, h->seq, f + ETH_HLEN + fl_data_off(s->mac))) {
		s->c.invalid++;
		return 0;
	}
	if (h->seq < s->next_seq) {
		/* veth hands a frame to the backlog of the CPU that ran the
		 * qdisc, so two CPUs' backlogs can swap frames of one stream:
		 * this one was counted in the gap it left. */
		s->c.late++;
		if (s->c.lost)
			s->c.lost--;
	} else {
		s->c.lost += h->seq - s->next_seq;
		s->next_seq = h->seq + 1;
	}
	if (s->c.verified++) {
		s->c.frames++;
		s->c.bytes += s->plan.size;
		s->c.ns = (uint64_t)((t - s->t0) * 1e9);
		s->tlast = t;
	}
	return 0;
}

static int hello(struct srv *s, const uint8_t *f, unsigned len)
{
	struct fl_plan p;

	if (len < ETH_HLEN + FL_HDR + sizeof(p))
		return 0;
	memcpy(&p, f + ETH_HLEN + FL_HDR, sizeof(p));
	p.size = ntohl(p.size);
	p.interval_us = ntohl(p.interval_us);
	if (p.size < fl_data_off(s->mac) + 56 || p.size > s->l->mtu || !p.interval_us) {
		fprintf(stderr,
		        "gamma-floor: the client's plan (size %u, MTU here %u) is unusable\n",
		        p.size, s->l->mtu);
		return -1;
	}
	if (p.size != s->plan.size && pp_pattern_init(&s->pat, p.size - fl_data_off(s->mac))) {
		fprintf(stderr, "gamma-floor: out of memory\n");
		return -1;
	}
	s->plan = p;
	return fl_send_ctrl(s->l, &(struct fl_hdr){.kind = FL_HELLO_ACK, .rep = 0, .seq = 0}, NULL,
	                    0);
}

/* 1: the client said goodbye; 0: go on; -1: failure. */
static int frame(struct srv *s, const uint8_t *f, unsigned len, unsigned caplen)
{
	struct fl_hdr h;

	if (caplen < len || fl_hdr_get(f, len, &h)) {
		s->foreign++;
		return 0;
	}
	if (!s->have_peer && h.kind == FL_HELLO) {
		fl_link_set_peer(s->l, f + ETH_ALEN);
		s->have_peer = true;
	}
	if (!s->have_peer || memcmp(f + ETH_ALEN, s->l->to.sll_addr, ETH_ALEN)) {
		s->foreign++;
		return 0;
	}
	switch (h.kind) {
	case FL_HELLO:
		return hello(s, f, len);
	case FL_PING:
		s->pongs++;
		return fl_send_ctrl(
		    s->l, &(struct fl_hdr){.kind = FL_PONG, .rep = h.rep, .seq = h.seq}, NULL, 0);
	case FL_DATA:
		return data(s, &h, f, len, fl_link_stamp(s->l));
	case FL_MSG:
		if (!s->plan.size)
			return 0; /* no hello yet */
		return fl_msg_serve(&s->msg, s->l, &h, f, len, s->plan.size - fl_data_off(s->mac),
		                    &s->pat, s->batch, s->mac);
	case FL_BYE:
		return fl_send_ctrl(s->l, &(struct fl_hdr){.kind = FL_BYE_ACK, .rep = 0, .seq = 0},
		                    NULL, 0)
		           ? -1
		           : 1;
	default:
		s->foreign++;
		return 0;
	}
}

int fl_server(struct fl_link *l, const struct fl_opts *o)
{
	struct srv s = {.l = l, .batch = o->batch, .mac = o->mac};
	double idle = fl_now() + o->timeout;
	unsigned long spins = 0;
	int rc = 0;

	printf("gamma-floor: server on %s (MTU %u), receiving from a TPACKET_V2 ring\n", o->iface,
	       l->mtu);
	fflush(stdout);
	while (rc == 0) {
		unsigned len, caplen;
		const uint8_t *f = fl_link_peek(l, &len, &caplen);

		if (f) {
			rc = frame(&s, f, len, caplen);
			fl_link_release(l);
			idle = fl_now() + o->timeout;
			continue;
		}
		if (++spins % 256)
			continue;
		if (s.counting && fl_wall() >= s.t0 + s.plan.interval_us * 1e-6)
			rc = finish(&s);
		else if (fl_now() > idle) {
			fprintf(stderr, "gamma-floor: no frame from the client for %.0f s\n",
			        o->timeout);
			rc = -1;
		}
	}
	printf(
	    "gamma-floor: served %lu pings; verified every byte of %llu data frames (%llu bytes), "
	    "%llu lost, %llu late, %llu invalid; answered %lu messages (%lu frames verified, "
	    "%lu invalid); %lu foreign frames ignored\n",
	    s.pongs, (unsigned long long)s.total.verified, (unsigned long long)s.total.bytes,
	    (unsigned long long)s.total.lost, (unsigned long long)s.total.late,
	    (unsigned long long)s.total.invalid, s.msg.answers, s.msg.frames, s.msg.invalid,
	    s.foreign);
	pp_pattern_fini(&s.pat);
	return rc < 0 ? 1 : 0;
}
