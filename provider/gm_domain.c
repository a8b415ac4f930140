/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The domain: one Ethernet interface in this process.  It owns the gm_net
 * (socket, rings, peers) and the lock that serializes every object on it;
 * progress on any CQ of the domain progresses all its endpoints.
 */
#include "gm.h"
#include "gm_mac.h"
#include "gm_nosys.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/*
 * Who drives progress (README.md, "Progress"):
 * - The application, in every CQ, counter, poll set and data call
 *   (FI_PROGRESS_MANUAL); in fi_cq_sread, fi_cntr_wait and on the FD it
 *   sleeps in the wait object and the next frame wakes it.
 * - A background thread, once the application has left the domain alone
 *   for FI_GAMMA_PROGRESS_IDLE microseconds: an MPI rank may compute for
 *   minutes without calling in, while its peers wait for acks, answers to
 *   their rendezvous, and would declare it dead.  While the application
 *   polls, the thread only naps, so it never competes for the lock or the
 *   ring; while an application thread sleeps in the wait object, the
 *   thread stays off too (that thread progresses when its poll wakes).
 * - With FI_GAMMA_IDLE_SLEEP, fi_cq_read itself sleeps when it has been
 *   polled in vain back to back (gm_domain_idle).
 */
#define GM_THREAD_MAX_SLEEP_MS 100

static uint64_t usec_of(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t now_us(void)
{
	return usec_of(CLOCK_MONOTONIC);
}

/* When the application last called in: stamped on every progress pass, so
 * the cheap clock (a kernel tick's resolution, 1-4 ms; fine against the
 * default idle time of 10 ms): the precise one costs a third of an idle pass. */
static uint64_t coarse_us(void)
{
	return usec_of(CLOCK_MONOTONIC_COARSE);
}

static void nets_close(struct gm_domain *dom)
{
	for (unsigned r = 0; r < dom->nrails; r++)
		gm_net_close(dom->nets[r]);
}

/* Returns the frames received, sent or timed out. */
static int domain_progress(struct gm_domain *dom)
{
	struct gm_list *pos, *tmp;
	int n = gm_net_progress(dom->net);

	for (unsigned r = 1; r < dom->nrails; r++)
		n += gm_net_progress(dom->nets[r]);

	gm_list_for_each_safe(&dom->eps, pos, tmp)
	    gm_msg_progress(&gm_list_entry(pos, struct gm_ep, dom_entry)->msg);
	return n;
}

/* Sleep us microseconds with the lock dropped, or until gm_domain_close
 * signals: FI_GAMMA_PROGRESS_IDLE may be minutes, close must not wait that. */
static void thread_nap(struct gm_domain *dom, uint64_t us)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	us += (uint64_t)ts.tv_nsec / 1000u;
	ts.tv_sec += (time_t)(us / 1000000u);
	ts.tv_nsec = (long)(us % 1000000u) * 1000;
	pthread_cond_timedwait(&dom->thread_cv, &dom->lock, &ts);
}

static void *progress_thread(void *arg)
{
	struct gm_domain *dom = arg;
	const uint64_t idle_us = (uint64_t)gm_params.progress_idle_us;

	pthread_mutex_lock(&dom->lock);
	while (!dom->stop) {
		uint64_t idle = coarse_us() - dom->app_progress_us;
		int t = gm_domain_timeout_ms(dom);

		/* A blocked waiter progresses when its poll wakes; taking its
		   frames here would leave it asleep on an empty ring. */
		if (idle < idle_us || dom->waiters) {
			thread_nap(dom, idle < idle_us ? idle_us - idle : idle_us);
			continue;
		}
		if (t < 0 || t > GM_THREAD_MAX_SLEEP_MS)
			t = GM_THREAD_MAX_SLEEP_MS;
		struct pollfd p[GM_RAILS_MAX];
		for (unsigned r = 0; r < dom->nrails; r++)
			p[r] = (struct pollfd){.fd = gm_net_fd(dom->nets[r]), .events = POLLIN};
		pthread_mutex_unlock(&dom->lock);
		poll(p, dom->nrails, t);
		pthread_mutex_lock(&dom->lock);
		if (!dom->stop && !dom->waiters && coarse_us() - dom->app_progress_us >= idle_us)
			domain_progress(dom);
	}
	pthread_mutex_unlock(&dom->lock);
	return NULL;
}

/*
 * Domains whose progress thread may run.  A process that exits with domains
 * open (an MPI rank that aborts, a program that returns from main) must
 * not leave those threads running provider code: libfabric's destructor
 * unloads the provider (dlclose) before the process is gone, and OpenSSL's
 * exit handler frees what frames are sealed with.  Seen: a thread woken
 * from poll() returned into the unmapped provider, SIGSEGV at exit.
 */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gm_list live = GM_LIST_INIT(live);
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

/*
 * exit() may come from a signal handler that interrupted this very thread
 * inside the provider (libinfinipath's SIGTERM handler does that): a lock
 * is then held by a frame that never resumes, and waiting for it would
 * hang the exit for ever.  So wait a second at most (the domain lock stays
 * a plain mutex: an error-checking one would answer at once, at a price on
 * every lock of the data path).  True: the lock is ours.
 */
static bool lock_for_exit(pthread_mutex_t *m)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 1;
	return pthread_mutex_timedlock(m, &ts) == 0;
}

/* Under live_lock. */
static void thread_stop(struct gm_domain *dom)
{
	if (!lock_for_exit(&dom->lock)) {
		/* Held for good: the thread cannot take it either, so it runs
		 * no provider code again. */
		dom->thread_gone = true;
		return;
	}
	dom->stop = true;
	pthread_cond_signal(&dom->thread_cv);
	pthread_mutex_unlock(&dom->lock);
	pthread_join(dom->thread, NULL);
	dom->thread_gone = true;
}

void gm_domains_quiesce(void)
{
	struct gm_list *pos, *tmp;

	if (!lock_for_exit(&live_lock))
		return;
	gm_list_for_each_safe(&live, pos, tmp)
	{
		struct gm_domain *dom = gm_list_entry(pos, struct gm_domain, live_entry);

		if (!dom->thread_gone)
			thread_stop(dom);
	}
	pthread_mutex_unlock(&live_lock);
}

/* A forked child has none of its parent's threads to stop. */
static void forget_threads(void)
{
	struct gm_list *pos, *tmp;

	gm_list_for_each_safe(&live, pos, tmp)
	{
		gm_list_entry(pos, struct gm_domain, live_entry)->thread_gone = true;
	}
	pthread_mutex_init(&live_lock, NULL);
}

/*
 * Exit handlers run last registered first: libcrypto registers its own
 * when it initialises, so initialise it first and ours runs before it.
 */
static void exit_hooks(void)
{
	gm_mac_lib_init();
	atexit(gm_domains_quiesce);
	pthread_atfork(NULL, NULL, forget_threads);
}

static int gm_domain_close(struct fid *fid)
{
	struct gm_domain *dom = gm_container_of(fid, struct gm_domain, fid.fid);

	if (dom->refs)
		return -FI_EBUSY;
	pthread_mutex_lock(&live_lock);
	gm_list_del(&dom->live_entry);
	if (!dom->thread_gone)
		thread_stop(dom);
	pthread_mutex_unlock(&live_lock);
	pthread_cond_destroy(&dom->thread_cv);
	nets_close(dom);
	close(dom->wait_fd);
	close(dom->wake_fd);
	pthread_mutex_destroy(&dom->lock);
	explicit_bzero(dom->auth_key, sizeof(dom->auth_key));
	free(dom);
	return 0;
}

/* Every rail's net: the one-rail case is the common one, and costs nothing more. */
int gm_domain_timeout_ms(const struct gm_domain *dom)
{
	int t = gm_net_timeout_ms(dom->net);

	for (unsigned r = 1; r < dom->nrails; r++) {
		int u = gm_net_timeout_ms(dom->nets[r]);

		if (u >= 0 && (t < 0 || u < t))
			t = u;
	}
	return t;
}

void gm_domain_flush(struct gm_domain *dom)
{
	for (unsigned r = 0; r < dom->nrails; r++)
		gm_net_flush(dom->nets[r]);
}

void gm_domain_kick(struct gm_domain *dom)
{
	/* A thread blocked in a wait passes by no progress pass: out now, then. */
	if (dom->waiters) {
		gm_domain_flush(dom);
		return;
	}
	for (unsigned r = 0; r < dom->nrails; r++)
		gm_net_kick(dom->nets[r]);
}

void gm_domain_progress(struct gm_domain *dom)
{
	dom->app_progress_us = coarse_us();
	domain_progress(dom);
}

/*
 * Called with the lock held; drops it while blocked, when the progress
 * thread may run: only the poll itself happens unlocked.  It first polls for
 * up to GM_SPIN_US: an answer often comes within a round trip of a few
 * microseconds, and sleeping for it costs a wake-up and two context
 * switches on its path.
 */
#define GM_SPIN_US 50

static void wake_drain(struct gm_domain *dom)
{
	uint64_t v;

	if (dom->signaled && read(dom->wake_fd, &v, sizeof(v)) < 0)
		GM_DBG(FI_LOG_DOMAIN, "eventfd read: nothing to drain\n");
	dom->signaled = false;
	dom->fd_pending = false;
}

/* A completion was written (under the lock): wake whoever may sleep through it. */
void gm_domain_signal(struct gm_domain *dom)
{
	uint64_t one = 1;

	if (dom->signaled || (!dom->waiters && !dom->fd_armed))
		return;
	if (write(dom->wake_fd, &one, sizeof(one)) < 0)
		GM_WARN(FI_LOG_DOMAIN, "eventfd write failed: a waiter may sleep late\n");
	dom->signaled = true;
	dom->fd_pending |= dom->fd_armed;
	dom->fd_armed = false;
}

int gm_domain_trywait(struct gm_domain *dom, bool pending)
{
	if (pending)
		return -FI_EAGAIN;
	if (!dom->waiters)
		wake_drain(dom); /* the FD waiter has seen what it was woken for */
	dom->fd_armed = true;
	return 0;
}

/* Another rail's half of a wait: its ring, and its earlier timer if any. */
static void rail_wait_add(struct gm_net *net, int timeout_ms, struct gm_net_waitset *ws)
{
	struct gm_net_waitset rs;

	gm_net_wait_prepare(net, timeout_ms, &rs);
	for (nfds_t i = 0; i < rs.nfds; i++)
		ws->pfd[ws->nfds++] = rs.pfd[i];
	if (rs.bounded && (!ws->bounded || rs.ts.tv_sec < ws->ts.tv_sec ||
	                   (rs.ts.tv_sec == ws->ts.tv_sec && rs.ts.tv_nsec < ws->ts.tv_nsec))) {
		ws->bounded = true;
		ws->ts = rs.ts;
	}
}

int gm_domain_wait(struct gm_domain *dom, int timeout_ms)
{
	struct gm_net_waitset ws;
	uint64_t spin_end = now_us() + GM_SPIN_US;
	int ret;

	if (timeout_ms != 0)
		do {
			if (domain_progress(dom) > 0)
				return 1;
		} while (now_us() < spin_end);
	/* Counted before prepare, whose timers may already write completions. */
	dom->waiters++;
	gm_net_wait_prepare(dom->net, timeout_ms, &ws);
	for (unsigned r = 1; r < dom->nrails; r++)
		rail_wait_add(dom->nets[r], timeout_ms, &ws);
	ws.pfd[ws.nfds++] = (struct pollfd){.fd = dom->wake_fd, .events = POLLIN};
	pthread_mutex_unlock(&dom->lock);
	ret = gm_net_wait_block(&ws);
	pthread_mutex_lock(&dom->lock);
	/* The last sleeper drains, unless an FD waiter has yet to see the signal. */
	if (!--dom->waiters && !dom->fd_armed && !dom->fd_pending)
		wake_drain(dom);
	return ret;
}

/*
 * fi_cq_read found nothing (lock held).  With FI_GAMMA_IDLE_SLEEP, a caller
 * that has polled in vain back to back for GM_IDLE_SPIN_US is waiting in a
 * loop (Open MPI's mtl/ofi, which cannot block): sleep in the wait object
 * for up to that many milliseconds, so that on a host with more ranks than
 * cores the core goes to a rank with work, and the next frame wakes this
 * one.  A gap of GM_IDLE_GAP_US between calls means the caller did other
 * work in between: no sleep.  Returns whether it waited (read again).
 */
#define GM_IDLE_SPIN_US 20
#define GM_IDLE_GAP_US  1000

bool gm_domain_idle(struct gm_domain *dom)
{
	uint64_t now;

	if (!gm_params.idle_sleep_ms)
		return false;
	now = now_us();
	if (!dom->idle_last_us || now - dom->idle_last_us > GM_IDLE_GAP_US)
		dom->idle_since_us = now;
	dom->idle_last_us = now;
	if (now - dom->idle_since_us < GM_IDLE_SPIN_US)
		return false;
	gm_domain_wait(dom, gm_params.idle_sleep_ms);
	dom->idle_last_us = now_us();
	return true;
}

/* Something to return: the caller is no longer idle. */
void gm_domain_busy(struct gm_domain *dom)
{
	dom->idle_last_us = 0;
}

/*
 * The wake eventfd, and the descriptor FD waiters poll: frames or wakeups.
 * The receive socket joins wait_fd only once someone asks for it
 * (gm_domain_wait_fd): an epoll entry on the socket makes the kernel run
 * its wakeup callback for every frame it queues, in the sender's context
 * on a veth, a cost a busy-polling application never asks for.
 */
static int wait_fds_open(struct gm_domain *dom)
{
	struct epoll_event ev = {.events = EPOLLIN};

	dom->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	dom->wait_fd = epoll_create1(EPOLL_CLOEXEC);
	if (dom->wake_fd < 0 || dom->wait_fd < 0 ||
	    epoll_ctl(dom->wait_fd, EPOLL_CTL_ADD, dom->wake_fd, &ev)) {
		if (dom->wake_fd >= 0)
			close(dom->wake_fd);
		if (dom->wait_fd >= 0)
			close(dom->wait_fd);
		return -FI_ENOMEM;
	}
	return 0;
}

int gm_domain_wait_fd(struct gm_domain *dom)
{
	struct epoll_event ev = {.events = EPOLLIN};
	int rc = 0;

	pthread_mutex_lock(&dom->lock);
	if (!dom->wait_fd_net) {
		for (unsigned r = 0; r < dom->nrails && !rc; r++)
			if (epoll_ctl(dom->wait_fd, EPOLL_CTL_ADD, gm_net_fd(dom->nets[r]), &ev) &&
			    errno != EEXIST)
				rc = -FI_ENOMEM;
		dom->wait_fd_net = !rc;
	}
	pthread_mutex_unlock(&dom->lock);
	return rc ? rc : dom->wait_fd;
}

/* fi_control of an object that waits in the domain's wait object (CQ, counter). */
int gm_domain_wait_control(struct gm_domain *dom, enum fi_wait_obj wait_obj, int command, void *arg)
{
	int fd;

	switch (command) {
	case FI_GETWAIT:
		if (wait_obj != FI_WAIT_FD)
			return -FI_ENODATA;
		fd = gm_domain_wait_fd(dom);
		if (fd < 0)
			return fd;
		*(int *)arg = fd;
		return 0;
	case FI_GETWAITOBJ:
		*(enum fi_wait_obj *)arg = wait_obj;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static struct fi_ops gm_domain_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = gm_domain_close,
    .bind = gm_no_bind,
    .control = gm_no_control,
    .ops_open = gm_no_ops_open,
};

static struct fi_ops_domain gm_domain_ops = {
    .size = sizeof(struct fi_ops_domain),
    .av_open = gm_av_open,
    .cq_open = gm_cq_open,
    .endpoint = gm_ep_open,
    .scalable_ep = gm_no_scalable_ep,
    .cntr_open = gm_cntr_open,
    .poll_open = gm_poll_open,
    .stx_ctx = gm_no_stx_ctx,
    .srx_ctx = gm_no_srx_ctx,
    .query_atomic = gm_no_query_atomic,
    .query_collective = gm_no_query_collective,
    .endpoint2 = gm_no_endpoint2,
};

static struct fi_ops_mr gm_domain_mr_ops = {
    .size = sizeof(struct fi_ops_mr),
    .reg = gm_mr_reg,
    .regv = gm_mr_regv,
    .regattr = gm_mr_regattr,
};

/*
 * One net per rail ("eth0+eth1": two).  Several rails take gamma's own
 * address format only, and each net learns the rail timeout.
 */
static int nets_open(struct gm_domain *dom, struct gm_net_params *np)
{
	char rail[IF_NAMESIZE];
	int ret;

	dom->nrails = gm_rails_count(dom->ifname);
	if (dom->nrails > GM_RAILS_MAX || (dom->nrails > 1 && gm_fmt_ip(dom->addr_format)))
		return -FI_EINVAL;
	for (unsigned r = 0; r < dom->nrails; r++) {
		if (gm_rail_name(dom->ifname, r, rail)) {
			ret = -FI_EINVAL;
		} else {
			np->ifname = rail;
			np->rail_timeout_ms =
			    dom->nrails > 1 ? (unsigned)gm_params.rail_timeout_ms : 0;
			ret = gm_net_open(np, &dom->nets[r]);
		}
		if (ret) {
			dom->nrails = r;
			nets_close(dom);
			return ret;
		}
	}
	dom->net = dom->nets[0];
	return 0;
}

int gm_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **domain,
                   void *context)
{
	struct gm_net_params np = {
	    .ethertype = (uint16_t)gm_params.ethertype,
	    .dq = gm_params.dq,
	    .low_share = (unsigned)gm_params.low_share,
	    .window = (unsigned)gm_params.window,
	    .rto_us = (unsigned)gm_params.rto_us,
	    .peer_timeout_ms = (unsigned)gm_params.peer_timeout_ms,
	    .rx_ring_kb = (unsigned)gm_params.rx_ring_kb,
	    .ooo_max = (unsigned)gm_params.ooo_max,
	    .ooo_peer_max = (unsigned)gm_params.ooo_peer_max,
	    .peer_max = (unsigned)gm_params.peer_max,
	    .stats = gm_params.stats,
	    .rawd = gm_params.rawd,
	    .log = gm_fi_log,
	};
	struct gm_domain *dom;
	int ret;

	if (!info || !info->domain_attr || !info->domain_attr->name)
		return -FI_EINVAL;
	if (!gm_auth_key_size_ok(info->domain_attr->auth_key_size) ||
	    (info->domain_attr->auth_key_size && !info->domain_attr->auth_key))
		return -FI_EINVAL;
	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	snprintf(dom->ifname, sizeof(dom->ifname), "%s", info->domain_attr->name);
	dom->addr_format = info->addr_format;
	dom->auth_key_len = info->domain_attr->auth_key_size;
	if (dom->auth_key_len)
		memcpy(dom->auth_key, info->domain_attr->auth_key, dom->auth_key_len);
	ret = nets_open(dom, &np);
	if (ret) {
		free(dom);
		return ret;
	}
	ret = wait_fds_open(dom);
	if (ret) {
		nets_close(dom);
		free(dom);
		return ret;
	}
	pthread_mutex_init(&dom->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&dom->thread_cv, &ca);
	pthread_condattr_destroy(&ca);
	gm_list_init(&dom->eps);
	dom->app_progress_us = coarse_us();
	pthread_once(&exit_once, exit_hooks);
	pthread_mutex_lock(&live_lock);
	/* The thread blocks every signal (it inherits the mask): the
	 * application's handlers run on its own threads, never on ours. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&dom->thread, NULL, progress_thread, dom);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!ret)
		gm_list_add_tail(&live, &dom->live_entry);
	pthread_mutex_unlock(&live_lock);
	if (ret) {
		nets_close(dom);
		close(dom->wait_fd);
		close(dom->wake_fd);
		pthread_cond_destroy(&dom->thread_cv);
		pthread_mutex_destroy(&dom->lock);
		free(dom);
		return -FI_ENOMEM;
	}
	dom->fabric = gm_container_of(fabric, struct gm_fabric, fid);
	dom->fid.fid.fclass = FI_CLASS_DOMAIN;
	dom->fid.fid.context = context;
	dom->fid.fid.ops = &gm_domain_fi_ops;
	dom->fid.ops = &gm_domain_ops;
	dom->fid.mr = &gm_domain_mr_ops;
	*domain = &dom->fid;
	return 0;
}
