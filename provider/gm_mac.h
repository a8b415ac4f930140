/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Frame authentication with a per-job secret (gm_hdr.tag, gm_wire.h).
 *
 * The MAC is Poly1305 (OpenSSL's libcrypto) under a one-time key per
 * transmitted frame: the 32 bytes AES-128_K(B0) || AES-128_K(B1), where K is
 * derived from the secret and
 *
 *   Bj = source MAC (6) | gm_hdr.src_port (2, big-endian) | nonce * 2 + j (8, big-endian)
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
 * gm_rel.c).  Nonces of 2^63 and above are refused: B would wrap.
 *
 * Why this construction: measured per frame on this machine (copy + MAC,
 * tools/gm-macbench), Poly1305 with AES-NI-derived keys costs 0.31 / 0.77 /
 * 8.8 us at 1500 / 9000 / 65000 bytes, AES-GMAC 0.33 / 1.09 / 7.1 us,
 * SipHash 0.48 / 2.6 / 18 us, against 0.10 / 0.57 / 3.9 us for today's fused
 * copy + CRC-32C.  Poly1305 is the cheapest at the common MTUs, and a
 * repeated nonce would expose only that one frame's key, where a repeated
 * GCM IV gives away the hash key for every frame.
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

struct gm_mac;

/* -FI_EINVAL for a secret outside [GM_SECRET_MIN, GM_SECRET_MAX] bytes. */
int gm_mac_create(const void *secret, size_t len, struct gm_mac **out);
void gm_mac_destroy(struct gm_mac *mac);
uint32_t gm_mac_key_id(const struct gm_mac *mac);
/*
 * frame: an encoded frame from the Ethernet header on, len bytes (Ethernet
 * header + struct gm_hdr + body), its nonce already set.  Seal fills in
 * gm_hdr.tag; check returns GM_WIRE_OK or GM_WIRE_EMAC.
 */
void gm_mac_seal(struct gm_mac *mac, void *frame, size_t len);
int gm_mac_check(struct gm_mac *mac, const void *frame, size_t len);

#endif /* GM_MAC_H */
