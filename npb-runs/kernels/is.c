/* NPB IS: ranks (bucket-sorts) integer keys ten times. Keys are bucketed by
 * their high bits, buckets are dealt to ranks in contiguous runs of about
 * equal key count (allreduce of bucket sizes), and the keys move with an
 * alltoall of counts plus an alltoallv, as in NPB. Each iteration checks five
 * ranks against the spec's table; the last result is checked in full. */
#include "npb_common.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IS_ITERS 10
#define NTEST    5
#define IS_SEED  314159265.0

struct is_class {
	char cls;
	int keys_log2, maxkey_log2, buckets_log2;
	long test_index[NTEST], test_rank[NTEST];
};

static const struct is_class classes[] = {
    {'S', 16, 11, 9, {48427, 17148, 23627, 62548, 4431}, {0, 18, 346, 64917, 65463}},
    {'W',
     20,
     16,
     10,
     {357773, 934767, 875723, 898999, 404505},
     {1249, 11698, 1039987, 1043896, 1048018}},
    {'A',
     23,
     19,
     10,
     {2112377, 662041, 5336171, 3642833, 4250760},
     {104, 17523, 123928, 8288932, 8388264}},
};

struct is {
	const struct is_class *c;
	int rank, nprocs;
	long total_keys, num_keys; /* global, and per rank before the exchange */
	int max_key, nbuckets, shift;
	int *keys;            /* this rank's slice of the global key array */
	int *bucketed, *recv; /* keys ordered by bucket; keys received */
	long recv_cap, nrecv;
	long *bsize, *btotal; /* per bucket: local and global counts */
	int *scount, *sdispl, *rcount, *rdispl;
	int *first_bucket;         /* first_bucket[p] .. first_bucket[p+1]-1 go to rank p */
	int min_key, max_key_mine; /* my key range after the exchange (may be empty) */
	long lesser;               /* keys on lower ranks */
	long *cum;                 /* cum[k-min_key]: my keys <= k */
	long expected[NTEST];      /* test_rank, possibly overridden */
};

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		npb_die("is: out of memory (%zu bytes)", n);
	return p;
}

/* Keys are (MAX_KEY/4) * (sum of four uniform numbers), from one sequence
 * laid over the global key array; each rank skips to its own slice. */
static void create_keys(struct is *s)
{
	double x = IS_SEED;
	randlc(&x, npb_pow46(NPB_A, (uint64_t)(4 * s->num_keys * s->rank)));
	int k = s->max_key / 4;
	for (long i = 0; i < s->num_keys; i++) {
		double v = randlc(&x, NPB_A);
		v += randlc(&x, NPB_A);
		v += randlc(&x, NPB_A);
		v += randlc(&x, NPB_A);
		s->keys[i] = (int)(k * v);
	}
}

/* The rank the spec expects for test key i at this iteration. */
static long expected_rank(const struct is *s, int i, int it)
{
	long r = s->expected[i];
	switch (s->c->cls) {
	case 'S':
		return i <= 2 ? r + it : r - it;
	case 'W':
		return i < 2 ? r + (it - 2) : r - it;
	default: /* 'A' */
		return i <= 2 ? r + (it - 1) : r - (it - 1);
	}
}

/* One ranking; returns how many of the five partial checks passed here. */
static int rank_keys(struct is *s, int it)
{
	if (s->rank == 0) {
		s->keys[it] = it;
		s->keys[it + IS_ITERS] = s->max_key - it;
	}
	/* The test keys live on whichever ranks own those indices. */
	long probe[NTEST], tval[NTEST];
	for (int i = 0; i < NTEST; i++) {
		long t = s->c->test_index[i];
		probe[i] = t / s->num_keys == s->rank ? s->keys[t % s->num_keys] : -1;
	}
	MPI_Allreduce(probe, tval, NTEST, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);

	/* Bucket the local keys. */
	memset(s->bsize, 0, sizeof(long) * s->nbuckets);
	for (long i = 0; i < s->num_keys; i++)
		s->bsize[s->keys[i] >> s->shift]++;
	long *bptr = xmalloc(sizeof(long) * s->nbuckets);
	bptr[0] = 0;
	for (int b = 1; b < s->nbuckets; b++)
		bptr[b] = bptr[b - 1] + s->bsize[b - 1];
	for (long i = 0; i < s->num_keys; i++)
		s->bucketed[bptr[s->keys[i] >> s->shift]++] = s->keys[i];
	free(bptr);
	MPI_Allreduce(s->bsize, s->btotal, s->nbuckets, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);

	/* Contiguous bucket runs of about num_keys keys per rank. */
	long acc = 0;
	int p = 0;
	s->first_bucket[0] = 0;
	for (int b = 0; b < s->nbuckets; b++) {
		acc += s->btotal[b];
		if (p < s->nprocs - 1 && acc >= (p + 1) * s->num_keys)
			s->first_bucket[++p] = b + 1;
	}
	while (p < s->nprocs)
		s->first_bucket[++p] = s->nbuckets;

	for (int q = 0; q < s->nprocs; q++) {
		long n = 0;
		for (int b = s->first_bucket[q]; b < s->first_bucket[q + 1]; b++)
			n += s->bsize[b];
		s->scount[q] = (int)n;
		s->sdispl[q] = q ? s->sdispl[q - 1] + s->scount[q - 1] : 0;
	}
	MPI_Alltoall(s->scount, 1, MPI_INT, s->rcount, 1, MPI_INT, MPI_COMM_WORLD);
	s->nrecv = 0;
	for (int q = 0; q < s->nprocs; q++) {
		s->rdispl[q] = (int)s->nrecv;
		s->nrecv += s->rcount[q];
	}
	if (s->nrecv > s->recv_cap) {
		free(s->recv);
		s->recv_cap = s->nrecv;
		s->recv = xmalloc(sizeof(int) * s->recv_cap);
	}
	MPI_Alltoallv(s->bucketed, s->scount, s->sdispl, MPI_INT, s->recv, s->rcount, s->rdispl,
	              MPI_INT, MPI_COMM_WORLD);

	/* Rank my keys: counts per key value over my range, then running sums. */
	int fb = s->first_bucket[s->rank], lb = s->first_bucket[s->rank + 1];
	s->min_key = fb << s->shift;
	s->max_key_mine = (lb << s->shift) - 1;
	s->lesser = 0;
	for (int b = 0; b < fb; b++)
		s->lesser += s->btotal[b];
	long range = s->max_key_mine - s->min_key + 1;
	memset(s->cum, 0, sizeof(long) * (range > 0 ? range : 1));
	for (long i = 0; i < s->nrecv; i++) {
		int k = s->recv[i];
		if (k < s->min_key || k > s->max_key_mine)
			npb_die("is: rank %d received key %d outside its range %d..%d", s->rank, k,
			        s->min_key, s->max_key_mine);
		s->cum[k - s->min_key]++;
	}
	for (long k = 1; k < range; k++)
		s->cum[k] += s->cum[k - 1];

	int passed = 0;
	for (int i = 0; i < NTEST; i++) {
		long k = tval[i];
		if (k < s->min_key || k > s->max_key_mine)
			continue;
		long r = s->lesser + (k > s->min_key ? s->cum[k - 1 - s->min_key] : 0);
		if (r == expected_rank(s, i, it))
			passed++;
		else
			fprintf(stderr,
			        "is: iteration %d test %d: key %ld has rank %ld, expected %ld\n",
			        it, i, k, r, expected_rank(s, i, it));
	}
	return passed;
}

/* Places every received key at the position its rank gives, then checks that
 * the result is sorted (also across rank boundaries) and is a permutation of
 * the keys that went in (per-value counts against the global histogram). */
static bool full_verify(struct is *s)
{
	long range = s->max_key_mine - s->min_key + 1;
	int *sorted = xmalloc(sizeof(int) * (s->nrecv ? s->nrecv : 1));
	long *pos = xmalloc(sizeof(long) * (range > 0 ? range : 1));
	for (long k = 0; k < range; k++)
		pos[k] = s->cum[k];
	for (long i = s->nrecv - 1; i >= 0; i--)
		sorted[--pos[s->recv[i] - s->min_key]] = s->recv[i];
	free(pos);

	long bad = 0;
	for (long i = 1; i < s->nrecv; i++)
		bad += sorted[i - 1] > sorted[i];
	int last = s->nrecv ? sorted[s->nrecv - 1] : -1, before = -1;
	MPI_Exscan(&last, &before, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (s->rank == 0)
		before = -1;
	if (s->nrecv && sorted[0] < before)
		bad++;

	long *hist_in = calloc((size_t)s->max_key, sizeof(long));
	long *hist_all = xmalloc(sizeof(long) * s->max_key);
	if (!hist_in)
		npb_die("is: out of memory");
	for (long i = 0; i < s->num_keys; i++)
		hist_in[s->keys[i]]++;
	MPI_Allreduce(hist_in, hist_all, s->max_key, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	memset(hist_in, 0, sizeof(long) * s->max_key);
	for (long i = 0; i < s->nrecv; i++)
		hist_in[sorted[i]]++;
	for (long k = s->min_key; k <= s->max_key_mine; k++)
		bad += hist_in[k] != hist_all[k];
	long nout = s->nrecv, ntotal = 0, gbad = 0;
	MPI_Allreduce(&nout, &ntotal, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(&bad, &gbad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (s->rank == 0)
		printf(" Full verification: %ld keys out of %ld, %ld defects\n", ntotal,
		       s->total_keys, gbad);
	free(hist_in);
	free(hist_all);
	free(sorted);
	return gbad == 0 && ntotal == s->total_keys;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	struct is s = {0};
	MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &s.nprocs);

	struct npb_args args;
	npb_parse_args("is", argc, argv, &args);
	npb_require_pow2("is", s.nprocs, 512);
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (classes[i].cls == args.cls)
			s.c = &classes[i];
	if (!s.c)
		npb_die("is: no class %c", args.cls);
	const struct is_class *c = s.c;
	memcpy(s.expected, c->test_rank, sizeof(s.expected));
	/* A test-supplied value replaces the expected rank of the first test key. */
	if (args.have_override)
		s.expected[0] = (long)args.override_value;

	s.total_keys = 1L << c->keys_log2;
	s.num_keys = s.total_keys / s.nprocs;
	s.max_key = 1 << c->maxkey_log2;
	s.nbuckets = 1 << c->buckets_log2;
	s.shift = c->maxkey_log2 - c->buckets_log2;
	s.keys = xmalloc(sizeof(int) * s.num_keys);
	s.bucketed = xmalloc(sizeof(int) * s.num_keys);
	s.bsize = xmalloc(sizeof(long) * s.nbuckets);
	s.btotal = xmalloc(sizeof(long) * s.nbuckets);
	s.cum = xmalloc(sizeof(long) * s.max_key);
	s.scount = xmalloc(sizeof(int) * s.nprocs);
	s.sdispl = xmalloc(sizeof(int) * s.nprocs);
	s.rcount = xmalloc(sizeof(int) * s.nprocs);
	s.rdispl = xmalloc(sizeof(int) * s.nprocs);
	s.first_bucket = xmalloc(sizeof(int) * (s.nprocs + 1));

	if (s.rank == 0)
		printf("\n NAS Parallel Benchmarks (gamma project implementation) - IS Benchmark\n"
		       " Size: %ld (class %c)  Iterations: %d  Processes: %d\n",
		       s.total_keys, c->cls, IS_ITERS, s.nprocs);

	create_keys(&s);
	rank_keys(&s, 1); /* untimed, as in NPB */

	int passed = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (int it = 1; it <= IS_ITERS; it++) {
		if (s.rank == 0)
			printf("        %d\n", it);
		passed += rank_keys(&s, it);
	}
	double tl = MPI_Wtime() - t0, t;
	MPI_Allreduce(&tl, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

	int gpassed = 0;
	MPI_Allreduce(&passed, &gpassed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	bool full = full_verify(&s);
	bool ok = full && gpassed == NTEST * IS_ITERS;
	if (s.rank == 0) {
		printf(" Partial verification: %d of %d checks passed; full verification %s\n",
		       gpassed, NTEST * IS_ITERS, full ? "passed" : "FAILED");
		struct npb_report r = {
		    .name = "IS",
		    .cls = c->cls,
		    .size = {s.total_keys, 0, 0},
		    .iterations = IS_ITERS,
		    .seconds = t,
		    .mops = (double)IS_ITERS * s.total_keys / t / 1.0e6,
		    .optype = "keys ranked",
		    .verified = ok,
		    .nprocs = s.nprocs,
		};
		npb_print_report(&r);
	}
	MPI_Finalize();
	return ok ? 0 : 1;
}
