/* Command line of gamma-stream-node. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sn.h"

static const char usage[] =
    "usage: gamma-stream-node ROLE [options]\n"
    "One node's part of the double-queue stream experiment (experiments/dq/gamma-streams runs\n"
    "it on every node of a virtual cluster). Every message carries its send time\n"
    "(CLOCK_MONOTONIC, common to the namespaces of one machine) and a payload the\n"
    "receiver verifies byte by byte; receivers print one-way times.\n"
    "Roles:\n"
    "  gamma-send   send over provider gamma to the nodes in --peers\n"
    "  gamma-recv   receive over provider gamma from the nodes in --peers\n"
    "  tcp-send     send over TCP to --addr:--port\n"
    "  tcp-recv     receive one TCP connection on --port\n"
    "  now          print the monotonic clock (seconds), for --start\n"
    "Options:\n"
    "  --node I          this node's index (also the message source id)\n"
    "  --peers LIST      gamma: comma list of the other side's node indices\n"
    "  --dir DIR         gamma: directory where endpoints publish their addresses\n"
    "  --name NAME       gamma: stream name (address files DIR/NAME.I.addr)\n"
    "  --iface IF        gamma: interface (sets FI_GAMMA_IFACE)\n"
    "  --size N          message size in bytes, K/M suffixes (default 1K, min 32)\n"
    "  --tclass high|low gamma: FI_TC_LOW_LATENCY or FI_TC_BULK_DATA (default high)\n"
    "  --paced           gamma: one message at a time, each acknowledged (default);\n"
    "                    a sender with several peers serves them in turn\n"
    "  --gap US          paced: pause after each acknowledgement (default 0)\n"
    "  --stream W        gamma: send continuously, W sends in flight\n"
    "  --bulk-size N     gamma-send: a second, low-class endpoint of the same process\n"
    "                    (same domain) streams N-byte messages to the same peers,\n"
    "                    whose stream NAMEbulk a low-class gamma-recv --stream takes\n"
    "  --bulk-window W   sends of that bulk stream in flight (default 16)\n"
    "  --poll            busy-poll the completion queue (default: block)\n"
    "  --start T         start sending at monotonic time T (default: now)\n"
    "  --start-file F    wait for F, then start at the monotonic time it holds\n"
    "  --warm S          seconds after the start before the measurement window\n"
    "  --duration S      length of the measurement window; sending stops at its end\n"
    "  --count N         stop after N data messages (per peer) instead\n"
    "  --timeout S       give up S seconds after the expected end (default 30)\n"
    "  --addr IP --port P  tcp: receiver's address / port to listen on or connect to\n"
    "  --cc ALG          tcp-send: congestion control (default cubic)\n"
    "  --sndbuf B        tcp-send: SO_SNDBUF (default: the kernel's autotuning)\n"
    "Exit status: 0 every message verified, 1 error, 3 data corruption or loss.\n";

void sn_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "gamma-stream-node: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int bad(const char *what, const char *arg)
{
	sn_err("invalid %s '%s' (try --help)", what, arg);
	return -1;
}

static int parse_u64(const char *s, uint64_t *out, bool suffix)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || errno || s[0] == '-')
		return -1;
	if (suffix && (*end == 'K' || *end == 'k'))
		v <<= 10, end++;
	else if (suffix && (*end == 'M' || *end == 'm'))
		v <<= 20, end++;
	if (*end)
		return -1;
	*out = v;
	return 0;
}

static int parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return end == s || *end || errno || *out < 0 ? -1 : 0;
}

static int parse_peers(const char *s, struct sn_opts *o)
{
	char buf[512], *save = NULL, *tok;
	uint64_t v;

	snprintf(buf, sizeof(buf), "%s", s);
	o->n_peers = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (o->n_peers == SN_MAX_PEERS || parse_u64(tok, &v, false) || v > 65535)
			return -1;
		o->peers[o->n_peers++] = (int)v;
	}
	return o->n_peers ? 0 : -1;
}

int sn_parse_opts(int argc, char **argv, struct sn_opts *o)
{
	enum {
		O_NODE = 256,
		O_PEERS,
		O_DIR,
		O_NAME,
		O_IFACE,
		O_SIZE,
		O_TCLASS,
		O_PACED,
		O_STREAM,
		O_POLL,
		O_START,
		O_WARM,
		O_DURATION,
		O_COUNT,
		O_TIMEOUT,
		O_ADDR,
		O_PORT,
		O_CC,
		O_SNDBUF,
		O_GAP,
		O_BULK_SIZE,
		O_BULK_WINDOW,
		O_START_FILE,
		O_HELP
	};
	static const struct option lo[] = {{"node", 1, 0, O_NODE},
	                                   {"peers", 1, 0, O_PEERS},
	                                   {"dir", 1, 0, O_DIR},
	                                   {"name", 1, 0, O_NAME},
	                                   {"iface", 1, 0, O_IFACE},
	                                   {"size", 1, 0, O_SIZE},
	                                   {"tclass", 1, 0, O_TCLASS},
	                                   {"paced", 0, 0, O_PACED},
	                                   {"stream", 1, 0, O_STREAM},
	                                   {"poll", 0, 0, O_POLL},
	                                   {"start", 1, 0, O_START},
	                                   {"warm", 1, 0, O_WARM},
	                                   {"duration", 1, 0, O_DURATION},
	                                   {"count", 1, 0, O_COUNT},
	                                   {"timeout", 1, 0, O_TIMEOUT},
	                                   {"addr", 1, 0, O_ADDR},
	                                   {"port", 1, 0, O_PORT},
	                                   {"cc", 1, 0, O_CC},
	                                   {"sndbuf", 1, 0, O_SNDBUF},
	                                   {"help", 0, 0, O_HELP},
	                                   {"gap", 1, 0, O_GAP},
	                                   {"bulk-size", 1, 0, O_BULK_SIZE},
	                                   {"bulk-window", 1, 0, O_BULK_WINDOW},
	                                   {"start-file", 1, 0, O_START_FILE},
	                                   {0, 0, 0, 0}};
	static const char *roles[] = {"gamma-send", "gamma-recv", "tcp-send", "tcp-recv", "now"};
	uint64_t v;
	int c;

	*o = (struct sn_opts){.size = 1024,
	                      .high = true,
	                      .paced = true,
	                      .window = 16,
	                      .timeout = 30,
	                      .cc = "cubic",
	                      .bulk_window = 16,
	                      .node = -1,
	                      .name = "stream"};
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? -1 : 1;
	}
	for (c = 0; c < 5 && strcmp(argv[1], roles[c]); c++)
		;
	if (c == 5)
		return bad("role", argv[1]);
	o->role = (enum sn_role)c;
	o->start = sn_now();
	optind = 2;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case O_NODE:
			if (parse_u64(optarg, &v, false) || v > 65535)
				return bad("--node", optarg);
			o->node = (int)v;
			break;
		case O_PEERS:
			if (parse_peers(optarg, o))
				return bad("--peers (comma list of node indices)", optarg);
			break;
		case O_DIR:
			o->dir = optarg;
			break;
		case O_NAME:
			o->name = optarg;
			break;
		case O_IFACE:
			o->iface = optarg;
			break;
		case O_SIZE:
			if (parse_u64(optarg, &v, true) || v < SN_MIN_SIZE || v > SN_MAX_SIZE)
				return bad("--size (32 B .. 4 MiB)", optarg);
			o->size = (uint32_t)v;
			break;
		case O_TCLASS:
			if (strcmp(optarg, "high") && strcmp(optarg, "low"))
				return bad("--tclass (high or low)", optarg);
			o->high = !strcmp(optarg, "high");
			break;
		case O_PACED:
			o->paced = true;
			break;
		case O_STREAM:
			if (parse_u64(optarg, &v, false) || v < 1 || v > 1024)
				return bad("--stream window (1..1024)", optarg);
			o->paced = false;
			o->window = (int)v;
			break;
		case O_POLL:
			o->poll = true;
			break;
		case O_START_FILE:
			o->start_file = optarg;
			break;
		case O_BULK_SIZE:
			if (parse_u64(optarg, &v, true) || v < SN_MIN_SIZE || v > SN_MAX_SIZE)
				return bad("--bulk-size (32 B .. 4 MiB)", optarg);
			o->bulk_size = (uint32_t)v;
			break;
		case O_BULK_WINDOW:
			if (parse_u64(optarg, &v, false) || v < 1 || v > 1024)
				return bad("--bulk-window (1..1024)", optarg);
			o->bulk_window = (int)v;
			break;
		case O_GAP:
			if (parse_double(optarg, &o->gap) || o->gap > 1e6)
				return bad("--gap (microseconds)", optarg);
			o->gap /= 1e6;
			break;
		case O_START:
			if (parse_double(optarg, &o->start))
				return bad("--start", optarg);
			break;
		case O_WARM:
			if (parse_double(optarg, &o->warm))
				return bad("--warm", optarg);
			break;
		case O_DURATION:
			if (parse_double(optarg, &o->duration))
				return bad("--duration", optarg);
			break;
		case O_COUNT:
			if (parse_u64(optarg, &v, false) || v > UINT32_MAX)
				return bad("--count", optarg);
			o->count = v;
			break;
		case O_TIMEOUT:
			if (parse_double(optarg, &o->timeout) || o->timeout <= 0)
				return bad("--timeout", optarg);
			break;
		case O_ADDR:
			o->addr = optarg;
			break;
		case O_PORT:
			if (parse_u64(optarg, &v, false) || v < 1 || v > 65535)
				return bad("--port", optarg);
			o->port = (int)v;
			break;
		case O_CC:
			o->cc = optarg;
			break;
		case O_SNDBUF:
			if (parse_u64(optarg, &v, true) || v < 4096 || v > (1u << 30))
				return bad("--sndbuf", optarg);
			o->sndbuf = (int)v;
			break;
		case O_HELP:
			fputs(usage, stdout);
			return 1;
		default:
			sn_err("try --help");
			return -1;
		}
	}
	if (optind < argc)
		return bad("argument", argv[optind]);
	if (o->role == SN_NOW)
		return 0;
	if (o->node < 0) {
		sn_err("--node is required");
		return -1;
	}
	if (!o->count && !o->duration) {
		sn_err("give --duration S or --count N: when to stop");
		return -1;
	}
	if ((o->role == SN_GAMMA_SEND || o->role == SN_GAMMA_RECV) && (!o->dir || !o->n_peers)) {
		sn_err("%s needs --dir and --peers", argv[1]);
		return -1;
	}
	if ((o->role == SN_TCP_SEND || o->role == SN_TCP_RECV) && !o->port) {
		sn_err("%s needs --port", argv[1]);
		return -1;
	}
	if (o->role == SN_TCP_SEND && !o->addr) {
		sn_err("tcp-send needs --addr");
		return -1;
	}
	return 0;
}
