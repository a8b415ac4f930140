/*
 * gamma-floor: the raw-frame floor under gamma.  What two processes get from
 * bare AF_PACKET frames of one EtherType on a link, with no protocol at all
 * (no checksum, no acknowledgement, no retransmission), measured the way
 * gamma-pingpong measures gamma, so that experiments/perf/gamma-bench can print it as a
 * row beside gamma and the TCP stacks:
 *
 *   latency    8-byte pings (one frame of 14 + 8 bytes) that the server sends
 *              back; half the median round trip, median over repetitions
 *   bandwidth  the client sends frames of MTU payload bytes as fast as it
 *              can, one sendmsg() per frame (--tests bw), sendmmsg()
 *              batches (--tests mmsg) or a PACKET_TX_RING flushed by one
 *              send() per batch, each frame written (copied) into its slot
 *              (--tests ring: the kernel then takes the slot's pages
 *              without a copy of its own); the server counts what arrives
 *              during --seconds from the first frame (kernel arrival
 *              stamps), then tells the client to stop; median over reps
 *
 * Both sides receive from a TPACKET_V2 ring of 8 MiB (gamma's default) and
 * busy-poll it.  The server checks every data frame byte for byte (its
 * sequence number and the pattern that number selects) and every pong
 * carries its ping's number, so the figures rest on verified data; frames
 * lost to a full ring are counted, not retransmitted.
 *
 *   message    a message of S bytes (--msg-sizes) as frames of up to the
 *   latency    payload size, in sendmmsg batches, that the server sends
 *              back the same way once it holds every frame; half the
 *              median round trip, median over repetitions (--tests msg)
 *
 *   gamma-floor --server --iface IF [--timeout S]
 *   gamma-floor --client MAC --iface IF [--tests lat,bw,mmsg,ring,msg] [--reps N]
 *               [--seconds S] [--iters N] [--warmup N] [--size B] [--batch N]
 *               [--msg-sizes S,S...] [--mac-key HEX]
 *
 * --mac-key (both ends, 16-64 bytes in hex): bw and mmsg data frames, and
 * msg's frames both ways, carry gamma's frame MAC, sealed and checked
 * (floor.h), for what a MAC costs a raw-frame transport on this link.
 *
 * The server learns the client's MAC from its first hello and serves until
 * the client says goodbye.  Output (client): '#' notes and CSV rows
 * "test,size,value,unit".  Exit: 0 ok, 1 failure, 2 usage, 3 corrupt data,
 * 77 no raw sockets (needs root or CAP_NET_RAW).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "floor.h"
#include "gm_mac.h"
#include "gm_wire.h"

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double fl_now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

double fl_wall(void)
{
	return clock_s(CLOCK_REALTIME);
}

void fl_hdr_put(uint8_t *p, const struct fl_hdr *h)
{
	uint32_t seq = htonl(h->seq);
	uint16_t count = htons(h->count);

	p[0] = h->kind;
	p[1] = h->rep;
	memcpy(p + 2, &count, 2);
	memcpy(p + 4, &seq, 4);
}

int fl_hdr_get(const uint8_t *frame, unsigned len, struct fl_hdr *h)
{
	uint32_t seq;
	uint16_t count;

	if (len < ETH_HLEN + FL_HDR)
		return -1;
	h->kind = frame[ETH_HLEN];
	h->rep = frame[ETH_HLEN + 1];
	memcpy(&count, frame + ETH_HLEN + 2, 2);
	h->count = ntohs(count);
	memcpy(&seq, frame + ETH_HLEN + 4, 4);
	h->seq = ntohl(seq);
	return h->count && h->kind != FL_MSG && h->kind != FL_MSG_BACK ? -1 : 0;
}

void fl_seal(struct gm_mac *mac, uint8_t *hdr, const struct iovec *payload)
{
	const uint8_t *fh = hdr + ETH_HLEN;
	uint32_t seq;
	uint64_t nonce;

	memcpy(&seq, fh + 4, 4);
	nonce = htobe64(((uint64_t)fh[0] << 40 | (uint64_t)fh[1] << 32 | ntohl(seq)) + 1);
	memcpy(hdr + ETH_HLEN + offsetof(struct gm_hdr, nonce), &nonce, sizeof(nonce));
	gm_mac_seal_iov(mac, hdr, ETH_HLEN + fl_data_off(mac), payload, 1);
}

int fl_send_ctrl(struct fl_link *l, const struct fl_hdr *h, const void *body, unsigned n)
{
	uint8_t hdr[ETH_HLEN + FL_HDR];
	struct iovec iov[2] = {{hdr, sizeof(hdr)}, {(void *)body, n}};
	double give_up = fl_now() + 1;
	int rc;

	fl_link_eth(l, hdr);
	fl_hdr_put(hdr + ETH_HLEN, h);
	while ((rc = fl_link_send(l, iov, n ? 2 : 1)) == -EAGAIN || rc == -ENOBUFS) {
		if (fl_now() > give_up)
			break;
		usleep(20);
	}
	if (rc)
		fprintf(stderr, "gamma-floor: send: %s\n", strerror(-rc));
	return rc ? -1 : 0;
}

static void usage(int rc)
{
	fprintf(rc ? stderr : stdout,
	        "usage: gamma-floor --server --iface IF [--timeout S]\n"
	        "       gamma-floor --client MAC --iface IF [--tests lat,bw,mmsg,ring,msg]\n"
	        "                   [--reps N] [--seconds S] [--iters N] [--warmup N] [--size B]\n"
	        "                   [--batch N] [--msg-sizes S,S...] [--mac-key HEX]\n"
	        "  --tests    lat: 8-byte ping-pong; bw: stream, one sendmsg per frame;\n"
	        "             mmsg: stream, sendmmsg batches; ring: stream, PACKET_TX_RING\n"
	        "             batches; msg: ping-pong of messages of several frames\n"
	        "             (default lat,bw)\n"
	        "  --reps     repetitions, medians reported (default 3)\n"
	        "  --seconds  receiver's counting interval per repetition (default 1)\n"
	        "  --iters    round trips per repetition (default 1000, after --warmup 100)\n"
	        "  --msg-sizes  message bytes for msg (default 4096,16384,65536)\n"
	        "  --mac-key  bw, mmsg and msg frames carry gamma's MAC under this secret\n"
	        "             (hex, 16-64 bytes; give it to both ends; not with ring)\n"
	        "  --size     data frame payload bytes (default: the MTU)\n"
	        "  --batch    frames per sendmmsg or ring flush (default 64)\n"
	        "  --ethertype T  (default 0x88B5)   --timeout S  (default 30)\n");
	exit(rc);
}

static unsigned long num(const char *s, const char *what, unsigned long lo, unsigned long hi)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v < lo || v > hi) {
		fprintf(stderr, "gamma-floor: %s wants %lu..%lu, not '%s'\n", what, lo, hi, s);
		exit(2);
	}
	return v;
}

static double seconds(const char *s, const char *what)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !(v >= 0.01 && v <= 3600)) {
		fprintf(stderr, "gamma-floor: %s wants seconds from 0.01 to 3600, not '%s'\n", what,
		        s);
		exit(2);
	}
	return v;
}

static unsigned tests(const char *s)
{
	unsigned t = 0;
	char buf[64], *save, *w;

	snprintf(buf, sizeof(buf), "%s", s);
	for (w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		if (!strcmp(w, "lat"))
			t |= FL_TEST_LAT;
		else if (!strcmp(w, "bw"))
			t |= FL_TEST_BW;
		else if (!strcmp(w, "mmsg"))
			t |= FL_TEST_MMSG;
		else if (!strcmp(w, "ring"))
			t |= FL_TEST_RING;
		else if (!strcmp(w, "msg"))
			t |= FL_TEST_MSG;
		else {
			fprintf(stderr,
			        "gamma-floor: unknown test '%s' (lat, bw, mmsg, ring, msg)\n", w);
			exit(2);
		}
	}
	if (!t)
		usage(2);
	return t;
}

static void msg_sizes(const char *s, struct fl_opts *o)
{
	char buf[256], *save, *w;

	snprintf(buf, sizeof(buf), "%s", s);
	o->n_msg_sizes = 0;
	for (w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		if (o->n_msg_sizes == FL_MSG_SIZES_MAX) {
			fprintf(stderr, "gamma-floor: --msg-sizes takes at most %d sizes\n",
			        FL_MSG_SIZES_MAX);
			exit(2);
		}
		o->msg_sizes[o->n_msg_sizes++] = (unsigned)num(w, "--msg-sizes", 1, 64 << 20);
	}
	if (!o->n_msg_sizes)
		usage(2);
}

static void mac_key(const char *hex, struct fl_opts *o)
{
	uint8_t key[GM_SECRET_MAX];
	size_t n = 0;

	while (hex[0] && hex[1] && n < sizeof(key) && sscanf(hex, "%2hhx", &key[n]) == 1) {
		hex += 2;
		n++;
	}
	if (*hex || n < GM_SECRET_MIN) {
		fprintf(stderr, "gamma-floor: --mac-key wants %d to %d bytes in hex\n",
		        GM_SECRET_MIN, GM_SECRET_MAX);
		exit(2);
	}
	if (gm_mac_create(key, n, &o->mac)) {
		fprintf(stderr, "gamma-floor: cannot set up the MAC (libcrypto, libsodium)\n");
		exit(1);
	}
}

static void parse(int argc, char **argv, struct fl_opts *o)
{
	static const struct option lo[] = {{"server", no_argument, 0, 'S'},
	                                   {"client", required_argument, 0, 'c'},
	                                   {"iface", required_argument, 0, 'i'},
	                                   {"tests", required_argument, 0, 't'},
	                                   {"reps", required_argument, 0, 'r'},
	                                   {"seconds", required_argument, 0, 's'},
	                                   {"iters", required_argument, 0, 'n'},
	                                   {"warmup", required_argument, 0, 'w'},
	                                   {"size", required_argument, 0, 'z'},
	                                   {"batch", required_argument, 0, 'b'},
	                                   {"ethertype", required_argument, 0, 'e'},
	                                   {"timeout", required_argument, 0, 'T'},
	                                   {"msg-sizes", required_argument, 0, 'm'},
	                                   {"mac-key", required_argument, 0, 'k'},
	                                   {"help", no_argument, 0, 'h'},
	                                   {0, 0, 0, 0}};
	bool client = false;
	int c;

	*o = (struct fl_opts){.ethertype = 0x88B5,
	                      .tests = FL_TEST_LAT | FL_TEST_BW,
	                      .reps = 3,
	                      .iters = 1000,
	                      .warmup = 100,
	                      .batch = 64,
	                      .msg_sizes = {4096, 16384, 65536},
	                      .n_msg_sizes = 3,
	                      .seconds = 1,
	                      .timeout = 30};
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'S':
			o->server = true;
			break;
		case 'c':
			if (sscanf(optarg, "%2hhx:%2hhx:%2hhx:%2hhx:%2hhx:%2hhx%*c", &o->peer[0],
			           &o->peer[1], &o->peer[2], &o->peer[3], &o->peer[4],
			           &o->peer[5]) != 6) {
				fprintf(stderr,
				        "gamma-floor: '%s' is not a MAC (aa:bb:cc:dd:ee:ff)\n",
				        optarg);
				exit(2);
			}
			client = true;
			break;
		case 'i':
			o->iface = optarg;
			break;
		case 't':
			o->tests = tests(optarg);
			break;
		case 'r':
			o->reps = (unsigned)num(optarg, "--reps", 1, 100);
			break;
		case 's':
			o->seconds = seconds(optarg, "--seconds");
			break;
		case 'n':
			o->iters = (unsigned)num(optarg, "--iters", 1, 10000000);
			break;
		case 'w':
			o->warmup = (unsigned)num(optarg, "--warmup", 0, 10000000);
			break;
		case 'z':
			o->size = (unsigned)num(optarg, "--size", 64, 65535);
			break;
		case 'b':
			o->batch = (unsigned)num(optarg, "--batch", 1, 1024);
			break;
		case 'e':
			o->ethertype = (uint16_t)num(optarg, "--ethertype", 0x600, 0xffff);
			break;
		case 'T':
			o->timeout = seconds(optarg, "--timeout");
			break;
		case 'm':
			msg_sizes(optarg, o);
			break;
		case 'k':
			mac_key(optarg, o);
			break;
		case 'h':
			usage(0);
			break;
		default:
			usage(2);
		}
	}
	if (optind < argc || client == o->server || !o->iface)
		usage(2);
	if (o->mac && (o->tests & FL_TEST_RING)) {
		fprintf(stderr,
		        "gamma-floor: --mac-key goes with the lat, bw, mmsg and msg tests\n");
		exit(2);
	}
}

int main(int argc, char **argv)
{
	struct fl_opts o;
	struct fl_link l;
	int rc;

	parse(argc, argv, &o);
	rc = fl_link_open(&l, o.iface, o.ethertype);
	if (rc)
		return rc == -EPERM || rc == -EACCES ? 77 : 1;
	if (!o.size)
		o.size = l.mtu;
	if (o.size > l.mtu) {
		fprintf(stderr, "gamma-floor: --size %u exceeds the MTU of %s (%u)\n", o.size,
		        o.iface, l.mtu);
		return 2;
	}
	rc = o.server ? fl_server(&l, &o) : fl_client(&l, &o);
	fl_link_close(&l);
	return rc;
}
