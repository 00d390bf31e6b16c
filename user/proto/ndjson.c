// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Newline-delimited JSON splitter. Line bytes go straight from the fed buffer into one line
 * buffer that grows on demand up to NDJSON_LINE_MAX and is kept across lines.
 */
#include <stdlib.h>
#include <string.h>

#include "ndjson.h"
#include "vec.h"

struct ndjson_parser {
	struct ndjson_cb cb;
	void *ud;
	struct buf line;	/* the bytes kept, up to NDJSON_LINE_MAX and its NUL */
	uint64_t total;		/* bytes of the line, kept or not, held CR excluded */
	bool cut;		/* bytes were not kept */
	bool held_cr;		/* the last byte fed was a CR: a line end if an LF follows */
	bool flagged;		/* a gap fell inside this line, or it began right after one */
	bool after_gap;		/* a gap was fed and no line end seen since */
};

static void append(struct ndjson_parser *p, const uint8_t *b, size_t n)
{
	if (!n)
		return;
	if (p->after_gap)
		p->flagged = true;	/* may be the tail of a line the gap cut */
	p->total += n;
	/* out of memory: the bytes are counted, none kept */
	if (buf__append(&p->line, b, n, NDJSON_LINE_MAX) < n)
		p->cut = true;
}

static bool blank(const struct ndjson_parser *p)
{
	if (p->total != p->line.len)
		return false;
	for (size_t i = 0; i < p->line.len; i++)
		if (p->line.data[i] != ' ' && p->line.data[i] != '\t' && p->line.data[i] != '\r')
			return false;
	return true;
}

static void clear_line(struct ndjson_parser *p)
{
	buf__reset(&p->line);
	p->total = 0;
	p->cut = false;
	p->flagged = false;
}

static void emit(struct ndjson_parser *p, bool force)
{
	struct ndjson_line l;

	/* blank lines are separators, not records; a flagged empty one stands for lost bytes */
	if (blank(p) && !(force && p->flagged)) {
		clear_line(p);
		return;
	}
	l = (struct ndjson_line){
		.text = p->line.data ? (const char *)p->line.data : "",
		.len = p->line.len,
		.total = p->total,
		.truncated = p->cut || p->flagged,
	};
	if (p->cb.on_line)
		p->cb.on_line(p->ud, &l);
	clear_line(p);
}

struct ndjson_parser *ndjson_parser__new(const struct ndjson_cb *cb, void *ud)
{
	struct ndjson_parser *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (cb)
		p->cb = *cb;
	p->ud = ud;
	return p;
}

void ndjson_parser__free(struct ndjson_parser *p)
{
	if (!p)
		return;
	buf__release(&p->line);
	free(p);
}

void ndjson_parser__reset(struct ndjson_parser *p)
{
	if (!p)
		return;
	clear_line(p);
	p->held_cr = false;
	p->after_gap = false;
}

void ndjson_parser__feed(struct ndjson_parser *p, const uint8_t *data, size_t len)
{
	size_t i = 0;

	if (!p || !data)
		return;
	while (i < len) {
		const uint8_t *nl = memchr(data + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - data) : len;
		size_t n = end - i;

		if (p->held_cr) {
			p->held_cr = false;
			/* a CR not followed by LF was part of the line */
			if (n || !nl)
				append(p, (const uint8_t *)"\r", 1);
		}
		if (n && data[end - 1] == '\r') {
			/* "\r\n" ends a line like "\n"; a CR at the end of a feed waits to see */
			n--;
			if (!nl)
				p->held_cr = true;
		}
		append(p, data + i, n);
		if (!nl)
			break;
		emit(p, false);
		p->after_gap = false;
		i = end + 1;
	}
}

void ndjson_parser__gap(struct ndjson_parser *p, uint64_t len)
{
	if (!p || !len)
		return;
	/*
	 * A line per send: the gap is most likely the uncaptured tail of the line in progress,
	 * its "\n" included. End that line now, flagged, with the timestamp of its own send; the
	 * bytes after the gap up to the next "\n" may be another line's tail and are flagged too.
	 */
	if (p->held_cr) {
		p->held_cr = false;
		append(p, (const uint8_t *)"\r", 1);
	}
	if (p->total) {
		p->flagged = true;
		emit(p, true);
	}
	p->after_gap = true;
}

void ndjson_parser__end(struct ndjson_parser *p)
{
	if (!p)
		return;
	p->held_cr = false;	/* a CR right before the end is taken as a line end */
	emit(p, false);
	p->after_gap = false;
}
