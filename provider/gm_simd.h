/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The libraries gamma calls per frame (OpenSSL's Poly1305, ISA-L's CRC-32C)
 * run AVX-512 code on CPUs that have it and return with the upper halves of
 * the vector registers in use.  Every SSE instruction after that, in gamma,
 * libfabric, Open MPI or the application, then runs slower on the AMD EPYC
 * measured here (NPB MG class A: 1.21-1.30 s against 0.71-0.88 after the
 * MAC, 1.13-1.22 against 0.74-0.75 after ISA-L's CRC).  So a vzeroupper
 * follows each such call.
 */
#ifndef GM_SIMD_H
#define GM_SIMD_H

#include <stdbool.h>

static inline bool gm_cpu_has_avx(void)
{
#if defined(__x86_64__)
	return __builtin_cpu_supports("avx");
#else
	return false;
#endif
}

/* Only where gm_cpu_has_avx(): vzeroupper is an AVX instruction. */
static inline void gm_upper_clear(void)
{
#if defined(__x86_64__)
	__asm__ volatile("vzeroupper"
	                 :
	                 :
	                 : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
	                   "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
#endif
}

#endif /* GM_SIMD_H */
