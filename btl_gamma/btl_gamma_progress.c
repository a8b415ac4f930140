/* SPDX-License-Identifier: BSD-2-Clause */
/* Progress: reading the completion queue and dispatching each completion
 * (send done, message received, failure watch fired), reposting receive
 * buffers, retrying queued sends, and the bounded flush at finalize.
 * One thread at a time progresses a module (progress_lock, try-locked). */
#include "btl_gamma.h"

#include <stdio.h>
#include <time.h>

#include <rdma/fi_errno.h>

#include "opal/util/output.h"

#define GAMMA_CQ_BATCH 16

static volatile int32_t recv_failed_shown;

double gamma_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Finalize: give queued and in-flight sends a bounded chance to leave, so
 * the last messages of a job are not lost by closing the endpoint early. */
void gamma_fi_flush(mca_btl_gamma_module_t *m)
{
	const double deadline = gamma_now_s() + GAMMA_FLUSH_SECONDS;

	while ((m->inflight > 0 || !opal_list_is_empty(&m->pending) ||
	        !opal_list_is_empty(&m->get_pending)) &&
	       gamma_now_s() < deadline)
		gamma_fi_progress(m);
	if (m->inflight > 0 || !opal_list_is_empty(&m->pending))
		GAMMA_VERBOSE(10, "btl gamma: %s: closing with %d sends unconfirmed", m->ifname,
		              (int)m->inflight + (int)opal_list_get_size(&m->pending));
}

static void repost_missing(mca_btl_gamma_module_t *m)
{
	int missing = m->rx_unposted;

	m->rx_unposted = 0;
	for (int i = 0; i < GAMMA_RX_POSTED && missing > 0; i++) {
		if (!m->rx[i].posted && !m->rx[i].busy) {
			missing--;
			gamma_fi_post_recv(m, &m->rx[i]);
		}
	}
	m->rx_unposted += missing;
}

/*
 * A receive failed: a message that did not fit (a peer with a larger
 * btl_gamma_max_send_size), failed its end-to-end CRC, or was given up by
 * its sender.  The error does not say whose it was, and ob1 never sends a
 * fragment again: a request would wait for it for ever.  The job ends here
 * instead, through the PML's error callback.
 */
static void message_lost(mca_btl_gamma_module_t *m, const struct fi_cq_err_entry *err)
{
	const char *why = fi_cq_strerror(m->cq, err->prov_errno, err->err_data, NULL, 0);
	char info[320];

	if (gamma_help_first(&recv_failed_shown))
		gamma_show_help("message lost", m->ifname, why, gamma_hostname());
	snprintf(info, sizeof(info), "btl gamma: %s: a message was lost: its receive failed: %s",
	         m->ifname, why);
	if (m->error_cb)
		m->error_cb(&m->super, MCA_BTL_ERROR_FLAGS_FATAL, NULL, info);
}

static void handle_error(mca_btl_gamma_module_t *m)
{
	struct fi_cq_err_entry err = {0};
	struct gamma_ctx *ctx;

	if (fi_cq_readerr(m->cq, &err, 0) < 1)
		return;
	ctx = err.op_context;
	if (!ctx) {
		static volatile int32_t shown;

		if (gamma_help_first(&shown))
			gamma_show_help("completion error", m->ifname, fi_strerror(err.err),
			                gamma_hostname());
		else
			GAMMA_VERBOSE(10, "btl gamma: %s: completion error: %s", m->ifname,
			              fi_strerror(err.err));
		return;
	}
	if (ctx->kind == GAMMA_CTX_WATCH) {
		mca_btl_gamma_endpoint_t *ep;

		if (!m->enabled)
			return; /* finalizing: the endpoint may be gone */
		ep = container_of(ctx, mca_btl_gamma_endpoint_t, watch);
		if (err.err != FI_ECANCELED)
			gamma_endpoint_fail(ep, "no acknowledgement within FI_GAMMA_PEER_TIMEOUT: "
			                        "the peer or the link to it is dead");
		/* Last: once it reads false, del_procs may free ep. */
		ep->watching = false;
		return;
	}
	if (ctx->kind == GAMMA_CTX_GET || ctx->kind == GAMMA_CTX_GET_DATA) {
		gamma_get_done(container_of(ctx, gamma_get_t, ctx), &err, 0);
		return;
	}
	if (ctx->kind == GAMMA_CTX_SEND) {
		mca_btl_gamma_frag_t *frag = container_of(ctx, mca_btl_gamma_frag_t, ctx);
		char why[160];

		OPAL_THREAD_ADD_FETCH32(&m->inflight, -1);
		if (!m->enabled) {
			gamma_frag_return_if_owned(frag);
			return;
		}
		snprintf(why, sizeof(why), "send on %s failed: %s", m->ifname,
		         fi_cq_strerror(m->cq, err.prov_errno, err.err_data, NULL, 0));
		gamma_endpoint_fail(frag->endpoint, why);
		gamma_send_complete(frag, OPAL_ERR_UNREACH);
		return;
	}
	/* A receive buffer: cancelled at close, or a message lost. */
	struct gamma_rxbuf *rx = container_of(ctx, struct gamma_rxbuf, ctx);
	rx->posted = false;
	if (err.err == FI_ECANCELED || !m->enabled)
		return;
	gamma_fi_post_recv(m, rx);
	message_lost(m, &err);
}

/* One successful completion. */
static void dispatch(mca_btl_gamma_module_t *m, const struct fi_cq_tagged_entry *ent, fi_addr_t src)
{
	struct gamma_ctx *ctx = ent->op_context;

	if (ctx->kind == GAMMA_CTX_WATCH) {
		mca_btl_gamma_endpoint_t *ep = container_of(ctx, mca_btl_gamma_endpoint_t, watch);

		/* Nobody sends the watch tag; should one, watch again (watching
		 * stays true meanwhile: del_procs waits for false to free ep). */
		if (m->enabled)
			gamma_endpoint_watch(ep);
		else
			ep->watching = false;
	} else if (ctx->kind == GAMMA_CTX_SEND) {
		OPAL_THREAD_ADD_FETCH32(&m->inflight, -1);
		gamma_send_complete(container_of(ctx, mca_btl_gamma_frag_t, ctx), OPAL_SUCCESS);
	} else if (ctx->kind == GAMMA_CTX_GET || ctx->kind == GAMMA_CTX_GET_DATA) {
		gamma_get_done(container_of(ctx, gamma_get_t, ctx), NULL, ent->len);
	} else {
		struct gamma_rxbuf *rx = container_of(ctx, struct gamma_rxbuf, ctx);

		rx->posted = false;
		if (!m->enabled)
			return; /* finalizing: the PML is gone */
		/*
		 * The PML trusts what it is handed (pointers among them): only
		 * messages from the job's ranks, i.e. from the address vector,
		 * which holds the modex's addresses and nothing else.
		 */
		if (src == FI_ADDR_NOTAVAIL) {
			GAMMA_VERBOSE(
			    10, "btl gamma: %s: dropped a message from a source outside the job",
			    m->ifname);
			gamma_fi_post_recv(m, rx);
			return;
		}
		rx->busy = true;
		gamma_recv_deliver(m, rx, ent->len, src);
		rx->busy = false;
		gamma_fi_post_recv(m, rx);
	}
}

/* Whether this thread may progress m now: another thread doing it, or a
 * PML callback re-entering from inside dispatch, leaves at once. */
static bool progress_enter(mca_btl_gamma_module_t *m)
{
	if (OPAL_THREAD_TRYLOCK(&m->progress_lock))
		return false;
	if (m->progressing) {
		OPAL_THREAD_UNLOCK(&m->progress_lock);
		return false;
	}
	m->progressing = true;
	return true;
}

static void progress_leave(mca_btl_gamma_module_t *m)
{
	m->progressing = false;
	OPAL_THREAD_UNLOCK(&m->progress_lock);
}

/* wait_ms > 0: the first read may sleep that long in the provider for a
 * completion (btl_gamma_idle.c decides when). */
static int progress(mca_btl_gamma_module_t *m, int wait_ms)
{
	struct fi_cq_tagged_entry ent[GAMMA_CQ_BATCH];
	fi_addr_t src[GAMMA_CQ_BATCH];
	int events = 0;
	ssize_t n;

	if (!progress_enter(m))
		return 0;
	if (!m->job_known)
		gamma_endpoint_learn_job(m);
	/* Blocking with sends still to hand over would hold them back. */
	if (!opal_list_is_empty(&m->pending) || !opal_list_is_empty(&m->get_pending) ||
	    m->rx_unposted)
		wait_ms = 0;
	for (int round = 0; round < 4; round++) {
		if (round == 0 && wait_ms > 0)
			n = fi_cq_sreadfrom(m->cq, ent, GAMMA_CQ_BATCH, src, NULL, wait_ms);
		else
			n = fi_cq_readfrom(m->cq, ent, GAMMA_CQ_BATCH, src);
		if (n == -FI_EAVAIL) {
			handle_error(m);
			events++;
			continue;
		}
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			dispatch(m, &ent[i], src[i]);
		events += (int)n;
		if (n < GAMMA_CQ_BATCH)
			break;
	}
	if (m->rx_unposted)
		repost_missing(m);
	if (!opal_list_is_empty(&m->pending))
		events += gamma_send_drain_pending(m);
	if (!opal_list_is_empty(&m->get_pending))
		events += gamma_get_drain_pending(m);
	progress_leave(m);
	return events;
}

int gamma_fi_progress(mca_btl_gamma_module_t *m)
{
	return progress(m, 0);
}

int gamma_fi_progress_wait(mca_btl_gamma_module_t *m, int wait_ms)
{
	return progress(m, wait_ms);
}
