/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Event queues.  An RDM endpoint has no connection events, so what lands
 * here is what the application writes (fi_eq_write), AV insert completions
 * and their per-address errors (FI_EVENT AVs), and the overrun error.
 * Errors queue in order with the events: a reader meets -FI_EAVAIL when
 * one is at the head, as fi_av(3) wants each insert's errors before its
 * FI_AV_COMPLETE.  The EQ belongs to the fabric, not
 * to a domain, so it has its own lock; its wait object is an eventfd that
 * is readable exactly while the queue holds something to read.
 */
#include "gm.h"
#include "gm_defaults.h"
#include "gm_nosys.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* Bound on one fi_eq_write: a CM entry plus generous private data. */
#define GM_EQ_MAX_ENTRY 4096

struct gm_eq_event {
	struct gm_list entry;
	uint32_t event;
	bool err; /* data is a struct fi_eq_err_entry, for fi_eq_readerr */
	size_t len;
	uint8_t data[];
};

struct gm_eq {
	struct fid_eq fid;
	pthread_mutex_t lock;
	struct gm_list events;
	size_t count, size;
	bool overrun; /* fatal: writes fail, readers get FI_EOVERRUN after the rest */
	bool overrun_read;
	int fd;        /* eventfd, -1 for FI_WAIT_NONE */
	bool signaled; /* fd currently readable */
	int refs;      /* endpoints and AVs bound */
};

static bool eq_readable(const struct gm_eq *eq)
{
	return eq->count || (eq->overrun && !eq->overrun_read);
}

/* Under the lock: make the fd readable exactly while something waits. */
static void eq_sync_fd(struct gm_eq *eq)
{
	uint64_t v = 1;

	if (eq->fd < 0 || eq_readable(eq) == eq->signaled)
		return;
	if (eq->signaled) {
		if (read(eq->fd, &v, sizeof(v)) == sizeof(v))
			eq->signaled = false;
	} else if (write(eq->fd, &v, sizeof(v)) == sizeof(v)) {
		eq->signaled = true;
	}
}

static ssize_t eq_push(struct gm_eq *eq, uint32_t event, bool err, const void *buf, size_t len)
{
	struct gm_eq_event *ev;
	ssize_t ret = (ssize_t)len;

	if (!buf || len > GM_EQ_MAX_ENTRY)
		return -FI_EINVAL;
	pthread_mutex_lock(&eq->lock);
	if (eq->overrun) {
		ret = -FI_EOVERRUN;
	} else if (eq->count >= eq->size) {
		eq->overrun = true;
		ret = -FI_EOVERRUN;
	} else if (!(ev = malloc(sizeof(*ev) + len))) {
		ret = -FI_ENOMEM;
	} else {
		ev->event = event;
		ev->err = err;
		ev->len = len;
		memcpy(ev->data, buf, len);
		gm_list_add_tail(&eq->events, &ev->entry);
		eq->count++;
	}
	eq_sync_fd(eq);
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

ssize_t gm_eq_report(struct gm_eq *eq, uint32_t event, const void *buf, size_t len)
{
	return eq_push(eq, event, false, buf, len);
}

ssize_t gm_eq_report_err(struct gm_eq *eq, const struct fi_eq_err_entry *err)
{
	struct fi_eq_err_entry e = *err;

	e.err_data = NULL; /* the reader's buffer from API 1.5 on: gamma has none to give */
	e.err_data_size = 0;
	return eq_push(eq, 0, true, &e, sizeof(e));
}

void gm_eq_hold(struct gm_eq *eq, int delta)
{
	pthread_mutex_lock(&eq->lock);
	eq->refs += delta;
	pthread_mutex_unlock(&eq->lock);
}

struct gm_eq *gm_eq_of(struct fid *fid)
{
	return gm_container_of(fid, struct gm_eq, fid.fid);
}

static ssize_t gm_eq_write(struct fid_eq *feq, uint32_t event, const void *buf, size_t len,
                           uint64_t flags)
{
	if (flags)
		return -FI_EBADFLAGS;
	return eq_push(gm_eq_of(&feq->fid), event, false, buf, len);
}

static ssize_t eq_take(struct gm_eq *eq, uint32_t *event, void *buf, size_t len, uint64_t flags)
{
	struct gm_eq_event *ev;
	ssize_t ret;

	if (flags & ~FI_PEEK)
		return -FI_EBADFLAGS;
	if (!eq->count)
		return eq->overrun && !eq->overrun_read ? -FI_EAVAIL : -FI_EAGAIN;
	ev = gm_list_entry(eq->events.next, struct gm_eq_event, entry);
	if (ev->err)
		return -FI_EAVAIL;
	if (len < ev->len)
		return -FI_ETOOSMALL;
	if (event)
		*event = ev->event;
	memcpy(buf, ev->data, ev->len);
	ret = (ssize_t)ev->len;
	if (!(flags & FI_PEEK)) {
		gm_list_del(&ev->entry);
		eq->count--;
		free(ev);
		eq_sync_fd(eq);
	}
	return ret;
}

static ssize_t gm_eq_read(struct fid_eq *feq, uint32_t *event, void *buf, size_t len,
                          uint64_t flags)
{
	struct gm_eq *eq = gm_eq_of(&feq->fid);
	ssize_t ret;

	pthread_mutex_lock(&eq->lock);
	ret = eq_take(eq, event, buf, len, flags);
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static ssize_t gm_eq_readerr(struct fid_eq *feq, struct fi_eq_err_entry *buf, uint64_t flags)
{
	struct gm_eq *eq = gm_eq_of(&feq->fid);
	struct gm_eq_event *ev;
	ssize_t ret = -FI_EAGAIN;

	if (flags & ~FI_PEEK)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&eq->lock);
	ev = eq->count ? gm_list_entry(eq->events.next, struct gm_eq_event, entry) : NULL;
	if (ev && ev->err) {
		const struct fi_eq_err_entry *e = (const void *)ev->data;

		buf->fid = e->fid;
		buf->context = e->context;
		buf->data = e->data;
		buf->err = e->err;
		buf->prov_errno = e->prov_errno;
		buf->err_data_size = 0;
		if (!(flags & FI_PEEK)) {
			gm_list_del(&ev->entry);
			eq->count--;
			free(ev);
			eq_sync_fd(eq);
		}
		ret = sizeof(*buf);
	} else if (!eq->count && eq->overrun && !eq->overrun_read) {
		/* err_data is caller-owned from API 1.5 on: leave it, report none */
		buf->fid = &eq->fid.fid;
		buf->context = NULL;
		buf->data = 0;
		buf->err = FI_EOVERRUN;
		buf->prov_errno = FI_EOVERRUN;
		buf->err_data_size = 0;
		if (!(flags & FI_PEEK))
			eq->overrun_read = true;
		eq_sync_fd(eq);
		ret = sizeof(*buf);
	}
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static int ms_left(const struct timespec *deadline)
{
	struct timespec now;
	long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (deadline->tv_sec - now.tv_sec) * 1000 + (deadline->tv_nsec - now.tv_nsec) / 1000000;
	return ms < 0 ? 0 : (int)ms;
}

static ssize_t gm_eq_sread(struct fid_eq *feq, uint32_t *event, void *buf, size_t len, int timeout,
                           uint64_t flags)
{
	struct gm_eq *eq = gm_eq_of(&feq->fid);
	struct timespec deadline;
	ssize_t ret;

	if (eq->fd < 0)
		return -FI_ENOSYS;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	if (timeout > 0) {
		deadline.tv_sec += timeout / 1000;
		deadline.tv_nsec += (long)(timeout % 1000) * 1000000;
		if (deadline.tv_nsec >= 1000000000) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000;
		}
	}
	for (;;) {
		pthread_mutex_lock(&eq->lock);
		ret = eq_take(eq, event, buf, len, flags);
		pthread_mutex_unlock(&eq->lock);
		if (ret != -FI_EAGAIN)
			return ret;
		int left = timeout < 0 ? -1 : ms_left(&deadline);
		if (!left)
			return -FI_EAGAIN;
		struct pollfd p = {.fd = eq->fd, .events = POLLIN};
		if (poll(&p, 1, left) < 0 && errno != EINTR)
			return -errno;
	}
}

static const char *gm_eq_strerror(struct fid_eq *feq, int prov_errno, const void *err_data,
                                  char *buf, size_t len)
{
	const char *s = prov_errno == FI_EOVERRUN
	                    ? "gamma: event queue overrun (more events than fi_eq_attr.size)"
	                    : fi_strerror(prov_errno);

	if (buf && len) {
		strncpy(buf, s, len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return s;
}

/* fi_trywait: 0 when the EQ is empty, so that blocking on its fd is safe. */
int gm_eq_trywait(struct fid *fid)
{
	struct gm_eq *eq = gm_eq_of(fid);
	int ret;

	if (eq->fd < 0)
		return -FI_EINVAL;
	pthread_mutex_lock(&eq->lock);
	ret = eq_readable(eq) ? -FI_EAGAIN : 0;
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static int gm_eq_close(struct fid *fid)
{
	struct gm_eq *eq = gm_eq_of(fid);
	struct gm_list *pos, *tmp;

	pthread_mutex_lock(&eq->lock);
	if (eq->refs) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_EBUSY;
	}
	pthread_mutex_unlock(&eq->lock);
	gm_list_for_each_safe(&eq->events, pos, tmp)
	    free(gm_list_entry(pos, struct gm_eq_event, entry));
	if (eq->fd >= 0)
		close(eq->fd);
	pthread_mutex_destroy(&eq->lock);
	free(eq);
	return 0;
}

static int gm_eq_control(struct fid *fid, int command, void *arg)
{
	struct gm_eq *eq = gm_eq_of(fid);

	switch (command) {
	case FI_GETWAIT:
		if (eq->fd < 0)
			return -FI_ENODATA;
		*(int *)arg = eq->fd;
		return 0;
	case FI_GETWAITOBJ:
		*(enum fi_wait_obj *)arg = eq->fd < 0 ? FI_WAIT_NONE : FI_WAIT_FD;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static struct fi_ops gm_eq_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = gm_eq_close,
    .bind = gm_no_bind,
    .control = gm_eq_control,
    .ops_open = gm_no_ops_open,
};

static struct fi_ops_eq gm_eq_ops = {
    .size = sizeof(struct fi_ops_eq),
    .read = gm_eq_read,
    .readerr = gm_eq_readerr,
    .write = gm_eq_write,
    .sread = gm_eq_sread,
    .strerror = gm_eq_strerror,
};

int gm_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **feq,
               void *context)
{
	struct gm_eq *eq;
	int fd = -1;

	if (!attr || !feq)
		return -FI_EINVAL;
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
		break;
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
		fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (fd < 0)
			return -errno;
		break;
	default:
		return -FI_ENOSYS; /* wait sets, mutex/cond, yield */
	}
	if (attr->flags & ~(uint64_t)(FI_WRITE | FI_AFFINITY)) {
		if (fd >= 0)
			close(fd);
		return -FI_EBADFLAGS;
	}
	eq = calloc(1, sizeof(*eq));
	if (!eq) {
		if (fd >= 0)
			close(fd);
		return -FI_ENOMEM;
	}
	pthread_mutex_init(&eq->lock, NULL);
	gm_list_init(&eq->events);
	eq->size = attr->size ? attr->size : GM_DEFAULT_EQ_SIZE;
	eq->fd = fd;
	eq->fid.fid.fclass = FI_CLASS_EQ;
	eq->fid.fid.context = context;
	eq->fid.fid.ops = &gm_eq_fi_ops;
	eq->fid.ops = &gm_eq_ops;
	*feq = &eq->fid;
	return 0;
}
