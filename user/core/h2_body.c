// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An HTTP/2 stream's response body (h2x_stream.h): its format from the response's
 * content-type, or from its first DATA bytes when the head could not be decoded (a stream or
 * a connection joined mid-way): a gRPC message prefix, or SSE. Tokens are what the format
 * says (README "What is measured"): one gRPC message, one SSE data event, one NDJSON line,
 * each timed by the record in which it completed, as HTTP/1.1's chunks are (response.c does
 * the accounting for both).
 */
#include <stdlib.h>
#include <string.h>
#include "classify.h"
#include "h2x_stream.h"
#include "util.h"

/* ------------------------------------------------------------------ the parsers' callbacks */

static void on_message(void *ud, const struct grpc_message *m)
{
	struct h2x_stream *s = ud;
	struct chunk_info ci = { .kind = CHUNK_CONTENT, .model_tokens = -1 };

	if (!s->r)
		return;
	/* a message is a token: protobuf is not decoded, whatever it holds counts as one */
	if (m->truncated)
		s->r->truncated = true;
	response_account(s->k, s->r, &ci, s->flow);
}

static void on_grpc_error(void *ud, const char *why)
{
	struct h2x_stream *s = ud;

	if (s->r)
		s->r->truncated = true;	/* out of sync: messages may be missing */
}

static void on_sse_event(void *ud, const struct sse_event *ev)
{
	struct h2x_stream *s = ud;
	struct chunk_info ci;

	classify__chunk(ev->data, ev->data_len, ev->truncated, ev->event, &ci);
	response_account(s->k, s->r, &ci, s->flow);
}

static void on_sse_comment(void *ud)
{
	struct h2x_stream *s = ud;

	if (s->r)
		s->r->comments++;
}

static void on_nd_line(void *ud, const struct ndjson_line *l)
{
	struct h2x_stream *s = ud;
	struct chunk_info ci;

	classify__chunk(l->text, l->len, l->truncated, NULL, &ci);
	response_account(s->k, s->r, &ci, s->flow);
}

static const struct grpc_cb grpc_cb = { .on_message = on_message, .on_error = on_grpc_error };
static const struct sse_cb sse_cb = { .on_event = on_sse_event, .on_comment = on_sse_comment };
static const struct ndjson_cb nd_cb = { .on_line = on_nd_line };

/* ------------------------------------------------------------------ the format */

void h2b_head(struct h2x_stream *s, const struct hpack_fields *f, bool body)
{
	switch (f->state[HPACK_CONTENT_TYPE]) {
	case HPACK_KNOWN:
		s->fmt = response_format(f->content_type, body, &s->sniff);
		s->fmt_known = true;
		break;
	case HPACK_ABSENT:
		s->fmt = response_format("", body, &s->sniff);
		s->fmt_known = true;
		break;
	default:
		/* not decodable: the first bytes will say (gRPC's prefix, SSE's fields) */
		s->fmt = body ? FMT_RAW : FMT_NONE;
		s->fmt_known = !body;
		break;
	}
	if (s->r)
		s->r->format = s->fmt;
}

/*
 * A body whose content-type is not known: a gRPC call's (its request said so, or a message
 * prefix opens a DATA frame: flag 0 or 1 and a length under 16 MiB), or SSE (a field name at
 * a frame's start). Servers start a message or an event with a frame; other bytes wait.
 */
static void sniff(struct h2x_stream *s, const struct h2_data *d)
{
	if (!d->frame_start || !d->bytes || !d->len)
		return;
	if (s->req_grpc || (d->len >= GRPC_PREFIX_LEN && d->bytes[0] <= 1 && !d->bytes[1]))
		s->fmt = FMT_GRPC;
	else if (response_looks_like_sse(d->bytes, d->len))
		s->fmt = FMT_SSE;
	else if (!d->joined && !s->body_bytes)
		s->fmt = FMT_RAW;
	else
		return;
	s->fmt_known = true;
	s->sniff = false;
}

/* ------------------------------------------------------------------ the bytes */

/* The request's body: a JSON prefix, for the model and whether it asked for a stream. */
static void request_data(struct h2x_stream *s, const struct h2_data *d)
{
	size_t max = s->k->c->o.req_body_max;

	if (s->qbody_off || s->req_ended || !s->r)
		return;
	if (!d->bytes)
		s->qbody_cut = true;
	else if (buf__append(&s->qbody, d->bytes, d->len, max) < d->len)
		s->qbody_cut = true;
}

static void body_bytes(struct h2x_stream *s, const struct h2_data *d)
{
	struct tt_request *r = s->r;

	switch (s->fmt) {
	case FMT_GRPC:
		if (!s->grpc && !(s->grpc = grpc_parser__new(&grpc_cb, s, d->joined)))
			break;
		if (d->bytes)
			grpc_parser__feed(s->grpc, d->bytes, d->len, d->frame_start);
		else
			grpc_parser__gap(s->grpc, d->len);
		break;
	case FMT_SSE:
		if (!s->sse && !(s->sse = sse_parser__new(&sse_cb, s)))
			break;
		if (d->bytes)
			sse_parser__feed(s->sse, d->bytes, d->len);
		else
			sse_parser__gap(s->sse, d->len);
		break;
	case FMT_NDJSON:
		if (!s->nd && !(s->nd = ndjson_parser__new(&nd_cb, s)))
			break;
		if (d->bytes)
			ndjson_parser__feed(s->nd, d->bytes, d->len);
		else
			ndjson_parser__gap(s->nd, d->len);
		break;
	case FMT_JSON:
		if (!d->bytes ||
		    buf__append(&s->jbody, d->bytes, d->len, s->k->c->o.req_body_max) < d->len)
			s->jbody_cut = true;
		break;
	default:
		break;
	}
	if (!d->bytes)
		r->truncated = true;
}

void h2b_data(struct h2x_stream *s, const struct h2_data *d)
{
	struct tt_request *r = s->r;
	struct conn *k = s->k;

	if (d->dir == H2_FROM_CLIENT) {
		request_data(s, d);
		return;
	}
	if (!r || !d->len)
		return;
	s->data_seen = true;
	r->t_end_ns = k->ts;
	r->tid = k->tid;
	response_add_sender(r, k->tid);
	if (!s->fmt_known)
		sniff(s, d);
	if (!s->fmt_known) {
		/* bytes before a message or an event could be found: not counted */
		r->truncated = true;
		return;
	}
	if (s->sniff && !s->body_bytes && d->bytes && response_looks_like_sse(d->bytes, d->len))
		s->fmt = FMT_SSE;
	s->sniff = false;
	s->body_bytes += d->len;
	r->format = s->fmt;
	body_bytes(s, d);
}

bool h2b_end(struct h2x_stream *s)
{
	struct tt_request *r = s->r;
	bool whole = true;

	switch (s->fmt) {
	case FMT_GRPC:
		whole = !s->grpc || grpc_parser__end(s->grpc);
		if (r)
			r->stream = r->chunks > 1;
		break;
	case FMT_SSE:
		if (s->sse)
			sse_parser__end(s->sse);
		if (r)
			r->stream = 1;
		break;
	case FMT_NDJSON:
		if (s->nd)
			ndjson_parser__end(s->nd);
		if (r)
			r->stream = 1;
		break;
	case FMT_JSON:
	case FMT_RAW:
		if (r)
			response_whole_body(s->k, r, &(struct whole_body){ .fmt = s->fmt,
					    .json = &s->jbody, .cut = s->jbody_cut,
					    .bytes = s->body_bytes });
		break;
	default:
		break;
	}
	buf__release(&s->jbody);
	return whole;
}

void h2b_request_end(struct h2x_stream *s)
{
	struct req_info ri;

	if (s->qbody.len && s->r) {
		classify__req_info((const char *)s->qbody.data, s->qbody.len, s->qbody_cut, &ri);
		strlcpy_cut(s->r->model, sizeof(s->r->model), ri.model);
		s->r->stream = ri.stream;
		s->r->max_tokens = ri.max_tokens;
	}
	buf__release(&s->qbody);
}

void h2b_free(struct h2x_stream *s)
{
	grpc_parser__free(s->grpc);
	sse_parser__free(s->sse);
	ndjson_parser__free(s->nd);
	s->grpc = NULL;
	s->sse = NULL;
	s->nd = NULL;
	buf__release(&s->jbody);
	buf__release(&s->qbody);
}
