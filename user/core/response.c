// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The response stream: its body format (Content-Type, or sniffed), SSE events and NDJSON
 * lines as chunks, each content chunk timed by the send that completed it and its gap
 * explained when it is a stall, and the end: complete, or aborted. See conn.h.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "attribute.h"
#include "classify.h"
#include "conn.h"
#include "sched_book.h"
#include "stall.h"
#include "util.h"

/*
 * The response in flight ended before its HTTP framing did. If the stream's own end had
 * arrived ([DONE], "done":true, message_stop...), the client got everything: it is complete,
 * whatever came of the chunked terminator (clients stop reading at [DONE] and close, and
 * llama.cpp's server sends the terminator apart). Otherwise it was aborted.
 */
void response_abort(struct conn *k, enum abort_reason why)
{
	struct tt_request *r = k->rs.r;

	k->rs.r = NULL;
	k->rs.active = false;
	if (!r)
		return;
	if (r->saw_final && why != ABORT_LOST && why != ABORT_DESYNC)
		r->complete = true;
	else
		r->abort = why;
	exchange_finish(k, r);
}

void response_free(struct conn *k)
{
	/* the answered request was already taken off the pending queue */
	request__free(k->rs.r);
	k->rs.r = NULL;
	http_parser__free(k->rs.p);
	k->rs.p = NULL;
	sse_parser__free(k->rs.sse);
	ndjson_parser__free(k->rs.nd);
	k->rs.sse = NULL;
	k->rs.nd = NULL;
	buf__release(&k->rs.jbody);
}

void response_add_sender(struct tt_request *r, uint32_t tid)
{
	for (uint32_t i = 0; i < r->nsenders; i++)
		if (r->senders[i] == tid)
			return;
	if (r->nsenders < ARRAY_SIZE(r->senders))
		r->senders[r->nsenders++] = tid;
}

/* A send of k went through: its thread was on CPU then, and it serves this response. */
void response_sent(struct correlator *c, struct conn *k, const struct tt_data_ev *e)
{
	if (!c->sched)
		return;
	sched_book__oncpu(c->sched, e->h.tid, e->h.ts);
	if (k->rs.r)
		response_add_sender(k->rs.r, e->h.tid);
}

/* ------------------------------------------------------------------ chunks */

static const char *comm_of_cb(void *ud, uint32_t pid)
{
	return comm_of(ud, pid);
}

/* The gap [t0, t1] before the chunk being added is a stall: say where the time went. */
static void explain_stall(struct conn *k, struct tt_request *r, uint64_t t0, uint64_t t1,
			  const struct stall_flow *const *flow)
{
	struct correlator *c = k->c;
	struct stall_net net = {
		.retrans = k->tcp.retrans,
		.nretrans = MIN(k->tcp.nretrans, ARRAY_SIZE(k->tcp.retrans)),
		.zw_from = k->tcp.zw_from,
		.zw_to = k->tcp.zw_to,
	};

	if (flow)
		memcpy(net.flow, flow, sizeof(net.flow));

	struct stall_env env = {
		.sb = c->sched,
		.stack_str = c->o.stack_str,
		.stack_ud = c->o.stack_ud,
		.ps = c->py,
		.py_name = c->o.py_name,
		.py_ud = c->o.py_ud,
		.comm_of = comm_of_cb,
		.comm_ud = c,
	};

	if (stall__explain(r, &env, k->tid, t0, t1, &net))
		return;
	c->st.stalls++;
	/* scheduler records of the gap may be among those dropped: its parts are not sure */
	if (correlator__dropped_within(c, t0, t1))
		r->stalls[r->nstalls - 1].lost = true;
}

static void content_chunk(struct conn *k, struct tt_request *r,
			  const struct stall_flow *const *flow)
{
	struct correlator *c = k->c;
	uint64_t gap = r->chunks ? k->ts - r->tok_ns[r->chunks - 1] : 0;

	/* under the floor a gap is never a stall: no need for the median (a sort) */
	/* a client's gaps are its upstream's: nothing local to explain */
	if (c->o.stalls && k->role == ROLE_SERVER && gap > (c->o.stall_ns ?: STALL_FLOOR_NS) &&
	    gap > stall__threshold(r, c->o.stall_ns))
		explain_stall(k, r, r->tok_ns[r->chunks - 1], k->ts, flow);
	request__add_chunk(r, k->ts);
	r->tid = k->tid;
	c->st.chunks++;
}

void response_account(struct conn *k, struct tt_request *r, const struct chunk_info *ci,
		      const struct stall_flow *const *flow)
{
	if (!r)
		return;
	switch (ci->kind) {
	case CHUNK_CONTENT:
		content_chunk(k, r, flow);
		break;
	case CHUNK_TOOL:
		r->tool_frames++;
		break;
	case CHUNK_UNKNOWN:
		r->unknown_events++;
		if (ci->cut)
			r->truncated = true;
		break;
	case CHUNK_ERROR:
		/* the status said 200 long before: the stream itself failed */
		r->stream_error = true;
		r->empty_events++;
		break;
	case CHUNK_DONE:
	case CHUNK_EMPTY:
		r->empty_events++;
		break;
	}
	if (ci->final)
		r->saw_final = true;
	if (ci->model_tokens >= 0)
		r->model_tokens = ci->model_tokens;	/* the last count wins */
	if (!r->model[0] && ci->model[0])
		memcpy(r->model, ci->model, sizeof(r->model));
	if (!r->resp_id[0] && ci->id[0]) {
		memcpy(r->resp_id, ci->id, sizeof(r->resp_id));
		attributor__key_add(k->c->attr, r, r->resp_id);
	}
}

static void on_sse_event(void *ud, const struct sse_event *ev)
{
	struct chunk_info ci;

	struct conn *k = ud;

	classify__chunk(ev->data, ev->data_len, ev->truncated, ev->event, &ci);
	response_account(k, k->rs.r, &ci, NULL);
}

static void on_sse_comment(void *ud)
{
	struct conn *k = ud;

	if (k->rs.r)
		k->rs.r->comments++;
}

static void on_nd_line(void *ud, const struct ndjson_line *l)
{
	struct chunk_info ci;

	struct conn *k = ud;

	classify__chunk(l->text, l->len, l->truncated, NULL, &ci);
	response_account(k, k->rs.r, &ci, NULL);
}

static const struct sse_cb sse_cb = { .on_event = on_sse_event, .on_comment = on_sse_comment };
static const struct ndjson_cb nd_cb = { .on_line = on_nd_line };

/* ------------------------------------------------------------------ the body's format */

static bool media_is(const char *ctype, const char *media)
{
	size_t n = strlen(media);

	while (*ctype == ' ')
		ctype++;
	return !strncasecmp(ctype, media, n) &&
	       (ctype[n] == '\0' || ctype[n] == ';' || ctype[n] == ' ');
}

enum body_format response_format(const char *ct, bool body, bool *sniff)
{
	static const char *const ndjson[] = {
		"application/x-ndjson", "application/ndjson", "application/jsonl",
		"application/x-jsonlines", "application/jsonlines", "application/json-seq",
	};

	*sniff = false;
	/*
	 * application/grpc, +proto, +json...: gRPC's own framing whatever the payload; a call
	 * answered by its trailers alone is gRPC too
	 */
	if (!strncasecmp(ct, "application/grpc", 16) &&
	    (!ct[16] || ct[16] == '+' || ct[16] == ';'))
		return FMT_GRPC;
	if (!body)
		return FMT_NONE;
	if (media_is(ct, "text/event-stream"))
		return FMT_SSE;
	for (size_t i = 0; i < ARRAY_SIZE(ndjson); i++)
		if (media_is(ct, ndjson[i]))
			return FMT_NDJSON;
	/* some servers stream SSE as text/plain or without a type at all */
	*sniff = !ct[0] || media_is(ct, "text/plain") || media_is(ct, "application/octet-stream");
	if (media_is(ct, "application/json") || strstr(ct, "+json"))
		return FMT_JSON;
	return FMT_RAW;
}

bool response_looks_like_sse(const uint8_t *d, size_t n)
{
	static const char *const fields[] = { "data:", "event:", "id:", "retry:", ":" };

	for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
		size_t l = strlen(fields[i]);

		if (n >= l && !memcmp(d, fields[i], l))
			return true;
	}
	return false;
}

/* ------------------------------------------------------------------ the response parser */

static bool answers_head(void *ud)
{
	struct conn *k = ud;

	return k->rq.pend_head && !strcmp(k->rq.pend_head->method, "HEAD");
}

static void rs_on_head(void *ud, const struct http_head *h)
{
	struct conn *k = ud;
	struct conn_resp *rs = &k->rs;
	struct tt_request *r;

	rs->active = true;
	rs->informational = h->status < 200;
	/* h2c granted: the request's response comes on HTTP/2's stream 1 */
	if (h->status == 101 && h->upgrade_h2c && k->rq.h2c_asked)
		h2x_upgrade(k);
	if (rs->informational)
		return;
	if (rs->r)	/* a previous response never ended: cannot happen with a sane parser */
		response_abort(k, ABORT_DESYNC);
	rs->fmt = response_format(h->content_type, h->framing != HTTP_BODY_NONE, &rs->sniff);
	buf__release(&rs->jbody);
	rs->jbody_cut = false;
	rs->body_bytes = 0;
	if (rs->sse)
		sse_parser__reset(rs->sse);
	if (rs->nd)
		ndjson_parser__reset(rs->nd);
	r = exchange_pair(k, h);
	if (!r)
		return;
	rs->r = r;
	r->status = h->status;
	r->t_head_ns = k->ts;
	r->t_end_ns = k->ts;
	r->tid = k->tid;
	r->format = rs->fmt;
	if (!r->request_id[0])
		memcpy(r->request_id, h->request_id, sizeof(r->request_id));
}

static void rs_on_body(void *ud, const uint8_t *data, size_t len)
{
	struct conn *k = ud;
	struct conn_resp *rs = &k->rs;

	if (rs->informational || !len)
		return;
	if (rs->sniff && !rs->body_bytes && response_looks_like_sse(data, len))
		rs->fmt = FMT_SSE;
	rs->sniff = false;
	rs->body_bytes += len;
	if (rs->r) {
		rs->r->t_end_ns = k->ts;
		rs->r->format = rs->fmt;
	}
	switch (rs->fmt) {
	case FMT_SSE:
		if (!rs->sse && !(rs->sse = sse_parser__new(&sse_cb, k)))
			break;
		sse_parser__feed(rs->sse, data, len);
		break;
	case FMT_NDJSON:
		if (!rs->nd && !(rs->nd = ndjson_parser__new(&nd_cb, k)))
			break;
		ndjson_parser__feed(rs->nd, data, len);
		break;
	case FMT_JSON:
		if (buf__append(&rs->jbody, data, len, k->c->o.req_body_max) < len)
			rs->jbody_cut = true;
		break;
	default:
		break;
	}
}

static void rs_on_body_gap(void *ud, uint64_t len)
{
	struct conn *k = ud;
	struct conn_resp *rs = &k->rs;

	if (rs->informational)
		return;
	rs->sniff = false;
	rs->body_bytes += len;
	if (rs->r) {
		rs->r->truncated = true;
		rs->r->t_end_ns = k->ts;
	}
	if (rs->fmt == FMT_SSE && rs->sse)
		sse_parser__gap(rs->sse, len);
	else if (rs->fmt == FMT_NDJSON && rs->nd)
		ndjson_parser__gap(rs->nd, len);
	else
		rs->jbody_cut = true;
}

void response_whole_body(struct conn *k, struct tt_request *r, const struct whole_body *b)
{
	struct chunk_info ci;

	r->stream = 0;
	/* an error's body is no answer: nothing came first, no token */
	if (!b->bytes || request__is_error(r))
		return;
	if (b->fmt == FMT_JSON) {
		classify__chunk((const char *)b->json->data, b->json->len, b->cut, NULL, &ci);
		ci.kind = CHUNK_CONTENT;
		response_account(k, r, &ci, NULL);
	} else {
		request__add_chunk(r, k->ts);
		k->c->st.chunks++;
	}
}

static void rs_on_end(void *ud)
{
	struct conn *k = ud;
	struct conn_resp *rs = &k->rs;
	struct tt_request *r = rs->r;

	rs->active = false;
	if (rs->informational)
		return;
	if (rs->fmt == FMT_SSE && rs->sse)
		sse_parser__end(rs->sse);
	else if (rs->fmt == FMT_NDJSON && rs->nd)
		ndjson_parser__end(rs->nd);
	if (r && (rs->fmt == FMT_JSON || rs->fmt == FMT_RAW))
		response_whole_body(k, r, &(struct whole_body){ .fmt = rs->fmt,
				    .json = &rs->jbody, .cut = rs->jbody_cut,
				    .bytes = rs->body_bytes });
	else if (r && (rs->fmt == FMT_SSE || rs->fmt == FMT_NDJSON))
		r->stream = 1;
	buf__release(&rs->jbody);
	rs->r = NULL;
	if (!r)
		return;
	/* an end learned late, from the next message after a gap, is not the end's time */
	if (!http_parser__ended_in_gap(rs->p))
		r->t_end_ns = k->ts;
	r->complete = true;
	exchange_finish(k, r);
}

static void rs_on_error(void *ud, const char *why)
{
	struct conn *k = ud;

	/* a connection closing inside a response is an abort, not a parse error */
	if (k->tcp.closing) {
		response_abort(k, k->tcp.closing);
		return;
	}
	k->c->st.parse_errors++;
	response_abort(k, ABORT_DESYNC);
}

/* After a 101 to h2c: the server's HTTP/2 bytes, from the end of its head on. */
static void rs_on_tunnel(void *ud, const uint8_t *data, size_t len)
{
	struct conn *k = ud;

	h2x_feed(k, !req_dir(k), data, len);
}

const struct http_cb response_side_cb = {
	.on_head = rs_on_head,
	.on_tunnel = rs_on_tunnel,
	.on_body = rs_on_body,
	.on_body_gap = rs_on_body_gap,
	.on_end = rs_on_end,
	.on_error = rs_on_error,
	.answers_head = answers_head,
};

/* ------------------------------------------------------------------ --stall-hooks lazy */

uint64_t response_arm_at(struct correlator *c, const struct tt_request *r, uint64_t now_ns,
			 uint64_t floor, struct arm_cache *ac)
{
	uint64_t last = r->tok_ns[r->chunks - 1], at;

	/*
	 * Silent since before the kernel last dropped records: its chunks may be among them,
	 * and the rest of a run that lost one is held back (tt_conn.shed) until its next
	 * request. No sign of a stall: under a ring that overflows it would keep the hooks on,
	 * dearest when the server is busiest.
	 */
	if (last <= c->drops.last_drop_ts)
		return UINT64_MAX;
	at = last + floor;
	/* the threshold (a median) only for a gap over the floor's share */
	if (at <= now_ns && !c->o.stall_ns) {
		if (ac->chunks != r->chunks) {
			ac->thr = stall__threshold(r, 0);
			ac->chunks = r->chunks;
		}
		at = last + ac->thr / STALL_ARM_DIV;
	}
	return at;
}

uint64_t correlator__arm_at(struct correlator *c, uint64_t now_ns)
{
	uint64_t best = UINT64_MAX, floor = (c->o.stall_ns ?: STALL_FLOOR_NS) / STALL_ARM_DIV;
	struct conn *k;
	size_t it = 0;

	if (!c->o.stalls)
		return best;
	while ((k = conn_next(c, &it))) {
		struct tt_request *r = k->rs.r;

		if (r && k->role == ROLE_SERVER && r->chunks)
			best = MIN(best, response_arm_at(c, r, now_ns, floor, &k->rs.arm));
		if (k->h2 && k->role == ROLE_SERVER)
			best = MIN(best, h2x_arm_at(k, now_ns, floor));
	}
	return best;
}
