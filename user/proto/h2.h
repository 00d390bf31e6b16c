/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Incremental HTTP/2 parser (RFC 9113) for one connection, both directions: framing, the
 * streams, their header blocks (HPACK through hpack.h, one decoder per direction) and
 * flow-control windows.
 *
 * It is fed the bytes of each send or receive in order, with the side that sent them, and
 * reports through callbacks that run synchronously inside h2_parser__feed(): the caller
 * knows which syscall, and so which timestamp, each belongs to. Callbacks must not free the
 * parser. Frames split across sends, several frames in one send, many streams interleaved
 * and padding are all the same to it; nothing but a header byte or a control frame's first
 * bytes is ever copied (DATA bytes go to on_data straight from the fed buffer).
 *
 * Lengths are never trusted: a frame longer than the receiver's SETTINGS_MAX_FRAME_SIZE (once
 * the sender acknowledged it; 16384 before), a fixed-size frame of the wrong size or a
 * padding longer than its frame loses sync. Out of sync, and from the start when joined (the
 * connection was open before the tracer attached), the parser looks in each feed for a
 * plausible chain of frame headers (a known type, its flags, its stream rules, its length
 * within bounds) that ends where the feed ends or holds two frames, and drops what lies
 * before it. A stream first seen other than by the initiator's HEADERS is "joined": its
 * start and its headers were not seen.
 *
 * Settings take effect for the side they constrain when that side acknowledges them (it
 * applied them before it sent its ACK, so every frame after the ACK follows them); the
 * frame-size bound admits the larger of old and new while an ACK is pending. With h2c
 * upgrade, HTTP2-Settings applies at the 101.
 *
 * Flow control (RFC 9113 6.9): each side's send windows, the connection's and each stream's,
 * are kept from the windows' start (65535, SETTINGS_INITIAL_WINDOW_SIZE for streams), less
 * every DATA frame's length, plus every WINDOW_UPDATE. A window is known only when the parser
 * saw it from its start; a joined parser knows none.
 */
#ifndef TT_H2_H
#define TT_H2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpack.h"

#define H2_PREFACE		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define H2_PREFACE_LEN		24
#define H2_FRAME_HEADER_LEN	9
#define H2_DEFAULT_FRAME_MAX	16384		/* SETTINGS_MAX_FRAME_SIZE's initial value */
#define H2_FRAME_MAX_LIMIT	16777215	/* the most a peer may allow (2^24 - 1) */
#define H2_DEFAULT_WINDOW	65535
#define H2_STREAMS_MAX		4096		/* open streams tracked per connection */

enum h2_dir {
	H2_FROM_CLIENT,		/* sent by the side that opened the connection */
	H2_FROM_SERVER,
};

enum h2_start {
	H2_START_PREFACE,	/* prior knowledge, or TLS with ALPN h2: the client's bytes begin
				 * with the connection preface */
	H2_START_UPGRADE,	/* after a 101 to h2c (h2_parser__upgraded()): the same, and
				 * stream 1 carries the upgraded request's response */
	H2_START_JOINED,	/* the connection was open before the first feed */
};

enum h2_frame_type {
	H2_DATA, H2_HEADERS, H2_PRIORITY, H2_RST_STREAM, H2_SETTINGS, H2_PUSH_PROMISE, H2_PING,
	H2_GOAWAY, H2_WINDOW_UPDATE, H2_CONTINUATION,
	H2_NTYPES,
};

enum h2_hdr_kind {
	H2_HDR_REQUEST,		/* the initiator's first block: :method, :path */
	H2_HDR_INFO,		/* a 1xx response; the final one follows */
	H2_HDR_RESPONSE,	/* the final response's head (a gRPC "trailers-only" too) */
	H2_HDR_TRAILERS,	/* a later block of a side (gRPC: grpc-status) */
	H2_HDR_PUSH,		/* a PUSH_PROMISE: the promised stream's request */
};

/* A whole header block (HEADERS or PUSH_PROMISE and its CONTINUATIONs), decoded. */
struct h2_headers {
	enum h2_dir dir;
	uint32_t stream;		/* H2_HDR_PUSH: the promised stream */
	uint32_t assoc;			/* H2_HDR_PUSH: the stream the promise came on */
	enum h2_hdr_kind kind;
	bool end_stream;		/* the block ended the side's stream */
	bool joined;			/* the stream began before the parser joined */
	bool lost;			/* bytes of the block were not captured: fields unknown */
	const struct hpack_fields *f;
};

/* DATA frame bytes, padding removed; gap: len bytes moved but were not captured. */
struct h2_data {
	enum h2_dir dir;
	uint32_t stream;
	const uint8_t *bytes;		/* NULL for a gap */
	size_t len;
	bool frame_start;		/* the first bytes of a DATA frame */
	bool joined;
};

enum h2_close_reason {
	H2_CLOSE_DONE,		/* both sides ended the stream */
	H2_CLOSE_RESET,		/* RST_STREAM (by, error_code) */
	H2_CLOSE_GOAWAY,	/* past the last stream id of a GOAWAY by: never processed */
	H2_CLOSE_EOF,		/* the connection closed with the stream open */
};

struct h2_close {
	uint32_t stream;
	enum h2_close_reason reason;
	enum h2_dir by;			/* RESET, GOAWAY: who sent it */
	uint32_t error_code;		/* RESET, GOAWAY (0 NO_ERROR, 8 CANCEL, ...) */
	bool joined;
};

enum h2_flow_kind {
	H2_FLOW_BLOCKED,	/* a DATA frame used up the window: the sender must wait */
	H2_FLOW_UPDATE,		/* a WINDOW_UPDATE or a new SETTINGS_INITIAL_WINDOW_SIZE */
};

/* A change of one of sender's send windows. */
struct h2_flow {
	enum h2_flow_kind kind;
	enum h2_dir sender;		/* whose window: the peer of who sent a WINDOW_UPDATE */
	uint32_t stream;		/* 0: the connection's window */
	bool known;			/* window is exact */
	int64_t window;			/* after the change, when known */
	int64_t delta;			/* UPDATE: the increment, or a new initial size's change */
	bool opened;			/* UPDATE: the window went from <= 0 to > 0 */
};

struct h2_stats {
	uint64_t frames[H2_NTYPES + 1];	/* by type; the last: unknown types (ignored) */
	uint64_t dropped;		/* bytes dropped out of sync */
	uint64_t resyncs;		/* times sync was found again */
	uint64_t streams;		/* streams seen */
	uint64_t untracked;		/* streams not tracked: H2_STREAMS_MAX were open */
	uint64_t stray;			/* frames for streams closed or never opened */
	uint64_t errors;		/* on_error calls */
};

/*
 * sud points at the stream's own pointer for the caller (NULL until it sets it), the same
 * one for every callback of that stream until on_close, after which it is gone. Callbacks
 * for streams the parser does not track (none of H2_STREAMS_MAX free, or frames for a stream
 * already closed) are not made: they are counted in h2_stats.
 */
struct h2_cb {
	void (*on_headers)(void *ud, void **sud, const struct h2_headers *h);
	void (*on_data)(void *ud, void **sud, const struct h2_data *d);
	/* END_STREAM from dir, after the frame's on_headers or on_data */
	void (*on_end_stream)(void *ud, void **sud, enum h2_dir dir, uint32_t stream);
	/* the stream is gone: no callback for it follows */
	void (*on_close)(void *ud, void **sud, const struct h2_close *c);
	void (*on_goaway)(void *ud, enum h2_dir dir, uint32_t last_stream, uint32_t error_code);
	/* sud is NULL for the connection's window */
	void (*on_flow)(void *ud, void **sud, const struct h2_flow *f);
	/* sync lost or a protocol rule broken; why is a short static string */
	void (*on_error)(void *ud, enum h2_dir dir, const char *why);
};

struct h2_parser;

struct h2_parser *h2_parser__new(enum h2_start start, const struct h2_cb *cb, void *ud);
void h2_parser__free(struct h2_parser *p);

/*
 * An h2c upgrade (H2_START_UPGRADE), before the first feed: settings is the request's
 * HTTP2-Settings value (base64url SETTINGS payload; NULL or "" for none). Stream 1 is the
 * upgraded request, its client side ended; the response comes on it.
 */
int h2_parser__upgraded(struct h2_parser *p, const char *settings);

void h2_parser__feed(struct h2_parser *p, enum h2_dir dir, const uint8_t *data, size_t len);
/* len bytes sent by dir followed the last feed but were not captured */
void h2_parser__gap(struct h2_parser *p, enum h2_dir dir, uint64_t len);
/* The connection closed: every open stream gets on_close(H2_CLOSE_EOF). */
void h2_parser__eof(struct h2_parser *p);

/* sender's send window on stream (0: the connection's); false if not known */
bool h2_parser__window(const struct h2_parser *p, enum h2_dir sender, uint32_t stream,
		       int64_t *window);
void h2_parser__stats(const struct h2_parser *p, struct h2_stats *out);

/* Does data (as far as it goes) begin with the client connection preface? */
bool h2__is_preface(const uint8_t *data, size_t len);

/*
 * Does data begin with a SETTINGS frame (not an ACK) on stream 0: the first bytes of a server
 * that speaks first (gRPC C-core, nghttpd send theirs before reading the client's preface)?
 */
bool h2__is_settings(const uint8_t *data, size_t len);

/* Who sent bytes of a connection joined mid-way, as far as they say (h2__sniff()). */
enum h2_sender {
	H2_SENDER_UNKNOWN,
	H2_SENDER_CLIENT,
	H2_SENDER_SERVER,
};

/*
 * A connection open before the tracer came (h2_sniff.c): do data begin with a plausible
 * chain of frames (the strict check of a resync, at data's first byte)? *sender says who sent
 * them when a frame does: a header block that begins with a request's pseudo-header or a
 * response's :status (static table references, which HPACK encoders use for them whatever
 * the dynamic table holds), or a PUSH_PROMISE; else H2_SENDER_UNKNOWN.
 */
bool h2__sniff(const uint8_t *data, size_t len, enum h2_sender *sender);

#endif /* TT_H2_H */
