/* iovec helpers (gm_iov.c): copies in and out, with the CRC, and slices. */
#include <criterion/criterion.h>
#include <string.h>

#include "gm_msg.h"
#include "gm_wire.h"

Test(iov, copy_across_entries)
{
	char a[3], b[5], out[8];
	struct iovec iov[2] = {{a, 3}, {b, 5}};

	cr_assert_eq(gm_iov_len(iov, 2), 8);
	cr_assert_eq(gm_iov_copy_to(iov, 2, 2, "xyz", 3), 3);
	cr_assert_eq(a[2], 'x');
	cr_assert_eq(b[0], 'y');
	cr_assert_eq(b[1], 'z');
	cr_assert_eq(gm_iov_copy_to(iov, 2, 6, "0123", 4), 2, "copy stops at the end");
	cr_assert_eq(gm_iov_copy_from(iov, 2, 2, out, 3), 3);
	cr_assert(!memcmp(out, "xyz", 3));
}

Test(iov, copy_to_crc_chains_the_crc_of_what_it_copied)
{
	char a[4], b[6];
	struct iovec iov[2] = {{a, 4}, {b, 6}};
	uint32_t crc = gm_crc32c(0, "ab", 2);

	cr_assert_eq(gm_iov_copy_to_crc(iov, 2, 1, "cdefghijk", 9, &crc), 9);
	cr_assert_eq(crc, gm_crc32c(0, "abcdefghijk", 11));
	cr_assert(!memcmp(a + 1, "cde", 3) && !memcmp(b, "fghijk", 6));
}

Test(iov, slice_covers_a_range_across_entries)
{
	char a[4], b[6], c[3];
	struct iovec iov[3] = {{a, 4}, {b, 6}, {c, 3}}, out[3];

	cr_assert_eq(gm_iov_slice(iov, 3, 2, 9, out), 3);
	cr_assert(out[0].iov_base == a + 2 && out[0].iov_len == 2);
	cr_assert(out[1].iov_base == b && out[1].iov_len == 6);
	cr_assert(out[2].iov_base == c && out[2].iov_len == 1);
	cr_assert_eq(gm_iov_slice(iov, 3, 4, 6, out), 1, "exactly one entry");
	cr_assert(out[0].iov_base == b && out[0].iov_len == 6);
	cr_assert_eq(gm_iov_slice(iov, 3, 12, 100, out), 1, "clipped at the end");
	cr_assert(out[0].iov_base == c + 2 && out[0].iov_len == 1);
	cr_assert_eq(gm_iov_slice(iov, 3, 13, 5, out), 0, "nothing past the end");
}
