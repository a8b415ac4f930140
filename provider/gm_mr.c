/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory registration.  gamma copies through its own frame buffers, so
 * mr_mode is 0 and a registration only has to exist, hand out a key, and
 * close.
 */
#include "gm.h"
#include "gm_nosys.h"

#include <stdlib.h>

struct gm_mr {
	struct fid_mr mr;
};

static int gm_mr_close(struct fid *fid)
{
	free(gm_container_of(fid, struct gm_mr, mr.fid));
	return 0;
}

static struct fi_ops gm_mr_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = gm_mr_close,
    .bind = gm_no_bind,
    .control = gm_no_control,
    .ops_open = gm_no_ops_open,
};

int gm_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
                  struct fid_mr **mr)
{
	struct gm_mr *m;

	if (fid->fclass != FI_CLASS_DOMAIN || !attr || !mr)
		return -FI_EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	m->mr.fid.fclass = FI_CLASS_MR;
	m->mr.fid.context = attr->context;
	m->mr.fid.ops = &gm_mr_fi_ops;
	m->mr.mem_desc = m;
	m->mr.key = attr->requested_key;
	*mr = &m->mr;
	return 0;
}

int gm_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
               uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
               void *context)
{
	struct fi_mr_attr attr = {
	    .mr_iov = iov,
	    .iov_count = count,
	    .access = access,
	    .offset = offset,
	    .requested_key = requested_key,
	    .context = context,
	};

	return gm_mr_regattr(fid, &attr, flags, mr);
}

int gm_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
              uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return gm_mr_regv(fid, &iov, 1, access, offset, requested_key, flags, mr, context);
}
