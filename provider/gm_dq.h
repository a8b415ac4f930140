/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The double queue: two FIFO queues of frames ready to go, high before low,
 * with a starvation guard.  Pure data structure (no I/O, no clock, no
 * logging) so the unit tests drive it directly.  Items are intrusive: the
 * frame buffer embeds a struct gm_dq_item, and an item is in at most one
 * queue at a time.
 */
#ifndef GM_DQ_H
#define GM_DQ_H

#include <stdbool.h>
#include <stddef.h>

struct gm_dq_item {
	struct gm_dq_item *prev, *next;
	unsigned char cls; /* enum gm_class it was queued with */
	bool queued;
};

struct gm_dq_list {
	struct gm_dq_item *head, *tail;
	size_t len;
};

struct gm_dq {
	struct gm_dq_list q[2]; /* [GM_CLASS_HIGH], [GM_CLASS_LOW]; q[0] only in FIFO mode */
	bool dq;                /* false: one FIFO in arrival order */
	unsigned low_share;     /* one low frame after this many highs; 0: strict priority */
	unsigned high_run;      /* highs served in a row while low frames waited */
};

void gm_dq_init(struct gm_dq *d, bool dq, unsigned low_share);
/* Append (or, with front, prepend: a frame the link could not take). */
void gm_dq_push(struct gm_dq *d, struct gm_dq_item *it, int cls, bool front);
/* Next frame to send, or NULL. */
struct gm_dq_item *gm_dq_pop(struct gm_dq *d);
/* Take a queued item out (it was acknowledged before it went out). */
void gm_dq_remove(struct gm_dq *d, struct gm_dq_item *it);
size_t gm_dq_len(const struct gm_dq *d);

#endif /* GM_DQ_H */
