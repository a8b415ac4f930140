/* Shared parts of the OSU-style benchmarks: options, output, medians, and the
 * data checks that keep a broken transport from posting a number.
 *
 * Options (all benchmarks):
 *   --min BYTES --max BYTES   size range, powers of two from min (0 allowed) to max
 *   --iters N                 timed iterations per repetition (default per size)
 *   --warmup N                untimed iterations before each size
 *   --reps N                  repetitions per size; the median is reported (default 5)
 *   --window N                messages in flight (bw, mr; default 64)
 *   --csv                     CSV output instead of "size value" lines
 * Every run uses exactly ranks 0 and 1; other ranks (if any) only wait.
 */
#ifndef GM_BENCH_H
#define GM_BENCH_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bench_opts {
	size_t min, max;
	long iters, warmup; /* <0: size-dependent default */
	int reps, window, csv;
};

static int bench_rank, bench_size;

static void bench_fail(const char *msg, const char *arg)
{
	if (bench_rank == 0)
		fprintf(stderr, "%s%s\n", msg, arg ? arg : "");
	MPI_Abort(MPI_COMM_WORLD, 2);
	exit(2);
}

static long bench_num(const char *opt, const char *v, long lo, long hi)
{
	char *end;
	long x = v ? strtol(v, &end, 10) : 0;
	if (!v || *end || x < lo || x > hi)
		bench_fail("missing or out-of-range value for ", opt);
	return x;
}

static void bench_init(int *argc, char ***argv, struct bench_opts *o, size_t dmin, size_t dmax)
{
	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &bench_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &bench_size);
	*o = (struct bench_opts){dmin, dmax, -1, -1, 5, 64, 0};
	for (int i = 1; i < *argc; i++) {
		const char *a = (*argv)[i], *v = i + 1 < *argc ? (*argv)[i + 1] : NULL;
		if (!strcmp(a, "--min"))
			o->min = bench_num(a, v, 0, 1L << 30), i++;
		else if (!strcmp(a, "--max"))
			o->max = bench_num(a, v, 0, 1L << 30), i++;
		else if (!strcmp(a, "--iters"))
			o->iters = bench_num(a, v, 1, 100000000), i++;
		else if (!strcmp(a, "--warmup"))
			o->warmup = bench_num(a, v, 0, 100000000), i++;
		else if (!strcmp(a, "--reps"))
			o->reps = (int)bench_num(a, v, 1, 1000), i++;
		else if (!strcmp(a, "--window"))
			o->window = (int)bench_num(a, v, 1, 4096), i++;
		else if (!strcmp(a, "--csv"))
			o->csv = 1;
		else
			bench_fail("unknown option (see tools/bench/bench.h): ", a);
	}
	if (o->min > o->max)
		bench_fail("--min is larger than --max", NULL);
	if (bench_size < 2)
		bench_fail("needs at least 2 ranks", NULL);
}

/* Next size: 0 -> 1 -> 2 -> 4 ... */
static size_t bench_next(size_t s)
{
	return s ? s * 2 : 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double bench_median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static const char *bench_mpi_name(void)
{
	static char lib[MPI_MAX_LIBRARY_VERSION_STRING];
	int len;
	MPI_Get_library_version(lib, &len);
	char *nl = strpbrk(lib, ",\n");
	if (nl)
		*nl = 0;
	for (char *t = lib; *t; t++) /* MPICH: "MPICH Version:\t4.0.2" */
		if (*t == '\t')
			*t = ' ';
	return lib;
}

static void bench_header(const struct bench_opts *o, const char *name, const char *unit,
                         const char *what)
{
	if (bench_rank)
		return;
	if (o->csv)
		printf("size,%s\n", unit);
	else
		printf("# %s (%s): %s, median of %d repetitions\n# size %s\n", name,
		       bench_mpi_name(), what, o->reps, unit);
	fflush(stdout);
}

static void bench_line(const struct bench_opts *o, size_t size, double value)
{
	if (bench_rank)
		return;
	printf(o->csv ? "%zu,%.2f\n" : "%zu %.2f\n", size, value);
	fflush(stdout);
}

/* Data pattern: byte i of a message of `size` bytes, stamped with `stamp`. */
static inline uint8_t bench_byte(size_t size, uint32_t stamp, size_t i)
{
	uint32_t x = (uint32_t)i * 2654435761u ^ (uint32_t)size * 40503u ^ stamp * 0x9e3779b9u;
	return (uint8_t)(x >> 24 ^ x);
}

static void bench_fill(uint8_t *b, size_t size, uint32_t stamp)
{
	for (size_t i = 0; i < size; i++)
		b[i] = bench_byte(size, stamp, i);
}

/* Cheap per-iteration check: small messages whole, larger ones at STAMP_POINTS
 * bytes spread evenly over the message (and its last byte), so any systematic
 * corruption shows at once without a full pass in the timed loop. */
#define STAMP_WHOLE_MAX 256
#define STAMP_POINTS    64

static inline size_t bench_stamp_at(size_t size, int k)
{
	return k < STAMP_POINTS ? (size / STAMP_POINTS) * k + k % 7 : size - 1;
}

static void bench_stamp(uint8_t *b, size_t size, uint32_t stamp)
{
	if (size <= STAMP_WHOLE_MAX) {
		bench_fill(b, size, stamp);
		return;
	}
	for (int k = 0; k <= STAMP_POINTS; k++) {
		size_t at = bench_stamp_at(size, k);
		b[at] = bench_byte(size, stamp, at);
	}
}

static int bench_stamp_ok(const uint8_t *b, size_t size, uint32_t stamp)
{
	if (size <= STAMP_WHOLE_MAX) {
		for (size_t i = 0; i < size; i++)
			if (b[i] != bench_byte(size, stamp, i))
				return 0;
		return 1;
	}
	for (int k = 0; k <= STAMP_POINTS; k++) {
		size_t at = bench_stamp_at(size, k);
		if (b[at] != bench_byte(size, stamp, at))
			return 0;
	}
	return 1;
}

/* Full check of a whole message; aborts the job on a mismatch. */
static void bench_verify(const uint8_t *b, size_t size, uint32_t stamp, const char *what)
{
	for (size_t i = 0; i < size; i++)
		if (b[i] != bench_byte(size, stamp, i)) {
			fprintf(stderr,
			        "rank %d: %s: DATA ERROR at byte %zu of %zu (got 0x%02x want "
			        "0x%02x): no result reported\n",
			        bench_rank, what, i, size, b[i], bench_byte(size, stamp, i));
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
}

static void bench_stamp_fail(size_t size, long iter, const char *what)
{
	fprintf(stderr,
	        "rank %d: %s: DATA ERROR in iteration %ld at size %zu: no result reported\n",
	        bench_rank, what, iter, size);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static void *bench_alloc(size_t n)
{
	void *p = NULL;
	if (posix_memalign(&p, 4096, n ? n : 1)) {
		fprintf(stderr, "rank %d: out of memory (%zu bytes)\n", bench_rank, n);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	return p;
}

#endif
