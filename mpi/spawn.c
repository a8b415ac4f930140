/*
 * spawn: MPI_Comm_spawn across hosts, every byte checked.  The parent job
 * spawns NCHILD copies of this program where the "host" info value argv[1]
 * says; every parent sends every child 8 B, 64 KiB and 4 MiB (the provider's
 * rendezvous), the child checks them and sends the same sizes back, which
 * the parent checks; then parents and children merge into one
 * communicator, and an Allreduce over it sums everyone's errors.  Parent
 * rank 0 prints "spawn: OK: ..." only if that sum is zero; every process
 * exits non-zero otherwise.
 *
 * The two jobs have a secret each: this is what checks that btl gamma
 * seals frames to the other job's processes with that job's secret.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCHILD 2

static const int sizes[] = {8, 64 << 10, 4 << 20};
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))

static unsigned char pattern(size_t i, int from, int to, int size, int back)
{
	return (unsigned char)(i * 131 + (size_t)from * 17 + (size_t)to * 29 + (size_t)size +
	                       (size_t)back * 7);
}

static void fill(unsigned char *b, int n, int from, int to, int back)
{
	for (int i = 0; i < n; i++)
		b[i] = pattern((size_t)i, from, to, n, back);
}

static long check(const unsigned char *b, int n, int from, int to, int back)
{
	long bad = 0;

	for (int i = 0; i < n; i++)
		bad += b[i] != pattern((size_t)i, from, to, n, back);
	if (bad)
		fprintf(stderr, "spawn: %ld wrong bytes in %d B from %s %d to %d\n", bad, n,
		        back ? "child" : "parent", from, to);
	return bad;
}

/* Receive every size from each remote rank, then send every size to each. */
static long exchange(MPI_Comm inter, int me, int nremote, int back, unsigned char *buf)
{
	long bad = 0;

	for (int r = 0; r < nremote; r++) {
		for (int s = 0; s < NSIZES; s++) {
			if (back) { /* a child: receive first */
				memset(buf, 0, (size_t)sizes[s]);
				MPI_Recv(buf, sizes[s], MPI_BYTE, r, s, inter, MPI_STATUS_IGNORE);
				bad += check(buf, sizes[s], r, me, 0);
				fill(buf, sizes[s], me, r, 1);
				MPI_Send(buf, sizes[s], MPI_BYTE, r, s, inter);
			} else {
				fill(buf, sizes[s], me, r, 0);
				MPI_Send(buf, sizes[s], MPI_BYTE, r, s, inter);
				memset(buf, 0, (size_t)sizes[s]);
				MPI_Recv(buf, sizes[s], MPI_BYTE, r, s, inter, MPI_STATUS_IGNORE);
				bad += check(buf, sizes[s], r, me, 1);
			}
		}
	}
	return bad;
}

int main(int argc, char **argv)
{
	MPI_Comm parent, inter, all;
	int me, nremote, child;
	long bad, total = -1;
	unsigned char *buf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_get_parent(&parent);
	child = parent != MPI_COMM_NULL;
	buf = malloc((size_t)sizes[NSIZES - 1]);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	if (child) {
		inter = parent;
	} else {
		MPI_Info info;

		MPI_Info_create(&info);
		if (argc > 1)
			MPI_Info_set(info, "host", argv[1]);
		MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, NCHILD, info, 0, MPI_COMM_WORLD, &inter,
		               MPI_ERRCODES_IGNORE);
		MPI_Info_free(&info);
	}
	MPI_Comm_remote_size(inter, &nremote);
	bad = exchange(inter, me, nremote, child, buf);
	MPI_Intercomm_merge(inter, child, &all);
	MPI_Allreduce(&bad, &total, 1, MPI_LONG, MPI_SUM, all);
	if (!child && me == 0)
		printf(total ? "spawn: FAIL: %ld wrong bytes\n"
		             : "spawn: OK: %ld wrong bytes; every parent and child verified "
		               "8 B, 64 KiB and 4 MiB both ways\n",
		       total);
	MPI_Comm_free(&all);
	MPI_Comm_disconnect(&inter);
	free(buf);
	MPI_Finalize();
	return total != 0;
}
