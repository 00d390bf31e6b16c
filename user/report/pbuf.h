/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A small protocol-buffers writer (and reader) for the few messages tokentrace sends: the
 * wire format only (varints, fixed 32/64-bit, length-delimited), no schema, no reflection.
 *
 * The writer appends to one growing buffer, bounded by a maximum size: past it, or out of
 * memory, the buffer is marked failed and every later write is a no-op, so a caller checks
 * once at the end (pbuf__ok). A nested message is opened (its tag written and room kept for
 * its length) and closed (the length written in as few bytes as it needs). Strings are sent
 * as valid UTF-8, as proto3 requires of a string field (a receiver rejects the whole message
 * otherwise): what comes from the wire is cleaned on the way (pbuf__str).
 *
 * The reader walks one message's fields, for the exporter's responses and for tests.
 */
#ifndef TT_PBUF_H
#define TT_PBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PBUF_DEPTH_MAX	16

enum pbuf_wire {
	PB_VARINT = 0,
	PB_I64 = 1,
	PB_LEN = 2,
	PB_I32 = 5,
};

struct pbuf {
	uint8_t *buf;
	size_t len, cap;
	size_t max;		/* the bound on len */
	bool err;		/* out of memory, past max or unbalanced: not a whole message */
	int depth;
	size_t open[PBUF_DEPTH_MAX];	/* where each open message's body starts */
};

void pbuf__init(struct pbuf *b, size_t max);
void pbuf__free(struct pbuf *b);
/* Empty again (the memory kept), errors cleared. */
void pbuf__reset(struct pbuf *b);
/* Every write went in and every nested message is closed. */
static inline bool pbuf__ok(const struct pbuf *b)
{
	return !b->err && !b->depth;
}

/* Fields; each writes its tag. Zero values are written too: proto3 readers take both. */
void pbuf__uint(struct pbuf *b, uint32_t field, uint64_t v);	/* uint32/64, enum, bool */
void pbuf__int(struct pbuf *b, uint32_t field, int64_t v);	/* int64 (two's complement) */
void pbuf__fixed32(struct pbuf *b, uint32_t field, uint32_t v);
void pbuf__fixed64(struct pbuf *b, uint32_t field, uint64_t v);	/* fixed64 and sfixed64 */
void pbuf__double(struct pbuf *b, uint32_t field, double v);
void pbuf__bytes(struct pbuf *b, uint32_t field, const void *p, size_t n);
/*
 * A string field from s[0..n) (stopping at a NUL): valid UTF-8 is kept; each invalid byte
 * becomes U+FFFD, and C0, DEL, C1 and the bidirectional controls the text "\uNNNN", so a
 * receiver never fails the message and a log that prints it carries no control sequence.
 */
void pbuf__str(struct pbuf *b, uint32_t field, const char *s, size_t n);
/* A NUL-terminated string known to be clean (our own names): copied as it is. */
void pbuf__cstr(struct pbuf *b, uint32_t field, const char *s);
/* Packed repeated fields. */
void pbuf__packed_fixed64(struct pbuf *b, uint32_t field, const uint64_t *v, size_t n);
void pbuf__packed_double(struct pbuf *b, uint32_t field, const double *v, size_t n);

/* A nested message: open, write its fields, close. */
void pbuf__open(struct pbuf *b, uint32_t field);
void pbuf__close(struct pbuf *b);
/* Bytes encoded elsewhere (a message's body, or whole fields), appended as they are. */
void pbuf__raw(struct pbuf *b, const void *p, size_t n);
/* A field holding bytes encoded elsewhere as its message. */
void pbuf__msg(struct pbuf *b, uint32_t field, const void *p, size_t n);

/* Where the buffer ends now, and back there (a field that did not fit, taken out whole). */
static inline size_t pbuf__mark(const struct pbuf *b)
{
	return b->len;
}
void pbuf__rewind(struct pbuf *b, size_t mark);

/* ---------------------------------------------------------------- reader */

struct pbuf_reader {
	const uint8_t *p, *end;
	bool err;		/* a truncated or malformed field: the walk stopped */
};

struct pbuf_field {
	uint32_t num;
	enum pbuf_wire wire;
	uint64_t v;		/* PB_VARINT, PB_I64, PB_I32 */
	const uint8_t *data;	/* PB_LEN */
	size_t len;
};

static inline void pbuf_reader__init(struct pbuf_reader *r, const void *p, size_t n)
{
	r->p = p;
	r->end = r->p + n;
	r->err = false;
}
/* The next field: false at the end or on an error (r->err). */
bool pbuf_reader__next(struct pbuf_reader *r, struct pbuf_field *f);
/* A PB_LEN field's bytes as a message to walk. */
static inline void pbuf_reader__sub(struct pbuf_reader *sub, const struct pbuf_field *f)
{
	pbuf_reader__init(sub, f->data, f->len);
}

#endif /* TT_PBUF_H */
