// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "json_writer.h"
#include "util.h"

void jw__init(struct jw *w)
{
	memset(w, 0, sizeof(*w));
	w->first[0] = true;
}

void jw__free(struct jw *w)
{
	buf__release(&w->b);
	memset(w, 0, sizeof(*w));
}

void jw__reset(struct jw *w)
{
	buf__reset(&w->b);
	w->depth = 0;
	w->first[0] = true;
	w->after_key = false;
	w->oom = false;
}

static void put(struct jw *w, const char *s, size_t n)
{
	if (!w->oom && buf__append(&w->b, s, n, SIZE_MAX) < n)
		w->oom = true;	/* the line is dropped whole when it is written */
}

void jw__raw(struct jw *w, const char *s, size_t n)
{
	put(w, s, n);
}

static void putc_(struct jw *w, char c)
{
	put(w, &c, 1);
}

/* Separator before a value: a comma between members, nothing right after a key. */
static void sep(struct jw *w)
{
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if (!w->first[w->depth])
		putc_(w, ',');
	w->first[w->depth] = false;
}

static void open_(struct jw *w, char c)
{
	sep(w);
	putc_(w, c);
	if (w->depth < JW_DEPTH_MAX - 1)
		w->depth++;
	w->first[w->depth] = true;
}

static void close_(struct jw *w, char c)
{
	putc_(w, c);
	if (w->depth > 0)
		w->depth--;
}

void jw__obj_open(struct jw *w) { open_(w, '{'); }
void jw__obj_close(struct jw *w) { close_(w, '}'); }
void jw__arr_open(struct jw *w) { open_(w, '['); }
void jw__arr_close(struct jw *w) { close_(w, ']'); }

/*
 * The JSON escaping of every string tokentrace writes as JSON (--json, --perfetto): quote,
 * backslash and C0 as JSON requires; DEL, C1 (U+0080-U+009F: CSI and friends), the line
 * separators, the bidi overrides and the invisible code points (Unicode TAG characters and
 * the other Default_Ignorable ones: util.h cp_is_invisible) as \uNNNN too, past U+FFFF as
 * their UTF-16 surrogate pair, so that what a client put in a path reaches no terminal raw
 * through a log viewer and a JSON reader still gets the same string; invalid UTF-8 as U+FFFD.
 */
/* \uNNNN, or a surrogate pair past the BMP */
static void put_u(struct jw *w, uint32_t cp)
{
	char esc[16];

	if (cp > 0xffff) {
		cp -= 0x10000;
		snprintf(esc, sizeof(esc), "\\u%04x\\u%04x", 0xd800u + (unsigned int)(cp >> 10),
			 0xdc00u + (unsigned int)(cp & 0x3ff));
		put(w, esc, 12);
		return;
	}
	snprintf(esc, sizeof(esc), "\\u%04x", (unsigned int)cp);
	put(w, esc, 6);
}

static void put_escaped(struct jw *w, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	char esc[12];
	size_t i = 0, run = 0, l;
	uint32_t cp;

	putc_(w, '"');
	while (i < n) {
		unsigned char c = p[i];

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			run++;
			i++;
			continue;
		}
		put(w, (const char *)p + i - run, run);
		run = 0;
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = c;
			put(w, esc, 2);
			i++;
		} else if (c == '\n') {
			put(w, "\\n", 2);
			i++;
		} else if (c == '\r') {
			put(w, "\\r", 2);
			i++;
		} else if (c == '\t') {
			put(w, "\\t", 2);
			i++;
		} else if (!(l = utf8_seq(p + i, n - i, &cp))) {
			put(w, "\\ufffd", 6);
			i++;
		} else if (cp_is_control(cp) || cp_is_invisible(cp)) {
			put_u(w, cp);
			i += l;
		} else {
			put(w, (const char *)p + i, l);
			i += l;
		}
	}
	put(w, (const char *)p + i - run, run);
	putc_(w, '"');
}

void jw__key(struct jw *w, const char *key)
{
	sep(w);
	put_escaped(w, key, strlen(key));
	putc_(w, ':');
	w->after_key = true;
}

void jw__strn(struct jw *w, const char *s, size_t n)
{
	sep(w);
	put_escaped(w, s, n);
}

void jw__str(struct jw *w, const char *s)
{
	if (!s) {
		jw__null(w);
		return;
	}
	jw__strn(w, s, strlen(s));
}

void jw__u64(struct jw *w, uint64_t v)
{
	char b[24];

	sep(w);
	put(w, b, snprintf(b, sizeof(b), "%" PRIu64, v));
}

void jw__i64(struct jw *w, int64_t v)
{
	char b[24];

	sep(w);
	put(w, b, snprintf(b, sizeof(b), "%" PRId64, v));
}

void jw__f64(struct jw *w, double v)
{
	char b[32];

	if (!isfinite(v)) {
		jw__null(w);
		return;
	}
	sep(w);
	put(w, b, snprintf(b, sizeof(b), "%.6g", v));
}

void jw__bool(struct jw *w, bool v)
{
	sep(w);
	if (v)
		put(w, "true", 4);
	else
		put(w, "false", 5);
}

void jw__null(struct jw *w)
{
	sep(w);
	put(w, "null", 4);
}

void jw__kstr(struct jw *w, const char *k, const char *s) { jw__key(w, k); jw__str(w, s); }
void jw__ku64(struct jw *w, const char *k, uint64_t v) { jw__key(w, k); jw__u64(w, v); }
void jw__ki64(struct jw *w, const char *k, int64_t v) { jw__key(w, k); jw__i64(w, v); }
void jw__kf64(struct jw *w, const char *k, double v) { jw__key(w, k); jw__f64(w, v); }
void jw__kbool(struct jw *w, const char *k, bool v) { jw__key(w, k); jw__bool(w, v); }
void jw__knull(struct jw *w, const char *k) { jw__key(w, k); jw__null(w); }

int jw__flush_line(struct jw *w, FILE *f)
{
	int err = 0;

	if (w->oom)
		err = -1;
	else if (fwrite(jw__data(w), 1, w->b.len, f) != w->b.len || fputc('\n', f) == EOF)
		err = -1;
	jw__reset(w);
	return err;
}

const char *jw__data(const struct jw *w)
{
	return w->b.data ? (const char *)w->b.data : "";
}
