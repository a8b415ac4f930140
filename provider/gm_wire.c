/* SPDX-License-Identifier: BSD-2-Clause */
/* Codec for gm_wire.h: byte order, validation and the frame checksum. */
#include "gm_wire.h"

#include <endian.h>
#include <string.h>

size_t gm_wire_type_hlen(uint8_t type)
{
	switch (type) {
	case GM_FT_ACK:
		return sizeof(struct gm_ack_body);
	case GM_FT_EAGER:
	case GM_FT_BUNDLE:
	case GM_FT_START:
	case GM_FT_RTS:
		return sizeof(struct gm_msg_hdr);
	case GM_FT_FRAG:
	case GM_FT_RDATA:
		return sizeof(struct gm_frag_hdr);
	case GM_FT_CTS:
		return sizeof(struct gm_cts_hdr);
	case GM_FT_VOID:
		return sizeof(struct gm_void_hdr);
	case GM_FT_NACK:
		return sizeof(struct gm_nack_hdr);
	default:
		return 0;
	}
}

void gm_hdr_encode(void *buf, const struct gm_hdr *h)
{
	struct gm_hdr w = {
	    .version = h->version,
	    .type = h->type,
	    .flags = h->flags,
	    .rsvd = 0,
	    .dst_port = htobe16(h->dst_port),
	    .src_port = htobe16(h->src_port),
	    .key = htobe32(h->key),
	    .session = htobe32(h->session),
	    .seq = htobe32(h->seq),
	    .ack = htobe32(h->ack),
	    .len = htobe16(h->len),
	    .wnd = htobe16(h->wnd),
	    .nonce = htobe64(h->nonce),
	    .echo = htobe64(h->echo),
	};

	memcpy(w.tag, h->tag, sizeof(w.tag));
	memcpy(buf, &w, sizeof(w));
}

int gm_hdr_decode(const void *frame, size_t frame_len, struct gm_hdr *h)
{
	struct gm_hdr w;

	if (frame_len < sizeof(w))
		return GM_WIRE_ESHORT;
	memcpy(&w, frame, sizeof(w));
	h->version = w.version;
	h->type = w.type;
	h->flags = w.flags;
	h->rsvd = w.rsvd;
	h->dst_port = be16toh(w.dst_port);
	h->src_port = be16toh(w.src_port);
	h->key = be32toh(w.key);
	h->session = be32toh(w.session);
	h->seq = be32toh(w.seq);
	h->ack = be32toh(w.ack);
	h->len = be16toh(w.len);
	h->wnd = be16toh(w.wnd);
	h->nonce = be64toh(w.nonce);
	h->echo = be64toh(w.echo);
	memcpy(h->tag, w.tag, sizeof(h->tag));
	if (h->version != GM_WIRE_VERSION)
		return GM_WIRE_EVERSION;
	if (h->type == 0 || h->type >= GM_FT_MAX)
		return GM_WIRE_ETYPE;
	/* Ethernet pads short frames, so the frame may be longer than len. */
	if (sizeof(w) + (size_t)h->len > frame_len)
		return GM_WIRE_ELEN;
	if (h->len < gm_wire_type_hlen(h->type))
		return GM_WIRE_ESHORT;
	return GM_WIRE_OK;
}

void gm_msg_hdr_encode(void *buf, const struct gm_msg_hdr *m)
{
	struct gm_msg_hdr w = {
	    .msg_id = htobe32(m->msg_id),
	    .mflags = htobe32(m->mflags),
	    .tag = htobe64(m->tag),
	    .data = htobe64(m->data),
	    .msg_len = htobe64(m->msg_len),
	    .mcrc = htobe32(m->mcrc),
	};
	memcpy(buf, &w, sizeof(w));
}

void gm_msg_hdr_decode(const void *buf, struct gm_msg_hdr *m)
{
	struct gm_msg_hdr w;

	memcpy(&w, buf, sizeof(w));
	m->msg_id = be32toh(w.msg_id);
	m->mflags = be32toh(w.mflags);
	m->tag = be64toh(w.tag);
	m->data = be64toh(w.data);
	m->msg_len = be64toh(w.msg_len);
	m->mcrc = be32toh(w.mcrc);
}

void gm_frag_hdr_encode(void *buf, const struct gm_frag_hdr *f)
{
	struct gm_frag_hdr w = {
	    .msg_id = htobe32(f->msg_id),
	    .offset = htobe64(f->offset),
	    .mcrc = htobe32(f->mcrc),
	};
	memcpy(buf, &w, sizeof(w));
}

void gm_frag_hdr_decode(const void *buf, struct gm_frag_hdr *f)
{
	struct gm_frag_hdr w;

	memcpy(&w, buf, sizeof(w));
	f->msg_id = be32toh(w.msg_id);
	f->offset = be64toh(w.offset);
	f->mcrc = be32toh(w.mcrc);
}

void gm_cts_hdr_encode(void *buf, const struct gm_cts_hdr *c)
{
	struct gm_cts_hdr w = {
	    .msg_id = htobe32(c->msg_id),
	    .recv_id = htobe32(c->recv_id),
	    .len = htobe64(c->len),
	    .offset = htobe64(c->offset),
	    .chunk = htobe64(c->chunk),
	    .cts_id = htobe32(c->cts_id),
	    .rail = c->rail,
	};
	memcpy(buf, &w, sizeof(w));
}

void gm_cts_hdr_decode(const void *buf, struct gm_cts_hdr *c)
{
	struct gm_cts_hdr w;

	memcpy(&w, buf, sizeof(w));
	c->msg_id = be32toh(w.msg_id);
	c->recv_id = be32toh(w.recv_id);
	c->len = be64toh(w.len);
	c->offset = be64toh(w.offset);
	c->chunk = be64toh(w.chunk);
	c->cts_id = be32toh(w.cts_id);
	c->rail = w.rail;
	memset(c->rsvd, 0, sizeof(c->rsvd));
}

void gm_void_hdr_encode(void *buf, const struct gm_void_hdr *v)
{
	uint32_t end = htobe32(v->end);

	memcpy(buf, &end, sizeof(end));
}

void gm_void_hdr_decode(const void *buf, struct gm_void_hdr *v)
{
	uint32_t end;

	memcpy(&end, buf, sizeof(end));
	v->end = be32toh(end);
}

/* The header part of the checksum, after the body's CRC: the tag counts as zero. */
static uint32_t hdr_crc(const void *frame, uint32_t body_crc)
{
	static const uint8_t zero[GM_TAG_LEN];

	return gm_crc32c(gm_crc32c(body_crc, frame, GM_HDR_TAG_OFF), zero, sizeof(zero));
}

void gm_frame_seal_body(void *frame, uint32_t body_crc)
{
	uint8_t *tag = (uint8_t *)frame + GM_HDR_TAG_OFF;
	uint32_t c;

	memset(tag, 0, GM_TAG_LEN);
	c = htobe32(hdr_crc(frame, body_crc));
	memcpy(tag, &c, 4);
}

void gm_frame_seal(void *frame, size_t len)
{
	const uint8_t *f = frame;

	gm_frame_seal_body(frame,
	                   gm_crc32c(0, f + sizeof(struct gm_hdr), len - sizeof(struct gm_hdr)));
}

int gm_frame_check_crc(const void *frame, size_t len, uint32_t *body_crc)
{
	const uint8_t *f = frame;
	uint32_t want;

	if (len < sizeof(struct gm_hdr))
		return GM_WIRE_ESHORT;
	memcpy(&want, f + GM_HDR_TAG_OFF, 4);
	for (size_t i = 4; i < GM_TAG_LEN; i++)
		if (f[GM_HDR_TAG_OFF + i])
			return GM_WIRE_ECSUM; /* a CRC frame has nothing else there */
	*body_crc = gm_crc32c(0, f + sizeof(struct gm_hdr), len - sizeof(struct gm_hdr));
	return be32toh(want) == hdr_crc(frame, *body_crc) ? GM_WIRE_OK : GM_WIRE_ECSUM;
}

int gm_frame_check(const void *frame, size_t len)
{
	uint32_t body_crc;

	return gm_frame_check_crc(frame, len, &body_crc);
}

void gm_ack_body_encode(void *buf, const struct gm_ack_body *a)
{
	struct gm_ack_body w = {.sack = htobe64(a->sack)};

	memcpy(buf, &w, sizeof(w));
}

void gm_ack_body_decode(const void *buf, struct gm_ack_body *a)
{
	struct gm_ack_body w;

	memcpy(&w, buf, sizeof(w));
	a->sack = be64toh(w.sack);
}

void gm_nack_hdr_encode(void *buf, const struct gm_nack_hdr *n)
{
	struct gm_nack_hdr w = {
	    .msg_id = htobe32(n->msg_id),
	    .recv_id = htobe32(n->recv_id),
	    .reason = htobe32(n->reason),
	};
	memcpy(buf, &w, sizeof(w));
}

void gm_nack_hdr_decode(const void *buf, struct gm_nack_hdr *n)
{
	struct gm_nack_hdr w;

	memcpy(&w, buf, sizeof(w));
	n->msg_id = be32toh(w.msg_id);
	n->recv_id = be32toh(w.recv_id);
	n->reason = be32toh(w.reason);
}
