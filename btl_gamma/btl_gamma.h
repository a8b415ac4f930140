/* SPDX-License-Identifier: BSD-2-Clause */
/* btl_gamma: Open MPI BTL over the libfabric provider "gamma". Shared types. */
#ifndef BTL_GAMMA_H
#define BTL_GAMMA_H

#include "opal_config.h"

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include "opal/class/opal_free_list.h"
#include "opal/class/opal_list.h"
#include "opal/mca/btl/btl.h"
#include "opal/mca/btl/base/base.h"
#include "opal/threads/mutex.h"
#include "opal/util/show_help.h"

#include "btl_gamma_reg.h"

BEGIN_C_DECLS

#define GAMMA_PROV_NAME "gamma"
/* Largest provider address we carry through the modex. */
#define GAMMA_ADDR_MAX      112
#define GAMMA_MAX_MODULES   8
#define GAMMA_MIN_EAGER     64
#define GAMMA_FLUSH_SECONDS 2.0
/* Receive buffers posted per module; each holds one whole BTL fragment. */
#define GAMMA_RX_POSTED 64
/* Payload capacity of the small send frags (headers, small messages). */
#define GAMMA_SMALL_FRAG 4096
/* Default eager limit, max send size and rendezvous eager limit: 64 KiB of
 * user data and room for ob1's header (16 B for a match, 32 for a
 * rendezvous), so that a 64 KiB message goes in one fragment; at exactly
 * 64 KiB it went rendezvous, one more round trip (MTU 9000: two more frames
 * per message). */
#define GAMMA_EAGER_DEFAULT (65536 + 64)

/* Precedes every message on the wire: the BTL tag travels in-band so any
 * FI_MSG provider works; 8 bytes keep the PML header 8-byte aligned. */
struct gamma_hdr {
	uint8_t tag;
	uint8_t pad[7];
};

/* FI_CONTEXT mode: the provider owns the fi_context until the completion;
 * kind tells a send fragment from a receive buffer in the CQ. */
enum gamma_ctx_kind {
	GAMMA_CTX_SEND = 1,
	GAMMA_CTX_RECV = 2,
	GAMMA_CTX_WATCH = 3,
	GAMMA_CTX_GET = 4,      /* btl_get: the data's receive, in the caller's buffer */
	GAMMA_CTX_GET_DATA = 5, /* a peer's btl_get served: the data's send */
};
struct gamma_ctx {
	struct fi_context fi;
	enum gamma_ctx_kind kind;
};

/* Per-job settings from the MCA parameters. */
struct gamma_params {
	char *if_include;
	char *if_exclude;
	int priority; /* GAMMA_PRIO_* */
	int verbose;
	int idle_block;          /* GAMMA_IDLE_BLOCK_*: btl_gamma_idle.c */
	uint32_t rails_max_send; /* max_send_size of a module over several rails (a+b) */
};
enum { GAMMA_PRIO_LOW = 0, GAMMA_PRIO_HIGH = 1 };
enum { GAMMA_IDLE_BLOCK_NO = 0, GAMMA_IDLE_BLOCK_YES = 1, GAMMA_IDLE_BLOCK_AUTO = 2 };

typedef struct mca_btl_gamma_component_t {
	mca_btl_base_component_3_0_0_t super;
	struct gamma_params params;
	int output; /* opal_output stream for verbose messages */
	int num_modules;
	struct mca_btl_gamma_module_t *modules[GAMMA_MAX_MODULES];
} mca_btl_gamma_component_t;

OPAL_MODULE_DECLSPEC extern mca_btl_gamma_component_t mca_btl_gamma_component;

struct gamma_rxbuf {
	struct gamma_ctx ctx;
	struct mca_btl_gamma_module_t *module;
	uint8_t *buf; /* gamma_hdr + up to max_send_size bytes */
	bool posted;  /* owned by the provider */
	bool busy;    /* being delivered to the PML */
};

/* Context handed to the free lists, which keep it for later growth. */
struct gamma_pool_ctx {
	struct mca_btl_gamma_module_t *module;
	opal_free_list_t *pool;
	size_t capacity;
};

/*
 * btl_get (btl_gamma_get.c).  ob1 sends a large contiguous message as an
 * RGET naming a registration of the sender's buffer; the receiver's
 * btl_get posts a tagged receive in its own buffer and asks the sender's
 * BTL, in a message of tag GAMMA_TAG_GET, to send that region with that
 * tag.  The data then crosses once, from the sender's buffer to the
 * receiver's, through the provider's own rendezvous: no fragments, no
 * copy into receive buffers and out again.
 */
#define GAMMA_TAG_GET (MCA_BTL_TAG_BTL + 0x10)
/* Tags of the data of btl_get: never a watch's (GAMMA_WATCH_TAG). */
#define GAMMA_GET_TAG_BIT (1ull << 62)

/* One btl_get, on either side (ctx.kind says which). */
typedef struct gamma_get {
	opal_free_list_item_t super;
	struct gamma_ctx ctx;
	struct mca_btl_gamma_module_t *module;
	struct mca_btl_base_endpoint_t *endpoint; /* GAMMA_CTX_GET */
	fi_addr_t peer;                           /* GAMMA_CTX_GET_DATA */
	uint64_t tag;
	void *buf;
	size_t len;
	struct mca_btl_base_registration_handle_t *local_handle;
	mca_btl_base_rdma_completion_fn_t cbfunc;
	void *cbcontext;
	void *cbdata;
	bool abandoned; /* btl_get failed after posting: no callback */
} gamma_get_t;
OBJ_CLASS_DECLARATION(gamma_get_t);

/* A module's domain name: an interface, or rails a+b (up to 4). */
#define GAMMA_DOMAIN_NAME_MAX (4 * IF_NAMESIZE)

typedef struct mca_btl_gamma_module_t {
	mca_btl_base_module_t super;
	char ifname[GAMMA_DOMAIN_NAME_MAX];
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	uint8_t addr[GAMMA_ADDR_MAX];
	size_t addrlen;
	size_t inject_size;
	/* A fragment larger than this (what one frame carries) is sent with
	 * FI_TRANSMIT_COMPLETE: its frames leave from the fragment's memory,
	 * not from the provider's copy (gamma_fi_send). */
	size_t one_frame;

	opal_free_list_t small_frags; /* gamma_hdr + GAMMA_SMALL_FRAG */
	opal_free_list_t max_frags;   /* gamma_hdr + max_send_size */
	struct gamma_pool_ctx pool_ctx[2];
	struct gamma_rxbuf rx[GAMMA_RX_POSTED];
	uint8_t *rx_block;
	int rx_unposted; /* buffers fi_recv refused with -FI_EAGAIN */

	/*
	 * MPI_THREAD_MULTIPLE: Open MPI calls send, sendi, alloc, free,
	 * prepare_src, add/del_procs and progress from any thread.  Both locks
	 * compile to nothing while opal_using_threads() is false.
	 *   lock: the send side (pending, each fi_send with its place in the
	 *   order), the endpoints list and each endpoint's failed flag.  Held
	 *   only around those: never while calling into the PML, progress or
	 *   the modex (which may progress).
	 *   progress_lock: held by the one thread that reads the CQ; that thread
	 *   alone touches rx[], rx_unposted and the watches.  Only try-locked,
	 *   so a PML callback that progresses again, or a second thread, leaves
	 *   at once instead of waiting.
	 * Order: progress_lock, then lock, then the provider's domain lock.
	 * The free lists lock themselves.
	 */
	opal_mutex_t lock;
	opal_mutex_t progress_lock;
	bool progressing; /* re-entry guard for when the locks are compiled out */
	/* Sends the provider refused with -FI_EAGAIN, oldest first: later sends
	 * queue behind them so a peer sees fragments in order. */
	opal_list_t pending;
	/* btl_get (btl_gamma_get.c): registrations (under lock), the
	 * operations, the data of peers' gets the provider refused with
	 * -FI_EAGAIN (under lock), and the next data tag. */
	struct gamma_regs regs;
	struct mca_btl_base_registration_handle_t local_reg; /* receive buffers' */
	opal_free_list_t gets;
	opal_list_t get_pending;
	uint64_t get_seq;
	/* Shown at finalize with btl_gamma_verbose 10. */
	uint64_t gets_done, gets_failed, gets_served, gets_refused;
	uint64_t regs_full;            /* send registrations refused: every slot taken */
	volatile int64_t puts_refused; /* all of them: gamma has no put */
	volatile int32_t inflight;     /* fi_send calls not yet completed */
	opal_list_t endpoints;
	mca_btl_base_module_error_cb_fn_t error_cb;
	bool enabled;
	/* Every rank of the job in the AV, by vpid (gamma_endpoint_learn_job). */
	fi_addr_t *job_addr;
	uint32_t job_size;
	bool job_known;
	uint64_t job_retry_ms; /* lookups at most every GAMMA_JOB_RETRY_MS */
} mca_btl_gamma_module_t;

/*
 * Every endpoint keeps a "watch" posted: a zero-byte tagged receive directed
 * at the peer, with a tag nobody sends.  It never matches; gamma fails it
 * with FI_EIO when the peer stops acknowledging (FI_GAMMA_PEER_TIMEOUT), and
 * that reaches the PML even when every send to the peer completed long ago
 * (sends complete once buffered) and the job only waits on the peer.
 */
#define GAMMA_WATCH_TAG 0x67616d6d61ull /* "gamma" */

struct mca_btl_base_endpoint_t {
	opal_list_item_t super;
	mca_btl_gamma_module_t *module;
	struct opal_proc_t *proc;
	fi_addr_t fi_addr;
	bool failed;
	bool watching; /* the watch is posted */
	struct gamma_ctx watch;
};
typedef struct mca_btl_base_endpoint_t mca_btl_gamma_endpoint_t;
typedef struct mca_btl_base_endpoint_t mca_btl_base_endpoint_t;
OBJ_CLASS_DECLARATION(mca_btl_gamma_endpoint_t);

/*
 * segment[0] is in the frag's own buffer, right after the wire header: the
 * PML's header and, when packed, its data.  segment[1], when the
 * descriptor has two, is contiguous user data sent in place (prepare_src):
 * the provider copies it straight from the user's buffer.
 */
typedef struct mca_btl_gamma_frag_t {
	mca_btl_base_descriptor_t base;
	mca_btl_base_segment_t segment[2];
	struct gamma_ctx ctx;
	mca_btl_gamma_module_t *module;
	mca_btl_gamma_endpoint_t *endpoint;
	opal_free_list_t *pool;
	struct gamma_hdr *hdr; /* start of the wire buffer; payload follows */
	size_t capacity;       /* payload bytes the buffer holds */
	bool callback_owed;    /* send returned 0: des_cbfunc runs on completion */
} mca_btl_gamma_frag_t;
OBJ_CLASS_DECLARATION(mca_btl_gamma_frag_t);

/* Bytes after the wire header, over both segments. */
static inline size_t gamma_frag_len(const mca_btl_gamma_frag_t *frag)
{
	return frag->segment[0].seg_len +
	       (frag->base.des_segment_count > 1 ? frag->segment[1].seg_len : 0);
}

/* Per-module state kept in a modex record, one record per module. */
struct gamma_modex_addr {
	char ifname[GAMMA_DOMAIN_NAME_MAX];
	uint32_t addrlen;
	uint8_t addr[GAMMA_ADDR_MAX];
};

extern mca_btl_gamma_module_t mca_btl_gamma_module_template;

/* btl_gamma_params.c */
int gamma_params_register(void);

/* btl_gamma_iface.c */
int gamma_iface_select(char ***names_out, int *count_out);
void gamma_names_free(char **names, int count);
bool gamma_have_cap_net_raw(void);

/* btl_gamma_hwloc.c (no Open MPI headers there) */
void gamma_hwloc_sort_nearest(char **names, int count);

/* btl_gamma_fi.c */
int gamma_fi_getinfo(const char *domain, struct fi_info **out);
bool gamma_fi_provider_loaded(void);
int gamma_fi_open(mca_btl_gamma_module_t *m, struct fi_info *info);
void gamma_fi_close(mca_btl_gamma_module_t *m);
int gamma_fi_post_recv(mca_btl_gamma_module_t *m, struct gamma_rxbuf *rx);
ssize_t gamma_fi_send(mca_btl_gamma_frag_t *frag);
ssize_t gamma_fi_inject(mca_btl_gamma_module_t *m, mca_btl_gamma_endpoint_t *ep, const void *buf,
                        size_t len);

/* btl_gamma_progress.c */
int gamma_fi_progress(mca_btl_gamma_module_t *m);
int gamma_fi_progress_wait(mca_btl_gamma_module_t *m, int wait_ms);
void gamma_fi_flush(mca_btl_gamma_module_t *m);
double gamma_now_s(void);

/* btl_gamma_idle.c: events from the modules' progress; may sleep when 0. */
int gamma_idle_progress(int events);

/* btl_gamma_frag.c */
int gamma_frag_pools_init(mca_btl_gamma_module_t *m);
void gamma_frag_pools_fini(mca_btl_gamma_module_t *m);
mca_btl_gamma_frag_t *gamma_frag_get(mca_btl_gamma_module_t *m, size_t size);
void gamma_frag_return(mca_btl_gamma_frag_t *frag);
void gamma_frag_return_if_owned(mca_btl_gamma_frag_t *frag);

/* btl_gamma_send.c */
mca_btl_base_descriptor_t *gamma_alloc(mca_btl_base_module_t *btl,
                                       mca_btl_base_endpoint_t *endpoint, uint8_t order,
                                       size_t size, uint32_t flags);
int gamma_free(mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des);
mca_btl_base_descriptor_t *gamma_prepare_src(mca_btl_base_module_t *btl,
                                             mca_btl_base_endpoint_t *endpoint,
                                             struct opal_convertor_t *convertor, uint8_t order,
                                             size_t reserve, size_t *size, uint32_t flags);
int gamma_send(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
               mca_btl_base_descriptor_t *des, mca_btl_base_tag_t tag);
int gamma_sendi(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                struct opal_convertor_t *convertor, void *header, size_t header_size,
                size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
                mca_btl_base_descriptor_t **descriptor);
void gamma_send_complete(mca_btl_gamma_frag_t *frag, int status);
int gamma_send_drain_pending(mca_btl_gamma_module_t *m);

/* btl_gamma_recv.c */
void gamma_recv_deliver(mca_btl_gamma_module_t *m, struct gamma_rxbuf *rx, size_t len,
                        fi_addr_t src);

/* btl_gamma_get.c */
int gamma_get_init(mca_btl_gamma_module_t *m);
void gamma_get_fini(mca_btl_gamma_module_t *m);
struct mca_btl_base_registration_handle_t *gamma_register_mem(mca_btl_base_module_t *btl,
                                                              mca_btl_base_endpoint_t *endpoint,
                                                              void *base, size_t size,
                                                              uint32_t flags);
int gamma_deregister_mem(mca_btl_base_module_t *btl,
                         struct mca_btl_base_registration_handle_t *handle);
int gamma_put(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint, void *local_address,
              uint64_t remote_address, struct mca_btl_base_registration_handle_t *local_handle,
              struct mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
              int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
int gamma_get(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint, void *local_address,
              uint64_t remote_address, struct mca_btl_base_registration_handle_t *local_handle,
              struct mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
              int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
void gamma_get_serve(mca_btl_gamma_module_t *m, fi_addr_t src, const void *body, size_t len);
void gamma_get_done(gamma_get_t *g, const struct fi_cq_err_entry *err, size_t len);
int gamma_get_drain_pending(mca_btl_gamma_module_t *m);
void gamma_get_report(const mca_btl_gamma_module_t *m);

/* btl_gamma_endpoint.c */
mca_btl_gamma_endpoint_t *gamma_endpoint_create(mca_btl_gamma_module_t *m,
                                                struct opal_proc_t *proc);
mca_btl_gamma_endpoint_t *gamma_endpoint_find(mca_btl_gamma_module_t *m, struct opal_proc_t *proc);
void gamma_endpoint_watch(mca_btl_gamma_endpoint_t *ep);
void gamma_endpoint_unwatch(mca_btl_gamma_endpoint_t *ep);
void gamma_endpoint_fail(mca_btl_gamma_endpoint_t *ep, const char *why);
void gamma_endpoint_learn_job(mca_btl_gamma_module_t *m);

/* btl_gamma_secret.c */
const uint8_t *gamma_secret_local(size_t *len);
int gamma_secret_publish(void);
int gamma_secret_apply(void);
/* Frames to proc, of another job, at addr go under its job's secret. */
int gamma_secret_bind(mca_btl_gamma_module_t *m, const struct opal_proc_t *proc, fi_addr_t addr);

/* btl_gamma_module.c */
int gamma_modex_send(void);

/* btl_gamma_help.c: every user-facing message is a topic of help-btl-gamma.txt. */
#define GAMMA_HELP_FILE "help-btl-gamma.txt"
void gamma_help_init(void);
void gamma_show_help(const char *topic, ...);
/* True for the first caller only: data-path messages are shown once per
 * process (later ones at btl_gamma_verbose 10). */
bool gamma_help_first(volatile int32_t *shown);
const char *gamma_hostname(void);

#define GAMMA_VERBOSE(level, ...)                                                                  \
	opal_output_verbose((level), mca_btl_gamma_component.output, __VA_ARGS__)

END_C_DECLS

#endif /* BTL_GAMMA_H */
