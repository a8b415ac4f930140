/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Frame authentication with a per-job secret (gm_hdr.tag, gm_wire.h).
 *
 * Two MACs, chosen by the frame's length, so that neither end has a choice
 * to make or to be talked into: a frame of up to GM_MAC_SIP_MAX bytes
 * (Ethernet header included) carries SipHash-2-4 with a 128-bit output
 * (libsodium's crypto_shorthash_siphashx24) under a key derived from the
 * secret; a longer one carries Poly1305 (OpenSSL's libcrypto) under a
 * one-time key per transmitted frame: the 32 bytes AES-128_K(B0) ||
 * AES-128_K(B1), where K is derived from the secret and
 *
 *   Bj = source MAC (6) | gm_hdr.src_port (2, big-endian) | nonce * 2 + j (8, big-endian)
 *
 * Both cover the frame without its tag: the Ethernet header (both addresses
 * and the EtherType), struct gm_hdr up to tag, and the body.
 *
 * Poly1305 is secure only while a one-time key authenticates one message.
 * Every frame a port sends, retransmissions and acks included, carries a new
 * gm_hdr.nonce (a retransmission changes the piggy-backed ack and window, so
 * it is another message); the counter starts at a random value below 2^62
 * on every port open and only counts up, and the source MAC and port are
 * part of the block, so two senders sharing the job's secret never derive
 * the same key.  The receiver derives the same key from the frame, so it
 * keeps no per-nonce state; replays of whole frames are the reliability
 * engine's business (sequence numbers, sessions, the restart handshake in
 * gm_rel.c).  Nonces of 2^63 and above are refused: B would wrap.  SipHash
 * is a pseudo-random function keyed once: it needs no nonce to stay
 * secure, and the nonce it covers changes its tag like any other field.
 *
 * Why this construction: the cost per frame, copy + MAC (experiments/perf/gm-macbench,
 * thread CPU time, best of three, this 2-core machine, OpenSSL 3.0;
 * 2026-12-06, with the library fed whole 128-byte runs, see gm_mac.c):
 *
 *                  1500 B    9000 B    65000 B
 *   copy+CRC-32C   0.08 us   0.28 us   1.9 us   (without a secret; ISA-L from 4096 B
 *                                                since session 22, gm_crc.c)
 *   copy+Poly1305  0.29 us   0.89 us   5.5 us   (this: AES-derived one-time keys)
 *   copy+AES-GMAC  0.32 us   1.22 us   8.1 us
 *   copy+SipHash   0.55 us   3.0 us    21 us
 *
 * Poly1305 and GMAC cost about the same at 1500 B, Poly1305 less above.
 * What decides as much is the failure mode: a repeated nonce here
 * exposes the one-time key of that frame only, where a repeated GCM IV
 * gives away the hash key, and with it forgeries of every frame.  But
 * Poly1305 through OpenSSL's EVP calls has a fixed cost of about 0.13 us a
 * frame (1,519 instructions at 104 B, callgrind, most of them EVP's), on
 * each end: 40 % of the user-space instructions of an 8-byte round trip.
 * SipHash through libsodium (no EVP layer) costs 0.051 us at 96 B, 0.092
 * at 216 B and 0.185 at 486 B against Poly1305's 0.134, 0.193 and 0.235;
 * above about 550 B Poly1305 is cheaper.  gm-macbench's gm_mac column at
 * 104 B went from 0.168 to 0.050 us with it.
 *
 * The key id (gm_hdr.key) is 32 bits of a separate hash of the secret: it
 * tells frames of another job (counted bad_key) from forged or corrupt ones
 * (bad_mac) and gives away nothing about K.
 */
#ifndef GM_MAC_H
#define GM_MAC_H

#include <stddef.h>
#include <stdint.h>

#define GM_SECRET_MIN 16
#define GM_SECRET_MAX 64
/* Frames of up to this many bytes carry SipHash, longer ones Poly1305. */
#define GM_MAC_SIP_MAX 512

struct gm_mac;

/* -FI_EINVAL for a secret outside [GM_SECRET_MIN, GM_SECRET_MAX] bytes. */
int gm_mac_create(const void *secret, size_t len, struct gm_mac **out);
void gm_mac_destroy(struct gm_mac *mac);
/* Initialise libcrypto now: its exit-time cleanup is registered then. */
void gm_mac_lib_init(void);
uint32_t gm_mac_key_id(const struct gm_mac *mac);
/*
 * frame: an encoded frame from the Ethernet header on, len bytes (Ethernet
 * header + struct gm_hdr + body), its nonce already set.  Seal fills in
 * gm_hdr.tag; check returns GM_WIRE_OK or GM_WIRE_EMAC.
 */
void gm_mac_seal(struct gm_mac *mac, void *frame, size_t len);
/* The same for a frame of len bytes in frame followed by the body pieces more[nmore]. */
struct iovec;
void gm_mac_seal_iov(struct gm_mac *mac, void *frame, size_t len, const struct iovec *more,
                     unsigned nmore);
int gm_mac_check(struct gm_mac *mac, const void *frame, size_t len);

#endif /* GM_MAC_H */
