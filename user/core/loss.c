// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Loss: records the kernel dropped (the headers' running count, and per connection the
 * count its next record tells), exchanges it left out under --budget, and what each costs
 * the requests in flight: flagged lost, never reported as something they were not. See
 * conn.h.
 */
#include "conn.h"
#include "util.h"

/*
 * The kernel's running count of dropped records moved since the last record: something
 * (a connection's close, a thread's switch) is missing between the two.
 */
void loss_note_drops(struct correlator *c, const struct tt_hdr *h)
{
	struct drop_book *b = &c->drops;
	uint32_t d;

	if (h->type == TT_EV_STACK || h->type == TT_EV_PYNAME)	/* made by userspace */
		return;
	if (!b->init) {
		b->init = true;
		b->seen = h->drops;
	}
	d = h->drops - b->seen;
	if (d && d < UINT32_MAX / 2) {
		b->seen = h->drops;
		c->st.drops_seen += d;
		b->win[b->nwin++ % DROP_WINDOWS].from = b->last_rec_ts;
		b->win[(b->nwin - 1) % DROP_WINDOWS].to = h->ts;
		b->last_drop_ts = h->ts;
	}
	if (h->ts > b->last_rec_ts)
		b->last_rec_ts = h->ts;
}

bool correlator__dropped_within(const struct correlator *c, uint64_t t0, uint64_t t1)
{
	const struct drop_book *b = &c->drops;

	for (uint32_t i = 0; i < MIN(b->nwin, DROP_WINDOWS); i++)
		if (b->win[i].from <= t1 && b->win[i].to >= t0)
			return true;
	return false;
}

/*
 * Records of this connection were dropped: whatever was in flight can no longer be trusted.
 * may_hide: the kernel says the lost records went both ways or held a state change
 * (TT_DF_LOST_XDIR, a state record's count), so they crossed between a request and its
 * answer.
 */
void loss_conn(struct conn *k, uint32_t n, bool may_hide)
{
	struct tt_request *r;

	k->c->st.lost_records += n;
	/*
	 * Whole requests may be among the lost records when they crossed between a request
	 * and its answer, or when nothing was in flight here (a request whose first record was
	 * dropped is never seen: the kernel sends nothing more of a run that lost one). Such
	 * requests have nothing to flag; the loss is counted instead.
	 */
	if (may_hide || (!k->rq.pend_head && !k->rq.reading && !k->rs.r && !h2x_busy(k)))
		k->c->st.lost_between++;
	if (k->h2) {
		/* HTTP/2's streams and header tables go with the records lost */
		h2x_lost(k);
		return;
	}
	for (r = k->rq.pend_head; r; r = r->next)
		r->lost = true;
	if (k->rq.pend_head)
		k->loss.pairing_suspect = true;
	if (k->rq.reading)
		k->rq.reading->lost = true;
	if (k->rs.r) {
		k->rs.r->lost = true;
		k->rs.r->lost_records += n;
		response_abort(k, ABORT_LOST);
	}
	exchange_parsers_restart(k);
}

/* What k has in flight ends now, reported as lost (never as a client's abort). */
void loss_inflight(struct conn *k)
{
	struct tt_request *r;

	h2x_lost(k);
	if (k->rs.r) {
		k->rs.r->lost = true;
		response_abort(k, ABORT_LOST);
	}
	while ((r = exchange_pop(k))) {
		r->lost = true;
		r->abort = ABORT_LOST;
		exchange_finish(k, r);
	}
}

/*
 * The kernel left whole exchanges of k out under --budget, and this record starts the next
 * one; both parsers start over here. Nothing should be in flight: the kernel decides at a
 * request's first bytes, after the last answer. A pipelined request (read before the last
 * answer ended) can still leave one, and so can a request whose body came after the server's
 * "100 Continue" (a new run the way requests go): the rest went with the exchange left out,
 * and every request read before this one has had its answer, or lost it, by now. They go as
 * lost, never paired with a later answer.
 */
void loss_skipped(struct conn *k)
{
	if (k->h2) {
		h2x_lost(k);	/* whole runs of frames were left out: the streams with them */
		return;
	}
	if (k->rq.reading) {
		exchange_push(k, k->rq.reading);
		k->rq.reading = NULL;
	}
	loss_inflight(k);
	k->loss.pairing_suspect = false;
	exchange_parsers_restart(k);
}
