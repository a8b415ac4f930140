/* Payload patterns: every message's bytes depend on its size and sequence
 * number, so stale, shifted, truncated or corrupted data is caught. */
#ifndef PP_PATTERN_H
#define PP_PATTERN_H

#include <stddef.h>
#include <stdint.h>

struct pp_pattern {
	uint8_t *table; /* size + PP_PATTERN_SPAN pseudo-random bytes */
	size_t cap;
	size_t size;
};

int pp_pattern_init(struct pp_pattern *p, size_t size);
void pp_pattern_fini(struct pp_pattern *p);
/* The payload of message seq: a window into the table, so senders need no copy. */
const void *pp_pattern_msg(const struct pp_pattern *p, uint64_t seq);
/* 0 when rx holds message seq; else 1 + the offset of the first bad byte. */
long pp_pattern_check(const struct pp_pattern *p, uint64_t seq, const void *rx);

#endif
