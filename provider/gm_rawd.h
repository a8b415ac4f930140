/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Client of gamma-rawd (rawd/): when this process may not open AF_PACKET
 * sockets, the setcap'd helper opens them on an interface its
 * configuration allows and passes them back over a socketpair.
 */
#ifndef GM_RAWD_H
#define GM_RAWD_H

#include <stddef.h>
#include <stdint.h>

#include "rawd_proto.h"

/*
 * Ask the helper at path (NULL or "": none, FI_GAMMA_RAWD=none) for the
 * receive and the two transmit sockets (order: enum rawd_fd).  0 on
 * success; otherwise -1 and err says why, in words fit for the user (the
 * helper's own message when it refused).
 */
int gm_rawd_open(const char *path, const char *ifname, uint16_t ethertype, int fds[RAWD_NFDS],
                 char *err, size_t errlen);

#endif /* GM_RAWD_H */
