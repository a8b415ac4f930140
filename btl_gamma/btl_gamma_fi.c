/* SPDX-License-Identifier: BSD-2-Clause */
/* Everything libfabric: getinfo, opening one endpoint per interface,
 * posting receive buffers, sending, and reading the completion queue. */
#include "btl_gamma.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "opal/util/output.h"
#include "opal/util/proc.h"

#define GAMMA_FI_VERSION FI_VERSION(1, 17)
#define GAMMA_CQ_BATCH 16


/* btl_gamma_priority -> gamma's double queue: high is the parallel job. */
static uint32_t gamma_tclass(void)
{
	return mca_btl_gamma_component.params.priority == GAMMA_PRIO_HIGH ? FI_TC_LOW_LATENCY
									  : FI_TC_BULK_DATA;
}

static uint32_t fnv1a(uint32_t h, const void *p, size_t n)
{
	for (const uint8_t *b = p; n--; b++)
		h = (h ^ *b) * 16777619u;
	return h;
}

/*
 * The job's gamma key: every frame carries it and a port drops frames with
 * another, so two jobs sharing links cannot mix their traffic.  All ranks
 * of a job share the jobid (outside mpirun, the PMIx namespace); another
 * mpirun gets another job family, hence another key.  A hash, not a
 * secret: isolation against mistakes, not against a forging attacker.
 */
uint32_t gamma_job_key(void)
{
	opal_jobid_t jobid = OPAL_PROC_MY_NAME.jobid;
	const char *ns = getenv("PMIX_NAMESPACE");
	uint32_t h = fnv1a(2166136261u, "gamma-job", 9);

	if (jobid != OPAL_JOBID_INVALID)
		h = fnv1a(h, &jobid, sizeof(jobid));
	else if (ns)
		h = fnv1a(h, ns, strlen(ns));
	return h ? h : 1;
}

static struct fi_info *make_hints(const char *prov, const char *domain)
{
	struct fi_info *hints = fi_allocinfo();
	uint32_t key = gamma_job_key();

	if (!hints)
		return NULL;
	/* fi_freeinfo frees the key with the hints. */
	hints->domain_attr->auth_key = malloc(sizeof(key));
	if (!hints->domain_attr->auth_key) {
		fi_freeinfo(hints);
		return NULL;
	}
	memcpy(hints->domain_attr->auth_key, &key, sizeof(key));
	hints->domain_attr->auth_key_size = sizeof(key);
	/* Tagged and directed: only for the per-peer failure watch.  FI_SOURCE:
	 * every receive completion says who sent it. */
	hints->caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE;
	/* We keep a struct fi_context at the start of every operation context. */
	hints->mode = FI_CONTEXT;
	hints->ep_attr->type = FI_EP_RDM;
	/* Sends come from our own buffers without descriptors: no FI_MR_LOCAL. */
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->tx_attr->tclass = gamma_tclass();
	hints->fabric_attr->prov_name = strdup(prov);
	if (domain)
		hints->domain_attr->name = strdup(domain);
	return hints;
}

int gamma_fi_getinfo(const char *domain, struct fi_info **out)
{
	struct fi_info *hints, *list = NULL;
	int rc;

	*out = NULL;
	hints = make_hints(GAMMA_PROV_NAME, domain);
	if (!hints)
		return -FI_ENOMEM;
	rc = fi_getinfo(GAMMA_FI_VERSION, NULL, NULL, 0, hints, &list);
	fi_freeinfo(hints);
	if (rc)
		return rc;
	if (!domain) {
		*out = list;
		return 0;
	}
	/* One interface wanted: keep its offer only. */
	for (struct fi_info *fi = list; fi; fi = fi->next) {
		if (fi->domain_attr->name && !strcmp(fi->domain_attr->name, domain)) {
			*out = fi_dupinfo(fi);
			break;
		}
	}
	fi_freeinfo(list);
	if (!*out)
		return -FI_ENODATA;
	return 0;
}

/* Whether libfabric loaded a provider named "gamma": it registers its
 * FI_GAMMA_* parameters when loaded, even if it then offers no interface. */
bool gamma_fi_provider_loaded(void)
{
	struct fi_param *params = NULL;
	bool loaded = false;
	int count = 0;

	if (fi_getparams(&params, &count))
		return false;
	for (int i = 0; i < count && !loaded; i++)
		loaded = params[i].name && !strncasecmp(params[i].name, "FI_GAMMA_", 9);
	fi_freeparams(params);
	return loaded;
}

static void open_failed(mca_btl_gamma_module_t *m, const char *what, int rc)
{
	if (rc == -FI_EPERM || rc == -FI_EACCES)
		opal_output(0, "btl gamma: %s on interface %s failed: permission denied; gamma "
			       "sends raw Ethernet frames and needs CAP_NET_RAW: run as root or "
			       "`setcap cap_net_raw+ep` the program, or let the gamma-rawd helper "
			       "(FI_GAMMA_RAWD) open the sockets, with this interface allowed in "
			       "its rawd.conf; using other BTLs",
			    what, m->ifname);
	else
		opal_output(0, "btl gamma: %s on interface %s failed: %s; using other BTLs", what,
			    m->ifname, fi_strerror(-rc));
}

int gamma_fi_open(mca_btl_gamma_module_t *m, struct fi_info *info)
{
	struct fi_av_attr av_attr = {0};
	struct fi_cq_attr cq_attr = {0};
	const size_t hdr = sizeof(struct gamma_hdr);
	size_t max_msg;
	int rc;

	m->info = info;
	/* The endpoint's traffic class picks gamma's queue; set it even if the
	 * provider echoed FI_TC_UNSPEC. */
	if (info->tx_attr)
		info->tx_attr->tclass = gamma_tclass();
	rc = fi_fabric(info->fabric_attr, &m->fabric, NULL);
	if (rc) {
		open_failed(m, "fi_fabric", rc);
		goto fail;
	}
	rc = fi_domain(m->fabric, info, &m->domain, NULL);
	if (rc) {
		open_failed(m, "fi_domain", rc);
		goto fail;
	}
	if (info->domain_attr->auth_key_size == sizeof(uint32_t)) {
		uint32_t key;
		memcpy(&key, info->domain_attr->auth_key, sizeof(key));
		opal_output_verbose(10, opal_btl_base_framework.framework_output,
				    "btl gamma: %s: job key 0x%08x", m->ifname, key);
	}
	av_attr.type = info->domain_attr->av_type;
	rc = fi_av_open(m->domain, &av_attr, &m->av, NULL);
	if (rc) {
		open_failed(m, "fi_av_open", rc);
		goto fail;
	}
	cq_attr.format = FI_CQ_FORMAT_TAGGED;
	cq_attr.wait_obj = FI_WAIT_NONE;
	rc = fi_cq_open(m->domain, &cq_attr, &m->cq, NULL);
	if (rc) {
		open_failed(m, "fi_cq_open", rc);
		goto fail;
	}
	rc = fi_endpoint(m->domain, info, &m->ep, NULL);
	if (rc) {
		open_failed(m, "fi_endpoint", rc);
		goto fail;
	}
	rc = fi_ep_bind(m->ep, &m->av->fid, 0);
	if (!rc)
		rc = fi_ep_bind(m->ep, &m->cq->fid, FI_TRANSMIT | FI_RECV);
	if (rc) {
		open_failed(m, "fi_ep_bind", rc);
		goto fail;
	}
	rc = fi_enable(m->ep);
	if (rc) {
		open_failed(m, "fi_enable", rc);
		goto fail;
	}
	m->addrlen = sizeof(m->addr);
	rc = fi_getname(&m->ep->fid, m->addr, &m->addrlen);
	if (rc) {
		open_failed(m, "fi_getname", rc);
		goto fail;
	}

	m->inject_size = info->tx_attr ? info->tx_attr->inject_size : 0;
	max_msg = info->ep_attr->max_msg_size;
	if (max_msg > hdr && m->super.btl_max_send_size > max_msg - hdr)
		m->super.btl_max_send_size = max_msg - hdr;
	if (m->super.btl_eager_limit > m->super.btl_max_send_size)
		m->super.btl_eager_limit = m->super.btl_max_send_size;
	if (m->super.btl_rndv_eager_limit > m->super.btl_eager_limit)
		m->super.btl_rndv_eager_limit = m->super.btl_eager_limit;
	return 0;

fail:
	gamma_fi_close(m);
	return rc ? rc : -FI_EOTHER;
}

/* Finalize: give queued and in-flight sends a bounded chance to leave, so
 * the last messages of a job are not lost by closing the endpoint early. */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void gamma_fi_flush(mca_btl_gamma_module_t *m)
{
	const double deadline = now_s() + GAMMA_FLUSH_SECONDS;

	while ((m->inflight > 0 || !opal_list_is_empty(&m->pending)) && now_s() < deadline)
		gamma_fi_progress(m);
	if (m->inflight > 0 || !opal_list_is_empty(&m->pending))
		GAMMA_VERBOSE(10, "btl gamma: %s: closing with %d sends unconfirmed", m->ifname,
			      m->inflight + (int)opal_list_get_size(&m->pending));
}

void gamma_fi_close(mca_btl_gamma_module_t *m)
{
	if (m->ep)
		fi_close(&m->ep->fid);
	if (m->cq)
		fi_close(&m->cq->fid);
	if (m->av)
		fi_close(&m->av->fid);
	if (m->domain)
		fi_close(&m->domain->fid);
	if (m->fabric)
		fi_close(&m->fabric->fid);
	if (m->info)
		fi_freeinfo(m->info);
	free(m->job_addr);
	m->job_addr = NULL;
	m->job_size = 0;
	m->job_known = true; /* nothing to learn into a closed AV */
	m->ep = NULL;
	m->cq = NULL;
	m->av = NULL;
	m->domain = NULL;
	m->fabric = NULL;
	m->info = NULL;
}

int gamma_fi_post_recv(mca_btl_gamma_module_t *m, struct gamma_rxbuf *rx)
{
	const size_t len = sizeof(struct gamma_hdr) + m->super.btl_max_send_size;
	ssize_t rc;

	rx->ctx.kind = GAMMA_CTX_RECV;
	rx->module = m;
	rc = fi_recv(m->ep, rx->buf, len, NULL, FI_ADDR_UNSPEC, &rx->ctx.fi);
	if (rc == 0) {
		rx->posted = true;
		return 0;
	}
	rx->posted = false;
	if (rc == -FI_EAGAIN) {
		/* The next progress call reposts it. */
		m->rx_unposted++;
		return 0;
	}
	opal_output(0, "btl gamma: fi_recv on %s failed: %s", m->ifname, fi_strerror((int)-rc));
	return (int)rc;
}

static void repost_missing(mca_btl_gamma_module_t *m)
{
	int missing = m->rx_unposted;

	m->rx_unposted = 0;
	for (int i = 0; i < GAMMA_RX_POSTED && missing > 0; i++) {
		if (!m->rx[i].posted && !m->rx[i].busy) {
			missing--;
			gamma_fi_post_recv(m, &m->rx[i]);
		}
	}
	m->rx_unposted += missing;
}

static void handle_error(mca_btl_gamma_module_t *m)
{
	struct fi_cq_err_entry err = {0};
	struct gamma_ctx *ctx;

	if (fi_cq_readerr(m->cq, &err, 0) < 1)
		return;
	ctx = err.op_context;
	if (!ctx) {
		opal_output(0, "btl gamma: %s: completion error: %s", m->ifname,
			    fi_strerror(err.err));
		return;
	}
	if (ctx->kind == GAMMA_CTX_WATCH) {
		mca_btl_gamma_endpoint_t *ep;

		if (!m->enabled)
			return; /* finalizing: the endpoint may be gone */
		ep = container_of(ctx, mca_btl_gamma_endpoint_t, watch);
		ep->watching = false;
		if (err.err != FI_ECANCELED)
			gamma_endpoint_fail(ep, "no acknowledgement within FI_GAMMA_PEER_TIMEOUT: "
						"the peer or the link to it is dead");
		return;
	}
	if (ctx->kind == GAMMA_CTX_SEND) {
		mca_btl_gamma_frag_t *frag = container_of(ctx, mca_btl_gamma_frag_t, ctx);
		char why[160];

		m->inflight--;
		if (!m->enabled) {
			gamma_frag_return_if_owned(frag);
			return;
		}
		snprintf(why, sizeof(why), "send on %s failed: %s", m->ifname,
			 fi_cq_strerror(m->cq, err.prov_errno, err.err_data, NULL, 0));
		gamma_endpoint_fail(frag->endpoint, why);
		gamma_send_complete(frag, OPAL_ERR_UNREACH);
		return;
	}
	/* A receive buffer: cancelled at close, or a message did not fit. */
	struct gamma_rxbuf *rx = container_of(ctx, struct gamma_rxbuf, ctx);
	rx->posted = false;
	if (err.err == FI_ECANCELED || !m->enabled)
		return;
	opal_output(0, "btl gamma: %s: receive failed: %s (a peer sent more than "
		       "btl_gamma_max_send_size? use the same value on every rank)",
		    m->ifname, fi_strerror(err.err));
	gamma_fi_post_recv(m, rx);
}

int gamma_fi_progress(mca_btl_gamma_module_t *m)
{
	struct fi_cq_tagged_entry ent[GAMMA_CQ_BATCH];
	fi_addr_t src[GAMMA_CQ_BATCH];
	int events = 0;
	ssize_t n;

	if (!m->job_known)
		gamma_endpoint_learn_job(m);

	for (int round = 0; round < 4; round++) {
		n = fi_cq_readfrom(m->cq, ent, GAMMA_CQ_BATCH, src);
		if (n == -FI_EAVAIL) {
			handle_error(m);
			events++;
			continue;
		}
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++) {
			struct gamma_ctx *ctx = ent[i].op_context;

			if (ctx->kind == GAMMA_CTX_WATCH) {
				/* Nobody sends the watch tag; should one, watch again. */
				container_of(ctx, mca_btl_gamma_endpoint_t, watch)->watching = false;
				if (m->enabled)
					gamma_endpoint_watch(
					    container_of(ctx, mca_btl_gamma_endpoint_t, watch));
			} else if (ctx->kind == GAMMA_CTX_SEND) {
				m->inflight--;
				gamma_send_complete(container_of(ctx, mca_btl_gamma_frag_t, ctx),
						    OPAL_SUCCESS);
			} else {
				struct gamma_rxbuf *rx = container_of(ctx, struct gamma_rxbuf, ctx);
				rx->posted = false;
				if (!m->enabled)
					continue; /* finalizing: the PML is gone */
				/*
				 * The PML trusts what it is handed (pointers among
				 * them): only messages from the job's ranks, i.e. from
				 * the address vector, which holds the modex's
				 * addresses and nothing else.
				 */
				if (src[i] == FI_ADDR_NOTAVAIL) {
					GAMMA_VERBOSE(10, "btl gamma: %s: dropped a message from a "
							  "source outside the job",
						      m->ifname);
					gamma_fi_post_recv(m, rx);
					continue;
				}
				rx->busy = true;
				gamma_recv_deliver(m, rx, ent[i].len);
				rx->busy = false;
				gamma_fi_post_recv(m, rx);
			}
		}
		events += (int)n;
		if (n < GAMMA_CQ_BATCH)
			break;
	}
	if (m->rx_unposted)
		repost_missing(m);
	if (!opal_list_is_empty(&m->pending))
		events += gamma_send_drain_pending(m);
	return events;
}

ssize_t gamma_fi_send(mca_btl_gamma_frag_t *frag)
{
	mca_btl_gamma_module_t *m = frag->module;

	ssize_t rc;

	struct iovec iov[2] = {
		{frag->hdr, sizeof(struct gamma_hdr) + frag->segment[0].seg_len},
		{frag->segment[1].seg_addr.pval, frag->segment[1].seg_len},
	};

	frag->ctx.kind = GAMMA_CTX_SEND;
	rc = fi_sendv(m->ep, iov, NULL, frag->base.des_segment_count, frag->endpoint->fi_addr,
		      &frag->ctx.fi);
	if (rc == 0)
		m->inflight++;
	return rc;
}

ssize_t gamma_fi_inject(mca_btl_gamma_module_t *m, mca_btl_gamma_endpoint_t *ep,
			const void *buf, size_t len)
{
	return fi_inject(m->ep, buf, len, ep->fi_addr);
}
