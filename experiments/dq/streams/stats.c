/* Window statistics and sequence book-keeping of the receivers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sn.h"

void sn_stats_add(struct sn_stats *s, double us, uint32_t bytes)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 4096;
		double *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return; /* the mean still counts it; only the percentiles lose it */
		s->v = v;
		s->cap = cap;
	}
	if (s->n < s->cap)
		s->v[s->n] = us;
	s->n++;
	s->bytes += bytes;
	s->sum_us += us;
	if (us > s->max_us)
		s->max_us = us;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void sn_stats_print(struct sn_stats *s, const char *prefix)
{
	size_t kept = s->n < s->cap ? s->n : s->cap;
	double p50 = 0, p99 = 0;

	if (kept) {
		qsort(s->v, kept, sizeof(*s->v), cmp_double);
		p50 = s->v[kept / 2];
		p99 = s->v[(size_t)((double)(kept - 1) * 0.99)];
	}
	printf("%s msgs=%llu bytes=%llu sum_us=%.1f mean_us=%.2f p50_us=%.2f p99_us=%.2f "
	       "max_us=%.1f\n",
	       prefix, (unsigned long long)s->n, (unsigned long long)s->bytes, s->sum_us,
	       s->n ? s->sum_us / (double)s->n : 0.0, p50, p99, s->max_us);
}

void sn_stats_free(struct sn_stats *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

bool sn_seen_mark(struct sn_seen *s, uint32_t seq)
{
	if (seq / 8 >= s->cap) {
		uint32_t cap = s->cap ? s->cap : 1024;
		while (seq / 8 >= cap)
			cap *= 2;
		uint8_t *b = realloc(s->bits, cap);
		if (!b) {
			s->dup++; /* cannot track it: count it as wrong rather than pass it */
			return false;
		}
		memset(b + s->cap, 0, cap - s->cap);
		s->bits = b;
		s->cap = cap;
	}
	if (s->bits[seq / 8] & (1u << (seq % 8))) {
		s->dup++;
		return false;
	}
	s->bits[seq / 8] |= (uint8_t)(1u << (seq % 8));
	s->got++;
	return true;
}

bool sn_seen_complete(const struct sn_seen *s, uint32_t count)
{
	if (s->dup || s->got != count)
		return false;
	for (uint32_t i = 0; i < count; i++)
		if (!(s->bits[i / 8] & (1u << (i % 8))))
			return false;
	return true;
}
