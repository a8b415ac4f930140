/* The unit tests' simulated link (mock_link.h). */
#include "mock_link.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

uint64_t mock_rnd(struct mock_link *l)
{
	l->rng ^= l->rng << 13;
	l->rng ^= l->rng >> 7;
	l->rng ^= l->rng << 17;
	return l->rng;
}

bool mock_chance(struct mock_link *l, unsigned per_mille)
{
	return per_mille && mock_rnd(l) % 1000 < per_mille;
}

struct mock_frame *mock_enqueue(struct mock_link *l, int dst, const void *data, size_t len,
                                uint64_t delay)
{
	unsigned maxq = l->maxq ? l->maxq : MOCK_MAXQ;
	struct mock_frame *f;

	if (!l->q) {
		l->q = calloc(maxq, sizeof(*l->q));
		cr_assert_not_null(l->q);
	}
	cr_assert_lt(l->nq, maxq, "simulated link overflow");
	f = malloc(sizeof(*f) + len);
	cr_assert_not_null(f);
	f->when = l->now + delay;
	f->order = l->enqueued++;
	f->dst = dst;
	f->len = len;
	memcpy(f->data, data, len);
	l->q[l->nq++] = f;
	return f;
}

static int mock_send(void *ctx, enum gm_class cls, const struct gm_txf *frames, unsigned n)
{
	struct mock_end *e = ctx;
	struct mock_link *l = e->link;
	const struct mock_fault *ft = &l->fault;
	unsigned take = n > 1 && mock_chance(l, ft->split) ? n / 2 : n;

	if (ft->take_max && take > ft->take_max)
		take = ft->take_max;

	if (l->refuse)
		return 0;
	for (unsigned i = 0; i < take; i++) {
		uint8_t f[MOCK_FRAME_MAX];
		size_t len = frames[i].len;
		uint64_t delay = MOCK_HOP_US;
		int dst;

		cr_assert_leq(len, MOCK_FRAME_MAX);
		gm_txf_gather(&frames[i], f);
		/* Anything not for end 0 reaches end 1, as on a wire of two stations. */
		dst = !memcmp(f, l->end[0].mac, 6) ? 0 : 1;
		if (l->tap && l->tap(l, e->id, dst, f, len) != MOCK_PASS)
			continue;
		if (ft->dead || mock_chance(l, ft->drop))
			continue;
		if (mock_chance(l, ft->reorder))
			delay += mock_rnd(l) % (ft->reorder_us ? ft->reorder_us : 300);
		struct mock_frame *q = mock_enqueue(l, dst, f, len, delay);
		if (mock_chance(l, ft->corrupt))
			q->data[mock_rnd(l) % q->len] ^= (uint8_t)(1 + mock_rnd(l) % 255);
		if (mock_chance(l, ft->dup))
			mock_enqueue(l, dst, f, len,
			             delay + mock_rnd(l) % (ft->dup_us ? ft->dup_us : 100));
	}
	return (int)take;
}

int mock_rel_create(struct mock_link *l, int id, const struct gm_rel_cfg *cfg, struct gm_rel **rel)
{
	struct mock_end *e = &l->end[id];
	const struct gm_rel_link link = {.send = mock_send, .ctx = e};

	e->link = l;
	e->id = id;
	memcpy(e->mac, cfg->mac, 6);
	e->rel = NULL;
	int rc = gm_rel_create(cfg, &link, rel);
	if (!rc)
		e->rel = *rel;
	return rc;
}

void mock_deliver(struct mock_link *l)
{
	for (unsigned i = 0; i < l->nq;) {
		struct mock_frame *f = l->q[i];

		if (f->when > l->now) {
			i++;
			continue;
		}
		l->q[i] = l->q[--l->nq];
		gm_rel_input(l->end[f->dst].rel, f->data, f->len, l->now);
		free(f);
	}
}

void mock_flush(struct mock_link *l)
{
	for (int n = 0; n < 2; n++)
		gm_rel_flush(l->end[n].rel, l->now);
}

void mock_advance(struct mock_link *l)
{
	uint64_t next = UINT64_MAX;

	for (unsigned i = 0; i < l->nq; i++)
		if (l->q[i]->when < next)
			next = l->q[i]->when;
	for (int n = 0; n < 2; n++) {
		uint64_t d = gm_rel_next_deadline(l->end[n].rel);
		if (d < next)
			next = d;
	}
	l->now = next == UINT64_MAX || next <= l->now ? l->now + 1 : next;
}

void mock_free(struct mock_link *l)
{
	for (unsigned i = 0; i < l->nq; i++)
		free(l->q[i]);
	free(l->q);
	l->q = NULL;
	l->nq = 0;
}
