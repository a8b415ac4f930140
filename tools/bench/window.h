/* The windowed sender/receiver loop shared by gm-osu-bw and gm-osu-mr: rank 0
 * posts `window` non-blocking sends, rank 1 `window` receives into separate
 * buffers, then rank 1 acknowledges with a small message. Message j of window w
 * carries stamp (w * window + j), checked (bench_stamp_ok) in every message of
 * every window. */
#ifndef GM_BENCH_WINDOW_H
#define GM_BENCH_WINDOW_H

#include "bench.h"

struct window_bufs {
	uint8_t *s, *r; /* window slots of `max` bytes each */
	MPI_Request *rq;
	size_t slot;
};

static void window_alloc(struct window_bufs *b, const struct bench_opts *o)
{
	b->slot = o->max ? o->max : 1;
	b->s = bench_alloc(b->slot * o->window);
	b->r = bench_alloc(b->slot * o->window);
	b->rq = bench_alloc(sizeof(MPI_Request) * o->window);
}

/* Runs `warmup` then `iters` windows; returns seconds for the timed windows. */
static double window_run(struct window_bufs *b, int window, size_t size, long iters, long warmup,
                         const char *what)
{
	int peer = !bench_rank, ack = 0;
	double t0 = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	for (long w = -warmup; w < iters; w++) {
		uint32_t base = (uint32_t)(w + warmup) * (uint32_t)window;
		if (w == 0)
			t0 = MPI_Wtime();
		if (bench_rank == 0) {
			for (int j = 0; j < window; j++) {
				uint8_t *m = b->s + b->slot * j;
				bench_stamp(m, size, base + j);
				MPI_Isend(m, (int)size, MPI_BYTE, peer, 3, MPI_COMM_WORLD,
				          &b->rq[j]);
			}
			MPI_Waitall(window, b->rq, MPI_STATUSES_IGNORE);
			MPI_Recv(&ack, 1, MPI_INT, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			if (ack != (int)base)
				bench_stamp_fail(size, w, what);
		} else {
			for (int j = 0; j < window; j++)
				MPI_Irecv(b->r + b->slot * j, (int)size, MPI_BYTE, peer, 3,
				          MPI_COMM_WORLD, &b->rq[j]);
			MPI_Waitall(window, b->rq, MPI_STATUSES_IGNORE);
			for (int j = 0; j < window; j++)
				if (!bench_stamp_ok(b->r + b->slot * j, size, base + j))
					bench_stamp_fail(size, w, what);
			ack = (int)base;
			MPI_Send(&ack, 1, MPI_INT, peer, 4, MPI_COMM_WORLD);
		}
	}
	return MPI_Wtime() - t0;
}

/* Untimed: one window of fully patterned messages into zeroed buffers, all checked. */
static void window_verify(struct window_bufs *b, int window, size_t size, const char *what)
{
	int peer = !bench_rank;
	for (int j = 0; j < window; j++) {
		uint32_t stamp = 0xBEEF00u + (uint32_t)j;
		if (bench_rank == 0) {
			bench_fill(b->s + b->slot * j, size, stamp);
			MPI_Isend(b->s + b->slot * j, (int)size, MPI_BYTE, peer, 5, MPI_COMM_WORLD,
			          &b->rq[j]);
		} else {
			memset(b->r + b->slot * j, 0, size);
			MPI_Irecv(b->r + b->slot * j, (int)size, MPI_BYTE, peer, 5, MPI_COMM_WORLD,
			          &b->rq[j]);
		}
	}
	MPI_Waitall(window, b->rq, MPI_STATUSES_IGNORE);
	if (bench_rank == 1)
		for (int j = 0; j < window; j++)
			bench_verify(b->r + b->slot * j, size, 0xBEEF00u + (uint32_t)j, what);
	MPI_Barrier(MPI_COMM_WORLD);
}

#endif
