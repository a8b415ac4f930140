/* SPDX-License-Identifier: BSD-2-Clause */
/* What gamma does not offer, answered with -FI_ENOSYS instead of a crash. */
#include "gm_nosys.h"

#include <rdma/fi_errno.h>

int gm_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

int gm_no_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

int gm_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{
	return -FI_ENOSYS;
}

int gm_no_passive_ep(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **pep,
                     void *context)
{
	return -FI_ENOSYS;
}

int gm_no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr, struct fid_wait **waitset)
{
	return -FI_ENOSYS;
}

int gm_no_scalable_ep(struct fid_domain *domain, struct fi_info *info, struct fid_ep **sep,
                      void *context)
{
	return -FI_ENOSYS;
}

int gm_no_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr, struct fid_stx **stx,
                  void *context)
{
	return -FI_ENOSYS;
}

int gm_no_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr, struct fid_ep **rx_ep,
                  void *context)
{
	return -FI_ENOSYS;
}

int gm_no_query_atomic(struct fid_domain *domain, enum fi_datatype datatype, enum fi_op op,
                       struct fi_atomic_attr *attr, uint64_t flags)
{
	return -FI_ENOSYS;
}

int gm_no_query_collective(struct fid_domain *domain, enum fi_collective_op coll,
                           struct fi_collective_attr *attr, uint64_t flags)
{
	return -FI_ENOSYS;
}

int gm_no_endpoint2(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
                    uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

int gm_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr, struct fid_ep **tx_ep,
                 void *context)
{
	return -FI_ENOSYS;
}

int gm_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr, struct fid_ep **rx_ep,
                 void *context)
{
	return -FI_ENOSYS;
}

int gm_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

int gm_no_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

int gm_no_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

int gm_no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

int gm_no_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

int gm_no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return -FI_ENOSYS;
}

int gm_no_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
               void *context)
{
	return -FI_ENOSYS;
}

/* RMA */
static ssize_t no_read(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src,
                       uint64_t addr, uint64_t key, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_readv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
                        fi_addr_t src, uint64_t addr, uint64_t key, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t no_write(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest,
                        uint64_t addr, uint64_t key, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_writev(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
                         fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t no_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest,
                         uint64_t addr, uint64_t key)
{
	return -FI_ENOSYS;
}

static ssize_t no_writedata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
                            uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key,
                            void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
                             fi_addr_t dest, uint64_t addr, uint64_t key)
{
	return -FI_ENOSYS;
}

struct fi_ops_rma gm_no_rma_ops = {
    .size = sizeof(struct fi_ops_rma),
    .read = no_read,
    .readv = no_readv,
    .readmsg = no_readmsg,
    .write = no_write,
    .writev = no_writev,
    .writemsg = no_writemsg,
    .inject = no_inject,
    .writedata = no_writedata,
    .injectdata = no_injectdata,
};

/* Atomics */
static ssize_t no_atomic_write(struct fid_ep *ep, const void *buf, size_t count, void *desc,
                               fi_addr_t dest, uint64_t addr, uint64_t key,
                               enum fi_datatype datatype, enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_atomic_writev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
                                size_t count, fi_addr_t dest, uint64_t addr, uint64_t key,
                                enum fi_datatype datatype, enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_atomic_writemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
                                  uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t no_atomic_inject(struct fid_ep *ep, const void *buf, size_t count, fi_addr_t dest,
                                uint64_t addr, uint64_t key, enum fi_datatype datatype,
                                enum fi_op op)
{
	return -FI_ENOSYS;
}

static ssize_t no_atomic_readwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
                                   void *result, void *result_desc, fi_addr_t dest, uint64_t addr,
                                   uint64_t key, enum fi_datatype datatype, enum fi_op op,
                                   void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_atomic_readwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
                                    size_t count, struct fi_ioc *resultv, void **result_desc,
                                    size_t result_count, fi_addr_t dest, uint64_t addr,
                                    uint64_t key, enum fi_datatype datatype, enum fi_op op,
                                    void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_atomic_readwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
                                      struct fi_ioc *resultv, void **result_desc,
                                      size_t result_count, uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t no_atomic_compwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
                                   const void *compare, void *compare_desc, void *result,
                                   void *result_desc, fi_addr_t dest, uint64_t addr, uint64_t key,
                                   enum fi_datatype datatype, enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_atomic_compwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
                                    size_t count, const struct fi_ioc *comparev,
                                    void **compare_desc, size_t compare_count,
                                    struct fi_ioc *resultv, void **result_desc, size_t result_count,
                                    fi_addr_t dest, uint64_t addr, uint64_t key,
                                    enum fi_datatype datatype, enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_atomic_compwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
                                      const struct fi_ioc *comparev, void **compare_desc,
                                      size_t compare_count, struct fi_ioc *resultv,
                                      void **result_desc, size_t result_count, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int no_atomic_valid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op,
                           size_t *count)
{
	return -FI_ENOSYS;
}

struct fi_ops_atomic gm_no_atomic_ops = {
    .size = sizeof(struct fi_ops_atomic),
    .write = no_atomic_write,
    .writev = no_atomic_writev,
    .writemsg = no_atomic_writemsg,
    .inject = no_atomic_inject,
    .readwrite = no_atomic_readwrite,
    .readwritev = no_atomic_readwritev,
    .readwritemsg = no_atomic_readwritemsg,
    .compwrite = no_atomic_compwrite,
    .compwritev = no_atomic_compwritev,
    .compwritemsg = no_atomic_compwritemsg,
    .writevalid = no_atomic_valid,
    .readwritevalid = no_atomic_valid,
    .compwritevalid = no_atomic_valid,
};
