/* SPDX-License-Identifier: BSD-2-Clause */
/* Provider-wide declarations: the provider object, its parameters, logging. */
#ifndef GM_H
#define GM_H

#include <net/if.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include "gm_list.h"
#include "gm_net.h"

#define GM_PROV_NAME "gamma"
#define GM_FABRIC_NAME "gamma"
#define GM_PROV_VERSION FI_VERSION(0, 1)
#define GM_FI_VERSION FI_VERSION(1, 17)

extern struct fi_provider gm_prov;

/* FI_GAMMA_* parameters, read once at fi_prov_ini. */
struct gm_params {
	char *iface;          /* comma list of interfaces, NULL: every usable one */
	int ethertype;
	bool dq;
	int low_share;
	int default_class;    /* enum gm_class for FI_TC_UNSPEC */
	int window;
	int rto_us;
	int peer_timeout_ms;
	int rx_ring_kb;
	size_t rndv_threshold;
	bool stats;
};
extern struct gm_params gm_params;

/* Limits advertised in fi_info. */
#define GM_IOV_LIMIT 4
#define GM_INJECT_SIZE 256
#define GM_TX_SIZE 1024
#define GM_RX_SIZE 1024
#define GM_MAX_MSG_SIZE (1ULL << 40)
#define GM_CQ_DATA_SIZE 8

#define GM_CAPS                                                                                    \
	(FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV | FI_MULTI_RECV | FI_SOURCE |  \
	 FI_LOCAL_COMM | FI_REMOTE_COMM)

int gm_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
	       const struct fi_info *hints, struct fi_info **info);
int gm_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
enum gm_class gm_tclass_to_class(uint32_t tclass);

struct gm_fabric {
	struct fid_fabric fid;
};

struct gm_domain {
	struct fid_domain fid;
	struct gm_fabric *fabric;
	pthread_mutex_t lock; /* serializes everything below, and every object on it */
	struct gm_net *net;
	char ifname[IF_NAMESIZE];
	struct gm_list eps; /* enabled endpoints, progressed together */
	uint32_t auth_key;
	int refs;
	pthread_t thread;         /* progresses the domain while the application does not */
	uint64_t app_progress_ms; /* when the application last drove progress */
	bool stop;
};

struct gm_av {
	struct fid_av fid;
	struct gm_domain *dom;
	enum fi_av_type type;
	struct gm_addr *addrs;
	bool *valid;
	size_t count, cap;
	int refs;
};

/* One completion, in the widest format; the CQ hands out the prefix asked for. */
struct gm_cq_slot {
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
};

struct gm_cq_err {
	struct gm_list entry;
	struct fi_cq_err_entry e;
};

struct gm_cq {
	struct fid_cq fid;
	struct gm_domain *dom;
	enum fi_cq_format format;
	enum fi_wait_obj wait_obj;
	struct gm_cq_slot *ring;
	size_t cap, head, count; /* grows on demand: a completion is never lost */
	struct gm_list errs;
	int refs;
};

struct gm_cntr {
	struct fid_cntr fid;
	struct gm_domain *dom;
	uint64_t value, err;
	int refs;
};

/* Upper-half state for one remote endpoint, hung on its gm_peer. */
struct gm_conn {
	struct gm_ep *ep;
	struct gm_peer *peer;
	fi_addr_t fi_addr;       /* FI_ADDR_NOTAVAIL until found in the AV */
	uint32_t next_msg_id;
	struct gm_list tx_queue; /* frames still to hand to the net, in order */
	struct gm_list cts_wait; /* rendezvous sends waiting to be pulled */
	struct gm_list ep_entry;
	struct gm_list pend_entry; /* on ep->tx_pending while tx_queue is not empty */
	struct gm_ux *rx_cur;    /* medium message being reassembled, if unexpected */
	struct gm_rx *rx_cur_rx; /* ... or the posted receive it lands in */
	uint32_t rx_cur_id;
	uint64_t rx_matched;      /* receives matched to this peer's messages so far */
	uint64_t rx_reported;     /* ... and completed to the application, in that order */
	struct gm_list rx_parked; /* finished receives waiting for an earlier one */
};

enum gm_tx_state { GM_TX_QUEUED, GM_TX_WAIT_CTS, GM_TX_PULLED, GM_TX_SENT };

struct gm_tx {
	struct gm_list entry;
	struct gm_list live_entry; /* on ep->tx_live until freed */
	struct gm_ep *ep;
	struct gm_conn *conn;
	void *context;
	uint64_t flags; /* FI_SEND|FI_MSG|FI_TAGGED, FI_COMPLETION, FI_REMOTE_CQ_DATA, FI_INJECT */
	uint64_t tag, data;
	struct iovec iov[GM_IOV_LIMIT];
	size_t iov_count;
	uint64_t len;    /* message length */
	uint64_t limit;  /* bytes to send: len, or what the receiver pulled */
	uint64_t off;    /* bytes handed to the net so far */
	uint32_t msg_id;
	uint32_t recv_id;
	uint32_t mcrc;      /* message CRC of the bytes handed to the net so far */
	uint8_t first_type; /* EAGER, START, RTS; CTS for internal control frames */
	bool first_sent;
	bool internal; /* protocol frame of our own: no completion */
	bool reported; /* completion written; freed once every frame is acked */
	unsigned unacked;
	int err;
	enum gm_tx_state state;
	uint8_t inject_buf[GM_INJECT_SIZE];
};

struct gm_rx {
	struct gm_list entry;
	struct gm_ep *ep;
	void *context;
	uint64_t flags; /* FI_RECV|FI_MSG|FI_TAGGED, FI_COMPLETION, FI_MULTI_RECV, FI_PEEK, FI_CLAIM */
	fi_addr_t src;  /* FI_ADDR_UNSPEC: any */
	uint64_t tag, ignore;
	struct iovec iov[GM_IOV_LIMIT];
	size_t iov_count;
	uint64_t len;
	uint64_t multi_off; /* FI_MULTI_RECV: bytes consumed */
	/* set once matched */
	uint64_t msg_len, recv_len, got;
	uint32_t mcrc; /* message CRC of the bytes received so far */
	bool corrupt;  /* a frame's mcrc disagreed: completes with FI_EIO */
	uint64_t rtag, rdata;
	fi_addr_t rsrc;
	bool has_data;
	uint32_t id; /* rendezvous: our id, echoed in RDATA */
	struct gm_conn *conn;
	uint64_t match_seq; /* conn->rx_matched when it matched */
	int parked_err;     /* parked on conn->rx_parked (by entry) with this result */
	struct gm_list rndv_entry;
	void *buf_base; /* FI_MULTI_RECV: where this message starts */
	struct gm_rx *multi_parent;
	unsigned multi_refs; /* parent: slices not yet completed */
	bool multi_retired;  /* parent: too little space left, no longer posted */
};

/* An unexpected message: arrived before a matching receive was posted. */
struct gm_ux {
	struct gm_list entry;
	struct gm_conn *conn;
	fi_addr_t src;
	uint64_t tag, data, msg_len;
	uint32_t mflags, msg_id;
	bool rts;        /* rendezvous: no data held, pulled when matched */
	uint8_t *buf;    /* eager/medium data */
	uint64_t have;
	uint32_t mcrc;   /* message CRC of the bytes received so far */
	int err;         /* FI_EIO once a frame's mcrc disagreed */
	void *claim_ctx; /* FI_CLAIM: reserved for the receive with this context */
	bool claimed;
	struct gm_rx *bound; /* matched while still being reassembled */
};

struct gm_ep {
	struct fid_ep fid;
	struct gm_domain *dom;
	struct fi_info *info;
	struct gm_list dom_entry;
	struct gm_av *av;
	struct gm_cq *tx_cq, *rx_cq;
	bool tx_selective, rx_selective;
	struct gm_cntr *send_cntr, *recv_cntr;
	struct gm_port *port;
	bool enabled;
	enum gm_class cls;
	uint64_t tx_op_flags, rx_op_flags;
	size_t min_multi_recv;
	struct gm_conn **conns; /* by fi_addr */
	size_t conns_cap;
	struct gm_list conn_list;  /* every conn of this endpoint */
	struct gm_list tx_pending; /* conns with frames waiting for the window */
	struct gm_list tx_live;    /* every gm_tx not yet freed, for close */
	struct gm_list posted[2];     /* [0] untagged, [1] tagged receives */
	struct gm_list unexpected[2];
	struct gm_list rndv_rx;       /* receives pulling a rendezvous message */
	size_t ux_unresolved;         /* unexpected messages whose sender is not in the AV */
	uint32_t next_recv_id;
};

/* gm_domain.c */
int gm_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom,
		   void *context);
void gm_domain_progress(struct gm_domain *dom);
int gm_domain_wait(struct gm_domain *dom, int timeout_ms);
/* gm_av.c */
int gm_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av,
	       void *context);
const struct gm_addr *gm_av_get(struct gm_av *av, fi_addr_t fi_addr);
fi_addr_t gm_av_find(struct gm_av *av, const struct gm_addr *addr);
/* gm_cq.c */
int gm_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
	       void *context);
void gm_cq_write(struct gm_cq *cq, void *context, uint64_t flags, size_t len, void *buf,
		 uint64_t data, uint64_t tag, fi_addr_t src);
void gm_cq_write_err(struct gm_cq *cq, void *context, uint64_t flags, size_t len, void *buf,
		     uint64_t data, uint64_t tag, size_t olen, int err);
/* gm_cntr.c */
int gm_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr,
		 void *context);
void gm_cntr_inc(struct gm_cntr *cntr);
void gm_cntr_inc_err(struct gm_cntr *cntr);
/* gm_mr.c */
int gm_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
	      uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context);
int gm_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
	       uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
	       void *context);
int gm_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
		  struct fid_mr **mr);
/* gm_ep.c */
int gm_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
	       void *context);
struct gm_conn *gm_ep_conn(struct gm_ep *ep, fi_addr_t fi_addr);
struct gm_conn *gm_conn_of_peer(struct gm_ep *ep, struct gm_peer *peer);
/* gm_msg.c: the active-message protocol */
extern const struct gm_port_ops gm_msg_port_ops;
ssize_t gm_msg_send(struct gm_ep *ep, const struct iovec *iov, size_t count, fi_addr_t dest,
		    uint64_t tag, uint64_t data, void *context, uint64_t flags);
ssize_t gm_msg_recv(struct gm_ep *ep, const struct iovec *iov, size_t count, fi_addr_t src,
		    uint64_t tag, uint64_t ignore, void *context, uint64_t flags);
void gm_msg_progress_ep(struct gm_ep *ep);
int gm_msg_cancel(struct gm_ep *ep, void *context);
void gm_msg_ep_close(struct gm_ep *ep);
/* gm_match.c */
bool gm_match_tag(uint64_t want, uint64_t ignore, uint64_t tag);
bool gm_match_src(fi_addr_t want, fi_addr_t src);
struct gm_rx *gm_match_posted(struct gm_list *posted, fi_addr_t src, uint64_t tag);
struct gm_ux *gm_match_unexpected(struct gm_list *ux, fi_addr_t src, uint64_t tag,
				  uint64_t ignore, void *claim_ctx, bool claim);
size_t gm_iov_copy_to(const struct iovec *iov, size_t cnt, uint64_t off, const void *src,
		      size_t len);
/* gm_iov_copy_to, chaining *crc (gm_crc32c) over the bytes copied (crc NULL: none). */
size_t gm_iov_copy_to_crc(const struct iovec *iov, size_t cnt, uint64_t off, const void *src,
			  size_t len, uint32_t *crc);
size_t gm_iov_copy_from(const struct iovec *iov, size_t cnt, uint64_t off, void *dst, size_t len);
uint64_t gm_iov_len(const struct iovec *iov, size_t cnt);

#define GM_WARN(subsys, ...) FI_WARN(&gm_prov, subsys, __VA_ARGS__)
#define GM_INFO(subsys, ...) FI_INFO(&gm_prov, subsys, __VA_ARGS__)
#define GM_DBG(subsys, ...) FI_DBG(&gm_prov, subsys, __VA_ARGS__)

#endif /* GM_H */
