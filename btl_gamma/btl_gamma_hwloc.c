/* SPDX-License-Identifier: BSD-2-Clause */
/* Order candidate NICs nearest-first using hwloc. Plain hwloc, no Open MPI
 * headers: any failure (no topology, virtual NICs without a PCI parent, an
 * unbound process) leaves the order unchanged. */
#include <hwloc.h>
#include <stdlib.h>
#include <string.h>

void gamma_hwloc_sort_nearest(char **names, int count);

/* 2: we run inside the NIC's locality, 1: partly, 0: elsewhere or unknown. */
static int nearness(hwloc_topology_t topo, hwloc_const_bitmap_t mine, const char *ifname)
{
	hwloc_obj_t os = NULL, anc;

	while ((os = hwloc_get_next_osdev(topo, os)) != NULL) {
		if (os->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK || !os->name ||
		    strcmp(os->name, ifname))
			continue;
		anc = hwloc_get_non_io_ancestor_obj(topo, os);
		if (!anc || !anc->cpuset)
			return 0;
		if (hwloc_bitmap_isincluded(mine, anc->cpuset))
			return 2;
		return hwloc_bitmap_intersects(mine, anc->cpuset) ? 1 : 0;
	}
	return 0;
}

void gamma_hwloc_sort_nearest(char **names, int count)
{
	hwloc_topology_t topo;
	hwloc_bitmap_t mine;
	int *score;

	if (count < 2 || !(score = calloc(count, sizeof(*score))))
		return;
	if (hwloc_topology_init(&topo)) {
		free(score);
		return;
	}
	hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	mine = hwloc_bitmap_alloc();
	if (!hwloc_topology_load(topo) && mine &&
	    !hwloc_get_cpubind(topo, mine, HWLOC_CPUBIND_PROCESS) && !hwloc_bitmap_iszero(mine)) {
		for (int i = 0; i < count; i++)
			score[i] = nearness(topo, mine, names[i]);
		/* Stable insertion sort: equal scores keep the provider's order. */
		for (int i = 1; i < count; i++) {
			char *n = names[i];
			int s = score[i], j = i - 1;
			for (; j >= 0 && score[j] < s; j--) {
				names[j + 1] = names[j];
				score[j + 1] = score[j];
			}
			names[j + 1] = n;
			score[j + 1] = s;
		}
	}
	hwloc_bitmap_free(mine);
	hwloc_topology_destroy(topo);
	free(score);
}
