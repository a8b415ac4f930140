/* Messages of the stream experiment: a header with the send time, then a
 * payload every byte of which the receiver can recompute. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sn.h"

#define GOLD 0x9E3779B97F4A7C15ull

uint64_t sn_now_ns(void)
{
	struct timespec ts;

	/* The nodes are namespaces of one machine: one monotonic clock for all. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double sn_now(void)
{
	return (double)sn_now_ns() / 1e9;
}

void sn_sleep_until(double t)
{
	struct timespec ts = {.tv_sec = (time_t)t,
	                      .tv_nsec = (long)((t - (double)(time_t)t) * 1e9)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

int sn_await_start(const struct sn_opts *o)
{
	double deadline = sn_now() + o->timeout, t;
	FILE *f;

	fflush(stdout);
	if (o->start_file) {
		/* Written (atomically, by rename) once every process is ready. */
		while (!(f = fopen(o->start_file, "r"))) {
			if (sn_now() > deadline) {
				sn_err("no start time in %s before the timeout", o->start_file);
				return -1;
			}
			usleep(1000);
		}
		int n = fscanf(f, "%lf", &t);
		fclose(f);
		if (n != 1) {
			sn_err("%s holds no start time", o->start_file);
			return -1;
		}
		/* The options live in main(); only the start is learnt late. */
		((struct sn_opts *)o)->start = t;
	}
	sn_sleep_until(o->start);
	return 0;
}

static uint64_t hdr_check(const struct sn_hdr *h)
{
	uint64_t x = ((uint64_t)h->magic << 32 | (uint64_t)h->type << 16 | h->src) ^
	             ((uint64_t)h->seq << 32 | h->size) ^ h->send_ns;
	x *= GOLD;
	return x ^ (x >> 31);
}

static uint64_t seed_of(int src, uint32_t seq)
{
	return ((uint64_t)seq << 16 | (uint16_t)src) * GOLD + 1;
}

void sn_fill(void *buf, enum sn_type type, int src, uint32_t seq, uint32_t size)
{
	struct sn_hdr h = {.magic = SN_MAGIC,
	                   .type = (uint16_t)type,
	                   .src = (uint16_t)src,
	                   .seq = seq,
	                   .size = size};
	uint8_t *p = (uint8_t *)buf + sizeof(h);
	size_t len = size - sizeof(h), k;
	uint64_t seed = seed_of(src, seq), w;

	for (k = 0; k + 8 <= len; k += 8) {
		w = seed + k * GOLD;
		memcpy(p + k, &w, 8);
	}
	if (k < len) {
		w = seed + k * GOLD;
		memcpy(p + k, &w, len - k);
	}
	/* Stamped last, so that filling the payload is not counted as network time. */
	h.send_ns = sn_now_ns();
	h.check = hdr_check(&h);
	memcpy(buf, &h, sizeof(h));
}

int sn_verify(const void *buf, size_t len, char *why, size_t why_len)
{
	struct sn_hdr h;
	const uint8_t *p = (const uint8_t *)buf + sizeof(h);
	size_t k;
	uint64_t seed, w;

	if (len < sizeof(h)) {
		snprintf(why, why_len, "%zu-byte message, shorter than the header", len);
		return -1;
	}
	memcpy(&h, buf, sizeof(h));
	if (h.magic != SN_MAGIC || h.check != hdr_check(&h)) {
		snprintf(why, why_len, "damaged header (magic %#x)", h.magic);
		return -1;
	}
	if (h.size != len) {
		snprintf(why, why_len, "message from node %u seq %u: %zu bytes, header says %u",
		         h.src, h.seq, len, h.size);
		return -1;
	}
	len -= sizeof(h);
	seed = seed_of(h.src, h.seq);
	for (k = 0; k + 8 <= len; k += 8) {
		w = seed + k * GOLD;
		if (memcmp(p + k, &w, 8))
			goto bad;
	}
	if (k < len) {
		w = seed + k * GOLD;
		if (memcmp(p + k, &w, len - k))
			goto bad;
	}
	return 0;
bad:
	snprintf(why, why_len, "message from node %u seq %u: payload differs near byte %zu", h.src,
	         h.seq, sizeof(h) + k);
	return -1;
}
