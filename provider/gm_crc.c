/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CRC-32C (Castagnoli), the frame checksum of gm_wire.h and the message CRC.
 *
 * Every byte gamma sends or receives passes through here, so speed matters:
 * ISA-L's crc32_iscsi (libisal) picks the fastest of its kernels for the
 * CPU at run time, on the AMD EPYC here one folding 256 bytes a round with
 * VPCLMULQDQ.  Against the three interleaved crc32-instruction chains gamma
 * used before (same loop, thread CPU time, data in cache): 1424 B 0.082 ->
 * 0.050 us, 8964 B 0.41 -> 0.17 us, 64964 B 2.81 -> 1.18 us; a copy and
 * then the CRC of the copy beat the old fused copy+CRC from 256 bytes up
 * (64964 B: 3.33 -> 2.30 us).  Below 128 bytes ISA-L is slower by about
 * 5 ns, less than the cost of a second implementation.
 *
 * ISA-L's register has no pre- or post-inversion: gm_crc32c(c, p, n) is
 * ~crc32_iscsi(p, n, ~c).
 */
#include "gm_wire.h"

#include <isa-l/crc.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>

#define CRC32C_POLY 0x82F63B78u /* reflected */

static uint32_t crc_table[256]; /* the reference, byte at a time (tests) */
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;
static int have_clmul;

static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

static void tables_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC32C_POLY & -(c & 1));
		crc_table[i] = c;
	}
#if defined(__x86_64__)
	have_clmul = __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul");
#endif
}

/*
 * a * b mod P, both reflected.  Branch-free: it runs once per frame sent or
 * received, with data-dependent bits.
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
#include <immintrin.h>

#define CLMUL __attribute__((target("sse4.2,pclmul")))

/*
 * The same in a few instructions.  In the reflected convention the
 * carry-less product of two 32-bit values comes out one degree low:
 * shifted left by one it is the 64-bit reflected product, whose high half
 * is already the part below x^32 and whose low half is some L(x) * x^32,
 * which the crc32 instruction (from 0) reduces mod P.
 */
static CLMUL uint32_t mulmod_hw(uint32_t a, uint32_t b)
{
	__m128i p = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)a), _mm_cvtsi32_si128((int)b), 0);
	uint64_t q = (uint64_t)_mm_cvtsi128_si64(p) << 1;

	return __builtin_ia32_crc32si(0, (uint32_t)q) ^ (uint32_t)(q >> 32);
}

#endif

uint32_t gm_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	crc = ~crc;
	for (; len > INT_MAX; p += INT_MAX, len -= INT_MAX)
		crc = crc32_iscsi((unsigned char *)p, INT_MAX, crc);
	return ~crc32_iscsi((unsigned char *)p, (int)len, crc);
}

uint32_t gm_crc32c_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
	if (len)
		memcpy(dst, src, len);
	return gm_crc32c(crc, dst, len);
}

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
