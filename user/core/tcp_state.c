// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The connection's TCP life: who closed first (an abort is the client's or the server's),
 * the close that ends a close-delimited body and whatever else was in flight, and the
 * trouble a stall may owe to the network (retransmits, a zero window). See conn.h.
 */
#include "conn.h"
#include "util.h"

#define TCP_FIN_WAIT1	4
#define TCP_CLOSE	7
#define TCP_CLOSE_WAIT	8

/* An abort at a close: the client's when the peer closed, on a client's connection the other way. */
static enum abort_reason close_abort(const struct conn *k)
{
	return (k->tcp.peer_closed ^ (k->role == ROLE_CLIENT)) ? ABORT_CLIENT : ABORT_SERVER;
}

/* Closed: read but never answered, the client gave up waiting or the server dropped them. */
static void conn_closed(struct correlator *c, struct conn *k)
{
	struct tt_request *r;

	while ((r = exchange_pop(k))) {
		r->abort = close_abort(k);
		/* its response may have gone to another request, after a loss */
		if (k->loss.pairing_suspect)
			r->lost = true;
		c->st.unanswered++;
		exchange_finish(k, r);
	}
	/* closed before its bytes said what it was (garbage, a scan): left unparsed too */
	if (k->role == ROLE_UNKNOWN && k->sniff.unknown_feeds)
		c->st.conns_ignored++;
	conn_close(c, k);
}

void tcp_on_state(struct correlator *c, const struct tt_state_ev *e)
{
	struct conn *k = conn_find(c, e->conn_id);

	if (!k)
		return;
	conn_touch(c, k, e->h.ts);
	k->ts = e->h.ts;
	/* records dropped just before the close: what was in flight is not an abort to trust */
	if (e->lost)
		loss_conn(k, e->lost, true);
	switch (e->newstate) {
	case TCP_CLOSE_WAIT:
		k->tcp.peer_closed = true;
		return;
	case TCP_FIN_WAIT1:
		k->tcp.we_closed = true;
		break;
	case TCP_CLOSE:
		/*
		 * Straight from established to closed, neither side having sent a FIN: a
		 * reset, and resets come from clients going away far more than from servers
		 */
		if (!k->tcp.we_closed)
			k->tcp.peer_closed = true;
		break;
	default:
		return;
	}
	/* Ends a close-delimited body; anything else in flight is cut short. */
	k->tcp.closing = close_abort(k);
	h2x_eof(k);
	if (role_known(k) && k->rs.p && !k->h2)
		http_parser__eof(k->rs.p);
	if (k->rs.r || k->rs.active)
		response_abort(k, k->tcp.closing);
	k->tcp.closing = ABORT_NONE;
	if (e->newstate == TCP_CLOSE)
		conn_closed(c, k);
}

void tcp_on_event(struct correlator *c, const struct tt_tcp_ev *e)
{
	struct conn *k = conn_find(c, e->conn_id);

	if (!k)
		return;
	switch (e->kind) {
	case TT_TCP_RETRANSMIT:
		k->tcp.retrans[k->tcp.nretrans++ % ARRAY_SIZE(k->tcp.retrans)] = e->h.ts;
		break;
	case TT_TCP_ZERO_WINDOW:
		k->tcp.zw_from = e->h.ts;
		k->tcp.zw_to = 0;
		break;
	case TT_TCP_WINDOW_OPEN:
		k->tcp.zw_to = e->h.ts;
		break;
	}
}
