/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * silent-peer: rank 0 sends one message to rank 1, whose link the test cuts
 * for gamma frames, then only waits to receive from it.  The send completes
 * at once (buffered), so no BTL operation is left to fail: the job must
 * still end, with an error naming the peer, once gamma's peer timeout
 * passes, instead of waiting forever.
 *
 *   silent-peer READY_FILE   rank 0 creates READY_FILE after a barrier and
 *                            waits for it to disappear (the test cuts the
 *                            link, then removes it) before sending.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int rank, v = 42;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (argc != 2) {
		if (rank == 0)
			fprintf(stderr, "usage: silent-peer READY_FILE\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) {
		FILE *f = fopen(argv[1], "w");

		if (!f)
			MPI_Abort(MPI_COMM_WORLD, 2);
		fclose(f);
		while (access(argv[1], F_OK) == 0)
			usleep(10000);
		MPI_Send(&v, 1, MPI_INT, 1, 7, MPI_COMM_WORLD);
		MPI_Recv(&v, 1, MPI_INT, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		printf("silent-peer: rank 0 got %d: the link was not cut\n", v);
	} else if (rank == 1) {
		MPI_Recv(&v, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Send(&v, 1, MPI_INT, 0, 8, MPI_COMM_WORLD);
	}
	MPI_Finalize();
	return 0;
}
