/* The bounded object pool (gm_pool.c): bound, reuse, alignment, leak count. */
#include <criterion/criterion.h>
#include <stdalign.h>
#include <stdint.h>
#include <string.h>

#include "gm_pool.h"

Test(pool, refuses_past_max_and_reuses)
{
	struct gm_pool p;
	void *obj[200];

	gm_pool_init(&p, 100, 150);
	for (int i = 0; i < 150; i++) {
		obj[i] = gm_pool_get(&p);
		cr_assert_not_null(obj[i], "object %d of 150", i);
		cr_assert_eq((uintptr_t)obj[i] % alignof(max_align_t), 0);
		memset(obj[i], i, 100); /* ASan: each object has its 100 bytes */
		for (int j = 0; j < i; j++)
			cr_assert_neq(obj[i], obj[j], "object %d handed out twice", j);
	}
	cr_assert_null(gm_pool_get(&p), "object 151 of 150");
	cr_assert_eq(p.used, 150);
	gm_pool_put(&p, obj[7]);
	cr_assert_eq(gm_pool_get(&p), obj[7], "a freed object is reused");
	cr_assert_null(gm_pool_get(&p));
	for (int i = 0; i < 150; i++)
		gm_pool_put(&p, obj[i]);
	cr_assert_eq(p.used, 0);
	cr_assert_eq(p.count, 150, "grown to max, no further");
	gm_pool_fini(&p);
}

Test(pool, grows_only_as_needed)
{
	struct gm_pool p;

	gm_pool_init(&p, 8, 100000);
	cr_assert_eq(p.count, 0, "nothing allocated before the first get");
	void *a = gm_pool_get(&p);
	cr_assert_not_null(a);
	cr_assert_lt(p.count, 1000, "%zu objects allocated for one", p.count);
	gm_pool_put(&p, a);
	gm_pool_fini(&p);
}

Test(pool, fini_counts_what_was_not_put_back)
{
	struct gm_pool p;

	gm_pool_init(&p, 1, 4); /* smaller than a pointer: the free list still fits */
	cr_assert_not_null(gm_pool_get(&p));
	void *b = gm_pool_get(&p);
	gm_pool_put(&p, b);
	gm_pool_fini(&p);
	cr_assert_eq(p.used, 1, "one object leaked");
}
