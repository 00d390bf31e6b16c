/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The HTTP/2 parser's state, shared by its parts and by nothing else: h2.c (frames to
 * callbacks, header blocks), h2_stream.c (the stream table), h2_flow.c (settings and
 * flow-control windows).
 */
#ifndef TT_H2_CONN_H
#define TT_H2_CONN_H

#include "h2.h"
#include "h2_frame.h"
#include "hpack.h"

#define H2_PENDING_MAX	4	/* SETTINGS frames awaiting their ACK, per side */
#define H2_CLOSED_MAX	64	/* closed stream ids remembered: late frames for them */
#define H2_SETTING_IDS	7	/* 1..6 as defined by RFC 9113 6.5.2 */

enum {
	SET_HEADER_TABLE_SIZE = 1,
	SET_ENABLE_PUSH,
	SET_MAX_CONCURRENT_STREAMS,
	SET_INITIAL_WINDOW_SIZE,
	SET_MAX_FRAME_SIZE,
	SET_MAX_HEADER_LIST_SIZE,
};

struct h2_stream {
	uint32_t id;			/* 0: a free slot */
	bool ended[2];			/* END_STREAM (or reserved) by each side */
	bool seen[2];			/* client: its first block; server: a final response */
	bool joined;
	bool win_known[2];
	int64_t win[2];			/* each side's send window */
	void *sud;
};

struct h2_settings_frame {
	uint8_t mask;			/* bit per setting id present */
	uint32_t v[H2_SETTING_IDS];
};

/* One side of the connection: what it sends, and the limits it must keep. */
struct h2_side {
	struct h2_reader rd;
	struct hpack_decoder *hpack;	/* its header blocks */

	/* a header block in progress */
	bool in_block;
	bool block_lost;
	uint8_t block_type;
	bool block_end_stream;
	uint32_t block_stream;
	uint32_t block_promised;

	bool data_start;		/* the next DATA bytes start a frame */
	uint32_t max_opened;		/* the highest stream id it opened */
	uint32_t join_first;		/* joined: the first stream it opened since, 0 until */

	/* SETTINGS it sent that the other side has not acknowledged yet */
	struct h2_settings_frame pending[H2_PENDING_MAX];
	unsigned npending;
	struct h2_settings_frame cur;	/* one being read */

	/* its limits, from the other side's acknowledged settings */
	uint32_t frame_max;
	uint32_t init_window;
	bool init_known;
	int64_t conn_win;
	bool conn_known;
};

struct h2_parser {
	struct h2_cb cb;
	void *ud;
	bool joined;
	struct h2_side side[2];
	struct h2_stream *tab;
	size_t cap, count;
	uint32_t closed[H2_CLOSED_MAX];
	unsigned closed_next;
	struct h2_stats stats;
	struct hpack_fields fields;	/* the block being reported */
};

static inline enum h2_dir h2__other(enum h2_dir d)
{
	return d == H2_FROM_CLIENT ? H2_FROM_SERVER : H2_FROM_CLIENT;
}

/* who opens a stream of this id: odd the client, even (pushed) the server */
static inline enum h2_dir h2__initiator(uint32_t id)
{
	return id & 1 ? H2_FROM_CLIENT : H2_FROM_SERVER;
}

/* h2_stream.c */
struct h2_stream *h2_stream__find(const struct h2_parser *p, uint32_t id);
/* NULL when H2_STREAMS_MAX are open (counted, reported) or out of memory */
struct h2_stream *h2_stream__add(struct h2_parser *p, uint32_t id, bool joined);
/* The stream a DATA or HEADERS frame of dir is for, opened if it may be; NULL: not tracked. */
struct h2_stream *h2_stream__for(struct h2_parser *p, enum h2_dir dir, uint32_t id,
				 bool opening);
void h2_stream__close(struct h2_parser *p, struct h2_stream *st, enum h2_close_reason why,
		      enum h2_dir by, uint32_t code);
/* Close every stream for which match() is true. */
void h2_stream__close_all(struct h2_parser *p, bool (*match)(const struct h2_stream *, uint32_t),
			  uint32_t arg, enum h2_close_reason why, enum h2_dir by, uint32_t code);
void h2_stream__free_all(struct h2_parser *p);

/* h2_flow.c */
void h2_flow__init(struct h2_parser *p);
void h2_flow__new_stream(struct h2_parser *p, struct h2_stream *st);
void h2_flow__data(struct h2_parser *p, enum h2_dir dir, struct h2_stream *st, uint32_t len);
void h2_flow__window_update(struct h2_parser *p, enum h2_dir from, uint32_t stream,
			    uint32_t inc);
/* every window unknown from now on (frames were lost) */
void h2_flow__forget(struct h2_parser *p);
void h2_flow__setting(struct h2_parser *p, enum h2_dir from, uint16_t id, uint32_t value);
/* the end of a SETTINGS frame from dir: an ACK or new settings */
void h2_flow__settings_end(struct h2_parser *p, enum h2_dir dir, bool ack);
/* settings that apply at once to the side they constrain (HTTP2-Settings at a 101) */
void h2_flow__apply(struct h2_parser *p, enum h2_dir constrained,
		    const struct h2_settings_frame *s);

#endif /* TT_H2_CONN_H */
