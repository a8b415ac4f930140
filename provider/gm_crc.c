/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CRC-32C (Castagnoli), the frame checksum of gm_wire.h.
 *
 * Every byte gamma sends or receives passes through here, so speed matters.
 * The SSE4.2 crc32 instruction takes 8 bytes, with a latency of 3 cycles
 * but a throughput of one per cycle on the AMD EPYC here: one chain of it
 * is bound by the latency (about 8 GB/s).  So three chains run side by side
 * over three adjacent blocks of B bytes each, and are joined with the
 * register's linearity: after A | B | C from register c, it is
 * c * x^(16B) + rB * x^(8B) + rC mod P, where rB and rC ran from 0 (one
 * carry-less multiply each, mulmod).  Blocks of 256 bytes, then 64, then
 * one chain for the rest.
 *
 * Measured (experiments/perf/gm-macbench-style loop, thread CPU time, one
 * core at SCHED_FIFO), against folding 64-byte rounds with PCLMULQDQ,
 * which is bound by the multiplier's throughput here (about 16 GB/s):
 * 65000 B in cache 4.0 -> 2.4 us, 9000 B 0.56 -> 0.35 us, 1424 B 0.09 ->
 * 0.07 us; from memory (a 64 MiB span) 65000 B 4.2 -> 3.8 us, 9000 B
 * 0.61 -> 0.56 us.
 *
 * Longer buffers go to ISA-L (libisal), whose kernel on this CPU folds 256
 * bytes a round with VPCLMULQDQ on zmm registers (thread CPU time, in
 * cache, AMD EPYC): CRC alone 1424 B 67 -> 36 ns, 8960 B 401 -> 167 ns,
 * 64960 B 2848 -> 1197 ns; a copy then ISA-L's CRC of the copy against the
 * three chains' fused pass, 8960 B 384 -> 217 ns, 64960 B 2864 -> 1898 ns
 * (1424 B: 62 both ways, so below GM_CRC_COPY_ISAL the fused pass stays).
 * ISA-L 2.30 returns with the upper halves of the vector registers in use
 * (gm_simd.h): NPB MG class A, 2 ranks, took 1.13-1.22 s against 0.74-0.75
 * when ISA-L was first tried, in session 10, without a vzeroupper after it;
 * with one, but ISA-L for every length down to small messages' 104-byte
 * frames, 0.83 against 0.72 s (session 20).  From 256 bytes only, 16
 * interleaved pairs over btl gamma and mtl ofi showed no difference.
 */
#include "gm_simd.h"
#include "gm_wire.h"

#include <isa-l/crc.h>
#include <pthread.h>
#include <string.h>

/* From these lengths on, ISA-L: the CRC alone, and a copy with its CRC. */
#define GM_CRC_ISAL      256
#define GM_CRC_COPY_ISAL 4096

#define CRC32C_POLY 0x82F63B78u /* reflected */

static uint32_t crc_table[256]; /* software fallback, byte at a time */
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;
static int have_hw, have_clmul, have_avx;

static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

/* x^n mod P, reflected (bit 31: coefficient of x^0), bit by bit: tables only. */
static uint32_t xpow_mod(unsigned n)
{
	uint32_t r = 0x80000000u; /* the polynomial 1 */

	while (n--)
		r = (r >> 1) ^ (CRC32C_POLY & -(r & 1));
	return r;
}

/* Joining constants {x^(8B), x^(16B)} for the three-chain blocks. */
#define BLK_LARGE 256
#define BLK_SMALL 64
static uint32_t join_k[2][2];

static void tables_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC32C_POLY & -(c & 1));
		crc_table[i] = c;
	}
	join_k[0][0] = xpow_mod(8 * BLK_LARGE);
	join_k[0][1] = xpow_mod(16 * BLK_LARGE);
	join_k[1][0] = xpow_mod(8 * BLK_SMALL);
	join_k[1][1] = xpow_mod(16 * BLK_SMALL);
#if defined(__x86_64__)
	have_hw = __builtin_cpu_supports("sse4.2");
	have_clmul = have_hw && __builtin_cpu_supports("pclmul");
	have_avx = gm_cpu_has_avx();
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

#define LOAD(p)     _mm_loadu_si128((const __m128i *)(p))
#define STORE(p, v) _mm_storeu_si128((__m128i *)(p), v)

static inline __attribute__((always_inline)) CLMUL uint64_t crc16(uint64_t c, __m128i v)
{
	c = __builtin_ia32_crc32di(c, (unsigned long long)_mm_cvtsi128_si64(v));
	return __builtin_ia32_crc32di(c, (unsigned long long)_mm_extract_epi64(v, 1));
}

/* Three chains over 3 * b bytes (b a multiple of 16), joined; copies if dst. */
static inline __attribute__((always_inline)) CLMUL uint32_t crc_blocks3(uint32_t crc, uint8_t *dst,
                                                                        const uint8_t *p, size_t b,
                                                                        const uint32_t k[2])
{
	uint64_t c0 = crc, c1 = 0, c2 = 0;

	for (size_t i = 0; i < b; i += 16) {
		__m128i v0 = LOAD(p + i), v1 = LOAD(p + b + i), v2 = LOAD(p + 2 * b + i);

		if (dst) {
			STORE(dst + i, v0);
			STORE(dst + b + i, v1);
			STORE(dst + 2 * b + i, v2);
		}
		c0 = crc16(c0, v0);
		c1 = crc16(c1, v1);
		c2 = crc16(c2, v2);
	}
	return mulmod_hw(k[1], (uint32_t)c0) ^ mulmod_hw(k[0], (uint32_t)c1) ^ (uint32_t)c2;
}

/*
 * The register (no pre- or post-inversion) after len bytes of p.  With dst,
 * also copies p to dst in the same pass: a sender then reads a user buffer
 * from memory once, not once to copy it and once to checksum it.
 */
static inline __attribute__((always_inline)) CLMUL uint32_t crc_3way(uint32_t crc, uint8_t *dst,
                                                                     const uint8_t *p, size_t len)
{
	uint64_t c;

	for (; len >= 3 * BLK_LARGE; p += 3 * BLK_LARGE, len -= 3 * BLK_LARGE) {
		crc = crc_blocks3(crc, dst, p, BLK_LARGE, join_k[0]);
		if (dst)
			dst += 3 * BLK_LARGE;
	}
	for (; len >= 3 * BLK_SMALL; p += 3 * BLK_SMALL, len -= 3 * BLK_SMALL) {
		crc = crc_blocks3(crc, dst, p, BLK_SMALL, join_k[1]);
		if (dst)
			dst += 3 * BLK_SMALL;
	}
	c = crc;
	for (; len >= 8; p += 8, len -= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		if (dst) {
			memcpy(dst, &v, 8);
			dst += 8;
		}
		c = __builtin_ia32_crc32di(c, v);
	}
	crc = (uint32_t)c;
	for (; len; len--) {
		if (dst)
			*dst++ = *p;
		crc = __builtin_ia32_crc32qi(crc, *p++);
	}
	return crc;
}

static CLMUL uint32_t crc_hw_only(uint32_t crc, const uint8_t *p, size_t len)
{
	return crc_3way(crc, NULL, p, len);
}

static CLMUL uint32_t crc_hw_copy(uint32_t crc, uint8_t *dst, const uint8_t *p, size_t len)
{
	return crc_3way(crc, dst, p, len);
}
#endif

/* The register after len bytes of p, by ISA-L (the header comment). */
static uint32_t crc_isal(uint32_t crc, const void *p, size_t len)
{
	while (len) {
		int n = len > (1u << 30) ? 1 << 30 : (int)len;

		crc = crc32_iscsi((unsigned char *)p, n, crc);
		p = (const uint8_t *)p + n;
		len -= (size_t)n;
	}
	if (have_avx)
		gm_upper_clear();
	return crc;
}

uint32_t gm_crc32c(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&tables_once, tables_init);
	crc = ~crc;
#if defined(__x86_64__)
	if (have_clmul)
		return ~(len >= GM_CRC_ISAL ? crc_isal(crc, buf, len) : crc_hw_only(crc, buf, len));
#endif
	return ~crc_sw(crc, buf, len);
}

uint32_t gm_crc32c_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
	pthread_once(&tables_once, tables_init);
#if defined(__x86_64__)
	if (have_clmul && len < GM_CRC_COPY_ISAL)
		return ~crc_hw_copy(~crc, dst, src, len);
#endif
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
