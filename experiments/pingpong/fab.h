/* libfabric side of gamma-pingpong: one domain, one CQ and AV shared by one
 * or two FI_EP_RDM endpoints, and completion waits that always have a deadline. */
#ifndef PP_FAB_H
#define PP_FAB_H

#include "gmf.h"
#include "pp.h"

#define PP_MAX_EP   2
#define PP_NAME_MAX 256

/* One posted operation; the fi_context2 must stay first (FI_CONTEXT mode). */
struct pp_op {
	struct fi_context2 ctx;
	int done;
	int err;    /* positive fi_errno of a failed or cancelled operation */
	size_t len; /* received length */
	uint64_t tag;
};

struct pp_fab {
	struct gmf g; /* info, fabric, domain, CQ, AV */
	struct fid_ep *ep[PP_MAX_EP];
	fi_addr_t peer[PP_MAX_EP];
	int n_ep;
	size_t inject_size;
	bool wait;
	bool verbose;
	double timeout_s;
	int ctrl_fd;
	/* Called on every turn of a wait loop: drives the background stream. */
	int (*pump)(void *arg);
	void *pump_arg;
};

/* Without --iface, socket providers use the interface holding the local
 * address of the control connection ctrl_fd: the one the peer reached us on. */
int pp_fab_open(struct pp_fab *f, const struct pp_opts *o, int n_ep, int tclass_high, int ctrl_fd);
void pp_fab_close(struct pp_fab *f);
/* Packs the endpoint names as [u32 len, bytes] per endpoint. */
int pp_fab_names(struct pp_fab *f, void *buf, uint32_t *len);
int pp_fab_insert_peer(struct pp_fab *f, const void *buf, uint32_t len);

int pp_recv(struct pp_fab *f, int ep, void *buf, size_t len, uint64_t tag, struct pp_op *op);
/* Injects when small enough (op is then done at once), else sends with op. */
int pp_send(struct pp_fab *f, int ep, const void *buf, size_t len, uint64_t tag, struct pp_op *op);
int pp_cancel(struct pp_fab *f, int ep, struct pp_op *op);
/* Waits until all n ops are done; what names them in the timeout message. */
int pp_wait(struct pp_fab *f, struct pp_op **ops, int n, const char *what);
int pp_wait1(struct pp_fab *f, struct pp_op *op, const char *what);
/* One turn of progress without waiting. */
int pp_progress(struct pp_fab *f);

#endif
