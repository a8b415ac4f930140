/* Shared helpers for the MPI test programs: data patterns, checks, reporting.
 *
 * Every program verifies data, counts errors per "item", and at the end of an
 * item all ranks agree (allreduce) on the result so rank 0 prints exactly one
 * "ok: <item>" or "FAIL: <item>" line. The exit status is non-zero on any error
 * so mpirun reports the failure.
 *
 * Common options (parsed by suite_init, removed from argv):
 *   --quick          skip the huge message case, shorten storms
 *   --huge-mib N     size of the huge case in MiB (default 256, 0 = skip)
 */
#ifndef GM_MPI_SUITE_H
#define GM_MPI_SUITE_H

#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUITE_GUARD       64 /* bytes past each receive that must stay untouched */
#define SUITE_CANARY      0xA5
#define SUITE_MAX_REPORTS 8 /* per rank and item: enough to diagnose, not flood */

struct suite {
	int rank, size;
	int quick;
	size_t huge_bytes;
	long item_errors; /* local errors in the current item */
	long item_reports;
	long total_failed; /* items failed (agreed by all ranks) */
	long items;
};

static struct suite S;

static inline void suite_usage_error(const char *prog, const char *msg)
{
	if (S.rank == 0)
		fprintf(stderr, "%s: %s\n", prog, msg);
	MPI_Abort(MPI_COMM_WORLD, 2);
}

/* Parses the common options; leaves program-specific ones in argv (compacted). */
static inline void suite_start(int *argc, char ***argv)
{
	MPI_Comm_rank(MPI_COMM_WORLD, &S.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &S.size);
	S.huge_bytes = (size_t)256 << 20;
	int out = 1;
	for (int i = 1; i < *argc; i++) {
		char *a = (*argv)[i];
		if (!strcmp(a, "--quick")) {
			S.quick = 1;
			S.huge_bytes = 0;
		} else if (!strcmp(a, "--huge-mib")) {
			if (i + 1 >= *argc)
				suite_usage_error((*argv)[0], "--huge-mib needs a value");
			char *end;
			long v = strtol((*argv)[++i], &end, 10);
			/* The huge case is one count of MPI_BYTE, an int. */
			if (*end || v < 0 || v > 2047)
				suite_usage_error((*argv)[0], "--huge-mib: expected 0..2047");
			S.huge_bytes = (size_t)v << 20;
		} else {
			(*argv)[out++] = a;
		}
	}
	*argc = out;
	(*argv)[out] = NULL;
}

static inline void suite_init(int *argc, char ***argv)
{
	MPI_Init(argc, argv);
	suite_start(argc, argv);
}

/* MPI_Init_thread instead of MPI_Init; returns the level provided. */
static inline int suite_init_thread(int *argc, char ***argv, int required)
{
	int provided = MPI_THREAD_SINGLE;

	MPI_Init_thread(argc, argv, required, &provided);
	suite_start(argc, argv);
	return provided;
}

/* Records one error on this rank; the first few are printed with the rank. */
__attribute__((format(printf, 1, 2))) static inline void suite_error(const char *fmt, ...)
{
	S.item_errors++;
	if (S.item_reports++ >= SUITE_MAX_REPORTS)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "error: rank %d: ", S.rank);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	fflush(stderr);
}

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			suite_error(__VA_ARGS__);                                                  \
	} while (0)

/* Closes an item: collective over MPI_COMM_WORLD. */
__attribute__((format(printf, 1, 2))) static inline void suite_item(const char *fmt, ...)
{
	long errs = 0;
	MPI_Allreduce(&S.item_errors, &errs, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	S.items++;
	if (errs)
		S.total_failed++;
	if (S.rank == 0) {
		char what[256];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(what, sizeof(what), fmt, ap);
		va_end(ap);
		if (errs)
			printf("FAIL: %s (%ld errors)\n", what, errs);
		else
			printf("ok: %s\n", what);
		fflush(stdout);
	}
	S.item_errors = 0;
	S.item_reports = 0;
}

static inline int suite_finish(void)
{
	int failed = S.total_failed != 0;
	if (S.rank == 0) {
		printf("%s: %ld items, %ld failed\n", failed ? "FAIL" : "done", S.items,
		       S.total_failed);
		fflush(stdout);
	}
	MPI_Finalize();
	return failed ? 1 : 0;
}

static inline void *suite_alloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "rank %d: out of memory allocating %zu bytes\n", S.rank, n);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	return p;
}

/* The pattern: 64-bit words from a mixing function of (seed, word index), so that
 * every byte depends on sender, size, iteration and position. */
static inline uint64_t suite_mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ULL;
	x ^= x >> 27;
	x *= 0x81dadef4bc2dd44dULL;
	x ^= x >> 33;
	return x;
}

static inline uint64_t suite_seed(int src, size_t size, int iter)
{
	return suite_mix(((uint64_t)(unsigned)src << 48) ^ ((uint64_t)size << 8) ^
	                 (uint64_t)(unsigned)iter ^ 0x9e3779b97f4a7c15ULL);
}

static inline uint8_t suite_byte(uint64_t seed, size_t i)
{
	return (uint8_t)(suite_mix(seed + i / 8) >> (8 * (i % 8)));
}

static inline void suite_fill(void *buf, size_t n, uint64_t seed)
{
	uint8_t *p = buf;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w = suite_mix(seed + i / 8);
		memcpy(p + i, &w, 8); /* little-endian: byte k of w is byte i+k */
	}
	for (; i < n; i++)
		p[i] = suite_byte(seed, i);
}

/* Returns the index of the first wrong byte, or (size_t)-1 if all match. */
static inline size_t suite_first_diff(const void *buf, size_t n, uint64_t seed)
{
	const uint8_t *p = buf;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w = suite_mix(seed + i / 8), got;
		memcpy(&got, p + i, 8);
		if (got != w)
			break;
	}
	for (; i < n; i++)
		if (p[i] != suite_byte(seed, i))
			return i;
	return (size_t)-1;
}

/* Checks a received message: pattern over [0, n) and canary over the guard. */
static inline int suite_check_msg(const char *what, const void *buf, size_t n, uint64_t seed)
{
	int bad = 0;
	size_t d = suite_first_diff(buf, n, seed);
	if (d != (size_t)-1) {
		const uint8_t *p = buf;
		size_t wrong = 0;
		for (size_t i = d; i < n; i++)
			wrong += p[i] != suite_byte(seed, i);
		suite_error("%s: %zu of %zu bytes wrong, first at %zu (got 0x%02x want 0x%02x)",
		            what, wrong, n, d, p[d], suite_byte(seed, d));
		bad = 1;
	}
	const uint8_t *g = (const uint8_t *)buf + n;
	for (size_t i = 0; i < SUITE_GUARD; i++) {
		if (g[i] != SUITE_CANARY) {
			suite_error(
			    "%s: byte %zu past the %zu-byte message was overwritten (0x%02x)", what,
			    i, n, g[i]);
			bad = 1;
			break;
		}
	}
	return !bad;
}

/* Allocates a receive buffer of n bytes plus guard, all set to the canary. */
static inline uint8_t *suite_recv_buf(size_t n)
{
	uint8_t *p = suite_alloc(n + SUITE_GUARD);
	memset(p, SUITE_CANARY, n + SUITE_GUARD);
	return p;
}

static inline void suite_check_status(const char *what, const MPI_Status *st, int src, int tag,
                                      MPI_Datatype type, int count)
{
	int got = -1;
	MPI_Get_count(st, type, &got);
	CHECK(src < 0 || st->MPI_SOURCE == src, "%s: status source %d, expected %d", what,
	      st->MPI_SOURCE, src);
	CHECK(tag < 0 || st->MPI_TAG == tag, "%s: status tag %d, expected %d", what, st->MPI_TAG,
	      tag);
	CHECK(got == count, "%s: MPI_Get_count %d, expected %d", what, got, count);
}

static inline const char *suite_size_name(size_t n, char *buf, size_t len)
{
	if (n >= (1 << 20) && n % (1 << 20) == 0)
		snprintf(buf, len, "%zu MiB", n >> 20);
	else if (n >= 1024 && n % 1024 == 0)
		snprintf(buf, len, "%zu KiB", n >> 10);
	else
		snprintf(buf, len, "%zu B", n);
	return buf;
}

#endif
