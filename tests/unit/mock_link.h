/*
 * The unit tests' simulated link (test_rel.c, test_msg.c): two reliability
 * engines joined by a deterministic in-memory link that drops, duplicates,
 * reorders and corrupts frames, under a simulated clock in microseconds.
 * No sockets, no real time: a run depends only on its seed.
 *
 * A test creates its engines with mock_rel_create (the link is their
 * gm_rel_link), then drives the clock: mock_deliver hands the frames due
 * to their engines, mock_flush runs both engines' timers and queues, and
 * it moves now itself (a fixed step, or mock_advance to the next event).
 * A tap sees each frame a node sends before the faults do, to record it,
 * drop it or queue a changed copy of its own.
 */
#ifndef MOCK_LINK_H
#define MOCK_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gm_rel.h"

#define MOCK_MTU       1500
#define MOCK_FRAME_MAX (MOCK_MTU + GM_ETH_HLEN)
#define MOCK_HOP_US    5     /* every frame's time on the wire */
#define MOCK_MAXQ      20000 /* frames on the wire at once, unless maxq says otherwise */

struct mock_fault {
	unsigned drop, dup, reorder, corrupt; /* per mille of frames */
	unsigned reorder_us; /* a reordered frame is held up to this long; 0: 300 */
	unsigned dup_us;     /* a duplicate follows its frame up to this late; 0: 100 */
	/* Per mille of batches the link takes only half of: the engine's requeue path. */
	unsigned split;
	/* A send call takes at most this many frames (a link slower than the
	 * sender's progress: the rest waits in the engine's queue); 0: all. */
	unsigned take_max;
	bool dead; /* the link takes every frame and delivers none */
};

enum mock_verdict {
	MOCK_PASS,  /* on to the faults */
	MOCK_DROP,  /* lost */
	MOCK_TAKEN, /* the tap queued what it wants delivered instead (mock_enqueue) */
};

struct mock_link;
typedef enum mock_verdict (*mock_tap)(struct mock_link *l, int from, int to, const uint8_t *frame,
                                      size_t len);

struct mock_frame {
	uint64_t when;
	uint64_t order; /* enqueued as the order-th frame: the wire's FIFO order */
	int dst;
	size_t len;
	uint8_t data[];
};

/* One end of the link: what the engine's gm_rel_link context points to. */
struct mock_end {
	struct mock_link *link;
	int id;
	uint8_t mac[6];
	struct gm_rel *rel;
};

struct mock_link {
	uint64_t now, rng; /* the clock (us) and the fault generator's state (not 0) */
	struct mock_fault fault;
	bool refuse;   /* the link takes nothing (its send buffer is full) */
	unsigned maxq; /* 0: MOCK_MAXQ */
	mock_tap tap;  /* NULL: none */
	void *tap_ctx;
	struct mock_end end[2];
	struct mock_frame **q; /* on the wire, in no order */
	unsigned nq;
	uint64_t enqueued; /* frames ever enqueued */
};

uint64_t mock_rnd(struct mock_link *l);
/* True per_mille times in 1000; draws nothing when per_mille is 0. */
bool mock_chance(struct mock_link *l, unsigned per_mille);
/* The engine of end id (0 or 1, MAC cfg->mac), sending through l. */
int mock_rel_create(struct mock_link *l, int id, const struct gm_rel_cfg *cfg, struct gm_rel **rel);
/* Put a frame on the wire to end dst, delivered delay us from now. */
struct mock_frame *mock_enqueue(struct mock_link *l, int dst, const void *data, size_t len,
                                uint64_t delay);
/* Hand every frame due by now to its engine. */
void mock_deliver(struct mock_link *l);
/* Both engines' end of a progress pass, at now. */
void mock_flush(struct mock_link *l);
/* now to the next frame due or engine deadline (at least 1 us on). */
void mock_advance(struct mock_link *l);
/* Frees the frames still on the wire (the engines are the caller's). */
void mock_free(struct mock_link *l);

#endif /* MOCK_LINK_H */
