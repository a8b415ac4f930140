/* SPDX-License-Identifier: BSD-2-Clause */
/* Send descriptors (two pools: eager-sized and max_send-sized), and the
 * block behind the pre-posted receive buffers. */
#include "btl_gamma.h"

#include <stdlib.h>
#include <string.h>

#include "opal/runtime/opal.h"

static void frag_construct(mca_btl_gamma_frag_t *frag)
{
	frag->base.des_segments = frag->segment;
	frag->base.des_segment_count = 1;
	frag->endpoint = NULL;
	frag->callback_owed = false;
}

OBJ_CLASS_INSTANCE(mca_btl_gamma_frag_t, mca_btl_base_descriptor_t, frag_construct, NULL);

/* Wire the descriptor to the payload buffer the free list gave it. */
static int frag_init(opal_free_list_item_t *item, void *arg)
{
	mca_btl_gamma_frag_t *frag = (mca_btl_gamma_frag_t *)item;
	struct gamma_pool_ctx *ctx = arg;

	frag->module = ctx->module;
	frag->pool = ctx->pool;
	frag->capacity = ctx->capacity;
	frag->hdr = item->ptr;
	frag->segment[0].seg_addr.pval = (uint8_t *)item->ptr + sizeof(struct gamma_hdr);
	frag->segment[0].seg_len = 0;
	return OPAL_SUCCESS;
}

static int pool_init(mca_btl_gamma_module_t *m, opal_free_list_t *fl, size_t capacity,
                     struct gamma_pool_ctx *ctx)
{
	ctx->module = m;
	ctx->pool = fl;
	ctx->capacity = capacity;
	OBJ_CONSTRUCT(fl, opal_free_list_t);
	return opal_free_list_init(fl, sizeof(mca_btl_gamma_frag_t), opal_cache_line_size,
	                           OBJ_CLASS(mca_btl_gamma_frag_t),
	                           sizeof(struct gamma_hdr) + capacity, opal_cache_line_size, 16,
	                           -1, 16, NULL, 0, NULL, frag_init, ctx);
}

int gamma_frag_pools_init(mca_btl_gamma_module_t *m)
{
	/* 64-byte aligned buffers keep the PML header after our 8-byte header
	 * 8-byte aligned whatever max_send_size is. */
	const size_t rx_len =
	    (sizeof(struct gamma_hdr) + m->super.btl_max_send_size + 63) & ~(size_t)63;
	struct gamma_pool_ctx *ctx = m->pool_ctx;

	size_t small = GAMMA_SMALL_FRAG < m->super.btl_max_send_size ? GAMMA_SMALL_FRAG
	                                                             : m->super.btl_max_send_size;

	if (pool_init(m, &m->small_frags, small, &ctx[0]) ||
	    pool_init(m, &m->max_frags, m->super.btl_max_send_size, &ctx[1]))
		return OPAL_ERR_OUT_OF_RESOURCE;

	if (posix_memalign((void **)&m->rx_block, 64, rx_len * GAMMA_RX_POSTED))
		return OPAL_ERR_OUT_OF_RESOURCE;
	/* Written once now, not by the first GAMMA_RX_POSTED messages: on a VM
	 * that hands free memory back to its host, the first write to a page
	 * faults in the host (~7 us a page here; a 34 KB message filled 9 fresh
	 * pages), as the provider's receive ring does (gm_link.c). */
	memset(m->rx_block, 0, rx_len * GAMMA_RX_POSTED);
	for (int i = 0; i < GAMMA_RX_POSTED; i++) {
		m->rx[i].buf = m->rx_block + (size_t)i * rx_len;
		m->rx[i].posted = false;
		m->rx[i].busy = false;
	}
	return OPAL_SUCCESS;
}

void gamma_frag_pools_fini(mca_btl_gamma_module_t *m)
{
	OBJ_DESTRUCT(&m->small_frags);
	OBJ_DESTRUCT(&m->max_frags);
	free(m->rx_block);
	m->rx_block = NULL;
}

mca_btl_gamma_frag_t *gamma_frag_get(mca_btl_gamma_module_t *m, size_t size)
{
	opal_free_list_t *fl;
	mca_btl_gamma_frag_t *frag;

	if (size <= m->pool_ctx[0].capacity)
		fl = &m->small_frags;
	else if (size <= m->super.btl_max_send_size)
		fl = &m->max_frags;
	else
		return NULL;
	frag = (mca_btl_gamma_frag_t *)opal_free_list_get(fl);
	if (!frag)
		return NULL;
	frag->segment[0].seg_len = size;
	frag->segment[1].seg_len = 0;
	frag->base.des_segment_count = 1;
	frag->base.des_flags = 0;
	frag->base.des_cbfunc = NULL;
	frag->base.des_cbdata = NULL;
	frag->base.des_context = NULL;
	frag->base.order = MCA_BTL_NO_ORDER;
	frag->endpoint = NULL;
	frag->callback_owed = false;
	return frag;
}

void gamma_frag_return(mca_btl_gamma_frag_t *frag)
{
	opal_free_list_return(frag->pool, &frag->base.super);
}

void gamma_frag_return_if_owned(mca_btl_gamma_frag_t *frag)
{
	if (frag->base.des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP)
		gamma_frag_return(frag);
}
