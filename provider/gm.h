/* SPDX-License-Identifier: BSD-2-Clause */
/* Provider-wide declarations: the provider object, its parameters, logging. */
#ifndef GM_H
#define GM_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#define GM_PROV_NAME "gamma"
#define GM_FABRIC_NAME "gamma"
#define GM_PROV_VERSION FI_VERSION(0, 1)
#define GM_FI_VERSION FI_VERSION(1, 17)

extern struct fi_provider gm_prov;

/* FI_GAMMA_* parameters, read once at fi_prov_ini. */
struct gm_params {
	char *iface;          /* comma list of interfaces, NULL: every usable one */
	int ethertype;
	bool dq;
	int low_share;
	int default_class;    /* enum gm_class for FI_TC_UNSPEC */
	int window;
	int rto_us;
	int peer_timeout_ms;
	int rx_ring_kb;
	size_t rndv_threshold;
	bool stats;
};
extern struct gm_params gm_params;

#define GM_WARN(subsys, ...) FI_WARN(&gm_prov, subsys, __VA_ARGS__)
#define GM_INFO(subsys, ...) FI_INFO(&gm_prov, subsys, __VA_ARGS__)
#define GM_DBG(subsys, ...) FI_DBG(&gm_prov, subsys, __VA_ARGS__)

#endif /* GM_H */
