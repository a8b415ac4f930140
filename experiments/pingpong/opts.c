/* Command line of gamma-pingpong. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pp.h"

#define MAX_MSG (64u << 20)

static const char usage[] =
    "usage: gamma-pingpong --server [options]\n"
    "       gamma-pingpong --client SERVER [options]\n"
    "Latency, bandwidth and message rate over a libfabric FI_EP_RDM endpoint, every\n"
    "received byte verified. SERVER is reachable by TCP (control channel only).\n"
    "  --provider NAME     libfabric provider (default gamma; e.g. tcp)\n"
    "  --iface IFACE       interface (gamma: FI_GAMMA_IFACE; others: domain name;\n"
    "                      default for socket providers: the one holding the local\n"
    "                      address of the control connection)\n"
    "  --port PORT         control channel TCP port (default %d)\n"
    "  --tclass high|low   traffic class of the measuring endpoint (default high)\n"
    "  --auth-key STRING   the domain's auth_key (its bytes); gamma: 4 bytes is a job\n"
    "                      key (CRC), 16 to 64 a secret (a MAC on every frame).\n"
    "                      Local: give the server the same one\n"
    "  --tests LIST        lat,bw,rate,bg (default lat,bw,rate)\n"
    "  --sizes LIST        latency sizes: A:B powers of two or a,b,c (default 0:64K)\n"
    "  --bw-sizes LIST     bandwidth sizes (default 1K:4M)\n"
    "  --iters N           latency round trips per measurement, each timed; half\n"
    "                      their median is the measurement (default 1000)\n"
    "  --warmup N          untimed round trips first (default 100)\n"
    "  --reps K            measurements per point; the median is reported (default 5)\n"
    "  --bw-iters N        windows per bandwidth measurement (default 20)\n"
    "  --rate-iters N      windows per message-rate measurement (default 100)\n"
    "  --window W          sends in flight before an ack (default 64)\n"
    "  --bulk-bg           also measure 8 B latency while a second endpoint (tclass\n"
    "                      low) streams bulk data (same as adding bg to --tests)\n"
    "  --bg-size N         background message size (default 64K)\n"
    "  --bg-window W       background sends in flight (default 16)\n"
    "  --timeout SEC       deadline of every wait (default 10)\n"
    "  --accept-timeout SEC  how long the server waits for a client (default 120)\n"
    "  --wait              block in fi_cq_sread instead of busy polling fi_cq_read\n"
    "  --csv               machine-readable output: test,size,value,unit\n"
    "  --selftest-corrupt  the server flips one received byte: the run must fail\n"
    "  -v, --verbose       print every measurement\n"
    "Sizes take K and M suffixes (KiB, MiB). Client options are sent to the server;\n"
    "the server only needs --server, --port, --iface and optionally --provider\n"
    "and --auth-key.\n"
    "Exit status: 0 ok and verified, 1 error, 3 data corruption detected.\n";

static int bad(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "gamma-pingpong: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (try --help)\n");
	return -1;
}

static int parse_size(const char *s, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (end == s || errno || s[0] == '-')
		return -1;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end || v > MAX_MSG)
		return -1;
	*out = v;
	return 0;
}

static int parse_sizes(const char *arg, uint32_t *sizes, uint32_t *n)
{
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", arg);
	char *colon = strchr(buf, ':');
	*n = 0;
	if (colon) {
		uint32_t lo, hi;
		*colon = 0;
		if (parse_size(buf, &lo) || parse_size(colon + 1, &hi) || lo > hi)
			return bad("bad size range '%s' (want e.g. 0:64K, at most 64M)", arg);
		if (lo == 0)
			sizes[(*n)++] = 0, lo = 1;
		for (uint64_t s = lo; s <= hi; s *= 2) {
			if (*n == PP_MAX_SIZES)
				return bad("too many sizes in '%s'", arg);
			sizes[(*n)++] = s;
		}
		return 0;
	}
	for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
		if (*n == PP_MAX_SIZES)
			return bad("too many sizes in '%s'", arg);
		if (parse_size(tok, &sizes[*n]))
			return bad("bad size '%s' (want e.g. 8, 4K, 1M; at most 64M)", tok);
		(*n)++;
	}
	return *n ? 0 : bad("empty size list");
}

static int parse_u32(const char *name, const char *s, uint32_t min, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (end == s || *end || errno || s[0] == '-' || v < min || v > 100000000)
		return bad("%s: bad number '%s' (at least %u)", name, s, min);
	*out = v;
	return 0;
}

static int parse_secs(const char *name, const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !(v > 0 && v < 1e6))
		return bad("%s: bad number of seconds '%s'", name, s);
	*out = v;
	return 0;
}

static int parse_tests(const char *s, uint32_t *out)
{
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", s);
	*out = 0;
	for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
		if (!strcmp(tok, "lat"))
			*out |= PP_TEST_LAT;
		else if (!strcmp(tok, "bw"))
			*out |= PP_TEST_BW;
		else if (!strcmp(tok, "rate"))
			*out |= PP_TEST_RATE;
		else if (!strcmp(tok, "bg"))
			*out |= PP_TEST_BG;
		else
			return bad("unknown test '%s' (lat, bw, rate, bg)", tok);
	}
	return *out ? 0 : bad("empty --tests");
}

enum {
	O_SERVER = 256,
	O_CLIENT,
	O_PROVIDER,
	O_IFACE,
	O_PORT,
	O_TCLASS,
	O_AUTH_KEY,
	O_TESTS,
	O_SIZES,
	O_BW_SIZES,
	O_ITERS,
	O_WARMUP,
	O_REPS,
	O_BW_ITERS,
	O_RATE_ITERS,
	O_WINDOW,
	O_BULK_BG,
	O_BG_SIZE,
	O_BG_WINDOW,
	O_TIMEOUT,
	O_ACCEPT_TIMEOUT,
	O_WAIT,
	O_CSV,
	O_CORRUPT,
	O_HELP,
};

static const struct option longopts[] = {
    {"server", no_argument, 0, O_SERVER},
    {"client", required_argument, 0, O_CLIENT},
    {"provider", required_argument, 0, O_PROVIDER},
    {"iface", required_argument, 0, O_IFACE},
    {"port", required_argument, 0, O_PORT},
    {"tclass", required_argument, 0, O_TCLASS},
    {"auth-key", required_argument, 0, O_AUTH_KEY},
    {"tests", required_argument, 0, O_TESTS},
    {"sizes", required_argument, 0, O_SIZES},
    {"bw-sizes", required_argument, 0, O_BW_SIZES},
    {"iters", required_argument, 0, O_ITERS},
    {"warmup", required_argument, 0, O_WARMUP},
    {"reps", required_argument, 0, O_REPS},
    {"bw-iters", required_argument, 0, O_BW_ITERS},
    {"rate-iters", required_argument, 0, O_RATE_ITERS},
    {"window", required_argument, 0, O_WINDOW},
    {"bulk-bg", no_argument, 0, O_BULK_BG},
    {"bg-size", required_argument, 0, O_BG_SIZE},
    {"bg-window", required_argument, 0, O_BG_WINDOW},
    {"timeout", required_argument, 0, O_TIMEOUT},
    {"accept-timeout", required_argument, 0, O_ACCEPT_TIMEOUT},
    {"wait", no_argument, 0, O_WAIT},
    {"csv", no_argument, 0, O_CSV},
    {"selftest-corrupt", no_argument, 0, O_CORRUPT},
    {"verbose", no_argument, 0, 'v'},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

int pp_parse_opts(int argc, char **argv, struct pp_opts *o)
{
	static char port[16];
	struct pp_plan *p = &o->plan;
	bool bulk_bg = false;
	int c;

	memset(o, 0, sizeof(*o));
	snprintf(port, sizeof(port), "%d", PP_DEFAULT_PORT);
	o->port = port;
	o->provider = "gamma";
	o->timeout_s = 10;
	o->accept_timeout_s = 120;
	p->tests = PP_TEST_LAT | PP_TEST_BW | PP_TEST_RATE;
	p->iters = 1000;
	p->warmup = 100;
	p->reps = 5;
	p->bw_iters = 20;
	p->rate_iters = 100;
	p->window = 64;
	p->bg_size = 64 << 10;
	p->bg_window = 16;
	p->tclass_high = 1;
	parse_sizes("0:64K", p->sizes, &p->n_sizes);
	parse_sizes("1K:4M", p->bw_sizes, &p->n_bw_sizes);

	opterr = 0;
	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		int r = 0;
		switch (c) {
		case O_SERVER:
			o->server = true;
			break;
		case O_CLIENT:
			o->peer = optarg;
			break;
		case O_PROVIDER:
			o->provider = optarg;
			o->provider_given = true;
			if (strlen(optarg) >= PP_PROV_LEN || !*optarg)
				r = bad("bad provider name '%s'", optarg);
			break;
		case O_IFACE:
			o->iface = optarg;
			break;
		case O_PORT:
			o->port = optarg;
			break;
		case O_TCLASS:
			if (!strcmp(optarg, "high"))
				p->tclass_high = 1;
			else if (!strcmp(optarg, "low"))
				p->tclass_high = 0;
			else
				r = bad("--tclass wants high or low, not '%s'", optarg);
			break;
		case O_TESTS:
			r = parse_tests(optarg, &p->tests);
			break;
		case O_SIZES:
			r = parse_sizes(optarg, p->sizes, &p->n_sizes);
			break;
		case O_BW_SIZES:
			r = parse_sizes(optarg, p->bw_sizes, &p->n_bw_sizes);
			break;
		case O_ITERS:
			r = parse_u32("--iters", optarg, 1, &p->iters);
			break;
		case O_WARMUP:
			r = parse_u32("--warmup", optarg, 0, &p->warmup);
			break;
		case O_REPS:
			r = parse_u32("--reps", optarg, 1, &p->reps);
			break;
		case O_BW_ITERS:
			r = parse_u32("--bw-iters", optarg, 1, &p->bw_iters);
			break;
		case O_RATE_ITERS:
			r = parse_u32("--rate-iters", optarg, 1, &p->rate_iters);
			break;
		case O_WINDOW:
			r = parse_u32("--window", optarg, 1, &p->window);
			break;
		case O_BULK_BG:
			bulk_bg = true;
			break;
		case O_BG_SIZE:
			r = parse_size(optarg, &p->bg_size) ? bad("bad --bg-size '%s'", optarg) : 0;
			break;
		case O_BG_WINDOW:
			r = parse_u32("--bg-window", optarg, 1, &p->bg_window);
			break;
		case O_TIMEOUT:
			r = parse_secs("--timeout", optarg, &o->timeout_s);
			break;
		case O_ACCEPT_TIMEOUT:
			r = parse_secs("--accept-timeout", optarg, &o->accept_timeout_s);
			break;
		case O_WAIT:
			o->wait = true;
			break;
		case O_AUTH_KEY:
			o->auth_key = optarg;
			break;
		case O_CSV:
			o->csv = true;
			break;
		case O_CORRUPT:
			p->corrupt = 1;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			printf(usage, PP_DEFAULT_PORT);
			exit(0);
		default:
			return bad("unknown or incomplete option '%s'", argv[optind - 1]);
		}
		if (r)
			return -1;
	}
	if (optind < argc)
		return bad("unexpected argument '%s'", argv[optind]);
	if (o->server == !!o->peer)
		return bad("give exactly one of --server or --client SERVER");
	if (bulk_bg)
		p->tests |= PP_TEST_BG;
	if (p->window > 4096 || p->bg_window > 4096)
		return bad("--window and --bg-window are at most 4096");
	if (p->reps > 1000)
		return bad("--reps is at most 1000");
	snprintf(p->provider, PP_PROV_LEN, "%s", o->provider);
	return 0;
}

double pp_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

char pp_last_error[512];
bool pp_corruption_seen;

void pp_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(pp_last_error, sizeof(pp_last_error), fmt, ap);
	va_end(ap);
	fprintf(stderr, "gamma-pingpong: %s\n", pp_last_error);
	if (strstr(pp_last_error, PP_CORRUPTION))
		pp_corruption_seen = true;
}
