/* Single messages past 2 GiB and past 4 GiB, each way between two ranks.
 *
 * A count of MPI_BYTE is an int, so the messages are counted in 8-byte
 * words (MPI_UINT64_T): 2 GiB + 24 bytes and 4 GiB + 40 bytes.  What is
 * checked is every length and offset of 32 bits or more on the way: ob1's
 * get or the mtl's one tagged message, the provider's rendezvous and the
 * offsets of its pulled frames.  Rank 0 sends, rank 1 checks every word and
 * sends back another pattern, rank 0 checks that.  One buffer per rank,
 * reused for both directions: 4 GiB + 40 bytes of memory each.
 * Options: --gib-max 2|4 (default 4: both sizes; 2: the first only).
 */
#include "suite.h"

static uint64_t word(uint64_t seed, size_t i)
{
	return suite_mix(seed + i);
}

static void fill(uint64_t *buf, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = word(seed, i);
}

static void check(const char *what, const uint64_t *buf, size_t n, uint64_t seed)
{
	size_t wrong = 0, first = 0;

	for (size_t i = 0; i < n; i++)
		if (buf[i] != word(seed, i) && !wrong++)
			first = i;
	CHECK(!wrong, "%s: %zu of %zu words wrong, the first at byte %zu", what, wrong, n,
	      first * 8);
}

int main(int argc, char **argv)
{
	const size_t sizes[] = {((size_t)2 << 30) + 24, ((size_t)4 << 30) + 40};
	int nsizes = 2;

	suite_init(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--gib-max") && i + 1 < argc && !strcmp(argv[i + 1], "2")) {
			nsizes = 1;
			i++;
		} else if (!strcmp(argv[i], "--gib-max") && i + 1 < argc &&
		           !strcmp(argv[i + 1], "4")) {
			i++;
		} else {
			suite_usage_error(argv[0], "usage: bigmsg [--gib-max 2|4]");
		}
	}
	if (S.size != 2)
		suite_usage_error(argv[0], "2 ranks");

	uint64_t *buf = suite_alloc(sizes[nsizes - 1]);
	for (int k = 0; k < nsizes; k++) {
		const size_t n = sizes[k] / 8;
		const uint64_t there = suite_seed(0, sizes[k], 1),
		               back = suite_seed(1, sizes[k], 2);
		char name[64];
		MPI_Status st;

		snprintf(name, sizeof(name), "%zu bytes", sizes[k]);
		if (S.rank == 0) {
			fill(buf, n, there);
			MPI_Send(buf, (int)n, MPI_UINT64_T, 1, k, MPI_COMM_WORLD);
			memset(buf, 0, n * 8);
			MPI_Recv(buf, (int)n, MPI_UINT64_T, 1, k, MPI_COMM_WORLD, &st);
			suite_check_status(name, &st, 1, k, MPI_UINT64_T, (int)n);
			check(name, buf, n, back);
		} else {
			memset(buf, 0, n * 8);
			MPI_Recv(buf, (int)n, MPI_UINT64_T, 0, k, MPI_COMM_WORLD, &st);
			suite_check_status(name, &st, 0, k, MPI_UINT64_T, (int)n);
			check(name, buf, n, there);
			fill(buf, n, back);
			MPI_Send(buf, (int)n, MPI_UINT64_T, 0, k, MPI_COMM_WORLD);
		}
		suite_item("one message of %s each way, every word checked", name);
	}
	free(buf);
	return suite_finish();
}
