// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Server-Sent Events parser. Data bytes are appended straight from the fed buffer into one
 * data buffer that grows on demand up to SSE_DATA_MAX and is kept across events: no line
 * buffer, no allocation per event.
 */
#include <stdlib.h>
#include <string.h>

#include "sse.h"
#include "vec.h"

/* first allocation: most token events are a few hundred bytes */
#define NAME_MAX_LEN	8	/* longest field name we recognize ("retry") fits */

enum line_state {
	L_START,	/* at the start of a line */
	L_NAME,		/* in a field name */
	L_VALUE_START,	/* just past the ':': one space is dropped here */
	L_VALUE,	/* in a field value */
	L_COMMENT,	/* in a ':' line */
};

enum field { F_OTHER, F_DATA, F_EVENT };

struct sse_parser {
	struct sse_cb cb;
	void *ud;
	struct sse_stats stats;

	enum line_state ls;
	enum field field;
	char name[NAME_MAX_LEN];
	size_t name_len;	/* may exceed the buffer: such a name is no field we know */
	bool after_cr;		/* a CR ended the last line: an LF next belongs to it */
	int bom;		/* BOM bytes matched at the start of the stream, -1 once past it */
	bool resync;		/* a gap was fed and no line end seen since */

	/* the event being built */
	bool has_data;
	bool has_fields;	/* any field line (data or not) since the last blank line */
	bool flagged;		/* a gap fell inside it, or it began before resync ended */
	char event[SSE_EVENT_MAX];
	size_t event_len;
	struct buf data;	/* grows up to SSE_DATA_MAX and its NUL */
	uint64_t data_total;
	bool data_cut;
};

static void clear_event(struct sse_parser *p)
{
	p->has_data = false;
	p->has_fields = false;
	p->flagged = false;
	p->event_len = 0;
	buf__reset(&p->data);
	p->data_total = 0;
	p->data_cut = false;
}

static void dispatch(struct sse_parser *p, bool force, bool truncated)
{
	struct sse_event ev;

	if (!p->has_data && !force) {
		if (p->has_fields)
			p->stats.empty++;
		clear_event(p);
		return;
	}
	p->event[p->event_len] = '\0';
	ev = (struct sse_event){
		.event = p->event,
		.data = p->data.data ? (const char *)p->data.data : "",
		.data_len = p->data.len,
		.data_total = p->data_total,
		.truncated = truncated || p->data_cut || p->flagged,
	};
	p->stats.events++;
	if (p->cb.on_event)
		p->cb.on_event(p->ud, &ev);
	clear_event(p);
}

static void data_append(struct sse_parser *p, const uint8_t *b, size_t n)
{
	p->data_total += n;
	/* out of memory: the bytes are counted, none kept */
	if (buf__append(&p->data, b, n, SSE_DATA_MAX) < n)
		p->data_cut = true;
}

static void name_done(struct sse_parser *p)
{
	p->field = F_OTHER;
	if (p->name_len == 4 && memcmp(p->name, "data", 4) == 0)
		p->field = F_DATA;
	else if (p->name_len == 5 && memcmp(p->name, "event", 5) == 0)
		p->field = F_EVENT;

	p->has_fields = true;
	if (p->resync)
		p->flagged = true;	/* this line may be the tail of one the gap cut */
	if (p->field == F_DATA) {
		/* data lines are joined with '\n': the separator goes before all but the first */
		if (p->has_data)
			data_append(p, (const uint8_t *)"\n", 1);
		p->has_data = true;
	} else if (p->field == F_EVENT) {
		p->event_len = 0;	/* the last "event:" line of a block wins */
	}
}

static void value_append(struct sse_parser *p, const uint8_t *b, size_t n)
{
	if (p->field == F_DATA) {
		data_append(p, b, n);
	} else if (p->field == F_EVENT) {
		size_t room = SSE_EVENT_MAX - 1 - p->event_len, take = n < room ? n : room;

		memcpy(p->event + p->event_len, b, take);
		p->event_len += take;
	}
}

/* A CR or LF at the end of a line in state p->ls. */
static void line_end(struct sse_parser *p, uint8_t c)
{
	switch (p->ls) {
	case L_START:
		dispatch(p, false, false);
		break;
	case L_NAME:
		name_done(p);	/* a line without ':' is a field with an empty value */
		break;
	default:
		break;
	}
	p->ls = L_START;
	p->after_cr = c == '\r';
	p->resync = false;
}

/*
 * The first CR or LF in d[i..len), or len. A token event's data line is ~200 bytes, and
 * memchr() (vectorized in libc) beats a byte loop with two compares a byte several times.
 * Looked for a window at a time, so a stream of CR-only (or LF-only) line ends never has the
 * other character sought to the end of a long buffer at every line.
 */
#define LINE_WINDOW	256

static size_t line_end_at(const uint8_t *d, size_t i, size_t len)
{
	while (i < len) {
		size_t n = len - i < LINE_WINDOW ? len - i : LINE_WINDOW;
		const uint8_t *lf = memchr(d + i, '\n', n);
		const uint8_t *cr = memchr(d + i, '\r', lf ? (size_t)(lf - (d + i)) : n);

		if (cr)
			return (size_t)(cr - d);
		if (lf)
			return (size_t)(lf - d);
		i += n;
	}
	return len;
}

static void parse(struct sse_parser *p, const uint8_t *d, size_t len)
{
	static const uint8_t bom[3] = { 0xef, 0xbb, 0xbf };
	size_t i = 0;

	while (i < len) {
		uint8_t c = d[i];

		if (p->after_cr) {
			p->after_cr = false;
			if (c == '\n') {
				i++;
				continue;
			}
		}
		if (p->bom >= 0) {
			/* a UTF-8 BOM at the very start of the stream is not part of a line */
			int n = p->bom;

			if (c == bom[n]) {
				i++;
				p->bom = n + 1 == 3 ? -1 : n + 1;
				continue;
			}
			p->bom = -1;
			if (n)
				parse(p, bom, (size_t)n);	/* not a BOM after all */
			continue;
		}

		switch (p->ls) {
		case L_START:
			if (c == '\r' || c == '\n') {
				line_end(p, c);
				i++;
			} else if (c == ':') {
				p->stats.comments++;
				if (p->cb.on_comment)
					p->cb.on_comment(p->ud);
				p->ls = L_COMMENT;
				i++;
			} else {
				p->ls = L_NAME;
				p->name_len = 0;
			}
			break;
		case L_NAME:
			if (c == '\r' || c == '\n') {
				line_end(p, c);
			} else if (c == ':') {
				name_done(p);
				p->ls = L_VALUE_START;
			} else {
				if (p->name_len < sizeof(p->name))
					p->name[p->name_len] = (char)c;
				p->name_len++;
			}
			i++;
			break;
		case L_VALUE_START:
			p->ls = L_VALUE;
			if (c == ' ')
				i++;
			break;
		case L_VALUE:
		case L_COMMENT: {
			size_t j = line_end_at(d, i, len);

			if (p->ls == L_VALUE && j > i)
				value_append(p, d + i, j - i);
			i = j;
			if (i < len) {
				line_end(p, d[i]);
				i++;
			}
			break;
		}
		}
	}
}

struct sse_parser *sse_parser__new(const struct sse_cb *cb, void *ud)
{
	struct sse_parser *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (cb)
		p->cb = *cb;
	p->ud = ud;
	sse_parser__reset(p);
	return p;
}

void sse_parser__free(struct sse_parser *p)
{
	if (!p)
		return;
	buf__release(&p->data);
	free(p);
}

/* Everything but the callbacks and the data buffer, which is kept for the next response. */
void sse_parser__reset(struct sse_parser *p)
{
	if (!p)
		return;
	memset(&p->stats, 0, sizeof(p->stats));
	p->ls = L_START;
	p->field = F_OTHER;
	p->name_len = 0;
	p->after_cr = false;
	p->bom = 0;
	p->resync = false;
	clear_event(p);
}

void sse_parser__feed(struct sse_parser *p, const uint8_t *data, size_t len)
{
	if (!p || !data)
		return;
	parse(p, data, len);
}

void sse_parser__gap(struct sse_parser *p, uint64_t len)
{
	if (!p || !len)
		return;
	p->stats.gaps++;
	p->bom = -1;
	p->after_cr = false;
	/*
	 * Servers write an event per send; a gap is the uncaptured tail of a send, so the event
	 * it fell in most likely ended inside it. Dispatch that event now, flagged, with the
	 * timestamp of the send that carried it, rather than merge it with the next send's
	 * event. A line fragment after the gap then parses as an unknown field and is dropped.
	 */
	if (p->has_fields || p->ls == L_NAME || p->ls == L_VALUE_START || p->ls == L_VALUE) {
		if (p->ls == L_NAME)
			name_done(p);
		dispatch(p, true, true);
	}
	p->ls = L_START;
	p->resync = true;
}

void sse_parser__end(struct sse_parser *p)
{
	if (!p)
		return;
	if (p->ls == L_NAME)
		name_done(p);
	if (p->has_data)
		dispatch(p, false, true);
	else
		clear_event(p);
	p->ls = L_START;
	p->after_cr = false;
	p->resync = false;
	p->bom = 0;
}

const struct sse_stats *sse_parser__stats(const struct sse_parser *p)
{
	return p ? &p->stats : NULL;
}
