/* Kill-test helper: one rank dies in the middle of a p2p exchange while every
 * other rank is blocked receiving from it. The job must then END with a non-zero
 * status (run-die.sh enforces a timeout): a transport that hangs here would leave
 * users with a stuck job instead of an error.
 *
 * usage: die [VICTIM [MODE [ROUNDS]]]
 *   VICTIM  rank that dies (default 1)
 *   MODE    kill (raise SIGKILL, default), abort (abort(), SIGABRT),
 *           exit (_exit(7) without MPI_Finalize), mpi-abort (MPI_Abort)
 *   ROUNDS  verified ring exchanges before the death (default 5)
 * This program never exits 0: if the victim's death went unnoticed the others
 * stay blocked and the harness's timeout turns that into a failure.
 */
#include <signal.h>
#include <unistd.h>

#include "suite.h"

#define BIG (8 << 20)

int main(int argc, char **argv)
{
	suite_init(&argc, &argv);
	int victim = 1, rounds = 5;
	const char *mode = "kill";
	if (argc > 1)
		victim = atoi(argv[1]);
	if (argc > 2)
		mode = argv[2];
	if (argc > 3)
		rounds = atoi(argv[3]);
	if (argc > 4 || victim < 0 || victim >= S.size || S.size < 2 || rounds < 0 ||
	    (strcmp(mode, "kill") && strcmp(mode, "abort") && strcmp(mode, "exit") &&
	     strcmp(mode, "mpi-abort")))
		suite_usage_error(argv[0], "usage: die [VICTIM<nprocs (>=2 ranks)] "
		                           "[kill|abort|exit|mpi-abort] [ROUNDS>=0]");

	/* Healthy traffic first, so the death happens on a working connection. */
	int right = (S.rank + 1) % S.size, left = (S.rank + S.size - 1) % S.size;
	uint8_t *s = suite_alloc(BIG), *r = suite_recv_buf(BIG);
	for (int i = 0; i < rounds; i++) {
		size_t n = 65536;
		MPI_Status st;
		suite_fill(s, n, suite_seed(S.rank, n, i));
		MPI_Sendrecv(s, (int)n, MPI_BYTE, right, 1, r, (int)(n + SUITE_GUARD), MPI_BYTE,
		             left, 1, MPI_COMM_WORLD, &st);
		suite_check_msg("die: exchange before the death", r, n, suite_seed(left, n, i));
	}
	suite_item("die: %d ring exchanges before rank %d dies (%s)", rounds, victim, mode);
	MPI_Barrier(MPI_COMM_WORLD);

	if (S.rank == victim) {
		MPI_Request rq;
		int flag;
		/* Every other rank has its receive from us posted... */
		for (int i = 0; i < S.size - 1; i++)
			MPI_Recv(&flag, 1, MPI_INT, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD,
			         MPI_STATUS_IGNORE);
		/* ...and a large send starts, so the death happens mid-transfer. */
		suite_fill(s, BIG, suite_seed(S.rank, BIG, 99));
		MPI_Isend(s, BIG, MPI_BYTE, (victim + 1) % S.size, 2, MPI_COMM_WORLD, &rq);
		for (int i = 0; i < 50; i++)
			MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
		fprintf(stderr, "die: rank %d dies now (%s) with a %d-byte send in flight\n",
		        S.rank, mode, BIG);
		fflush(stderr);
		if (!strcmp(mode, "kill"))
			raise(SIGKILL);
		else if (!strcmp(mode, "abort"))
			abort();
		else if (!strcmp(mode, "exit"))
			_exit(7);
		else
			MPI_Abort(MPI_COMM_WORLD, 7);
		_exit(8); /* not reached */
	}
	/* Everyone else: blocked receiving from the victim, forever; the victim
	 * is told when the first receive is posted. */
	for (int posted = 0;; posted = 1) {
		MPI_Status st;
		MPI_Request rq;
		MPI_Irecv(r, BIG + SUITE_GUARD, MPI_BYTE, victim, MPI_ANY_TAG, MPI_COMM_WORLD, &rq);
		if (!posted)
			MPI_Send(&posted, 1, MPI_INT, victim, 3, MPI_COMM_WORLD);
		MPI_Wait(&rq, &st);
		fprintf(stderr, "die: rank %d received %s from rank %d, waiting for more\n", S.rank,
		        "a message", victim);
	}
}
