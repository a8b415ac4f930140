/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unexpected messages: what arrived before a receive for it, held within
 * caps (FI_GAMMA_UX_*), and held apart when its source is not in the AV
 * (FI_GAMMA_UX_UNKNOWN) until the AV has it or its time runs out.
 */
#include "gm_msg_int.h"

#include <stdlib.h>
#include <string.h>

static uint64_t now_ms(const struct gm_msg *m)
{
	return m->up->now_ms(m->up_ctx);
}

/* From a source not (yet) in the AV: held, or delivered with FI_ADDR_NOTAVAIL. */
static bool ux_unknown(const struct gm_ux *ux)
{
	return ux->src == FI_ADDR_NOTAVAIL || ux->src == GM_ADDR_HELD;
}

/*
 * Unexpected messages are held within caps: FI_GAMMA_UX_PEER_MAX per peer
 * and FI_GAMMA_UX_MAX per endpoint; those from sources not in the AV have
 * a budget of their own, FI_GAMMA_UX_UNKNOWN_MAX, so that a flood of forged
 * ones cannot crowd out the job's.  None is dropped for them: they were
 * acknowledged frame by frame.  Once a cap is reached, the frames that
 * would add more are refused (gm_ux_admit) and wait in the reliability
 * layer, which holds their sender back, until receives take some or the
 * source enters the AV (gm_ux_resume).  So the caps bound what a source
 * makes us hold to the cap plus one frame's worth.
 */
static void ux_charge(struct gm_ux *ux, size_t n)
{
	struct gm_conn *conn = ux->conn;
	struct gm_msg *m = conn->msg;

	if (ux_unknown(ux)) {
		m->unknown_bytes += n;
		if (m->unknown_bytes > m->st.unknown_peak)
			m->st.unknown_peak = m->unknown_bytes;
	} else {
		conn->ux_bytes += n;
		m->ux_bytes += n;
		if (m->ux_bytes > m->st.ux_peak)
			m->st.ux_peak = m->ux_bytes;
	}
	ux->charged += n;
}

static void ux_uncharge(struct gm_ux *ux, size_t n)
{
	if (ux_unknown(ux)) {
		ux->conn->msg->unknown_bytes -= n;
	} else {
		ux->conn->msg->ux_bytes -= n;
		ux->conn->ux_bytes -= n;
	}
	ux->charged -= n;
}

/* Room for len bytes at ux->buf: it grows as fragments arrive, never past msg_len. */
bool gm_ux_reserve(struct gm_ux *ux, uint64_t len)
{
	size_t cap = ux->cap * 2 > len ? ux->cap * 2 : len;
	uint8_t *buf;

	if (len <= ux->cap)
		return true;
	if (cap > ux->msg_len)
		cap = ux->msg_len;
	ux_charge(ux, cap - ux->cap);
	buf = realloc(ux->buf, cap);
	if (!buf) {
		ux_uncharge(ux, cap - ux->cap);
		return false;
	}
	ux->buf = buf;
	ux->cap = cap;
	return true;
}

void gm_ux_free(struct gm_ux *ux)
{
	if (ux_unknown(ux))
		ux->conn->msg->ux_unresolved--;
	ux_uncharge(ux, ux->charged);
	free(ux->buf);
	free(ux);
}

/* Drop an unexpected message over a cap (or held too long), counting it. */
void gm_ux_drop(struct gm_ux *ux)
{
	struct gm_msg *m = ux->conn->msg;

	if (ux_unknown(ux)) {
		m->st.unknown_dropped++;
	} else {
		m->st.drop_no_memory++;
		MSG_WARN(m, "out of memory for an unexpected message of %lu bytes: dropped\n",
		         (unsigned long)ux->msg_len);
	}
	if (ux->conn->rx_cur == ux)
		ux->conn->rx_cur = NULL;
	gm_ux_free(ux);
}

/* A new unexpected message with its first dlen bytes to come; NULL: dropped. */
struct gm_ux *gm_ux_new(struct gm_conn *conn, const struct gm_msg_hdr *h, bool rts, size_t dlen)
{
	struct gm_msg *m = conn->msg;
	struct gm_ux *ux = calloc(1, sizeof(*ux));

	if (!ux) {
		m->st.drop_no_memory++;
		MSG_WARN(m, "out of memory for an unexpected message: dropped\n");
		return NULL;
	}
	ux->conn = conn;
	ux->src = gm_conn_msg_src(conn);
	if (ux_unknown(ux))
		m->ux_unresolved++;
	if (ux->src == GM_ADDR_HELD) {
		ux->held_ms = now_ms(m);
		if (ux->held_ms + m->cfg.ux_unknown_hold_ms < m->held_expiry_ms)
			m->held_expiry_ms = ux->held_ms + m->cfg.ux_unknown_hold_ms;
		m->st.unknown_held++;
	}
	ux->tag = h->tag;
	ux->data = h->data;
	ux->msg_len = h->msg_len;
	ux->mflags = h->mflags;
	ux->msg_id = h->msg_id;
	ux->rts = rts;
	gm_list_init(&ux->entry);
	ux_charge(ux, sizeof(*ux));
	if (!gm_ux_reserve(ux, dlen)) {
		gm_ux_drop(ux);
		return NULL;
	}
	return ux;
}

/* The same for an unexpected message, into its own buffer. */
bool gm_ux_place(struct gm_ux *ux, uint64_t off, const uint8_t *data, size_t dlen, uint32_t want)
{
	uint32_t crc = ux->mcrc;

	/* An RTS or an empty message has no buffer: ux->buf is NULL. */
	if (gm_frame_payload_crc(ux->conn->msg, data, dlen, ux->mcrc, &crc)) {
		if (dlen)
			memcpy(ux->buf + off, data, dlen);
	} else if (dlen) {
		crc = gm_crc32c_copy(ux->mcrc, ux->buf + off, data, dlen);
	}

	if (crc != want) {
		ux->err = FI_EIO;
		ux->corrupt = true;
		gm_msg_corrupt(ux->conn->msg, ux->conn, off);
		return false;
	}
	ux->mcrc = crc;
	return true;
}

/* Give a complete unexpected message (or an RTS) to a receive. */
void gm_ux_deliver(struct gm_ux *ux, struct gm_rx *rx)
{
	struct gm_msg_hdr h = {.msg_id = ux->msg_id,
	                       .mflags = ux->mflags,
	                       .tag = ux->tag,
	                       .data = ux->data,
	                       .msg_len = ux->msg_len};

	gm_rx_bind_msg(rx, ux->conn, &h);
	rx->rsrc = ux->src != FI_ADDR_NOTAVAIL ? ux->src : gm_conn_src(ux->conn);
	gm_list_del(&ux->entry);
	if (ux->rts && !ux->err) {
		gm_rx_pull(rx, ux->msg_id);
	} else if (ux->rts) {
		gm_rx_complete(rx, ux->err); /* its sender closed before the pull (NACK) */
	} else if (ux->have == ux->msg_len) {
		if (!ux->err)
			gm_iov_copy_to(rx->iov, rx->iov_count, 0, ux->buf, rx->recv_len);
		rx->got = rx->recv_len;
		rx->corrupt = ux->corrupt;
		gm_rx_complete(rx, ux->err);
	} else {
		/* Still arriving: the FRAG handler finishes it. */
		ux->bound = rx;
		gm_peer_await(ux->conn->peer);
		gm_list_add_tail(&rx->msg->unexpected[(ux->mflags & GM_M_TAGGED) ? 1 : 0],
		                 &ux->entry);
		return;
	}
	if (ux->conn->rx_cur == ux)
		ux->conn->rx_cur = NULL;
	gm_ux_free(ux);
}

/* Drop an unexpected message unread; a pending sender is released with an empty pull. */
void gm_ux_discard(struct gm_ux *ux)
{
	gm_list_del(&ux->entry);
	if (ux->rts && !ux->err) {
		struct gm_cts_hdr c = {.msg_id = ux->msg_id, .recv_id = 0, .len = 0};
		gm_send_cts(ux->conn, &c);
	}
	if (ux->conn->rx_cur == ux)
		ux->conn->rx_cur = NULL;
	gm_ux_free(ux);
}

/* A held message's sender is now in the AV: it meets the receives posted meanwhile. */
static void ux_release(struct gm_msg *m, struct gm_ux *ux, fi_addr_t src)
{
	int q = (ux->mflags & GM_M_TAGGED) ? 1 : 0;
	size_t n = ux->charged;
	struct gm_rx *rx;

	ux_uncharge(ux, n);
	m->ux_unresolved--;
	ux->src = src;
	ux->conn->ux_bytes += n; /* already held: moved over, even past the caps */
	m->ux_bytes += n;
	ux->charged = n;
	if (m->ux_bytes > m->st.ux_peak)
		m->st.ux_peak = m->ux_bytes;
	m->st.unknown_released++;
	if (ux->bound || ux->claimed)
		return; /* not held: a receive has it already */
	if (!q && m->multi_starved)
		return; /* gm_rx_unstarve finds it a receive, in order */
	rx = gm_match_posted(&m->posted[q], src, q ? ux->tag : 0);
	if (rx && (rx = gm_rx_take(rx, ux->msg_len)))
		gm_ux_deliver(ux, rx);
}

/*
 * A held message from a source not in the AV is delivered to nobody (any
 * station on the segment can send one).  But a peer may start sending
 * before we insert it (peers start at different speeds), so such messages
 * wait, unmatchable, in arrival order: released once the AV has their
 * source, dropped after FI_GAMMA_UX_UNKNOWN_HOLD ms.  Unheld ones (policy
 * deliver) only learn their source, so that directed receives match them.
 */
void gm_ux_resolve_sources(struct gm_msg *m)
{
	uint64_t now = now_ms(m), hold = (uint64_t)m->cfg.ux_unknown_hold_ms, next = UINT64_MAX;
	struct gm_list *pos, *tmp;

	m->av_seen = m->up->av_gen(m->up_ctx);
	for (int q = 0; q < 2 && m->ux_unresolved; q++) {
		gm_list_for_each_safe(&m->unexpected[q], pos, tmp)
		{
			struct gm_ux *ux = gm_list_entry(pos, struct gm_ux, entry);
			fi_addr_t src;

			if (!ux_unknown(ux))
				continue;
			if ((src = gm_conn_src(ux->conn)) != FI_ADDR_NOTAVAIL) {
				ux_release(m, ux, src);
			} else if (ux->src != GM_ADDR_HELD) {
				continue;
			} else if (now - ux->held_ms >= hold) {
				gm_list_del(&ux->entry);
				gm_ux_drop(ux);
			} else if (ux->held_ms + hold < next) {
				next = ux->held_ms + hold;
			}
		}
	}
	m->held_expiry_ms = next;
}

/* Held messages wait for the AV to change, or for their time to run out. */
bool gm_ux_resolve_due(const struct gm_msg *m)
{
	return m->ux_unresolved &&
	       (m->up->av_gen(m->up_ctx) != m->av_seen || now_ms(m) >= m->held_expiry_ms);
}

/* Whether a posted receive takes the message whose header is at p. */
static bool ux_posted_for(struct gm_msg *m, struct gm_conn *conn, const void *p)
{
	struct gm_msg_hdr h;
	int q;

	gm_msg_hdr_decode(p, &h);
	q = (h.mflags & GM_M_TAGGED) ? 1 : 0;
	if (!q && m->multi_starved)
		return false;
	return gm_match_posted(&m->posted[q], gm_conn_msg_src(conn), q ? h.tag : 0) != NULL;
}

/* Whether every message of a bundle (well formed or not) has a posted receive. */
static bool ux_bundle_posted_for(struct gm_msg *m, struct gm_conn *conn, const uint8_t *p,
                                 size_t len)
{
	while (len >= sizeof(struct gm_msg_hdr)) {
		struct gm_msg_hdr h;

		gm_msg_hdr_decode(p, &h);
		if (h.msg_len > len - sizeof(h))
			return true; /* malformed: its handler drops it */
		if (!ux_posted_for(m, conn, p))
			return false;
		p += sizeof(h) + h.msg_len;
		len -= sizeof(h) + h.msg_len;
	}
	return true;
}

/* Whether conn is over its caps: a known peer's, or the budget of sources not in the AV. */
static bool ux_over(const struct gm_msg *m, const struct gm_conn *conn, fi_addr_t src)
{
	if (src == FI_ADDR_NOTAVAIL || src == GM_ADDR_HELD)
		return m->unknown_bytes >= m->cfg.ux_unknown_max;
	return conn->ux_bytes >= m->cfg.ux_peer_max || m->ux_bytes >= m->cfg.ux_max;
}

/*
 * A frame while some cap is reached (gm_ux_full), before its handler:
 * false refuses it for now (gm_port_ops.recv) if its source is over its
 * cap and the frame would make us hold more.  Frames a posted receive
 * takes always pass, so the receive an application waits on is not held
 * back.
 */
bool gm_ux_admit(struct gm_msg *m, struct gm_conn *conn, uint8_t type, const void *body, size_t len)
{
	fi_addr_t src = gm_conn_msg_src(conn);
	bool need;

	if (!ux_over(m, conn, src))
		return true;
	switch (type) {
	case GM_FT_EAGER:
	case GM_FT_START:
	case GM_FT_RTS:
		need = !ux_posted_for(m, conn, body);
		break;
	case GM_FT_BUNDLE:
		need = !ux_bundle_posted_for(m, conn, body, len);
		break;
	case GM_FT_FRAG:
		need = conn->rx_cur && !conn->rx_cur->bound;
		break;
	default:
		need = false;
	}
	if (!need)
		return true;
	m->st.ux_refused++;
	if (gm_list_empty(&conn->refuse_entry))
		gm_list_add_tail(&m->ux_refusing, &conn->refuse_entry);
	if (!conn->ux_warned) {
		conn->ux_warned = true;
		if (src == FI_ADDR_NOTAVAIL || src == GM_ADDR_HELD)
			MSG_WARN(m,
			         "unexpected messages from sources not in the AV hold %zu bytes "
			         "(FI_GAMMA_UX_UNKNOWN_MAX %zu): the next frames of one wait until "
			         "receives take some or it is inserted\n",
			         m->unknown_bytes, m->cfg.ux_unknown_max);
		else
			MSG_WARN(m,
			         "unexpected messages hold %zu bytes from fi_addr %lu, %zu in all "
			         "(FI_GAMMA_UX_PEER_MAX %zu, FI_GAMMA_UX_MAX %zu): its next frames "
			         "wait until receives take some\n",
			         conn->ux_bytes, (unsigned long)src, m->ux_bytes,
			         m->cfg.ux_peer_max, m->cfg.ux_max);
	}
	return false;
}

/* From progress: peers refused at the caps send again once under them. */
void gm_ux_resume(struct gm_msg *m)
{
	struct gm_list *pos, *tmp;

	gm_list_for_each_safe(&m->ux_refusing, pos, tmp)
	{
		struct gm_conn *conn = gm_list_entry(pos, struct gm_conn, refuse_entry);

		if (ux_over(m, conn, gm_conn_msg_src(conn)))
			continue;
		gm_list_del(&conn->refuse_entry);
		for (unsigned i = 0; i < GM_RAILS_MAX; i++)
			if (conn->rails[i])
				gm_peer_rx_resume(conn->rails[i]);
	}
}
