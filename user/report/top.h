/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --top's state, shared by top.c (what the screen shows: the rolling window, the streams in
 * flight, the recent stalls; the screen's lifetime and keys) and top_draw.c (drawing it).
 */
#ifndef TT_TOP_H
#define TT_TOP_H

#include <curses.h>
#include <stdio.h>
#include "hist.h"
#include "outputs.h"

#define WIN_SECS	10
#define SPARK_MAX	32
#define MARK_W		14	/* " STALL 1.23s" */
#define RECENT_MAX	16	/* stalls kept for the pane, the newest */
#define RECENT_SHOWN	5	/* ... and shown, on a screen of 30 rows or more */
#define RECENT_TEXT	1024	/* a line's room: more than a terminal's width */

enum sort_key { SORT_AGE, SORT_TOKENS, SORT_ITL, SORT_CONN, SORT_PATH };

struct slot {
	uint64_t sec;
	struct hist ttft, itl, tpot;
	uint64_t chunks;
	uint64_t requests, errors;
};

struct row {
	char conn[REQ_ADDR_MAX];
	char path[48];
	char model[32];
	const char *state;
	uint64_t age_ns;
	uint64_t tokens;
	uint64_t last_itl;	/* 0: none yet */
	uint64_t gaps[SPARK_MAX];
	int ngaps;		/* the last ngaps gaps, oldest first */
	uint64_t stall_thr;	/* gaps above it are stalls; 0: not enough gaps to say */
	uint64_t silent_ns;	/* a stall in progress: since the last token */
	uint32_t stalls;	/* stalls so far in this stream */
	bool streaming;
};

/* A stall for the pane: which one (its stream and gap), when it ended, its line. */
struct recent {
	uint64_t conn_id, seq, t_begin;
	uint64_t t_end;
	char text[RECENT_TEXT];	/* "stall 1.50s after token 19: ...", escaped */
};

/* The rolling window, merged for a draw. */
struct window {
	uint64_t chunks, requests, errors;
	double secs;
	int streaming;		/* rows streaming */
};

enum color { C_TITLE = 1, C_STALL, C_DIM };

struct out_top {
	struct output_opts o;
	struct output text;	/* the final summary, once the screen is gone */
	SCREEN *scr;
	bool active;
	bool utf8, colors;
	int saved_stderr;
	FILE *errlog;
	char last_err[160];
	long errlog_seen;

	struct ready_info ri;
	bool ready;
	uint64_t t_ready, next_draw;
	struct slot slots[WIN_SECS];
	struct hist ttft, itl, tpot;	/* the window, merged for a draw */
	uint64_t requests, errors, aborted, tokens, lost, left_out;

	enum sort_key sort;
	bool reverse;
	bool quit;		/* 'q' pressed: the next flush asks the main loop to stop */
	struct row *rows;
	int nrows, rows_unshown;	/* in flight: rows, and those past ROWS_MAX */
	size_t rows_cap;
	struct recent recent[RECENT_MAX];	/* newest first */
	int nrecent;
	uint64_t now;
};

/* Draw the screen: win and t->rows gathered, t->rows sorted. */
void top__draw(struct out_top *t, const struct window *win);
/* A row of text at y, cut to the screen (ASCII: a byte is a cell). */
void top__line(int y, const char *s);

#endif /* TT_TOP_H */
