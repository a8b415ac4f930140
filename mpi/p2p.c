/* Point-to-point transfers of every size class, blocking and non-blocking.
 *
 * Ring: every rank sends to rank+1 and receives from rank-1. Each receive is
 * posted with room for the message plus a guard; the whole message is checked
 * against a pattern of (sender, size, iteration), the guard must stay intact and
 * MPI_Get_count must give the exact size. Sizes cover 0 B, small, eager, medium,
 * rendezvous and (unless --quick or --huge-mib 0) a huge message; the
 * synchronous, buffered and ready send modes at six of those sizes.
 * Any number of ranks >= 2 (also 1: the ring is then a self-send).
 */
#include "suite.h"

#define TAG 17

/* The first NMODES run at every size; the send modes after them (each its
 * own protocol in ob1: synchronous sends always by rendezvous, buffered
 * ones copied first, ready ones to a receive posted beforehand) at the
 * sizes of send_mode_sizes. */
enum mode {
	BLOCKING,
	NONBLOCKING,
	NB_TESTALL,
	SENDRECV,
	NMODES,
	SSEND = NMODES,
	ISSEND,
	BSEND,
	RSEND,
	NALLMODES
};
static const char *const mode_name[] = {"send/recv",  "isend/irecv+waitall", "isend/irecv+testall",
                                        "sendrecv",   "ssend/recv",          "issend/irecv",
                                        "bsend/recv", "rsend/irecv"};
static const size_t send_mode_sizes[] = {0, 8, 65536, 65585, (1 << 20) + 3, 16 << 20};

static void ring_once(enum mode m, size_t n, int iter, uint8_t *sbuf, uint8_t *rbuf)
{
	int right = (S.rank + 1) % S.size, left = (S.rank + S.size - 1) % S.size;
	int cap = (int)(n + SUITE_GUARD);
	MPI_Status st;
	MPI_Request rq[2];

	suite_fill(sbuf, n, suite_seed(S.rank, n, iter));
	memset(rbuf, SUITE_CANARY, n + SUITE_GUARD);

	switch (m) {
	case BLOCKING:
	case SSEND:
	case BSEND: {
		int (*send)(const void *, int, MPI_Datatype, int, int, MPI_Comm) =
		    m == SSEND   ? MPI_Ssend
		    : m == BSEND ? MPI_Bsend
		                 : MPI_Send;
		/* Rank 0 sends first, everyone else receives first: no deadlock at any
		 * size, whatever the eager limit or the send mode.  Alone, to a
		 * receive of its own posted first. */
		if (S.size == 1) {
			MPI_Irecv(rbuf, cap, MPI_BYTE, left, TAG, MPI_COMM_WORLD, &rq[0]);
			send(sbuf, (int)n, MPI_BYTE, right, TAG, MPI_COMM_WORLD);
			MPI_Wait(&rq[0], &st);
		} else if (S.rank == 0) {
			send(sbuf, (int)n, MPI_BYTE, right, TAG, MPI_COMM_WORLD);
			MPI_Recv(rbuf, cap, MPI_BYTE, left, TAG, MPI_COMM_WORLD, &st);
		} else {
			MPI_Recv(rbuf, cap, MPI_BYTE, left, TAG, MPI_COMM_WORLD, &st);
			send(sbuf, (int)n, MPI_BYTE, right, TAG, MPI_COMM_WORLD);
		}
		break;
	}
	case NONBLOCKING:
	case NB_TESTALL:
	case ISSEND:
	case RSEND: {
		int (*isend)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *) =
		    m == ISSEND  ? MPI_Issend
		    : m == RSEND ? MPI_Irsend
		                 : MPI_Isend;
		MPI_Status sts[2];
		MPI_Irecv(rbuf, cap, MPI_BYTE, left, TAG, MPI_COMM_WORLD, &rq[0]);
		/* A ready send starts only once every receive is posted. */
		if (m == RSEND)
			MPI_Barrier(MPI_COMM_WORLD);
		isend(sbuf, (int)n, MPI_BYTE, right, TAG, MPI_COMM_WORLD, &rq[1]);
		if (m == NB_TESTALL) {
			int done = 0;
			while (!done)
				MPI_Testall(2, rq, &done, sts);
		} else {
			MPI_Waitall(2, rq, sts);
		}
		st = sts[0];
		break;
	}
	case SENDRECV:
		MPI_Sendrecv(sbuf, (int)n, MPI_BYTE, right, TAG, rbuf, cap, MPI_BYTE, left, TAG,
		             MPI_COMM_WORLD, &st);
		break;
	default:
		abort();
	}

	char what[96], sz[32];
	snprintf(what, sizeof(what), "%s %s iter %d from rank %d", mode_name[m],
	         suite_size_name(n, sz, sizeof(sz)), iter, left);
	suite_check_status(what, &st, left, TAG, MPI_BYTE, (int)n);
	suite_check_msg(what, rbuf, n, suite_seed(left, n, iter));
}

/* Both directions at once between pairs (0,1), (2,3)...: full-duplex traffic. */
static void pair_exchange(size_t n, int iter, uint8_t *sbuf, uint8_t *rbuf)
{
	int peer = S.rank ^ 1;
	if (peer >= S.size)
		return;
	MPI_Request rq[2];
	MPI_Status sts[2];
	suite_fill(sbuf, n, suite_seed(S.rank, n, iter + 1000));
	memset(rbuf, SUITE_CANARY, n + SUITE_GUARD);
	MPI_Irecv(rbuf, (int)(n + SUITE_GUARD), MPI_BYTE, peer, TAG + 1, MPI_COMM_WORLD, &rq[0]);
	MPI_Isend(sbuf, (int)n, MPI_BYTE, peer, TAG + 1, MPI_COMM_WORLD, &rq[1]);
	MPI_Waitall(2, rq, sts);
	char what[96], sz[32];
	snprintf(what, sizeof(what), "pair exchange %s with rank %d",
	         suite_size_name(n, sz, sizeof(sz)), peer);
	suite_check_status(what, &sts[0], peer, TAG + 1, MPI_BYTE, (int)n);
	suite_check_msg(what, rbuf, n, suite_seed(peer, n, iter + 1000));
}

/* Many messages of mixed size in flight on one pair at once, received in order. */
static void mixed_burst(uint8_t *sbuf, uint8_t *rbuf)
{
	static const size_t sizes[] = {0, 1, 100, 4096, 70000, 1 << 20, 3, 65536, 9000, 0, 2 << 20};
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	size_t off[N], total = 0;
	for (int i = 0; i < N; i++) {
		off[i] = total;
		total += sizes[i] + SUITE_GUARD;
	}
	int right = (S.rank + 1) % S.size, left = (S.rank + S.size - 1) % S.size;
	MPI_Request rq[2 * N];
	MPI_Status st[2 * N];
	memset(rbuf, SUITE_CANARY, total);
	for (int i = 0; i < N; i++) {
		MPI_Irecv(rbuf + off[i], (int)(sizes[i] + SUITE_GUARD), MPI_BYTE, left, TAG + 2,
		          MPI_COMM_WORLD, &rq[i]);
	}
	for (int i = 0; i < N; i++) {
		suite_fill(sbuf + off[i], sizes[i], suite_seed(S.rank, sizes[i], 500 + i));
		MPI_Isend(sbuf + off[i], (int)sizes[i], MPI_BYTE, right, TAG + 2, MPI_COMM_WORLD,
		          &rq[N + i]);
	}
	MPI_Waitall(2 * N, rq, st);
	for (int i = 0; i < N; i++) {
		char what[64];
		snprintf(what, sizeof(what), "burst message %d (%zu B)", i, sizes[i]);
		suite_check_status(what, &st[i], left, TAG + 2, MPI_BYTE, (int)sizes[i]);
		suite_check_msg(what, rbuf + off[i], sizes[i], suite_seed(left, sizes[i], 500 + i));
	}
}

int main(int argc, char **argv)
{
	suite_init(&argc, &argv);
	if (argc > 1)
		suite_usage_error(argv[0], "usage: p2p [--quick] [--huge-mib N]");

	/* 65584 and 65585: either side of btl gamma's default eager limit
	 * (64 KiB + 64 B, ob1's 16-byte match header included). */
	size_t sizes[] = {0,        1,           2,     7,     8,     33,    64,      1024,
	                  1500,     4096,        65536, 65537, 65584, 65585, 1 << 20, (1 << 20) + 3,
	                  16 << 20, S.huge_bytes};
	int nsizes = sizeof(sizes) / sizeof(sizes[0]) - (S.huge_bytes ? 0 : 1);
	size_t max = 16 << 20;
	if (S.huge_bytes > max)
		max = S.huge_bytes;
	uint8_t *sbuf = suite_alloc(max + SUITE_GUARD);
	uint8_t *rbuf = suite_alloc(max + SUITE_GUARD);

	for (int s = 0; s < nsizes; s++) {
		size_t n = sizes[s];
		int iters = n <= 65537 ? 3 : n <= (16 << 20) ? 2 : 1;
		char sz[32];
		suite_size_name(n, sz, sizeof(sz));
		for (int m = 0; m < NMODES; m++) {
			for (int it = 0; it < iters; it++)
				ring_once(m, n, it * NMODES + m, sbuf, rbuf);
			suite_item("ring %s %s x%d", mode_name[m], sz, iters);
		}
		if (S.size > 1) {
			pair_exchange(n, s, sbuf, rbuf);
			suite_item("pair exchange both directions %s", sz);
		}
	}
	/* A rank's buffered send has left the buffer when the ring comes back
	 * to it (its receiver acknowledged it before sending on); room for
	 * two of the largest all the same. */
	int bsize = 2 * ((16 << 20) + MPI_BSEND_OVERHEAD);
	void *bbuf = suite_alloc((size_t)bsize);
	MPI_Buffer_attach(bbuf, bsize);
	for (size_t s = 0; s < sizeof(send_mode_sizes) / sizeof(send_mode_sizes[0]); s++) {
		char sz[32];
		suite_size_name(send_mode_sizes[s], sz, sizeof(sz));
		for (int m = NMODES; m < NALLMODES; m++) {
			for (int it = 0; it < 2; it++)
				ring_once(m, send_mode_sizes[s], it * NALLMODES + m, sbuf, rbuf);
			suite_item("ring %s %s x2", mode_name[m], sz);
		}
	}
	MPI_Buffer_detach(&bbuf, &bsize);
	free(bbuf);
	mixed_burst(sbuf, rbuf);
	suite_item("burst of 11 mixed-size messages in flight, ordered");

	free(sbuf);
	free(rbuf);
	return suite_finish();
}
