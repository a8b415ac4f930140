/* SPDX-License-Identifier: BSD-2-Clause */
/* Endpoints: a peer's provider address, resolved from the modex into the AV,
 * and reporting a peer's failure to the PML. */
#include "btl_gamma.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "opal/mca/pmix/pmix.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

OBJ_CLASS_INSTANCE(mca_btl_gamma_endpoint_t, opal_list_item_t, NULL, NULL);

/* The peer's record for our interface name if it has one (same wiring on
 * every host), else the one at our module's index. */
static const struct gamma_modex_addr *pick_addr(const mca_btl_gamma_module_t *m,
                                                const struct gamma_modex_addr *a, size_t n)
{
	int index = 0;

	for (size_t i = 0; i < n; i++)
		if (!strncmp(a[i].ifname, m->ifname, sizeof(a[i].ifname)))
			return &a[i];
	for (int i = 0; i < mca_btl_gamma_component.num_modules; i++)
		if (mca_btl_gamma_component.modules[i] == m)
			index = i;
	return &a[(size_t)index % n];
}

/*
 * Every rank of the job into the AV as soon as the modex has them: the
 * provider delivers nothing from outside the AV (an endpoint with a key
 * holds such messages), and the PML adds a peer only when it first talks
 * to it, which may be after that peer's first message arrived.  Called from
 * progress, which runs from MPI_Init's fence on; the optional lookups find
 * nothing until the fence is through.  A rank without gamma publishes no
 * address: once any rank's address is there, every one that will be is.
 * Until then, a try every GAMMA_JOB_RETRY_MS keeps progress cheap.
 */
#define GAMMA_JOB_RETRY_MS 10

void gamma_endpoint_learn_job(mca_btl_gamma_module_t *m)
{
	opal_process_name_t me = OPAL_PROC_MY_NAME, name = me;
	uint32_t size = 0, *sizep = &size;
	bool found = false;
	struct timespec ts;
	uint64_t now;
	char *key;
	int rc;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
	if (now < m->job_retry_ms)
		return;
	m->job_retry_ms = now + GAMMA_JOB_RETRY_MS;

	if (!m->job_addr) {
		name.vpid = OPAL_VPID_WILDCARD;
		OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, OPAL_PMIX_JOB_SIZE, &name, &sizep, OPAL_UINT32);
		if (rc != OPAL_SUCCESS || !size ||
		    !(m->job_addr = malloc(size * sizeof(fi_addr_t)))) {
			m->job_known = true; /* no job to learn: ranks come one by one */
			return;
		}
		m->job_size = size;
		for (uint32_t v = 0; v < size; v++)
			m->job_addr[v] = FI_ADDR_NOTAVAIL;
	}
	key = mca_base_component_to_string(&mca_btl_gamma_component.super.btl_version);
	if (!key)
		return;
	for (uint32_t v = 0; v < m->job_size; v++) {
		opal_byte_object_t *bo = NULL;
		const struct gamma_modex_addr *a;

		name.vpid = v;
		if (v == me.vpid || m->job_addr[v] != FI_ADDR_NOTAVAIL)
			continue;
		OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, key, &name, &bo, OPAL_BYTE_OBJECT);
		if (rc != OPAL_SUCCESS || !bo)
			continue;
		found = true;
		if (bo->size >= (int32_t)sizeof(*a)) {
			a = pick_addr(m, (const struct gamma_modex_addr *)bo->bytes,
			              bo->size / sizeof(*a));
			if (a->addrlen && a->addrlen <= GAMMA_ADDR_MAX &&
			    fi_av_insert(m->av, a->addr, 1, &m->job_addr[v], 0, NULL) != 1)
				m->job_addr[v] = FI_ADDR_NOTAVAIL;
		}
		free(bo->bytes);
		free(bo);
	}
	free(key);
	m->job_known = found || m->job_size == 1;
}

mca_btl_gamma_endpoint_t *gamma_endpoint_create(mca_btl_gamma_module_t *m, struct opal_proc_t *proc)
{
	struct gamma_modex_addr *addrs = NULL;
	const struct gamma_modex_addr *a;
	mca_btl_gamma_endpoint_t *ep, *first;
	size_t size = 0;
	fi_addr_t fi_addr;
	int rc;

	OPAL_MODEX_RECV(rc, &mca_btl_gamma_component.super.btl_version, &proc->proc_name,
	                (void **)&addrs, &size);
	if (OPAL_SUCCESS != rc || size < sizeof(*addrs)) {
		/* The peer has no gamma module: other BTLs reach it. */
		free(addrs);
		return NULL;
	}
	a = pick_addr(m, addrs, size / sizeof(*addrs));
	if (proc->proc_name.jobid == OPAL_PROC_MY_NAME.jobid &&
	    proc->proc_name.vpid < m->job_size &&
	    m->job_addr[proc->proc_name.vpid] != FI_ADDR_NOTAVAIL) {
		fi_addr = m->job_addr[proc->proc_name.vpid]; /* learnt already */
	} else if (a->addrlen == 0 || a->addrlen > GAMMA_ADDR_MAX ||
	           fi_av_insert(m->av, a->addr, 1, &fi_addr, 0, NULL) != 1) {
		gamma_show_help("address vector", m->ifname, OPAL_NAME_PRINT(proc->proc_name),
		                opal_get_proc_hostname(proc));
		free(addrs);
		return NULL;
	}
	free(addrs);
	if (proc->proc_name.jobid != OPAL_PROC_MY_NAME.jobid &&
	    gamma_secret_bind(m, proc, fi_addr) != OPAL_SUCCESS)
		return NULL;

	ep = OBJ_NEW(mca_btl_gamma_endpoint_t);
	if (!ep)
		return NULL;
	ep->module = m;
	ep->proc = proc;
	ep->fi_addr = fi_addr;
	ep->failed = false;
	ep->watching = false;
	/* Threads adding the same peer at once (add_procs runs on first use,
	 * from any thread) keep the first endpoint.  Not locked above: the
	 * modex may progress, and progress may take m->lock. */
	OPAL_THREAD_LOCK(&m->lock);
	first = gamma_endpoint_find(m, proc);
	if (!first)
		opal_list_append(&m->endpoints, &ep->super);
	OPAL_THREAD_UNLOCK(&m->lock);
	if (first) {
		OBJ_RELEASE(ep);
		return first;
	}
	gamma_endpoint_watch(ep);
	return ep;
}

/* Called with m->lock held. */
mca_btl_gamma_endpoint_t *gamma_endpoint_find(mca_btl_gamma_module_t *m, struct opal_proc_t *proc)
{
	mca_btl_gamma_endpoint_t *ep;

	OPAL_LIST_FOREACH(ep, &m->endpoints, mca_btl_gamma_endpoint_t)
	if (ep->proc == proc)
		return ep;
	return NULL;
}

void gamma_endpoint_watch(mca_btl_gamma_endpoint_t *ep)
{
	mca_btl_gamma_module_t *m = ep->module;
	ssize_t rc;

	ep->watch.kind = GAMMA_CTX_WATCH;
	/* Before posting: progress in another thread may complete it at once. */
	ep->watching = true;
	rc = fi_trecv(m->ep, NULL, 0, NULL, ep->fi_addr, GAMMA_WATCH_TAG, 0, &ep->watch.fi);
	if (rc) {
		ep->watching = false;
		GAMMA_VERBOSE(10, "btl gamma: %s: no failure watch on %s: %s", m->ifname,
		              OPAL_NAME_PRINT(ep->proc->proc_name), fi_strerror((int)-rc));
	}
}

/* Before the endpoint goes: the cancel completes at once, in the CQ, and
 * whichever thread progresses reads it (bounded, as at finalize). */
void gamma_endpoint_unwatch(mca_btl_gamma_endpoint_t *ep)
{
	mca_btl_gamma_module_t *m = ep->module;
	const double deadline = gamma_now_s() + GAMMA_FLUSH_SECONDS;

	if (!ep->watching)
		return;
	if (fi_cancel(&m->ep->fid, &ep->watch.fi) == 0)
		while (ep->watching && gamma_now_s() < deadline)
			gamma_fi_progress(m);
	ep->watching = false;
}

/* The peer's provider address as text (gamma://MAC/PORT, +MAC/PORT for
 * each further rail), or "unknown" when the AV cannot say. */
static void peer_addr_str(const mca_btl_gamma_endpoint_t *ep, char *buf, size_t len)
{
	uint8_t addr[GAMMA_ADDR_MAX];
	size_t alen = sizeof(addr), slen = len;

	if (fi_av_lookup(ep->module->av, ep->fi_addr, addr, &alen) || alen > sizeof(addr) ||
	    !fi_av_straddr(ep->module->av, addr, buf, &slen))
		snprintf(buf, len, "unknown");
}

void gamma_endpoint_fail(mca_btl_gamma_endpoint_t *ep, const char *why)
{
	mca_btl_gamma_module_t *m;
	char info[256], addr[256];

	if (!ep)
		return;
	m = ep->module;
	/* Report once, whichever thread saw the failure first. */
	OPAL_THREAD_LOCK(&m->lock);
	if (ep->failed) {
		OPAL_THREAD_UNLOCK(&m->lock);
		return;
	}
	ep->failed = true;
	OPAL_THREAD_UNLOCK(&m->lock);
	snprintf(info, sizeof(info), "btl gamma: peer %s on %s unreachable: %s",
	         OPAL_NAME_PRINT(ep->proc->proc_name), opal_get_proc_hostname(ep->proc), why);
	peer_addr_str(ep, addr, sizeof(addr));
	gamma_show_help("peer unreachable", OPAL_NAME_PRINT(ep->proc->proc_name),
	                opal_get_proc_hostname(ep->proc), why, gamma_hostname(), m->ifname, addr);
	/* Let the PML abort the job now rather than wait on a dead peer. */
	if (m->error_cb)
		m->error_cb(&m->super, MCA_BTL_ERROR_FLAGS_FATAL, ep->proc, info);
}
