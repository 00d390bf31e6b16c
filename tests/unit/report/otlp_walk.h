/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * For the OTLP tests: walking an encoded message by field numbers (otlp_proto.h), with the
 * reader of pbuf.h. A message is a struct pbuf_field (its data and len).
 */
#ifndef TT_OTLP_WALK_H
#define TT_OTLP_WALK_H

#include <string.h>
#include "otlp_proto.h"
#include "pbuf.h"

static inline struct pbuf_field pb_whole(const void *p, size_t n)
{
	struct pbuf_field f = { .wire = PB_LEN, .data = p, .len = n };

	return f;
}

/* the nth (from 0) field num of m */
static inline bool pb_get(struct pbuf_field m, uint32_t num, int nth, struct pbuf_field *out)
{
	struct pbuf_reader r;
	struct pbuf_field f;

	memset(out, 0, sizeof(*out));	/* written either way: the compiler sees it is */
	pbuf_reader__init(&r, m.data, m.len);
	while (pbuf_reader__next(&r, &f))
		if (f.num == num && nth-- == 0) {
			*out = f;
			return true;
		}
	return false;
}

static inline int pb_count(struct pbuf_field m, uint32_t num)
{
	struct pbuf_reader r;
	struct pbuf_field f;
	int n = 0;

	pbuf_reader__init(&r, m.data, m.len);
	while (pbuf_reader__next(&r, &f))
		n += f.num == num;
	return r.err ? -1 : n;
}

static inline bool pb_str_is(struct pbuf_field f, const char *s)
{
	return f.wire == PB_LEN && f.len == strlen(s) && !memcmp(f.data, s, f.len);
}

/* the AnyValue of key among m's repeated KeyValue field num */
static inline bool kv_find(struct pbuf_field m, uint32_t num, const char *key,
			   struct pbuf_field *value)
{
	struct pbuf_field kv, k;

	memset(value, 0, sizeof(*value));
	for (int i = 0; pb_get(m, num, i, &kv); i++)
		if (pb_get(kv, KV_KEY, 0, &k) && pb_str_is(k, key))
			return pb_get(kv, KV_VALUE, 0, value);
	return false;
}

static inline bool kv_str(struct pbuf_field m, uint32_t num, const char *key, char *out,
			  size_t sz)
{
	struct pbuf_field v, s;

	if (!kv_find(m, num, key, &v) || !pb_get(v, ANY_STRING, 0, &s) || s.len >= sz)
		return false;
	memcpy(out, s.data, s.len);
	out[s.len] = '\0';
	return true;
}

static inline bool kv_int(struct pbuf_field m, uint32_t num, const char *key, int64_t *out)
{
	struct pbuf_field v, i;

	if (!kv_find(m, num, key, &v) || !pb_get(v, ANY_INT, 0, &i) || i.wire != PB_VARINT)
		return false;
	*out = (int64_t)i.v;
	return true;
}

static inline bool kv_bool(struct pbuf_field m, uint32_t num, const char *key, bool *out)
{
	struct pbuf_field v, i;

	if (!kv_find(m, num, key, &v) || !pb_get(v, ANY_BOOL, 0, &i) || i.wire != PB_VARINT)
		return false;
	*out = i.v != 0;
	return true;
}

static inline double pb_double(const struct pbuf_field *f)
{
	double d;

	memcpy(&d, &f->v, sizeof(d));
	return d;
}

#endif /* TT_OTLP_WALK_H */
