/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Endpoints (FI_EP_RDM): binding, options, addressing, and the msg/tagged
 * entry points, which all funnel into gm_msg_send / gm_msg_recv.
 */
#include "gm.h"
#include "gm_nosys.h"

#include <stdlib.h>
#include <string.h>

#define GM_EP(fid_ep) gm_container_of(fid_ep, struct gm_ep, fid)

static int gm_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct gm_ep *ep = gm_container_of(fid, struct gm_ep, fid.fid);
	int ret = 0;

	pthread_mutex_lock(&ep->dom->lock);
	switch (bfid->fclass) {
	case FI_CLASS_AV:
		if (ep->av) {
			ret = -FI_EINVAL;
			break;
		}
		ep->av = gm_container_of(bfid, struct gm_av, fid.fid);
		ep->av->refs++;
		break;
	case FI_CLASS_CQ: {
		struct gm_cq *cq = gm_container_of(bfid, struct gm_cq, fid.fid);
		if (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)) {
			ret = -FI_EBADFLAGS;
			break;
		}
		if (flags & FI_TRANSMIT) {
			ep->tx_cq = cq;
			ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
			cq->refs++;
		}
		if (flags & FI_RECV) {
			ep->rx_cq = cq;
			ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
			cq->refs++;
		}
		break;
	}
	case FI_CLASS_CNTR: {
		struct gm_cntr *c = gm_container_of(bfid, struct gm_cntr, fid.fid);
		if (flags & ~(FI_SEND | FI_RECV)) {
			ret = -FI_EBADFLAGS;
			break;
		}
		if (flags & FI_SEND) {
			ep->send_cntr = c;
			c->refs++;
		}
		if (flags & FI_RECV) {
			ep->recv_cntr = c;
			c->refs++;
		}
		break;
	}
	case FI_CLASS_EQ:
		/* held, though an RDM endpoint has no connection events to report */
		if (ep->eq) {
			ret = -FI_EINVAL;
			break;
		}
		ep->eq = gm_eq_of(bfid);
		gm_eq_hold(ep->eq, 1);
		break;
	default:
		ret = -FI_EINVAL;
	}
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

static int ep_control(struct gm_ep *ep, int command, void *arg)
{
	uint64_t *flags = arg; /* FI_{GET,SET}OPSFLAG: FI_TRANSMIT or FI_RECV plus the flags */

	switch (command) {
	case FI_ENABLE:
		if (!ep->av) {
			GM_WARN(FI_LOG_EP_CTRL, "fi_enable: no address vector bound\n");
			return -FI_ENOAV;
		}
		if (!ep->tx_cq && !ep->rx_cq)
			return -FI_ENOCQ;
		ep->enabled = true;
		return 0;
	case FI_GETOPSFLAG:
		if (*flags & FI_TRANSMIT)
			*flags = ep->tx_op_flags;
		else if (*flags & FI_RECV)
			*flags = ep->rx_op_flags;
		else
			return -FI_EINVAL;
		return 0;
	case FI_SETOPSFLAG:
		if (*flags & FI_TRANSMIT)
			ep->tx_op_flags = *flags & ~FI_TRANSMIT;
		else if (*flags & FI_RECV)
			ep->rx_op_flags = *flags & ~FI_RECV;
		else
			return -FI_EINVAL;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

/* The progress thread reads what this writes, under the domain lock. */
static int gm_ep_control(struct fid *fid, int command, void *arg)
{
	struct gm_ep *ep = gm_container_of(fid, struct gm_ep, fid.fid);
	int ret;

	pthread_mutex_lock(&ep->dom->lock);
	ret = ep_control(ep, command, arg);
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

static int gm_ep_close(struct fid *fid)
{
	struct gm_ep *ep = gm_container_of(fid, struct gm_ep, fid.fid);
	struct gm_domain *dom = ep->dom;

	pthread_mutex_lock(&dom->lock);
	/* Operations still posted are discarded (fi_endpoint(3)), but the acks
	   owed for what was delivered go out, or the peers' sends fail; and a
	   peer pulling a message from us learns that the rest will not come. */
	gm_msg_shutdown(&ep->msg);
	for (unsigned r = 0; r < ep->msg.nrails; r++)
		gm_port_drain(ep->msg.rail_ports[r]);
	if (gm_params.stats)
		gm_msg_stats_print(&ep->msg, dom->ifname, stderr);
	gm_msg_close(&ep->msg);
	gm_list_del(&ep->dom_entry);
	for (unsigned r = 0; r < ep->msg.nrails; r++)
		gm_port_close(ep->msg.rail_ports[r]);
	if (ep->av)
		ep->av->refs--;
	if (ep->eq)
		gm_eq_hold(ep->eq, -1);
	if (ep->tx_cq)
		ep->tx_cq->refs--;
	if (ep->rx_cq)
		ep->rx_cq->refs--;
	if (ep->send_cntr)
		ep->send_cntr->refs--;
	if (ep->recv_cntr)
		ep->recv_cntr->refs--;
	dom->refs--;
	pthread_mutex_unlock(&dom->lock);
	fi_freeinfo(ep->info);
	free(ep);
	return 0;
}

static int gm_ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct gm_ep *ep = gm_container_of(fid, struct gm_ep, fid.fid);
	struct gm_addr a[GM_RAILS_MAX];

	for (unsigned r = 0; r < ep->dom->nrails; r++) {
		gm_net_mac(ep->dom->nets[r], a[r].mac);
		a[r].port = gm_port_num(ep->msg.rail_ports[r]);
	}
	return gm_addr_name(ep->info, ep->dom->ifname, a, ep->dom->nrails, addr, addrlen);
}

static int gm_ep_setname(fid_t fid, void *addr, size_t addrlen)
{
	return -FI_ENOSYS; /* ports are chosen by the provider, race-free */
}

static int gm_ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	struct gm_ep *ep = gm_container_of(fid, struct gm_ep, fid.fid);

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname == FI_OPT_MIN_MULTI_RECV) {
		if (*optlen < sizeof(size_t))
			return -FI_ETOOSMALL;
		pthread_mutex_lock(&ep->dom->lock);
		*(size_t *)optval = ep->msg.min_multi_recv;
		pthread_mutex_unlock(&ep->dom->lock);
		*optlen = sizeof(size_t);
		return 0;
	}
	if (optname == FI_OPT_GAMMA_KEY_ID) {
		if (*optlen < sizeof(uint32_t))
			return -FI_ETOOSMALL;
		pthread_mutex_lock(&ep->dom->lock);
		*(uint32_t *)optval = gm_port_key(ep->msg.port);
		pthread_mutex_unlock(&ep->dom->lock);
		*optlen = sizeof(uint32_t);
		return 0;
	}
	if (optname == FI_OPT_GAMMA_MSG_FRAMES) {
		struct fi_gamma_msg_frames *f = optval;

		if (*optlen < sizeof(*f))
			return -FI_ETOOSMALL;
		gm_msg_frames(&ep->msg, &f->first, &f->next);
		*optlen = sizeof(*f);
		return 0;
	}
	return -FI_ENOPROTOOPT;
}

static int gm_ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	struct gm_ep *ep = gm_container_of(fid, struct gm_ep, fid.fid);

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname == FI_OPT_MIN_MULTI_RECV) {
		if (optlen != sizeof(size_t))
			return -FI_EINVAL;
		pthread_mutex_lock(&ep->dom->lock);
		ep->msg.min_multi_recv = *(const size_t *)optval;
		pthread_mutex_unlock(&ep->dom->lock);
		return 0;
	}
	if (optname == FI_OPT_GAMMA_AUTH_KEY) {
		int ret;

		if (!gm_auth_key_size_ok(optlen) || (optlen && !optval))
			return -FI_EINVAL;
		if (gm_params.require_auth && optlen < GM_SECRET_MIN)
			return -FI_EACCES;
		pthread_mutex_lock(&ep->dom->lock);
		ret = 0;
		for (unsigned r = 0; r < ep->msg.nrails && !ret; r++)
			ret = gm_port_set_auth(ep->msg.rail_ports[r],
			                       &(struct gm_auth){optval, optlen});
		pthread_mutex_unlock(&ep->dom->lock);
		return ret;
	}
	if (optname == FI_OPT_GAMMA_PEER_AUTH_KEY) {
		const struct fi_gamma_peer_key *pk = optval;
		int ret;

		if (optlen != sizeof(*pk) || !pk || !pk->key)
			return -FI_EINVAL;
		pthread_mutex_lock(&ep->dom->lock);
		ret = ep->msg.port ? gm_msg_set_peer_auth(&ep->msg, pk->addr,
		                                          &(struct gm_auth){pk->key, pk->key_len})
		                   : -FI_EOPBADSTATE;
		pthread_mutex_unlock(&ep->dom->lock);
		return ret;
	}
	return -FI_ENOPROTOOPT;
}

static ssize_t gm_ep_cancel(fid_t fid, void *context)
{
	struct gm_ep *ep = gm_container_of(fid, struct gm_ep, fid.fid);
	int ret;

	pthread_mutex_lock(&ep->dom->lock);
	ret = gm_msg_cancel(&ep->msg, context);
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

static ssize_t gm_ep_rx_size_left(struct fid_ep *fep)
{
	return GM_RX_SIZE;
}

static ssize_t gm_ep_tx_size_left(struct fid_ep *fep)
{
	return GM_TX_SIZE;
}

static struct fi_ops gm_ep_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = gm_ep_close,
    .bind = gm_ep_bind,
    .control = gm_ep_control,
    .ops_open = gm_no_ops_open,
};

static struct fi_ops_ep gm_ep_ops = {
    .size = sizeof(struct fi_ops_ep),
    .cancel = gm_ep_cancel,
    .getopt = gm_ep_getopt,
    .setopt = gm_ep_setopt,
    .tx_ctx = gm_no_tx_ctx,
    .rx_ctx = gm_no_rx_ctx,
    .rx_size_left = gm_ep_rx_size_left,
    .tx_size_left = gm_ep_tx_size_left,
};

static struct fi_ops_cm gm_ep_cm_ops = {
    .size = sizeof(struct fi_ops_cm),
    .setname = gm_ep_setname,
    .getname = gm_ep_getname,
    .getpeer = gm_no_getpeer,
    .connect = gm_no_connect,
    .listen = gm_no_listen,
    .accept = gm_no_accept,
    .reject = gm_no_reject,
    .shutdown = gm_no_shutdown,
    .join = gm_no_join,
};

/* ---- data transfer entry points ---- */

static ssize_t send_flagged(struct fid_ep *fep, const struct iovec *iov, size_t count,
                            fi_addr_t dest, uint64_t tag, uint64_t data, void *context,
                            uint64_t flags)
{
	struct gm_ep *ep = GM_EP(fep);
	ssize_t ret;

	if (count > GM_IOV_LIMIT)
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->dom->lock);
	ret = ep->enabled ? gm_msg_send(&ep->msg, iov, count, dest, tag, data, context, flags)
	                  : -FI_EOPBADSTATE;
	/* FI_MORE: the caller sends again at once (fi_endpoint(3)). */
	if (!ret && !(flags & FI_MORE))
		gm_domain_kick(ep->dom);
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

static ssize_t do_send(struct fid_ep *fep, const struct iovec *iov, size_t count, fi_addr_t dest,
                       uint64_t tag, uint64_t data, void *context, uint64_t flags)
{
	return send_flagged(fep, iov, count, dest, tag, data, context, flags & ~GM_TX_SILENT);
}

/* fi_inject*: buffer free on return, and no completion at all */
static ssize_t do_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest,
                         uint64_t tag, uint64_t data, uint64_t flags)
{
	const struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return send_flagged(fep, &iov, 1, dest, tag, data, NULL,
	                    flags | FI_SEND | FI_INJECT | GM_TX_SILENT);
}

static ssize_t do_recv(struct fid_ep *fep, const struct iovec *iov, size_t count, fi_addr_t src,
                       uint64_t tag, uint64_t ignore, void *context, uint64_t flags)
{
	struct gm_ep *ep = GM_EP(fep);
	ssize_t ret;

	if (count > GM_IOV_LIMIT)
		return -FI_EINVAL;
	if (!(ep->info->caps & FI_DIRECTED_RECV))
		src = FI_ADDR_UNSPEC;
	pthread_mutex_lock(&ep->dom->lock);
	ret = gm_msg_recv(&ep->msg, iov, count, src, tag, ignore, context, flags);
	if (!ret) /* a receive may have pulled a waiting rendezvous message */
		gm_domain_flush(ep->dom);
	pthread_mutex_unlock(&ep->dom->lock);
	return ret;
}

#define ONE_IOV(b, l) (&(struct iovec){.iov_base = (void *)(b), .iov_len = (l)})

static ssize_t msg_recv(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src,
                        void *context)
{
	return do_recv(fep, ONE_IOV(buf, len), 1, src, 0, 0, context,
	               GM_EP(fep)->rx_op_flags | FI_MSG | FI_RECV);
}

static ssize_t msg_recvv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
                         fi_addr_t src, void *context)
{
	return do_recv(fep, iov, count, src, 0, 0, context,
	               GM_EP(fep)->rx_op_flags | FI_MSG | FI_RECV);
}

static ssize_t msg_recvmsg(struct fid_ep *fep, const struct fi_msg *msg, uint64_t flags)
{
	return do_recv(fep, msg->msg_iov, msg->iov_count, msg->addr, 0, 0, msg->context,
	               flags | FI_MSG | FI_RECV);
}

static ssize_t msg_send(struct fid_ep *fep, const void *buf, size_t len, void *desc, fi_addr_t dest,
                        void *context)
{
	return do_send(fep, ONE_IOV(buf, len), 1, dest, 0, 0, context,
	               GM_EP(fep)->tx_op_flags | FI_MSG | FI_SEND);
}

static ssize_t msg_sendv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
                         fi_addr_t dest, void *context)
{
	return do_send(fep, iov, count, dest, 0, 0, context,
	               GM_EP(fep)->tx_op_flags | FI_MSG | FI_SEND);
}

static ssize_t msg_sendmsg(struct fid_ep *fep, const struct fi_msg *msg, uint64_t flags)
{
	return do_send(fep, msg->msg_iov, msg->iov_count, msg->addr, 0, msg->data, msg->context,
	               flags | FI_MSG | FI_SEND);
}

static ssize_t msg_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest)
{
	return do_inject(fep, buf, len, dest, 0, 0, FI_MSG);
}

static ssize_t msg_senddata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
                            uint64_t data, fi_addr_t dest, void *context)
{
	return do_send(fep, ONE_IOV(buf, len), 1, dest, 0, data, context,
	               GM_EP(fep)->tx_op_flags | FI_MSG | FI_SEND | FI_REMOTE_CQ_DATA);
}

static ssize_t msg_injectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data,
                              fi_addr_t dest)
{
	return do_inject(fep, buf, len, dest, 0, data, FI_MSG | FI_REMOTE_CQ_DATA);
}

static struct fi_ops_msg gm_msg_ops = {
    .size = sizeof(struct fi_ops_msg),
    .recv = msg_recv,
    .recvv = msg_recvv,
    .recvmsg = msg_recvmsg,
    .send = msg_send,
    .sendv = msg_sendv,
    .sendmsg = msg_sendmsg,
    .inject = msg_inject,
    .senddata = msg_senddata,
    .injectdata = msg_injectdata,
};

static ssize_t tag_recv(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src,
                        uint64_t tag, uint64_t ignore, void *context)
{
	return do_recv(fep, ONE_IOV(buf, len), 1, src, tag, ignore, context,
	               GM_EP(fep)->rx_op_flags | FI_TAGGED | FI_RECV);
}

static ssize_t tag_recvv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
                         fi_addr_t src, uint64_t tag, uint64_t ignore, void *context)
{
	return do_recv(fep, iov, count, src, tag, ignore, context,
	               GM_EP(fep)->rx_op_flags | FI_TAGGED | FI_RECV);
}

static ssize_t tag_recvmsg(struct fid_ep *fep, const struct fi_msg_tagged *msg, uint64_t flags)
{
	return do_recv(fep, msg->msg_iov, msg->iov_count, msg->addr, msg->tag, msg->ignore,
	               msg->context, flags | FI_TAGGED | FI_RECV);
}

static ssize_t tag_send(struct fid_ep *fep, const void *buf, size_t len, void *desc, fi_addr_t dest,
                        uint64_t tag, void *context)
{
	return do_send(fep, ONE_IOV(buf, len), 1, dest, tag, 0, context,
	               GM_EP(fep)->tx_op_flags | FI_TAGGED | FI_SEND);
}

static ssize_t tag_sendv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
                         fi_addr_t dest, uint64_t tag, void *context)
{
	return do_send(fep, iov, count, dest, tag, 0, context,
	               GM_EP(fep)->tx_op_flags | FI_TAGGED | FI_SEND);
}

static ssize_t tag_sendmsg(struct fid_ep *fep, const struct fi_msg_tagged *msg, uint64_t flags)
{
	return do_send(fep, msg->msg_iov, msg->iov_count, msg->addr, msg->tag, msg->data,
	               msg->context, flags | FI_TAGGED | FI_SEND);
}

static ssize_t tag_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest,
                          uint64_t tag)
{
	return do_inject(fep, buf, len, dest, tag, 0, FI_TAGGED);
}

static ssize_t tag_senddata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
                            uint64_t data, fi_addr_t dest, uint64_t tag, void *context)
{
	return do_send(fep, ONE_IOV(buf, len), 1, dest, tag, data, context,
	               GM_EP(fep)->tx_op_flags | FI_TAGGED | FI_SEND | FI_REMOTE_CQ_DATA);
}

static ssize_t tag_injectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data,
                              fi_addr_t dest, uint64_t tag)
{
	return do_inject(fep, buf, len, dest, tag, data, FI_TAGGED | FI_REMOTE_CQ_DATA);
}

static struct fi_ops_tagged gm_tagged_ops = {
    .size = sizeof(struct fi_ops_tagged),
    .recv = tag_recv,
    .recvv = tag_recvv,
    .recvmsg = tag_recvmsg,
    .send = tag_send,
    .sendv = tag_sendv,
    .sendmsg = tag_sendmsg,
    .inject = tag_inject,
    .senddata = tag_senddata,
    .injectdata = tag_injectdata,
};

/*
 * One port per rail (the same number where free; fi_getname tells each).
 * Rail 0 gets the port asked for, or a free one when it is taken: several
 * endpoints opened from one fi_info.
 */
static int ports_open(struct gm_ep *ep, uint16_t port, const struct gm_auth *auth)
{
	struct gm_domain *dom = ep->dom;
	struct gm_port *ports[GM_RAILS_MAX];
	int ret = 0;

	for (unsigned r = 0; r < dom->nrails && !ret; r++) {
		uint16_t want = r ? gm_port_num(ports[0]) : port;

		ret = gm_port_open(dom->nets[r], want, ep->cls, auth, &gm_msg_port_ops, &ep->msg,
		                   &ports[r]);
		if (ret == -FI_EADDRINUSE && want) {
			GM_INFO(FI_LOG_EP_CTRL, "port %u in use: choosing another\n", want);
			ret = gm_port_open(dom->nets[r], 0, ep->cls, auth, &gm_msg_port_ops,
			                   &ep->msg, &ports[r]);
		}
		if (ret)
			while (r--)
				gm_port_close(ports[r]);
	}
	if (!ret)
		gm_msg_set_rails(&ep->msg, ports, dom->nrails);
	return ret;
}

int gm_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **fep, void *context)
{
	struct gm_domain *dom = gm_container_of(domain, struct gm_domain, fid);
	struct gm_auth auth = {dom->auth_key, dom->auth_key_len};
	uint16_t port; /* 0: any */
	struct gm_ep *ep;
	int ret;

	if (!info || (info->ep_attr && info->ep_attr->type != FI_EP_RDM &&
	              info->ep_attr->type != FI_EP_UNSPEC))
		return -FI_EINVAL;
	if (info->ep_attr && info->ep_attr->auth_key) {
		if (!gm_auth_key_size_ok(info->ep_attr->auth_key_size))
			return -FI_EINVAL;
		auth = (struct gm_auth){info->ep_attr->auth_key, info->ep_attr->auth_key_size};
	}
	if (gm_params.require_auth && auth.len < GM_SECRET_MIN) {
		GM_WARN(FI_LOG_EP_CTRL,
		        "FI_GAMMA_REQUIRE_AUTH: an endpoint needs an auth_key "
		        "of %d to %d bytes\n",
		        GM_SECRET_MIN, GM_SECRET_MAX);
		return -FI_EACCES;
	}
	if (gm_addr_src_port(info, dom->nrails, &port))
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->info = fi_dupinfo(info);
	if (!ep->info) {
		free(ep);
		return -FI_ENOMEM;
	}
	ep->dom = dom;
	ep->cls = gm_tclass_to_class(info->tx_attr ? info->tx_attr->tclass : FI_TC_UNSPEC);
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	gm_ep_msg_init(ep);
	ep->fid.fid.fclass = FI_CLASS_EP;
	ep->fid.fid.context = context;
	ep->fid.fid.ops = &gm_ep_fi_ops;
	ep->fid.ops = &gm_ep_ops;
	ep->fid.cm = &gm_ep_cm_ops;
	ep->fid.msg = &gm_msg_ops;
	ep->fid.tagged = &gm_tagged_ops;
	ep->fid.rma = &gm_no_rma_ops;
	ep->fid.atomic = &gm_no_atomic_ops;

	pthread_mutex_lock(&dom->lock);
	ret = ports_open(ep, port, &auth);
	if (!ret) {
		gm_list_add_tail(&dom->eps, &ep->dom_entry);
		dom->refs++;
	}
	pthread_mutex_unlock(&dom->lock);
	if (ret) {
		fi_freeinfo(ep->info);
		free(ep);
		return ret;
	}
	*fep = &ep->fid;
	return 0;
}
