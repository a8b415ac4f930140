/* One-sided communication: MPI_Put/MPI_Get/MPI_Accumulate with fence epochs and
 * with passive-target lock/unlock, verified element by element.
 *
 * Open MPI 4.1 picks osc rdma by default, which needs a BTL with put/get; over a
 * send-only BTL (btl gamma, btl tcp) run with `--mca osc pt2pt` (run-suite.sh adds
 * it for Open MPI unless an osc is given). MPICH needs nothing extra.
 *
 * Window layout on every rank (int64 elements), N = block size:
 *   [0, N)          written by Put from the left neighbour
 *   [N, 2N)         read by Get from the right neighbour (owner fills it)
 *   [2N, 3N)        target of Accumulate(SUM) from every rank
 *   [3N, 3N + 8)    guard: must never change
 */
#include "suite.h"

static int64_t val(int rank, long i, int salt)
{
	return (int64_t)(suite_mix(((uint64_t)rank << 36) ^ ((uint64_t)i << 6) ^ (uint64_t)salt) >>
	                 20);
}

static void check(const char *what, const int64_t *b, long n, int rank, int salt)
{
	for (long i = 0; i < n; i++)
		if (b[i] != val(rank, i, salt)) {
			suite_error("%s: element %ld got %lld want %lld", what, i, (long long)b[i],
			            (long long)val(rank, i, salt));
			return;
		}
}

static void check_acc(const char *what, const int64_t *b, long n, int salt)
{
	for (long i = 0; i < n; i++) {
		int64_t want = 0;
		for (int k = 0; k < S.size; k++)
			want += val(k, i, salt);
		if (b[i] != want) {
			suite_error("%s: element %ld got %lld want %lld", what, i, (long long)b[i],
			            (long long)want);
			return;
		}
	}
}

static void check_guard(const char *what, const int64_t *g)
{
	int64_t c;
	memset(&c, SUITE_CANARY, sizeof(c));
	for (int i = 0; i < 8; i++)
		CHECK(g[i] == c, "%s: guard element %d overwritten", what, i);
}

static void fence_test(MPI_Win win, int64_t *base, long N, int salt)
{
	int right = (S.rank + 1) % S.size, left = (S.rank + S.size - 1) % S.size;
	int64_t *src = suite_alloc(N * sizeof(int64_t)), *got = suite_alloc(N * sizeof(int64_t));
	memset(base, 0, 3 * N * sizeof(int64_t));
	memset(base + 3 * N, SUITE_CANARY, 8 * sizeof(int64_t));
	for (long i = 0; i < N; i++)
		base[N + i] = val(S.rank, i, salt + 1);
	for (long i = 0; i < N; i++)
		src[i] = val(S.rank, i, salt);
	MPI_Win_fence(0, win);
	MPI_Put(src, (int)N, MPI_INT64_T, right, 0, (int)N, MPI_INT64_T, win);
	MPI_Get(got, (int)N, MPI_INT64_T, right, N, (int)N, MPI_INT64_T, win);
	MPI_Win_fence(0, win);
	for (long i = 0; i < N; i++)
		src[i] = val(S.rank, i, salt + 2);
	for (int k = 0; k < S.size; k++)
		MPI_Accumulate(src, (int)N, MPI_INT64_T, k, 2 * N, (int)N, MPI_INT64_T, MPI_SUM,
		               win);
	MPI_Win_fence(0, win);
	check("fence put", base, N, left, salt);
	check("fence get", got, N, right, salt + 1);
	check_acc("fence accumulate", base + 2 * N, N, salt + 2);
	check_guard("fence", base + 3 * N);
	MPI_Win_fence(0, win);
	free(src);
	free(got);
}

static void lock_test(MPI_Win win, int64_t *base, long N, int salt)
{
	int right = (S.rank + 1) % S.size, left = (S.rank + S.size - 1) % S.size;
	int64_t *src = suite_alloc(N * sizeof(int64_t)), *got = suite_alloc(N * sizeof(int64_t));
	/* the owner prepares its window under its own exclusive lock */
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, S.rank, 0, win);
	memset(base, 0, 3 * N * sizeof(int64_t));
	memset(base + 3 * N, SUITE_CANARY, 8 * sizeof(int64_t));
	for (long i = 0; i < N; i++)
		base[N + i] = val(S.rank, i, salt + 1);
	MPI_Win_unlock(S.rank, win);
	MPI_Barrier(MPI_COMM_WORLD);

	for (long i = 0; i < N; i++)
		src[i] = val(S.rank, i, salt);
	MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
	MPI_Put(src, (int)N, MPI_INT64_T, right, 0, (int)N, MPI_INT64_T, win);
	MPI_Get(got, (int)N, MPI_INT64_T, right, N, (int)N, MPI_INT64_T, win);
	MPI_Win_unlock(right, win);
	check("lock get", got, N, right, salt + 1);

	/* exclusive locks serialize the accumulates of all ranks on each target */
	int64_t *acc = suite_alloc(N * sizeof(int64_t));
	for (long i = 0; i < N; i++)
		acc[i] = val(S.rank, i, salt + 2);
	for (int k = 0; k < S.size; k++) {
		int t = (S.rank + k) % S.size;
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win);
		MPI_Accumulate(acc, (int)N, MPI_INT64_T, t, 2 * N, (int)N, MPI_INT64_T, MPI_SUM,
		               win);
		MPI_Win_unlock(t, win);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, S.rank, 0, win);
	check("lock put", base, N, left, salt);
	check_acc("lock accumulate", base + 2 * N, N, salt + 2);
	check_guard("lock", base + 3 * N);
	MPI_Win_unlock(S.rank, win);
	MPI_Barrier(MPI_COMM_WORLD);
	free(src);
	free(got);
	free(acc);
}

int main(int argc, char **argv)
{
	suite_init(&argc, &argv);
	if (argc > 1)
		suite_usage_error(argv[0], "usage: onesided [--quick]");
	static const long sizes[] = {1, 100, 200000};
	for (int s = 0; s < 3; s++) {
		long N = sizes[s];
		int64_t *base;
		MPI_Win win;
		MPI_Alloc_mem((3 * N + 8) * sizeof(int64_t), MPI_INFO_NULL, &base);
		MPI_Win_create(base, (3 * N + 8) * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
		               MPI_COMM_WORLD, &win);
		for (int round = 0; round < 2; round++) {
			fence_test(win, base, N, 10 * round + 100 * s);
			suite_item(
			    "fence: put/get ring + accumulate(sum) from all, %ld x int64 #%d", N,
			    round);
			lock_test(win, base, N, 10 * round + 100 * s + 5);
			suite_item(
			    "lock/unlock: put/get ring + accumulate(sum) from all, %ld x int64 #%d",
			    N, round);
		}
		MPI_Win_free(&win);
		MPI_Free_mem(base);
	}
	return suite_finish();
}
