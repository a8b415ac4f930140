/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A bounded pool of fixed-size objects: memory is taken in chunks as the
 * pool grows, up to max objects, and reused from a free list; it goes back
 * to the system only at gm_pool_fini.  No locking (the caller's).
 */
#ifndef GM_POOL_H
#define GM_POOL_H

#include <stddef.h>

struct gm_pool_chunk;

struct gm_pool {
	size_t size;  /* of one object, aligned */
	size_t max;   /* objects the pool may hold at most */
	size_t count; /* objects allocated so far, free or not */
	size_t used;  /* objects handed out and not yet put back */
	void *free;   /* free objects, linked through their first word */
	struct gm_pool_chunk *chunks;
};

void gm_pool_init(struct gm_pool *p, size_t size, size_t max);
/* An object, uninitialised; NULL once max are out (or without memory). */
void *gm_pool_get(struct gm_pool *p);
void gm_pool_put(struct gm_pool *p, void *obj);
/* Frees every chunk, objects still out too: used still counts those (leaks). */
void gm_pool_fini(struct gm_pool *p);

#endif /* GM_POOL_H */
