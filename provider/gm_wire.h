/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The gamma wire format: the one place that says what goes on the Ethernet.
 *
 * A gamma frame is an Ethernet II frame of EtherType FI_GAMMA_ETHERTYPE
 * (default 0x88B5, IEEE "local experimental") carrying:
 *
 *   struct ethhdr | struct gm_hdr | type-specific header | payload
 *
 * Every multi-byte field is big-endian on the wire; the codec in gm_wire.c
 * converts to and from host order, so no other file touches byte order.
 * The header is versioned: a frame whose version differs is dropped and
 * counted, never guessed at.
 */
#ifndef GM_WIRE_H
#define GM_WIRE_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * 2: checksum over body, then header.  3: per-port frame nonce, echo of the
 * peer's last nonce (restart proof), and a 16-byte tag field: a MAC with a
 * per-job secret, or the CRC-32C without one.  4: message CRCs (mcrc).
 * 5: chunked pulls striped over rails (gm_cts_hdr: offset, chunk, cts_id,
 * rail), and the mcrc of pulled data chains from its chunk's start.
 * 6: NACK, a sender's refusal of a pull it was asked for (gm_nack_hdr).
 * 7: with a secret, frames of up to GM_MAC_SIP_MAX bytes carry SipHash
 * (gm_mac.h) instead of Poly1305.
 * 8: BUNDLE, several whole small messages to one peer in one frame.
 */
#define GM_WIRE_VERSION      8
#define GM_ETHERTYPE_DEFAULT 0x88B5
#define GM_ETH_HLEN          14

/* Frame types.  Sequenced types travel through the reliable channel. */
enum gm_ftype {
	GM_FT_ACK = 1,   /* unsequenced: cumulative ack + selective bitmap */
	GM_FT_EAGER = 2, /* whole message in one frame: gm_msg_hdr + data */
	GM_FT_START = 3, /* first fragment of a medium message: gm_msg_hdr + data */
	GM_FT_FRAG = 4,  /* further fragment: gm_frag_hdr + data */
	GM_FT_RTS = 5,   /* rendezvous request: gm_msg_hdr, no data */
	GM_FT_CTS = 6,   /* receiver pulls a rendezvous message: gm_cts_hdr */
	GM_FT_RDATA = 7, /* pulled data: gm_frag_hdr (id = receiver's) + data */
	GM_FT_PING = 8,  /* keepalive probe: no body; acked, never delivered */
	GM_FT_VOID = 9,  /* frames moved to another rail: gm_void_hdr; acked, never delivered */
	GM_FT_NACK = 10, /* the sender will not serve a pull it was asked for: gm_nack_hdr */
	/* Whole messages, each an EAGER body (gm_msg_hdr + msg_len bytes of
	 * data), back to back: a burst of small sends to one peer in one frame.
	 * One sequence number, so one acknowledgement, for them all. */
	GM_FT_BUNDLE = 11,
	GM_FT_MAX
};

/* gm_hdr.flags */
#define GM_F_SEQ 0x01 /* seq is meaningful: the frame must be acked */
#define GM_F_ACK 0x02 /* ack is meaningful (piggy-backed cumulative ack) */
#define GM_F_LOW 0x04 /* low traffic class (local job); clear = high */
/* Ack at once, not after ACK_DELAY_US: the last frame of a send whose
 * completion waits for its acknowledgement (gm_peer_ack_now).  Receivers
 * that do not know it ack it later, which is only slower. */
#define GM_F_ACKNOW 0x08

/*
 * Base header, present in every frame.  60 bytes.
 *
 * tag authenticates the frame.  A port with a secret (>= 16 bytes of
 * auth_key) puts a MAC there (gm_mac.h: SipHash or Poly1305): it covers the Ethernet
 * header (both addresses and the EtherType), struct gm_hdr up to tag, and
 * the body.  A port without one (a 4-byte auth_key or none) puts the CRC-32C
 * of body then header (tag zeroed) in tag[0..3], the rest zero: that catches
 * corruption and isolates jobs by key, but anyone on the segment can forge it.
 */
struct gm_hdr {
	uint8_t version;   /* GM_WIRE_VERSION */
	uint8_t type;      /* enum gm_ftype */
	uint8_t flags;     /* GM_F_* */
	uint8_t rsvd;      /* zero on send, ignored on receive */
	uint16_t dst_port; /* receiving endpoint's port */
	uint16_t src_port; /* sending endpoint's port */
	uint32_t key;      /* 4-byte job key, or the secret's key id (gm_mac.h); 0: none */
	uint32_t session;  /* sender endpoint incarnation, random per open */
	uint32_t seq;      /* sequence number of this frame (GM_F_SEQ) */
	uint32_t ack;      /* next sequence number expected from the peer */
	uint16_t len;      /* bytes after struct gm_hdr (type header + payload) */
	uint16_t wnd;      /* receiver's free window, in frames */
	uint64_t nonce;    /* sender port's transmission counter: new on every
	                      frame sent, retransmissions included; < 2^63 */
	uint64_t echo;     /* highest nonce received from the destination (0: none) */
	uint8_t tag[16];   /* MAC or CRC-32C, see above */
} __attribute__((packed));

#define GM_HDR_TAG_OFF 44 /* offsetof(struct gm_hdr, tag) */
#define GM_TAG_LEN     16

/*
 * mcrc, in EAGER, START, FRAG and RDATA frames: CRC-32C (gm_crc32c chain
 * from 0) of the message's bytes from offset 0 (RDATA: from the offset of
 * the CTS chunk it answers) through the end of this frame's payload, as
 * the sender read them from the user's buffer.  The
 * receiver recomputes it while placing the payload and fails the message
 * (FI_EIO) on a mismatch: a reassembly error (a frame placed at the wrong
 * offset, or twice, or skipped) becomes an error, never wrong data.  The
 * frame checksum in gm_hdr guards only each frame on the wire.
 */

/* First (or only) frame of a message: EAGER, START, RTS.  36 bytes. */
struct gm_msg_hdr {
	uint32_t msg_id;  /* sender's message id: +1 per message to a peer, so that a
	                     receiver drops one it already had (moved between rails) */
	uint32_t mflags;  /* GM_M_* */
	uint64_t tag;     /* tagged messages only */
	uint64_t data;    /* remote CQ data (GM_M_DATA) */
	uint64_t msg_len; /* total message length */
	uint32_t mcrc;    /* message CRC through this payload (RTS: 0) */
} __attribute__((packed));

#define GM_M_TAGGED 0x1 /* matched against tagged receives */
#define GM_M_DATA   0x2 /* data carries remote CQ data */

/* FRAG and RDATA: where this piece of payload lands.  16 bytes. */
struct gm_frag_hdr {
	uint32_t msg_id; /* FRAG: sender's id; RDATA: receiver's id from CTS */
	uint64_t offset; /* byte offset of this payload in the message */
	uint32_t mcrc;   /* message CRC through this payload */
} __attribute__((packed));

/*
 * CTS: the receiver matched an RTS and pulls len bytes of it, either in one
 * piece (chunk 0: the whole pull, on the sender's lead rail) or in chunks,
 * one CTS each, [offset, offset + chunk) with offset + chunk <= len, whose
 * RDATA goes on rail (a multi-rail receiver striping a large message; the
 * sender takes its lead rail instead when that rail is dead to it).  Every
 * chunk of a pull names the same len.  cts_id: +1 per CTS a receiver sends
 * to a peer, so that a sender drops one it already had (moved between
 * rails).  40 bytes.
 */
struct gm_cts_hdr {
	uint32_t msg_id;  /* sender's id from the RTS */
	uint32_t recv_id; /* receiver's id, echoed in RDATA frames */
	uint64_t len;     /* bytes pulled in all (<= msg_len: truncation) */
	uint64_t offset;  /* this chunk's first byte (chunk 0: 0) */
	uint64_t chunk;   /* this chunk's length; 0: the whole pull */
	uint32_t cts_id;  /* receiver's CTS id */
	uint8_t rail;     /* rail the chunk's RDATA goes on (0 .. rails - 1) */
	uint8_t rsvd[3];  /* zero on send, ignored on receive */
} __attribute__((packed));

/*
 * VOID: the sender moved this frame, and every other one from its seq up
 * to (not including) end, to another rail (gm_peer_reclaim, gm_net.h).
 * The receiver skips that range, whatever of it it holds or still gets;
 * what it already delivered the message protocol recognises when it comes
 * again on the other rail.  Only multi-rail endpoints send it; a receiver
 * that predates it drops it as an unknown type, and never has rails.
 * 4 bytes.
 */
struct gm_void_hdr {
	uint32_t end;
} __attribute__((packed));

/*
 * NACK: the sender of message msg_id, asked by a CTS to send it to the
 * receive recv_id, will not send (the rest of) it: it had no memory to
 * serve the pull, the rail it was sending on failed, or its endpoint is
 * closing.  reason is the sender's fabric errno (positive), for the
 * receiver's log.  The receiver fails that receive (FI_EREMOTEIO) instead
 * of waiting as long as the sender answers; a NACK that names no pull of
 * the sending peer (both ids must agree) is dropped.  Sequenced, on the
 * lead rail: it comes after every RDATA the sender sent there.  12 bytes.
 */
struct gm_nack_hdr {
	uint32_t msg_id;  /* the sender's id, from the RTS */
	uint32_t recv_id; /* the receiver's id, from the CTS */
	uint32_t reason;  /* FI_ENOMEM, FI_EIO, FI_ESHUTDOWN, ... */
} __attribute__((packed));

/* ACK payload: bit i set = frame (ack + 1 + i) received out of order. */
struct gm_ack_body {
	uint64_t sack;
} __attribute__((packed));

_Static_assert(sizeof(struct gm_hdr) == 60, "gm_hdr is 60 bytes");
_Static_assert(offsetof(struct gm_hdr, tag) == GM_HDR_TAG_OFF, "tag offset");
_Static_assert(sizeof(struct gm_msg_hdr) == 36, "gm_msg_hdr is 36 bytes");
_Static_assert(sizeof(struct gm_frag_hdr) == 16, "gm_frag_hdr is 16 bytes");
_Static_assert(sizeof(struct gm_cts_hdr) == 40, "gm_cts_hdr is 40 bytes");
_Static_assert(sizeof(struct gm_void_hdr) == 4, "gm_void_hdr is 4 bytes");
_Static_assert(sizeof(struct gm_nack_hdr) == 12, "gm_nack_hdr is 12 bytes");

/* Size of the type-specific header for each frame type (0 if unknown). */
size_t gm_wire_type_hlen(uint8_t type);

/*
 * Host-order codecs.  gm_*_encode writes a wire-order copy into buf;
 * gm_*_decode reads one.  gm_hdr_decode validates what the base header can
 * say about itself (version, type, len against the frame size) and returns
 * 0 or a negative GM_WIRE_E* reason; it does not check the checksum.
 */
enum {
	GM_WIRE_OK = 0,
	GM_WIRE_ESHORT = -1,   /* frame shorter than the headers it claims */
	GM_WIRE_EVERSION = -2, /* unknown version */
	GM_WIRE_ETYPE = -3,    /* unknown frame type */
	GM_WIRE_ELEN = -4,     /* len field disagrees with the frame */
	GM_WIRE_ECSUM = -5,    /* checksum mismatch */
	GM_WIRE_EMAC = -6,     /* MAC mismatch (wrong secret, forged or corrupt) */
};

void gm_hdr_encode(void *buf, const struct gm_hdr *h);
int gm_hdr_decode(const void *frame, size_t frame_len, struct gm_hdr *h);
void gm_ack_body_encode(void *buf, const struct gm_ack_body *a);
void gm_ack_body_decode(const void *buf, struct gm_ack_body *a);

/* The Ethernet header in front of struct gm_hdr (GM_ETH_HLEN bytes). */
static inline void gm_eth_encode(void *frame, const uint8_t dst[6], const uint8_t src[6],
                                 uint16_t ethertype)
{
	uint16_t et = htobe16(ethertype);

	memcpy(frame, dst, 6);
	memcpy((uint8_t *)frame + 6, src, 6);
	memcpy((uint8_t *)frame + 12, &et, 2);
}

/*
 * In-place edits of an encoded struct gm_hdr, for what changes from one
 * transmission of a frame to the next: the piggy-backed ack (which also
 * sets GM_F_ACK), the window, the echo, and the nonce each one gets; and
 * the key, when a peer's changes while its frames are queued.
 * Inline: they run on every frame sent.
 */
static inline void gm_hdr_set_ack(void *hdr, uint32_t ack)
{
	uint32_t v = htobe32(ack);

	((uint8_t *)hdr)[offsetof(struct gm_hdr, flags)] |= GM_F_ACK;
	memcpy((uint8_t *)hdr + offsetof(struct gm_hdr, ack), &v, sizeof(v));
}

static inline void gm_hdr_set_wnd(void *hdr, uint16_t wnd)
{
	uint16_t v = htobe16(wnd);

	memcpy((uint8_t *)hdr + offsetof(struct gm_hdr, wnd), &v, sizeof(v));
}

static inline void gm_hdr_set_echo(void *hdr, uint64_t echo)
{
	uint64_t v = htobe64(echo);

	memcpy((uint8_t *)hdr + offsetof(struct gm_hdr, echo), &v, sizeof(v));
}

static inline void gm_hdr_set_key(void *hdr, uint32_t key)
{
	uint32_t v = htobe32(key);

	memcpy((uint8_t *)hdr + offsetof(struct gm_hdr, key), &v, sizeof(v));
}

static inline void gm_hdr_set_nonce(void *hdr, uint64_t nonce)
{
	uint64_t v = htobe64(nonce);

	memcpy((uint8_t *)hdr + offsetof(struct gm_hdr, nonce), &v, sizeof(v));
}

/*
 * A queued EAGER or BUNDLE frame that took another message before it left
 * (gm_peer_append): a BUNDLE of body_len bytes now.  type reads it back.
 */
static inline uint8_t gm_hdr_type(const void *hdr)
{
	return ((const uint8_t *)hdr)[offsetof(struct gm_hdr, type)];
}

static inline void gm_hdr_set_bundle(void *hdr, uint16_t body_len)
{
	uint16_t v = htobe16(body_len);

	((uint8_t *)hdr)[offsetof(struct gm_hdr, type)] = GM_FT_BUNDLE;
	memcpy((uint8_t *)hdr + offsetof(struct gm_hdr, len), &v, sizeof(v));
}

/*
 * Whether an Ethernet frame of len bytes is a gamma frame of the low class
 * (GM_F_LOW), read before anything is decoded or checked: it only orders
 * delivery, a forged flag gains nothing.
 */
static inline bool gm_frame_is_low(const void *frame, size_t len)
{
	size_t at = GM_ETH_HLEN + offsetof(struct gm_hdr, flags);

	return len > at && (((const uint8_t *)frame)[at] & GM_F_LOW);
}
void gm_msg_hdr_encode(void *buf, const struct gm_msg_hdr *m);
void gm_msg_hdr_decode(const void *buf, struct gm_msg_hdr *m);
void gm_frag_hdr_encode(void *buf, const struct gm_frag_hdr *f);
void gm_frag_hdr_decode(const void *buf, struct gm_frag_hdr *f);
void gm_cts_hdr_encode(void *buf, const struct gm_cts_hdr *c);
void gm_cts_hdr_decode(const void *buf, struct gm_cts_hdr *c);
void gm_void_hdr_encode(void *buf, const struct gm_void_hdr *v);
void gm_void_hdr_decode(const void *buf, struct gm_void_hdr *v);
void gm_nack_hdr_encode(void *buf, const struct gm_nack_hdr *n);
void gm_nack_hdr_decode(const void *buf, struct gm_nack_hdr *n);

/*
 * CRC-32C (Castagnoli), hardware-accelerated where the CPU has it; chains:
 * gm_crc32c(gm_crc32c(0, a), b) is the CRC of a followed by b.
 * gm_crc32c_copy also copies len bytes from src to dst (not overlapping).
 */
uint32_t gm_crc32c(uint32_t crc, const void *buf, size_t len);
uint32_t gm_crc32c_copy(uint32_t crc, void *dst, const void *src, size_t len);
uint32_t gm_crc32c_reference(uint32_t crc, const void *buf, size_t len); /* slow, for tests */
/*
 * CRC-32C is linear in its seed: for any buffer B of len bytes,
 * gm_crc32c(s1, B) ^ gm_crc32c(s2, B) == gm_crc32c_shift(s1 ^ s2, len).
 * So one pass over B yields its CRC under any other seed (the message CRC
 * and the frame checksum of the same payload, gm_peer_send_crc).
 */
uint32_t gm_crc32c_shift(uint32_t v, size_t len);

/*
 * The frame checksum of a port without a secret, gm_hdr.tag[0..3]: CRC-32C
 * (big-endian) of the body (the h.len bytes after struct gm_hdr) followed
 * by struct gm_hdr with tag = 0.  Body first, so that a sender checksums
 * the body once, while copying it in, and sealing (again on every
 * retransmission, since the piggy-backed ack changes) costs only the header
 * bytes: gm_frame_seal_body takes that body CRC (gm_crc32c chain from 0
 * over the body).  gm_frame_check also wants tag[4..15] zero.
 */
void gm_frame_seal_body(void *frame, uint32_t body_crc);
/* Seal an encoded frame (starting at gm_hdr, len bytes) by filling in the CRC. */
void gm_frame_seal(void *frame, size_t len);
/* 0 if the sealed frame's checksum holds, GM_WIRE_ECSUM otherwise. */
int gm_frame_check(const void *frame, size_t len);
/* The same, also giving the body's CRC it computed on the way (gm_rx_frame). */
int gm_frame_check_crc(const void *frame, size_t len, uint32_t *body_crc);

#endif /* GM_WIRE_H */
