// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * HTTP/2 exchanges (h2x.h): the connection's parser (h2.h), a record per stream, and each
 * stream's request from its head to its end. The bodies are h2_body.c's.
 *
 * Time rule as in conn.h: a parser callback runs inside the feed of one record, whose time
 * is k->ts. The request's start is the record in which the client's END_STREAM came (the
 * server had the whole request then); its end, the record of the server's END_STREAM.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "attribute.h"
#include "h2x_stream.h"
#include "util.h"

/* Fields a stream joined mid-way never showed. */
#define JOINED_UNKNOWN	(1u << RF_METHOD | 1u << RF_PATH | 1u << RF_STATUS | 1u << RF_HOST | \
			 1u << RF_CONTENT_TYPE | 1u << RF_REQUEST_ID | 1u << RF_TRACEPARENT)

static enum h2_dir h2_dir_of(const struct conn *k, int dir)
{
	return dir == req_dir(k) ? H2_FROM_CLIENT : H2_FROM_SERVER;
}

/* The parser's counters since they were last told: into the correlator's. */
static void tell_stats(struct h2x *x)
{
	struct corr_stats *st = &x->k->c->st;
	struct h2_stats now;

	h2_parser__stats(x->p, &now);
	st->h2_streams += now.streams - x->told.streams;
	st->h2_dropped += now.dropped - x->told.dropped;
	st->h2_resyncs += now.resyncs - x->told.resyncs;
	st->h2_untracked += now.untracked - x->told.untracked;
	st->h2_stray += now.stray - x->told.stray;
	st->h2_errors += now.errors - x->told.errors;
	x->told = now;
}

/* ------------------------------------------------------------------ stream records */

static bool is_dead(const struct h2x *x, uint32_t id)
{
	for (unsigned i = 0; i < MIN(x->ndead, H2X_DEAD_MAX); i++)
		if (x->dead[i] == id)
			return true;
	return false;
}

static struct tt_request *request_new(struct h2x *x, struct h2x_stream *s, bool joined)
{
	struct conn *k = x->k;
	struct tt_request *r = exchange_request_new(k);

	if (!r)
		return NULL;
	r->h2 = true;
	r->h2_stream = s->id;
	r->joined = joined;
	if (joined)
		r->unknown = JOINED_UNKNOWN;
	r->t_recv_ns = k->ts;
	r->io_tid = k->tid;
	if (r->seq == 1 && !joined && k->tcp.t_established &&
	    k->tcp.t_accept_ns >= k->tcp.t_established) {
		r->accept_wait_ns = k->tcp.t_accept_ns - k->tcp.t_established;
		r->accept_wait_known = true;
	}
	return r;
}

/*
 * The record of a stream, made at its first callback. A stream first seen by its request's
 * head is new; any other first callback is a stream begun before the parser joined.
 */
static struct h2x_stream *stream_of(struct h2x *x, void **sud, uint32_t id, bool joined)
{
	struct h2x_stream *s = *sud;

	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->k = x->k;
	s->id = id;
	s->flow[FLOW_WINDOW_STREAM] = &s->own_flow;
	s->flow[FLOW_WINDOW_CONN] = &x->conn_flow;
	s->prev = x->tail;
	if (x->tail)
		x->tail->next = s;
	else
		x->head = s;
	x->tail = s;
	*sud = s;
	if (id == 1 && x->upgraded) {
		/* h2c: the request was HTTP/1.1, read whole before the 101 */
		s->r = x->upgraded;
		x->upgraded = NULL;
		s->r->h2 = true;
		s->r->h2_stream = 1;
		s->req_ended = true;
		s->qbody_off = true;
	} else if (!is_dead(x, id)) {
		s->r = request_new(x, s, joined);
	}
	return s;
}

static void stream_free(struct h2x *x, struct h2x_stream *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		x->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		x->tail = s->prev;
	request__free(s->r);
	h2b_free(s);
	free(s);
}

/* The stream's request is done: out to the markers, the proxy pairing and the caller. */
static void report(struct h2x *x, struct h2x_stream *s)
{
	struct tt_request *r = s->r;

	s->r = NULL;
	if (!r)
		return;
	r->format = s->fmt;
	if (r->format == FMT_GRPC && r->stream < 0)
		r->stream = r->chunks > 1;	/* "stream": a response of several messages */
	if (r->joined)
		x->k->c->st.h2_joined++;
	exchange_finish(x->k, r);
}

/* ------------------------------------------------------------------ header blocks */

/* One kept field into the request: known, or said unknown. */
static void take(struct tt_request *r, const struct hpack_fields *f, enum hpack_key key,
		 enum req_field rf, char *dst, size_t size, const char *v)
{
	if (f->state[key] == HPACK_KNOWN) {
		if (dst)
			strlcpy_cut(dst, size, v);
		r->unknown &= ~(1u << rf);
	} else if (f->state[key] == HPACK_UNKNOWN) {
		r->unknown |= 1u << rf;
	}
}

static void request_head(struct h2x_stream *s, struct tt_request *r, const struct hpack_fields *f)
{
	take(r, f, HPACK_METHOD, RF_METHOD, r->method, sizeof(r->method), f->method);
	take(r, f, HPACK_PATH, RF_PATH, r->path, sizeof(r->path), f->path);
	take(r, f, HPACK_AUTHORITY, RF_HOST, r->host, sizeof(r->host), f->authority);
	take(r, f, HPACK_REQUEST_ID, RF_REQUEST_ID, r->request_id, sizeof(r->request_id),
	     f->request_id);
	take(r, f, HPACK_TRACEPARENT, RF_TRACEPARENT, r->traceparent, sizeof(r->traceparent),
	     f->traceparent);
	/* gRPC's request is protobuf: nothing in it to read */
	if (f->state[HPACK_CONTENT_TYPE] == HPACK_KNOWN &&
	    !strncasecmp(f->content_type, "application/grpc", 16))
		s->req_grpc = s->qbody_off = true;
}

/* grpc-status and grpc-message: the trailers, or a trailers-only response */
static void grpc_status_of(struct h2x_stream *s, struct tt_request *r,
			   const struct hpack_fields *f)
{
	if (f->state[HPACK_GRPC_STATUS] == HPACK_KNOWN && f->grpc_status >= 0) {
		r->grpc_status = f->grpc_status;
		r->unknown &= ~(1u << RF_GRPC_STATUS);
		if (f->state[HPACK_GRPC_MESSAGE] == HPACK_KNOWN)
			strlcpy_cut(r->grpc_message, sizeof(r->grpc_message), f->grpc_message);
	} else if (f->state[HPACK_GRPC_STATUS] != HPACK_ABSENT &&
		   (s->fmt == FMT_GRPC || s->req_grpc)) {
		/* undecodable (joined), or not a number: the stream's status is not known */
		r->unknown |= 1u << RF_GRPC_STATUS;
	}
}

static void response_head(struct h2x_stream *s, struct tt_request *r,
			  const struct h2_headers *h)
{
	const struct hpack_fields *f = h->f;
	struct conn *k = s->k;

	s->head = true;
	if (f->state[HPACK_STATUS] == HPACK_KNOWN && f->status) {
		r->status = f->status;
		r->unknown &= ~(1u << RF_STATUS);
	} else {
		r->unknown |= 1u << RF_STATUS;
	}
	take(r, f, HPACK_CONTENT_TYPE, RF_CONTENT_TYPE, NULL, 0, NULL);
	/* the request's X-Request-Id, else the response's */
	if (!r->request_id[0] && f->state[HPACK_REQUEST_ID] == HPACK_KNOWN)
		take(r, f, HPACK_REQUEST_ID, RF_REQUEST_ID, r->request_id, sizeof(r->request_id),
		     f->request_id);
	r->t_head_ns = k->ts;
	r->t_end_ns = k->ts;
	r->tid = k->tid;
	h2b_head(s, f, !h->end_stream);
	grpc_status_of(s, r, f);
}

static void on_headers(void *ud, void **sud, const struct h2_headers *h)
{
	struct h2x *x = ud;
	struct h2x_stream *s = stream_of(x, sud, h->stream, h->joined);
	struct tt_request *r = s ? s->r : NULL;

	if (!r)
		return;
	r->joined |= h->joined;
	if (h->lost)
		r->truncated = true;	/* the block was cut: its fields are unknown */
	switch (h->kind) {
	case H2_HDR_REQUEST:
		request_head(s, r, h->f);
		break;
	case H2_HDR_PUSH:
		/* a server push: the promise is the whole request */
		request_head(s, r, h->f);
		s->req_ended = true;
		r->t_start_ns = x->k->ts;
		break;
	case H2_HDR_RESPONSE:
		/* joined: a block whose :status could not be decoded, after DATA, is trailers */
		if (!s->data_seen) {
			response_head(s, r, h);
			break;
		}
		/* fall through */
	case H2_HDR_TRAILERS:
		if (h->dir == H2_FROM_SERVER) {
			r->t_end_ns = x->k->ts;
			grpc_status_of(s, r, h->f);
		}
		break;
	case H2_HDR_INFO:
		break;
	}
}

/* ------------------------------------------------------------------ data and ends */

static void on_data(void *ud, void **sud, const struct h2_data *d)
{
	struct h2x_stream *s = stream_of(ud, sud, d->stream, d->joined);

	if (s)
		h2b_data(s, d);
}

static void on_end_stream(void *ud, void **sud, enum h2_dir dir, uint32_t stream)
{
	struct h2x *x = ud;
	struct h2x_stream *s = stream_of(x, sud, stream, true);
	struct tt_request *r = s ? s->r : NULL;
	struct conn *k = x->k;

	if (!r)
		return;
	if (dir == H2_FROM_CLIENT) {
		s->req_ended = true;
		r->t_start_ns = k->ts;
		r->io_tid = k->tid;
		h2b_request_end(s);
		attributor__key_add(k->c->attr, r, r->request_id);
		return;
	}
	if (!h2b_end(s))
		r->truncated = true;	/* it ended inside a gRPC message */
	r->t_end_ns = k->ts;
	r->tid = k->tid;
	r->complete = true;
	report(x, s);
}

/* Why a stream closed before its response ended, as an abort. */
static enum abort_reason abort_of(const struct conn *k, const struct h2_close *c)
{
	switch (c->reason) {
	case H2_CLOSE_RESET:
	case H2_CLOSE_GOAWAY:
		return c->by == H2_FROM_CLIENT ? ABORT_CLIENT : ABORT_SERVER;
	case H2_CLOSE_EOF:
		return k->tcp.closing ? k->tcp.closing : ABORT_SERVER;
	default:
		return ABORT_SERVER;	/* both sides ended: the server's end came first */
	}
}

static void on_close(void *ud, void **sud, const struct h2_close *c)
{
	struct h2x *x = ud;
	struct h2x_stream *s = *sud;

	if (!s)
		return;
	if (s->r) {
		/* a stream that said its own end ([DONE]) was answered whole */
		if (s->r->saw_final)
			s->r->complete = true;
		else
			s->r->abort = abort_of(x->k, c);
		report(x, s);
	}
	*sud = NULL;
	stream_free(x, s);
}

/*
 * The server's send windows: a spell of a used-up window, from the DATA frame that emptied
 * it to the WINDOW_UPDATE that opened it, is a time the server could not send (stall.h).
 */
static void on_flow(void *ud, void **sud, const struct h2_flow *f)
{
	struct h2x *x = ud;
	struct h2x_stream *s = sud ? *sud : NULL;
	struct stall_flow *fl = !sud ? &x->conn_flow : s ? &s->own_flow : NULL;

	if (f->sender != H2_FROM_SERVER || !fl)
		return;
	/* a window not known from its start cannot be said to be closed */
	if (!f->known)
		stall_flow__opened(fl, x->k->ts);
	else if (f->kind == H2_FLOW_BLOCKED && f->window <= 0)
		stall_flow__blocked(fl, x->k->ts);
	else if (f->window > 0)
		stall_flow__opened(fl, x->k->ts);
}

/* Sync lost, or a rule broken: what the open streams count may be short. */
static void on_error(void *ud, enum h2_dir dir, const char *why)
{
	struct h2x *x = ud;

	for (struct h2x_stream *s = x->head; s; s = s->next)
		if (s->r)
			s->r->truncated = true;
}

static const struct h2_cb h2_cbs = {
	.on_headers = on_headers,
	.on_data = on_data,
	.on_end_stream = on_end_stream,
	.on_close = on_close,
	.on_flow = on_flow,
	.on_error = on_error,
};

/* ------------------------------------------------------------------ the connection */

int h2x_start(struct conn *k, enum h2_start start)
{
	struct h2x *x = calloc(1, sizeof(*x));

	if (!x)
		return -1;
	x->k = k;
	x->start = start;
	x->p = h2_parser__new(start, &h2_cbs, x);
	if (!x->p) {
		free(x);
		return -1;
	}
	k->h2 = x;
	k->c->st.h2_conns++;
	return 0;
}

void h2x_upgrade(struct conn *k)
{
	if (k->h2 || h2x_start(k, H2_START_UPGRADE))
		return;
	if (h2_parser__upgraded(k->h2->p, k->rq.h2c_settings))
		k->c->st.h2_errors++;	/* a bad HTTP2-Settings: the defaults are kept */
	/* the request the 101 answered: stream 1 answers it in HTTP/2 */
	k->h2->upgraded = exchange_pop(k);
}

void h2x_feed(struct conn *k, int dir, const uint8_t *data, size_t len)
{
	if (!k->h2)
		return;
	h2_parser__feed(k->h2->p, h2_dir_of(k, dir), data, len);
	tell_stats(k->h2);
}

void h2x_gap(struct conn *k, int dir, uint64_t len)
{
	if (!k->h2)
		return;
	h2_parser__gap(k->h2->p, h2_dir_of(k, dir), len);
	tell_stats(k->h2);
}

void h2x_eof(struct conn *k)
{
	if (!k->h2)
		return;
	h2_parser__eof(k->h2->p);
	tell_stats(k->h2);
}

/* Every stream record goes; those with a request in flight are reported lost. */
static void drop_streams(struct h2x *x, bool remember)
{
	while (x->head) {
		struct h2x_stream *s = x->head;

		if (remember)
			x->dead[x->ndead++ % H2X_DEAD_MAX] = s->id;
		if (s->r) {
			s->r->lost = true;
			if (!s->r->complete)
				s->r->abort = ABORT_LOST;
			report(x, s);
		}
		stream_free(x, s);
	}
}

void h2x_lost(struct conn *k)
{
	struct h2x *x = k->h2;
	struct h2_parser *p;

	if (!x)
		return;
	if (x->upgraded) {
		x->upgraded->lost = true;
		x->upgraded->abort = ABORT_LOST;
		exchange_finish(k, x->upgraded);
		x->upgraded = NULL;
	}
	drop_streams(x, true);
	/* what follows the loss is a connection joined mid-way: its tables are not known */
	p = h2_parser__new(H2_START_JOINED, &h2_cbs, x);
	if (!p) {
		role_ignore(k);
		return;
	}
	h2_parser__free(x->p);
	x->p = p;
	x->start = H2_START_JOINED;
	memset(&x->told, 0, sizeof(x->told));
	memset(&x->conn_flow, 0, sizeof(x->conn_flow));
}

void h2x_free(struct conn *k)
{
	struct h2x *x = k->h2;

	if (!x)
		return;
	while (x->head) {
		/* not reported: the caller counted what was in flight (correlator__in_flight) */
		stream_free(x, x->head);
	}
	request__free(x->upgraded);
	h2_parser__free(x->p);
	free(x);
	k->h2 = NULL;
}

bool h2x_busy(const struct conn *k)
{
	const struct h2x *x = k->h2;

	if (!x)
		return false;
	if (x->upgraded)
		return true;
	for (const struct h2x_stream *s = x->head; s; s = s->next)
		if (s->r)
			return true;
	return false;
}

void h2x_foreach(const struct conn *k, void (*fn)(void *ud, struct tt_request *r, bool streaming),
		 void *ud)
{
	if (!k->h2)
		return;
	if (k->h2->upgraded)
		fn(ud, k->h2->upgraded, false);
	for (struct h2x_stream *s = k->h2->head; s; s = s->next)
		if (s->r)
			fn(ud, s->r, s->head);
}

uint64_t h2x_arm_at(struct conn *k, uint64_t now_ns, uint64_t floor)
{
	uint64_t best = UINT64_MAX;

	if (!k->h2)
		return best;
	for (struct h2x_stream *s = k->h2->head; s; s = s->next)
		if (s->r && s->r->chunks)
			best = MIN(best, response_arm_at(k->c, s->r, now_ns, floor, &s->arm));
	return best;
}
