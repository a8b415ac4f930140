/* SPDX-License-Identifier: BSD-2-Clause */
/* The libfabric wrapper: getinfo, opening one endpoint per interface,
 * posting receive buffers and sending.  Reading the completion queue is
 * btl_gamma_progress.c. */
#include "btl_gamma.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "fi_gamma.h"

#include "opal/util/output.h"
#include "opal/util/proc.h"

#define GAMMA_FI_VERSION FI_VERSION(1, 17)

/* btl_gamma_priority -> gamma's double queue: high is the parallel job. */
static uint32_t gamma_tclass(void)
{
	return mca_btl_gamma_component.params.priority == GAMMA_PRIO_HIGH ? FI_TC_LOW_LATENCY
	                                                                  : FI_TC_BULK_DATA;
}

static struct fi_info *make_hints(const char *prov, const char *domain)
{
	struct fi_info *hints = fi_allocinfo();
	size_t key_len;
	const uint8_t *key = gamma_secret_local(&key_len);

	if (!hints || !key) {
		fi_freeinfo(hints);
		return NULL;
	}
	/* Our own secret until add_procs sets the job's (btl_gamma_secret.c);
	 * fi_freeinfo frees the copy with the hints. */
	hints->domain_attr->auth_key = malloc(key_len);
	if (!hints->domain_attr->auth_key) {
		fi_freeinfo(hints);
		return NULL;
	}
	memcpy(hints->domain_attr->auth_key, key, key_len);
	hints->domain_attr->auth_key_size = key_len;
	/* Tagged and directed: only for the per-peer failure watch.  FI_SOURCE:
	 * every receive completion says who sent it. */
	hints->caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE;
	/* We keep a struct fi_context at the start of every operation context. */
	hints->mode = FI_CONTEXT;
	hints->ep_attr->type = FI_EP_RDM;
	/* Sends come from our own buffers without descriptors: no FI_MR_LOCAL. */
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	/* MPI_THREAD_MULTIPLE: Open MPI calls in from any thread. */
	hints->domain_attr->threading = opal_using_threads() ? FI_THREAD_SAFE : FI_THREAD_DOMAIN;
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
		gamma_show_help("open permission denied", what, m->ifname, gamma_hostname());
	else
		gamma_show_help("open failed", what, m->ifname, fi_strerror(-rc), gamma_hostname());
}

/*
 * A message of len bytes grown to fill the frames it takes to the last byte
 * (FI_OPT_GAMMA_MSG_FRAMES).  ob1's pipeline sends a large message in
 * fragments of max_send_size: at MTU 9000 a 64 KiB fragment took 8 frames,
 * the last a third full, and at MTU 65000 two, the second nearly empty.
 * (Several rails: fragments go by the provider's rendezvous, striped.)
 */
static size_t whole_frames(const struct fi_gamma_msg_frames *f, size_t len)
{
	size_t k;

	if (!f->first || !f->next || len <= f->first)
		return len;
	k = (len - f->first + f->next - 1) / f->next;
	return f->first + k * f->next;
}

int gamma_fi_open(mca_btl_gamma_module_t *m, struct fi_info *info)
{
	struct fi_av_attr av_attr = {0};
	struct fi_cq_attr cq_attr = {0};
	const size_t hdr = sizeof(struct gamma_hdr);
	struct fi_gamma_msg_frames frames;
	size_t max_msg, flen;
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
	av_attr.type = info->domain_attr->av_type;
	rc = fi_av_open(m->domain, &av_attr, &m->av, NULL);
	if (rc) {
		open_failed(m, "fi_av_open", rc);
		goto fail;
	}
	cq_attr.format = FI_CQ_FORMAT_TAGGED;
	/* A wait object only for btl_gamma_idle.c to sleep in. */
	cq_attr.wait_obj = mca_btl_gamma_component.params.idle_block == GAMMA_IDLE_BLOCK_NO
	                       ? FI_WAIT_NONE
	                       : FI_WAIT_UNSPEC;
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
	flen = sizeof(frames);
	if (fi_getopt(&m->ep->fid, FI_OPT_ENDPOINT, FI_OPT_GAMMA_MSG_FRAMES, &frames, &flen))
		frames = (struct fi_gamma_msg_frames){0};
	m->one_frame = frames.first ? frames.first : SIZE_MAX;
	if (!strchr(m->ifname, '+'))
		m->super.btl_max_send_size =
		    whole_frames(&frames, hdr + m->super.btl_max_send_size) - hdr;
	if (max_msg > hdr && m->super.btl_max_send_size > max_msg - hdr)
		m->super.btl_max_send_size = max_msg - hdr;
	if (m->super.btl_eager_limit > m->super.btl_max_send_size)
		m->super.btl_eager_limit = m->super.btl_max_send_size;
	if (m->super.btl_rndv_eager_limit > m->super.btl_eager_limit)
		m->super.btl_rndv_eager_limit = m->super.btl_eager_limit;
	/* A get is one message: ob1 splits larger ones. */
	if (max_msg && m->super.btl_get_limit > max_msg)
		m->super.btl_get_limit = max_msg;
	return 0;

fail:
	gamma_fi_close(m);
	return rc ? rc : -FI_EOTHER;
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
	gamma_show_help("post receive failed", m->ifname, fi_strerror((int)-rc), gamma_hostname());
	return (int)rc;
}

ssize_t gamma_fi_send(mca_btl_gamma_frag_t *frag)
{
	mca_btl_gamma_module_t *m = frag->module;
	struct iovec iov[2] = {
	    {frag->hdr, sizeof(struct gamma_hdr) + frag->segment[0].seg_len},
	    {frag->segment[1].seg_addr.pval, frag->segment[1].seg_len},
	};
	const struct fi_msg msg = {.msg_iov = iov,
	                           .iov_count = frag->base.des_segment_count,
	                           .addr = frag->endpoint->fi_addr,
	                           .context = &frag->ctx.fi};
	/*
	 * The fragment's memory (the user's data when in place) is ours until
	 * its completion anyway, so a pipeline fragment of several frames lets
	 * the provider send from it rather than copy it: the completion then
	 * waits for the peer's ack, which ob1's pipeline hides.  A fragment the
	 * PML marks urgent (an eager message, the first of a rendezvous) is
	 * copied and completes when buffered: waiting for its ack made the
	 * peer send an ack of its own ahead of its reply, +4 us on a 16 KiB
	 * half round trip at MTU 9000 (18.5 against 14.6 us).  One-frame
	 * fragments complete when buffered too.
	 */
	uint64_t flags = sizeof(struct gamma_hdr) + gamma_frag_len(frag) > m->one_frame &&
	                         !(frag->base.des_flags & MCA_BTL_DES_FLAGS_PRIORITY)
	                     ? FI_TRANSMIT_COMPLETE
	                     : 0;
	ssize_t rc;

	frag->ctx.kind = GAMMA_CTX_SEND;
	rc = fi_sendmsg(m->ep, &msg, flags | FI_COMPLETION);
	if (rc == 0)
		OPAL_THREAD_ADD_FETCH32(&m->inflight, 1);
	return rc;
}

ssize_t gamma_fi_inject(mca_btl_gamma_module_t *m, mca_btl_gamma_endpoint_t *ep, const void *buf,
                        size_t len)
{
	return fi_inject(m->ep, buf, len, ep->fi_addr);
}
