/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sleeping when idle (btl_gamma_idle_block).  With mpi_yield_when_idle, an
 * idle rank spins through opal_progress and sched_yield(); on a host with
 * more ranks than cores that spinning takes a share of the core from the
 * rank that has work, often the very peer it waits for.  Instead, once a
 * rank has found nothing to do for a while, the BTL waits in the
 * provider's wait object (fi_cq_sread): the core goes to the others, and
 * the first frame (or a completion the provider's progress thread writes)
 * wakes the rank at once.  The provider spins briefly before it sleeps, so
 * a quick answer costs no wake-up.
 *
 * Sleeping inside opal_progress also stalls every other progress source,
 * so auto sleeps only when gamma carries all of this rank's traffic: no
 * peer on this node (no shared-memory messages) and one module.  Sleeps
 * are bounded by GAMMA_IDLE_SLEEP_MS all the same.
 */
#include "btl_gamma.h"

#include <time.h>

#include "opal/runtime/opal_progress.h"
#include "opal/util/proc.h"

/* A caller that goes this long between two idle calls is not waiting in
 * a progress loop (MPI_Test between computations): it must not sleep. */
#define GAMMA_IDLE_GAP_US 1000
/* Idle calls must have run back to back this long before the first sleep. */
#define GAMMA_IDLE_SPIN_US  20
#define GAMMA_IDLE_SLEEP_MS 10

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static bool may_sleep(void)
{
	const mca_btl_gamma_component_t *c = &mca_btl_gamma_component;

	if (c->num_modules != 1 || !c->modules[0]->enabled)
		return false;
	switch (c->params.idle_block) {
	case GAMMA_IDLE_BLOCK_YES:
		return true;
	case GAMMA_IDLE_BLOCK_AUTO:
		return opal_progress_yield_when_idle && opal_process_info.num_local_peers == 0;
	default:
		return false;
	}
}

int gamma_idle_progress(int events)
{
	static uint64_t streak_start, last_call;
	uint64_t now;

	if (events > 0 || !may_sleep()) {
		last_call = 0;
		return events;
	}
	now = now_us();
	if (!last_call || now - last_call > GAMMA_IDLE_GAP_US)
		streak_start = now;
	if (now - streak_start >= GAMMA_IDLE_SPIN_US)
		events =
		    gamma_fi_progress_wait(mca_btl_gamma_component.modules[0], GAMMA_IDLE_SLEEP_MS);
	last_call = events > 0 ? 0 : now_us();
	return events;
}
