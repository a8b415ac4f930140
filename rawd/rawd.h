/* SPDX-License-Identifier: BSD-2-Clause */
/* gamma-rawd internals: the configuration and the sockets it hands out. */
#ifndef RAWD_H
#define RAWD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rawd_proto.h"

#define RAWD_MAX_IFACES 64

struct rawd_conf {
	char path[256];
	char *ifaces[RAWD_MAX_IFACES]; /* names or fnmatch(3) patterns */
	unsigned nifaces;
	uint16_t ethertype;
	bool have_group;
	gid_t group; /* when set: only its members (and root) are served */
};

/*
 * Read the configuration.  Root must have written it and be the only one
 * who can change it (the file and every directory above it; no proc, sysfs
 * or FUSE), since it decides what a user without CAP_NET_RAW may open.
 * On failure, err holds a sentence for the client.
 */
int rawd_conf_load(const char *path, struct rawd_conf *c, char *err, size_t errlen);
void rawd_conf_free(struct rawd_conf *c);
bool rawd_conf_iface_allowed(const struct rawd_conf *c, const char *ifname);
/* Is the calling user (real uid and groups) allowed to use the helper? */
bool rawd_conf_user_allowed(const struct rawd_conf *c);

/*
 * Open the receive socket (locked filter: this interface, this EtherType,
 * frames to this host only) and the two transmit sockets (locked filter
 * that drops every received frame), all bound to ifname.
 */
int rawd_open_sockets(const char *ifname, uint16_t ethertype, int fds[RAWD_NFDS], char *err,
                      size_t errlen);
/*
 * The receive socket's filter (rawd_filter.c) into f (room for
 * GM_FILTER_MAX_LEN, provider/gm_filter.h); returns its length.
 */
struct sock_filter;
unsigned rawd_rx_filter(struct sock_filter *f, int ifindex, uint16_t ethertype,
                        const uint8_t mac[6]);

#endif /* RAWD_H */
