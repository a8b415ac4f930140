/* All-to-all storm for experiments/faults/gamma-faults --storm: every rank exchanges with
 * every rank through MPI_Alltoall, alternating small (64 B) and large (128 KiB,
 * past the rendezvous threshold) blocks, for a bounded number of rounds or
 * seconds, whichever ends first.  Every byte received is checked against a
 * pattern of (source, destination, round, offset).
 * usage: gm-a2a-storm [ROUNDS [SECONDS]]   (default 40 rounds, 60 s)
 * Prints "ok: ..." per verified size and "done: N rounds, F failed".
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint8_t pat(int src, int dst, int round, size_t i)
{
	uint32_t x = (uint32_t)src * 2654435761u ^ (uint32_t)dst * 40503u ^ (uint32_t)round * 97u ^
	             (uint32_t)i * 2246822519u;
	return (uint8_t)(x ^ x >> 13 ^ x >> 24);
}

int main(int argc, char **argv)
{
	int rank, size, rounds = argc > 1 ? atoi(argv[1]) : 40;
	double limit = argc > 2 ? atof(argv[2]) : 60.0, t0;
	const size_t sizes[2] = {64, 128 * 1024};
	long bad = 0, done = 0, all_bad = 0, bytes[2] = {0, 0};

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (rounds <= 0 || limit <= 0) {
		if (rank == 0)
			fprintf(stderr, "usage: gm-a2a-storm [ROUNDS>0 [SECONDS>0]]\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	uint8_t *sb = malloc(sizes[1] * size), *rb = malloc(sizes[1] * size);
	if (!sb || !rb)
		MPI_Abort(MPI_COMM_WORLD, 3);
	t0 = MPI_Wtime();
	for (int r = 0; r < rounds; r++) {
		size_t n = sizes[r % 2];
		int stop;

		for (int d = 0; d < size; d++)
			for (size_t i = 0; i < n; i++)
				sb[d * n + i] = pat(rank, d, r, i);
		for (size_t i = 0; i < n * size; i++)
			rb[i] = (uint8_t)~pat(0, 0, 0, i);
		MPI_Alltoall(sb, (int)n, MPI_BYTE, rb, (int)n, MPI_BYTE, MPI_COMM_WORLD);
		for (int s = 0; s < size; s++)
			for (size_t i = 0; i < n; i++)
				if (rb[s * n + i] != pat(s, rank, r, i)) {
					if (bad++ < 5)
						fprintf(stderr,
						        "FAIL: rank %d round %d: byte %zu from %d "
						        "wrong\n",
						        rank, r, i, s);
					break;
				}
		bytes[r % 2] += (long)(n * size);
		done++;
		/* all ranks agree on when to stop, so no one waits in a lone alltoall */
		stop = MPI_Wtime() - t0 > limit;
		MPI_Allreduce(MPI_IN_PLACE, &stop, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
		if (stop)
			break;
	}
	MPI_Allreduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0) {
		if (!all_bad) {
			printf("ok: alltoall %zu B blocks, %d ranks, every byte verified\n",
			       sizes[0], size);
			printf("ok: alltoall %zu B blocks, %d ranks, every byte verified\n",
			       sizes[1], size);
		}
		printf("done: %ld rounds in %.1f s, %ld failed\n", done, MPI_Wtime() - t0, all_bad);
	}
	free(sb);
	free(rb);
	MPI_Finalize();
	return all_bad ? 1 : 0;
}
