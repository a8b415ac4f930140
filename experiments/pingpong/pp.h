/* gamma-pingpong: shared types of the libfabric latency/bandwidth tool. */
#ifndef PP_H
#define PP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_tagged.h>

#define PP_MAX_SIZES    64
#define PP_DEFAULT_PORT 47595
#define PP_PROV_LEN     32

enum pp_test { PP_TEST_LAT = 1, PP_TEST_BW = 2, PP_TEST_RATE = 4, PP_TEST_BG = 8 };

/*
 * Everything the server must know to mirror the client's schedule. Sent over
 * the control channel in network byte order (see ctrl.c), so keep it flat.
 */
struct pp_plan {
	uint32_t tests; /* enum pp_test bits */
	uint32_t iters, warmup, reps;
	uint32_t bw_iters, window, rate_iters;
	uint32_t bg_size, bg_window;
	uint32_t tclass_high; /* 1: FI_TC_LOW_LATENCY, 0: FI_TC_BULK_DATA */
	uint32_t corrupt;     /* --selftest-corrupt: server flips one received byte */
	uint32_t n_sizes, n_bw_sizes;
	uint32_t sizes[PP_MAX_SIZES];
	uint32_t bw_sizes[PP_MAX_SIZES];
	char provider[PP_PROV_LEN];
};

struct pp_opts {
	bool server;
	const char *peer; /* --client HOST */
	const char *port;
	const char *provider;
	bool provider_given;
	const char *iface;
	const char *auth_key; /* --auth-key: not sent to the server */
	double timeout_s;
	double accept_timeout_s;
	bool wait;
	bool csv;
	bool verbose;
	struct pp_plan plan;
};

int pp_parse_opts(int argc, char **argv, struct pp_opts *o);

/* Monotonic clock in seconds. */
double pp_now(void);

/* Prints "gamma-pingpong: <msg>" to stderr and keeps it for the peer. */
void pp_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern char pp_last_error[512];
/* Set when this side or the peer reported PP_CORRUPTION: exit status 3. */
extern bool pp_corruption_seen;
#define PP_CORRUPTION "DATA CORRUPTION"

#endif
