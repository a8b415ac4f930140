/* SPDX-License-Identifier: BSD-2-Clause */
/* The double-queue transmit scheduler (see gm_dq.h). */
#include "gm_dq.h"

void gm_dq_init(struct gm_dq *d, bool dq, unsigned low_share)
{
	*d = (struct gm_dq){.dq = dq, .low_share = low_share};
}

static struct gm_dq_list *list_of(struct gm_dq *d, int cls)
{
	return &d->q[d->dq && cls ? 1 : 0];
}

void gm_dq_push(struct gm_dq *d, struct gm_dq_item *it, int cls, bool front)
{
	struct gm_dq_list *l = list_of(d, cls);

	it->cls = (unsigned char)cls;
	it->queued = true;
	if (front) {
		it->prev = NULL;
		it->next = l->head;
		if (l->head)
			l->head->prev = it;
		else
			l->tail = it;
		l->head = it;
	} else {
		it->next = NULL;
		it->prev = l->tail;
		if (l->tail)
			l->tail->next = it;
		else
			l->head = it;
		l->tail = it;
	}
	l->len++;
}

static void unlink_item(struct gm_dq_list *l, struct gm_dq_item *it)
{
	if (it->prev)
		it->prev->next = it->next;
	else
		l->head = it->next;
	if (it->next)
		it->next->prev = it->prev;
	else
		l->tail = it->prev;
	it->prev = it->next = NULL;
	it->queued = false;
	l->len--;
}

void gm_dq_remove(struct gm_dq *d, struct gm_dq_item *it)
{
	if (it->queued)
		unlink_item(list_of(d, it->cls), it);
}

struct gm_dq_item *gm_dq_pop(struct gm_dq *d)
{
	struct gm_dq_list *hi = &d->q[0], *lo = &d->q[1];
	struct gm_dq_item *it;

	if (!d->dq || !lo->head) {
		d->high_run = 0;
		it = hi->head;
		if (it)
			unlink_item(hi, it);
		return it;
	}
	/* Low frames wait: serve high unless the guard says a low one is due. */
	if (hi->head && (!d->low_share || d->high_run < d->low_share)) {
		d->high_run++;
		it = hi->head;
		unlink_item(hi, it);
		return it;
	}
	d->high_run = 0;
	it = lo->head;
	unlink_item(lo, it);
	return it;
}

size_t gm_dq_len(const struct gm_dq *d)
{
	return d->q[0].len + d->q[1].len;
}
