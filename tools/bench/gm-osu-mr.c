/* OSU-style message rate, rank 0 -> rank 1: windows of --window (64) non-blocking
 * 8-byte sends (--min/--max to change the size), each window acknowledged;
 * messages per second, median of --reps repetitions. Every message is checked
 * (see window.h), and a full window is verified after each size.
 */
#include "window.h"

int main(int argc, char **argv)
{
	struct bench_opts o;
	struct window_bufs b = {0};
	bench_init(&argc, &argv, &o, 8, 8);
	double *v = bench_alloc(o.reps * sizeof(double));
	if (bench_rank < 2)
		window_alloc(&b, &o);
	bench_header(&o, "gm-osu-mr", "messages_per_s", "message rate 0->1, windowed");
	for (size_t size = o.min; size <= o.max; size = bench_next(size)) {
		long iters = o.iters > 0 ? o.iters : 2000;
		long warmup = o.warmup >= 0 ? o.warmup : 100;
		for (int k = 0; k < o.reps; k++) {
			if (bench_rank >= 2) {
				MPI_Barrier(MPI_COMM_WORLD);
				continue;
			}
			double t = window_run(&b, o.window, size, iters, k ? 0 : warmup, "mr");
			v[k] = (double)o.window * iters / t;
		}
		if (bench_rank < 2)
			window_verify(&b, o.window, size, "mr verification");
		else
			MPI_Barrier(MPI_COMM_WORLD);
		bench_line(&o, size, bench_median(v, o.reps));
	}
	MPI_Finalize();
	return 0;
}
