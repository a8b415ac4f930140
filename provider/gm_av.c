/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Address vector.  An address is struct gm_addr (MAC + port, 8 bytes).
 * fi_addr_t is the index of the entry for both FI_AV_TABLE and FI_AV_MAP:
 * it is opaque to the application either way, and an index makes the
 * per-peer lookup on every send a plain array access.
 */
#include "gm.h"
#include "gm_nosys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct gm_addr *gm_av_get(struct gm_av *av, fi_addr_t fi_addr)
{
	if (fi_addr >= av->count || !av->valid[fi_addr])
		return NULL;
	return &av->addrs[fi_addr];
}

static int av_grow(struct gm_av *av, size_t need)
{
	size_t cap = av->cap ? av->cap : 64;

	while (cap < need)
		cap *= 2;
	if (cap == av->cap)
		return 0;
	struct gm_addr *a = realloc(av->addrs, cap * sizeof(*a));
	if (!a)
		return -FI_ENOMEM;
	av->addrs = a;
	bool *v = realloc(av->valid, cap * sizeof(*v));
	if (!v)
		return -FI_ENOMEM;
	av->valid = v;
	av->cap = cap;
	return 0;
}

static int gm_av_insert(struct fid_av *fav, const void *addr, size_t count, fi_addr_t *fi_addr,
                        uint64_t flags, void *context)
{
	struct gm_av *av = gm_container_of(fav, struct gm_av, fid);
	const struct gm_addr *in = addr;
	size_t first;
	int ret;

	if (flags)
		return -FI_EBADFLAGS;
	if (count && !addr)
		return -FI_EINVAL;
	if ((av->flags & FI_EVENT) && !av->eq)
		return -FI_ENOEQ;
	pthread_mutex_lock(&av->dom->lock);
	ret = av_grow(av, av->count + count);
	if (!ret && 2 * (av->count + count) > av->index_cap)
		ret = gm_av_index_rebuild(av, av->count + count);
	if (ret) {
		pthread_mutex_unlock(&av->dom->lock);
		return ret;
	}
	first = av->count;
	for (size_t i = 0; i < count; i++) {
		struct gm_addr a;
		memcpy(&a, &in[i], sizeof(a));
		av->addrs[av->count] = a;
		av->valid[av->count] = true;
		if (fi_addr)
			fi_addr[i] = av->count;
		av->count++;
	}
	gm_av_index_added(av, first);
	pthread_mutex_unlock(&av->dom->lock);
	if (av->flags & FI_EVENT) {
		/* resolution is local and immediate: the completion follows at once */
		struct fi_eq_entry e = {.fid = &av->fid.fid, .context = context, .data = count};
		ssize_t w = gm_eq_report(av->eq, FI_AV_COMPLETE, &e, sizeof(e));
		return w < 0 ? (int)w : 0;
	}
	return (int)count;
}

static int gm_av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct gm_av *av = gm_container_of(fid, struct gm_av, fid.fid);

	if (flags)
		return -FI_EBADFLAGS;
	if (bfid->fclass != FI_CLASS_EQ || av->eq)
		return -FI_EINVAL;
	av->eq = gm_eq_of(bfid);
	gm_eq_hold(av->eq, 1);
	return 0;
}

static int gm_av_remove(struct fid_av *fav, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	struct gm_av *av = gm_container_of(fav, struct gm_av, fid);
	int ret = 0;

	if (flags)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&av->dom->lock);
	for (size_t i = 0; i < count; i++) {
		if (fi_addr[i] >= av->count || !av->valid[fi_addr[i]])
			ret = -FI_EINVAL;
		else
			av->valid[fi_addr[i]] = false;
	}
	if (av->index_cap)
		gm_av_index_rebuild(av, av->count); /* same size: cannot fail */
	pthread_mutex_unlock(&av->dom->lock);
	return ret;
}

static int gm_av_lookup(struct fid_av *fav, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	struct gm_av *av = gm_container_of(fav, struct gm_av, fid);
	const struct gm_addr *a;
	size_t n = *addrlen < sizeof(*a) ? *addrlen : sizeof(*a);

	pthread_mutex_lock(&av->dom->lock);
	a = gm_av_get(av, fi_addr);
	if (a)
		memcpy(addr, a, n);
	pthread_mutex_unlock(&av->dom->lock);
	if (!a)
		return -FI_ENOENT;
	*addrlen = sizeof(*a);
	return 0;
}

static const char *gm_av_straddr(struct fid_av *fav, const void *addr, char *buf, size_t *len)
{
	struct gm_addr a;
	char tmp[64];
	int n;

	memcpy(&a, addr, sizeof(a));
	n = snprintf(tmp, sizeof(tmp), "gamma://%02x:%02x:%02x:%02x:%02x:%02x/%u", a.mac[0],
	             a.mac[1], a.mac[2], a.mac[3], a.mac[4], a.mac[5], a.port);
	if (*len > 0) {
		size_t c = (size_t)n < *len - 1 ? (size_t)n : *len - 1;
		memcpy(buf, tmp, c);
		buf[c] = '\0';
	}
	*len = (size_t)n + 1;
	return buf;
}

static int gm_av_insertsvc(struct fid_av *av, const char *node, const char *service,
                           fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static int gm_av_insertsym(struct fid_av *av, const char *node, size_t nodecnt, const char *service,
                           size_t svccnt, fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static int gm_av_close(struct fid *fid)
{
	struct gm_av *av = gm_container_of(fid, struct gm_av, fid.fid);

	if (av->refs)
		return -FI_EBUSY;
	pthread_mutex_lock(&av->dom->lock);
	av->dom->refs--;
	pthread_mutex_unlock(&av->dom->lock);
	if (av->eq)
		gm_eq_hold(av->eq, -1);
	free(av->addrs);
	free(av->valid);
	free(av->index);
	free(av);
	return 0;
}

static struct fi_ops gm_av_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = gm_av_close,
    .bind = gm_av_bind,
    .control = gm_no_control,
    .ops_open = gm_no_ops_open,
};

static struct fi_ops_av gm_av_ops = {
    .size = sizeof(struct fi_ops_av),
    .insert = gm_av_insert,
    .insertsvc = gm_av_insertsvc,
    .insertsym = gm_av_insertsym,
    .remove = gm_av_remove,
    .lookup = gm_av_lookup,
    .straddr = gm_av_straddr,
    .av_set = NULL,
};

int gm_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **fav,
               void *context)
{
	struct gm_domain *dom = gm_container_of(domain, struct gm_domain, fid);
	struct gm_av *av;

	if (!attr)
		return -FI_EINVAL;
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP && attr->type != FI_AV_TABLE)
		return -FI_EINVAL;
	if (attr->flags & (FI_READ | FI_SYMMETRIC))
		return -FI_EBADFLAGS;
	if (attr->name)
		return -FI_ENOSYS; /* named (shared) AVs are not supported */
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->dom = dom;
	av->type = attr->type == FI_AV_UNSPEC ? FI_AV_TABLE : attr->type;
	av->gen = 1; /* endpoints start at 0: their first lookup always runs */
	av->flags = attr->flags & FI_EVENT;
	attr->type = av->type;
	if (av_grow(av, attr->count ? attr->count : 64)) {
		free(av);
		return -FI_ENOMEM;
	}
	av->fid.fid.fclass = FI_CLASS_AV;
	av->fid.fid.context = context;
	av->fid.fid.ops = &gm_av_fi_ops;
	av->fid.ops = &gm_av_ops;
	pthread_mutex_lock(&dom->lock);
	dom->refs++;
	pthread_mutex_unlock(&dom->lock);
	*fav = &av->fid;
	return 0;
}
