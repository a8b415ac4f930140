/* Double-queue scheduler: class order, the starvation guard, FIFO mode. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "gm_dq.h"

struct item {
	struct gm_dq_item it; /* first: pop returns it */
	char name[4];
};

static struct item items[64];

static struct gm_dq_item *mk(int i, const char *name)
{
	memset(&items[i], 0, sizeof(items[i]));
	strcpy(items[i].name, name);
	return &items[i].it;
}

/* Pops everything, returns the names joined by spaces. */
static const char *drain(struct gm_dq *d)
{
	static char out[512];
	struct gm_dq_item *it;

	out[0] = 0;
	while ((it = gm_dq_pop(d))) {
		if (out[0])
			strcat(out, " ");
		strcat(out, ((struct item *)it)->name);
	}
	cr_assert_eq(gm_dq_len(d), 0);
	return out;
}

Test(dq, high_before_low_each_fifo)
{
	struct gm_dq d;

	gm_dq_init(&d, true, 0);
	gm_dq_push(&d, mk(0, "l1"), 1, false);
	gm_dq_push(&d, mk(1, "h1"), 0, false);
	gm_dq_push(&d, mk(2, "l2"), 1, false);
	gm_dq_push(&d, mk(3, "h2"), 0, false);
	cr_assert_eq(gm_dq_len(&d), 4);
	cr_assert_str_eq(drain(&d), "h1 h2 l1 l2");
}

Test(dq, starvation_guard_exact_interleaving)
{
	struct gm_dq d;
	char name[4];
	int k = 0;

	gm_dq_init(&d, true, 2);
	for (int i = 1; i <= 7; i++) {
		snprintf(name, sizeof(name), "h%d", i);
		gm_dq_push(&d, mk(k++, name), 0, false);
	}
	for (int i = 1; i <= 3; i++) {
		snprintf(name, sizeof(name), "l%d", i);
		gm_dq_push(&d, mk(k++, name), 1, false);
	}
	cr_assert_str_eq(drain(&d), "h1 h2 l1 h3 h4 l2 h5 h6 l3 h7");
}

Test(dq, guard_counts_only_while_low_waits)
{
	struct gm_dq d;

	gm_dq_init(&d, true, 3);
	gm_dq_push(&d, mk(0, "h1"), 0, false);
	gm_dq_push(&d, mk(1, "h2"), 0, false);
	cr_assert_str_eq(drain(&d), "h1 h2"); /* no low waiting: run resets */
	gm_dq_push(&d, mk(2, "h3"), 0, false);
	gm_dq_push(&d, mk(3, "h4"), 0, false);
	gm_dq_push(&d, mk(4, "h5"), 0, false);
	gm_dq_push(&d, mk(5, "h6"), 0, false);
	gm_dq_push(&d, mk(6, "l1"), 1, false);
	cr_assert_str_eq(drain(&d), "h3 h4 h5 l1 h6");
}

Test(dq, strict_priority_without_guard)
{
	struct gm_dq d;

	gm_dq_init(&d, true, 0);
	gm_dq_push(&d, mk(0, "l1"), 1, false);
	for (int i = 1; i < 40; i++)
		gm_dq_push(&d, mk(i, "h"), 0, false);
	for (int i = 1; i < 40; i++)
		cr_assert_str_eq(((struct item *)gm_dq_pop(&d))->name, "h");
	cr_assert_str_eq(((struct item *)gm_dq_pop(&d))->name, "l1");
	cr_assert_null(gm_dq_pop(&d));
}

Test(dq, fifo_mode_keeps_arrival_order)
{
	struct gm_dq d;

	gm_dq_init(&d, false, 2);
	gm_dq_push(&d, mk(0, "l1"), 1, false);
	gm_dq_push(&d, mk(1, "h1"), 0, false);
	gm_dq_push(&d, mk(2, "l2"), 1, false);
	gm_dq_push(&d, mk(3, "l3"), 1, false);
	gm_dq_push(&d, mk(4, "h2"), 0, false);
	cr_assert_str_eq(drain(&d), "l1 h1 l2 l3 h2");
}

Test(dq, push_front_and_remove)
{
	struct gm_dq d;

	gm_dq_init(&d, true, 0);
	gm_dq_push(&d, mk(0, "h1"), 0, false);
	gm_dq_push(&d, mk(1, "h2"), 0, false);
	gm_dq_push(&d, mk(2, "h0"), 0, true);
	gm_dq_push(&d, mk(3, "l1"), 1, false);
	gm_dq_remove(&d, &items[1].it);
	cr_assert(!items[1].it.queued);
	gm_dq_remove(&d, &items[1].it); /* not queued: no-op */
	cr_assert_str_eq(drain(&d), "h0 h1 l1");
}
