/* SPDX-License-Identifier: BSD-2-Clause */
/* Frame MACs: SipHash for small frames, Poly1305 under AES-derived one-time keys above (gm_mac.h).
 */
#include "gm_mac.h"
#include "gm_simd.h"

#include <endian.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <rdma/fi_errno.h>
#include <sodium.h>

#include "gm_wire.h"

struct gm_mac {
	EVP_CIPHER_CTX *aes; /* AES-128-ECB under K: one-time keys */
	EVP_MAC_CTX *poly;
	uint8_t sip[crypto_shorthash_siphashx24_KEYBYTES];
	uint32_t key_id;
	bool vzeroupper; /* the CPU has AVX (gm_simd.h) */
};

/* SHA-256(label || secret): labels keep K and the key id independent. */
static int derive(const char *label, const void *secret, size_t len, uint8_t out[32])
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned n = 0;
	int ok;

	ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) &&
	     EVP_DigestUpdate(md, label, strlen(label)) && EVP_DigestUpdate(md, secret, len) &&
	     EVP_DigestFinal_ex(md, out, &n) && n == 32;
	EVP_MD_CTX_free(md);
	return ok ? 0 : -FI_EOTHER;
}

int gm_mac_create(const void *secret, size_t len, struct gm_mac **out)
{
	struct gm_mac *m;
	EVP_MAC *poly;
	uint8_t k[32], id[32], sip[32];
	int rc;

	if (!secret || len < GM_SECRET_MIN || len > GM_SECRET_MAX)
		return -FI_EINVAL;
	if (sodium_init() < 0)
		return -FI_EOTHER;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	rc = derive("gamma frame MAC key v1", secret, len, k);
	if (!rc)
		rc = derive("gamma key id v1", secret, len, id);
	if (!rc)
		rc = derive("gamma small frame MAC key v1", secret, len, sip);
	if (rc)
		goto fail;
	memcpy(m->sip, sip, sizeof(m->sip));
	m->vzeroupper = gm_cpu_has_avx();
	rc = -FI_EOTHER;
	m->aes = EVP_CIPHER_CTX_new();
	if (!m->aes || !EVP_EncryptInit_ex(m->aes, EVP_aes_128_ecb(), NULL, k, NULL) ||
	    !EVP_CIPHER_CTX_set_padding(m->aes, 0))
		goto fail;
	poly = EVP_MAC_fetch(NULL, "POLY1305", NULL);
	m->poly = poly ? EVP_MAC_CTX_new(poly) : NULL;
	EVP_MAC_free(poly);
	if (!m->poly)
		goto fail;
	memcpy(&m->key_id, id, 4);
	m->key_id = be32toh(m->key_id);
	if (!m->key_id)
		m->key_id = 1; /* 0 means "no key" on the wire */
	OPENSSL_cleanse(k, sizeof(k));
	OPENSSL_cleanse(sip, sizeof(sip));
	*out = m;
	return 0;
fail:
	OPENSSL_cleanse(k, sizeof(k));
	OPENSSL_cleanse(sip, sizeof(sip));
	gm_mac_destroy(m);
	return rc;
}

void gm_mac_destroy(struct gm_mac *mac)
{
	if (!mac)
		return;
	EVP_CIPHER_CTX_free(mac->aes);
	EVP_MAC_CTX_free(mac->poly);
	OPENSSL_cleanse(mac->sip, sizeof(mac->sip));
	free(mac);
}

void gm_mac_lib_init(void)
{
	OPENSSL_init_crypto(0, NULL);
}

uint32_t gm_mac_key_id(const struct gm_mac *mac)
{
	return mac->key_id;
}

/*
 * SipHash's input is one buffer: the frame without its tag.  A frame this
 * small is cheaper to gather than to MAC in pieces.
 */
static void sip_tag(const struct gm_mac *m, const uint8_t *f, size_t len, const struct iovec *more,
                    unsigned nmore, uint8_t tag[GM_TAG_LEN])
{
	uint8_t in[GM_MAC_SIP_MAX];
	size_t head = GM_ETH_HLEN + GM_HDR_TAG_OFF, body = GM_ETH_HLEN + sizeof(struct gm_hdr);
	size_t n = len - GM_TAG_LEN;

	memcpy(in, f, head);
	memcpy(in + head, f + body, len - body);
	for (unsigned i = 0; i < nmore; i++) {
		memcpy(in + n, more[i].iov_base, more[i].iov_len);
		n += more[i].iov_len;
	}
	crypto_shorthash_siphashx24(tag, in, n, m->sip);
}

/*
 * OpenSSL 3.0's AVX-512 Poly1305 takes about twice as long over a call
 * whose length is 64 to 127 bytes past a multiple of 128 (6000 B: 0.97 us,
 * 9000 B: 0.78 us here; a 9000-byte frame's body was such a call).  So the
 * frame goes to the library in calls of a multiple of 128 bytes, with only
 * the last one shorter; the short pieces (the header, the tail of each
 * body piece) gather in stash.  The tag does not depend on how the input
 * is cut.
 */
#define POLY_STRIDE 128

struct poly_feed {
	EVP_MAC_CTX *ctx;
	bool ok;
	size_t held; /* bytes in stash */
	uint8_t stash[POLY_STRIDE];
};

static void poly_feed(struct poly_feed *pf, const uint8_t *p, size_t n)
{
	size_t bulk;

	if (!n)
		return;
	if (pf->held) {
		size_t take = n < POLY_STRIDE - pf->held ? n : POLY_STRIDE - pf->held;

		memcpy(pf->stash + pf->held, p, take);
		pf->held += take;
		p += take;
		n -= take;
		if (pf->held < POLY_STRIDE)
			return;
		pf->ok = pf->ok && EVP_MAC_update(pf->ctx, pf->stash, POLY_STRIDE);
		pf->held = 0;
	}
	bulk = n - n % POLY_STRIDE;
	if (bulk)
		pf->ok = pf->ok && EVP_MAC_update(pf->ctx, p, bulk);
	memcpy(pf->stash, p + bulk, n - bulk);
	pf->held = n - bulk;
}

/* Poly1305 under the frame's one-time key, over the frame in pieces. */
static bool poly_tag(struct gm_mac *m, const uint8_t *f, size_t len, uint64_t nonce,
                     const struct iovec *more, unsigned nmore, uint8_t tag[GM_TAG_LEN])
{
	const uint8_t *gm = f + GM_ETH_HLEN;
	struct poly_feed pf = {.ctx = m->poly};
	uint8_t blk[32], otk[32];
	size_t tl = 0;
	int ol = 0;
	bool ok;

	for (int j = 0; j < 2; j++) {
		uint64_t n = htobe64(nonce << 1 | (uint64_t)j);

		memcpy(blk + 16 * j, f + 6, 6);
		memcpy(blk + 16 * j + 6, gm + offsetof(struct gm_hdr, src_port), 2);
		memcpy(blk + 16 * j + 8, &n, 8);
	}
	pf.ok = EVP_EncryptUpdate(m->aes, otk, &ol, blk, sizeof(blk)) && ol == sizeof(otk) &&
	        EVP_MAC_init(m->poly, otk, sizeof(otk), NULL);
	poly_feed(&pf, f, GM_ETH_HLEN + GM_HDR_TAG_OFF);
	poly_feed(&pf, gm + sizeof(struct gm_hdr), len - GM_ETH_HLEN - sizeof(struct gm_hdr));
	for (unsigned i = 0; i < nmore; i++)
		poly_feed(&pf, more[i].iov_base, more[i].iov_len);
	ok = pf.ok && (!pf.held || EVP_MAC_update(m->poly, pf.stash, pf.held)) &&
	     EVP_MAC_final(m->poly, tag, &tl, GM_TAG_LEN) && tl == GM_TAG_LEN;
	/*
	 * OpenSSL 3.0's AVX-512 Poly1305 leaves the vector registers' upper
	 * halves in use (gm_simd.h): NPB MG class A over btl gamma took
	 * 1.21-1.30 s here without this, 0.71-0.88 s with it.  Masking
	 * OpenSSL's AVX-512 code instead gave MG the same time but its AVX2
	 * Poly1305: a 1 MiB MPI message at MTU 65000 took 570-610 us there and
	 * 355-415 us with AVX-512 and this (experiments/perf/README.md).
	 */
	if (m->vzeroupper)
		gm_upper_clear();
	OPENSSL_cleanse(otk, sizeof(otk));
	return ok;
}

/*
 * The tag of frame (len bytes, then the body pieces more[nmore]), or false
 * if its nonce is out of range or libcrypto failed.
 */
static bool compute(struct gm_mac *m, const uint8_t *f, size_t len, const struct iovec *more,
                    unsigned nmore, uint8_t tag[GM_TAG_LEN])
{
	size_t total = len;
	uint64_t nonce;

	memcpy(&nonce, f + GM_ETH_HLEN + offsetof(struct gm_hdr, nonce), 8);
	nonce = be64toh(nonce);
	if (nonce >> 63)
		return false;
	for (unsigned i = 0; i < nmore; i++)
		total += more[i].iov_len;
	if (total <= GM_MAC_SIP_MAX) {
		sip_tag(m, f, len, more, nmore, tag);
		return true;
	}
	return poly_tag(m, f, len, nonce, more, nmore, tag);
}

void gm_mac_seal_iov(struct gm_mac *mac, void *frame, size_t len, const struct iovec *more,
                     unsigned nmore)
{
	uint8_t *tag = (uint8_t *)frame + GM_ETH_HLEN + GM_HDR_TAG_OFF;

	/* A frame that cannot be sealed goes out with a zero tag and is dropped there. */
	if (!compute(mac, frame, len, more, nmore, tag))
		memset(tag, 0, GM_TAG_LEN);
}

void gm_mac_seal(struct gm_mac *mac, void *frame, size_t len)
{
	gm_mac_seal_iov(mac, frame, len, NULL, 0);
}

int gm_mac_check(struct gm_mac *mac, const void *frame, size_t len)
{
	const uint8_t *want = (const uint8_t *)frame + GM_ETH_HLEN + GM_HDR_TAG_OFF;
	uint8_t tag[GM_TAG_LEN];

	if (len < GM_ETH_HLEN + sizeof(struct gm_hdr) || !compute(mac, frame, len, NULL, 0, tag))
		return GM_WIRE_EMAC;
	return CRYPTO_memcmp(tag, want, GM_TAG_LEN) ? GM_WIRE_EMAC : GM_WIRE_OK;
}
