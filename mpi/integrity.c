/* Large-message integrity (issue #19): 1 MiB MPI_INT sequences, every
 * element checked, many iterations.
 *
 *   sendrecv  every pair of ranks (r, r^1) exchanges with MPI_Sendrecv at
 *             once, both directions of a rendezvous in flight together;
 *   bcast     MPI_Bcast from a rotating root.
 *
 * Element i of a message holds base + i, base = (iteration, sender) mixed, so
 * a piece of the right message at the wrong offset, or of an earlier
 * iteration, shows as a wrong value.  Receive buffers are poisoned first.
 * Options: --iters N (default 40, 10 with --quick), --count N ints (default
 * 262144 = 1 MiB), --contiguous: leave out the derived-type case, which
 * needs a transport that hands ob1 a peer's fragments in send order (one
 * provider endpoint per peer does; ob1 striping over several BTL modules,
 * e.g. one per rail, does not).
 */
#include "suite.h"

#include <stdbool.h>

#define TAG 19

static int base_of(int iter, int sender)
{
	return (int)(((unsigned)iter * 1000003u + (unsigned)sender * 7919u) & 0x3fffffff);
}

static void fill_seq(int *buf, int count, int base)
{
	for (int i = 0; i < count; i++)
		buf[i] = base + i;
}

static void check_seq(const char *what, const int *buf, int count, int base, int iter, int from)
{
	for (int i = 0; i < count; i++)
		if (buf[i] != base + i)
			suite_error(
			    "%s iter %d from %d: element %d is %d, expected %d (offset %+ld "
			    "bytes)",
			    what, iter, from, i, buf[i], base + i,
			    4L * ((long)buf[i] - (base + i)));
}

/* Blocks in reverse order, of a type with a hole: MPICH's DTPools built these
 * for the failing pt2pt/sendrecv1 runs of issue #19. */
static MPI_Datatype send_type(void)
{
	MPI_Datatype pair, t;
	int bl[2] = {2, 2}, one[32768], disp[32768];
	MPI_Aint hd[2] = {8, 40};

	MPI_Type_create_hindexed(2, bl, hd, MPI_INT, &pair);
	for (int i = 0; i < 32768; i++) {
		one[i] = 1;
		disp[i] = 2 * (32767 - i);
	}
	MPI_Type_indexed(32768, one, disp, pair, &t);
	MPI_Type_commit(&t);
	MPI_Type_free(&pair);
	return t;
}

static MPI_Datatype recv_type(void)
{
	MPI_Datatype a, b, t;
	int bl[2] = {3, 1}, two = 2, sizes[2] = {2, 2}, starts[2] = {0, 0};
	MPI_Aint hd[2] = {16, 8}, eight = 8;

	MPI_Type_create_hindexed(2, bl, hd, MPI_INT, &a);
	MPI_Type_create_hindexed(1, &two, &eight, a, &b);
	MPI_Type_create_subarray(2, sizes, sizes, starts, MPI_ORDER_FORTRAN, b, &t);
	MPI_Type_commit(&t);
	MPI_Type_free(&a);
	MPI_Type_free(&b);
	return t;
}

/* A buffer of count objects of type t whose elements, in type order, are base, base+1, ... */
static void *typed_seq(MPI_Datatype t, int count, int base, size_t *span)
{
	MPI_Aint lb, extent, tlb, textent;
	int n, pos = 0;

	MPI_Type_get_extent(t, &lb, &extent);
	MPI_Type_get_true_extent(t, &tlb, &textent);
	MPI_Type_size(t, &n);
	*span = (size_t)(tlb + textent + (count - 1) * extent);
	char *buf = malloc(*span);
	int *seq = malloc((size_t)n * count);
	if (!buf || !seq)
		suite_usage_error("integrity", "out of memory");
	memset(buf, 0xff, *span);
	fill_seq(seq, n / 4 * count, base);
	MPI_Unpack(seq, n * count, &pos, buf, count, t, MPI_COMM_SELF);
	free(seq);
	return buf;
}

/*
 * Both directions at once between derived types whose type maps are not in
 * address order.  Open MPI 4.1's datatype engine misplaces such data when
 * fragments of one message are unpacked out of order, so this fails unless
 * the transport hands ob1 a peer's fragments in the order they were sent.
 */
static void derived(int iters, int count, int peer)
{
	MPI_Datatype st = send_type(), rt = recv_type();
	int ssize, rsize;

	MPI_Type_size(st, &ssize);
	MPI_Type_size(rt, &rsize);
	int scount = count * 4 / ssize, rcount = count * 4 / rsize;
	for (int it = 0; it < iters && peer < S.size; it++) {
		size_t sspan, espan;
		char *sb = typed_seq(st, scount, base_of(it, S.rank), &sspan);
		char *expect = typed_seq(rt, rcount, base_of(it, peer), &espan);
		char *rb = malloc(espan);
		memset(rb, 0xff, espan);
		MPI_Sendrecv(sb, scount, st, peer, TAG, rb, rcount, rt, peer, TAG, MPI_COMM_WORLD,
		             MPI_STATUS_IGNORE);
		for (size_t i = 0; i + 4 <= espan; i += 4) {
			int got, want;
			memcpy(&got, rb + i, 4);
			memcpy(&want, expect + i, 4);
			if (got != want)
				suite_error(
				    "derived iter %d from %d: int at byte %zu is %d, expected %d "
				    "(offset %+ld bytes)",
				    it, peer, i, got, want, 4L * ((long)got - want));
		}
		free(sb);
		free(expect);
		free(rb);
	}
	MPI_Type_free(&st);
	MPI_Type_free(&rt);
	suite_item("sendrecv %d x %d ints, reversed indexed into subarray of hindexed", iters,
	           count);
}

int main(int argc, char **argv)
{
	int iters = 40, count = 262144;
	bool contiguous = false;

	suite_init(&argc, &argv);
	if (S.quick)
		iters = 10;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--count") && i + 1 < argc)
			count = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--contiguous"))
			contiguous = true;
		else
			suite_usage_error(
			    argv[0], "usage: integrity [--iters N] [--count N] [--contiguous]");
	}
	if (iters < 1 || count < 1)
		suite_usage_error(argv[0], "--iters and --count must be positive");
	int *sbuf = malloc(sizeof(int) * (size_t)count);
	int *rbuf = malloc(sizeof(int) * (size_t)count);
	if (!sbuf || !rbuf)
		suite_usage_error(argv[0], "out of memory");

	int peer = S.rank ^ 1;
	for (int it = 0; it < iters; it++) {
		if (peer >= S.size)
			break;
		fill_seq(sbuf, count, base_of(it, S.rank));
		memset(rbuf, 0xff, sizeof(int) * (size_t)count);
		MPI_Sendrecv(sbuf, count, MPI_INT, peer, TAG, rbuf, count, MPI_INT, peer, TAG,
		             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		check_seq("sendrecv", rbuf, count, base_of(it, peer), it, peer);
	}
	suite_item("sendrecv %d x %d ints, both directions at once", iters, count);

	for (int it = 0; it < iters; it++) {
		int root = it % S.size;
		int *buf = S.rank == root ? sbuf : rbuf;
		if (S.rank == root)
			fill_seq(buf, count, base_of(it, root));
		else
			memset(buf, 0xff, sizeof(int) * (size_t)count);
		MPI_Bcast(buf, count, MPI_INT, root, MPI_COMM_WORLD);
		if (S.rank != root)
			check_seq("bcast", buf, count, base_of(it, root), it, root);
	}
	suite_item("bcast %d x %d ints, rotating root", iters, count);

	if (!contiguous)
		derived(iters, count, peer);

	/* One way, back to back: the sender refills its buffer as soon as MPI_Send
	 * returns, so a transport still reading it sends the next message's values. */
	for (int it = 0; it < iters && peer < S.size; it++) {
		if (S.rank % 2 == 0) {
			fill_seq(sbuf, count, base_of(it, S.rank));
			MPI_Send(sbuf, count, MPI_INT, peer, TAG, MPI_COMM_WORLD);
		} else {
			memset(rbuf, 0xff, sizeof(int) * (size_t)count);
			MPI_Recv(rbuf, count, MPI_INT, peer, TAG, MPI_COMM_WORLD,
			         MPI_STATUS_IGNORE);
			check_seq("send/recv", rbuf, count, base_of(it, peer), it, peer);
		}
	}
	memset(sbuf, 0, sizeof(int) * (size_t)count);
	suite_item("send/recv %d x %d ints, one way, buffer refilled at once", iters, count);

	free(sbuf);
	free(rbuf);
	return suite_finish();
}
