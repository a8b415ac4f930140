/* SPDX-License-Identifier: BSD-2-Clause */
/* Completion counters: success and error counts bound to endpoints. */
#include "gm.h"
#include "gm_nosys.h"

#include <stdlib.h>
#include <time.h>

void gm_cntr_inc(struct gm_cntr *cntr)
{
	if (cntr) {
		cntr->value++;
		gm_domain_signal(cntr->dom);
	}
}

void gm_cntr_inc_err(struct gm_cntr *cntr)
{
	if (cntr) {
		cntr->err++;
		gm_domain_signal(cntr->dom);
	}
}

/* fi_trywait: a counter is pending when it changed since it was last read. */
int gm_cntr_trywait(struct gm_cntr *c)
{
	int ret;

	if (c->wait_obj == FI_WAIT_NONE)
		return -FI_EINVAL;
	pthread_mutex_lock(&c->dom->lock);
	gm_domain_progress(c->dom);
	ret = gm_domain_trywait(c->dom, c->value != c->value_seen || c->err != c->err_seen);
	pthread_mutex_unlock(&c->dom->lock);
	return ret;
}

static uint64_t gm_cntr_read(struct fid_cntr *fc)
{
	struct gm_cntr *c = gm_container_of(fc, struct gm_cntr, fid);
	uint64_t v;

	pthread_mutex_lock(&c->dom->lock);
	gm_domain_progress(c->dom);
	v = c->value_seen = c->value;
	pthread_mutex_unlock(&c->dom->lock);
	return v;
}

static uint64_t gm_cntr_readerr(struct fid_cntr *fc)
{
	struct gm_cntr *c = gm_container_of(fc, struct gm_cntr, fid);
	uint64_t v;

	pthread_mutex_lock(&c->dom->lock);
	gm_domain_progress(c->dom);
	v = c->err_seen = c->err;
	pthread_mutex_unlock(&c->dom->lock);
	return v;
}

static int gm_cntr_add(struct fid_cntr *fc, uint64_t value)
{
	struct gm_cntr *c = gm_container_of(fc, struct gm_cntr, fid);

	pthread_mutex_lock(&c->dom->lock);
	c->value += value;
	pthread_mutex_unlock(&c->dom->lock);
	return 0;
}

static int gm_cntr_set(struct fid_cntr *fc, uint64_t value)
{
	struct gm_cntr *c = gm_container_of(fc, struct gm_cntr, fid);

	pthread_mutex_lock(&c->dom->lock);
	c->value = value;
	pthread_mutex_unlock(&c->dom->lock);
	return 0;
}

static int gm_cntr_adderr(struct fid_cntr *fc, uint64_t value)
{
	struct gm_cntr *c = gm_container_of(fc, struct gm_cntr, fid);

	pthread_mutex_lock(&c->dom->lock);
	c->err += value;
	pthread_mutex_unlock(&c->dom->lock);
	return 0;
}

static int gm_cntr_seterr(struct fid_cntr *fc, uint64_t value)
{
	struct gm_cntr *c = gm_container_of(fc, struct gm_cntr, fid);

	pthread_mutex_lock(&c->dom->lock);
	c->err = value;
	pthread_mutex_unlock(&c->dom->lock);
	return 0;
}

static int64_t ms_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t0->tv_sec) * 1000 + (now.tv_nsec - t0->tv_nsec) / 1000000;
}

static int gm_cntr_wait(struct fid_cntr *fc, uint64_t threshold, int timeout)
{
	struct gm_cntr *c = gm_container_of(fc, struct gm_cntr, fid);
	struct timespec t0;
	uint64_t err0;
	int ret = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_mutex_lock(&c->dom->lock);
	err0 = c->err;
	for (;;) {
		gm_domain_progress(c->dom);
		if (c->value >= threshold)
			break;
		if (c->err != err0) {
			ret = -FI_EAVAIL;
			break;
		}
		int left = -1;
		if (timeout >= 0) {
			left = timeout - (int)ms_since(&t0);
			if (left <= 0) {
				ret = -FI_ETIMEDOUT;
				break;
			}
		}
		gm_domain_wait(c->dom, left);
	}
	pthread_mutex_unlock(&c->dom->lock);
	return ret;
}

static int gm_cntr_close(struct fid *fid)
{
	struct gm_cntr *c = gm_container_of(fid, struct gm_cntr, fid.fid);

	if (c->refs)
		return -FI_EBUSY;
	pthread_mutex_lock(&c->dom->lock);
	c->dom->refs--;
	pthread_mutex_unlock(&c->dom->lock);
	free(c);
	return 0;
}

static int gm_cntr_control(struct fid *fid, int command, void *arg)
{
	struct gm_cntr *c = gm_container_of(fid, struct gm_cntr, fid.fid);

	return gm_domain_wait_control(c->dom, c->wait_obj, command, arg);
}

static struct fi_ops gm_cntr_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = gm_cntr_close,
    .bind = gm_no_bind,
    .control = gm_cntr_control,
    .ops_open = gm_no_ops_open,
};

static struct fi_ops_cntr gm_cntr_ops = {
    .size = sizeof(struct fi_ops_cntr),
    .read = gm_cntr_read,
    .readerr = gm_cntr_readerr,
    .add = gm_cntr_add,
    .set = gm_cntr_set,
    .wait = gm_cntr_wait,
    .adderr = gm_cntr_adderr,
    .seterr = gm_cntr_seterr,
};

int gm_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **fc,
                 void *context)
{
	struct gm_domain *dom = gm_container_of(domain, struct gm_domain, fid);
	struct gm_cntr *c;

	if (attr) {
		if (attr->events != FI_CNTR_EVENTS_COMP)
			return -FI_ENOSYS;
		if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC &&
		    attr->wait_obj != FI_WAIT_FD)
			return -FI_ENOSYS;
		if (attr->flags)
			return -FI_EBADFLAGS;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -FI_ENOMEM;
	c->dom = dom;
	c->wait_obj = attr && attr->wait_obj == FI_WAIT_NONE ? FI_WAIT_NONE : FI_WAIT_FD;
	c->fid.fid.fclass = FI_CLASS_CNTR;
	c->fid.fid.context = context;
	c->fid.fid.ops = &gm_cntr_fi_ops;
	c->fid.ops = &gm_cntr_ops;
	pthread_mutex_lock(&dom->lock);
	dom->refs++;
	pthread_mutex_unlock(&dom->lock);
	*fc = &c->fid;
	return 0;
}
