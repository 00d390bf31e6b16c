/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The insides of h2x.h, shared by h2_exchange.c (the connection, its streams and their
 * requests) and h2_body.c (each stream's response body) and by nothing else.
 */
#ifndef TT_H2X_STREAM_H
#define TT_H2X_STREAM_H

#include "conn.h"
#include "grpc.h"
#include "stall.h"

/* Stream ids of streams ended by a loss: what the parser, joined again, shows of them is not
 * a new request (as HTTP/1.1 drops the rest of a response it lost). */
#define H2X_DEAD_MAX	256

/* One stream and its request. Kept in the parser's stream pointer (h2_cb's sud). */
struct h2x_stream {
	struct h2x_stream *prev, *next;	/* the connection's streams, oldest first */
	struct conn *k;
	uint32_t id;
	struct tt_request *r;		/* NULL once reported, or for a stream not reported */
	bool req_ended;			/* the client's END_STREAM came: t_start is known */
	bool head;			/* the response's final head came */
	bool req_grpc;			/* the request's content-type is gRPC's */
	bool data_seen;			/* DATA of the response came */

	/* its response body (h2_body.c) */
	enum body_format fmt;
	bool fmt_known;			/* from the response's content-type: else sniffed */
	bool sniff;			/* content-type says nothing clear: SSE if it looks so */
	struct sse_parser *sse;
	struct ndjson_parser *nd;
	struct grpc_parser *grpc;
	struct buf jbody;		/* a JSON body's prefix, to classify */
	bool jbody_cut;
	uint64_t body_bytes;
	/* its request body's prefix (JSON: model, stream, max_tokens) */
	struct buf qbody;
	bool qbody_cut;
	bool qbody_off;			/* not JSON (gRPC): not kept */

	/* stall_net.flow: NULL, this stream's window, the connection's */
	const struct stall_flow *flow[3];
	struct stall_flow own_flow;
	struct arm_cache arm;
};

struct h2x {
	struct conn *k;
	struct h2_parser *p;
	enum h2_start start;
	struct h2x_stream *head, *tail;
	struct stall_flow conn_flow;	/* the server's connection window */
	struct h2_stats told;		/* the parser's stats as last added to corr_stats */
	struct tt_request *upgraded;	/* an h2c upgrade's request, until stream 1 takes it */
	uint32_t dead[H2X_DEAD_MAX];
	unsigned ndead;
};

/* h2_body.c */
/* The response's head: the body's format from its content-type; body: one may follow. */
void h2b_head(struct h2x_stream *s, const struct hpack_fields *f, bool body);
/* DATA bytes of the stream (d->bytes NULL: a gap). */
void h2b_data(struct h2x_stream *s, const struct h2_data *d);
/* The server ended the stream: the body's parsers end. False if it ended inside a message. */
bool h2b_end(struct h2x_stream *s);
/* The client ended its side: what its body says of the request (model, stream). */
void h2b_request_end(struct h2x_stream *s);
void h2b_free(struct h2x_stream *s);

#endif /* TT_H2X_STREAM_H */
