/* SPDX-License-Identifier: BSD-2-Clause */
/* A sender that outruns its receiver loses nothing.  Rank 0 starts N small
 * sends (1 to 64 bytes, each stamped with its index; MPI_Isend, so that it
 * relies on no buffering), creates FLAG, and waits for them; rank 1 makes
 * no MPI call until FLAG exists, so its unexpected messages pile up (in
 * ob1 and in the provider, whose caps the test may set low), then receives
 * all N in order, checks every byte and answers with the number of bad
 * messages.  Waits for conditions only.
 *
 *   outrun FLAG [N]     (default N 20000)
 *
 * Prints "outrun: OK: N messages, every byte checked" on rank 0, exit 0. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t len_of(uint32_t i)
{
	return 1 + (i * 37u) % 64;
}

static uint8_t pattern(uint32_t i, size_t j)
{
	return (uint8_t)(i * 13u + j * 101u + (i >> 8));
}

/* Its index in the first bytes (as many as fit), the pattern after. */
static void fill(uint8_t *b, uint32_t i, size_t len)
{
	for (size_t j = 0; j < len; j++)
		b[j] = j < sizeof(i) ? (uint8_t)(i >> (8 * j)) : pattern(i, j);
}

int main(int argc, char **argv)
{
	uint8_t buf[64], want[64];
	int rank, size, bad = 0;
	long n = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc < 2 || size != 2 || n < 1 || n > UINT32_MAX) {
		if (!rank)
			fprintf(stderr, "usage: mpirun -np 2 outrun FLAG [N]\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (rank == 0) {
		uint8_t(*out)[64] = malloc((size_t)n * sizeof(*out));
		MPI_Request *req = malloc((size_t)n * sizeof(*req));
		FILE *f;

		if (!out || !req)
			MPI_Abort(MPI_COMM_WORLD, 2);
		for (uint32_t i = 0; i < (uint32_t)n; i++) {
			fill(out[i], i, len_of(i));
			MPI_Isend(out[i], (int)len_of(i), MPI_BYTE, 1, 1, MPI_COMM_WORLD, &req[i]);
		}
		f = fopen(argv[1], "w");
		if (!f) {
			perror(argv[1]);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
		fclose(f);
		MPI_Waitall((int)n, req, MPI_STATUSES_IGNORE);
		MPI_Recv(&bad, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		free(out);
		free(req);
		if (bad) {
			printf("outrun: FAIL: %d of %ld messages wrong\n", bad, n);
		} else {
			printf("outrun: OK: %ld messages, every byte checked\n", n);
		}
	} else {
		while (access(argv[1], F_OK))
			usleep(1000);
		for (uint32_t i = 0; i < (uint32_t)n; i++) {
			MPI_Status st;
			int got;

			memset(buf, 0, sizeof(buf));
			MPI_Recv(buf, sizeof(buf), MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st);
			MPI_Get_count(&st, MPI_BYTE, &got);
			fill(want, i, len_of(i));
			if ((size_t)got != len_of(i) || memcmp(buf, want, len_of(i))) {
				if (bad < 5)
					fprintf(stderr,
					        "outrun: message %u: %d bytes, differ from the %zu "
					        "sent\n",
					        i, got, len_of(i));
				bad++;
			}
		}
		MPI_Send(&bad, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
	}
	MPI_Finalize();
	return bad ? 1 : 0;
}
