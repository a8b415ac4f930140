/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The frames that start and continue a message (EAGER, START, RTS, FRAG),
 * each checked against what the protocol expects, and the dispatch of
 * every frame type the net delivers to its handler.
 */
#include "gm_msg_int.h"

static void on_msg_first(struct gm_msg *m, struct gm_conn *conn, uint8_t type, const void *body,
                         size_t len)
{
	struct gm_msg_hdr h;
	const uint8_t *data = (const uint8_t *)body + sizeof(h);
	size_t dlen = len - sizeof(h);
	struct gm_rx *rx;

	gm_msg_hdr_decode(body, &h);
	if ((type == GM_FT_EAGER && dlen != h.msg_len) ||
	    (type == GM_FT_START && (dlen > h.msg_len || h.msg_len > GM_MAX_UNEXPECTED_MEDIUM)) ||
	    (type == GM_FT_RTS && dlen != 0)) {
		m->st.drop_malformed++;
		MSG_WARN(m, "dropping malformed frame type %u (len %zu, msg_len %lu)\n", type, dlen,
		         (unsigned long)h.msg_len);
		return;
	}
	if (m->nrails > 1 && gm_rails_dup_msg(conn, h.msg_id))
		return;
	if (m->ux_unresolved && conn->fi_addr == FI_ADDR_NOTAVAIL &&
	    gm_conn_src(conn) != FI_ADDR_NOTAVAIL)
		gm_ux_resolve_sources(m); /* its held messages come first */
	if (conn->rx_cur || conn->rx_cur_rx) {
		/*
		 * A sender never interleaves messages, so the one in progress
		 * is cut short: fail it rather than leave its receive hanging.
		 */
		m->st.msgs_cut++;
		MSG_WARN(m, "message %u started before message %u ended: dropped\n", h.msg_id,
		         conn->rx_cur_id);
		gm_conn_drop_partial(conn, FI_EIO);
	}
	rx = gm_rx_match_posted(m, conn, &h);
	if (rx) {
		gm_rx_bind_msg(rx, conn, &h);
		if (type == GM_FT_RTS) {
			gm_rx_pull(rx, h.msg_id);
			return;
		}
		gm_rx_place(rx, 0, data, dlen, h.mcrc);
		rx->got = dlen;
		if (type == GM_FT_EAGER || rx->got == rx->msg_len) {
			gm_rx_complete(rx, rx->corrupt ? FI_EIO : 0);
		} else {
			conn->rx_cur_rx = rx;
			conn->rx_cur = NULL;
			conn->rx_cur_id = h.msg_id;
			gm_peer_await(conn->peer);
		}
		return;
	}
	struct gm_ux *ux = gm_ux_new(conn, &h, type == GM_FT_RTS, dlen);
	if (!ux)
		return;
	gm_ux_place(ux, 0, data, dlen, h.mcrc);
	ux->have = dlen;
	if (type == GM_FT_START && ux->have < ux->msg_len) {
		conn->rx_cur = ux;
		conn->rx_cur_rx = NULL;
		conn->rx_cur_id = h.msg_id;
	}
	gm_list_add_tail(&m->unexpected[(h.mflags & GM_M_TAGGED) ? 1 : 0], &ux->entry);
}

static void on_eager(struct gm_msg *m, struct gm_conn *conn, const void *body, size_t len)
{
	on_msg_first(m, conn, GM_FT_EAGER, body, len);
}

/* Messages back to back, each as an EAGER frame's body (gm_wire.h). */
static void on_bundle(struct gm_msg *m, struct gm_conn *conn, const void *body, size_t len)
{
	const uint8_t *p = body;

	while (len) {
		struct gm_msg_hdr h;
		size_t n;

		if (len < sizeof(h)) {
			m->st.drop_malformed++;
			MSG_WARN(m, "dropping the %zu-byte tail of a bundle\n", len);
			return;
		}
		gm_msg_hdr_decode(p, &h);
		if (h.msg_len > len - sizeof(h)) {
			m->st.drop_malformed++;
			MSG_WARN(m, "dropping the rest of a bundle: message of %lu bytes in %zu\n",
			         (unsigned long)h.msg_len, len - sizeof(h));
			return;
		}
		n = sizeof(h) + (size_t)h.msg_len;
		on_msg_first(m, conn, GM_FT_EAGER, p, n);
		p += n;
		len -= n;
	}
}

static void on_start(struct gm_msg *m, struct gm_conn *conn, const void *body, size_t len)
{
	on_msg_first(m, conn, GM_FT_START, body, len);
}

static void on_rts(struct gm_msg *m, struct gm_conn *conn, const void *body, size_t len)
{
	on_msg_first(m, conn, GM_FT_RTS, body, len);
}

static void on_frag(struct gm_msg *m, struct gm_conn *conn, const void *body, size_t len)
{
	struct gm_frag_hdr f;
	const uint8_t *data = (const uint8_t *)body + sizeof(f);
	size_t dlen = len - sizeof(f);

	gm_frag_hdr_decode(body, &f);
	if (f.msg_id != conn->rx_cur_id || (!conn->rx_cur && !conn->rx_cur_rx)) {
		if (gm_rails_dup(m))
			return;
		m->st.drop_frag_unknown++;
		MSG_WARN(m, "dropping fragment of unknown message %u\n", f.msg_id);
		return;
	}
	if (conn->rx_cur_rx) {
		struct gm_rx *rx = conn->rx_cur_rx;
		if (f.offset < rx->got && gm_rails_dup(m))
			return;
		if (f.offset != rx->got || f.offset + dlen > rx->msg_len) {
			m->st.drop_frag_misplaced++;
			MSG_WARN(m, "dropping out-of-place fragment\n");
			return;
		}
		if (!rx->corrupt)
			gm_rx_place(rx, f.offset, data, dlen, f.mcrc);
		rx->got += dlen;
		if (rx->got == rx->msg_len) {
			conn->rx_cur_rx = NULL;
			gm_rx_complete(rx, rx->corrupt ? FI_EIO : 0);
		}
		return;
	}
	struct gm_ux *ux = conn->rx_cur;
	if (f.offset < ux->have && gm_rails_dup(m))
		return;
	if (f.offset != ux->have || f.offset + dlen > ux->msg_len) {
		m->st.drop_frag_misplaced++;
		MSG_WARN(m, "dropping out-of-place fragment\n");
		return;
	}
	if (!gm_ux_reserve(ux, f.offset + dlen)) {
		gm_list_del(&ux->entry);
		if (ux->bound)
			gm_rx_complete(ux->bound, FI_ENOMEM);
		gm_ux_drop(ux);
		return;
	}
	if (!ux->err)
		gm_ux_place(ux, f.offset, data, dlen, f.mcrc);
	ux->have += dlen;
	if (ux->have == ux->msg_len) {
		conn->rx_cur = NULL;
		if (ux->bound) {
			struct gm_rx *rx = ux->bound;
			int err = ux->err;
			gm_list_del(&ux->entry);
			if (!err)
				gm_iov_copy_to(rx->iov, rx->iov_count, 0, ux->buf, rx->recv_len);
			rx->got = rx->recv_len;
			rx->corrupt = ux->corrupt;
			gm_ux_free(ux);
			gm_rx_complete(rx, err);
		}
	}
}

typedef void (*gm_handler_fn)(struct gm_msg *m, struct gm_conn *conn, const void *body, size_t len);

static const gm_handler_fn gm_handlers[GM_FT_MAX] = {
    [GM_FT_EAGER] = on_eager,       [GM_FT_START] = on_start,     [GM_FT_FRAG] = on_frag,
    [GM_FT_RTS] = on_rts,           [GM_FT_CTS] = gm_rndv_on_cts, [GM_FT_RDATA] = gm_rndv_on_rdata,
    [GM_FT_NACK] = gm_rndv_on_nack, [GM_FT_BUNDLE] = on_bundle,
};

bool gm_msg_on_recv(void *ctx, struct gm_peer *peer, const struct gm_rx_frame *f)
{
	struct gm_msg *m = ctx;
	struct gm_conn *conn = gm_conn_of_peer(m, peer);
	uint8_t type = f->hdr->type;

	if (!conn) {
		m->st.drop_no_memory++;
		MSG_WARN(m, "out of memory for a new peer: frame dropped\n");
		return true;
	}
	if (type >= GM_FT_MAX || !gm_handlers[type] || f->body_len < gm_wire_type_hlen(type)) {
		m->st.drop_bad_type++;
		MSG_WARN(m, "dropping frame of unexpected type %u\n", type);
		return true;
	}
	if (gm_ux_full(m, conn) && !gm_ux_admit(m, conn, type, f->body, f->body_len))
		return false;
	m->rx_frame = f;
	gm_handlers[type](m, conn, f->body, f->body_len);
	m->rx_frame = NULL;
	return true;
}

/*
 * CRC-32C is linear in its seed: body = T | P, body_crc = crc(0, T | P) =
 * crc(crc(0, T), P), so crc(seed, P) = body_crc ^ shift(seed ^ crc(0, T))
 * (gm_crc32c_shift): the type header's bytes, not the payload's.
 */
bool gm_frame_payload_crc(const struct gm_msg *m, const uint8_t *data, size_t dlen, uint32_t seed,
                          uint32_t *crc)
{
	const struct gm_rx_frame *f = m->rx_frame;
	const uint8_t *body = f ? f->body : NULL;

	if (!f || !f->crc_known || data < body || data + dlen != body + f->body_len)
		return false;
	*crc =
	    f->body_crc ^ gm_crc32c_shift(seed ^ gm_crc32c(0, body, (size_t)(data - body)), dlen);
	return true;
}
