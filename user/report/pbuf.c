// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Protocol-buffers wire format, written and read (pbuf.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vec.h"
#include "pbuf.h"
#include "util.h"

/* a length written before its message is known: room for up to 2^35 */
#define LEN_ROOM	5

void pbuf__init(struct pbuf *b, size_t max)
{
	memset(b, 0, sizeof(*b));
	b->max = max;
}

void pbuf__free(struct pbuf *b)
{
	free(b->buf);
	b->buf = NULL;
	b->len = b->cap = 0;
}

void pbuf__reset(struct pbuf *b)
{
	b->len = 0;
	b->err = false;
	b->depth = 0;
}

static bool room(struct pbuf *b, size_t n)
{
	if (b->err)
		return false;
	if (n > b->max || b->len > b->max - n ||
	    VEC_RESERVE(b->buf, &b->cap, b->len + n, b->max)) {
		b->err = true;
		return false;
	}
	return true;
}

static size_t varint_put(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static void varint(struct pbuf *b, uint64_t v)
{
	uint8_t lb[10];
	size_t n = varint_put(lb, v);

	if (room(b, n)) {
		memcpy(b->buf + b->len, lb, n);
		b->len += n;
	}
}

static void tag(struct pbuf *b, uint32_t field, enum pbuf_wire w)
{
	varint(b, (uint64_t)field << 3 | w);
}

static void le(struct pbuf *b, uint64_t v, int bytes)
{
	if (!room(b, bytes))
		return;
	for (int i = 0; i < bytes; i++)
		b->buf[b->len++] = (uint8_t)(v >> (8 * i));
}

void pbuf__raw(struct pbuf *b, const void *p, size_t n)
{
	if (n && room(b, n)) {
		memcpy(b->buf + b->len, p, n);
		b->len += n;
	}
}

void pbuf__uint(struct pbuf *b, uint32_t field, uint64_t v)
{
	tag(b, field, PB_VARINT);
	varint(b, v);
}

void pbuf__int(struct pbuf *b, uint32_t field, int64_t v)
{
	tag(b, field, PB_VARINT);
	varint(b, (uint64_t)v);
}

void pbuf__fixed32(struct pbuf *b, uint32_t field, uint32_t v)
{
	tag(b, field, PB_I32);
	le(b, v, 4);
}

void pbuf__fixed64(struct pbuf *b, uint32_t field, uint64_t v)
{
	tag(b, field, PB_I64);
	le(b, v, 8);
}

static uint64_t double_bits(double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	return u;
}

void pbuf__double(struct pbuf *b, uint32_t field, double v)
{
	pbuf__fixed64(b, field, double_bits(v));
}

void pbuf__bytes(struct pbuf *b, uint32_t field, const void *p, size_t n)
{
	tag(b, field, PB_LEN);
	varint(b, n);
	pbuf__raw(b, p, n);
}

void pbuf__msg(struct pbuf *b, uint32_t field, const void *p, size_t n)
{
	pbuf__bytes(b, field, p, n);
}

void pbuf__cstr(struct pbuf *b, uint32_t field, const char *s)
{
	pbuf__bytes(b, field, s, strlen(s));
}

void pbuf__str(struct pbuf *b, uint32_t field, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, l;
	uint32_t cp;
	char esc[8];

	n = strnlen(s, n);
	pbuf__open(b, field);
	while (i < n && !b->err) {
		l = utf8_seq(p + i, n - i, &cp);
		if (!l) {
			pbuf__raw(b, "\xef\xbf\xbd", 3);	/* U+FFFD */
			i++;
			continue;
		}
		if (cp < 0x20 || cp == 0x7f || cp_is_control(cp)) {
			snprintf(esc, sizeof(esc), "\\u%04x", (unsigned int)cp);
			pbuf__raw(b, esc, 6);
		} else {
			pbuf__raw(b, p + i, l);
		}
		i += l;
	}
	pbuf__close(b);
}

void pbuf__packed_fixed64(struct pbuf *b, uint32_t field, const uint64_t *v, size_t n)
{
	tag(b, field, PB_LEN);
	varint(b, n * 8);
	for (size_t i = 0; i < n; i++)
		le(b, v[i], 8);
}

void pbuf__packed_double(struct pbuf *b, uint32_t field, const double *v, size_t n)
{
	tag(b, field, PB_LEN);
	varint(b, n * 8);
	for (size_t i = 0; i < n; i++)
		le(b, double_bits(v[i]), 8);
}

void pbuf__open(struct pbuf *b, uint32_t field)
{
	if (b->depth >= PBUF_DEPTH_MAX) {
		b->err = true;
		return;
	}
	tag(b, field, PB_LEN);
	if (!room(b, LEN_ROOM))
		return;
	b->len += LEN_ROOM;
	b->open[b->depth++] = b->len;
}

void pbuf__close(struct pbuf *b)
{
	size_t start, n, ln;
	uint8_t lb[10];

	if (!b->depth) {
		b->err = true;
		return;
	}
	start = b->open[--b->depth];
	if (b->err)
		return;
	n = b->len - start;
	ln = varint_put(lb, n);
	if (ln > LEN_ROOM) {
		b->err = true;
		return;
	}
	/* the body moves back over the room its length did not need */
	memcpy(b->buf + start - LEN_ROOM, lb, ln);
	memmove(b->buf + start - LEN_ROOM + ln, b->buf + start, n);
	b->len -= LEN_ROOM - ln;
}

void pbuf__rewind(struct pbuf *b, size_t mark)
{
	if (mark <= b->len)
		b->len = mark;
	b->err = false;
	/* messages opened after the mark are gone with it */
	while (b->depth && b->open[b->depth - 1] > mark)
		b->depth--;
}

/* ---------------------------------------------------------------- reader */

static bool get_varint(struct pbuf_reader *r, uint64_t *v)
{
	uint64_t x = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t c;

		if (r->p >= r->end)
			return false;
		c = *r->p++;
		x |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

static bool get_le(struct pbuf_reader *r, int bytes, uint64_t *v)
{
	if (r->end - r->p < bytes)
		return false;
	*v = 0;
	for (int i = 0; i < bytes; i++)
		*v |= (uint64_t)r->p[i] << (8 * i);
	r->p += bytes;
	return true;
}

bool pbuf_reader__next(struct pbuf_reader *r, struct pbuf_field *f)
{
	uint64_t key, n;
	bool ok;

	if (r->err || r->p >= r->end)
		return false;
	memset(f, 0, sizeof(*f));
	if (!get_varint(r, &key) || !(key >> 3) || key >> 3 > UINT32_MAX)
		goto bad;
	f->num = (uint32_t)(key >> 3);
	f->wire = key & 7;
	switch (f->wire) {
	case PB_VARINT:
		ok = get_varint(r, &f->v);
		break;
	case PB_I64:
		ok = get_le(r, 8, &f->v);
		break;
	case PB_I32:
		ok = get_le(r, 4, &f->v);
		break;
	case PB_LEN:
		ok = get_varint(r, &n) && n <= (uint64_t)(r->end - r->p);
		if (ok) {
			f->data = r->p;
			f->len = n;
			r->p += n;
		}
		break;
	default:
		ok = false;	/* groups: never in OTLP */
	}
	if (ok)
		return true;
bad:
	r->err = true;
	return false;
}
