/* OSU-style unidirectional bandwidth, rank 0 -> rank 1: windows of --window (64)
 * non-blocking sends, each window acknowledged; MB/s (10^6 bytes/s) per size
 * (1 B .. 4 MiB by default), median of --reps repetitions. Every message is
 * checked (stamped bytes), and a full window is verified after each size.
 */
#include "window.h"

int main(int argc, char **argv)
{
	struct bench_opts o;
	struct window_bufs b = {0};
	bench_init(&argc, &argv, &o, 1, 4 << 20);
	double *v = bench_alloc(o.reps * sizeof(double));
	if (bench_rank < 2)
		window_alloc(&b, &o);
	bench_header(&o, "gm-osu-bw", "MB/s", "unidirectional 0->1, windowed");
	for (size_t size = o.min; size <= o.max; size = bench_next(size)) {
		long iters = o.iters > 0 ? o.iters : size <= 8192 ? 100 : 20;
		long warmup = o.warmup >= 0 ? o.warmup : size <= 8192 ? 10 : 2;
		for (int k = 0; k < o.reps; k++) {
			if (bench_rank >= 2) {
				MPI_Barrier(MPI_COMM_WORLD);
				continue;
			}
			double t = window_run(&b, o.window, size, iters, k ? 0 : warmup, "bw");
			v[k] = (double)size * o.window * iters / t / 1e6;
		}
		if (bench_rank < 2)
			window_verify(&b, o.window, size, "bw verification");
		else
			MPI_Barrier(MPI_COMM_WORLD);
		bench_line(&o, size, bench_median(v, o.reps));
	}
	MPI_Finalize();
	return 0;
}
