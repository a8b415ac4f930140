/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The address vector's index by address (gm_av_find), so that naming the
 * sender of an arriving message costs O(1), not a scan of the AV: frames
 * from a source not (yet) in the AV look it up on every arrival.
 *
 * Open addressing with linear probing; a slot holds fi_addr + 1 (0: empty)
 * of the lowest valid entry with that address.  Removal is rare, so
 * fi_av_remove rebuilds the index rather than leave tombstones.
 */
#include "gm.h"

#include <stdlib.h>
#include <string.h>

/*
 * Several rails: every rail's address of an entry is indexed; a slot then
 * holds fi_addr * rails + rail + 1, the position of that address in
 * av->addrs.
 */
static unsigned rails(const struct gm_av *av)
{
	return av->nrails ? av->nrails : 1;
}

static size_t slot_of(const struct gm_av *av, const struct gm_addr *addr)
{
	uint64_t k = 0;

	memcpy(&k, addr, sizeof(*addr));
	return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 32) & (av->index_cap - 1);
}

fi_addr_t gm_av_find_rail(struct gm_av *av, unsigned rail, const struct gm_addr *addr)
{
	unsigned n = rails(av);

	if (!av->index_cap)
		return FI_ADDR_NOTAVAIL;
	for (size_t s = slot_of(av, addr);; s = (s + 1) & (av->index_cap - 1)) {
		size_t v = av->index[s];

		if (!v)
			return FI_ADDR_NOTAVAIL;
		if ((v - 1) % n == rail && !memcmp(&av->addrs[v - 1], addr, sizeof(*addr)))
			return (v - 1) / n;
	}
}

fi_addr_t gm_av_find(struct gm_av *av, const struct gm_addr *addr)
{
	return gm_av_find_rail(av, 0, addr);
}

/* Index entry fi_addr's addresses, each unless indexed already (lower). */
static void index_add(struct gm_av *av, fi_addr_t fi_addr)
{
	for (unsigned r = 0, n = rails(av); r < n; r++) {
		size_t at = fi_addr * n + r;
		const struct gm_addr *addr = &av->addrs[at];
		size_t s = slot_of(av, addr);

		for (; av->index[s]; s = (s + 1) & (av->index_cap - 1))
			if ((av->index[s] - 1) % n == r &&
			    !memcmp(&av->addrs[av->index[s] - 1], addr, sizeof(*addr)))
				break;
		if (!av->index[s])
			av->index[s] = at + 1;
	}
}

/* Index every valid entry, in a table for at least `need` of them. */
int gm_av_index_rebuild(struct gm_av *av, size_t need)
{
	size_t cap = av->index_cap ? av->index_cap : 128;

	need *= rails(av);
	while (cap < 2 * need)
		cap *= 2;
	if (cap != av->index_cap) {
		size_t *ix = malloc(cap * sizeof(*ix));

		if (!ix)
			return -FI_ENOMEM;
		free(av->index);
		av->index = ix;
		av->index_cap = cap;
	}
	memset(av->index, 0, av->index_cap * sizeof(*av->index));
	for (size_t i = 0; i < av->count; i++)
		if (av->valid[i])
			index_add(av, i);
	return 0;
}

/* Entries [first, av->count) were appended; the table has room for them. */
void gm_av_index_added(struct gm_av *av, size_t first)
{
	for (size_t i = first; i < av->count; i++)
		if (av->valid[i])
			index_add(av, i);
	av->gen++;
}

/* Entry fi_addr, appended unresolved (an IP address), now has its MAC. */
void gm_av_index_resolved(struct gm_av *av, fi_addr_t fi_addr)
{
	index_add(av, fi_addr);
	av->gen++;
}
