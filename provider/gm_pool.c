/* SPDX-License-Identifier: BSD-2-Clause */
/* Bounded object pools (see gm_pool.h). */
#include "gm_pool.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>

/* Objects per chunk: large enough to make growth rare, small enough for idle endpoints. */
#define GM_POOL_CHUNK 64

struct gm_pool_chunk {
	struct gm_pool_chunk *next;
	alignas(max_align_t) unsigned char objs[];
};

void gm_pool_init(struct gm_pool *p, size_t size, size_t max)
{
	size_t a = alignof(max_align_t);

	if (size < sizeof(void *))
		size = sizeof(void *);
	*p = (struct gm_pool){.size = (size + a - 1) / a * a, .max = max};
}

static int pool_grow(struct gm_pool *p)
{
	size_t n = p->max - p->count < GM_POOL_CHUNK ? p->max - p->count : GM_POOL_CHUNK;
	struct gm_pool_chunk *c;

	if (!n || !(c = malloc(sizeof(*c) + n * p->size)))
		return -1;
	c->next = p->chunks;
	p->chunks = c;
	for (size_t i = n; i-- > 0;) {
		void *obj = c->objs + i * p->size;
		*(void **)obj = p->free;
		p->free = obj;
	}
	p->count += n;
	return 0;
}

void *gm_pool_get(struct gm_pool *p)
{
	void *obj;

	if (!p->free && pool_grow(p))
		return NULL;
	obj = p->free;
	p->free = *(void **)obj;
	p->used++;
	return obj;
}

void gm_pool_put(struct gm_pool *p, void *obj)
{
	*(void **)obj = p->free;
	p->free = obj;
	p->used--;
}

void gm_pool_fini(struct gm_pool *p)
{
	while (p->chunks) {
		struct gm_pool_chunk *c = p->chunks;
		p->chunks = c->next;
		free(c);
	}
	p->free = NULL;
	p->count = 0;
}
