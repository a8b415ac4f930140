/* The AV's index by address: lookups, duplicates, removal, growth, late resolution. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "gm.h"

static struct gm_av av;

static struct gm_addr addr_of(unsigned i)
{
	return (struct gm_addr){.mac = {2, 0, 0, (uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i},
	                        .port = (uint16_t)(i * 7 + 1)};
}

/* Append n entries the way gm_av_insert does; valid NULL: all resolved. */
static void insert_as(const struct gm_addr *a, size_t n, const bool *valid)
{
	size_t first = av.count;

	if (av.count + n > av.cap) {
		av.cap = (av.count + n) * 2;
		av.addrs = realloc(av.addrs, av.cap * sizeof(*av.addrs));
		av.valid = realloc(av.valid, av.cap * sizeof(*av.valid));
		cr_assert(av.addrs && av.valid);
	}
	if (2 * (av.count + n) > av.index_cap)
		cr_assert_eq(gm_av_index_rebuild(&av, av.count + n), 0);
	for (size_t i = 0; i < n; i++) {
		av.addrs[av.count] = a[i];
		av.valid[av.count++] = valid ? valid[i] : true;
	}
	gm_av_index_added(&av, first);
}

static void insert(const struct gm_addr *a, size_t n)
{
	insert_as(a, n, NULL);
}

static void fini(void)
{
	free(av.addrs);
	free(av.valid);
	free(av.index);
	av = (struct gm_av){0};
}

TestSuite(av, .fini = fini);

Test(av, empty_finds_nothing)
{
	struct gm_addr a = addr_of(1);

	cr_assert_eq(gm_av_find(&av, &a), FI_ADDR_NOTAVAIL);
}

Test(av, finds_every_entry_across_growth)
{
	enum { N = 5000 };
	uint64_t gen = av.gen;

	for (unsigned i = 0; i < N; i += 100) {
		struct gm_addr a[100];

		for (unsigned k = 0; k < 100; k++)
			a[k] = addr_of(i + k);
		insert(a, 100);
	}
	cr_assert_eq(av.gen, gen + N / 100, "every insert bumps the generation");
	cr_assert_geq(av.index_cap, 2 * N);
	for (unsigned i = 0; i < N; i++) {
		struct gm_addr a = addr_of(i);

		cr_assert_eq(gm_av_find(&av, &a), i, "entry %u", i);
	}
	for (unsigned i = N; i < N + 100; i++) {
		struct gm_addr a = addr_of(i);

		cr_assert_eq(gm_av_find(&av, &a), FI_ADDR_NOTAVAIL);
	}
}

Test(av, duplicate_gives_the_lowest_valid_entry)
{
	struct gm_addr a[3] = {addr_of(1), addr_of(2), addr_of(1)};

	insert(a, 3);
	cr_assert_eq(gm_av_find(&av, &a[0]), 0);
	av.valid[0] = false; /* fi_av_remove, then the rebuild it does */
	cr_assert_eq(gm_av_index_rebuild(&av, av.count), 0);
	cr_assert_eq(gm_av_find(&av, &a[0]), 2);
	cr_assert_eq(gm_av_find(&av, &a[1]), 1);
	av.valid[2] = false;
	cr_assert_eq(gm_av_index_rebuild(&av, av.count), 0);
	cr_assert_eq(gm_av_find(&av, &a[0]), FI_ADDR_NOTAVAIL);
	cr_assert_eq(gm_av_find(&av, &a[1]), 1);
}

Test(av, same_mac_other_port_is_another_entry)
{
	struct gm_addr a[2] = {addr_of(9), addr_of(9)};

	a[1].port++;
	insert(a, 2);
	cr_assert_eq(gm_av_find(&av, &a[0]), 0);
	cr_assert_eq(gm_av_find(&av, &a[1]), 1);
}

/* A failed or pending (IP address, no MAC yet) entry is not found until resolved. */
Test(av, unresolved_entries_are_found_once_resolved)
{
	struct gm_addr a[3] = {addr_of(1), addr_of(2), addr_of(3)};
	const bool valid[3] = {true, false, false};
	uint64_t gen;

	insert_as(a, 3, valid);
	cr_assert_eq(gm_av_find(&av, &a[0]), 0);
	cr_assert_eq(gm_av_find(&av, &a[1]), FI_ADDR_NOTAVAIL);
	cr_assert_eq(gm_av_find(&av, &a[2]), FI_ADDR_NOTAVAIL);
	gen = av.gen;
	av.valid[2] = true;
	gm_av_index_resolved(&av, 2);
	cr_assert_eq(gm_av_find(&av, &a[2]), 2);
	cr_assert_eq(gm_av_find(&av, &a[1]), FI_ADDR_NOTAVAIL);
	cr_assert_eq(av.gen, gen + 1, "held messages must look again");
}

/* Several rails: each entry's address on every rail is found, on its rail only. */
Test(av, two_rails_find_each_rail_address)
{
	enum { N = 3000 };

	av.nrails = 2;
	for (unsigned i = 0; i < N; i++) {
		if (av.count + 1 > av.cap) {
			av.cap = (av.count + 1) * 2;
			av.addrs = realloc(av.addrs, av.cap * 2 * sizeof(*av.addrs));
			av.valid = realloc(av.valid, av.cap * sizeof(*av.valid));
			cr_assert(av.addrs && av.valid);
		}
		if (2 * (av.count + 1) * 2 > av.index_cap)
			cr_assert_eq(gm_av_index_rebuild(&av, av.count + 1), 0);
		av.addrs[2 * av.count] = addr_of(i);
		av.addrs[2 * av.count + 1] = addr_of(100000 + i);
		av.valid[av.count++] = true;
		gm_av_index_added(&av, av.count - 1);
	}
	cr_assert_geq(av.index_cap, 4 * N, "room for both rails' addresses");
	for (unsigned i = 0; i < N; i++) {
		struct gm_addr a0 = addr_of(i), a1 = addr_of(100000 + i);

		cr_assert_eq(gm_av_find(&av, &a0), i);
		cr_assert_eq(gm_av_find_rail(&av, 1, &a1), i);
		cr_assert_eq(gm_av_find(&av, &a1), FI_ADDR_NOTAVAIL,
		             "rail 1's address is not rail 0's");
		cr_assert_eq(gm_av_find_rail(&av, 1, &a0), FI_ADDR_NOTAVAIL);
	}
}
