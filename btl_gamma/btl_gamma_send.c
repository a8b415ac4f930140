/* SPDX-License-Identifier: BSD-2-Clause */
/* alloc, free, prepare_src, send, sendi, and send completion per the BTL
 * contract: send returns 1 only when the data left at once (inject) and the
 * caller did not ask for a callback; otherwise des_cbfunc runs on completion.
 * Sends the provider refuses with -FI_EAGAIN wait in m->pending, in order,
 * and leave from progress: never dropped, never spun on.  Any thread may
 * call in (MPI_THREAD_MULTIPLE): see the locking note in btl_gamma.h. */
#include "btl_gamma.h"

#include <string.h>

#include <rdma/fi_errno.h>

#include "opal/datatype/opal_convertor.h"
#include "opal/util/output.h"

static inline mca_btl_gamma_module_t *to_module(mca_btl_base_module_t *btl)
{
	return (mca_btl_gamma_module_t *)btl;
}

mca_btl_base_descriptor_t *gamma_alloc(mca_btl_base_module_t *btl,
                                       mca_btl_base_endpoint_t *endpoint, uint8_t order,
                                       size_t size, uint32_t flags)
{
	mca_btl_gamma_frag_t *frag = gamma_frag_get(to_module(btl), size);

	if (!frag)
		return NULL;
	frag->base.des_flags = flags;
	frag->endpoint = endpoint;
	return &frag->base;
}

int gamma_free(mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des)
{
	gamma_frag_return((mca_btl_gamma_frag_t *)des);
	return OPAL_SUCCESS;
}

/*
 * Up to *size bytes of user data behind `reserve` bytes for the PML.
 * Contiguous data larger than an inject stays where it is (segment[1]): the
 * provider copies it from the user's buffer once, while checksumming it,
 * and the PML keeps the buffer until the completion callback.  Anything
 * else is packed into the frag.
 */
mca_btl_base_descriptor_t *gamma_prepare_src(mca_btl_base_module_t *btl,
                                             mca_btl_base_endpoint_t *endpoint,
                                             struct opal_convertor_t *convertor, uint8_t order,
                                             size_t reserve, size_t *size, uint32_t flags)
{
	mca_btl_gamma_module_t *m = to_module(btl);
	mca_btl_gamma_frag_t *frag;
	struct iovec iov;
	uint32_t iov_count = 1;
	size_t max_data;
	bool in_place;

	if (reserve > m->super.btl_max_send_size)
		return NULL;
	if (reserve + *size > m->super.btl_max_send_size)
		*size = m->super.btl_max_send_size - reserve;
	in_place = sizeof(struct gamma_hdr) + reserve + *size > m->inject_size &&
	           !opal_convertor_need_buffers(convertor);
	frag = gamma_frag_get(m, reserve + (in_place ? 0 : *size));
	if (!frag)
		return NULL;
	max_data = *size;
	if (max_data) {
		/* In place, the convertor points iov_base at the user's data. */
		iov.iov_base =
		    in_place ? NULL : (uint8_t *)frag->segment[0].seg_addr.pval + reserve;
		iov.iov_len = max_data;
		if (opal_convertor_pack(convertor, &iov, &iov_count, &max_data) < 0) {
			gamma_frag_return(frag);
			return NULL;
		}
	}
	*size = max_data;
	if (in_place && max_data) {
		frag->segment[0].seg_len = reserve;
		frag->segment[1].seg_addr.pval = iov.iov_base;
		frag->segment[1].seg_len = max_data;
		frag->base.des_segment_count = 2;
	} else {
		frag->segment[0].seg_len = reserve + max_data;
	}
	frag->base.des_flags = flags;
	frag->endpoint = endpoint;
	return &frag->base;
}

void gamma_send_complete(mca_btl_gamma_frag_t *frag, int status)
{
	const bool btl_owned = frag->base.des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;

	/* While finalizing the PML is gone: no callbacks into it. */
	if (frag->callback_owed && frag->base.des_cbfunc && frag->module->enabled)
		frag->base.des_cbfunc(&frag->module->super, frag->endpoint, &frag->base, status);
	if (btl_owned)
		gamma_frag_return(frag);
}

/* Called with m->lock held. */
static void queue_pending(mca_btl_gamma_frag_t *frag)
{
	GAMMA_VERBOSE(100, "btl gamma: %s: provider busy, %zu-byte send queued",
	              frag->module->ifname, gamma_frag_len(frag));
	opal_list_append(&frag->module->pending, &frag->base.super.super);
}

static int send_failed(mca_btl_gamma_frag_t *frag, ssize_t rc)
{
	char why[128];

	snprintf(why, sizeof(why), "fi_send on %s failed: %s", frag->module->ifname,
	         fi_strerror((int)-rc));
	gamma_endpoint_fail(frag->endpoint, why);
	return OPAL_ERR_UNREACH;
}

/*
 * Hands frag to the provider, or queues it behind the sends already
 * waiting, in one step under m->lock so that sends from several threads
 * keep one order.  Returns 1 if injected (no completion will come), 0 if
 * sent or queued (the completion owns frag from here: do not touch it),
 * or the provider's error (frag is still the caller's).
 */
static ssize_t post(mca_btl_gamma_module_t *m, mca_btl_gamma_frag_t *frag, bool may_inject)
{
	const size_t total = sizeof(struct gamma_hdr) + gamma_frag_len(frag);
	ssize_t rc = -FI_EAGAIN;

	OPAL_THREAD_LOCK(&m->lock);
	if (!opal_list_is_empty(&m->pending)) {
		queue_pending(frag);
		rc = 0;
		goto out;
	}
	if (may_inject) {
		rc = gamma_fi_inject(m, frag->endpoint, frag->hdr, total);
		if (rc == 0) {
			rc = 1;
			goto out;
		}
		if (rc != -FI_EAGAIN)
			goto out;
	}
	rc = gamma_fi_send(frag);
	if (rc == -FI_EAGAIN) {
		queue_pending(frag);
		rc = 0;
	}
out:
	OPAL_THREAD_UNLOCK(&m->lock);
	return rc;
}

int gamma_send(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
               mca_btl_base_descriptor_t *des, mca_btl_base_tag_t tag)
{
	mca_btl_gamma_module_t *m = to_module(btl);
	mca_btl_gamma_frag_t *frag = (mca_btl_gamma_frag_t *)des;
	const size_t total = sizeof(struct gamma_hdr) + gamma_frag_len(frag);
	const bool may_inject = total <= m->inject_size && des->des_segment_count == 1 &&
	                        !(des->des_flags & MCA_BTL_DES_SEND_ALWAYS_CALLBACK);
	ssize_t rc;

	if (endpoint->failed)
		return OPAL_ERR_UNREACH;
	frag->endpoint = endpoint;
	frag->hdr->tag = tag;
	/* Set before the frag can complete in another thread. */
	frag->callback_owed = true;
	rc = post(m, frag, may_inject);
	if (rc == 0)
		return OPAL_SUCCESS;
	frag->callback_owed = false;
	if (rc == 1) {
		if (des->des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP)
			gamma_frag_return(frag);
		return 1;
	}
	return send_failed(frag, rc);
}

int gamma_sendi(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                struct opal_convertor_t *convertor, void *header, size_t header_size,
                size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
                mca_btl_base_descriptor_t **descriptor)
{
	mca_btl_gamma_module_t *m = to_module(btl);
	const size_t len = header_size + payload_size;
	mca_btl_gamma_frag_t *frag;
	ssize_t rc;

	if (descriptor)
		*descriptor = NULL;
	if (endpoint->failed)
		return OPAL_ERR_UNREACH;
	if (len > m->super.btl_eager_limit || !opal_list_is_empty(&m->pending))
		return OPAL_ERR_RESOURCE_BUSY;
	frag = gamma_frag_get(m, len);
	if (!frag)
		return OPAL_ERR_RESOURCE_BUSY;

	memcpy(frag->segment[0].seg_addr.pval, header, header_size);
	if (payload_size) {
		struct iovec iov = {
		    .iov_base = (uint8_t *)frag->segment[0].seg_addr.pval + header_size,
		    .iov_len = payload_size,
		};
		uint32_t iov_count = 1;
		size_t max_data = payload_size;

		if (opal_convertor_pack(convertor, &iov, &iov_count, &max_data) < 0 ||
		    max_data != payload_size) {
			gamma_frag_return(frag);
			return OPAL_ERROR;
		}
	}
	frag->hdr->tag = tag;
	frag->endpoint = endpoint;
	/* The data is copied: from here on the BTL owns the message outright. */
	frag->base.des_flags = MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;
	rc = post(m, frag, sizeof(struct gamma_hdr) + len <= m->inject_size);
	if (rc == 0)
		return OPAL_SUCCESS;
	if (rc == 1) {
		gamma_frag_return(frag);
		return OPAL_SUCCESS;
	}
	rc = send_failed(frag, rc);
	gamma_frag_return(frag);
	return (int)rc;
}

/* From progress.  Failures are reported after m->lock is dropped: the
 * PML's callbacks may send again. */
int gamma_send_drain_pending(mca_btl_gamma_module_t *m)
{
	opal_list_t failed;
	opal_list_item_t *item;
	ssize_t err = 0;
	int sent = 0;

	OBJ_CONSTRUCT(&failed, opal_list_t);
	OPAL_THREAD_LOCK(&m->lock);
	while (!opal_list_is_empty(&m->pending)) {
		mca_btl_gamma_frag_t *frag;
		ssize_t rc;

		frag = (mca_btl_gamma_frag_t *)opal_list_get_first(&m->pending);
		rc = gamma_fi_send(frag);
		if (rc == -FI_EAGAIN)
			break;
		opal_list_remove_first(&m->pending);
		if (rc) {
			err = rc;
			opal_list_append(&failed, &frag->base.super.super);
			continue;
		}
		sent++;
	}
	OPAL_THREAD_UNLOCK(&m->lock);
	while ((item = opal_list_remove_first(&failed))) {
		mca_btl_gamma_frag_t *frag = (mca_btl_gamma_frag_t *)item;

		send_failed(frag, err);
		gamma_send_complete(frag, OPAL_ERR_UNREACH);
	}
	OBJ_DESTRUCT(&failed);
	return sent;
}
