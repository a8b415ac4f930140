/* Control channel: a TCP connection that carries the plan, the libfabric
 * addresses, barriers and verdicts. Never any measured data. */
#ifndef PP_CTRL_H
#define PP_CTRL_H

#include <stdint.h>
#include "pp.h"

enum pp_msg {
	PP_MSG_HELLO = 0x50501, /* client -> server: struct pp_plan */
	PP_MSG_ADDR,            /* both ways: libfabric endpoint names */
	PP_MSG_SYNC,            /* both ways: barrier between phases */
	PP_MSG_VERDICT,         /* server -> client: struct pp_verdict */
	PP_MSG_ERROR,           /* either way: text, then the sender exits */
};

struct pp_verdict {
	uint64_t messages; /* messages the server received and verified */
	uint64_t bytes;
};

int pp_ctrl_accept(const char *port, double deadline);
int pp_ctrl_connect(const char *host, const char *port, double deadline);
int pp_ctrl_send(int fd, uint32_t type, const void *buf, uint32_t len);
/* Receives one message of the given type into buf (at most *len bytes; *len
 * is updated). Reports and fails on PP_MSG_ERROR, EOF, or the deadline. */
int pp_ctrl_recv(int fd, uint32_t type, void *buf, uint32_t *len, double deadline);
/* Cheap check during measurements: fails when the peer reported an error or
 * hung up; leaves any other pending message in the socket. */
int pp_ctrl_peer_alive(int fd);
/* Tells the peer why we stop (best effort). */
void pp_ctrl_fail(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int pp_ctrl_sync(int fd, double timeout_s);

int pp_plan_send(int fd, const struct pp_plan *p);
int pp_plan_recv(int fd, struct pp_plan *p, double deadline);

#endif
