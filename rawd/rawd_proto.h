/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The conversation between a client (the gamma provider) and gamma-rawd,
 * over a SOCK_SEQPACKET socket that is the helper's standard input.  One
 * request, one reply, then the helper exits.  Text, so that a failure can
 * be read with strace and the error can go straight into a log line.
 *
 *   request:  "gamma-rawd/1 open IFNAME 0xETHERTYPE"
 *   reply:    "ok"  with SCM_RIGHTS: receive socket, high-class transmit
 *             socket, low-class transmit socket (in that order)
 *   or:       "error: TEXT"  (no descriptors; TEXT says what to fix)
 *
 * This header is shared by gamma-rawd (rawd/) and provider/gm_rawd.c.
 */
#ifndef RAWD_PROTO_H
#define RAWD_PROTO_H

#define RAWD_PROTO_TAG "gamma-rawd/1"
#define RAWD_MSG_MAX   512
#define RAWD_NFDS      3

enum rawd_fd { RAWD_FD_RX, RAWD_FD_TX_HIGH, RAWD_FD_TX_LOW };

#endif /* RAWD_PROTO_H */
