/* Wire codec: round trips, byte order on the wire, rejection of bad headers. */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/uio.h>

#include <openssl/evp.h>
#include <rdma/fi_errno.h>

#include "gm_mac.h"
#include "gm_wire.h"

static struct gm_hdr sample_hdr(void)
{
	return (struct gm_hdr){
	    .version = GM_WIRE_VERSION,
	    .type = GM_FT_EAGER,
	    .flags = GM_F_SEQ | GM_F_ACK,
	    .dst_port = 0x1234,
	    .src_port = 0xBEEF,
	    .key = 0xA1B2C3D4,
	    .session = 77,
	    .seq = 0xFFFFFFFE,
	    .ack = 5,
	    .len = sizeof(struct gm_msg_hdr) + 3,
	    .wnd = 200,
	    .nonce = 0x0102030405060708ull,
	    .echo = 0x1112131415161718ull,
	    .tag = {0xEE},
	};
}

Test(wire, hdr_round_trip_and_big_endian)
{
	uint8_t buf[sizeof(struct gm_hdr) + sizeof(struct gm_msg_hdr) + 3] = {0};
	struct gm_hdr h = sample_hdr(), d;

	gm_hdr_encode(buf, &h);
	cr_assert_eq(buf[4], 0x12);
	cr_assert_eq(buf[5], 0x34);
	cr_assert_eq(buf[8], 0xA1);
	cr_assert_eq(gm_hdr_decode(buf, sizeof(buf), &d), GM_WIRE_OK);
	cr_assert_eq(d.dst_port, h.dst_port);
	cr_assert_eq(d.src_port, h.src_port);
	cr_assert_eq(d.key, h.key);
	cr_assert_eq(d.session, h.session);
	cr_assert_eq(d.seq, h.seq);
	cr_assert_eq(d.ack, h.ack);
	cr_assert_eq(d.len, h.len);
	cr_assert_eq(d.wnd, h.wnd);
	cr_assert_eq(d.flags, h.flags);
	cr_assert_eq(d.nonce, h.nonce);
	cr_assert_eq(d.echo, h.echo);
	cr_assert_eq(memcmp(d.tag, h.tag, GM_TAG_LEN), 0);
	cr_assert_eq(buf[offsetof(struct gm_hdr, nonce)], 0x01);
}

/* What gm_rel rewrites between transmissions, in place; nothing else moves. */
Test(wire, hdr_in_place_edits)
{
	uint8_t buf[sizeof(struct gm_hdr) + sizeof(struct gm_msg_hdr) + 3] = {0}, was[sizeof(buf)];
	struct gm_hdr h = sample_hdr(), d;

	h.flags = GM_F_SEQ;
	gm_hdr_encode(buf, &h);
	memcpy(was, buf, sizeof(buf));
	gm_hdr_set_ack(buf, 0xCAFEF00D);
	gm_hdr_set_wnd(buf, 0x0A0B);
	gm_hdr_set_echo(buf, 0x2122232425262728ull);
	gm_hdr_set_nonce(buf, 0x3132333435363738ull);
	cr_assert_eq(buf[offsetof(struct gm_hdr, ack)], 0xCA);
	cr_assert_eq(buf[offsetof(struct gm_hdr, wnd)], 0x0A);
	cr_assert_eq(buf[offsetof(struct gm_hdr, echo)], 0x21);
	cr_assert_eq(buf[offsetof(struct gm_hdr, nonce)], 0x31);
	cr_assert_eq(gm_hdr_decode(buf, sizeof(buf), &d), GM_WIRE_OK);
	cr_assert_eq(d.flags, GM_F_SEQ | GM_F_ACK);
	cr_assert_eq(d.ack, 0xCAFEF00D);
	cr_assert_eq(d.wnd, 0x0A0B);
	cr_assert_eq(d.echo, 0x2122232425262728ull);
	cr_assert_eq(d.nonce, 0x3132333435363738ull);
	/* Everything else, byte for byte. */
	d.flags = h.flags;
	d.ack = h.ack;
	d.wnd = h.wnd;
	d.echo = h.echo;
	d.nonce = h.nonce;
	gm_hdr_encode(buf, &d);
	cr_assert_eq(memcmp(buf, was, sizeof(buf)), 0);
}

Test(wire, ack_body_and_eth_header)
{
	static const uint8_t dst[6] = {1, 2, 3, 4, 5, 6}, src[6] = {7, 8, 9, 10, 11, 12};
	uint8_t f[GM_ETH_HLEN + sizeof(struct gm_hdr)] = {0};
	struct gm_ack_body a = {.sack = 0x8000000000000003ull}, d;
	uint8_t b[sizeof(a)];

	gm_ack_body_encode(b, &a);
	cr_assert_eq(b[0], 0x80);
	cr_assert_eq(b[7], 0x03);
	gm_ack_body_decode(b, &d);
	cr_assert_eq(d.sack, a.sack);

	gm_eth_encode(f, dst, src, 0x88B5);
	cr_assert_eq(memcmp(f, dst, 6), 0);
	cr_assert_eq(memcmp(f + 6, src, 6), 0);
	cr_assert_eq(f[12], 0x88);
	cr_assert_eq(f[13], 0xB5);
	cr_assert_not(gm_frame_is_low(f, sizeof(f)));
	f[GM_ETH_HLEN + offsetof(struct gm_hdr, flags)] = GM_F_SEQ | GM_F_LOW;
	cr_assert(gm_frame_is_low(f, sizeof(f)));
	/* Too short to hold the flags: not low, and nothing read past len. */
	cr_assert_not(gm_frame_is_low(f, GM_ETH_HLEN + offsetof(struct gm_hdr, flags)));
}

Test(wire, msg_frag_cts_round_trip)
{
	uint8_t buf[64];
	struct gm_msg_hdr m = {7,
	                       GM_M_TAGGED | GM_M_DATA,
	                       0x8000000000000001ull,
	                       42,
	                       1ull << 33,
	                       0xCAFEF00D},
	                  m2;
	struct gm_frag_hdr f = {9, 0x123456789ull, 0x80000001}, f2;
	struct gm_cts_hdr c = {1, 2, 3, 1ull << 34, 262144, 0xA0B0C0D0, 1, {0}}, c2;

	gm_msg_hdr_encode(buf, &m);
	gm_msg_hdr_decode(buf, &m2);
	cr_assert(!memcmp(&m, &m2, sizeof(m)));
	/* Big-endian on the wire, mcrc last. */
	cr_assert_eq(buf[32], 0xCA);
	cr_assert_eq(buf[35], 0x0D);
	gm_frag_hdr_encode(buf, &f);
	gm_frag_hdr_decode(buf, &f2);
	cr_assert(!memcmp(&f, &f2, sizeof(f)));
	cr_assert_eq(buf[12], 0x80);
	cr_assert_eq(buf[15], 0x01);
	gm_cts_hdr_encode(buf, &c);
	gm_cts_hdr_decode(buf, &c2);
	cr_assert(!memcmp(&c, &c2, sizeof(c)));
	/* The chunk's offset and length follow the pull's length, then cts_id and rail. */
	cr_assert_eq(buf[19], 0x04);
	cr_assert_eq(buf[29], 0x04);
	cr_assert_eq(buf[32], 0xA0);
	cr_assert_eq(buf[36], 1);
}

Test(wire, nack_round_trip)
{
	uint8_t buf[sizeof(struct gm_nack_hdr)];
	struct gm_nack_hdr n = {0x01020304, 0xA0B0C0D0, 12}, n2;

	cr_assert_eq(gm_wire_type_hlen(GM_FT_NACK), sizeof(buf));
	gm_nack_hdr_encode(buf, &n);
	gm_nack_hdr_decode(buf, &n2);
	cr_assert(!memcmp(&n, &n2, sizeof(n)));
	/* msg_id, recv_id, reason, big-endian. */
	cr_assert_eq(buf[0], 0x01);
	cr_assert_eq(buf[4], 0xA0);
	cr_assert_eq(buf[11], 12);
}

Test(wire, rejects_malformed_headers)
{
	uint8_t buf[sizeof(struct gm_hdr) + sizeof(struct gm_msg_hdr) + 3] = {0};
	struct gm_hdr h = sample_hdr(), d;

	gm_hdr_encode(buf, &h);
	cr_assert_eq(gm_hdr_decode(buf, sizeof(struct gm_hdr) - 1, &d), GM_WIRE_ESHORT);
	cr_assert_eq(gm_hdr_decode(buf, sizeof(buf) - 1, &d), GM_WIRE_ELEN);

	h.version = GM_WIRE_VERSION + 1;
	gm_hdr_encode(buf, &h);
	cr_assert_eq(gm_hdr_decode(buf, sizeof(buf), &d), GM_WIRE_EVERSION);

	h = sample_hdr();
	h.type = GM_FT_MAX;
	gm_hdr_encode(buf, &h);
	cr_assert_eq(gm_hdr_decode(buf, sizeof(buf), &d), GM_WIRE_ETYPE);
	h.type = 0;
	gm_hdr_encode(buf, &h);
	cr_assert_eq(gm_hdr_decode(buf, sizeof(buf), &d), GM_WIRE_ETYPE);

	/* A CTS too short for its own header. */
	h = sample_hdr();
	h.type = GM_FT_CTS;
	h.len = sizeof(struct gm_cts_hdr) - 1;
	gm_hdr_encode(buf, &h);
	cr_assert_eq(gm_hdr_decode(buf, sizeof(buf), &d), GM_WIRE_ESHORT);
}

Test(wire, crc32c_known_vector)
{
	/* RFC 3720 B.4: CRC-32C of "123456789" is 0xE3069283. */
	cr_assert_eq(gm_crc32c(0, "123456789", 9), 0xE3069283u);
	/* Chaining equals one pass. */
	cr_assert_eq(gm_crc32c(gm_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
}

/*
 * The fast path runs three crc32 chains over blocks of 3 x 256, then
 * 3 x 64 bytes, joins them with carry-less multiplies, and finishes with
 * one chain: every length (each block, 8-byte step and tail boundary), at
 * several alignments and initial values, must give the byte-at-a-time
 * answer.
 */
Test(wire, crc32c_folded_equals_reference)
{
	static uint8_t buf[12000 + 8];
	uint32_t x = 12345;

	for (size_t i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (uint8_t)(x >> 16);
	}
	for (size_t len = 0; len <= 12000; len += len < 3200 ? 1 : 7)
		for (size_t off = 0; off < 8; off += 3) {
			uint32_t seed = (uint32_t)len * 2654435761u;

			cr_assert_eq(gm_crc32c(seed, buf + off, len),
			             gm_crc32c_reference(seed, buf + off, len), "len %zu off %zu",
			             len, off);
		}
	cr_assert_eq(gm_crc32c_reference(0, "123456789", 9), 0xE3069283u);
}

/* One pass under one seed gives the CRC under any other (gm_crc32c_shift). */
Test(wire, crc32c_shift_changes_the_seed)
{
	static uint8_t buf[70000];
	static const size_t lens[] = {0, 1, 7, 64, 1000, 1440, 1000, 8940, 64940, 70000};
	uint32_t x = 99;

	for (size_t i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (uint8_t)(x >> 16);
	}
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint32_t s1 = 0x12345678u * (uint32_t)(i + 1), s2 = ~s1 ^ (uint32_t)lens[i];
		uint32_t c1 = gm_crc32c(s1, buf, lens[i]), c2 = gm_crc32c(s2, buf, lens[i]);

		cr_assert_eq(c1 ^ gm_crc32c_shift(s1 ^ s2, lens[i]), c2, "len %zu", lens[i]);
		cr_assert_eq(c2 ^ gm_crc32c_shift(s1 ^ s2, lens[i]), c1, "len %zu", lens[i]);
		cr_assert_eq(gm_crc32c_shift(0, lens[i]), 0);
	}
	/* "56789" after "1234": the CRC of the whole from the CRC of the tail. */
	cr_assert_eq(gm_crc32c(0, "56789", 5) ^ gm_crc32c_shift(gm_crc32c(0, "1234", 4), 5),
	             0xE3069283u);
}

/* The fused copy: same CRC, every byte copied, nothing written beyond. */
Test(wire, crc32c_copy_copies_exactly)
{
	static uint8_t src[5000], dst[5000 + 64];

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 131 + 7);
	for (size_t len = 0; len <= 4900; len += len < 300 ? 1 : 37)
		for (size_t off = 0; off < 4; off++) {
			memset(dst, 0xA5, sizeof(dst));
			uint32_t c = gm_crc32c_copy(7, dst + off, src + off, len);

			cr_assert_eq(c, gm_crc32c_reference(7, src + off, len), "len %zu", len);
			cr_assert_eq(memcmp(dst + off, src + off, len), 0, "len %zu", len);
			for (size_t i = 0; i < off; i++)
				cr_assert_eq(dst[i], 0xA5);
			for (size_t i = off + len; i < sizeof(dst); i++)
				cr_assert_eq(dst[i], 0xA5, "len %zu: byte %zu written", len, i);
		}
}

Test(wire, seal_detects_every_single_bit_flip)
{
	uint8_t buf[sizeof(struct gm_hdr) + 40];
	struct gm_hdr h = sample_hdr();

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 37 + 11);
	h.len = 40;
	gm_hdr_encode(buf, &h);
	gm_frame_seal(buf, sizeof(buf));
	cr_assert_eq(gm_frame_check(buf, sizeof(buf)), GM_WIRE_OK);
	for (size_t bit = 0; bit < sizeof(buf) * 8; bit++) {
		buf[bit / 8] ^= 1u << (bit % 8);
		cr_assert_eq(gm_frame_check(buf, sizeof(buf)), GM_WIRE_ECSUM, "bit %zu", bit);
		buf[bit / 8] ^= 1u << (bit % 8);
	}
}

/* ---- the MAC (gm_mac.h) ---- */

static const uint8_t SECRET[32] = "0123456789abcdef0123456789abcdef";

/* An Ethernet + gamma frame with a body of blen bytes and the given nonce. */
static size_t mac_frame(uint8_t *f, size_t blen, uint64_t nonce)
{
	struct gm_hdr h = sample_hdr();

	for (size_t i = 0; i < GM_ETH_HLEN + sizeof(h) + blen; i++)
		f[i] = (uint8_t)(i * 29 + 3);
	h.len = (uint16_t)blen;
	h.nonce = nonce;
	h.echo = 99;
	gm_hdr_encode(f + GM_ETH_HLEN, &h);
	return GM_ETH_HLEN + sizeof(h) + blen;
}

Test(wire, mac_accepts_its_seal_and_rejects_every_single_bit_flip)
{
	uint8_t f[GM_ETH_HLEN + sizeof(struct gm_hdr) + 40];
	struct gm_mac *m;
	size_t len = mac_frame(f, 40, 1234);

	cr_assert_eq(gm_mac_create(SECRET, sizeof(SECRET), &m), 0);
	gm_mac_seal(m, f, len);
	cr_assert_eq(gm_mac_check(m, f, len), GM_WIRE_OK);
	/* Ethernet addresses and EtherType, every header field, the tag, the body. */
	for (size_t bit = 0; bit < len * 8; bit++) {
		f[bit / 8] ^= 1u << (bit % 8);
		cr_assert_eq(gm_mac_check(m, f, len), GM_WIRE_EMAC, "bit %zu", bit);
		f[bit / 8] ^= 1u << (bit % 8);
	}
	cr_assert_eq(gm_mac_check(m, f, len - 1), GM_WIRE_EMAC);
	cr_assert_eq(gm_mac_check(m, f, GM_ETH_HLEN + sizeof(struct gm_hdr) - 1), GM_WIRE_EMAC);
	gm_mac_destroy(m);
}

Test(wire, mac_needs_the_same_secret)
{
	uint8_t f[GM_ETH_HLEN + sizeof(struct gm_hdr) + 100], other[32];
	struct gm_mac *a, *a2, *b;
	size_t len = mac_frame(f, 100, 7);

	memcpy(other, SECRET, sizeof(other));
	other[31] ^= 1;
	cr_assert_eq(gm_mac_create(SECRET, sizeof(SECRET), &a), 0);
	cr_assert_eq(gm_mac_create(SECRET, sizeof(SECRET), &a2), 0);
	cr_assert_eq(gm_mac_create(other, sizeof(other), &b), 0);
	cr_assert_eq(gm_mac_key_id(a), gm_mac_key_id(a2));
	cr_assert_neq(gm_mac_key_id(a), gm_mac_key_id(b));
	gm_mac_seal(a, f, len);
	cr_assert_eq(gm_mac_check(a2, f, len), GM_WIRE_OK, "another process with the secret");
	cr_assert_eq(gm_mac_check(b, f, len), GM_WIRE_EMAC);
	/* A CRC-sealed frame is not a MAC-sealed one. */
	gm_frame_seal(f + GM_ETH_HLEN, len - GM_ETH_HLEN);
	cr_assert_eq(gm_mac_check(a, f, len), GM_WIRE_EMAC);
	gm_mac_destroy(a);
	gm_mac_destroy(a2);
	gm_mac_destroy(b);
}

Test(wire, mac_one_time_keys_differ_per_nonce_and_sender)
{
	uint8_t f[GM_ETH_HLEN + sizeof(struct gm_hdr) + 64], t1[GM_TAG_LEN];
	uint8_t *tag = f + GM_ETH_HLEN + GM_HDR_TAG_OFF;
	struct gm_mac *m;
	size_t len = mac_frame(f, 64, 1);

	cr_assert_eq(gm_mac_create(SECRET, sizeof(SECRET), &m), 0);
	gm_mac_seal(m, f, len);
	memcpy(t1, tag, sizeof(t1));
	/* Same bytes but the nonce: a retransmission must not reuse a key. */
	mac_frame(f, 64, 2);
	gm_mac_seal(m, f, len);
	cr_assert_neq(memcmp(t1, tag, sizeof(t1)), 0);
	/* Nonces of 2^63 and above are never accepted. */
	mac_frame(f, 64, 1ull << 63);
	gm_mac_seal(m, f, len);
	cr_assert_eq(gm_mac_check(m, f, len), GM_WIRE_EMAC);
	gm_mac_destroy(m);
}

/*
 * Frames on both sides of GM_MAC_SIP_MAX (SipHash up to it, Poly1305 above):
 * each verifies, fails with any of its parts changed, and seals the same
 * whether its body comes in one piece or in several (zero-copy sends).
 */
Test(wire, mac_covers_frames_on_both_sides_of_the_siphash_limit)
{
	static uint8_t f[9000], g[9000];
	const size_t hl = GM_ETH_HLEN + sizeof(struct gm_hdr);
	const size_t sizes[] = {
	    hl, hl + 1, GM_MAC_SIP_MAX - 1, GM_MAC_SIP_MAX, GM_MAC_SIP_MAX + 1, 1514, 9000};
	uint8_t *tag = f + GM_ETH_HLEN + GM_HDR_TAG_OFF, t1[GM_TAG_LEN];
	struct gm_mac *m;

	cr_assert_eq(gm_mac_create(SECRET, sizeof(SECRET), &m), 0);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len = mac_frame(f, sizes[i] - hl, 5), cut = hl + (len - hl) / 3;
		const size_t probes[] = {0, 12, GM_ETH_HLEN + 1, GM_ETH_HLEN + GM_HDR_TAG_OFF,
		                         len - 1};

		gm_mac_seal(m, f, len);
		cr_assert_eq(gm_mac_check(m, f, len), GM_WIRE_OK, "%zu B", len);
		for (size_t p = 0; p < sizeof(probes) / sizeof(probes[0]); p++) {
			f[probes[p]] ^= 0x10;
			cr_assert_eq(gm_mac_check(m, f, len), GM_WIRE_EMAC, "%zu B, byte %zu", len,
			             probes[p]);
			f[probes[p]] ^= 0x10;
		}
		cr_assert_eq(gm_mac_check(m, f, len - 1), GM_WIRE_EMAC, "%zu B, one short", len);
		/* The same frame with its body gathered from two pieces. */
		memcpy(t1, tag, sizeof(t1));
		memcpy(g, f + cut, len - cut);
		memset(tag, 0, GM_TAG_LEN);
		gm_mac_seal_iov(
		    m, f, cut,
		    (struct iovec[]){{g, (len - cut) / 2},
		                     {g + (len - cut) / 2, len - cut - (len - cut) / 2}},
		    2);
		cr_assert_eq(memcmp(t1, tag, sizeof(t1)), 0, "%zu B sealed in pieces", len);
	}
	gm_mac_destroy(m);
}

/*
 * gm_mac.h's construction, computed here in one piece, against gm_mac's
 * Poly1305 tags: the library sees each frame in pieces of its own choosing
 * (whole 128-byte runs, then the rest), which must not change the tag.
 */
static void reference_poly_tag(const uint8_t *f, size_t len, uint8_t tag[GM_TAG_LEN])
{
	const size_t hl = GM_ETH_HLEN + sizeof(struct gm_hdr), cov = GM_ETH_HLEN + GM_HDR_TAG_OFF;
	static const char label[] = "gamma frame MAC key v1";
	static uint8_t in[9000];
	uint8_t k[32], blk[32], otk[32];
	uint64_t nonce;
	unsigned n = 0;
	size_t tl = 0;
	int ol = 0;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	EVP_CIPHER_CTX *aes = EVP_CIPHER_CTX_new();
	EVP_MAC *poly = EVP_MAC_fetch(NULL, "POLY1305", NULL);
	EVP_MAC_CTX *pc = poly ? EVP_MAC_CTX_new(poly) : NULL;

	cr_assert(md && aes && pc);
	cr_assert(EVP_DigestInit_ex(md, EVP_sha256(), NULL) &&
	          EVP_DigestUpdate(md, label, strlen(label)) &&
	          EVP_DigestUpdate(md, SECRET, sizeof(SECRET)) && EVP_DigestFinal_ex(md, k, &n));
	memcpy(&nonce, f + GM_ETH_HLEN + offsetof(struct gm_hdr, nonce), 8);
	nonce = be64toh(nonce);
	for (int j = 0; j < 2; j++) {
		uint64_t b = htobe64(nonce * 2 + (uint64_t)j);

		memcpy(blk + 16 * j, f + 6, 6);
		memcpy(blk + 16 * j + 6, f + GM_ETH_HLEN + offsetof(struct gm_hdr, src_port), 2);
		memcpy(blk + 16 * j + 8, &b, 8);
	}
	cr_assert(EVP_EncryptInit_ex(aes, EVP_aes_128_ecb(), NULL, k, NULL) &&
	          EVP_CIPHER_CTX_set_padding(aes, 0) &&
	          EVP_EncryptUpdate(aes, otk, &ol, blk, sizeof(blk)) && ol == sizeof(otk));
	memcpy(in, f, cov);
	memcpy(in + cov, f + hl, len - hl);
	cr_assert(EVP_MAC_init(pc, otk, sizeof(otk), NULL) &&
	          EVP_MAC_update(pc, in, cov + len - hl) &&
	          EVP_MAC_final(pc, tag, &tl, GM_TAG_LEN));
	EVP_MAC_CTX_free(pc);
	EVP_MAC_free(poly);
	EVP_CIPHER_CTX_free(aes);
	EVP_MD_CTX_free(md);
}

Test(wire, mac_poly1305_tags_match_the_construction_however_the_frame_is_cut)
{
	static uint8_t f[9000], g[9000];
	const size_t hl = GM_ETH_HLEN + sizeof(struct gm_hdr);
	/* Above the SipHash limit, every residue of 128 the header leaves. */
	const size_t sizes[] = {
	    GM_MAC_SIP_MAX + 1, 600, 639, 640, 641, 700, 1514, 4500, 6000, 9000};
	uint8_t *tag = f + GM_ETH_HLEN + GM_HDR_TAG_OFF, want[GM_TAG_LEN];
	struct gm_mac *m;

	cr_assert_eq(gm_mac_create(SECRET, sizeof(SECRET), &m), 0);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (size_t cut = hl; cut < sizes[i]; cut += 37) {
			size_t len = mac_frame(f, sizes[i] - hl, 1000 + cut), rest = len - cut;

			reference_poly_tag(f, len, want);
			gm_mac_seal(m, f, len);
			cr_assert_eq(memcmp(want, tag, GM_TAG_LEN), 0, "%zu B", len);
			memcpy(g, f + cut, rest);
			memset(tag, 0, GM_TAG_LEN);
			/* (with an empty piece in the middle, as an iovec may have) */
			gm_mac_seal_iov(m, f, cut,
			                (struct iovec[]){{g, rest / 3},
			                                 {NULL, 0},
			                                 {g + rest / 3, rest - rest / 3}},
			                3);
			cr_assert_eq(memcmp(want, tag, GM_TAG_LEN), 0, "%zu B cut at %zu", len,
			             cut);
		}
	}
	gm_mac_destroy(m);
}

Test(wire, mac_secret_length_is_checked)
{
	struct gm_mac *m = NULL;
	uint8_t big[GM_SECRET_MAX + 1] = {1};

	cr_assert_eq(gm_mac_create(SECRET, GM_SECRET_MIN - 1, &m), -FI_EINVAL);
	cr_assert_eq(gm_mac_create(big, sizeof(big), &m), -FI_EINVAL);
	cr_assert_eq(gm_mac_create(NULL, 16, &m), -FI_EINVAL);
	cr_assert_eq(gm_mac_create(big, GM_SECRET_MAX, &m), 0);
	gm_mac_destroy(m);
}
