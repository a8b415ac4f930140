/* SPDX-License-Identifier: BSD-2-Clause */
/* Module: the function table, add/del procs, finalize, the error callback,
 * and publishing our addresses through the modex. */
#include "btl_gamma.h"

#include <stdlib.h>
#include <string.h>

#include "opal/class/opal_bitmap.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

static int gamma_add_procs(mca_btl_base_module_t *btl, size_t nprocs, struct opal_proc_t **procs,
                           mca_btl_base_endpoint_t **peers, opal_bitmap_t *reachable);
static int gamma_del_procs(mca_btl_base_module_t *btl, size_t nprocs, struct opal_proc_t **procs,
                           mca_btl_base_endpoint_t **peers);
static int gamma_finalize(mca_btl_base_module_t *btl);
static int gamma_register_error(mca_btl_base_module_t *btl,
                                mca_btl_base_module_error_cb_fn_t cbfunc);

mca_btl_gamma_module_t mca_btl_gamma_module_template = {
    .super =
        {
            .btl_component = &mca_btl_gamma_component.super,
            .btl_add_procs = gamma_add_procs,
            .btl_del_procs = gamma_del_procs,
            .btl_finalize = gamma_finalize,
            .btl_alloc = gamma_alloc,
            .btl_free = gamma_free,
            .btl_prepare_src = gamma_prepare_src,
            .btl_send = gamma_send,
            .btl_sendi = gamma_sendi,
            .btl_get = gamma_get,
            .btl_put = gamma_put,
            .btl_register_mem = gamma_register_mem,
            .btl_deregister_mem = gamma_deregister_mem,
            .btl_registration_handle_size = sizeof(struct mca_btl_base_registration_handle_t),
            .btl_register_error = gamma_register_error,
        },
};

int gamma_modex_send(void)
{
	const int n = mca_btl_gamma_component.num_modules;
	struct gamma_modex_addr *a = calloc(n, sizeof(*a));
	int rc;

	if (!a)
		return OPAL_ERR_OUT_OF_RESOURCE;
	for (int i = 0; i < n; i++) {
		const mca_btl_gamma_module_t *m = mca_btl_gamma_component.modules[i];
		snprintf(a[i].ifname, sizeof(a[i].ifname), "%s", m->ifname);
		a[i].addrlen = (uint32_t)m->addrlen;
		memcpy(a[i].addr, m->addr, m->addrlen);
	}
	OPAL_MODEX_SEND(rc, OPAL_PMIX_GLOBAL, &mca_btl_gamma_component.super.btl_version, a,
	                n * sizeof(*a));
	free(a);
	return rc ? rc : gamma_secret_publish();
}

static int gamma_add_procs(mca_btl_base_module_t *btl, size_t nprocs, struct opal_proc_t **procs,
                           mca_btl_base_endpoint_t **peers, opal_bitmap_t *reachable)
{
	mca_btl_gamma_module_t *m = (mca_btl_gamma_module_t *)btl;
	opal_proc_t *self = opal_proc_local_get();

	if (gamma_secret_apply() != OPAL_SUCCESS)
		return OPAL_ERROR;
	for (size_t i = 0; i < nprocs; i++) {
		mca_btl_gamma_endpoint_t *ep;

		/* btl self delivers to ourselves. */
		if (procs[i] == self)
			continue;
		OPAL_THREAD_LOCK(&m->lock);
		ep = gamma_endpoint_find(m, procs[i]);
		OPAL_THREAD_UNLOCK(&m->lock);
		if (!ep)
			ep = gamma_endpoint_create(m, procs[i]);
		if (!ep)
			continue;
		peers[i] = ep;
		if (reachable)
			opal_bitmap_set_bit(reachable, (int)i);
	}
	return OPAL_SUCCESS;
}

static int gamma_del_procs(mca_btl_base_module_t *btl, size_t nprocs, struct opal_proc_t **procs,
                           mca_btl_base_endpoint_t **peers)
{
	mca_btl_gamma_module_t *m = (mca_btl_gamma_module_t *)btl;

	for (size_t i = 0; i < nprocs; i++) {
		mca_btl_gamma_endpoint_t *ep = peers[i];
		if (!ep || ep->module != m)
			continue;
		/* Unlocked: unwatching progresses, which may take m->lock. */
		gamma_endpoint_unwatch(ep);
		OPAL_THREAD_LOCK(&m->lock);
		opal_list_remove_item(&m->endpoints, &ep->super);
		OPAL_THREAD_UNLOCK(&m->lock);
		OBJ_RELEASE(ep);
	}
	return OPAL_SUCCESS;
}

static int gamma_register_error(mca_btl_base_module_t *btl,
                                mca_btl_base_module_error_cb_fn_t cbfunc)
{
	((mca_btl_gamma_module_t *)btl)->error_cb = cbfunc;
	return OPAL_SUCCESS;
}

static int gamma_finalize(mca_btl_base_module_t *btl)
{
	mca_btl_gamma_module_t *m = (mca_btl_gamma_module_t *)btl;
	mca_btl_gamma_component_t *c = &mca_btl_gamma_component;
	opal_list_item_t *item;

	m->enabled = false;
	gamma_fi_flush(m);
	gamma_get_report(m);
	for (int i = 0; i < c->num_modules; i++)
		if (c->modules[i] == m)
			c->modules[i] = NULL;
	while ((item = opal_list_remove_first(&m->endpoints)))
		OBJ_RELEASE(item);
	/* Sends still queued after the flush die with the module. */
	while ((item = opal_list_remove_first(&m->pending)))
		gamma_frag_return_if_owned((mca_btl_gamma_frag_t *)item);
	gamma_fi_close(m);
	gamma_get_fini(m);
	gamma_frag_pools_fini(m);
	OBJ_DESTRUCT(&m->pending);
	OBJ_DESTRUCT(&m->endpoints);
	OBJ_DESTRUCT(&m->lock);
	OBJ_DESTRUCT(&m->progress_lock);
	free(m);
	return OPAL_SUCCESS;
}
