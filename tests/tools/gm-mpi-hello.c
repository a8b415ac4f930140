/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Tiny MPI check for the virtual cluster: every rank reports its host name;
 * rank 0 sends a deterministic buffer to every other rank, which verifies
 * every byte and returns it transformed, and rank 0 verifies that too.
 * Prints "host RANK NAME" lines and "gm-mpi-hello: ok N bytes" on success.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t pattern(size_t i, int rank)
{
	return (uint8_t)(i * 131u + (i >> 8) * 7u + (unsigned)rank * 17u + 1u);
}

static int check(const uint8_t *buf, size_t len, int rank)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != pattern(i, rank))
			return (int)i;
	return -1;
}

int main(int argc, char **argv)
{
	size_t len = argc > 1 ? strtoul(argv[1], NULL, 0) : 1u << 20;
	int rank, size, bad = 0;
	char name[MPI_MAX_PROCESSOR_NAME] = {0};
	int name_len;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Get_processor_name(name, &name_len);

	char *names = rank == 0 ? calloc((size_t)size, sizeof(name)) : NULL;
	MPI_Gather(name, sizeof(name), MPI_CHAR, names, sizeof(name), MPI_CHAR, 0, MPI_COMM_WORLD);

	uint8_t *buf = malloc(len);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	if (rank == 0) {
		for (int r = 0; r < size; r++)
			printf("host %d %s\n", r, names + (size_t)r * sizeof(name));
		for (int peer = 1; peer < size; peer++) {
			for (size_t i = 0; i < len; i++)
				buf[i] = pattern(i, 0);
			MPI_Send(buf, (int)len, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
			memset(buf, 0, len);
			MPI_Recv(buf, (int)len, MPI_BYTE, peer, 2, MPI_COMM_WORLD,
			         MPI_STATUS_IGNORE);
			int at = check(buf, len, peer);
			if (at >= 0) {
				printf("gm-mpi-hello: reply from rank %d wrong at byte %d\n", peer,
				       at);
				bad = 1;
			}
		}
	} else {
		MPI_Recv(buf, (int)len, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		int at = check(buf, len, 0);
		if (at >= 0) {
			printf("gm-mpi-hello: rank %d got a wrong byte at %d\n", rank, at);
			bad = 1;
		}
		for (size_t i = 0; i < len; i++)
			buf[i] = pattern(i, rank);
		MPI_Send(buf, (int)len, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
	}
	int any_bad = 0;
	MPI_Reduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
	if (rank == 0 && !any_bad)
		printf("gm-mpi-hello: ok %zu bytes each way with %d peers\n", len, size - 1);
	fflush(stdout);
	free(buf);
	free(names);
	MPI_Finalize();
	return any_bad;
}
