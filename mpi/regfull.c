/* More large sends in flight than btl gamma can register for gets.
 *
 * Rank 0 posts --messages MPI_Isend of one buffer, each above the eager
 * limit, before rank 1 receives any.  ob1 registers the buffer once per
 * send (btl gamma holds 65536 registrations); a send it cannot register
 * goes by ob1's rendezvous instead of a get, and the receiver then asks the
 * sender's BTL for puts, which btl gamma refuses, so those bytes go in
 * fragments.  Rank 1 receives in windows and checks every element and the
 * order (each message's tag is its index, modulo 32768).
 * Options: --messages N (default 66000), --count N ints (default 18432:
 * 72 KiB).
 */
#include "suite.h"

#define WINDOW 64

static int value(int i)
{
	return i * 7 + 3;
}

int main(int argc, char **argv)
{
	int messages = 66000, count = 18432;

	suite_init(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--messages") && i + 1 < argc)
			messages = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--count") && i + 1 < argc)
			count = atoi(argv[++i]);
		else
			suite_usage_error(argv[0], "usage: regfull [--messages N] [--count N]");
	}
	if (S.size != 2 || messages < 1 || count < 1)
		suite_usage_error(argv[0], "2 ranks, positive --messages and --count");

	if (S.rank == 0) {
		int *buf = malloc(sizeof(int) * (size_t)count);
		MPI_Request *req = malloc(sizeof(*req) * (size_t)messages);
		if (!buf || !req)
			suite_usage_error(argv[0], "out of memory");
		for (int i = 0; i < count; i++)
			buf[i] = value(i);
		/* Every send is posted before rank 1 takes the first (barrier after). */
		for (int m = 0; m < messages; m++)
			MPI_Isend(buf, count, MPI_INT, 1, m % 32768, MPI_COMM_WORLD, &req[m]);
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Waitall(messages, req, MPI_STATUSES_IGNORE);
		free(req);
		free(buf);
	} else {
		int *buf = malloc(sizeof(int) * (size_t)count * WINDOW);
		MPI_Request req[WINDOW];
		if (!buf)
			suite_usage_error(argv[0], "out of memory");
		MPI_Barrier(MPI_COMM_WORLD);
		for (int m = 0; m < messages; m += WINDOW) {
			int n = messages - m < WINDOW ? messages - m : WINDOW;
			memset(buf, 0xff, sizeof(int) * (size_t)count * (size_t)n);
			for (int k = 0; k < n; k++)
				MPI_Irecv(buf + (size_t)k * count, count, MPI_INT, 0,
				          (m + k) % 32768, MPI_COMM_WORLD, &req[k]);
			MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
			for (int k = 0; k < n; k++)
				for (int i = 0; i < count; i++)
					if (buf[(size_t)k * count + i] != value(i)) {
						suite_error(
						    "message %d: element %d is %d, expected %d",
						    m + k, i, buf[(size_t)k * count + i], value(i));
						break;
					}
		}
		free(buf);
	}
	suite_item("%d sends of %d ints in flight at once, more than btl gamma registers", messages,
	           count);
	return suite_finish();
}
