// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Correlation of socket records into requests: where a record enters. See correlate.h for
 * the API and conn.h for the files each kind of record goes on to.
 */
#include <errno.h>
#include <stdlib.h>
#include "attribute.h"
#include "conn.h"
#include "proxy.h"
#include "pysamples.h"
#include "sched_book.h"
#include "util.h"

/*
 * When a token's bytes could first be read: the moment the send handed them to a reader on
 * this machine (t_ready) when the kernel saw that, else when the socket layer was done.
 */
static uint64_t data_time(const struct tt_data_ev *e)
{
	return e->t_ready && e->t_ready <= e->h.ts ? e->t_ready : e->h.ts;
}

/* The first record of a send or receive: what it says about the connection. */
static bool on_data_first(struct correlator *c, struct conn *k, const struct tt_data_ev *e)
{
	bool held;

	/* the thread's counters and last wake, at a send or a receive of it */
	if (c->sched && (e->flags & TT_DF_CUM)) {
		sched_book__counters(c->sched, e->h.tid, e->h.tgid, e->h.ts, e->cum);
		sched_book__woken(c->sched, e->h.tid, e->h.tgid, e->t_woken, e->waker_tid,
				  e->waker_tgid);
	}
	/* the kernel's own counters, hooks or not, at the moment the gaps are measured from */
	if (c->sched)
		sched_book__kcounters(c->sched, e->h.tid, e->h.tgid, data_time(e), &e->k);
	if (e->flags & TT_DF_LOST)
		loss_conn(k, e->lost, e->flags & TT_DF_LOST_XDIR);
	if (e->skipped)
		loss_skipped(k);
	if (e->ret < 0) {
		/* the client is gone: a reset or a write to a closed peer */
		if (e->dir == TT_DIR_SEND && (e->ret == -EPIPE || e->ret == -ECONNRESET))
			response_abort(k, k->role == ROLE_CLIENT ? ABORT_SERVER : ABORT_CLIENT);
		return false;
	}
	if (k->role == ROLE_UNKNOWN && !role_classify(k, e))
		return false;
	/* a start line's first bytes held from earlier records: the message began there */
	held = k->sniff.npre;
	/* a send went through: the peer's window, zero when the sender blocked, opened again */
	if (e->dir == TT_DIR_SEND && e->ret > 0 && k->tcp.zw_from && !k->tcp.zw_to)
		k->tcp.zw_to = k->ts;
	if (e->dir == TT_DIR_SEND)
		response_sent(c, k, e);
	if (e->dir == req_dir(k) && k->rq.p && !http_parser__in_message(k->rq.p)) {
		k->rq.first_ts = held ? k->sniff.pre_ts : k->ts;
		/* how long a request waited in the socket: the server's side only */
		k->rq.arrival = k->role != ROLE_SERVER ? 0 : held ? k->sniff.pre_arrival : e->arrival;
	}
	return true;
}

/* A record of an HTTP/2 connection: its bytes (and those held before it) to the streams. */
static void h2_data(struct correlator *c, struct conn *k, const struct tt_data_ev *e, bool last,
		    uint64_t end)
{
	if (k->sniff.npre) {
		h2x_feed(k, k->sniff.pre_dir, k->sniff.pre, k->sniff.npre);
		k->sniff.npre = 0;
	}
	h2x_feed(k, e->dir, e->data, e->cap);
	if (last && (uint64_t)e->ret > end) {
		c->st.truncated_sends++;
		h2x_gap(k, e->dir, (uint64_t)e->ret - end);
	}
}

static void on_data(struct correlator *c, const struct tt_data_ev *e)
{
	struct conn *k = conn_find(c, e->conn_id);
	uint64_t moved, end = (uint64_t)e->off + e->cap;
	bool last = !(e->flags & TT_DF_MORE);
	struct http_parser *p;

	if (!e->off)
		c->st.data_records++;	/* what --budget paid for, whatever comes of it */
	/* a failing read or write on a connection already gone starts nothing */
	if (!k && (e->ret <= 0 || e->off || !(k = conn_new(c, e->conn_id, e->h.tgid))))
		return;
	conn_touch(c, k, e->h.ts);
	if (e->flags & TT_DF_TLS) {
		if (!k->tls)
			tls_begins(c, k, e);
	} else if (k->tls) {
		return;	/* ciphertext of a connection whose plaintext is known */
	}
	if (k->role == ROLE_IGNORED)
		return;
	k->ts = data_time(e);
	k->tid = e->h.tid;
	if (e->off != k->loss.seg_next[e->dir & 1] && !(e->flags & TT_DF_LOST)) {
		/* a segment of a send is missing: what follows cannot be parsed in sync */
		loss_conn(k, 1, false);
		k->loss.seg_next[e->dir & 1] = 0;
		if (e->off)
			return;
	}
	if (!e->off && !on_data_first(c, k, e))
		return;
	k->loss.seg_next[e->dir & 1] = last ? 0 : end;
	if (!role_known(k)) {
		role_restart(k);	/* a later segment: what was held is not followed by it */
		return;
	}
	if (k->sniff.h2 && !k->h2 && h2x_start(k, k->sniff.h2_start)) {
		role_ignore(k);
		return;
	}
	if (k->h2) {
		h2_data(c, k, e, last, end);
		return;
	}
	p = e->dir == req_dir(k) ? k->rq.p : k->rs.p;
	if (k->sniff.npre) {
		http_parser__feed(p, k->sniff.pre, k->sniff.npre);
		k->sniff.npre = 0;
	}
	if (!p)
		return;
	http_parser__feed(p, e->data, e->cap);
	moved = (uint64_t)e->ret;
	if (last && moved > end) {
		c->st.truncated_sends++;
		/* an h2c upgrade in this record: the rest is HTTP/2's */
		if (k->h2 && e->dir != req_dir(k))
			h2x_gap(k, e->dir, moved - end);
		else
			http_parser__gap(p, moved - end);
	}
}

int correlator__record(struct correlator *c, const void *data, size_t size)
{
	const struct tt_hdr *h = data;

	c->st.records++;
	if (size < sizeof(*h) || h->size > size || h->size < sizeof(*h))
		goto bad;
	loss_note_drops(c, h);
	switch (h->type) {
	case TT_EV_DATA: {
		const struct tt_data_ev *e = data;

		if (size < sizeof(*e) || sizeof(*e) + e->cap > size)
			goto bad;
		on_data(c, e);
		return 0;
	}
	case TT_EV_CONN:
		if (size < sizeof(struct tt_conn_ev))
			goto bad;
		conn_opened(c, data);
		return 0;
	case TT_EV_STATE:
		if (size < sizeof(struct tt_state_ev))
			goto bad;
		tcp_on_state(c, data);
		return 0;
	case TT_EV_MARKER:
		if (size < sizeof(struct tt_marker_ev))
			goto bad;
		attributor__hit(c->attr, data);
		return 0;
	case TT_EV_SCHED:
		if (size < sizeof(struct tt_sched_ev))
			goto bad;
		c->st.sched_records++;
		if (c->sched)
			sched_book__record(c->sched, data);
		return 0;
	case TT_EV_TCP:
		if (size < sizeof(struct tt_tcp_ev))
			goto bad;
		tcp_on_event(c, data);
		return 0;
	case TT_EV_PYSTACK:
		if (size < TT_PYSTACK_HDR_SIZE)
			goto bad;
		c->st.py_records++;
		if (c->py)
			pysamples__record(c->py, data, size);
		return 0;
	case TT_EV_PROC:
		if (size >= sizeof(struct tt_proc_ev) && c->sched &&
		    ((const struct tt_proc_ev *)data)->kind == TT_PROC_THREAD_EXIT)
			sched_book__exited(c->sched, h->tid, h->ts);
		return 0;	/* else for the session: the traced set */
	case TT_EV_STACK:
	case TT_EV_PYNAME:
		return 0;	/* for the session: a recording's texts */
	default:
		goto bad;
	}
bad:
	c->st.bad_records++;
	return -EINVAL;
}

/* ------------------------------------------------------------------ what is in flight */

struct each {
	attrib_each_fn fn;
	void *ud;
};

static void each_h2(void *ud, struct tt_request *r, bool streaming)
{
	struct each *e = ud;

	e->fn(e->ud, r);
}

/* every request in flight, for unkeyed markers */
static void foreach_request(void *src, attrib_each_fn fn, void *ud)
{
	struct correlator *c = src;
	struct each e = { fn, ud };
	struct conn *k;
	size_t it = 0;

	while ((k = conn_next(c, &it))) {
		if (k->rs.r)
			fn(ud, k->rs.r);
		for (struct tt_request *r = k->rq.pend_head; r; r = r->next)
			fn(ud, r);
		h2x_foreach(k, each_h2, &e);
	}
}

static void count_h2(void *ud, struct tt_request *r, bool streaming)
{
	(*(uint64_t *)ud)++;
}

uint64_t correlator__in_flight(const struct correlator *c)
{
	struct conn *k;
	uint64_t n = 0;
	size_t it = 0;

	while ((k = conn_next(c, &it))) {
		for (struct tt_request *r = k->rq.pend_head; r; r = r->next)
			n++;
		if (k->rs.r)
			n++;
		h2x_foreach(k, count_h2, &n);
	}
	return n;
}

struct each_inflight {
	void (*fn)(void *ud, const struct tt_request *r, bool streaming);
	void *ud;
};

static void inflight_h2(void *ud, struct tt_request *r, bool streaming)
{
	struct each_inflight *e = ud;

	e->fn(e->ud, r, streaming);
}

void correlator__foreach_inflight(const struct correlator *c,
				  void (*fn)(void *ud, const struct tt_request *r, bool streaming),
				  void *ud)
{
	struct each_inflight e = { fn, ud };
	struct conn *k;
	size_t it = 0;

	while ((k = conn_next(c, &it))) {
		if (k->rs.r)
			fn(ud, k->rs.r, true);
		for (struct tt_request *r = k->rq.pend_head; r; r = r->next)
			fn(ud, r, false);
		h2x_foreach(k, inflight_h2, &e);
	}
}

void correlator__set_markers(struct correlator *c, const uint8_t *kinds, int n)
{
	attributor__set_markers(c->attr, kinds, n);
}

const struct pysamples *correlator__pysamples(const struct correlator *c)
{
	return c->py;
}

const struct corr_stats *correlator__stats(struct correlator *c)
{
	c->st.markers = *attributor__stats(c->attr);
	return &c->st;
}

/* ------------------------------------------------------------------ lifetime */

struct correlator *correlator__new(const struct corr_opts *opts)
{
	struct correlator *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->o = *opts;
	if (!c->o.req_body_max)
		c->o.req_body_max = 64 * 1024;
	if (!c->o.max_conns)
		c->o.max_conns = CORR_MAX_CONNS;
	if (!c->o.idle_ns)
		c->o.idle_ns = CORR_IDLE_NS;
	c->attr = attributor__new(foreach_request, c);
	c->proxy = proxy__new(256);
	/* a minute of scheduler history: the longest stall it can fully explain */
	if (c->o.stalls)
		c->sched = sched_book__new(60000000000ull);
	if (c->o.stalls && c->o.py_name)
		c->py = pysamples__new(0, 0, 0);
	if (conn_table__init(&c->tab) || !c->attr || !c->proxy || (c->o.stalls && !c->sched) ||
	    (c->o.stalls && c->o.py_name && !c->py)) {
		correlator__free(c);
		return NULL;
	}
	return c;
}

void correlator__free(struct correlator *c)
{
	if (!c)
		return;
	conn_table__fini(&c->tab);
	sched_book__free(c->sched);
	pysamples__free(c->py);
	attributor__free(c->attr);
	proxy__free(c->proxy);
	free(c);
}
