/* SPDX-License-Identifier: BSD-2-Clause */
/* btl_gamma: Open MPI BTL over the libfabric provider "gamma". */
#ifndef BTL_GAMMA_H
#define BTL_GAMMA_H

#include "opal_config.h"

#include "opal/mca/btl/btl.h"
#include "opal/mca/btl/base/base.h"

BEGIN_C_DECLS

typedef struct mca_btl_gamma_component_t {
	mca_btl_base_component_3_0_0_t super;
} mca_btl_gamma_component_t;

OPAL_MODULE_DECLSPEC extern mca_btl_gamma_component_t mca_btl_gamma_component;

END_C_DECLS

#endif /* BTL_GAMMA_H */
