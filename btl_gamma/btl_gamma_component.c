/* SPDX-License-Identifier: BSD-2-Clause */
/* Component life cycle: registration, open/close, init (one module per usable
 * interface), and progress. */
#include "btl_gamma.h"

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "opal/util/output.h"

static int gamma_component_open(void);
static int gamma_component_close(void);
static mca_btl_base_module_t **gamma_component_init(int *num_btls, bool progress_threads,
                                                    bool mpi_threads);
static int gamma_component_progress(void);

mca_btl_gamma_component_t mca_btl_gamma_component = {
    .super =
        {
            .btl_version =
                {
                    MCA_BTL_DEFAULT_VERSION("gamma"),
                    .mca_open_component = gamma_component_open,
                    .mca_close_component = gamma_component_close,
                    .mca_register_component_params = gamma_params_register,
                },
            .btl_data =
                {
                    .param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT,
                },
            .btl_init = gamma_component_init,
            .btl_progress = gamma_component_progress,
        },
    .output = -1,
};

static int gamma_component_open(void)
{
	mca_btl_gamma_component.num_modules = 0;
	gamma_help_init();
	mca_btl_gamma_component.output = opal_output_open(NULL);
	opal_output_set_verbosity(mca_btl_gamma_component.output,
	                          mca_btl_gamma_component.params.verbose);
	return OPAL_SUCCESS;
}

static int gamma_component_close(void)
{
	if (mca_btl_gamma_component.output >= 0) {
		opal_output_close(mca_btl_gamma_component.output);
		mca_btl_gamma_component.output = -1;
	}
	return OPAL_SUCCESS;
}

static mca_btl_gamma_module_t *module_create(const char *ifname, int *err)
{
	mca_btl_gamma_module_t *m;
	struct fi_info *info = NULL;

	*err = gamma_fi_getinfo(ifname, &info);
	if (*err)
		return NULL;
	m = calloc(1, sizeof(*m));
	if (!m) {
		fi_freeinfo(info);
		return NULL;
	}
	*m = mca_btl_gamma_module_template;
	/* ob1 needs its largest header (rendezvous) to fit an eager fragment. */
	if (m->super.btl_eager_limit < GAMMA_MIN_EAGER) {
		gamma_show_help("eager limit too small", m->super.btl_eager_limit, GAMMA_MIN_EAGER,
		                GAMMA_MIN_EAGER);
		m->super.btl_eager_limit = GAMMA_MIN_EAGER;
	}
	if (m->super.btl_max_send_size < m->super.btl_eager_limit)
		m->super.btl_max_send_size = m->super.btl_eager_limit;
	if (m->super.btl_rndv_eager_limit > m->super.btl_eager_limit)
		m->super.btl_rndv_eager_limit = m->super.btl_eager_limit;
	snprintf(m->ifname, sizeof(m->ifname), "%s", info->domain_attr->name);
	/* Several rails: fragments large enough for the provider to stripe. */
	if (strchr(m->ifname, '+') &&
	    m->super.btl_max_send_size < mca_btl_gamma_component.params.rails_max_send)
		m->super.btl_max_send_size = mca_btl_gamma_component.params.rails_max_send;
	OBJ_CONSTRUCT(&m->pending, opal_list_t);
	OBJ_CONSTRUCT(&m->endpoints, opal_list_t);
	OBJ_CONSTRUCT(&m->lock, opal_mutex_t);
	OBJ_CONSTRUCT(&m->progress_lock, opal_mutex_t);
	*err = gamma_fi_open(m, info);
	if (*err)
		goto fail;
	if (gamma_frag_pools_init(m))
		goto fail_fi;
	if (gamma_get_init(m))
		goto fail_pools;
	for (int i = 0; i < GAMMA_RX_POSTED; i++) {
		if (gamma_fi_post_recv(m, &m->rx[i]))
			goto fail_pools;
	}
	m->enabled = true;
	GAMMA_VERBOSE(
	    10,
	    "btl gamma: module on %s ready (provider %s, tclass %s, threading %s, "
	    "eager %zu B, max send %zu B, inject %zu B)",
	    m->ifname, info->fabric_attr->prov_name,
	    info->tx_attr->tclass == FI_TC_LOW_LATENCY ? "FI_TC_LOW_LATENCY" : "FI_TC_BULK_DATA",
	    info->domain_attr->threading == FI_THREAD_SAFE ? "FI_THREAD_SAFE" : "FI_THREAD_DOMAIN",
	    m->super.btl_eager_limit, m->super.btl_max_send_size, m->inject_size);
	return m;

fail_pools:
	gamma_get_fini(m);
	gamma_frag_pools_fini(m);
fail_fi:
	gamma_fi_close(m);
fail:
	OBJ_DESTRUCT(&m->pending);
	OBJ_DESTRUCT(&m->endpoints);
	OBJ_DESTRUCT(&m->lock);
	OBJ_DESTRUCT(&m->progress_lock);
	free(m);
	return NULL;
}

static mca_btl_base_module_t **gamma_component_init(int *num_btls, bool progress_threads,
                                                    bool mpi_threads)
{
	mca_btl_gamma_component_t *c = &mca_btl_gamma_component;
	mca_btl_base_module_t **btls;
	char **names = NULL;
	int count = 0;

	*num_btls = 0;
	c->num_modules = 0;
	if (c->params.if_include && c->params.if_exclude) {
		gamma_show_help("include and exclude");
		return NULL;
	}
	if (gamma_iface_select(&names, &count) || count == 0)
		return NULL;

	for (int i = 0; i < count && c->num_modules < GAMMA_MAX_MODULES; i++) {
		int err = 0;
		mca_btl_gamma_module_t *m = module_create(names[i], &err);

		if (m)
			c->modules[c->num_modules++] = m;
		/* No permission on one interface means none on the others: one line. */
		if (err == -FI_EPERM || err == -FI_EACCES)
			break;
	}
	gamma_names_free(names, count);
	if (c->num_modules == 0)
		return NULL;

	btls = malloc(c->num_modules * sizeof(*btls));
	if (!btls || gamma_modex_send()) {
		free(btls);
		for (int i = 0; i < c->num_modules; i++)
			c->modules[i]->super.btl_finalize(&c->modules[i]->super);
		c->num_modules = 0;
		return NULL;
	}
	for (int i = 0; i < c->num_modules; i++)
		btls[i] = &c->modules[i]->super;
	*num_btls = c->num_modules;
	return btls;
}

static int gamma_component_progress(void)
{
	int events = 0;

	for (int i = 0; i < mca_btl_gamma_component.num_modules; i++) {
		mca_btl_gamma_module_t *m = mca_btl_gamma_component.modules[i];
		if (m && m->enabled)
			events += gamma_fi_progress(m);
	}
	return gamma_idle_progress(events);
}
