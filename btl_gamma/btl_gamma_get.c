/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * btl_get over the provider's tagged messages (see btl_gamma.h).  A peer's
 * request is served only inside a live registration (btl_gamma_reg.h);
 * anything else is answered with an empty message, which fails that get
 * (ob1 then asks for the data by send instead).
 */
#include "btl_gamma.h"

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "opal/util/output.h"

/* The body of a GAMMA_TAG_GET message. */
struct gamma_get_req {
	uint64_t addr; /* in the server's memory, inside the registration */
	uint64_t len;
	uint64_t tag; /* of the requester's receive */
	uint32_t reg_id;
	uint32_t reg_key;
};

OBJ_CLASS_INSTANCE(gamma_get_t, opal_free_list_item_t, NULL, NULL);

static inline mca_btl_gamma_module_t *to_module(mca_btl_base_module_t *btl)
{
	return (mca_btl_gamma_module_t *)btl;
}

int gamma_get_init(mca_btl_gamma_module_t *m)
{
	gamma_regs_init(&m->regs);
	OBJ_CONSTRUCT(&m->get_pending, opal_list_t);
	OBJ_CONSTRUCT(&m->gets, opal_free_list_t);
	return opal_free_list_init(&m->gets, sizeof(gamma_get_t), opal_cache_line_size,
	                           OBJ_CLASS(gamma_get_t), 0, 0, 16, -1, 16, NULL, 0, NULL, NULL,
	                           NULL);
}

void gamma_get_fini(mca_btl_gamma_module_t *m)
{
	opal_list_item_t *item;

	while ((item = opal_list_remove_first(&m->get_pending)))
		opal_free_list_return(&m->gets, (opal_free_list_item_t *)item);
	OBJ_DESTRUCT(&m->get_pending);
	OBJ_DESTRUCT(&m->gets);
	gamma_regs_fini(&m->regs);
}

mca_btl_base_registration_handle_t *gamma_register_mem(mca_btl_base_module_t *btl,
                                                       mca_btl_base_endpoint_t *endpoint,
                                                       void *base, size_t size, uint32_t flags)
{
	mca_btl_gamma_module_t *m = to_module(btl);
	mca_btl_base_registration_handle_t *h;

	/* Only what a peer may read needs a slot; ob1's registrations of a
	 * receive buffer (for our own gets, or for puts we refuse) never fail. */
	if (!(flags & MCA_BTL_REG_FLAG_REMOTE_READ))
		return &m->local_reg;
	/* NULL (every slot taken): ob1 sends the message in fragments instead. */
	OPAL_THREAD_LOCK(&m->lock);
	h = gamma_regs_add(&m->regs, base, size);
	m->regs_full += !h;
	OPAL_THREAD_UNLOCK(&m->lock);
	return h;
}

int gamma_deregister_mem(mca_btl_base_module_t *btl, mca_btl_base_registration_handle_t *handle)
{
	mca_btl_gamma_module_t *m = to_module(btl);

	if (handle == &m->local_reg)
		return OPAL_SUCCESS;
	OPAL_THREAD_LOCK(&m->lock);
	gamma_regs_remove(&m->regs, handle);
	OPAL_THREAD_UNLOCK(&m->lock);
	return OPAL_SUCCESS;
}

int gamma_get(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint, void *local_address,
              uint64_t remote_address, mca_btl_base_registration_handle_t *local_handle,
              mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags, int order,
              mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
	mca_btl_gamma_module_t *m = to_module(btl);
	struct gamma_get_req q;
	mca_btl_base_descriptor_t *des;
	gamma_get_t *g;
	ssize_t rc;

	if (endpoint->failed)
		return OPAL_ERR_UNREACH;
	if (!size || !remote_handle)
		return OPAL_ERR_NOT_AVAILABLE; /* ob1 then uses send */
	g = (gamma_get_t *)opal_free_list_get(&m->gets);
	if (!g)
		return OPAL_ERR_OUT_OF_RESOURCE;
	des = gamma_alloc(btl, endpoint, MCA_BTL_NO_ORDER, sizeof(q),
	                  MCA_BTL_DES_FLAGS_BTL_OWNERSHIP);
	if (!des) {
		opal_free_list_return(&m->gets, &g->super);
		return OPAL_ERR_OUT_OF_RESOURCE;
	}
	g->ctx.kind = GAMMA_CTX_GET;
	g->module = m;
	g->endpoint = endpoint;
	g->buf = local_address;
	g->len = size;
	g->local_handle = local_handle;
	g->cbfunc = cbfunc;
	g->cbcontext = cbcontext;
	g->cbdata = cbdata;
	g->abandoned = false;
	OPAL_THREAD_LOCK(&m->lock);
	g->tag = GAMMA_GET_TAG_BIT | (m->get_seq++ & (GAMMA_GET_TAG_BIT - 1));
	OPAL_THREAD_UNLOCK(&m->lock);

	/* The receive first: the data may follow the request at once. */
	rc = fi_trecv(m->ep, local_address, size, NULL, endpoint->fi_addr, g->tag, 0, &g->ctx.fi);
	if (rc) {
		gamma_free(btl, des);
		opal_free_list_return(&m->gets, &g->super);
		return rc == -FI_EAGAIN ? OPAL_ERR_OUT_OF_RESOURCE : OPAL_ERROR;
	}
	q = (struct gamma_get_req){
	    .addr = remote_address,
	    .len = size,
	    .tag = g->tag,
	    .reg_id = remote_handle->id,
	    .reg_key = remote_handle->key,
	};
	memcpy(des->des_segments[0].seg_addr.pval, &q, sizeof(q));
	des->des_segments[0].seg_len = sizeof(q);
	des->des_cbfunc = NULL;
	rc = gamma_send(btl, endpoint, des, GAMMA_TAG_GET);
	if (rc >= 0)
		return OPAL_SUCCESS;
	/* The request did not leave: withdraw the receive (its cancellation
	 * returns g), and tell ob1 now. */
	gamma_free(btl, des);
	g->abandoned = true;
	fi_cancel(&m->ep->fid, &g->ctx.fi);
	return (int)rc;
}

/*
 * ob1 asks for a put when a contiguous message arrives by its rendezvous
 * instead of an RGET (the sender's registration failed, or a second BTL to
 * the same peer took the send).  gamma has none: refused, ob1 sends that
 * part in fragments instead.  Every rank must agree on gets, though: ob1
 * aborts on an RGET its receiver's BTL cannot serve, so btl_gamma_flags
 * is a job-wide setting.
 */
int gamma_put(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint, void *local_address,
              uint64_t remote_address, mca_btl_base_registration_handle_t *local_handle,
              mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags, int order,
              mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
	OPAL_THREAD_ADD_FETCH64(&to_module(btl)->puts_refused, 1);
	return OPAL_ERR_NOT_AVAILABLE;
}

/* Hand the data of a peer's get to the provider (m->lock held). */
static ssize_t data_post(mca_btl_gamma_module_t *m, gamma_get_t *g)
{
	const struct iovec iov = {.iov_base = g->buf, .iov_len = g->len};
	const struct fi_msg_tagged msg = {
	    .msg_iov = &iov,
	    .iov_count = g->len ? 1 : 0,
	    .addr = g->peer,
	    .tag = g->tag,
	    .context = &g->ctx.fi,
	};
	/* Frames leave from ob1's buffer and are resent from it: it stays
	 * registered until the peer's FIN, which acknowledges them all. */
	ssize_t rc = fi_tsendmsg(m->ep, &msg, FI_TRANSMIT_COMPLETE | FI_COMPLETION);

	if (rc == 0)
		OPAL_THREAD_ADD_FETCH32(&m->inflight, 1);
	else if (rc != -FI_EAGAIN)
		/* The provider gave up on this peer: its failure watch says so. */
		GAMMA_VERBOSE(10, "btl gamma: %s: cannot send the data of a peer's get: %s",
		              m->ifname, fi_strerror((int)-rc));
	return rc;
}

void gamma_get_serve(mca_btl_gamma_module_t *m, fi_addr_t src, const void *body, size_t len)
{
	struct gamma_get_req q;
	gamma_get_t *g;
	ssize_t rc;

	if (len != sizeof(q)) {
		GAMMA_VERBOSE(10, "btl gamma: %s: dropped a %zu-byte get request", m->ifname, len);
		return;
	}
	memcpy(&q, body, sizeof(q));
	g = (gamma_get_t *)opal_free_list_get(&m->gets);
	if (!g) {
		/* Nothing to answer with: the requester waits for ever. */
		if (m->error_cb)
			m->error_cb(&m->super, MCA_BTL_ERROR_FLAGS_FATAL, NULL,
			            "btl gamma: out of memory serving a peer's get");
		return;
	}
	g->ctx.kind = GAMMA_CTX_GET_DATA;
	g->module = m;
	g->peer = src;
	g->tag = q.tag;
	OPAL_THREAD_LOCK(&m->lock);
	if (gamma_regs_allow(&m->regs, q.reg_id, q.reg_key, q.addr, q.len)) {
		g->buf = (void *)(uintptr_t)q.addr;
		g->len = q.len;
		m->gets_served++;
	} else {
		m->gets_refused++;
		/* An empty answer fails the get instead of leaving it waiting. */
		GAMMA_VERBOSE(10,
		              "btl gamma: %s: refused a get of %llu bytes: no such registration",
		              m->ifname, (unsigned long long)q.len);
		g->buf = NULL;
		g->len = 0;
	}
	rc = opal_list_is_empty(&m->get_pending) ? data_post(m, g) : -FI_EAGAIN;
	if (rc == -FI_EAGAIN)
		opal_list_append(&m->get_pending, &g->super.super);
	else if (rc)
		opal_free_list_return(&m->gets, &g->super);
	OPAL_THREAD_UNLOCK(&m->lock);
}

/* From progress. */
int gamma_get_drain_pending(mca_btl_gamma_module_t *m)
{
	int sent = 0;

	OPAL_THREAD_LOCK(&m->lock);
	while (!opal_list_is_empty(&m->get_pending)) {
		gamma_get_t *g = (gamma_get_t *)opal_list_get_first(&m->get_pending);
		ssize_t rc = data_post(m, g);

		if (rc == -FI_EAGAIN)
			break;
		opal_list_remove_first(&m->get_pending);
		if (rc)
			opal_free_list_return(&m->gets, &g->super);
		else
			sent++;
	}
	OPAL_THREAD_UNLOCK(&m->lock);
	return sent;
}

/* A completion of either side; err is NULL on success, len what arrived. */
void gamma_get_done(gamma_get_t *g, const struct fi_cq_err_entry *err, size_t len)
{
	mca_btl_gamma_module_t *m = g->module;
	int status = OPAL_SUCCESS;

	if (g->ctx.kind == GAMMA_CTX_GET_DATA) {
		OPAL_THREAD_ADD_FETCH32(&m->inflight, -1);
		opal_free_list_return(&m->gets, &g->super);
		return;
	}
	if (err || len != g->len) {
		/* A refusal (an empty answer), a lost peer, or cancelled at close. */
		status = OPAL_ERROR;
		m->gets_failed++;
		if (err && err->err != FI_ECANCELED)
			GAMMA_VERBOSE(10, "btl gamma: %s: get of %zu bytes failed: %s", m->ifname,
			              g->len, fi_strerror(err->err));
	}
	m->gets_done += status == OPAL_SUCCESS;
	if (!g->abandoned && m->enabled && !(err && err->err == FI_ECANCELED))
		g->cbfunc(&m->super, g->endpoint, g->buf, g->local_handle, g->cbcontext, g->cbdata,
		          status);
	opal_free_list_return(&m->gets, &g->super);
}

void gamma_get_report(const mca_btl_gamma_module_t *m)
{
	GAMMA_VERBOSE(10, "btl gamma: %s: gets: %llu done, %llu failed; served %llu, refused %llu",
	              m->ifname, (unsigned long long)m->gets_done,
	              (unsigned long long)m->gets_failed, (unsigned long long)m->gets_served,
	              (unsigned long long)m->gets_refused);
	GAMMA_VERBOSE(10,
	              "btl gamma: %s: registrations refused (all %d taken) %llu, puts refused %lld",
	              m->ifname, GAMMA_REG_CHUNK * GAMMA_REG_CHUNKS,
	              (unsigned long long)m->regs_full, (long long)m->puts_refused);
}
