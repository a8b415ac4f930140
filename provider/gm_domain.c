/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The domain: one Ethernet interface in this process.  It owns the gm_net
 * (socket, rings, peers) and the lock that serializes every object on it;
 * progress on any CQ of the domain progresses all its endpoints.
 */
#include "gm.h"
#include "gm_nosys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int gm_domain_close(struct fid *fid)
{
	struct gm_domain *dom = gm_container_of(fid, struct gm_domain, fid.fid);

	if (dom->refs)
		return -FI_EBUSY;
	gm_net_close(dom->net);
	pthread_mutex_destroy(&dom->lock);
	free(dom);
	return 0;
}

void gm_domain_progress(struct gm_domain *dom)
{
	struct gm_list *pos, *tmp;

	gm_net_progress(dom->net);
	gm_list_for_each_safe(&dom->eps, pos, tmp)
		gm_msg_progress_ep(gm_list_entry(pos, struct gm_ep, dom_entry));
}

/* Called with the lock held; drops it while blocked. */
int gm_domain_wait(struct gm_domain *dom, int timeout_ms)
{
	int ret;

	pthread_mutex_unlock(&dom->lock);
	ret = gm_net_wait(dom->net, timeout_ms);
	pthread_mutex_lock(&dom->lock);
	return ret;
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
	.poll_open = gm_no_poll_open,
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
	};
	struct gm_domain *dom;
	int ret;

	if (!info || !info->domain_attr || !info->domain_attr->name)
		return -FI_EINVAL;
	if (info->domain_attr->auth_key_size &&
	    info->domain_attr->auth_key_size != sizeof(uint32_t))
		return -FI_EINVAL;
	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	snprintf(dom->ifname, sizeof(dom->ifname), "%s", info->domain_attr->name);
	if (info->domain_attr->auth_key && info->domain_attr->auth_key_size)
		memcpy(&dom->auth_key, info->domain_attr->auth_key, sizeof(uint32_t));
	np.ifname = dom->ifname;
	ret = gm_net_open(&np, &dom->net);
	if (ret) {
		free(dom);
		return ret;
	}
	pthread_mutex_init(&dom->lock, NULL);
	gm_list_init(&dom->eps);
	dom->fabric = gm_container_of(fabric, struct gm_fabric, fid);
	dom->fid.fid.fclass = FI_CLASS_DOMAIN;
	dom->fid.fid.context = context;
	dom->fid.fid.ops = &gm_domain_fi_ops;
	dom->fid.ops = &gm_domain_ops;
	dom->fid.mr = &gm_domain_mr_ops;
	*domain = &dom->fid;
	return 0;
}
