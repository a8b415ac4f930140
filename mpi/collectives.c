/* Every collective, verified exactly against values each rank computes locally.
 *
 * Contributions are integers v(rank, i) so SUM/MAX/MIN/BXOR results are exact.
 * Roots rotate over all ranks; counts include a small case and a large one (past
 * the eager limit, so the collective algorithms' rendezvous paths run too).
 * Receive buffers carry a canary in gaps (v-variants' displacements) and past the
 * end, which must survive.
 */
#include "suite.h"

static int64_t v(int rank, long i, int salt)
{
	return (int64_t)(suite_mix(((uint64_t)rank << 40) ^ ((uint64_t)i << 8) ^ (uint64_t)salt) >>
	                 24) -
	       (1LL << 38);
}

static int64_t canary64(void)
{
	int64_t c;
	memset(&c, SUITE_CANARY, sizeof(c));
	return c;
}

static void fill_v(int64_t *b, long n, int rank, int salt)
{
	for (long i = 0; i < n; i++)
		b[i] = v(rank, i, salt);
}

static void set_canary(int64_t *b, long n)
{
	memset(b, SUITE_CANARY, n * sizeof(*b));
}

/* Checks b[0..n) == v(rank, first+i, salt). */
static void check_v(const char *what, const int64_t *b, long n, int rank, long first, int salt)
{
	for (long i = 0; i < n; i++) {
		int64_t want = v(rank, first + i, salt);
		if (b[i] != want) {
			suite_error("%s: element %ld (from rank %d) got %lld want %lld", what, i,
			            rank, (long long)b[i], (long long)want);
			return;
		}
	}
}

static void check_canary(const char *what, const int64_t *b, long n)
{
	for (long i = 0; i < n; i++)
		if (b[i] != canary64()) {
			suite_error("%s: element %ld outside the result was overwritten", what, i);
			return;
		}
}

static int64_t reduce_expect(MPI_Op op, long i, int salt, int nranks)
{
	int64_t r = v(0, i, salt);
	for (int k = 1; k < nranks; k++) {
		int64_t x = v(k, i, salt);
		if (op == MPI_SUM)
			r += x;
		else if (op == MPI_MAX)
			r = x > r ? x : r;
		else if (op == MPI_MIN)
			r = x < r ? x : r;
		else if (op == MPI_BXOR)
			r ^= x;
	}
	return r;
}

static void check_reduced(const char *what, const int64_t *b, long n, MPI_Op op, int salt,
                          int nranks)
{
	for (long i = 0; i < n; i++) {
		int64_t want = reduce_expect(op, i, salt, nranks);
		if (b[i] != want) {
			suite_error("%s: element %ld got %lld want %lld", what, i, (long long)b[i],
			            (long long)want);
			return;
		}
	}
}

/* A barrier must not let anyone out before everyone is in: ranks send a message to
 * the root after leaving; the root polls for such messages before entering. */
static void barrier_test(int rounds)
{
	for (int r = 0; r < rounds; r++) {
		int root = r % S.size, flag = 0;
		if (S.rank == root) {
			for (int i = 0; i < 2000 && !flag; i++)
				MPI_Iprobe(MPI_ANY_SOURCE, 300 + r, MPI_COMM_WORLD, &flag,
				           MPI_STATUS_IGNORE);
			CHECK(!flag, "barrier round %d: a rank left before root %d entered", r,
			      root);
		}
		MPI_Barrier(MPI_COMM_WORLD);
		if (S.rank == root) {
			for (int k = 0; k < S.size - 1; k++) {
				int x;
				MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 300 + r, MPI_COMM_WORLD,
				         MPI_STATUS_IGNORE);
			}
		} else {
			MPI_Send(&r, 1, MPI_INT, root, 300 + r, MPI_COMM_WORLD);
		}
	}
}

static void bcast_test(long n, int root)
{
	int64_t *b = suite_alloc((n + 8) * sizeof(*b));
	set_canary(b, n + 8);
	if (S.rank == root)
		fill_v(b, n, root, 1);
	MPI_Bcast(b, (int)n, MPI_INT64_T, root, MPI_COMM_WORLD);
	check_v("bcast", b, n, root, 0, 1);
	check_canary("bcast", b + n, 8);
	free(b);
}

static void reduce_tests(long n, int root)
{
	MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_BXOR};
	const char *names[] = {"sum", "max", "min", "bxor"};
	int64_t *s = suite_alloc(n * sizeof(*s)), *r = suite_alloc((n + 8) * sizeof(*r));
	char what[64];
	for (int o = 0; o < 4; o++) {
		int salt = 10 + o;
		fill_v(s, n, S.rank, salt);
		set_canary(r, n + 8);
		MPI_Reduce(s, r, (int)n, MPI_INT64_T, ops[o], root, MPI_COMM_WORLD);
		snprintf(what, sizeof(what), "reduce %s root %d", names[o], root);
		if (S.rank == root) { /* elsewhere recvbuf is not significant */
			check_reduced(what, r, n, ops[o], salt, S.size);
			check_canary(what, r + n, 8);
		}
		set_canary(r, n + 8);
		MPI_Allreduce(s, r, (int)n, MPI_INT64_T, ops[o], MPI_COMM_WORLD);
		snprintf(what, sizeof(what), "allreduce %s", names[o]);
		check_reduced(what, r, n, ops[o], salt, S.size);
		check_canary(what, r + n, 8);
		/* in place */
		fill_v(r, n, S.rank, salt);
		MPI_Allreduce(MPI_IN_PLACE, r, (int)n, MPI_INT64_T, ops[o], MPI_COMM_WORLD);
		snprintf(what, sizeof(what), "allreduce in-place %s", names[o]);
		check_reduced(what, r, n, ops[o], salt, S.size);
	}
	free(s);
	free(r);
}

/* Rank k contributes cnt(k) = base + k elements; v-variants place them with gaps. */
static long cnt(long base, int k)
{
	return base + k;
}

static void gather_scatter_tests(long base, int root)
{
	int P = S.size;
	int *counts = suite_alloc(P * sizeof(int)), *displs = suite_alloc(P * sizeof(int));
	long total = 0, mine = cnt(base, S.rank), maxc = cnt(base, P - 1);
	for (int k = 0; k < P; k++) {
		counts[k] = (int)cnt(base, k);
		displs[k] = (int)total;
		total += counts[k] + 3; /* gap of 3 elements after each block */
	}
	int64_t *s = suite_alloc((maxc * P + 8) * sizeof(int64_t));
	int64_t *r = suite_alloc((total + maxc * P + 8) * sizeof(int64_t));
	char what[64];

	/* gather: equal counts (base) */
	fill_v(s, base, S.rank, 20);
	set_canary(r, base * P + 8);
	MPI_Gather(s, (int)base, MPI_INT64_T, r, (int)base, MPI_INT64_T, root, MPI_COMM_WORLD);
	snprintf(what, sizeof(what), "gather root %d", root);
	if (S.rank == root) {
		for (int k = 0; k < P; k++)
			check_v(what, r + k * base, base, k, 0, 20);
		check_canary(what, r + base * P, 8);
	}

	/* gatherv with gaps */
	fill_v(s, mine, S.rank, 21);
	set_canary(r, total + 8);
	MPI_Gatherv(s, (int)mine, MPI_INT64_T, r, counts, displs, MPI_INT64_T, root,
	            MPI_COMM_WORLD);
	snprintf(what, sizeof(what), "gatherv root %d", root);
	if (S.rank == root)
		for (int k = 0; k < P; k++) {
			check_v(what, r + displs[k], counts[k], k, 0, 21);
			check_canary(what, r + displs[k] + counts[k], 3);
		}

	/* scatter: root's block k goes to rank k */
	if (S.rank == root)
		for (int k = 0; k < P; k++)
			fill_v(s + k * base, base, k, 22);
	set_canary(r, base + 8);
	MPI_Scatter(s, (int)base, MPI_INT64_T, r, (int)base, MPI_INT64_T, root, MPI_COMM_WORLD);
	snprintf(what, sizeof(what), "scatter root %d", root);
	check_v(what, r, base, S.rank, 0, 22);
	check_canary(what, r + base, 8);

	/* scatterv from a gapped layout */
	int64_t *sv = suite_alloc((total + 8) * sizeof(int64_t));
	if (S.rank == root)
		for (int k = 0; k < P; k++)
			fill_v(sv + displs[k], counts[k], k, 23);
	set_canary(r, mine + 8);
	MPI_Scatterv(sv, counts, displs, MPI_INT64_T, r, (int)mine, MPI_INT64_T, root,
	             MPI_COMM_WORLD);
	snprintf(what, sizeof(what), "scatterv root %d", root);
	check_v(what, r, mine, S.rank, 0, 23);
	check_canary(what, r + mine, 8);
	free(sv);

	/* allgather / allgatherv (root-independent: run once, from root 0's call) */
	if (root == 0) {
		fill_v(s, base, S.rank, 24);
		set_canary(r, base * P + 8);
		MPI_Allgather(s, (int)base, MPI_INT64_T, r, (int)base, MPI_INT64_T, MPI_COMM_WORLD);
		for (int k = 0; k < P; k++)
			check_v("allgather", r + k * base, base, k, 0, 24);
		check_canary("allgather", r + base * P, 8);

		fill_v(s, mine, S.rank, 25);
		set_canary(r, total + 8);
		MPI_Allgatherv(s, (int)mine, MPI_INT64_T, r, counts, displs, MPI_INT64_T,
		               MPI_COMM_WORLD);
		for (int k = 0; k < P; k++) {
			check_v("allgatherv", r + displs[k], counts[k], k, 0, 25);
			check_canary("allgatherv", r + displs[k] + counts[k], 3);
		}
	}
	free(counts);
	free(displs);
	free(s);
	free(r);
}

/* Element (i) of the block rank `from` sends to rank `to`. */
static int64_t a2a(int from, int to, long i, int salt)
{
	return v(from * 1000 + to, i, salt);
}

static void alltoall_tests(long base)
{
	int P = S.size, me = S.rank;
	long maxc = cnt(base, 2 * P);
	int *sc = suite_alloc(P * sizeof(int)), *sd = suite_alloc(P * sizeof(int));
	int *rc = suite_alloc(P * sizeof(int)), *rd = suite_alloc(P * sizeof(int));
	int64_t *s = suite_alloc((maxc * P * 2 + 8) * sizeof(int64_t));
	int64_t *r = suite_alloc((maxc * P * 2 + 8) * sizeof(int64_t));

	/* alltoall */
	for (int k = 0; k < P; k++)
		for (long i = 0; i < base; i++)
			s[k * base + i] = a2a(me, k, i, 30);
	set_canary(r, base * P + 8);
	MPI_Alltoall(s, (int)base, MPI_INT64_T, r, (int)base, MPI_INT64_T, MPI_COMM_WORLD);
	for (int k = 0; k < P; k++)
		for (long i = 0; i < base; i++)
			if (r[k * base + i] != a2a(k, me, i, 30)) {
				suite_error("alltoall: block from %d elem %ld wrong", k, i);
				k = P;
				break;
			}
	check_canary("alltoall", r + base * P, 8);

	/* alltoallv: rank a sends cnt(base, a + b) elements to rank b, with gaps */
	long so = 0, ro = 0;
	for (int k = 0; k < P; k++) {
		sc[k] = (int)cnt(base, me + k);
		sd[k] = (int)so;
		so += sc[k] + 2;
		rc[k] = (int)cnt(base, k + me);
		rd[k] = (int)ro;
		ro += rc[k] + 1;
	}
	for (int k = 0; k < P; k++)
		for (long i = 0; i < sc[k]; i++)
			s[sd[k] + i] = a2a(me, k, i, 31);
	set_canary(r, ro + 8);
	MPI_Alltoallv(s, sc, sd, MPI_INT64_T, r, rc, rd, MPI_INT64_T, MPI_COMM_WORLD);
	for (int k = 0; k < P; k++) {
		for (long i = 0; i < rc[k]; i++)
			if (r[rd[k] + i] != a2a(k, me, i, 31)) {
				suite_error("alltoallv: block from %d elem %ld wrong", k, i);
				break;
			}
		check_canary("alltoallv gap", r + rd[k] + rc[k], 1);
	}

	/* alltoallw: byte displacements, and the type sent to odd ranks is a vector
	 * (every other element) while receivers always take contiguous int64s. */
	MPI_Datatype every2, *st = suite_alloc(P * sizeof(MPI_Datatype)),
	                     *rt = suite_alloc(P * sizeof(MPI_Datatype));
	MPI_Type_vector((int)base, 1, 2, MPI_INT64_T, &every2);
	MPI_Type_commit(&every2);
	int *swc = suite_alloc(P * sizeof(int)), *swd = suite_alloc(P * sizeof(int));
	int *rwc = suite_alloc(P * sizeof(int)), *rwd = suite_alloc(P * sizeof(int));
	for (int k = 0; k < P; k++) {
		st[k] = k % 2 ? every2 : MPI_INT64_T;
		swc[k] = k % 2 ? 1 : (int)base;
		swd[k] = (int)(k * 2 * base * sizeof(int64_t));
		rt[k] = MPI_INT64_T;
		rwc[k] = (int)base;
		rwd[k] = (int)(k * (base + 1) * sizeof(int64_t));
	}
	for (int k = 0; k < P; k++)
		for (long i = 0; i < 2 * base; i++)
			s[k * 2 * base + i] = k % 2 ? (i % 2 ? canary64() : a2a(me, k, i / 2, 32))
			                            : a2a(me, k, i, 32);
	set_canary(r, P * (base + 1) + 8);
	MPI_Alltoallw(s, swc, swd, st, r, rwc, rwd, rt, MPI_COMM_WORLD);
	for (int k = 0; k < P; k++) {
		for (long i = 0; i < base; i++)
			if (r[k * (base + 1) + i] != a2a(k, me, i, 32)) {
				suite_error("alltoallw: block from %d elem %ld wrong", k, i);
				break;
			}
		check_canary("alltoallw gap", r + k * (base + 1) + base, 1);
	}
	MPI_Type_free(&every2);
	free(st);
	free(rt);
	free(swc);
	free(swd);
	free(rwc);
	free(rwd);
	free(sc);
	free(sd);
	free(rc);
	free(rd);
	free(s);
	free(r);
}

static void reduce_scatter_scan_tests(long base)
{
	int P = S.size, me = S.rank;
	int *rc = suite_alloc(P * sizeof(int));
	long total = 0, first_mine = 0;
	for (int k = 0; k < P; k++) {
		rc[k] = (int)cnt(base, k);
		if (k < me)
			first_mine += rc[k];
		total += rc[k];
	}
	int64_t *s = suite_alloc((total + base * P) * sizeof(int64_t));
	int64_t *r = suite_alloc((total + base * P + 8) * sizeof(int64_t));

	fill_v(s, total, me, 40);
	set_canary(r, rc[me] + 8);
	MPI_Reduce_scatter(s, r, rc, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	for (long i = 0; i < rc[me]; i++)
		if (r[i] != reduce_expect(MPI_SUM, first_mine + i, 40, P)) {
			suite_error("reduce_scatter: element %ld wrong", i);
			break;
		}
	check_canary("reduce_scatter", r + rc[me], 8);

	fill_v(s, base * P, me, 41);
	set_canary(r, base + 8);
	MPI_Reduce_scatter_block(s, r, (int)base, MPI_INT64_T, MPI_BXOR, MPI_COMM_WORLD);
	for (long i = 0; i < base; i++)
		if (r[i] != reduce_expect(MPI_BXOR, me * base + i, 41, P)) {
			suite_error("reduce_scatter_block: element %ld wrong", i);
			break;
		}
	check_canary("reduce_scatter_block", r + base, 8);

	/* scan: inclusive prefix over ranks 0..me; exscan: over 0..me-1 */
	fill_v(s, base, me, 42);
	set_canary(r, base + 8);
	MPI_Scan(s, r, (int)base, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	check_reduced("scan", r, base, MPI_SUM, 42, me + 1);
	check_canary("scan", r + base, 8);

	set_canary(r, base + 8);
	MPI_Exscan(s, r, (int)base, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
	if (me > 0) /* rank 0's exscan result is undefined */
		check_reduced("exscan", r, base, MPI_MAX, 42, me);
	check_canary("exscan", r + base, 8);
	free(rc);
	free(s);
	free(r);
}

/* Several non-blocking collectives in flight at once, completed together. */
static void nonblocking_tests(long n)
{
	int P = S.size, me = S.rank, root = P - 1;
	MPI_Request rq[5];
	int64_t *bc = suite_alloc(n * sizeof(int64_t)), *as = suite_alloc(n * sizeof(int64_t));
	int64_t *ar = suite_alloc(n * sizeof(int64_t));
	int64_t *ts = suite_alloc(n * P * sizeof(int64_t)), *tr = suite_alloc(n * P * 8);
	int64_t *gs = suite_alloc(n * sizeof(int64_t)), *gr = suite_alloc(n * P * 8);

	if (me == root)
		fill_v(bc, n, root, 50);
	else
		set_canary(bc, n);
	fill_v(as, n, me, 51);
	for (int k = 0; k < P; k++)
		for (long i = 0; i < n; i++)
			ts[k * n + i] = a2a(me, k, i, 52);
	fill_v(gs, n, me, 53);
	set_canary(gr, n * P);

	MPI_Ibarrier(MPI_COMM_WORLD, &rq[0]);
	MPI_Ibcast(bc, (int)n, MPI_INT64_T, root, MPI_COMM_WORLD, &rq[1]);
	MPI_Iallreduce(as, ar, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD, &rq[2]);
	MPI_Ialltoall(ts, (int)n, MPI_INT64_T, tr, (int)n, MPI_INT64_T, MPI_COMM_WORLD, &rq[3]);
	MPI_Igather(gs, (int)n, MPI_INT64_T, gr, (int)n, MPI_INT64_T, 0, MPI_COMM_WORLD, &rq[4]);
	MPI_Waitall(5, rq, MPI_STATUSES_IGNORE);

	check_v("ibcast", bc, n, root, 0, 50);
	check_reduced("iallreduce", ar, n, MPI_SUM, 51, P);
	for (int k = 0; k < P; k++)
		for (long i = 0; i < n; i++)
			if (tr[k * n + i] != a2a(k, me, i, 52)) {
				suite_error("ialltoall: block from %d elem %ld wrong", k, i);
				k = P;
				break;
			}
	if (me == 0)
		for (int k = 0; k < P; k++)
			check_v("igather", gr + k * n, n, k, 0, 53);
	free(bc);
	free(as);
	free(ar);
	free(ts);
	free(tr);
	free(gs);
	free(gr);
}

int main(int argc, char **argv)
{
	suite_init(&argc, &argv);
	if (argc > 1)
		suite_usage_error(argv[0], "usage: collectives [--quick]");

	barrier_test(4 * S.size);
	suite_item("barrier x%d: nobody leaves before the root enters", 4 * S.size);

	static const long counts[] = {1, 7, 40000}; /* 40000 x 8 B: past any eager limit */
	for (int c = 0; c < 3; c++) {
		long n = counts[c];
		for (int root = 0; root < S.size; root++) {
			bcast_test(n, root);
			suite_item("bcast %ld x int64 root %d", n, root);
			reduce_tests(n, root);
			suite_item(
			    "reduce+allreduce(+in place) sum/max/min/bxor %ld x int64 root %d", n,
			    root);
			gather_scatter_tests(n, root);
			suite_item("gather(v)/scatter(v)%s base %ld root %d",
			           root ? "" : "/allgather(v)", n, root);
		}
		alltoall_tests(n);
		suite_item("alltoall/alltoallv/alltoallw base %ld", n);
		reduce_scatter_scan_tests(n);
		suite_item("reduce_scatter(_block)/scan/exscan base %ld", n);
		nonblocking_tests(n);
		suite_item("ibarrier+ibcast+iallreduce+ialltoall+igather together, %ld x int64", n);
	}
	return suite_finish();
}
