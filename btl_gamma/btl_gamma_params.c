/* SPDX-License-Identifier: BSD-2-Clause */
/* MCA parameters: btl_gamma_*, all listed by `ompi_info --param btl gamma --level 9`. */
#include "btl_gamma.h"

#include <stdio.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/util/output.h"

static const mca_base_var_enum_value_t gamma_priority_values[] = {
    {GAMMA_PRIO_LOW, "low"},
    {GAMMA_PRIO_HIGH, "high"},
    {0, NULL},
};

static const mca_base_var_enum_value_t gamma_idle_block_values[] = {
    {GAMMA_IDLE_BLOCK_NO, "no"},
    {GAMMA_IDLE_BLOCK_YES, "yes"},
    {GAMMA_IDLE_BLOCK_AUTO, "auto"},
    {0, NULL},
};

static void register_string(const char *name, const char *help, char **storage)
{
	mca_base_component_var_register(&mca_btl_gamma_component.super.btl_version, name, help,
	                                MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_1,
	                                MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static void register_uint(const char *name, const char *help, int level, uint32_t *storage)
{
	mca_base_component_var_register(&mca_btl_gamma_component.super.btl_version, name, help,
	                                MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, 0, 0, level,
	                                MCA_BASE_VAR_SCOPE_READONLY, storage);
}

/* An int MCA parameter taking the names in values (btl_gamma_NAME). */
static int register_enum(const char *name, const mca_base_var_enum_value_t *values,
                         const char *help, int level, int *storage)
{
	char enum_name[64];
	mca_base_var_enum_t *e = NULL;
	int rc;

	snprintf(enum_name, sizeof(enum_name), "btl_gamma_%s", name);
	rc = mca_base_var_enum_create(enum_name, values, &e);
	if (OPAL_SUCCESS != rc)
		return rc;
	mca_base_component_var_register(&mca_btl_gamma_component.super.btl_version, name, help,
	                                MCA_BASE_VAR_TYPE_INT, e, 0, 0, level,
	                                MCA_BASE_VAR_SCOPE_READONLY, storage);
	OBJ_RELEASE(e);
	return OPAL_SUCCESS;
}

int gamma_params_register(void)
{
	mca_base_component_t *c = &mca_btl_gamma_component.super.btl_version;
	struct gamma_params *p = &mca_btl_gamma_component.params;
	mca_btl_base_module_t *t = &mca_btl_gamma_module_template.super;
	int rc;

	p->if_include = NULL;
	register_string("if_include",
	                "Comma-separated list of Ethernet interfaces gamma may use, in order "
	                "(mutually exclusive with btl_gamma_if_exclude). Default: every up, "
	                "non-loopback Ethernet interface the gamma provider offers, nearest NIC "
	                "first. With several interfaces and several ranks per host, local rank i "
	                "uses interface i mod n",
	                &p->if_include);
	p->if_exclude = NULL;
	register_string("if_exclude",
	                "Comma-separated list of Ethernet interfaces gamma must not use "
	                "(mutually exclusive with btl_gamma_if_include)",
	                &p->if_exclude);

	p->priority = GAMMA_PRIO_HIGH;
	rc = register_enum("priority", gamma_priority_values,
	                   "Traffic class of this job on the gamma double queue: high (parallel "
	                   "job, FI_TC_LOW_LATENCY, served first) or low (background job, "
	                   "FI_TC_BULK_DATA)",
	                   OPAL_INFO_LVL_1, &p->priority);
	if (OPAL_SUCCESS != rc)
		return rc;
	/* The provider stripes only rendezvous messages (FI_GAMMA_RNDV_THRESHOLD,
	 * 256 KiB) over the rails, in 256 KiB chunks: a multi-rail module's
	 * fragments must be larger for ob1's bulk data to use them all. */
	p->rails_max_send = 1048576;
	register_uint("rails_max_send_size",
	              "Largest fragment of a module over several rails (btl_gamma_if_include "
	              "a+b), in bytes, when larger than btl_gamma_max_send_size: fragments this "
	              "large are striped over the rails by the gamma provider (it stripes "
	              "messages above FI_GAMMA_RNDV_THRESHOLD). Costs 64 receive buffers of "
	              "this size per module",
	              OPAL_INFO_LVL_5, &p->rails_max_send);
	p->idle_block = GAMMA_IDLE_BLOCK_AUTO;
	rc = register_enum("idle_block", gamma_idle_block_values,
	                   "Whether a rank that found nothing to do sleeps in the gamma provider "
	                   "until a frame arrives (at most 10 ms at a time) instead of spinning: "
	                   "auto (when mpi_yield_when_idle is set and gamma carries all the rank's "
	                   "traffic: one interface, no other rank on the node), yes (also with "
	                   "shared-memory peers, whose messages then wait for the next wake-up), "
	                   "no (always spin)",
	                   OPAL_INFO_LVL_4, &p->idle_block);
	if (OPAL_SUCCESS != rc)
		return rc;

	p->verbose = 0;
	mca_base_component_var_register(c, "verbose",
	                                "Verbosity of btl gamma diagnostics (0: errors only, "
	                                "10: set-up decisions, 100: every fragment)",
	                                MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
	                                MCA_BASE_VAR_SCOPE_LOCAL, &p->verbose);

	/* Defaults the base registration below exposes as eager_limit,
	 * max_send_size, exclusivity, rndv_eager_limit and flags. */
	t->btl_exclusivity = MCA_BTL_EXCLUSIVITY_DEFAULT;
	/* Eager up to one receive buffer: ob1's rendezvous over a send-only
	 * BTL costs a round trip, which on gamma is worth ~4 frames of 9000 B. */
	t->btl_eager_limit = GAMMA_EAGER_DEFAULT;
	t->btl_rndv_eager_limit = GAMMA_EAGER_DEFAULT;
	t->btl_max_send_size = GAMMA_EAGER_DEFAULT;
	/* GET: a large contiguous message crosses once, straight into the
	 * receiver's buffer (btl_gamma_get.c). */
	t->btl_flags = MCA_BTL_FLAGS_SEND | MCA_BTL_FLAGS_SEND_INPLACE | MCA_BTL_FLAGS_GET;
	/* The base registers latency and bandwidth only for BTLs with put. */
	t->btl_latency = 10;
	t->btl_bandwidth = 1000;
	register_uint("latency",
	              "Approximate latency of the gamma network (relative units, "
	              "lower is preferred by the PML)",
	              OPAL_INFO_LVL_5, &t->btl_latency);
	register_uint("bandwidth",
	              "Approximate bandwidth of one gamma interface in Mbps, used "
	              "by the PML to split large messages across BTLs",
	              OPAL_INFO_LVL_5, &t->btl_bandwidth);

	return mca_btl_base_param_register(c, t);
}
