/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Keep OpenSSL's AVX-512 code out of MPI ranks.
 *
 * The provider MACs every frame longer than 512 bytes with OpenSSL's
 * Poly1305 (provider/gm_mac.h).
 * On CPUs with AVX-512, OpenSSL 3.0 picks kernels that use it, and on the
 * machines measured here that slowed the whole rank, not only the MAC:
 * NPB MG class A over btl gamma (2 ranks, 1 Gbit/s) took 0.97 s, with the
 * application's own stencil loops running twice as long as over btl tcp;
 * with OpenSSL's AVX-512 masked, 0.67 s (btl tcp: 0.65-0.67 s).  OpenSSL
 * reads its capability mask once, from OPENSSL_ia32cap, when libcrypto is
 * loaded: with the provider, after this component opens and before its
 * first fi_getinfo.  So the component sets the mask then, unless the user
 * set one, and says at verbose 10 whether it could take effect.  OpenSSL
 * then uses its AVX2 kernels: the MAC of a 64960-byte frame body costs
 * about 7 us instead of 6.
 */
#define _GNU_SOURCE
#include "btl_gamma.h"

#include <dlfcn.h>
#include <stdlib.h>

/* CPUID leaf 7 EBX bit 16, AVX512F, cleared in OpenSSL's second word. */
#define GAMMA_OPENSSL_NO_AVX512 ":~0x10000"

void gamma_cpu_mask_openssl(void)
{
	void *crypto;

	if (getenv("OPENSSL_ia32cap")) {
		GAMMA_VERBOSE(10, "btl gamma: OPENSSL_ia32cap is set (%s): left as it is",
		              getenv("OPENSSL_ia32cap"));
		return;
	}
	crypto = dlopen("libcrypto.so.3", RTLD_LAZY | RTLD_NOLOAD);
	if (crypto) {
		dlclose(crypto);
		GAMMA_VERBOSE(10,
		              "btl gamma: libcrypto was loaded before btl gamma: its "
		              "AVX-512 code stays on (set OPENSSL_ia32cap=%s to avoid it)",
		              GAMMA_OPENSSL_NO_AVX512);
		return;
	}
	setenv("OPENSSL_ia32cap", GAMMA_OPENSSL_NO_AVX512, 0);
	GAMMA_VERBOSE(10, "btl gamma: OPENSSL_ia32cap=%s: no AVX-512 in OpenSSL",
	              GAMMA_OPENSSL_NO_AVX512);
}
