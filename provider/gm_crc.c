/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CRC-32C (Castagnoli), the frame checksum of gm_wire.h.
 *
 * Every byte gamma sends or receives passes through here, so speed matters.
 * The SSE4.2 crc32 instruction alone is bound by its throughput (on the
 * AMD EPYC here about 5 GB/s, less than a copy).  Long buffers are instead
 * folded with carry-less multiplication (PCLMULQDQ): the CRC register
 * (without the pre- and post-inversion) is M(x) * x^32 mod P for message
 * M, so any 128-bit block X that lies D bits before a later block may be
 * replaced, in that later block's slot, by X * x^D reduced below degree
 * 128, without changing the CRC.  Four 128-bit accumulators fold 64 bytes a
 * round; they fold into one, and the crc32 instruction finishes the last
 * 16 bytes and the tail.
 *
 * Bit order: in the reflected convention bit i of a little-endian load is
 * the coefficient of x^(127-i) of its block, and the carry-less product of
 * two such 64-bit values comes out one degree low.  Folding constants are
 * therefore x^(D+63) and x^(D-1) mod P (for the block's first and second
 * 8 bytes), so that the product lands exactly in the later slot.
 */
#include "gm_wire.h"

#include <pthread.h>
#include <string.h>

#define CRC32C_POLY 0x82F63B78u /* reflected */

static uint32_t crc_table[256]; /* software fallback, byte at a time */
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;
static int have_hw, have_clmul;

/* Folding constants {first, second} for distances of 512, 384, 256, 128 bits. */
static uint64_t fold_k[4][2];

static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

/* x^n mod P, as a 64-bit reflected value (bit j: coefficient of x^(63-j)). */
static uint64_t xpow_mod(unsigned n)
{
	uint32_t r = 0x80000000u; /* the polynomial 1 */

	while (n--)
		r = (r >> 1) ^ (CRC32C_POLY & -(r & 1));
	return (uint64_t)r << 32;
}

static void tables_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC32C_POLY & -(c & 1));
		crc_table[i] = c;
	}
	for (int i = 0; i < 4; i++) {
		unsigned d = 512 - 128 * (unsigned)i;

		fold_k[i][0] = xpow_mod(d + 63);
		fold_k[i][1] = xpow_mod(d - 1);
	}
#if defined(__x86_64__)
	have_hw = __builtin_cpu_supports("sse4.2");
	have_clmul = have_hw && __builtin_cpu_supports("pclmul");
#endif
}

#if defined(__x86_64__)
#include <immintrin.h>

#define HW    __attribute__((target("sse4.2")))
#define CLMUL __attribute__((target("sse4.2,pclmul")))

static HW uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc;

	for (; len >= 8; p += 8, len -= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
	}
	crc = (uint32_t)c;
	while (len--)
		crc = __builtin_ia32_crc32qi(crc, *p++);
	return crc;
}

static inline CLMUL __m128i fold(__m128i x, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

static inline CLMUL __m128i kvec(int i)
{
	return _mm_set_epi64x((long long)fold_k[i][1], (long long)fold_k[i][0]);
}

#define LOAD(p)     _mm_loadu_si128((const __m128i *)(p))
#define STORE(p, v) _mm_storeu_si128((__m128i *)(p), v)

/*
 * len >= 64.  With dst, also copies src to dst in the same pass: a sender
 * then reads a user buffer from memory once, not once to copy it and once
 * to checksum it.
 */
static inline __attribute__((always_inline)) CLMUL uint32_t crc_clmul(uint32_t crc, uint8_t *dst,
                                                                      const uint8_t *p, size_t len)
{
	__m128i a0 = LOAD(p), a1 = LOAD(p + 16), a2 = LOAD(p + 32), a3 = LOAD(p + 48);
	const __m128i k512 = kvec(0), k128 = kvec(3);
	uint8_t last[16];

	if (dst) {
		memcpy(dst, p, 64);
		dst += 64;
	}
	/* Starting from register c equals starting from 0 with c xored into
	 * the first four bytes. */
	a0 = _mm_xor_si128(a0, _mm_cvtsi32_si128((int)crc));
	p += 64;
	len -= 64;
	for (; len >= 64; p += 64, len -= 64) {
		__m128i b0 = LOAD(p), b1 = LOAD(p + 16), b2 = LOAD(p + 32), b3 = LOAD(p + 48);

		if (dst) {
			STORE(dst, b0);
			STORE(dst + 16, b1);
			STORE(dst + 32, b2);
			STORE(dst + 48, b3);
			dst += 64;
		}
		a0 = _mm_xor_si128(fold(a0, k512), b0);
		a1 = _mm_xor_si128(fold(a1, k512), b1);
		a2 = _mm_xor_si128(fold(a2, k512), b2);
		a3 = _mm_xor_si128(fold(a3, k512), b3);
	}
	a3 = _mm_xor_si128(a3, fold(a0, kvec(1)));
	a3 = _mm_xor_si128(a3, fold(a1, kvec(2)));
	a3 = _mm_xor_si128(a3, fold(a2, k128));
	for (; len >= 16; p += 16, len -= 16) {
		__m128i b = LOAD(p);

		if (dst) {
			STORE(dst, b);
			dst += 16;
		}
		a3 = _mm_xor_si128(fold(a3, k128), b);
	}
	if (dst)
		memcpy(dst, p, len);
	_mm_storeu_si128((__m128i *)last, a3);
	return crc_hw(crc_hw(0, last, sizeof(last)), p, len);
}

static CLMUL uint32_t crc_clmul_only(uint32_t crc, const uint8_t *p, size_t len)
{
	return crc_clmul(crc, NULL, p, len);
}

static CLMUL uint32_t crc_clmul_copy(uint32_t crc, uint8_t *dst, const uint8_t *p, size_t len)
{
	return crc_clmul(crc, dst, p, len);
}
#endif

uint32_t gm_crc32c(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&tables_once, tables_init);
	crc = ~crc;
#if defined(__x86_64__)
	if (have_clmul && len >= 64)
		return ~crc_clmul_only(crc, buf, len);
	if (have_hw)
		return ~crc_hw(crc, buf, len);
#endif
	return ~crc_sw(crc, buf, len);
}

uint32_t gm_crc32c_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
	pthread_once(&tables_once, tables_init);
#if defined(__x86_64__)
	if (have_clmul && len >= 64)
		return ~crc_clmul_copy(~crc, dst, src, len);
#endif
	if (len)
		memcpy(dst, src, len);
	return gm_crc32c(crc, dst, len);
}

/*
 * a * b mod P, both reflected (bit 31: coefficient of x^0).  Branch-free:
 * it runs once per frame sent or received, with data-dependent bits.
 */
static uint32_t mulmod_sw(uint32_t a, uint32_t b)
{
	uint32_t p = 0;

	for (int i = 0; i < 32; i++) {
		p ^= b & -((a >> (31 - i)) & 1);
		b = (b >> 1) ^ (CRC32C_POLY & -(b & 1));
	}
	return p;
}

#if defined(__x86_64__)
/*
 * The same in a few instructions.  The carry-less product of two reflected
 * 32-bit values comes out one degree low (see above): shifted left by one
 * it is the 64-bit reflected product, whose high half is already the part
 * below x^32 and whose low half is some L(x) * x^32, which the crc32
 * instruction (from 0) reduces mod P.
 */
static CLMUL uint32_t mulmod_hw(uint32_t a, uint32_t b)
{
	__m128i p = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)a), _mm_cvtsi32_si128((int)b), 0);
	uint64_t q = (uint64_t)_mm_cvtsi128_si64(p) << 1;

	return __builtin_ia32_crc32si(0, (uint32_t)q) ^ (uint32_t)(q >> 32);
}
#endif

static uint32_t mulmod(uint32_t a, uint32_t b)
{
#if defined(__x86_64__)
	if (have_clmul)
		return mulmod_hw(a, b);
#endif
	return mulmod_sw(a, b);
}

/* x^(8 len) mod P by squaring: x^(2^k) mod P for k = 3.. from x^8. */
static uint32_t xpow8_mod(size_t len)
{
	uint32_t r = 0x80000000u, sq = 0x00800000u; /* 1 and x^8 */

	for (; len; len >>= 1) {
		if (len & 1)
			r = mulmod(r, sq);
		sq = mulmod(sq, sq);
	}
	return r;
}

/*
 * Frames mostly have one payload length: remember the last power.  Per
 * thread, since callers of different domains do not share a lock.
 */
static __thread size_t shift_len = SIZE_MAX;
static __thread uint32_t shift_pow;

uint32_t gm_crc32c_shift(uint32_t v, size_t len)
{
	pthread_once(&tables_once, tables_init);
	if (len != shift_len) {
		shift_pow = xpow8_mod(len);
		shift_len = len;
	}
	return mulmod(shift_pow, v);
}

/* For the unit tests: the byte-at-a-time reference. */
uint32_t gm_crc32c_reference(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&tables_once, tables_init);
	return ~crc_sw(~crc, buf, len);
}
