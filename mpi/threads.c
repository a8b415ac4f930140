/* MPI_THREAD_MULTIPLE: several threads per rank send and receive at once,
 * each on its own communicator (a dup of MPI_COMM_WORLD) or, for every
 * other thread, on MPI_COMM_WORLD with its own tag. Ranks pair up (0-1,
 * 2-3, ...); in every round each thread posts receives and sends of every
 * size from 8 B to 1 MiB to its partner thread at once, then checks every
 * byte, the guard past each message and each status. Needs an even number
 * of ranks and the MPI library to provide MPI_THREAD_MULTIPLE.
 *   threads [--threads N] [--rounds N]   (defaults 4 and 6; --quick: 3 rounds)
 */
#include <pthread.h>

#include "suite.h"

#define MAX_THREADS 16
#define TAG_BASE    700

/* Eager, around the BTL's 64 KiB eager/max-send limit, rendezvous, 1 MiB;
 * odd sizes end in a partial frame. */
static const size_t sizes[] = {8, 1000, 4096, 65000, 65536, 65537, 200003, 524288, 1 << 20};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

struct worker {
	pthread_t tid;
	int t;
	MPI_Comm comm; /* its own dup, or MPI_COMM_WORLD */
	int tag;
	int peer;
	int rounds;
	int mpi_failed; /* an MPI call returned an error */
};

/* suite_error counts in shared state: one thread at a time checks. */
static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t seed_of(int rank, int t, size_t size, int round)
{
	return suite_seed(rank * MAX_THREADS + t, size, round);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	uint8_t *sbuf[NSIZES], *rbuf[NSIZES];
	MPI_Request rq[2 * NSIZES];
	MPI_Status st[2 * NSIZES];

	for (size_t k = 0; k < NSIZES; k++) {
		sbuf[k] = suite_alloc(sizes[k]);
		rbuf[k] = suite_alloc(sizes[k] + SUITE_GUARD);
	}
	for (int r = 0; r < w->rounds; r++) {
		for (size_t k = 0; k < NSIZES; k++) {
			memset(rbuf[k], SUITE_CANARY, sizes[k] + SUITE_GUARD);
			suite_fill(sbuf[k], sizes[k], seed_of(S.rank, w->t, sizes[k], r));
		}
		/* Sizes in opposite orders on the two sides: eager and rendezvous
		 * messages of all threads cross on the wire at once. */
		for (size_t k = 0; k < NSIZES; k++)
			if (MPI_Irecv(rbuf[k], (int)sizes[k], MPI_BYTE, w->peer, w->tag + (int)k,
			              w->comm, &rq[k]) != MPI_SUCCESS)
				w->mpi_failed = 1;
		for (size_t i = 0; i < NSIZES; i++) {
			size_t k = S.rank & 1 ? NSIZES - 1 - i : i;
			if (MPI_Isend(sbuf[k], (int)sizes[k], MPI_BYTE, w->peer, w->tag + (int)k,
			              w->comm, &rq[NSIZES + k]) != MPI_SUCCESS)
				w->mpi_failed = 1;
		}
		if (MPI_Waitall(2 * NSIZES, rq, st) != MPI_SUCCESS)
			w->mpi_failed = 1;
		pthread_mutex_lock(&check_lock);
		for (size_t k = 0; k < NSIZES; k++) {
			char what[96], sz[32];
			snprintf(what, sizeof(what), "thread %d round %d %s from rank %d", w->t, r,
			         suite_size_name(sizes[k], sz, sizeof(sz)), w->peer);
			suite_check_status(what, &st[k], w->peer, w->tag + (int)k, MPI_BYTE,
			                   (int)sizes[k]);
			suite_check_msg(what, rbuf[k], sizes[k],
			                seed_of(w->peer, w->t, sizes[k], r));
		}
		pthread_mutex_unlock(&check_lock);
	}
	for (size_t k = 0; k < NSIZES; k++) {
		free(sbuf[k]);
		free(rbuf[k]);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct worker w[MAX_THREADS];
	int nthreads = 4, rounds = 6;
	int provided = suite_init_thread(&argc, &argv, MPI_THREAD_MULTIPLE);

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else
			suite_usage_error(argv[0], "usage: threads [--threads N] [--rounds N]");
	}
	if (nthreads < 1 || nthreads > MAX_THREADS || rounds < 1)
		suite_usage_error(argv[0], "--threads 1..16, --rounds >= 1");
	if (S.quick && rounds > 3)
		rounds = 3;
	if (S.size % 2)
		suite_usage_error(argv[0], "needs an even number of ranks");
	CHECK(provided == MPI_THREAD_MULTIPLE,
	      "MPI_Init_thread provided level %d, not MPI_THREAD_MULTIPLE (%d)", provided,
	      MPI_THREAD_MULTIPLE);
	suite_item("MPI_Init_thread provides MPI_THREAD_MULTIPLE");
	if (provided != MPI_THREAD_MULTIPLE)
		return suite_finish();

	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	for (int t = 0; t < nthreads; t++) {
		w[t] = (struct worker){.t = t, .peer = S.rank ^ 1, .rounds = rounds};
		if (t % 2) {
			w[t].comm = MPI_COMM_WORLD;
			w[t].tag = TAG_BASE + t * (int)NSIZES;
		} else {
			MPI_Comm_dup(MPI_COMM_WORLD, &w[t].comm);
			MPI_Comm_set_errhandler(w[t].comm, MPI_ERRORS_RETURN);
			w[t].tag = TAG_BASE;
		}
	}
	for (int t = 0; t < nthreads; t++)
		if (pthread_create(&w[t].tid, NULL, work, &w[t])) {
			fprintf(stderr, "rank %d: pthread_create failed\n", S.rank);
			MPI_Abort(MPI_COMM_WORLD, 3);
		}
	for (int t = 0; t < nthreads; t++) {
		pthread_join(w[t].tid, NULL);
		CHECK(!w[t].mpi_failed, "thread %d: an MPI call returned an error", t);
		if (w[t].comm != MPI_COMM_WORLD)
			MPI_Comm_free(&w[t].comm);
	}
	suite_item("%d threads per rank x %d rounds, %zu sizes 8 B .. 1 MiB each way at once, "
	           "own communicator or tag",
	           nthreads, rounds, NSIZES);
	return suite_finish();
}
