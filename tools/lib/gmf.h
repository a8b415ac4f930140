/* The libfabric set-up every program here repeats (gamma-pingpong,
 * gamma-stream-node, the test programs, gm-conform): fabric, domain, CQ and
 * AV from one fi_info, an EQ if asked for, then FI_EP_RDM endpoints bound
 * to them.  Each caller still
 * chooses its own hints and fi_getinfo version; errors come back as the
 * negative fi_errno with the name of the call that failed, for the caller to
 * report in its own words. */
#ifndef GMF_H
#define GMF_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

struct gmf {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_eq *eq; /* gmf_eq's, or NULL */
	bool shared;       /* fabric and domain are another gmf's */
};

/* Takes info (freed by gmf_close, also on failure) and opens the fabric and
 * domain it names, or uses dom's when dom is not NULL (one domain: one
 * provider network, so that its double queue sees every endpoint), then the
 * CQ (its context is f: what fi_poll names it by) and the AV (of the info's
 * av_type when av->type is FI_AV_UNSPEC). */
int gmf_open(struct gmf *f, struct fi_info *info, const struct gmf *dom,
             const struct fi_cq_attr *cq, const struct fi_av_attr *av, const char **what);

/* An EQ on f's fabric, which gmf_ep binds every endpoint to after this. */
int gmf_eq(struct gmf *f, const struct fi_eq_attr *attr, const char **what);

/* An endpoint of info (f->info when NULL) bound to f's CQ for both
 * directions, to its AV and EQ (if any), and to cntr (if not NULL) for
 * cntr_flags, then enabled.  On failure *ep is the endpoint if it was
 * opened. */
int gmf_ep(struct gmf *f, const struct fi_info *info, struct fid_cntr *cntr, uint64_t cntr_flags,
           struct fid_ep **ep, const char **what);

/* Closes what gmf_open opened (the endpoints must be closed first); returns
 * the first failure of fi_close, or 0. */
int gmf_close(struct gmf *f);

#endif
