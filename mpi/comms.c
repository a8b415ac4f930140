/* Communicators: split, dup, create (from a group), and traffic on them.
 *
 * Checks ranks/sizes of the new communicators, that collectives on them combine
 * exactly the right members, that p2p on them reaches the right world rank, and
 * that a message on one communicator never matches a receive on another
 * (context isolation), even with the same source and tag.
 */
#include "suite.h"

/* Ring on comm: each rank sends its world rank and a pattern to its right
 * neighbour; the receiver checks it came from the expected world rank. */
static void ring_on(MPI_Comm comm, const char *name, size_t n)
{
	int r, p;
	MPI_Comm_rank(comm, &r);
	MPI_Comm_size(comm, &p);
	int right = (r + 1) % p, left = (r + p - 1) % p;
	/* the world rank of `left` in comm, learnt via an allgather on comm */
	int *world = suite_alloc(p * sizeof(int));
	MPI_Allgather(&S.rank, 1, MPI_INT, world, 1, MPI_INT, comm);
	uint8_t *s = suite_alloc(n + 1), *rb = suite_recv_buf(n);
	suite_fill(s, n, suite_seed(S.rank, n, 60));
	MPI_Status st;
	MPI_Sendrecv(s, (int)n, MPI_BYTE, right, 5, rb, (int)(n + SUITE_GUARD), MPI_BYTE, left, 5,
	             comm, &st);
	char what[96];
	snprintf(what, sizeof(what), "ring on %s, %zu B from comm rank %d", name, n, left);
	suite_check_status(what, &st, left, 5, MPI_BYTE, (int)n);
	suite_check_msg(what, rb, n, suite_seed(world[left], n, 60));
	free(world);
	free(s);
	free(rb);
}

static void split_test(void)
{
	/* two colors by parity, key reverses the order inside each color */
	MPI_Comm sub;
	int color = S.rank % 2;
	MPI_Comm_split(MPI_COMM_WORLD, color, -S.rank, &sub);
	int r, p;
	MPI_Comm_rank(sub, &r);
	MPI_Comm_size(sub, &p);
	int members = (S.size - color + 1) / 2;
	CHECK(p == members, "split: color %d has size %d, expected %d", color, p, members);
	/* world ranks of color c: c, c+2, ...; reversed by key */
	int want_rank = members - 1 - S.rank / 2;
	CHECK(r == want_rank, "split: world rank %d got sub rank %d, expected %d", S.rank, r,
	      want_rank);
	long mine = S.rank + 1, sum = 0, want = 0;
	for (int k = color; k < S.size; k += 2)
		want += k + 1;
	MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, sub);
	CHECK(sum == want, "split: allreduce on color %d gave %ld, expected %ld", color, sum, want);
	/* bcast from sub rank 0 = highest world rank of the color */
	long b = S.rank, broot = color + 2 * (members - 1);
	MPI_Bcast(&b, 1, MPI_LONG, 0, sub);
	CHECK(b == broot, "split: bcast from sub rank 0 gave %ld, expected world rank %ld", b,
	      broot);
	ring_on(sub, "split", 1000);
	ring_on(sub, "split", 300000);

	/* MPI_UNDEFINED gives MPI_COMM_NULL */
	MPI_Comm none;
	MPI_Comm_split(MPI_COMM_WORLD, S.rank == 0 ? 0 : MPI_UNDEFINED, 0, &none);
	CHECK((S.rank == 0) == (none != MPI_COMM_NULL), "split: MPI_UNDEFINED handling wrong");
	if (none != MPI_COMM_NULL)
		MPI_Comm_free(&none);
	MPI_Comm_free(&sub);
}

static void dup_test(void)
{
	MPI_Comm d;
	MPI_Comm_dup(MPI_COMM_WORLD, &d);
	int cmp;
	MPI_Comm_compare(MPI_COMM_WORLD, d, &cmp);
	CHECK(cmp == MPI_CONGRUENT, "dup: compare gave %d, expected MPI_CONGRUENT", cmp);
	ring_on(d, "dup", 64);

	/* Same source, same tag on two communicators: the receive on WORLD (posted
	 * first, after both sends are in flight) must get WORLD's message even though
	 * the dup's message was sent first. */
	int right = (S.rank + 1) % S.size, left = (S.rank + S.size - 1) % S.size;
	int on_dup = 1000 + S.rank, on_world = 2000 + S.rank, got_w = -1, got_d = -1;
	MPI_Request rq[2];
	MPI_Isend(&on_dup, 1, MPI_INT, right, 9, d, &rq[0]);
	MPI_Isend(&on_world, 1, MPI_INT, right, 9, MPI_COMM_WORLD, &rq[1]);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Recv(&got_w, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
	         MPI_STATUS_IGNORE);
	MPI_Recv(&got_d, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, d, MPI_STATUS_IGNORE);
	MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
	CHECK(got_w == 2000 + left, "dup: receive on WORLD got %d, expected %d", got_w,
	      2000 + left);
	CHECK(got_d == 1000 + left, "dup: receive on dup got %d, expected %d", got_d, 1000 + left);
	long x = S.rank, sum = 0;
	MPI_Allreduce(&x, &sum, 1, MPI_LONG, MPI_SUM, d);
	CHECK(sum == (long)S.size * (S.size - 1) / 2, "dup: allreduce gave %ld", sum);
	MPI_Comm_free(&d);
}

/* Group of all ranks but 0, in reverse order. */
static void create_test(void)
{
	MPI_Group world_g, g;
	MPI_Comm_group(MPI_COMM_WORLD, &world_g);
	int n = S.size - 1;
	int *ranks = suite_alloc((n ? n : 1) * sizeof(int));
	for (int i = 0; i < n; i++)
		ranks[i] = S.size - 1 - i;
	MPI_Group_incl(world_g, n, ranks, &g);
	MPI_Comm c;
	MPI_Comm_create(MPI_COMM_WORLD, g, &c);
	if (S.rank == 0) {
		CHECK(c == MPI_COMM_NULL, "create: rank 0 is not in the group but got a comm");
	} else if (c == MPI_COMM_NULL) {
		suite_error("create: rank %d is in the group but got MPI_COMM_NULL", S.rank);
	} else {
		int r, p;
		MPI_Comm_rank(c, &r);
		MPI_Comm_size(c, &p);
		CHECK(p == n && r == S.size - 1 - S.rank, "create: rank %d/%d, expected %d/%d", r,
		      p, S.size - 1 - S.rank, n);
		int tr, wr = 0;
		MPI_Group_translate_ranks(g, 1, &wr, world_g, &tr);
		CHECK(tr == S.size - 1, "create: group rank 0 is world rank %d", tr);
		long x = S.rank, sum = 0;
		MPI_Allreduce(&x, &sum, 1, MPI_LONG, MPI_SUM, c);
		CHECK(sum == (long)S.size * (S.size - 1) / 2, "create: allreduce gave %ld", sum);
		ring_on(c, "create", 4096);
		ring_on(c, "create", 1 << 20);
		MPI_Comm_free(&c);
	}
	MPI_Group_free(&g);
	MPI_Group_free(&world_g);
	free(ranks);
}

int main(int argc, char **argv)
{
	suite_init(&argc, &argv);
	if (argc > 1)
		suite_usage_error(argv[0], "usage: comms [--quick]");
	if (S.size < 2)
		suite_usage_error(argv[0], "comms needs at least 2 ranks");
	for (int round = 0; round < 3; round++) {
		split_test();
		suite_item("split by parity (reversed keys): ranks, allreduce, bcast, p2p ring #%d",
		           round);
		dup_test();
		suite_item("dup: congruent, context isolation from WORLD, p2p, allreduce #%d",
		           round);
		create_test();
		suite_item("create from a reversed group without rank 0: ranks, allreduce, p2p #%d",
		           round);
	}
	return suite_finish();
}
