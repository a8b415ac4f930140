/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Rendezvous, for large messages: the sender's RTS carries no data; once
 * a receive matched it, the receiver pulls with a CTS naming how much it
 * takes, and the sender answers with RDATA frames.  Over several rails a
 * large pull goes in chunks instead (gm_msg_stripe.c).  A sender that
 * cannot serve a pull it was asked for says so (NACK), and the receive
 * fails with FI_EREMOTEIO instead of waiting for data that never comes.
 */
#include "gm_msg_int.h"

#include <stdlib.h>

/*
 * The one CTS of a pull in one piece (rx on rndv_rx).  With the pool full
 * of frames in flight it is sent by a later progress pass instead
 * (gm_rndv_retry), once acks freed an entry: failing the receive would
 * leave its sender waiting to be pulled for as long as it answers.
 */
static void rx_send_cts(struct gm_rx *rx)
{
	struct gm_cts_hdr c = {.msg_id = rx->send_id, .recv_id = rx->id, .len = rx->recv_len};

	rx->cts_due = gm_send_cts(rx->conn, &c) != 0;
	if (rx->cts_due) {
		rx->msg->cts_starved = true;
		return;
	}
	if (!rx->recv_len) {
		/* Nothing to pull: the CTS only releases the sender. */
		gm_list_del(&rx->rndv_entry);
		gm_rx_complete(rx, 0);
	}
}

/* The receiver side of rendezvous: pull the message into rx. */
void gm_rx_pull(struct gm_rx *rx, uint32_t msg_id)
{
	rx->id = rx->msg->next_recv_id++;
	rx->send_id = msg_id;
	if (rx->recv_len && rx->msg->nrails > 1 && gm_pull_start(rx, msg_id))
		return;
	gm_list_add_tail(&rx->msg->rndv_rx, &rx->rndv_entry);
	gm_peer_await(rx->conn->peer);
	rx_send_cts(rx);
}

void gm_rndv_retry(struct gm_msg *m)
{
	struct gm_list *pos, *tmp;

	m->cts_starved = false;
	gm_list_for_each_safe(&m->rndv_rx, pos, tmp)
	{
		struct gm_rx *rx = gm_list_entry(pos, struct gm_rx, rndv_entry);

		if (rx->pull)
			gm_pull_issue(rx);
		else if (rx->cts_due)
			rx_send_cts(rx);
	}
}

void gm_rndv_on_cts(struct gm_msg *m, struct gm_conn *conn, const void *body, size_t len)
{
	struct gm_cts_hdr c;
	struct gm_list *pos, *tmp;

	gm_cts_hdr_decode(body, &c);
	if (m->nrails > 1 && gm_rails_dup_cts(conn, c.cts_id))
		return;
	gm_list_for_each_safe(&conn->cts_wait, pos, tmp)
	{
		struct gm_tx *tx = gm_list_entry(pos, struct gm_tx, entry);
		if (tx->msg_id != c.msg_id)
			continue;
		if (c.chunk || tx->striped) {
			if (gm_stripe_on_cts(m, conn, tx, &c) && m->nrails > 1)
				gm_rails_cts_taken(conn, c.cts_id);
			return;
		}
		if (m->nrails > 1)
			gm_rails_cts_taken(conn, c.cts_id);
		gm_list_del(&tx->entry);
		tx->recv_id = c.recv_id;
		tx->limit = c.len < tx->len ? c.len : tx->len;
		tx->off = 0;
		tx->mcrc = 0;
		if (!tx->limit) {
			tx->state = GM_TX_SENT;
			gm_tx_maybe_complete(tx);
			return;
		}
		tx->state = GM_TX_PULLED;
		gm_conn_queue(conn, tx);
		return;
	}
	if (gm_rails_dup(m))
		return;
	m->st.drop_cts_unknown++;
	MSG_WARN(m, "dropping CTS for unknown message %u\n", c.msg_id);
}

void gm_rndv_on_rdata(struct gm_msg *m, struct gm_conn *conn, const void *body, size_t len)
{
	struct gm_frag_hdr f;
	const uint8_t *data = (const uint8_t *)body + sizeof(f);
	size_t dlen = len - sizeof(f);
	struct gm_list *pos, *tmp;

	gm_frag_hdr_decode(body, &f);
	gm_list_for_each_safe(&m->rndv_rx, pos, tmp)
	{
		struct gm_rx *rx = gm_list_entry(pos, struct gm_rx, rndv_entry);
		if (rx->id != f.msg_id || rx->conn != conn)
			continue;
		if (rx->pull) {
			gm_pull_on_rdata(rx, &f, data, dlen);
			return;
		}
		if (f.offset < rx->got && gm_rails_dup(m))
			return;
		if (f.offset != rx->got || f.offset + dlen > rx->recv_len) {
			m->st.drop_rdata_misplaced++;
			MSG_WARN(m, "dropping out-of-place rendezvous data\n");
			return;
		}
		if (!rx->corrupt)
			gm_rx_place(rx, f.offset, data, dlen, f.mcrc);
		rx->got += dlen;
		if (rx->got == rx->recv_len) {
			gm_list_del(&rx->rndv_entry);
			gm_rx_complete(rx, rx->corrupt ? FI_EIO : 0);
		}
		return;
	}
	if (gm_rails_dup(m))
		return;
	m->st.drop_rdata_unknown++;
	MSG_WARN(m, "dropping rendezvous data for unknown receive %u\n", f.msg_id);
}

/*
 * A NACK naming no receive: its sender closed before a CTS reached it.
 * An RTS of it still unexpected here stays, marked, so that the receive
 * it matches fails at once (gm_ux_deliver) instead of pulling from a port
 * that is gone, and no later message takes that receive's place.
 */
static bool nack_unexpected(struct gm_msg *m, struct gm_conn *conn, const struct gm_nack_hdr *n)
{
	struct gm_list *pos, *tmp;

	for (int q = 0; q < 2; q++)
		gm_list_for_each_safe(&m->unexpected[q], pos, tmp)
		{
			struct gm_ux *ux = gm_list_entry(pos, struct gm_ux, entry);

			if (ux->conn != conn || !ux->rts || ux->msg_id != n->msg_id || ux->err)
				continue;
			ux->err = FI_EREMOTEIO;
			m->st.pulls_nacked++;
			return true;
		}
	return false;
}

/*
 * The sender will not serve our pull.  Only a pull of this peer naming
 * its message and receive (or no receive: the sender closed before our CTS
 * came) is failed; anything else (a NACK of a receive that completed, one
 * that came twice over two rails, a forged one) is dropped and touches
 * nothing.
 */
void gm_rndv_on_nack(struct gm_msg *m, struct gm_conn *conn, const void *body, size_t len)
{
	struct gm_nack_hdr n;
	struct gm_list *pos, *tmp;

	gm_nack_hdr_decode(body, &n);
	gm_list_for_each_safe(&m->rndv_rx, pos, tmp)
	{
		struct gm_rx *rx = gm_list_entry(pos, struct gm_rx, rndv_entry);

		if ((n.recv_id && rx->id != n.recv_id) || rx->conn != conn ||
		    rx->send_id != n.msg_id)
			continue;
		MSG_WARN(m, "fi_addr %ld will not send message %u (%s): receive failed\n",
		         (long)conn->fi_addr, n.msg_id, fi_strerror((int)n.reason));
		m->st.pulls_nacked++;
		gm_list_del(&rx->rndv_entry);
		free(rx->pull);
		rx->pull = NULL;
		gm_rx_complete(rx, FI_EREMOTEIO);
		return;
	}
	if (!n.recv_id && nack_unexpected(m, conn, &n))
		return;
	m->st.drop_nack_unknown++;
	MSG_WARN(m, "dropping NACK of message %u for unknown receive %u\n", n.msg_id, n.recv_id);
}
