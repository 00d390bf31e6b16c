/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --report FILE.html: the pieces. html.c keeps what the report shows as requests finish (a
 * bounded number of them, drawn; all of them counted) and writes the file at the end;
 * html_svg.c draws: the escaping of everything from the wire, the distributions, a request's
 * token timeline with its stalls.
 */
#ifndef TT_HTML_H
#define TT_HTML_H

#include <stdint.h>
#include <stdio.h>
#include "buckets.h"
#include "request.h"

#define HTML_COLS	960	/* a timeline's width in columns (px): tokens are drawn by column */
#define HTML_STALLS_MAX	32	/* stalls drawn and told per request; the rest counted */

struct html_stall {
	uint64_t b_ns, e_ns;		/* the gap, from the request's start */
	uint32_t after;			/* after token (1-based) */
	enum stall_cause cause;
	uint64_t part_ns[STALL_NR];
	char *explain;			/* stall__describe()'s line */
};

/* One request as the report draws it: what it said, and its tokens by column. */
struct html_req {
	uint64_t n;			/* its number in the report, from 1 */
	uint32_t pid;
	bool client, error;
	char comm[16], method[HTTP_METHOD_MAX], path[HTTP_PATH_MAX], model[CLS_STR_MAX];
	char request_id[HTTP_REQID_MAX];
	int status;
	const char *abort;		/* abort_reason_name(), NULL none */
	bool complete, lost, truncated;
	uint64_t t0_ns;			/* CLOCK_MONOTONIC: the timeline's 0 (first byte read) */
	uint64_t dur_ns;		/* the timeline's length */
	uint64_t start_ns;		/* TTFT starts here, from t0 */
	uint64_t first_ns;		/* the first token, from t0 (0: none) */
	uint64_t ttft_ns, tpot_ns, itl_p50_ns, itl_p99_ns, itl_max_ns;
	uint32_t chunks;
	uint64_t tokens;
	uint16_t col_tokens[HTML_COLS];	/* tokens sent in each column */
	uint64_t col_gap[HTML_COLS];	/* the longest gap that ended in each column, ns */
	struct html_stall st[HTML_STALLS_MAX];
	uint32_t nst, nst_total;
};

/* An exact histogram on a family of bucket bounds (buckets.h), as --metrics counts. */
struct html_hist {
	const struct family_buckets *b;
	uint64_t n[BUCKETS_MAX + 1];
	uint64_t count;
};

/* Text from the wire or a traced process, for HTML text and quoted attributes: <, >, &, ",
 * ' as entities, controls as the text \uNNNN, invalid UTF-8 as U+FFFD. */
void html__esc(FILE *f, const char *s, size_t n);
/* A distribution as an SVG bar chart, one bar per bucket, counted. */
void html__hist_svg(FILE *f, const char *id, const char *title, const struct html_hist *h);
/* A request: its heading, its timeline (class "timeline"; a rect of class "stall" per stall
 * drawn) and its stalls' lines (class "stall-line"). */
void html__request(FILE *f, const struct html_req *q);

#endif /* TT_HTML_H */
