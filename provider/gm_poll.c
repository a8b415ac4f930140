/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Poll sets (fi_poll(3)) over the CQs and counters of one domain: one call
 * progresses the domain and names every member with something new.  A
 * counter counts as new when its success or error value moved since this
 * set last looked.
 */
#include "gm.h"
#include "gm_nosys.h"

#include <stdlib.h>

struct gm_poll_item {
	struct fid *fid;
	uint64_t seen_value, seen_err;
};

struct gm_poll {
	struct fid_poll fid;
	struct gm_domain *dom;
	struct gm_poll_item *items;
	size_t n, cap;
};

#define GM_POLL(p) gm_container_of(p, struct gm_poll, fid)

static int *member_refs(struct gm_poll *ps, struct fid *f)
{
	if (f->fclass == FI_CLASS_CQ) {
		struct gm_cq *cq = gm_container_of(f, struct gm_cq, fid.fid);
		return cq->dom == ps->dom ? &cq->refs : NULL;
	}
	if (f->fclass == FI_CLASS_CNTR) {
		struct gm_cntr *c = gm_container_of(f, struct gm_cntr, fid.fid);
		return c->dom == ps->dom ? &c->refs : NULL;
	}
	return NULL;
}

static bool item_ready(struct gm_poll_item *it)
{
	if (it->fid->fclass == FI_CLASS_CQ) {
		struct gm_cq *cq = gm_container_of(it->fid, struct gm_cq, fid.fid);
		return cq->count || !gm_list_empty(&cq->errs);
	}
	struct gm_cntr *c = gm_container_of(it->fid, struct gm_cntr, fid.fid);
	bool moved = c->value != it->seen_value || c->err != it->seen_err;

	it->seen_value = c->value;
	it->seen_err = c->err;
	return moved;
}

static int gm_poll_poll(struct fid_poll *fp, void **context, int count)
{
	struct gm_poll *ps = GM_POLL(fp);
	int n = 0;

	if (count < 0 || (count && !context))
		return -FI_EINVAL;
	pthread_mutex_lock(&ps->dom->lock);
	gm_domain_progress(ps->dom);
	for (size_t i = 0; i < ps->n && n < count; i++)
		if (item_ready(&ps->items[i]))
			context[n++] = ps->items[i].fid->context;
	pthread_mutex_unlock(&ps->dom->lock);
	return n;
}

static int gm_poll_add(struct fid_poll *fp, struct fid *f, uint64_t flags)
{
	struct gm_poll *ps = GM_POLL(fp);
	int ret = 0, *refs;

	if (flags)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&ps->dom->lock);
	refs = member_refs(ps, f);
	if (!refs) {
		ret = -FI_EINVAL; /* only this domain's CQs and counters */
	} else if (ps->n == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 8;
		struct gm_poll_item *it = realloc(ps->items, cap * sizeof(*it));
		if (it) {
			ps->items = it;
			ps->cap = cap;
		} else {
			ret = -FI_ENOMEM;
		}
	}
	if (!ret) {
		ps->items[ps->n] = (struct gm_poll_item){.fid = f};
		if (f->fclass == FI_CLASS_CNTR) {
			struct gm_cntr *c = gm_container_of(f, struct gm_cntr, fid.fid);
			ps->items[ps->n].seen_value = c->value;
			ps->items[ps->n].seen_err = c->err;
		}
		ps->n++;
		(*refs)++;
	}
	pthread_mutex_unlock(&ps->dom->lock);
	return ret;
}

static int gm_poll_del(struct fid_poll *fp, struct fid *f, uint64_t flags)
{
	struct gm_poll *ps = GM_POLL(fp);
	int ret = -FI_ENOENT;

	if (flags)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&ps->dom->lock);
	for (size_t i = 0; i < ps->n; i++) {
		if (ps->items[i].fid != f)
			continue;
		(*member_refs(ps, f))--;
		ps->items[i] = ps->items[--ps->n];
		ret = 0;
		break;
	}
	pthread_mutex_unlock(&ps->dom->lock);
	return ret;
}

static int gm_poll_close(struct fid *fid)
{
	struct gm_poll *ps = gm_container_of(fid, struct gm_poll, fid.fid);
	struct gm_domain *dom = ps->dom;

	pthread_mutex_lock(&dom->lock);
	for (size_t i = 0; i < ps->n; i++)
		(*member_refs(ps, ps->items[i].fid))--;
	dom->refs--;
	pthread_mutex_unlock(&dom->lock);
	free(ps->items);
	free(ps);
	return 0;
}

static struct fi_ops gm_poll_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = gm_poll_close,
    .bind = gm_no_bind,
    .control = gm_no_control,
    .ops_open = gm_no_ops_open,
};

static struct fi_ops_poll gm_poll_ops = {
    .size = sizeof(struct fi_ops_poll),
    .poll = gm_poll_poll,
    .poll_add = gm_poll_add,
    .poll_del = gm_poll_del,
};

int gm_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr, struct fid_poll **fp)
{
	struct gm_domain *dom = gm_container_of(domain, struct gm_domain, fid);
	struct gm_poll *ps;

	if (attr && attr->flags)
		return -FI_EBADFLAGS;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -FI_ENOMEM;
	ps->dom = dom;
	ps->fid.fid.fclass = FI_CLASS_POLL;
	ps->fid.fid.ops = &gm_poll_fi_ops;
	ps->fid.ops = &gm_poll_ops;
	pthread_mutex_lock(&dom->lock);
	dom->refs++;
	pthread_mutex_unlock(&dom->lock);
	*fp = &ps->fid;
	return 0;
}
