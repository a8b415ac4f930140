/* SPDX-License-Identifier: BSD-2-Clause */
/* MPI data check for a BTL: ping-pong of 0 B .. 16 MiB with every byte
 * verified, MPI_ANY_SOURCE receives, non-contiguous datatypes, and an
 * Allreduce, over whatever BTLs mpirun selects. Prints "btl-smoke: OK" on
 * rank 0 and exits 0 only when every check passed. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static uint8_t pattern(size_t i, int seed)
{
	return (uint8_t)((i * 131u + (size_t)seed * 7u + (i >> 8)) & 0xff);
}

static void fill(uint8_t *b, size_t n, int seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pattern(i, seed);
}

static void check(const uint8_t *b, size_t n, int seed, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		if (b[i] != pattern(i, seed)) {
			fprintf(stderr,
			        "btl-smoke: %s: %zu bytes, byte %zu is 0x%02x, want "
			        "0x%02x\n",
			        what, n, i, b[i], pattern(i, seed));
			failures++;
			return;
		}
	}
}

/* Rank 0 and rank `peer` bounce messages of every size; data differs each way. */
static void pingpong(int rank, int peer, uint8_t *buf, size_t max)
{
	for (size_t n = 0; n <= max; n = n ? n * 2 : 1) {
		for (size_t len = n > 2 ? n - 1 : n; len <= n + 1 && len <= max; len++) {
			int seed = (int)(len & 0x7fff);
			MPI_Status st;
			int count;

			if (rank == 0) {
				fill(buf, len, seed);
				MPI_Send(buf, (int)len, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
				memset(buf, 0, len);
				MPI_Recv(buf, (int)len, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &st);
				MPI_Get_count(&st, MPI_BYTE, &count);
				if ((size_t)count != len) {
					fprintf(stderr, "btl-smoke: pong %zu came back %d bytes\n",
					        len, count);
					failures++;
				}
				check(buf, len, seed + 1, "pong");
			} else if (rank == peer) {
				memset(buf, 0, len);
				MPI_Recv(buf, (int)len, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st);
				check(buf, len, seed, "ping");
				fill(buf, len, seed + 1);
				MPI_Send(buf, (int)len, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
			}
		}
	}
}

/* Everyone sends to rank 0, which receives with MPI_ANY_SOURCE. */
static void any_source(int rank, int size)
{
	enum { LEN = 100000 };
	uint8_t *b = malloc(LEN);

	if (rank == 0) {
		int *seen = calloc(size, sizeof(*seen));
		for (int k = 1; k < size; k++) {
			MPI_Status st;
			MPI_Recv(b, LEN, MPI_BYTE, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, &st);
			if (st.MPI_SOURCE < 1 || st.MPI_SOURCE >= size || seen[st.MPI_SOURCE]++) {
				fprintf(stderr, "btl-smoke: ANY_SOURCE got bad source %d\n",
				        st.MPI_SOURCE);
				failures++;
				continue;
			}
			check(b, LEN, 1000 + st.MPI_SOURCE, "any_source");
		}
		free(seen);
	} else {
		fill(b, LEN, 1000 + rank);
		MPI_Send(b, LEN, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
	}
	free(b);
}

/* A strided vector exercises the convertor's packing in prepare_src/sendi. */
static void strided(int rank, int size)
{
	enum { N = 20000 };
	double *v = calloc(2 * N, sizeof(*v));
	MPI_Datatype t;

	MPI_Type_vector(N, 1, 2, MPI_DOUBLE, &t);
	MPI_Type_commit(&t);
	if (rank == 0) {
		for (int i = 0; i < N; i++)
			v[2 * i] = i * 0.5 + 3;
		for (int p = 1; p < size; p++)
			MPI_Send(v, 1, t, p, 4, MPI_COMM_WORLD);
	} else {
		MPI_Recv(v, 1, t, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		for (int i = 0; i < N; i++) {
			if (v[2 * i] != i * 0.5 + 3 || v[2 * i + 1] != 0) {
				fprintf(stderr, "btl-smoke: strided element %d wrong\n", i);
				failures++;
				break;
			}
		}
	}
	MPI_Type_free(&t);
	free(v);
}

static void collective(int rank, int size)
{
	enum { N = 300000 };
	long *in = malloc(N * sizeof(*in)), *out = malloc(N * sizeof(*out));

	for (int i = 0; i < N; i++)
		in[i] = (long)i * (rank + 1);
	MPI_Allreduce(in, out, N, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	for (int i = 0; i < N; i++) {
		if (out[i] != (long)i * size * (size + 1) / 2) {
			fprintf(stderr, "btl-smoke: allreduce element %d is %ld\n", i, out[i]);
			failures++;
			break;
		}
	}
	free(in);
	free(out);
}

int main(int argc, char **argv)
{
	size_t max = argc > 1 ? strtoul(argv[1], NULL, 0) : 16u << 20;
	int rank, size, total;
	uint8_t *buf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2) {
		fprintf(stderr, "btl-smoke: run with at least 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	buf = malloc(max + 2);
	for (int peer = 1; peer < size; peer++)
		pingpong(rank, peer, buf, max);
	any_source(rank, size);
	strided(rank, size);
	collective(rank, size);
	free(buf);

	MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf(total ? "btl-smoke: FAILED (%d errors)\n" : "btl-smoke: OK\n", total);
	MPI_Finalize();
	return total ? 1 : 0;
}
