/* SPDX-License-Identifier: MIT */
/*
 * Incremental HTTP/1.1 response parser: status and headers, then a chunked,
 * Content-Length or close-delimited body, read as SSE (named events,
 * comments, LF or CRLF), NDJSON, or one JSON document.  It counts content
 * chunks: events that carry non-empty generated text (not role-only, empty,
 * finish, usage, [DONE], pings or tool frames), and keeps the last model
 * token count a stream announces.  Every event's JSON is validated.  It notes
 * when the stream's own end arrives ([DONE], an NDJSON "done":true, Anthropic's
 * message_stop, llama.cpp's "stop":true, the Responses API's response.completed),
 * and can stop right there, as SDKs that close at [DONE] do.
 */
#ifndef TL_RESP_H
#define TL_RESP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "strbuf.h"

enum rp_state { RP_HEAD, RP_BODY, RP_DONE, RP_ERROR };
enum rp_body { BODY_SSE, BODY_NDJSON, BODY_JSON, BODY_IGNORE };
enum rp_chunk { CH_SIZE, CH_DATA, CH_DATA_END, CH_TRAILER };

struct rp {
	enum rp_state state;
	int status;
	bool conn_close;  /* the server closes after this response */
	bool chunked;
	bool close_delim; /* body ends at EOF */
	long long body_left; /* Content-Length bodies */
	enum rp_chunk cstate;
	uint64_t chunk_left;
	enum rp_body kind;
	struct strbuf frame; /* the head, then chunk-size and trailer lines */
	struct strbuf line;  /* the current, incomplete SSE/NDJSON line */
	struct strbuf data; /* SSE: data lines of the current event; JSON: the whole body */
	bool has_data;

	uint32_t chunks;
	long long tokens; /* -1 until the stream announces a count */
	long chunk_limit; /* stop once this many chunks are in (-1: never) */
	bool limit_hit;
	bool final;	     /* the stream's own end event arrived */
	bool stop_at_final;  /* then take no more bytes */
	uint64_t bytes;
	const char *error;
};

void rp_init(struct rp *p, long chunk_limit, bool stop_at_final);
void rp_free(struct rp *p);
/*
 * Feeds received bytes; returns how many belong to this response (the rest
 * are the next pipelined response's).  Stops early at the end of the
 * response, on an error, or when chunk_limit is reached.
 */
size_t rp_feed(struct rp *p, const char *buf, size_t n);
/* Feeding stopped early on purpose: the chunk limit, or the final event with stop_at_final. */
bool rp_halted(const struct rp *p);
/* The connection closed: ends a close-delimited body, else an error. */
void rp_eof(struct rp *p);

#endif
