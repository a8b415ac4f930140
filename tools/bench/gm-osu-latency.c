/* OSU-style ping-pong latency between ranks 0 and 1: half the round-trip time in
 * microseconds per message size (0 B .. 4 MiB by default), median of --reps
 * repetitions. Every iteration checks stamped bytes of the received message, and
 * after each size a full message is verified in both directions: on a data error
 * the job aborts and no number is printed. Options: see bench.h.
 */
#include "bench.h"

static double pingpong(size_t size, long iters, long warmup, uint8_t *s, uint8_t *r)
{
	int peer = !bench_rank;
	double t0 = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	for (long i = -warmup; i < iters; i++) {
		uint32_t stamp = (uint32_t)(i + warmup + 1);
		if (i == 0)
			t0 = MPI_Wtime();
		if (bench_rank == 0) {
			bench_stamp(s, size, stamp);
			MPI_Send(s, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
			MPI_Recv(r, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
			         MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(r, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
			         MPI_STATUS_IGNORE);
			MPI_Send(r, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD); /* echo */
		}
		if (!bench_stamp_ok(r, size, stamp))
			bench_stamp_fail(size, i, "latency");
	}
	return (MPI_Wtime() - t0) / (double)iters / 2 * 1e6;
}

/* One untimed round trip of a freshly patterned message into zeroed buffers. */
static void verify_round(size_t size, uint8_t *s, uint8_t *r)
{
	int peer = !bench_rank;
	uint32_t stamp = 0xC0FFEEu ^ (uint32_t)size;
	memset(r, 0, size);
	if (bench_rank == 0) {
		bench_fill(s, size, stamp);
		MPI_Send(s, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
		MPI_Recv(r, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	} else {
		MPI_Recv(r, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		bench_verify(r, size, stamp, "latency verification (0 -> 1)");
		MPI_Send(r, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
	}
	bench_verify(r, size, stamp, "latency verification");
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	bench_init(&argc, &argv, &o, 0, 4 << 20);
	uint8_t *s = bench_alloc(o.max), *r = bench_alloc(o.max);
	double *lat = bench_alloc(o.reps * sizeof(double));
	bench_header(&o, "gm-osu-latency", "latency_us", "half round trip, ranks 0<->1");
	for (size_t size = o.min; size <= o.max; size = bench_next(size)) {
		long iters = o.iters > 0         ? o.iters
		             : size <= 8192      ? 10000
		             : size <= (1 << 20) ? 1000
		                                 : 100;
		long warmup = o.warmup >= 0 ? o.warmup : size <= 8192 ? 1000 : 10;
		if (bench_rank < 2)
			bench_fill(s, size, 0);
		for (int k = 0; k < o.reps; k++)
			lat[k] = bench_rank < 2 ? pingpong(size, iters, k ? 0 : warmup, s, r)
			                        : (MPI_Barrier(MPI_COMM_WORLD), 0);
		if (bench_rank < 2)
			verify_round(size, s, r);
		bench_line(&o, size, bench_median(lat, o.reps));
	}
	free(s);
	free(r);
	free(lat);
	MPI_Finalize();
	return 0;
}
