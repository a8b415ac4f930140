/* Shared pieces of the NPB kernels: the NPB linear congruential generator,
 * command-line handling, and the result report in NPB's own layout. */
#ifndef NPB_COMMON_H
#define NPB_COMMON_H

#include <stdbool.h>
#include <stdint.h>

/* Seed multiplier 5^13 used by every kernel's generator. */
#define NPB_A 1220703125.0

/* x <- a*x mod 2^46; returns the new x scaled into (0,1). */
double randlc(double *x, double a);
/* Fills y[0..n-1] with the next n numbers of the sequence started at *x. */
void vranlc(int n, double *x, double a, double *y);
/* a^n mod 2^46 (as an exact double), for skipping ahead in the sequence. */
double npb_pow46(double a, uint64_t n);

struct npb_args {
	char cls;           /* 'S', 'W' or 'A' */
	bool have_override; /* a test-supplied reference value replaces the official one */
	double override_value;
};

/* Parses "<class> [--verify-value X]" and NPB_VERIFY_OVERRIDE; on bad input prints a
 * message on rank 0 and ends the job with exit status 2. */
void npb_parse_args(const char *kernel, int argc, char **argv, struct npb_args *args);

/* Ends the job with a message when the rank count is not a power of two in [1, max]. */
void npb_require_pow2(const char *kernel, int nprocs, int max);

/* Aborts the job with a message (all ranks, no hang when only one rank fails). */
_Noreturn void npb_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Relative-error check against a reference, printing both on rank 0. */
bool npb_close(const char *what, double value, double ref, double eps);

struct npb_report {
	const char *name; /* "EP", "CG", ... */
	char cls;
	long size[3]; /* size[1] == 0: one-dimensional size */
	int iterations;
	double seconds;
	double mops;
	const char *optype;
	bool verified;
	int nprocs;
};

void npb_print_report(const struct npb_report *r);

#endif
