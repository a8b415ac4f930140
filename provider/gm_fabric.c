/* SPDX-License-Identifier: BSD-2-Clause */
/* The fabric object: the door to domains; it holds no state of its own. */
#include "gm.h"
#include "gm_nosys.h"

#include <stdlib.h>
#include <string.h>

static int gm_fabric_close(struct fid *fid)
{
	free(gm_container_of(fid, struct gm_fabric, fid.fid));
	return 0;
}

/* Blocking waits on our CQs use gm_domain_wait; FD waiters call this first. */
static int gm_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	for (int i = 0; i < count; i++) {
		int ret;

		if (fids[i]->fclass == FI_CLASS_EQ)
			ret = gm_eq_trywait(fids[i]);
		else if (fids[i]->fclass == FI_CLASS_CQ)
			ret = gm_cq_trywait(gm_container_of(fids[i], struct gm_cq, fid.fid));
		else if (fids[i]->fclass == FI_CLASS_CNTR)
			ret = gm_cntr_trywait(gm_container_of(fids[i], struct gm_cntr, fid.fid));
		else
			ret = -FI_EINVAL;
		if (ret)
			return ret;
	}
	return 0;
}

static struct fi_ops gm_fabric_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = gm_fabric_close,
    .bind = gm_no_bind,
    .control = gm_no_control,
    .ops_open = gm_no_ops_open,
};

static struct fi_ops_fabric gm_fabric_ops = {
    .size = sizeof(struct fi_ops_fabric),
    .domain = gm_domain_open,
    .passive_ep = gm_no_passive_ep,
    .eq_open = gm_eq_open,
    .wait_open = gm_no_wait_open,
    .trywait = gm_trywait,
};

int gm_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	struct gm_fabric *f;

	if (attr && attr->name && strcmp(attr->name, GM_FABRIC_NAME))
		return -FI_ENODATA;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -FI_ENOMEM;
	f->fid.fid.fclass = FI_CLASS_FABRIC;
	f->fid.fid.context = context;
	f->fid.fid.ops = &gm_fabric_fi_ops;
	f->fid.ops = &gm_fabric_ops;
	*fabric = &f->fid;
	return 0;
}
