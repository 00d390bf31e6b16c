/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Incremental Server-Sent Events parser (WHATWG HTML, "event stream interpretation"), fed
 * the de-chunked body of a text/event-stream response in whatever pieces it arrives.
 *
 * Lines end with CRLF, LF or CR (a CR then LF split across feeds is one line end). A blank
 * line dispatches the event. "data:" lines are joined with '\n'; one space after the colon is
 * dropped; a line without a colon is a field with an empty value; ':' starts a comment (a
 * heartbeat, never a token). Unknown fields are ignored. An event without any data line is
 * not dispatched (per spec) but is counted in sse_stats.
 *
 * The data kept per event is bounded (SSE_DATA_MAX): longer data is cut and flagged, its
 * length still counted. A gap (bytes not captured) inside an event flags that event; the
 * parser then cannot know where lines ended inside the gap, so it also flags every event until
 * the next line end seen after the gap ("resync"). Servers write an event per send and a gap
 * is a send's uncaptured tail, so the event a gap falls in is dispatched at the gap (inside
 * sse_parser__gap(), flagged) rather than merged with the next send's event.
 */
#ifndef TT_SSE_H
#define TT_SSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SSE_DATA_MAX	65536
#define SSE_EVENT_MAX	64

struct sse_event {
	const char *event;	/* "event:" value, NUL-terminated, "" if none */
	const char *data;	/* joined data lines, NUL-terminated, at most SSE_DATA_MAX bytes */
	size_t data_len;	/* bytes in data */
	uint64_t data_total;	/* full length of the joined data, kept or not */
	bool truncated;		/* data cut at SSE_DATA_MAX, or a gap fell inside the event */
};

struct sse_stats {
	uint64_t events;	/* dispatched */
	uint64_t comments;	/* ':' lines */
	uint64_t empty;		/* blank-line-terminated blocks without data: not dispatched */
	uint64_t gaps;		/* gaps fed */
};

struct sse_cb {
	void (*on_event)(void *ud, const struct sse_event *ev);
	void (*on_comment)(void *ud);	/* optional */
};

struct sse_parser;

struct sse_parser *sse_parser__new(const struct sse_cb *cb, void *ud);
void sse_parser__free(struct sse_parser *p);
void sse_parser__reset(struct sse_parser *p);	/* for the next response (stats too) */
void sse_parser__feed(struct sse_parser *p, const uint8_t *data, size_t len);
void sse_parser__gap(struct sse_parser *p, uint64_t len);
/*
 * The body ended. Per spec an event not closed by a blank line is discarded; servers that
 * end the stream right after the last data line without the blank line do exist, so a
 * pending event with data is dispatched here, flagged truncated.
 */
void sse_parser__end(struct sse_parser *p);
const struct sse_stats *sse_parser__stats(const struct sse_parser *p);

#endif /* TT_SSE_H */
