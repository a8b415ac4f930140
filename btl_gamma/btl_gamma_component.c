/* SPDX-License-Identifier: BSD-2-Clause */
/* Component life cycle: registration, open/close, init. */
#include "btl_gamma.h"

static int gamma_component_register(void);
static int gamma_component_open(void);
static int gamma_component_close(void);
static mca_btl_base_module_t **gamma_component_init(int *num_btls, bool progress_threads,
						    bool mpi_threads);

mca_btl_gamma_component_t mca_btl_gamma_component = {
	.super = {
		.btl_version = {
			MCA_BTL_DEFAULT_VERSION("gamma"),
			.mca_open_component = gamma_component_open,
			.mca_close_component = gamma_component_close,
			.mca_register_component_params = gamma_component_register,
		},
		.btl_data = {
			.param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT,
		},
		.btl_init = gamma_component_init,
		.btl_progress = NULL,
	},
};

static char *gamma_if_include;

static int gamma_component_register(void)
{
	mca_base_component_t *c = &mca_btl_gamma_component.super.btl_version;

	gamma_if_include = NULL;
	mca_base_component_var_register(c, "if_include",
					"Comma-separated list of Ethernet interfaces gamma may use",
					MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_1,
					MCA_BASE_VAR_SCOPE_READONLY, &gamma_if_include);
	return OPAL_SUCCESS;
}

static int gamma_component_open(void)
{
	return OPAL_SUCCESS;
}

static int gamma_component_close(void)
{
	return OPAL_SUCCESS;
}

static mca_btl_base_module_t **gamma_component_init(int *num_btls, bool progress_threads,
						    bool mpi_threads)
{
	*num_btls = 0;
	return NULL;
}
