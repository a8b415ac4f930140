/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * until-stop: every rank passes verified messages around a ring, an eager
 * size and a rendezvous size each round, until the test says stop: a job
 * that outlives whatever the test does to it by construction.
 *
 *   until-stop READY_FILE STOP_FILE   rank 0 creates READY_FILE after the
 *                                     first verified round (then writes the
 *                                     rounds done into it every 64) and stops
 *                                     the job once STOP_FILE exists.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const int sizes[] = {200, 300000};

static uint8_t pat(int src, long round, int i)
{
	return (uint8_t)(src * 131 + round * 7 + i * 13 + (i >> 9));
}

/* READY_FILE says how far the job got (rounds), replaced whole: a test
 * waits for rounds after whatever it did to the job. */
static void note_round(const char *path, long round)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!(f = fopen(tmp, "w")) || fprintf(f, "%ld\n", round) < 0 || fclose(f) ||
	    rename(tmp, path))
		MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char **argv)
{
	int rank, n, stop = 0;
	long round = 0;
	uint8_t *sbuf, *rbuf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (argc != 3) {
		if (rank == 0)
			fprintf(stderr, "usage: until-stop READY_FILE STOP_FILE\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	sbuf = malloc(sizes[1]);
	rbuf = malloc(sizes[1]);
	if (!sbuf || !rbuf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	int to = (rank + 1) % n, from = (rank + n - 1) % n;
	while (!stop) {
		for (int k = 0; k < 2; k++) {
			for (int i = 0; i < sizes[k]; i++)
				sbuf[i] = pat(rank, round, i);
			memset(rbuf, 0, sizes[k]);
			MPI_Sendrecv(sbuf, sizes[k], MPI_BYTE, to, k, rbuf, sizes[k], MPI_BYTE,
			             from, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			for (int i = 0; i < sizes[k]; i++)
				if (rbuf[i] != pat(from, round, i)) {
					fprintf(stderr,
					        "until-stop: rank %d round %ld: byte %d of %d from "
					        "rank %d wrong\n",
					        rank, round, i, sizes[k], from);
					MPI_Abort(MPI_COMM_WORLD, 1);
				}
		}
		round++;
		if (rank == 0) {
			if (round == 1 || round % 64 == 0)
				note_round(argv[1], round);
			stop = access(argv[2], F_OK) == 0;
			usleep(2000); /* a steady job, not a busy one: the machine is shared */
		}
		MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
	}
	if (rank == 0)
		printf("until-stop: %ld rounds verified on %d ranks\n", round, n);
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return 0;
}
