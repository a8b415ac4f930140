/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completion queues.  Entries are stored in the widest format and handed
 * out in the one the CQ was opened with.  The ring grows instead of
 * overflowing: with manual progress a completion is only produced while
 * the application calls in, and losing one would hang it.
 */
#include "gm.h"
#include "gm_defaults.h"
#include "gm_nosys.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static size_t entry_size(enum fi_cq_format f)
{
	switch (f) {
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED:
		return sizeof(struct fi_cq_tagged_entry);
	default:
		return 0;
	}
}

static int cq_grow(struct gm_cq *cq)
{
	size_t cap = cq->cap * 2;
	struct gm_cq_slot *r = malloc(cap * sizeof(*r));

	if (!r)
		return -FI_ENOMEM;
	for (size_t i = 0; i < cq->count; i++)
		r[i] = cq->ring[(cq->head + i) % cq->cap];
	free(cq->ring);
	cq->ring = r;
	cq->cap = cap;
	cq->head = 0;
	return 0;
}

void gm_cq_write(struct gm_cq *cq, void *context, uint64_t flags, size_t len, void *buf,
                 uint64_t data, uint64_t tag, fi_addr_t src)
{
	struct gm_cq_slot *s;

	if (cq->count == cq->cap && cq_grow(cq)) {
		GM_WARN(FI_LOG_CQ, "out of memory growing a CQ: completion lost\n");
		return;
	}
	s = &cq->ring[(cq->head + cq->count) % cq->cap];
	s->e = (struct fi_cq_tagged_entry){
	    .op_context = context,
	    .flags = flags,
	    .len = len,
	    .buf = buf,
	    .data = data,
	    .tag = tag,
	};
	s->src = src;
	cq->count++;
	gm_domain_signal(cq->dom);
}

void gm_cq_write_err(struct gm_cq *cq, void *context, uint64_t flags, size_t len, void *buf,
                     uint64_t data, uint64_t tag, size_t olen, int err, int prov_errno)
{
	struct gm_cq_err *e = calloc(1, sizeof(*e));

	if (!e) {
		GM_WARN(FI_LOG_CQ, "out of memory: error completion lost\n");
		return;
	}
	e->e.op_context = context;
	e->e.flags = flags;
	e->e.len = len;
	e->e.buf = buf;
	e->e.data = data;
	e->e.tag = tag;
	e->e.olen = olen;
	e->e.err = err;
	e->e.prov_errno = prov_errno ? prov_errno : err;
	gm_list_add_tail(&cq->errs, &e->entry);
	gm_domain_signal(cq->dom);
}

/* Called with the domain lock held. */
static ssize_t cq_take(struct gm_cq *cq, void *buf, size_t count, fi_addr_t *src)
{
	size_t esz = entry_size(cq->format), n = 0;

	if (!gm_list_empty(&cq->errs))
		return -FI_EAVAIL;
	while (n < count && cq->count) {
		struct gm_cq_slot *s = &cq->ring[cq->head];
		memcpy((char *)buf + n * esz, &s->e, esz);
		if (src)
			src[n] = s->src;
		cq->head = (cq->head + 1) % cq->cap;
		cq->count--;
		n++;
	}
	return n ? (ssize_t)n : -FI_EAGAIN;
}

static ssize_t gm_cq_readfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src)
{
	struct gm_cq *cq = gm_container_of(fcq, struct gm_cq, fid);
	ssize_t ret;

	pthread_mutex_lock(&cq->dom->lock);
	gm_domain_progress(cq->dom);
	ret = cq_take(cq, buf, count, src);
	if (ret == -FI_EAGAIN && gm_domain_idle(cq->dom))
		ret = cq_take(cq, buf, count, src);
	else if (ret != -FI_EAGAIN)
		gm_domain_busy(cq->dom);
	pthread_mutex_unlock(&cq->dom->lock);
	return ret;
}

/* fi_trywait: checked under the lock that every completion is written under. */
int gm_cq_trywait(struct gm_cq *cq)
{
	int ret;

	if (cq->wait_obj == FI_WAIT_NONE)
		return -FI_EINVAL;
	pthread_mutex_lock(&cq->dom->lock);
	gm_domain_progress(cq->dom);
	ret = gm_domain_trywait(cq->dom, cq->count || !gm_list_empty(&cq->errs));
	pthread_mutex_unlock(&cq->dom->lock);
	return ret;
}

static ssize_t gm_cq_read(struct fid_cq *fcq, void *buf, size_t count)
{
	return gm_cq_readfrom(fcq, buf, count, NULL);
}

static ssize_t gm_cq_readerr(struct fid_cq *fcq, struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct gm_cq *cq = gm_container_of(fcq, struct gm_cq, fid);
	struct gm_cq_err *e;

	pthread_mutex_lock(&cq->dom->lock);
	if (gm_list_empty(&cq->errs)) {
		pthread_mutex_unlock(&cq->dom->lock);
		return -FI_EAGAIN;
	}
	e = gm_list_entry(cq->errs.next, struct gm_cq_err, entry);
	gm_list_del(&e->entry);
	pthread_mutex_unlock(&cq->dom->lock);
	/* The caller may provide err_data space (API >= 1.5); we have none to give. */
	void *err_data = buf->err_data;
	*buf = e->e;
	buf->err_data = err_data;
	buf->err_data_size = 0;
	free(e);
	return 1;
}

static int remaining_ms(const struct timespec *deadline)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	long ms =
	    (deadline->tv_sec - now.tv_sec) * 1000 + (deadline->tv_nsec - now.tv_nsec) / 1000000;
	return ms < 0 ? 0 : (int)ms;
}

static ssize_t gm_cq_sreadfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src,
                               const void *cond, int timeout)
{
	struct gm_cq *cq = gm_container_of(fcq, struct gm_cq, fid);
	struct timespec deadline;
	ssize_t ret;

	if (cq->wait_obj == FI_WAIT_NONE)
		return -FI_ENOSYS;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	if (timeout >= 0) {
		deadline.tv_sec += timeout / 1000;
		deadline.tv_nsec += (long)(timeout % 1000) * 1000000;
		if (deadline.tv_nsec >= 1000000000) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000;
		}
	}
	pthread_mutex_lock(&cq->dom->lock);
	for (;;) {
		gm_domain_progress(cq->dom);
		ret = cq_take(cq, buf, count, src);
		if (ret != -FI_EAGAIN)
			break;
		int left = timeout < 0 ? -1 : remaining_ms(&deadline);
		if (timeout >= 0 && left == 0)
			break;
		gm_domain_wait(cq->dom, left);
	}
	pthread_mutex_unlock(&cq->dom->lock);
	return ret;
}

static ssize_t gm_cq_sread(struct fid_cq *fcq, void *buf, size_t count, const void *cond,
                           int timeout)
{
	return gm_cq_sreadfrom(fcq, buf, count, NULL, cond, timeout);
}

static int gm_cq_signal(struct fid_cq *fcq)
{
	return -FI_ENOSYS;
}

static const char *gm_cq_strerror(struct fid_cq *fcq, int prov_errno, const void *err_data,
                                  char *buf, size_t len)
{
	const char *s;

	switch (prov_errno) {
	case FI_EIO:
		s = "gamma: the peer stopped answering (no acknowledgement within "
		    "FI_GAMMA_PEER_TIMEOUT) or restarted, or its message was cut short";
		break;
	case FI_GAMMA_ERR_MSG_CRC:
		s = "gamma: the message failed its end-to-end CRC: its bytes changed between the "
		    "sender's checksum and the wire (did the sender write or receive into the "
		    "buffer before the send completed?)";
		break;
	case FI_EREMOTEIO:
		s = "gamma: the sender gave the message up (no memory for the pull, its link "
		    "failed, or it closed)";
		break;
	case FI_ETRUNC:
		s = "gamma: message larger than the receive buffer; truncated";
		break;
	case FI_ECANCELED:
		s = "gamma: operation canceled";
		break;
	case FI_ENOMSG:
		s = "gamma: no matching message (FI_PEEK)";
		break;
	default:
		s = fi_strerror(prov_errno);
	}
	if (buf && len) {
		strncpy(buf, s, len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return s;
}

static int gm_cq_close(struct fid *fid)
{
	struct gm_cq *cq = gm_container_of(fid, struct gm_cq, fid.fid);
	struct gm_list *pos, *tmp;

	if (cq->refs)
		return -FI_EBUSY;
	pthread_mutex_lock(&cq->dom->lock);
	cq->dom->refs--;
	pthread_mutex_unlock(&cq->dom->lock);
	gm_list_for_each_safe(&cq->errs, pos, tmp)
	    free(gm_list_entry(pos, struct gm_cq_err, entry));
	free(cq->ring);
	free(cq);
	return 0;
}

static int gm_cq_control(struct fid *fid, int command, void *arg)
{
	struct gm_cq *cq = gm_container_of(fid, struct gm_cq, fid.fid);

	return gm_domain_wait_control(cq->dom, cq->wait_obj, command, arg);
}

static struct fi_ops gm_cq_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = gm_cq_close,
    .bind = gm_no_bind,
    .control = gm_cq_control,
    .ops_open = gm_no_ops_open,
};

static struct fi_ops_cq gm_cq_ops = {
    .size = sizeof(struct fi_ops_cq),
    .read = gm_cq_read,
    .readfrom = gm_cq_readfrom,
    .readerr = gm_cq_readerr,
    .sread = gm_cq_sread,
    .sreadfrom = gm_cq_sreadfrom,
    .signal = gm_cq_signal,
    .strerror = gm_cq_strerror,
};

int gm_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **fcq,
               void *context)
{
	struct gm_domain *dom = gm_container_of(domain, struct gm_domain, fid);
	struct gm_cq *cq;

	if (!attr)
		return -FI_EINVAL;
	if (attr->format == FI_CQ_FORMAT_UNSPEC)
		attr->format = FI_CQ_FORMAT_CONTEXT;
	if (!entry_size(attr->format))
		return -FI_ENOSYS;
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
		break;
	default:
		return -FI_ENOSYS;
	}
	if (attr->wait_cond != FI_CQ_COND_NONE)
		return -FI_ENOSYS;
	if (attr->flags & FI_AFFINITY)
		return -FI_EBADFLAGS;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->cap = attr->size ? attr->size : GM_DEFAULT_CQ_SIZE;
	cq->ring = calloc(cq->cap, sizeof(*cq->ring));
	if (!cq->ring) {
		free(cq);
		return -FI_ENOMEM;
	}
	cq->dom = dom;
	cq->format = attr->format;
	cq->wait_obj = attr->wait_obj == FI_WAIT_UNSPEC ? FI_WAIT_FD : attr->wait_obj;
	gm_list_init(&cq->errs);
	cq->fid.fid.fclass = FI_CLASS_CQ;
	cq->fid.fid.context = context;
	cq->fid.fid.ops = &gm_cq_fi_ops;
	cq->fid.ops = &gm_cq_ops;
	pthread_mutex_lock(&dom->lock);
	dom->refs++;
	pthread_mutex_unlock(&dom->lock);
	*fcq = &cq->fid;
	return 0;
}
