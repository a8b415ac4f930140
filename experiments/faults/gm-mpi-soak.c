/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gm-mpi-soak: MPI traffic that lasts exactly as long as a test needs it, so
 * that whatever the test does to the job (hostile frames, a link going down,
 * a killed rank) happens while the job runs, however fast the machine is.
 *
 *   gm-mpi-soak READY STOP
 *
 * Every rank sends a buffer to its right neighbour and receives one from its
 * left, round after round, sizes cycling from 1 B to 1 MiB (eager and
 * rendezvous), and checks every byte.  After the first round that verified
 * on every rank, rank 0 creates READY: the job's connections are up.  Rank 0
 * looks for STOP after every round and the ranks agree (allreduce) on its
 * answer and on any error, so all stop together, after the same round.
 * Prints "gm-mpi-soak: ok: R rounds, B bytes verified" and exits 0 only if
 * every byte of every round was right.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LEN (1u << 20)

static const size_t sizes[] = {1, 100, 4000, 65536, MAX_LEN};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static uint8_t pattern(int src, long round, size_t i)
{
	uint32_t x = (uint32_t)src * 2654435761u ^ (uint32_t)round * 40503u ^ (uint32_t)i * 97u;
	return (uint8_t)(x ^ x >> 11 ^ x >> 23);
}

int main(int argc, char **argv)
{
	int rank, size;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc != 3) {
		if (rank == 0)
			fprintf(stderr, "usage: gm-mpi-soak READY STOP\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	uint8_t *sb = malloc(MAX_LEN), *rb = malloc(MAX_LEN);
	if (!sb || !rb)
		MPI_Abort(MPI_COMM_WORLD, 3);
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	long round = 0, bytes = 0;
	int flags[2] = {0, 0}; /* stop, error */

	while (!flags[0] && !flags[1]) {
		size_t n = sizes[round % NSIZES];
		int bad = 0;

		for (size_t i = 0; i < n; i++)
			sb[i] = pattern(rank, round, i);
		memset(rb, 0, n);
		MPI_Sendrecv(sb, (int)n, MPI_BYTE, right, 1, rb, (int)n, MPI_BYTE, left, 1,
		             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		for (size_t i = 0; i < n && !bad; i++)
			if (rb[i] != pattern(left, round, i)) {
				fprintf(
				    stderr,
				    "gm-mpi-soak: FAIL: rank %d round %ld: byte %zu of %zu from "
				    "rank %d wrong\n",
				    rank, round, i, n, left);
				bad = 1;
			}
		bytes += (long)n;
		round++;
		flags[0] = rank == 0 && access(argv[2], F_OK) == 0;
		flags[1] = bad;
		MPI_Allreduce(MPI_IN_PLACE, flags, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
		if (round == 1 && rank == 0 && !flags[1]) {
			FILE *f = fopen(argv[1], "w");
			if (!f || fclose(f)) {
				perror(argv[1]);
				MPI_Abort(MPI_COMM_WORLD, 2);
			}
		}
		/* The job need only be alive and busy, not flat out: leave the
		 * (shared, small) machine some time for the test's own work. */
		usleep(1000);
	}
	if (rank == 0 && !flags[1])
		printf("gm-mpi-soak: ok: %ld rounds, %ld bytes verified per rank\n", round, bytes);
	fflush(stdout);
	free(sb);
	free(rb);
	MPI_Finalize();
	return flags[1];
}
