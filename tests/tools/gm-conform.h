/* Shared by gm-conform.c and gm-conform-sock.c: one side of the pair, and how checks fail. */
#ifndef GM_CONFORM_H
#define GM_CONFORM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "gmf.h"

#define VERS    FI_VERSION(1, 17)
#define ADDRLEN 8 /* gamma's address: MAC + port */

struct side {
	const char *ifname;
	uint32_t addr_format; /* asked for in the hints: FI_FORMAT_UNSPEC is gamma's own */
	struct gmf g;         /* fabric, domain, AV, CQ, EQ (tools/lib/gmf.h) */
	struct fid_ep *ep;
	struct fid_cntr *cntr;
	uint8_t name[32]; /* fi_getname: ADDRLEN bytes, or a struct sockaddr_in */
	size_t namelen;
	fi_addr_t peer;
};

void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

#define CHK(call)                                                                                  \
	do {                                                                                       \
		long _r = (long)(call);                                                            \
		if (_r < 0)                                                                        \
			die("%s:%d %s = %ld (%s)", __FILE__, __LINE__, #call, _r,                  \
			    fi_strerror((int)-_r));                                                \
	} while (0)
#define WANT(cond, ...)                                                                            \
	do {                                                                                       \
		if (!(cond))                                                                       \
			die(__VA_ARGS__);                                                          \
	} while (0)

struct fi_info *base_hints(const char *ifname);
void side_open(struct side *s, uint64_t tx_op_flags, const char *service);
void side_close(struct side *s);
/* Poll until one completion or error (returns -err); bounded so that a lost one fails. */
int wait_cq(struct side *s, struct fi_cq_tagged_entry *e, fi_addr_t *src,
            struct fi_cq_err_entry *err);
void expect_ok(struct side *s, void *ctx, const char *what);

/* gm-conform-sock.c: FI_SOCKADDR_IN addresses */
void check_sockaddr(struct side *a, struct side *b, char **ips);

#endif
