#include "npb_common.h"

#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The generator works in 46-bit integers held exactly in doubles: operands
 * are split into 23-bit halves so no product exceeds 2^53. */
#define R23 (1.0 / 8388608.0)
#define T23 8388608.0
#define R46 (R23 * R23)
#define T46 (T23 * T23)

/* All operands are non-negative, so truncation is floor (and much cheaper
 * than a libm call). */
static inline double trunc_nn(double v)
{
	return (double)(int64_t)v;
}

static inline double mul46(double x, double a)
{
	double a1 = trunc_nn(R23 * a), a2 = a - T23 * a1;
	double x1 = trunc_nn(R23 * x), x2 = x - T23 * x1;
	double t1 = a1 * x2 + a2 * x1;
	double t2 = trunc_nn(R23 * t1);
	double z = t1 - T23 * t2;
	double t3 = T23 * z + a2 * x2;
	double t4 = trunc_nn(R46 * t3);
	return t3 - T46 * t4;
}

double randlc(double *x, double a)
{
	*x = mul46(*x, a);
	return R46 * *x;
}

void vranlc(int n, double *x, double a, double *y)
{
	double v = *x;
	for (int i = 0; i < n; i++) {
		v = mul46(v, a);
		y[i] = R46 * v;
	}
	*x = v;
}

double npb_pow46(double a, uint64_t n)
{
	double r = 1.0, sq = a;
	while (n) {
		if (n & 1)
			r = mul46(r, sq);
		sq = mul46(sq, sq);
		n >>= 1;
	}
	return r;
}

static int my_rank(void)
{
	int r = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	return r;
}

void npb_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "error: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, 2);
	exit(2);
}

/* Errors every rank detects identically: rank 0 explains, all leave cleanly. */
static _Noreturn void usage_exit(const char *kernel, const char *msg)
{
	if (my_rank() == 0)
		fprintf(stderr,
		        "%s: %s\nusage: %s S|W|A [--verify-value X]\n"
		        "  (or NPB_VERIFY_OVERRIDE=X) replaces the official reference value\n",
		        kernel, msg, kernel);
	MPI_Finalize();
	exit(2);
}

static bool parse_double(const char *s, double *out)
{
	char *end;
	if (!s || !*s)
		return false;
	*out = strtod(s, &end);
	return *end == '\0' && isfinite(*out);
}

void npb_parse_args(const char *kernel, int argc, char **argv, struct npb_args *args)
{
	memset(args, 0, sizeof(*args));
	const char *env = getenv("NPB_VERIFY_OVERRIDE");
	if (env && *env) {
		if (!parse_double(env, &args->override_value))
			usage_exit(kernel, "NPB_VERIFY_OVERRIDE is not a number");
		args->have_override = true;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--verify-value")) {
			if (i + 1 >= argc || !parse_double(argv[i + 1], &args->override_value))
				usage_exit(kernel, "--verify-value needs a number");
			args->have_override = true;
			i++;
		} else if (strlen(argv[i]) == 1 && strchr("SWAswa", argv[i][0])) {
			args->cls = (char)(argv[i][0] & ~0x20);
		} else {
			usage_exit(kernel, "unknown argument or unsupported class");
		}
	}
	if (!args->cls)
		usage_exit(kernel, "missing class");
}

void npb_require_pow2(const char *kernel, int nprocs, int max)
{
	if (nprocs >= 1 && nprocs <= max && (nprocs & (nprocs - 1)) == 0)
		return;
	if (my_rank() == 0)
		fprintf(stderr,
		        "%s: needs a power-of-two number of processes between 1 and %d, got %d\n",
		        kernel, max, nprocs);
	MPI_Finalize();
	exit(2);
}

bool npb_close(const char *what, double value, double ref, double eps)
{
	double err = fabs((value - ref) / ref);
	bool ok = err <= eps;
	if (my_rank() == 0)
		printf(" %-6s computed = %22.15e reference = %22.15e rel.err = %9.3e %s\n", what,
		       value, ref, err, ok ? "ok" : "FAILED");
	return ok;
}

void npb_print_report(const struct npb_report *r)
{
	printf("\n\n %s Benchmark Completed.\n", r->name);
	printf(" Class           =                        %c\n", r->cls);
	if (r->size[1] == 0)
		printf(" Size            =             %12ld\n", r->size[0]);
	else
		printf(" Size            =           %4ldx%4ldx%4ld\n", r->size[0], r->size[1],
		       r->size[2]);
	printf(" Iterations      =             %12d\n", r->iterations);
	printf(" Time in seconds =             %12.2f\n", r->seconds);
	printf(" Total processes =             %12d\n", r->nprocs);
	printf(" Mop/s total     =             %12.2f\n", r->mops);
	printf(" Mop/s/process   =             %12.2f\n", r->mops / r->nprocs);
	printf(" Operation type  = %24s\n", r->optype);
	printf(" Verification    =             %12s\n",
	       r->verified ? "SUCCESSFUL" : "UNSUCCESSFUL");
	printf(" Version         =             %12s\n", "gamma-1");
	printf("\n");
	fflush(stdout);
}
