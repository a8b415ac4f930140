/* SPDX-License-Identifier: BSD-2-Clause */
/* A minimal intrusive doubly linked list (circular, with a head node). */
#ifndef GM_LIST_H
#define GM_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct gm_list {
	struct gm_list *next, *prev;
};

#define GM_LIST_INIT(name)                                                                         \
	{                                                                                          \
		&(name), &(name)                                                                   \
	}
#define gm_container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

static inline void gm_list_init(struct gm_list *h)
{
	h->next = h->prev = h;
}

static inline bool gm_list_empty(const struct gm_list *h)
{
	return h->next == h;
}

static inline void gm_list_insert_between(struct gm_list *e, struct gm_list *prev,
                                          struct gm_list *next)
{
	e->next = next;
	e->prev = prev;
	prev->next = e;
	next->prev = e;
}

static inline void gm_list_add_tail(struct gm_list *h, struct gm_list *e)
{
	gm_list_insert_between(e, h->prev, h);
}

static inline void gm_list_add_head(struct gm_list *h, struct gm_list *e)
{
	gm_list_insert_between(e, h, h->next);
}

static inline void gm_list_del(struct gm_list *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->next = e->prev = e;
}

#define gm_list_for_each_safe(h, pos, tmp)                                                         \
	for ((pos) = (h)->next, (tmp) = (pos)->next; (pos) != (h);                                 \
	     (pos) = (tmp), (tmp) = (pos)->next)

#define gm_list_entry(ptr, type, member) gm_container_of(ptr, type, member)

#endif /* GM_LIST_H */
