/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Typed "not supported" operations.  libfabric's inline wrappers call op
 * tables directly, so every slot must hold a function: these return
 * -FI_ENOSYS for what gamma does not offer (RMA, atomics, connections...).
 */
#ifndef GM_NOSYS_H
#define GM_NOSYS_H

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>

int gm_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int gm_no_control(struct fid *fid, int command, void *arg);
int gm_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context);
int gm_no_passive_ep(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **pep,
                     void *context);
int gm_no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
                    struct fid_wait **waitset);
int gm_no_scalable_ep(struct fid_domain *domain, struct fi_info *info, struct fid_ep **sep,
                      void *context);
int gm_no_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr, struct fid_stx **stx,
                  void *context);
int gm_no_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr, struct fid_ep **rx_ep,
                  void *context);
int gm_no_query_atomic(struct fid_domain *domain, enum fi_datatype datatype, enum fi_op op,
                       struct fi_atomic_attr *attr, uint64_t flags);
int gm_no_query_collective(struct fid_domain *domain, enum fi_collective_op coll,
                           struct fi_collective_attr *attr, uint64_t flags);
int gm_no_endpoint2(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
                    uint64_t flags, void *context);
int gm_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr, struct fid_ep **tx_ep,
                 void *context);
int gm_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr, struct fid_ep **rx_ep,
                 void *context);

extern struct fi_ops_rma gm_no_rma_ops;
extern struct fi_ops_atomic gm_no_atomic_ops;

int gm_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen);
int gm_no_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen);
int gm_no_listen(struct fid_pep *pep);
int gm_no_accept(struct fid_ep *ep, const void *param, size_t paramlen);
int gm_no_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen);
int gm_no_shutdown(struct fid_ep *ep, uint64_t flags);
int gm_no_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
               void *context);

#endif /* GM_NOSYS_H */
