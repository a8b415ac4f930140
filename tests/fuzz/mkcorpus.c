/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Writes the seed corpus for fuzz_frame: short, valid scripts
 * (fuzz_format.h) that walk every frame type through its handler, plus a
 * few hostile ones.  Usage: mkcorpus DIR
 */
#include <endian.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_format.h"
#include "gm_wire.h"

static uint8_t buf[65536];
static size_t n;

static void put8(uint8_t v)
{
	buf[n++] = v;
}

static void put16(uint16_t v)
{
	put8(v >> 8);
	put8(v & 0xff);
}

/* One frame; ctl 0 lets the harness fill in addressing, seq and checksum. */
static void frame_ctl(uint8_t ctl, uint8_t peer, const struct gm_hdr *h, const void *body,
                      size_t blen)
{
	put8(FZ_FRAME);
	put8(ctl);
	put8(peer);
	put16((uint16_t)blen);
	gm_hdr_encode(buf + n, h);
	n += sizeof(*h);
	memcpy(buf + n, body, blen);
	n += blen;
}

static void frame(uint8_t type, const void *body, size_t blen)
{
	/* type is stored as type - 1 + k*(GM_FT_MAX-1); the harness maps it back */
	frame_ctl(0, 0, &(struct gm_hdr){.type = (uint8_t)(type - 1)}, body, blen);
}

static void msg_frame(uint8_t type, uint32_t id, uint32_t mflags, uint64_t tag, uint64_t msg_len,
                      size_t dlen)
{
	uint8_t b[FZ_MTU];
	struct gm_msg_hdr m = {
	    .msg_id = id, .mflags = mflags, .tag = tag, .data = 7, .msg_len = msg_len};

	gm_msg_hdr_encode(b, &m);
	for (size_t i = 0; i < dlen; i++)
		b[sizeof(m) + i] = (uint8_t)i;
	frame(type, b, sizeof(m) + dlen);
}

/* A BUNDLE of n messages of dlen bytes each, ids from id; the last one's
 * msg_len says last_len (a lie when it differs from dlen). */
static void bundle_frame(uint32_t id, unsigned n, size_t dlen, uint64_t last_len)
{
	uint8_t b[FZ_MTU];
	size_t at = 0;

	for (unsigned i = 0; i < n; i++) {
		struct gm_msg_hdr m = {.msg_id = id + i, .msg_len = i + 1 < n ? dlen : last_len};

		gm_msg_hdr_encode(b + at, &m);
		at += sizeof(m);
		memset(b + at, (int)i, dlen);
		at += dlen;
	}
	frame(GM_FT_BUNDLE, b, at);
}

static void frag_frame(uint8_t type, uint32_t id, uint64_t off, size_t dlen)
{
	uint8_t b[FZ_MTU];
	struct gm_frag_hdr f = {.msg_id = id, .offset = off};

	gm_frag_hdr_encode(b, &f);
	memset(b + sizeof(f), 0x5a, dlen);
	frame(type, b, sizeof(f) + dlen);
}

static void cts_frame(uint32_t id, uint32_t recv_id, uint64_t len)
{
	uint8_t b[sizeof(struct gm_cts_hdr)];

	gm_cts_hdr_encode(b, &(struct gm_cts_hdr){.msg_id = id, .recv_id = recv_id, .len = len});
	frame(GM_FT_CTS, b, sizeof(b));
}

/* A CTS of one chunk of a striped pull (gm_msg_stripe.c). */
static void cts_chunk_frame(uint32_t id, uint32_t recv_id, uint64_t len, uint64_t off,
                            uint64_t chunk, uint32_t cts_id)
{
	uint8_t b[sizeof(struct gm_cts_hdr)];

	gm_cts_hdr_encode(b, &(struct gm_cts_hdr){.msg_id = id,
	                                          .recv_id = recv_id,
	                                          .len = len,
	                                          .offset = off,
	                                          .chunk = chunk,
	                                          .cts_id = cts_id});
	frame(GM_FT_CTS, b, sizeof(b));
}

/* An ACK for our stream (which starts at FZ_SESSION), flags and ack kept raw. */
static void ack_frame(uint32_t ack, uint64_t sack)
{
	uint64_t s = htobe64(sack);

	frame_ctl(FZ_RAW_FLAGS, 0,
	          &(struct gm_hdr){.type = GM_FT_ACK - 1, .flags = GM_F_ACK, .ack = ack, .wnd = 16},
	          &s, sizeof(s));
}

static void recv_op(uint8_t flags, uint16_t len, uint8_t tag)
{
	put8(FZ_RECV);
	put8(flags);
	put16(len);
	put8(tag);
}

static void send_op(uint8_t flags, uint16_t len, uint8_t dest)
{
	put8(FZ_SEND);
	put8(flags);
	put16(len);
	put8(dest);
}

static void tick(uint8_t ms)
{
	put8(FZ_TICK);
	put8(ms);
}

static int save(const char *dir, const char *name)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, n, f) != n || fclose(f)) {
		perror(path);
		return 1;
	}
	n = 0;
	return 0;
}

int main(int argc, char **argv)
{
	const char *d = argc > 1 ? argv[1] : ".";
	int err = 0;

	recv_op(0, 100, 0);
	msg_frame(GM_FT_EAGER, 0, 0, 0, 50, 50);
	err |= save(d, "eager-posted");

	msg_frame(GM_FT_EAGER, 0, GM_M_TAGGED | GM_M_DATA, 5, 80, 80);
	recv_op(FZ_TAGGED, 40, 5);
	err |= save(d, "eager-unexpected-trunc");

	recv_op(0, 100, 0);
	bundle_frame(0, 4, 20, 20);
	recv_op(0, 100, 0);
	err |= save(d, "bundle");

	bundle_frame(0, 3, 20, 4000);
	err |= save(d, "bundle-overlong");

	recv_op(0, 3000, 0);
	msg_frame(GM_FT_START, 0, 0, 0, 3000, 1400);
	frag_frame(GM_FT_FRAG, 0, 1400, 1400);
	frag_frame(GM_FT_FRAG, 0, 2800, 200);
	err |= save(d, "medium-posted");

	msg_frame(GM_FT_START, 3, GM_M_TAGGED, 9, 2000, 1400);
	recv_op(FZ_TAGGED, 2000, 9);
	frag_frame(GM_FT_FRAG, 3, 1400, 600);
	err |= save(d, "medium-unexpected-bound");

	recv_op(FZ_BIG, 100, 0); /* 6400 bytes */
	msg_frame(GM_FT_RTS, 1, 0, 0, 5000, 0);
	frag_frame(GM_FT_RDATA, 1, 0, 1400);
	frag_frame(GM_FT_RDATA, 1, 1400, 1400);
	frag_frame(GM_FT_RDATA, 1, 2800, 1400);
	frag_frame(GM_FT_RDATA, 1, 4200, 800);
	err |= save(d, "rndv-pull");

	msg_frame(GM_FT_RTS, 2, GM_M_TAGGED, 1, 9000, 0);
	recv_op(FZ_TAGGED, 0, 1);
	err |= save(d, "rndv-zero-recv");

	send_op(FZ_BIG, 400, 0); /* 25600 bytes: rendezvous */
	tick(0);
	ack_frame(1001, 0);
	cts_frame(0, 77, 25600);
	tick(1);
	ack_frame(1005, 0x5);
	err |= save(d, "send-rndv-cts-ack");

	send_op(FZ_BIG, 400, 0); /* 25600 bytes, pulled in two chunks */
	tick(0);
	ack_frame(1001, 0);
	cts_chunk_frame(0, 78, 25600, 12800, 12800, 1);
	cts_chunk_frame(0, 78, 25600, 0, 12800, 2);
	tick(1);
	ack_frame(1010, 0);
	err |= save(d, "send-rndv-chunks");

	send_op(0, 5000, 0);
	send_op(0, 100, 1);
	tick(2);
	ack_frame(1001, 0x6);
	tick(200);
	err |= save(d, "send-medium-timeout");

	recv_op(FZ_MULTI, 4000, 0);
	msg_frame(GM_FT_EAGER, 0, 0, 0, 1000, 1000);
	msg_frame(GM_FT_EAGER, 1, 0, 0, 1000, 1000);
	msg_frame(GM_FT_EAGER, 2, 0, 0, 1000, 1000);
	err |= save(d, "multi-recv");

	recv_op(0, 100, 0);
	put8(FZ_CANCEL);
	put8(0);
	err |= save(d, "cancel");

	/* A frame longer than the MTU, out of order: it must not be buffered. */
	{
		static uint8_t big[FZ_MTU + FZ_OVERSIZE - sizeof(struct gm_hdr)];
		struct gm_msg_hdr m = {.msg_len = sizeof(big) - sizeof(m)};
		gm_msg_hdr_encode(big, &m);
		frame_ctl(FZ_RAW_SEQ, 0,
		          &(struct gm_hdr){.type = GM_FT_EAGER - 1, .seq = 0x70000000u + 1}, big,
		          sizeof(big));
	}
	err |= save(d, "oversize-out-of-order");

	/* Hostile: wrong key, bad checksum, wrong version, cut short. */
	frame_ctl(FZ_RAW_ADDR, 1,
	          &(struct gm_hdr){.type = GM_FT_EAGER - 1, .dst_port = FZ_PORT, .key = 0xbad}, "x",
	          1);
	frame_ctl(FZ_RAW_CSUM, 1, &(struct gm_hdr){.type = GM_FT_EAGER - 1, .tag = {1}}, "x", 1);
	frame_ctl(FZ_RAW_SHAPE, 1, &(struct gm_hdr){.version = 9, .type = 77, .len = 999}, "x", 1);
	frame_ctl(FZ_CUT, 1, &(struct gm_hdr){.type = GM_FT_CTS - 1}, "0123456789abcdef", 16);
	put8(100);
	err |= save(d, "hostile-mix");
	return err;
}
