/* libfabric set-up shared by the programs (gmf.h). */
#include <string.h>

#include "gmf.h"

static int step(int r, const char *name, const char **what)
{
	if (r && what)
		*what = name;
	return r;
}

int gmf_open(struct gmf *f, struct fi_info *info, const struct gmf *dom,
             const struct fi_cq_attr *cq, const struct fi_av_attr *av, const char **what)
{
	struct fi_cq_attr cqa = *cq;
	struct fi_av_attr ava = *av;
	int r;

	memset(f, 0, sizeof(*f));
	f->info = info;
	if (ava.type == FI_AV_UNSPEC)
		ava.type = info->domain_attr->av_type;
	if (dom) {
		f->shared = true;
		f->fabric = dom->fabric;
		f->domain = dom->domain;
	} else if ((r = step(fi_fabric(info->fabric_attr, &f->fabric, NULL), "fi_fabric", what)) ||
	           (r = step(fi_domain(f->fabric, info, &f->domain, NULL), "fi_domain", what))) {
		return r;
	}
	if ((r = step(fi_cq_open(f->domain, &cqa, &f->cq, f), "fi_cq_open", what)) ||
	    (r = step(fi_av_open(f->domain, &ava, &f->av, NULL), "fi_av_open", what)))
		return r;
	return 0;
}

int gmf_eq(struct gmf *f, const struct fi_eq_attr *attr, const char **what)
{
	/* fi_eq_open takes a non-const attr; it does not change it */
	return step(fi_eq_open(f->fabric, (struct fi_eq_attr *)attr, &f->eq, NULL), "fi_eq_open",
	            what);
}

int gmf_ep(struct gmf *f, const struct fi_info *info, struct fid_cntr *cntr, uint64_t cntr_flags,
           struct fid_ep **ep, const char **what)
{
	int r;

	*ep = NULL;
	/* fi_endpoint takes a non-const info; it does not change it */
	if ((r = step(fi_endpoint(f->domain, (struct fi_info *)(info ? info : f->info), ep, NULL),
	              "fi_endpoint", what)))
		return r;
	if ((r = step(fi_ep_bind(*ep, &f->cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)",
	              what)) ||
	    (r = step(fi_ep_bind(*ep, &f->av->fid, 0), "fi_ep_bind(av)", what)) ||
	    (f->eq && (r = step(fi_ep_bind(*ep, &f->eq->fid, 0), "fi_ep_bind(eq)", what))) ||
	    (cntr &&
	     (r = step(fi_ep_bind(*ep, &cntr->fid, cntr_flags), "fi_ep_bind(cntr)", what))) ||
	    (r = step(fi_enable(*ep), "fi_enable", what)))
		return r;
	return 0;
}

static void close_fid(struct fid *fid, int *first)
{
	int r;

	if (!fid)
		return;
	r = fi_close(fid);
	if (r && !*first)
		*first = r;
}

int gmf_close(struct gmf *f)
{
	int first = 0;

	close_fid(f->av ? &f->av->fid : NULL, &first);
	close_fid(f->cq ? &f->cq->fid : NULL, &first);
	close_fid(f->eq ? &f->eq->fid : NULL, &first);
	if (!f->shared) {
		close_fid(f->domain ? &f->domain->fid : NULL, &first);
		close_fid(f->fabric ? &f->fabric->fid : NULL, &first);
	}
	fi_freeinfo(f->info);
	memset(f, 0, sizeof(*f));
	return first;
}
