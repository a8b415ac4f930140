/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Benchmark, not a test: per-frame cost of authenticating a frame as it is
 * built, at 104 (an 8-byte message) / 1500 / 9000 / 65000 bytes.  Today's
 * fused copy + CRC-32C (gm_crc32c_copy) against a copy followed by gamma's
 * MAC (gm_mac_seal: libsodium's SipHash up to GM_MAC_SIP_MAX bytes,
 * Poly1305 under AES-derived one-time keys above) and by the candidates it
 * was chosen over (AES-128-GMAC, SipHash-2-4-128, and ChaCha20-Poly1305 with
 * the frame as associated data), all from OpenSSL's libcrypto: the siphash
 * column shows what OpenSSL's EVP calls add to SipHash itself.
 * Times are this thread's CPU time (a shared machine deschedules it), the
 * best of three runs of each; about three seconds in all.
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>

#include "gm_mac.h"
#include "gm_wire.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static uint8_t src[65536], dst[65536 + 128], key[32], tag[16];

/* Copy the body into the frame, then an AEAD's tag over the frame as
 * associated data only (AES-GMAC, ChaCha20-Poly1305), nonce i. */
static void aead_tag(EVP_CIPHER_CTX *c, int i, size_t hl, size_t body, size_t flen)
{
	uint8_t iv[12] = {0};
	int ol;

	memcpy(iv, &i, sizeof(i));
	memcpy(dst + hl, src, body);
	EVP_EncryptInit_ex(c, NULL, NULL, NULL, iv);
	EVP_EncryptUpdate(c, NULL, &ol, dst, (int)flen);
	EVP_EncryptFinal_ex(c, tag, &ol);
	EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16, tag);
}

int main(void)
{
	/* 104: the frame of an 8-byte eager message (header, message header, data). */
	static const size_t sizes[] = {104, 1500, 9000, 65000};
	const size_t hl = GM_ETH_HLEN + sizeof(struct gm_hdr);
	EVP_CIPHER_CTX *gcm = EVP_CIPHER_CTX_new(), *ccp = EVP_CIPHER_CTX_new();
	EVP_MAC *sipm = EVP_MAC_fetch(NULL, "SIPHASH", NULL);
	EVP_MAC_CTX *sip = sipm ? EVP_MAC_CTX_new(sipm) : NULL;
	size_t sz = 16;
	OSSL_PARAM sp[] = {OSSL_PARAM_size_t(OSSL_MAC_PARAM_SIZE, &sz), OSSL_PARAM_END};
	struct gm_mac *mac;
	volatile uint32_t sink = 0;

	memset(src, 7, sizeof(src));
	memset(key, 3, sizeof(key));
	if (!gcm || !ccp || !sip || gm_mac_create(key, sizeof(key), &mac) ||
	    !EVP_EncryptInit_ex(ccp, EVP_chacha20_poly1305(), NULL, key, NULL) ||
	    !EVP_EncryptInit_ex(gcm, EVP_aes_128_gcm(), NULL, NULL, NULL) ||
	    !EVP_CIPHER_CTX_ctrl(gcm, EVP_CTRL_GCM_SET_IVLEN, 12, NULL) ||
	    !EVP_EncryptInit_ex(gcm, NULL, NULL, key, NULL) || !EVP_MAC_init(sip, key, 16, sp)) {
		fprintf(stderr, "gm-macbench: libcrypto set-up failed\n");
		return 1;
	}
	printf("per frame, us    copy+crc32c  copy+gm_mac            copy+aes-gmac  copy+siphash  "
	       "copy+chacha20-poly1305\n");
	for (unsigned si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		size_t n = sizes[si], body = n - sizeof(struct gm_hdr);
		int it = (int)(50e6 / n);
		double t[5], best[5] = {1e9, 1e9, 1e9, 1e9, 1e9};

		for (int rep = 0; rep < 3; rep++) {

			t[0] = now();
			for (int i = 0; i < it; i++)
				sink += gm_crc32c_copy(0, dst + hl, src, body);
			t[0] = now() - t[0];
			t[1] = now();
			for (int i = 0; i < it; i++) {
				uint64_t nonce = htobe64((uint64_t)i);

				memcpy(dst + hl, src, body);
				memcpy(dst + GM_ETH_HLEN + offsetof(struct gm_hdr, nonce), &nonce,
				       8);
				gm_mac_seal(mac, dst, GM_ETH_HLEN + n);
			}
			t[1] = now() - t[1];
			t[2] = now();
			for (int i = 0; i < it; i++)
				aead_tag(gcm, i, hl, body, GM_ETH_HLEN + n);
			t[2] = now() - t[2];
			t[3] = now();
			for (int i = 0; i < it; i++) {
				size_t tl;

				memcpy(dst + hl, src, body);
				EVP_MAC_init(sip, NULL, 0, NULL);
				EVP_MAC_update(sip, dst, GM_ETH_HLEN + n);
				EVP_MAC_final(sip, tag, &tl, sizeof(tag));
			}
			t[3] = now() - t[3];
			t[4] = now();
			for (int i = 0; i < it; i++)
				aead_tag(ccp, i, hl, body, GM_ETH_HLEN + n);
			t[4] = now() - t[4];
			for (int k = 0; k < 5; k++)
				if (t[k] < best[k])
					best[k] = t[k];
		}
		printf(
		    "%6zu B         %8.3f     %8.3f               %8.3f       %8.3f      %8.3f\n",
		    n, best[0] / it * 1e6, best[1] / it * 1e6, best[2] / it * 1e6,
		    best[3] / it * 1e6, best[4] / it * 1e6);
	}
	gm_mac_destroy(mac);
	EVP_MAC_CTX_free(sip);
	EVP_MAC_free(sipm);
	EVP_CIPHER_CTX_free(gcm);
	EVP_CIPHER_CTX_free(ccp);
	return (int)(sink & 0);
}
