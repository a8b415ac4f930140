/* SPDX-License-Identifier: BSD-2-Clause */
/* Provider-wide declarations: the provider object, its parameters, logging. */
#ifndef GM_H
#define GM_H

#include <net/if.h>
#include <netinet/in.h>
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

#include "fi_gamma.h"
#include "gm_list.h"
#include "gm_mac.h"
#include "gm_msg.h"
#include "gm_net.h"

#define GM_PROV_NAME    "gamma"
#define GM_FABRIC_NAME  "gamma"
#define GM_PROV_VERSION FI_VERSION(0, 1)
#define GM_FI_VERSION   FI_VERSION(1, 17)

extern struct fi_provider gm_prov;

/* FI_GAMMA_* parameters, read once at fi_prov_ini. */
struct gm_params {
	char *iface; /* comma list of interfaces, NULL: every usable one */
	int ethertype;
	bool dq;
	int low_share;
	int default_class; /* enum gm_class for FI_TC_UNSPEC */
	int window;
	int rto_us;
	int peer_timeout_ms;
	int rail_timeout_ms; /* several rails: FI_GAMMA_RAIL_TIMEOUT */
	int rx_ring_kb;
	size_t rndv_threshold;
	int ooo_max, ooo_peer_max, peer_max; /* 0: gm_rel.h defaults */
	bool require_auth;
	bool stats;
	const char *rawd; /* FI_GAMMA_RAWD, else the installed helper; "": none */
	size_t ux_max, ux_peer_max, ux_unknown_max; /* unexpected-message caps, bytes */
	int ux_unknown;         /* enum gm_unknown_policy: FI_GAMMA_UX_UNKNOWN */
	int ux_unknown_hold_ms; /* how long a held message waits for its source */
	int progress_idle_us;   /* the progress thread takes over after this (gm_domain.c) */
	int idle_sleep_ms;      /* fi_cq_read polled in vain sleeps up to this; 0: never */
};

extern struct gm_params gm_params;
/* The net core's log hook (gm_log.h): into libfabric's log, as this provider. */
extern const struct gm_log gm_fi_log;
/* A setting the user got wrong: on stderr (libfabric's log may be off) and
 * in the log, "libfabric gamma: " first. */
void gm_config_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Limits advertised in fi_info. */
#define GM_TX_SIZE      1024
#define GM_RX_SIZE      1024
#define GM_CQ_DATA_SIZE 8

/*
 * Marks the fi_inject family, which generates no completion; FI_INJECT
 * alone only means the buffer is free on return.  Above every libfabric
 * operation flag, and stripped from what the application passes.
 */
#define GM_TX_SILENT (1ULL << 62)

#define GM_CAPS                                                                                    \
	(FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV | FI_MULTI_RECV | FI_SOURCE |   \
	 FI_LOCAL_COMM | FI_REMOTE_COMM)

int gm_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
               const struct fi_info *hints, struct fi_info **info);
int gm_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
enum gm_class gm_tclass_to_class(uint32_t tclass);
/* auth_key sizes gamma takes: none, a 4-byte key, or a secret (gm_net.h struct gm_auth). */
static inline bool gm_auth_key_size_ok(size_t n)
{
	return n == 0 || n == sizeof(uint32_t) || (n >= GM_SECRET_MIN && n <= GM_SECRET_MAX);
}

struct gm_fabric {
	struct fid_fabric fid;
};

/* A domain's name: an interface, or several joined by '+' (rails). */
#define GM_DOMAIN_NAME_MAX (GM_RAILS_MAX * IF_NAMESIZE)

struct gm_domain {
	struct fid_domain fid;
	struct gm_fabric *fabric;
	pthread_mutex_t lock;              /* serializes everything below, and every object on it */
	struct gm_net *net;                /* rail 0's (the only one, mostly) */
	struct gm_net *nets[GM_RAILS_MAX]; /* one per rail; [0] == net */
	unsigned nrails;
	char ifname[GM_DOMAIN_NAME_MAX]; /* the domain's name: "eth0" or "eth0+eth1" */
	uint32_t addr_format;            /* fi_info's: how the AV reads addresses */
	struct gm_list eps;              /* enabled endpoints, progressed together */
	uint8_t auth_key[GM_SECRET_MAX]; /* domain_attr->auth_key: gm_net.h struct gm_auth */
	size_t auth_key_len;
	int refs;
	pthread_t thread;         /* progresses the domain while the application does not */
	pthread_cond_t thread_cv; /* its naps end early at close (stop) */
	uint64_t app_progress_us; /* when the application last drove progress */
	uint64_t idle_since_us, idle_last_us; /* gm_domain_idle: fi_cq_read found nothing */
	bool stop;
	bool thread_gone;          /* joined (close, or gm_domains_quiesce); under the live lock */
	struct gm_list live_entry; /* on gm_domain.c's list of domains with a thread */
	/*
	 * Wakeups (gm_domain_signal): a completion may be written by another
	 * thread (the progress thread) while the application sleeps, after
	 * that thread took the frame the sleeper polled for.  So writing one
	 * signals wake_fd whenever someone may sleep: a thread blocked in
	 * gm_domain_wait (waiters) or an FD waiter fi_trywait let go
	 * (fd_armed, fd_pending until its next fi_trywait).  wait_fd, what
	 * FI_GETWAIT hands out (gm_domain_wait_fd), polls readable on frames
	 * or on wake_fd.
	 */
	int wake_fd, wait_fd;
	unsigned waiters;
	bool signaled, fd_armed, fd_pending;
	bool wait_fd_net; /* the receive socket is in wait_fd */
};

/* An IP socket address of either family (gm_sockaddr.c). */
union gm_sa {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

/* An IP address entry; pending until its MAC is known. */
struct gm_av_sin {
	union gm_sa sa; /* as inserted */
	bool pending;
};

struct gm_av {
	struct fid_av fid;
	struct gm_domain *dom;
	enum fi_av_type type;
	uint64_t flags; /* FI_EVENT: inserts complete on the bound EQ */
	struct gm_eq *eq;
	struct gm_addr *addrs; /* nrails per entry: its address on each rail */
	unsigned nrails;       /* the domain's */
	bool *valid;           /* resolved: usable for sends and found by gm_av_find */
	size_t count, cap;
	uint32_t addr_format;     /* the domain's: FI_SOCKADDR_IN(6), or gamma's own */
	struct gm_av_sin *sins;   /* IP formats: each address as inserted */
	size_t *index, index_cap; /* by address: gm_av_index.c */
	uint64_t gen;             /* bumped by every insert */
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
	uint64_t value_seen, err_seen; /* at the last read: fi_trywait reports changes */
	enum fi_wait_obj wait_obj;
	int refs;
};

struct gm_ep {
	struct fid_ep fid;
	struct gm_domain *dom;
	struct fi_info *info;
	struct gm_list dom_entry;
	struct gm_av *av;
	struct gm_eq *eq;
	struct gm_cq *tx_cq, *rx_cq;
	bool tx_selective, rx_selective;
	struct gm_cntr *send_cntr, *recv_cntr;
	bool enabled;
	enum gm_class cls;
	uint64_t tx_op_flags, rx_op_flags;
	struct gm_msg msg; /* the protocol; its port is the endpoint's */
};

/* gm_addr.c: fi_getinfo's node and service */
struct gm_node {
	const char *name;
	bool is_mac;
	uint8_t mac[6];
	struct addrinfo *ai; /* NULL: a MAC or an interface name */
};
int gm_addr_service(const char *service, uint16_t *port);
int gm_node_resolve(const char *node, uint64_t flags, struct gm_node *n);
int gm_node_match(const struct gm_node *n, bool source, const char *ifname, const uint8_t own[6],
                  uint8_t mac[6]);
void gm_node_free(struct gm_node *n);
bool gm_ip_on_iface(const struct sockaddr *sa, const char *ifname);
bool gm_ip_is_loopback(const struct sockaddr *sa);
bool gm_arp_lookup(const struct sockaddr_in *sin, const char *ifname, uint8_t mac[6]);
/* gm_sockaddr.c: IP socket addresses (FI_SOCKADDR_IN, FI_SOCKADDR_IN6) on one interface */
static inline bool gm_fmt_ip(uint32_t addr_format)
{
	return addr_format == FI_SOCKADDR_IN || addr_format == FI_SOCKADDR ||
	       addr_format == FI_SOCKADDR_IN6;
}
size_t gm_fmt_len(uint32_t addr_format); /* of one address, gamma's own included */
int gm_fmt_family(uint32_t addr_format);
#define GM_SA_PENDING 1 /* on the link, MAC not known yet */
int gm_sa_check(const union gm_sa *sa, int family, const char *ifname, const uint8_t own[6],
                uint8_t mac[6]);
void gm_sa_nudge(const union gm_sa *sa, const char *ifname);
int gm_sa_own(const char *ifname, int family, union gm_sa *out);
uint16_t gm_sa_port(const union gm_sa *a);
void gm_sa_set_port(union gm_sa *a, uint16_t port);
int gm_node_sa(const struct gm_node *n, bool source, int family, const char *ifname,
               const uint8_t own[6], union gm_sa *out);
int gm_sa_straddr(const union gm_sa *a, char *buf, size_t len);
/* An endpoint's own address in its info's format (fi_getname); own: one per rail. */
int gm_addr_name(const struct fi_info *info, const char *ifname, const struct gm_addr *own,
                 unsigned nrails, void *addr, size_t *addrlen);
/* The port asked for by info->src_addr (0: any); -FI_EINVAL if malformed. */
int gm_addr_src_port(const struct fi_info *info, unsigned nrails, uint16_t *port);
/* Rails named by a domain name ("a+b": 2), and the r-th one's interface. */
unsigned gm_rails_count(const char *domain_name);
int gm_rail_name(const char *domain_name, unsigned r, char out[IF_NAMESIZE]);
/* gm_eq.c: fabric-level, its own lock (never the domain's) */
struct gm_eq;
int gm_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
               void *context);
struct gm_eq *gm_eq_of(struct fid *fid);
void gm_eq_hold(struct gm_eq *eq, int delta);
ssize_t gm_eq_report(struct gm_eq *eq, uint32_t event, const void *buf, size_t len);
ssize_t gm_eq_report_err(struct gm_eq *eq, const struct fi_eq_err_entry *err);
int gm_eq_trywait(struct fid *fid);
/* gm_poll.c */
int gm_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr, struct fid_poll **pollset);
/* gm_domain.c */
int gm_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom,
                   void *context);
void gm_domain_progress(struct gm_domain *dom);
/*
 * Stop the progress thread of every open domain (they stay usable, progressed
 * by the application alone): before libfabric unloads the provider at exit
 * (gm_cleanup) and before OpenSSL's exit cleanup.  Idempotent.
 */
void gm_domains_quiesce(void);
/* Every rail's: a transmit pass (gm_net_flush), the next timer (gm_net_timeout_ms). */
void gm_domain_flush(struct gm_domain *dom);
/* After a send: gm_net_kick on every rail, or a flush while a thread waits. */
void gm_domain_kick(struct gm_domain *dom);
int gm_domain_timeout_ms(const struct gm_domain *dom);
/* What FI_GETWAIT returns; -FI_ENOMEM if it cannot be made ready. */
int gm_domain_wait_fd(struct gm_domain *dom);
/* FI_GETWAIT / FI_GETWAITOBJ of a CQ or counter with that wait object. */
int gm_domain_wait_control(struct gm_domain *dom, enum fi_wait_obj wait_obj, int command,
                           void *arg);
int gm_domain_wait(struct gm_domain *dom, int timeout_ms);
void gm_domain_signal(struct gm_domain *dom);
/* fi_cq_read found nothing: may sleep (FI_GAMMA_IDLE_SLEEP); true if it waited. */
bool gm_domain_idle(struct gm_domain *dom);
void gm_domain_busy(struct gm_domain *dom);
/* fi_trywait for one object of dom: 0 if nothing is pending and dom's waiter is armed. */
int gm_domain_trywait(struct gm_domain *dom, bool pending);
/* gm_av.c */
int gm_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av,
               void *context);
const struct gm_addr *gm_av_get(struct gm_av *av, fi_addr_t fi_addr);
/* gm_av_index.c: by rail 0's address, or by another rail's */
fi_addr_t gm_av_find(struct gm_av *av, const struct gm_addr *addr);
fi_addr_t gm_av_find_rail(struct gm_av *av, unsigned rail, const struct gm_addr *addr);
int gm_av_index_rebuild(struct gm_av *av, size_t need);
void gm_av_index_added(struct gm_av *av, size_t first);
void gm_av_index_resolved(struct gm_av *av, fi_addr_t fi_addr);
/* gm_cq.c */
int gm_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
               void *context);
void gm_cq_write(struct gm_cq *cq, void *context, uint64_t flags, size_t len, void *buf,
                 uint64_t data, uint64_t tag, fi_addr_t src);
void gm_cq_write_err(struct gm_cq *cq, void *context, uint64_t flags, size_t len, void *buf,
                     uint64_t data, uint64_t tag, size_t olen, int err, int prov_errno);
int gm_cq_trywait(struct gm_cq *cq);
/* gm_cntr.c */
int gm_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr,
                 void *context);
void gm_cntr_inc(struct gm_cntr *cntr);
void gm_cntr_inc_err(struct gm_cntr *cntr);
int gm_cntr_trywait(struct gm_cntr *cntr);
/* gm_mr.c */
int gm_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
              uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context);
int gm_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
               uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
               void *context);
int gm_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
                  struct fid_mr **mr);
/* gm_ep.c */
int gm_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep, void *context);
/* gm_ep_upcalls.c: what the endpoint does for its protocol (gm_msg.h) */
void gm_ep_msg_init(struct gm_ep *ep);

#define GM_WARN(subsys, ...) FI_WARN(&gm_prov, subsys, __VA_ARGS__)
#define GM_INFO(subsys, ...) FI_INFO(&gm_prov, subsys, __VA_ARGS__)
#define GM_DBG(subsys, ...)  FI_DBG(&gm_prov, subsys, __VA_ARGS__)

#endif /* GM_H */
