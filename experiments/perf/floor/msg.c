/*
 * gamma-floor's message test (--tests msg): the half round trip of a
 * message of several frames, both ends.  The client sends a message of S
 * bytes as ceil(S / payload) frames, handed to the kernel by sendmmsg in
 * batches of up to --batch; the server, once it holds every frame, sends as
 * many back the same way.  No protocol: no header beyond the floor's, no
 * checksum, no ack; with --mac-key every frame, both ways, carries gamma's
 * frame MAC, sealed before it is handed over and checked before its
 * payload.  This is what any raw-frame transport that sends one
 * frame per kernel buffer pays for a multi-frame message on this link,
 * the bound beside which gamma-bench sets MPI's 4, 16 and 64 KiB latency.
 *
 * Frame i of message m carries seq = m << FL_MSG_SHIFT | i and the count of
 * frames in the header's count field; its payload is the pattern of its seq,
 * full-sized except in the last frame.  A message whose answer does not come
 * back within 100 ms is sent again whole; the server answers again when a
 * message it already answered ends once more.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../pingpong/report.h"
#include "floor.h"
#include "gm_mac.h"
#include "gm_wire.h"

#define MSG_MASK ((1u << (32 - FL_MSG_SHIFT)) - 1)

static unsigned frames_of(unsigned size, unsigned body)
{
	return (size + body - 1) / body;
}

/* Nothing allocated while a message is timed: one batch's headers, ready. */
#define BATCH_MAX 1024 /* --batch's bound */
static uint8_t hdr[BATCH_MAX][ETH_HLEN + FL_HDR + FL_MAC_ZONE];
static struct iovec iov[BATCH_MAX][2];
static struct mmsghdr mm[BATCH_MAX];

int fl_msg_send(struct fl_link *l, const struct fl_msg *m, uint8_t kind,
                const struct pp_pattern *pat, unsigned batch, struct gm_mac *mac)
{
	double give_up = fl_now() + 1;
	unsigned sent = 0;

	if (batch > BATCH_MAX)
		batch = BATCH_MAX;
	while (sent < m->count) {
		unsigned n = m->count - sent < batch ? m->count - sent : batch;
		int k;

		for (unsigned i = 0; i < n; i++) {
			unsigned idx = sent + i;
			uint32_t seq = m->id << FL_MSG_SHIFT | idx;

			fl_link_eth(l, hdr[i]);
			fl_hdr_put(hdr[i] + ETH_HLEN, &(struct fl_hdr){.kind = kind,
			                                               .rep = m->rep,
			                                               .count = (uint16_t)m->count,
			                                               .seq = seq});
			iov[i][0] = (struct iovec){hdr[i], ETH_HLEN + fl_data_off(mac)};
			iov[i][1] = (struct iovec){(void *)pp_pattern_msg(pat, seq),
			                           idx + 1 < m->count ? m->body : m->last};
			if (mac)
				fl_seal(mac, hdr[i], &iov[i][1]);
			mm[i].msg_hdr = (struct msghdr){.msg_iov = iov[i], .msg_iovlen = 2};
		}
		k = fl_link_sendmmsg(l, mm, n);
		if (k > 0) {
			sent += (unsigned)k;
			continue;
		}
		if ((k != -EAGAIN && k != -ENOBUFS && k != 0) || fl_now() > give_up) {
			fprintf(stderr, "gamma-floor: sending a message: %s\n",
			        strerror(k ? -k : EAGAIN));
			return -1;
		}
		poll(&(struct pollfd){.fd = l->fd, .events = POLLOUT}, 1, 1);
	}
	return 0;
}

int fl_msg_frame(const struct fl_hdr *h, const uint8_t *f, unsigned len, unsigned body,
                 const struct pp_pattern *pat, struct gm_mac *mac, unsigned *idx)
{
	unsigned i = h->seq & (FL_MSG_FRAMES_MAX - 1), off = ETH_HLEN + fl_data_off(mac);
	unsigned plen = len > off ? len - off : 0;

	if (!h->count || h->count > FL_MSG_FRAMES_MAX || i >= h->count || !plen || plen > body ||
	    (i + 1 < h->count && plen != body))
		return -1;
	if ((mac && gm_mac_check(mac, f, len) != GM_WIRE_OK) ||
	    memcmp(f + off, pp_pattern_msg(pat, h->seq), plen))
		return -1;
	*idx = i;
	return 0;
}

/* ---- the server's end ---- */

int fl_msg_serve(struct fl_msg_server *s, struct fl_link *l, const struct fl_hdr *h,
                 const uint8_t *f, unsigned len, unsigned body, const struct pp_pattern *pat,
                 unsigned batch, struct gm_mac *mac)
{
	uint32_t id = h->seq >> FL_MSG_SHIFT;
	unsigned i;

	if (fl_msg_frame(h, f, len, body, pat, mac, &i)) {
		s->invalid++;
		return 0;
	}
	if (!s->active || id != s->m.id || h->rep != s->m.rep || h->count != s->m.count) {
		s->active = true;
		s->answered = false;
		s->got = 0;
		memset(s->seen, 0, sizeof(s->seen));
		s->m = (struct fl_msg){.id = id, .rep = h->rep, .count = h->count, .body = body};
	}
	if (s->seen[i / 64] & 1ull << (i % 64)) {
		/* Sent again: our answer was lost.  Answer once more at its end. */
		if (s->answered && i + 1 == s->m.count) {
			s->answers++;
			return fl_msg_send(l, &s->m, FL_MSG_BACK, pat, batch, mac);
		}
		return 0;
	}
	s->seen[i / 64] |= 1ull << (i % 64);
	s->frames++;
	if (i + 1 == s->m.count)
		s->m.last = len - ETH_HLEN - fl_data_off(mac);
	if (++s->got < s->m.count)
		return 0;
	s->answered = true;
	s->answers++;
	return fl_msg_send(l, &s->m, FL_MSG_BACK, pat, batch, mac);
}

/* ---- the client's end ---- */

/*
 * Waits for every frame of m's answer: 0, 1 on a timeout (message on
 * stderr), 3 on a wrong frame.  Resends m whole every 100 ms.
 */
static int await_answer(struct fl_link *l, const struct fl_opts *o, const struct fl_msg *m,
                        const struct pp_pattern *pat, unsigned long *resent)
{
	uint64_t seen[FL_MSG_FRAMES_MAX / 64] = {0};
	double t0 = fl_now(), again = t0 + 0.1;
	unsigned got = 0, spins = 0;

	while (got < m->count) {
		unsigned len, caplen, i;
		const uint8_t *f = fl_link_peek(l, &len, &caplen);
		struct fl_hdr h;

		if (!f) {
			double t;

			if (++spins % 64)
				continue;
			t = fl_now();
			if (t > t0 + o->timeout) {
				fprintf(
				    stderr,
				    "gamma-floor: message %u (%u frames): no answer for %.0f s\n",
				    m->id, m->count, o->timeout);
				return 1;
			}
			if (t > again) {
				if (fl_msg_send(l, m, FL_MSG, pat, o->batch, o->mac))
					return 1;
				(*resent)++;
				again = t + 0.1;
			}
			continue;
		}
		if (caplen == len && !memcmp(f + ETH_ALEN, l->to.sll_addr, ETH_ALEN) &&
		    !fl_hdr_get(f, len, &h) && h.kind == FL_MSG_BACK && h.rep == m->rep &&
		    h.seq >> FL_MSG_SHIFT == m->id) {
			if (fl_msg_frame(&h, f, len, m->body, pat, o->mac, &i) ||
			    h.count != m->count ||
			    (i + 1 == m->count &&
			     len - ETH_HLEN - fl_data_off(o->mac) != m->last)) {
				fl_link_release(l);
				printf(
				    "# DATA CORRUPTION: a frame of message %u's answer is wrong\n",
				    m->id);
				return 3;
			}
			if (!(seen[i / 64] & 1ull << (i % 64))) {
				seen[i / 64] |= 1ull << (i % 64);
				got++;
			}
		}
		fl_link_release(l);
	}
	return 0;
}

int fl_msg_run(struct fl_link *l, const struct fl_opts *o, const struct pp_pattern *pat)
{
	unsigned body = o->size - fl_data_off(o->mac), n = o->warmup + o->iters;
	double *rtt = malloc(o->iters * sizeof(*rtt)), v[o->reps];
	unsigned long messages = 0, frames = 0, bytes = 0, resent = 0;
	uint32_t id = 0;
	int rc = 1;

	if (!rtt)
		return 1;
	for (unsigned s = 0; s < o->n_msg_sizes; s++) {
		unsigned size = o->msg_sizes[s], count = frames_of(size, body);

		if (count > FL_MSG_FRAMES_MAX) {
			fprintf(stderr,
			        "gamma-floor: a message of %u bytes needs %u frames of %u payload "
			        "bytes; at most %u\n",
			        size, count, body, FL_MSG_FRAMES_MAX);
			goto out;
		}
		for (unsigned r = 0; r < o->reps; r++) {
			for (unsigned i = 0; i < n; i++) {
				struct fl_msg m = {.id = ++id & MSG_MASK,
				                   .rep = (uint8_t)r,
				                   .count = count,
				                   .body = body,
				                   .last = size - (count - 1) * body};
				double t0 = fl_now();

				if (fl_msg_send(l, &m, FL_MSG, pat, o->batch, o->mac))
					goto out;
				rc = await_answer(l, o, &m, pat, &resent);
				if (rc)
					goto out;
				rc = 1;
				if (i >= o->warmup)
					rtt[i - o->warmup] = fl_now() - t0;
				messages++;
				frames += count;
				bytes += size;
			}
			v[r] = pp_median(rtt, o->iters) / 2 * 1e6;
		}
		if (!s)
			printf(
			    "# message latency: a message of S bytes as frames of up to %u payload "
			    "bytes%s, sendmmsg batches of %u,\n#   sent back the same way once "
			    "every "
			    "frame is in; half the median round trip, median over %u "
			    "repetitions\n",
			    body, o->mac ? " each with gamma's frame MAC" : "", o->batch, o->reps);
		printf("latency,%u,%.3f,us\n", size, pp_median(v, o->reps));
	}
	printf("# verified: every byte of %lu frames (%lu bytes) of %lu messages each way (%lu "
	       "messages resent after 100 ms)\n",
	       frames, bytes, messages, resent);
	rc = 0;
out:
	free(rtt);
	return rc;
}
