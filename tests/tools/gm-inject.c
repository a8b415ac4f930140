/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gm-inject: a hostile station.  Sends random and malformed gamma frames
 * (EtherType 0x88B5 by default) onto an interface, at a bounded rate for a
 * bounded time, to check that receivers drop and count them and that the
 * jobs they serve are not disturbed.
 *
 *   gm-inject -i IFACE -m MAC[,MAC...] [-p PORT[,PORT...]] [-k KEY] [-S]
 *             [-r FRAMES_PER_S] [-t SECONDS] [-e ETHERTYPE] [-s SEED]
 *
 * -m  destination MACs (the victims); -p  their live ports, if known (else
 * ports are guessed at random); -k  a key to stamp on the bad-sequence
 * frames (others always carry a random key).  Rate at most 100000/s, time
 * at most 600 s.  -S  also send restart frames, which spoof the victims'
 * MACs: on a learning bridge that diverts their traffic to us (a layer-2
 * attack no transport stops), so use it only where the bridge does not
 * learn from our port.  Other frames have our own source MAC.  Kinds, in
 * turn:
 *
 *   random    random bytes of random length
 *   short     gamma header cut short (0..31 bytes)
 *   version   unknown wire version, valid checksum
 *   type      unknown frame type, valid checksum
 *   len       len field beyond the frame
 *   csum      well-formed, wrong checksum
 *   key       valid-checksum garbage for a live port with a wrong key
 *   port      well-formed frame to a random (forged) port
 *   seq       valid frame, sequence number far outside any window
 *   restart   (-S only) valid frame with the key, from another victim's MAC
 *             and a live port, with a new session: a forged restart of it
 *   ooo       valid frame with the key from one of 1024 fake source ports,
 *             out of order: fake peers trying to fill the reorder buffers
 *
 * A job with a secret drops every frame (bad key, bad mac, ...); without
 * one, the last three reach the reliability engine, which must neither
 * restart the real peer nor run out of buffers.
 *
 * With -F FORGERY, it sends instead well-formed messages with the job's key
 * (-k, required, and -p) that only a station outside the job could send:
 * each from a new source port, so from a source in no receiver's AV.
 *
 *   ob1-ack      an untagged EAGER message holding btl gamma's header and an
 *                Open MPI ob1 ACK whose send-request pointer is garbage: a
 *                receiver that delivered it would crash in the PML
 *   start-spray  a START of a 16 MiB medium message and SPRAY_FRAGS of its
 *                FRAGs, in sequence, from every source
 *
 * Prints how many frames of each kind went out.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gm_wire.h"

#define MAX_TARGETS 64
#define MAX_RATE    100000
#define MAX_TIME    600
#define FRAME_MAX   1514
#define SPRAY_LEN   (16u << 20)
#define SPRAY_FRAGS 63

enum kind {
	K_RANDOM,
	K_SHORT,
	K_VERSION,
	K_TYPE,
	K_LEN,
	K_CSUM,
	K_KEY,
	K_PORT,
	K_SEQ,
	K_RESTART,
	K_OOO,
	K_N
};
static const char *const kind_name[K_N] = {"random", "short", "version", "type",    "len", "csum",
                                           "key",    "port",  "seq",     "restart", "ooo"};

static uint64_t rng;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static void usage(const char *why)
{
	fprintf(stderr,
	        "gm-inject: %s\n"
	        "usage: gm-inject -i IFACE -m MAC[,MAC...] [-p PORT[,PORT...]] [-k KEY] [-S]\n"
	        "                 [-r FRAMES_PER_S (<= %d)] [-t SECONDS (<= %d)] [-e ETHERTYPE] "
	        "[-s SEED]\n"
	        "                 [-F ob1-ack|start-spray (needs -k and -p)]\n",
	        why, MAX_RATE, MAX_TIME);
	exit(2);
}

static unsigned long num(const char *s, unsigned long max, const char *what)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || !*s || *end || v > max) {
		char msg[128];
		snprintf(msg, sizeof(msg), "bad %s '%s' (0..%lu)", what, s, max);
		usage(msg);
	}
	return v;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

struct cfg {
	uint8_t dst[MAX_TARGETS][6];
	unsigned ndst;
	uint16_t port[MAX_TARGETS];
	unsigned nport;
	uint32_t key;
	int have_key;
	uint16_t ethertype;
	uint8_t src[6];
	int spoof; /* -S */
};

enum forgery { F_NONE, F_OB1_ACK, F_START_SPRAY };

/* The forger's current source: a fresh port and session, frames in sequence. */
struct forger {
	enum forgery kind;
	uint16_t src_port;
	uint32_t session, next;
	unsigned frame; /* of this source's message */
	uint8_t dst[6];
	uint16_t dst_port;
};

/* One sealed sequenced frame: thdr, then payload (random bytes if NULL). */
static size_t forged_frame(struct forger *fg, uint8_t type, const void *thdr, size_t thlen,
                           const void *payload, size_t dlen, const struct cfg *c, uint8_t *gm)
{
	struct gm_hdr h = {
	    .version = GM_WIRE_VERSION,
	    .type = type,
	    .flags = GM_F_SEQ,
	    .dst_port = fg->dst_port,
	    .src_port = fg->src_port,
	    .key = c->key,
	    .session = fg->session,
	    .seq = fg->next++,
	    .len = (uint16_t)(thlen + dlen),
	    .wnd = 64,
	};

	gm_hdr_encode(gm, &h);
	memcpy(gm + sizeof(h), thdr, thlen);
	for (size_t i = 0; i < dlen; i++)
		gm[sizeof(h) + thlen + i] =
		    payload ? ((const uint8_t *)payload)[i] : (uint8_t)rnd();
	gm_frame_seal(gm, sizeof(h) + h.len);
	return sizeof(h) + h.len;
}

/* The next forged frame into f (from the destination MAC on). */
static size_t build_forged(const struct cfg *c, struct forger *fg, uint8_t *f)
{
	uint8_t *gm = f + GM_ETH_HLEN, th[sizeof(struct gm_msg_hdr)];
	size_t len, room = FRAME_MAX - GM_ETH_HLEN - sizeof(struct gm_hdr);

	if (fg->frame == 0 || fg->kind == F_OB1_ACK || fg->frame > SPRAY_FRAGS) {
		/* A new source, aimed at one live port. */
		fg->frame = 0;
		fg->src_port = (uint16_t)(1 + rnd() % 65535);
		fg->session = fg->next = rnd();
		memcpy(fg->dst, c->dst[rnd() % c->ndst], 6);
		fg->dst_port = c->port[rnd() % c->nport];
	}
	memcpy(f, fg->dst, 6);
	memcpy(f + 6, c->src, 6);
	f[12] = (uint8_t)(c->ethertype >> 8);
	f[13] = (uint8_t)c->ethertype;
	if (fg->kind == F_OB1_ACK) {
		/*
		 * btl gamma's 8-byte header (the PML tag: ob1's ACK, 0x44), then
		 * ob1's ACK header: type, flags, padding to 8, the sender's
		 * request pointer (garbage), the receiver's, offset and size.
		 */
		uint8_t body[8 + 40] = {0x44};
		body[8] = 0x44;
		memset(body + 16, 0x41, 8);
		struct gm_msg_hdr m = {.msg_id = rnd(), .msg_len = sizeof(body)};
		gm_msg_hdr_encode(th, &m);
		len = forged_frame(fg, GM_FT_EAGER, th, sizeof(th), body, sizeof(body), c, gm);
	} else if (fg->frame == 0) {
		struct gm_msg_hdr m = {.msg_id = 1, .msg_len = SPRAY_LEN};
		gm_msg_hdr_encode(th, &m);
		len = forged_frame(fg, GM_FT_START, th, sizeof(th), NULL, room - sizeof(th), c, gm);
	} else {
		size_t chunk = room - sizeof(struct gm_frag_hdr);
		struct gm_frag_hdr fh = {
		    .msg_id = 1, .offset = (room - sizeof(th)) + (uint64_t)(fg->frame - 1) * chunk};
		gm_frag_hdr_encode(th, &fh);
		len = forged_frame(fg, GM_FT_FRAG, th, sizeof(fh), NULL, chunk, c, gm);
	}
	fg->frame++;
	return GM_ETH_HLEN + len;
}

/* A well-formed header and body for a live (or guessed) port, random key. */
static size_t build_valid(const struct cfg *c, uint8_t *gm, uint32_t key)
{
	size_t blen = 32 + rnd() % 200;
	struct gm_hdr h = {
	    .version = GM_WIRE_VERSION,
	    .type = (uint8_t)(1 + rnd() % (GM_FT_MAX - 1)),
	    .flags = GM_F_SEQ | (rnd() & GM_F_ACK),
	    .dst_port = c->nport ? c->port[rnd() % c->nport] : (uint16_t)(1 + rnd() % 65535),
	    .src_port = (uint16_t)(1 + rnd() % 65535),
	    .key = key,
	    .session = rnd(),
	    .ack = rnd(),
	    .len = (uint16_t)blen,
	    .wnd = (uint16_t)rnd(),
	};

	h.seq = h.session;
	for (size_t i = 0; i < blen; i++)
		gm[sizeof(h) + i] = (uint8_t)rnd();
	gm_hdr_encode(gm, &h);
	return sizeof(h) + blen;
}

/* Patch a host-order field of an encoded header and reseal. */
static void patch_u8(uint8_t *gm, size_t off, uint8_t v, size_t len)
{
	gm[off] = v;
	gm_frame_seal(gm, len);
}

static size_t build(const struct cfg *c, enum kind k, uint8_t *f)
{
	uint8_t *gm = f + GM_ETH_HLEN;
	uint32_t badkey = rnd();
	size_t len;

	if (c->have_key && badkey == c->key)
		badkey ^= 1;
	memcpy(f, c->dst[rnd() % c->ndst], 6);
	memcpy(f + 6, c->src, 6);
	f[12] = (uint8_t)(c->ethertype >> 8);
	f[13] = (uint8_t)c->ethertype;
	len = build_valid(c, gm, badkey);
	switch (k) {
	case K_RANDOM:
		len = rnd() % (FRAME_MAX - GM_ETH_HLEN + 1);
		for (size_t i = 0; i < len; i++)
			gm[i] = (uint8_t)rnd();
		break;
	case K_SHORT:
		len = rnd() % sizeof(struct gm_hdr);
		break;
	case K_VERSION:
		patch_u8(gm, offsetof(struct gm_hdr, version), (uint8_t)(2 + rnd() % 250), len);
		break;
	case K_TYPE:
		patch_u8(gm, offsetof(struct gm_hdr, type),
		         rnd() & 1 ? 0 : (uint8_t)(GM_FT_MAX + rnd() % (256 - GM_FT_MAX)), len);
		break;
	case K_LEN: {
		uint16_t l = htons((uint16_t)(len + 1 + rnd() % 1000));
		memcpy(gm + offsetof(struct gm_hdr, len), &l, 2);
		gm_frame_seal(gm, len);
		break;
	}
	case K_CSUM:
		gm_frame_seal(gm, len);
		gm[offsetof(struct gm_hdr, tag) + rnd() % 4] ^= (uint8_t)(1 + rnd() % 255);
		break;
	case K_KEY:
		gm_frame_seal(gm, len);
		break;
	case K_PORT: {
		uint16_t p = htons((uint16_t)(1 + rnd() % 65535));
		memcpy(gm + offsetof(struct gm_hdr, dst_port), &p, 2);
		gm_frame_seal(gm, len);
		break;
	}
	case K_SEQ: {
		struct gm_hdr h;
		gm_hdr_decode(gm, len, &h);
		h.key = c->have_key ? c->key : badkey;
		/*
		 * One session per source port, the same in every run: a
		 * receiver then sees a steady (if silly) peer, not a restart,
		 * so the counters stay about sequence numbers.
		 */
		h.session = (h.key ^ 0x5eed0000u) + h.src_port * 2654435761u;
		h.seq = h.session + (1u << 20) + rnd() % (1u << 30);
		h.flags = GM_F_SEQ;
		gm_hdr_encode(gm, &h);
		gm_frame_seal(gm, len);
		break;
	}
	case K_RESTART:
	case K_OOO: {
		struct gm_hdr h;
		unsigned d = rnd() % c->ndst;

		gm_hdr_decode(gm, len, &h);
		h.key = c->have_key ? c->key : badkey;
		h.flags = GM_F_SEQ;
		h.session = rnd();
		memcpy(f, c->dst[d], 6);
		if (k == K_RESTART && c->ndst > 1 && c->nport) {
			/* As the job's other node, from one of its live ports. */
			memcpy(f + 6, c->dst[(d + 1 + rnd() % (c->ndst - 1)) % c->ndst], 6);
			h.src_port = c->port[rnd() % c->nport];
			h.seq = h.session;
		} else {
			/* 1024 fake peers: a peer is a (MAC, port), so ports suffice. */
			uint32_t id = rnd() % 1024;

			h.src_port = (uint16_t)(40000 + id);
			h.session = 0x0fa6e000u + id;
			h.seq = h.session + 1 + rnd() % 256;
		}
		gm_hdr_encode(gm, &h);
		gm_frame_seal(gm, len);
		break;
	}
	default:
		break;
	}
	return GM_ETH_HLEN + len;
}

static void parse_macs(struct cfg *c, char *s)
{
	for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
		unsigned m[6];
		if (c->ndst == MAX_TARGETS)
			usage("too many MACs");
		if (sscanf(tok, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
			usage("bad MAC address");
		for (int i = 0; i < 6; i++) {
			if (m[i] > 255)
				usage("bad MAC address");
			c->dst[c->ndst][i] = (uint8_t)m[i];
		}
		c->ndst++;
	}
}

int main(int argc, char **argv)
{
	struct cfg c = {.ethertype = GM_ETHERTYPE_DEFAULT};
	const char *ifname = NULL;
	unsigned long rate = 1000, secs = 5;
	uint64_t sent[K_N] = {0}, errors = 0, total = 0;
	struct forger fg = {.kind = F_NONE};
	int opt;

	rng = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	while ((opt = getopt(argc, argv, "i:m:p:k:r:t:e:s:SF:")) != -1) {
		switch (opt) {
		case 'F':
			if (!strcmp(optarg, "ob1-ack"))
				fg.kind = F_OB1_ACK;
			else if (!strcmp(optarg, "start-spray"))
				fg.kind = F_START_SPRAY;
			else
				usage("unknown forgery (ob1-ack, start-spray)");
			break;
		case 'i':
			ifname = optarg;
			break;
		case 'm':
			parse_macs(&c, optarg);
			break;
		case 'p':
			for (char *tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
				if (c.nport == MAX_TARGETS)
					usage("too many ports");
				c.port[c.nport++] = (uint16_t)num(tok, 65535, "port");
			}
			break;
		case 'k':
			c.key = (uint32_t)num(optarg, UINT32_MAX, "key");
			c.have_key = 1;
			break;
		case 'r':
			rate = num(optarg, MAX_RATE, "rate");
			break;
		case 't':
			secs = num(optarg, MAX_TIME, "time");
			break;
		case 'e':
			c.ethertype = (uint16_t)num(optarg, 0xffff, "ethertype");
			break;
		case 's':
			rng = num(optarg, UINT64_MAX >> 1, "seed") * 2654435761u + 1;
			break;
		case 'S':
			c.spoof = 1;
			break;
		default:
			usage("unknown option");
		}
	}
	if (!ifname || !c.ndst)
		usage("-i IFACE and -m MAC are required");
	if (!rate)
		usage("rate must be at least 1 frame/s");
	if (fg.kind != F_NONE && (!c.have_key || !c.nport))
		usage("-F needs the job's key (-k) and live ports (-p)");
	if (!rng)
		rng = 1;

	int fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0) {
		perror("gm-inject: AF_PACKET socket (needs CAP_NET_RAW)");
		return 1;
	}
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
		fprintf(stderr, "gm-inject: interface %s: %s\n", ifname, strerror(errno));
		return 1;
	}
	memcpy(c.src, ifr.ifr_hwaddr.sa_data, 6);
	struct sockaddr_ll sll = {
	    .sll_family = AF_PACKET,
	    .sll_ifindex = (int)if_nametoindex(ifname),
	    .sll_halen = 6,
	};

	double t0 = now_s(), interval = 1.0 / (double)rate;
	uint8_t frame[FRAME_MAX];
	for (uint64_t i = 0;; i++) {
		double due = t0 + (double)i * interval, now = now_s();
		if (now - t0 >= (double)secs)
			break;
		if (due > now) {
			struct timespec d = {.tv_sec = (time_t)(due - now),
			                     .tv_nsec =
			                         (long)((due - now - (time_t)(due - now)) * 1e9)};
			nanosleep(&d, NULL);
		}
		enum kind k = (enum kind)(i % K_N);
		if (k == K_RESTART && !c.spoof)
			k = K_OOO;
		size_t len = fg.kind != F_NONE ? build_forged(&c, &fg, frame) : build(&c, k, frame);
		if (len < GM_ETH_HLEN)
			len = GM_ETH_HLEN;
		memcpy(sll.sll_addr, frame, 6);
		if (sendto(fd, frame, len, 0, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
			/* a full queue is not our problem: keep the rate bound, not the count */
			errors++;
			continue;
		}
		sent[k]++;
		total++;
	}
	printf("gm-inject: sent %lu frames in %lu s on %s (%lu send errors):", (unsigned long)total,
	       secs, ifname, (unsigned long)errors);
	if (fg.kind != F_NONE) {
		printf(" forged %s %lu\n", fg.kind == F_OB1_ACK ? "ob1-ack" : "start-spray",
		       (unsigned long)total);
		close(fd);
		return total ? 0 : 1;
	}
	for (int k = 0; k < K_N; k++)
		printf(" %s %lu", kind_name[k], (unsigned long)sent[k]);
	printf("\n");
	close(fd);
	return total ? 0 : 1;
}
