// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Allocation-free JSON scanner: one pass, an explicit stack of open containers (no recursion,
 * so hostile nesting cannot blow the C stack), a visitor called for every value.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "jscan.h"

/* Open container kinds, one per nesting level. */
enum { CT_OBJECT, CT_ARRAY };

struct walker {
	const char *s;
	size_t len;
	size_t pos;
	int open;				/* containers open */
	unsigned char kind[JSCAN_DEPTH_MAX];	/* CT_* of each open container */
	struct jscan_path path;
	jscan_visit_fn visit;
	void *ud;
};

enum scan { SCAN_OK, SCAN_CUT, SCAN_ERROR };

static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static inline __attribute__((always_inline)) void skip_ws(struct walker *w)
{
	while (w->pos < w->len && is_ws(w->s[w->pos]))
		w->pos++;
}

#define ONES8	0x0101010101010101ULL
#define HIGH8	0x8080808080808080ULL

/*
 * The bytes of x that end a run of plain string bytes: '"', '\\' or a control character.
 * Nonzero iff x holds one; the lowest flagged byte is the first such (a borrow can only flag a
 * byte above a real hit). Lets scan_string() step over eight plain bytes at a time.
 */
static inline uint64_t string_stops8(uint64_t x)
{
	uint64_t q = x ^ (ONES8 * '"'), b = x ^ (ONES8 * '\\');

	return (((q - ONES8) & ~q) | ((b - ONES8) & ~b) | ((x - ONES8 * 0x20) & ~x)) & HIGH8;
}

/*
 * w->pos is just past the opening quote. On SCAN_OK w->pos is past the closing quote and
 * *end is the index of that quote; on SCAN_CUT the text ended inside the string.
 */
static enum scan scan_string(struct walker *w, size_t *end)
{
	/* a cut string runs to the end of the text, whatever escape the cut fell in */
	*end = w->len;
	while (w->pos < w->len) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		if (w->len - w->pos >= 8) {
			uint64_t x, m;

			memcpy(&x, w->s + w->pos, 8);
			m = string_stops8(x);
			if (!m) {
				w->pos += 8;
				continue;
			}
			w->pos += (size_t)__builtin_ctzll(m) / 8;
		}
#endif
		unsigned char c = (unsigned char)w->s[w->pos];

		if (c == '"') {
			*end = w->pos++;
			return SCAN_OK;
		}
		/* RFC 8259: control characters must be escaped; a raw one means this is not JSON */
		if (c < 0x20)
			return SCAN_ERROR;
		if (c != '\\') {
			w->pos++;
			continue;
		}
		if (++w->pos >= w->len)
			return SCAN_CUT;
		switch (w->s[w->pos]) {
		case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
			w->pos++;
			break;
		case 'u':
			w->pos++;
			for (int i = 0; i < 4; i++, w->pos++) {
				if (w->pos >= w->len)
					return SCAN_CUT;
				if (hexval(w->s[w->pos]) < 0)
					return SCAN_ERROR;
			}
			break;
		default:
			return SCAN_ERROR;
		}
	}
	return SCAN_CUT;
}

/*
 * -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?  On SCAN_CUT the text ended inside the
 * number; *complete then says whether what we have is already a whole number.
 */
static enum scan scan_number(struct walker *w, bool *complete)
{
	const char *s = w->s;
	size_t n = w->len;

	*complete = false;
	if (w->pos < n && s[w->pos] == '-')
		w->pos++;
	if (w->pos >= n)
		return SCAN_CUT;
	if (s[w->pos] == '0') {
		w->pos++;
	} else if (is_digit(s[w->pos])) {
		while (w->pos < n && is_digit(s[w->pos]))
			w->pos++;
	} else {
		return SCAN_ERROR;
	}
	if (w->pos < n && s[w->pos] == '.') {
		if (++w->pos >= n)
			return SCAN_CUT;
		if (!is_digit(s[w->pos]))
			return SCAN_ERROR;
		while (w->pos < n && is_digit(s[w->pos]))
			w->pos++;
	}
	if (w->pos < n && (s[w->pos] == 'e' || s[w->pos] == 'E')) {
		if (++w->pos >= n)
			return SCAN_CUT;
		if (s[w->pos] == '+' || s[w->pos] == '-')
			if (++w->pos >= n)
				return SCAN_CUT;
		if (!is_digit(s[w->pos]))
			return SCAN_ERROR;
		while (w->pos < n && is_digit(s[w->pos]))
			w->pos++;
	}
	*complete = true;
	return w->pos < n ? SCAN_OK : SCAN_CUT;
}

/* true, false, null: a cut literal is not reported (nothing is guessed), a wrong one is an error */
static enum scan scan_literal(struct walker *w, const char *lit)
{
	size_t l = strlen(lit);

	for (size_t i = 0; i < l; i++, w->pos++) {
		if (w->pos >= w->len)
			return SCAN_CUT;
		if (w->s[w->pos] != lit[i])
			return SCAN_ERROR;
	}
	return SCAN_OK;
}

static int report(struct walker *w, enum jscan_type type, const char *raw, size_t raw_len,
		  bool cut)
{
	struct jscan_value v = { .type = type, .raw = raw, .raw_len = raw_len, .cut = cut };

	w->path.depth = w->open;
	return w->visit ? w->visit(w->ud, &w->path, &v) : 0;
}

/* What the walk expects next; a step returns STEP_ON to go on, or how the walk ended. */
enum wstate { ST_VALUE, ST_KEY, ST_AFTER };
#define STEP_ON	(-1)

static int cut_or_error(enum scan r)
{
	return r == SCAN_CUT ? JSCAN_CUT : JSCAN_ERROR;
}

/* After a value: a comma, or the end of the container it was in. */
static int step_after(struct walker *w, char c, enum wstate *st)
{
	if (w->open == 0)
		return JSCAN_ERROR;	/* trailing garbage */
	if (c == ',') {
		w->pos++;
		if (w->kind[w->open - 1] == CT_OBJECT) {
			*st = ST_KEY;
		} else {
			w->path.step[w->open - 1].index++;
			*st = ST_VALUE;
		}
		return STEP_ON;
	}
	if (c == (w->kind[w->open - 1] == CT_OBJECT ? '}' : ']')) {
		w->pos++;
		w->open--;
		return STEP_ON;
	}
	return JSCAN_ERROR;
}

/* A member's key and its colon. */
static int step_key(struct walker *w, char c, enum wstate *st)
{
	size_t start, end;
	enum scan r;

	if (c != '"')
		return JSCAN_ERROR;
	start = ++w->pos;
	r = scan_string(w, &end);
	if (r != SCAN_OK)
		return cut_or_error(r);
	skip_ws(w);
	if (w->pos >= w->len)
		return JSCAN_CUT;
	if (w->s[w->pos++] != ':')
		return JSCAN_ERROR;
	w->path.step[w->open - 1] = (struct jscan_step){
		.key = w->s + start, .key_len = end - start, .index = -1,
	};
	*st = ST_VALUE;
	return STEP_ON;
}

/* An object or an array opens. */
static int step_open(struct walker *w, char c, enum wstate *st)
{
	bool obj = c == '{';

	/* members of this container would sit deeper than a path can say */
	if (w->open >= JSCAN_DEPTH_MAX)
		return JSCAN_ERROR;
	if (report(w, obj ? JS_OBJECT : JS_ARRAY, w->s + w->pos, obj ? 1 : 0, false))
		return JSCAN_STOPPED;
	w->pos++;
	w->kind[w->open++] = obj ? CT_OBJECT : CT_ARRAY;
	skip_ws(w);
	if (w->pos >= w->len)
		return JSCAN_CUT;
	if (w->s[w->pos] == (obj ? '}' : ']')) {
		w->pos++;
		w->open--;
		*st = ST_AFTER;
	} else if (obj) {
		*st = ST_KEY;
	} else {
		w->path.step[w->open - 1] = (struct jscan_step){ .key = NULL, .index = 0 };
		*st = ST_VALUE;
	}
	return STEP_ON;
}

static int step_string(struct walker *w)
{
	size_t start = ++w->pos, end;
	enum scan r = scan_string(w, &end);

	if (r == SCAN_ERROR)
		return JSCAN_ERROR;
	if (report(w, JS_STRING, w->s + start, end - start, r == SCAN_CUT))
		return JSCAN_STOPPED;
	return r == SCAN_CUT ? JSCAN_CUT : STEP_ON;
}

static int step_number(struct walker *w)
{
	size_t start = w->pos;
	bool complete;
	enum scan r = scan_number(w, &complete);

	if (r == SCAN_ERROR)
		return JSCAN_ERROR;
	/*
	 * A number running to the end of the text is whole only at top level; inside a
	 * container more digits may have followed.
	 */
	if (r == SCAN_CUT && complete && w->open == 0)
		r = SCAN_OK;
	if (report(w, JS_NUMBER, w->s + start, w->pos - start, r == SCAN_CUT))
		return JSCAN_STOPPED;
	return r == SCAN_CUT ? JSCAN_CUT : STEP_ON;
}

static int step_literal(struct walker *w, char c)
{
	size_t start = w->pos;
	enum jscan_type t;
	const char *lit;
	enum scan r;

	if (c == 't') {
		t = JS_TRUE;
		lit = "true";
	} else if (c == 'f') {
		t = JS_FALSE;
		lit = "false";
	} else if (c == 'n') {
		t = JS_NULL;
		lit = "null";
	} else {
		return JSCAN_ERROR;
	}
	r = scan_literal(w, lit);
	if (r != SCAN_OK)
		return cut_or_error(r);
	if (report(w, t, w->s + start, w->pos - start, false))
		return JSCAN_STOPPED;
	return STEP_ON;
}

/* A value: a container opens, or a scalar is reported whole (or cut, at the end). */
static int step_value(struct walker *w, char c, enum wstate *st)
{
	int r;

	if (c == '{' || c == '[')
		return step_open(w, c, st);
	if (c == '"')
		r = step_string(w);
	else if (c == '-' || is_digit(c))
		r = step_number(w);
	else
		r = step_literal(w, c);
	if (r == STEP_ON)
		*st = ST_AFTER;
	return r;
}

enum jscan_result jscan__walk(const char *text, size_t len, jscan_visit_fn visit, void *ud)
{
	struct walker w = { .s = text, .len = text ? len : 0, .visit = visit, .ud = ud };
	enum wstate st = ST_VALUE;
	int r;

	for (;;) {
		skip_ws(&w);
		if (w.pos >= w.len) {
			/* a complete top-level value followed by nothing but whitespace */
			return (st == ST_AFTER && w.open == 0) ? JSCAN_OK : JSCAN_CUT;
		}
		if (st == ST_AFTER)
			r = step_after(&w, w.s[w.pos], &st);
		else if (st == ST_KEY)
			r = step_key(&w, w.s[w.pos], &st);
		else
			r = step_value(&w, w.s[w.pos], &st);
		if (r != STEP_ON)
			return r;
	}
}

#define PATTERN_MAX	(2 * JSCAN_DEPTH_MAX)

static bool step_matches(const struct jscan_step *st, const char *pat)
{
	if (!st->key)
		return strcmp(pat, "*") == 0;
	return strlen(pat) == st->key_len && memcmp(pat, st->key, st->key_len) == 0;
}

/* Backtracking is fine: patterns are short literals written in our own code. */
static bool match_from(const struct jscan_path *path, int i, const char *const *pat, int np,
		       int j)
{
	while (j < np) {
		if (strcmp(pat[j], "**") == 0) {
			for (int k = i; k <= path->depth; k++)
				if (match_from(path, k, pat, np, j + 1))
					return true;
			return false;
		}
		if (i >= path->depth || !step_matches(&path->step[i], pat[j]))
			return false;
		i++;
		j++;
	}
	return i == path->depth;
}

bool jscan__path_match(const struct jscan_path *path, ...)
{
	const char *pat[PATTERN_MAX];
	const char *k;
	int np = 0;
	va_list ap;

	va_start(ap, path);
	while ((k = va_arg(ap, const char *)) != NULL) {
		if (np == PATTERN_MAX) {
			va_end(ap);
			return false;
		}
		pat[np++] = k;
	}
	va_end(ap);
	if (!path || path->depth < 0 || path->depth > JSCAN_DEPTH_MAX)
		return false;
	return match_from(path, 0, pat, np, 0);
}

bool jscan__key_is(const struct jscan_path *path, const char *key)
{
	const struct jscan_step *st;

	if (!path || path->depth <= 0 || path->depth > JSCAN_DEPTH_MAX || !key)
		return false;
	st = &path->step[path->depth - 1];
	return st->key && strlen(key) == st->key_len && memcmp(key, st->key, st->key_len) == 0;
}

/* Writes one decoded unit whole or not at all, so a cut never leaves half a UTF-8 sequence. */
struct sink {
	char *out;
	size_t cap;	/* bytes usable before the NUL */
	size_t n;	/* decoded length so far, cut or not */
	size_t w;	/* bytes written */
	bool full;
};

static void sink_put(struct sink *k, const char *b, size_t l)
{
	if (!k->full && k->w + l <= k->cap) {
		memcpy(k->out + k->w, b, l);
		k->w += l;
	} else {
		k->full = true;
	}
	k->n += l;
}

/* A run of one-byte units (ASCII): as many as fit, unlike sink_put()'s whole-or-nothing. */
static void sink_ascii(struct sink *k, const char *b, size_t l)
{
	size_t room = k->full ? 0 : k->cap - k->w, take = l < room ? l : room;

	if (take) {
		memcpy(k->out + k->w, b, take);
		k->w += take;
	}
	if (take < l)
		k->full = true;
	k->n += l;
}

static void sink_cp(struct sink *k, uint32_t cp)
{
	char b[4];
	size_t l;

	if (cp < 0x80) {
		b[0] = (char)cp;
		l = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | (cp >> 6));
		b[1] = (char)(0x80 | (cp & 0x3f));
		l = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | (cp >> 12));
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f));
		l = 3;
	} else {
		b[0] = (char)(0xf0 | (cp >> 18));
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[3] = (char)(0x80 | (cp & 0x3f));
		l = 4;
	}
	sink_put(k, b, l);
}

/* Four hex digits at s[i..i+3], or -1 when they are not all there (a cut) or not hex. */
static long hex4(const char *s, size_t len, size_t i)
{
	long v = 0;

	if (len < 4 || i > len - 4)
		return -1;
	for (int j = 0; j < 4; j++) {
		int h = hexval(s[i + j]);

		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

#define REPLACEMENT	0xfffd

/* s[j..len) could be the start of a "\\uXXXX" escape that the end of the text cut short */
static bool escape_cut_at(const char *s, size_t len, size_t j)
{
	if (len - j >= 6)
		return false;
	return j == len || (s[j] == '\\' && (j + 1 == len || s[j + 1] == 'u'));
}

/*
 * The code point of the \\uXXXX escape at s[*i] (a surrogate pair taken whole), with *i moved
 * past it; -1 when the text ends inside it, or before the low half of a pair in a cut string.
 */
static long decode_u(const char *s, size_t len, size_t *i, bool cut)
{
	long cp = hex4(s, len, *i + 2), lo = -1;
	size_t j = *i + 6;

	if (cp < 0)
		return -1;	/* cut: the scanner already refused bad hex */
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (j + 1 < len && s[j] == '\\' && s[j + 1] == 'u')
			lo = hex4(s, len, j + 2);
		if (lo >= 0xdc00 && lo <= 0xdfff) {
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			j += 6;
		} else if (cut && escape_cut_at(s, len, j)) {
			/* the low half may be past the cut: stop rather than guess */
			return -1;
		} else {
			cp = REPLACEMENT;	/* lone high surrogate */
		}
	} else if (cp >= 0xdc00 && cp <= 0xdfff) {
		cp = REPLACEMENT;	/* lone low surrogate */
	} else if (cp == 0) {
		/* out is a C string: an embedded NUL would silently cut it */
		cp = REPLACEMENT;
	}
	*i = j;
	return cp;
}

size_t jscan__string(const struct jscan_value *v, char *out, size_t outsz)
{
	struct sink k = { .out = out, .cap = outsz ? outsz - 1 : 0, .full = !out || !outsz };
	const char *s;
	size_t len, i = 0;

	if (!v || v->type != JS_STRING || !v->raw) {
		if (out && outsz)
			out[0] = '\0';
		return 0;
	}
	s = v->raw;
	len = v->raw_len;
	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		size_t run = i;

		while (run < len && (unsigned char)s[run] < 0x80 && s[run] != '\\')
			run++;
		if (run > i) {
			sink_ascii(&k, s + i, run - i);
			i = run;
			continue;
		}
		if (c != '\\') {
			/* a raw UTF-8 sequence is one unit: its lead byte and continuation bytes */
			size_t l = 1;

			if (c >= 0xc0) {
				size_t want = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;

				while (i + l < len && l < want &&
				       ((unsigned char)s[i + l] & 0xc0) == 0x80)
					l++;
				/* a sequence the cut split is not output half-way */
				if (v->cut && l < want && i + l == len)
					break;
			}
			sink_put(&k, s + i, l);
			i += l;
			continue;
		}
		if (i + 1 >= len)
			break;	/* cut inside an escape: nothing is guessed */
		switch (s[i + 1]) {
		case 'b': sink_cp(&k, '\b'); break;
		case 'f': sink_cp(&k, '\f'); break;
		case 'n': sink_cp(&k, '\n'); break;
		case 'r': sink_cp(&k, '\r'); break;
		case 't': sink_cp(&k, '\t'); break;
		case 'u': {
			long cp = decode_u(s, len, &i, v->cut);

			if (cp < 0)
				goto done;
			sink_cp(&k, (uint32_t)cp);
			continue;
		}
		default:	/* '"', '\\', '/' stand for themselves; others were rejected */
			sink_put(&k, s + i + 1, 1);
			break;
		}
		i += 2;
	}
done:
	if (out && outsz)
		out[k.w] = '\0';
	return k.n;
}

bool jscan__int(const struct jscan_value *v, long long *out)
{
	const char *s;
	size_t i = 0, len;
	bool neg = false;
	unsigned long long acc = 0;
	unsigned long long lim;

	if (!v || v->type != JS_NUMBER || !v->raw || v->raw_len == 0)
		return false;
	s = v->raw;
	len = v->raw_len;
	if (s[0] == '-') {
		neg = true;
		i = 1;
	}
	if (i >= len)
		return false;
	lim = neg ? (unsigned long long)LLONG_MAX + 1 : (unsigned long long)LLONG_MAX;
	for (; i < len; i++) {
		unsigned d;

		if (!is_digit(s[i]))
			return false;	/* a fraction or an exponent: not an integer as sent */
		d = (unsigned)(s[i] - '0');
		if (acc > (lim - d) / 10)
			return false;
		acc = acc * 10 + d;
	}
	if (neg)
		*out = acc == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(long long)acc;
	else
		*out = (long long)acc;
	return true;
}
