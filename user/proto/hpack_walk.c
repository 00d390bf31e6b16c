// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Partial HPACK decoding (hpack_walk.h, RFC 7541 section 6).
 *
 * The dynamic table is addressed from its newest entry (index 62 is the last one inserted),
 * so every entry inserted since the decoder lost track is known by position, whatever the
 * older, unknown entries were and whenever the table evicts: an encoder never refers to an
 * evicted entry. Learned entries keep their key and, for the kept keys alone, their value;
 * entries whose name was itself unknown are learned as unknown. Evicting learned entries
 * too late only keeps entries no block will refer to, so eviction happens only at a size
 * update to 0 (the table emptied) and at HPACK_LEARN_MAX entries (the oldest go unknown).
 *
 * Huffman-coded strings are decoded by a scratch nghttp2 inflater, fed a one-field block
 * "literal without indexing, new name" around the string as it was sent: its table stays
 * empty, and the decoding is libnghttp2's.
 */
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "hpack_walk.h"

#define KEY_UNKNOWN	0xff	/* a learned entry whose name was not known */
#define INT_MAX_BITS	28	/* longer integers are corrupt: no table or string is that big */

struct entry {
	uint8_t key;		/* enum hpack_key, HPACK_OTHER, or KEY_UNKNOWN */
	uint16_t len;
	char *value;		/* kept keys only */
};

struct hpack_walk {
	struct entry *ring;	/* HPACK_LEARN_MAX entries, newest at head */
	size_t head;		/* next slot to fill */
	size_t count;
	nghttp2_hd_inflater *scratch;
};

static const char *const static_tab[HPACK_STATIC_LEN][2] = {
	{ ":authority", "" }, { ":method", "GET" }, { ":method", "POST" }, { ":path", "/" },
	{ ":path", "/index.html" }, { ":scheme", "http" }, { ":scheme", "https" },
	{ ":status", "200" }, { ":status", "204" }, { ":status", "206" }, { ":status", "304" },
	{ ":status", "400" }, { ":status", "404" }, { ":status", "500" },
	{ "accept-charset", "" }, { "accept-encoding", "gzip, deflate" },
	{ "accept-language", "" }, { "accept-ranges", "" }, { "accept", "" },
	{ "access-control-allow-origin", "" }, { "age", "" }, { "allow", "" },
	{ "authorization", "" }, { "cache-control", "" }, { "content-disposition", "" },
	{ "content-encoding", "" }, { "content-language", "" }, { "content-length", "" },
	{ "content-location", "" }, { "content-range", "" }, { "content-type", "" },
	{ "cookie", "" }, { "date", "" }, { "etag", "" }, { "expect", "" }, { "expires", "" },
	{ "from", "" }, { "host", "" }, { "if-match", "" }, { "if-modified-since", "" },
	{ "if-none-match", "" }, { "if-range", "" }, { "if-unmodified-since", "" },
	{ "last-modified", "" }, { "link", "" }, { "location", "" }, { "max-forwards", "" },
	{ "proxy-authenticate", "" }, { "proxy-authorization", "" }, { "range", "" },
	{ "referer", "" }, { "refresh", "" }, { "retry-after", "" }, { "server", "" },
	{ "set-cookie", "" }, { "strict-transport-security", "" }, { "transfer-encoding", "" },
	{ "user-agent", "" }, { "vary", "" }, { "via", "" }, { "www-authenticate", "" },
};

const char *hpack__static_name(unsigned idx)
{
	return idx >= 1 && idx <= HPACK_STATIC_LEN ? static_tab[idx - 1][0] : NULL;
}

const char *hpack__static_value(unsigned idx)
{
	return idx >= 1 && idx <= HPACK_STATIC_LEN ? static_tab[idx - 1][1] : NULL;
}

struct hpack_walk *hpack_walk__new(void)
{
	struct hpack_walk *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->ring = calloc(HPACK_LEARN_MAX, sizeof(*w->ring));
	if (!w->ring) {
		free(w);
		return NULL;
	}
	return w;
}

static void drop_oldest(struct hpack_walk *w)
{
	struct entry *e = &w->ring[(w->head + HPACK_LEARN_MAX - w->count) % HPACK_LEARN_MAX];

	free(e->value);
	e->value = NULL;
	w->count--;
}

void hpack_walk__forget(struct hpack_walk *w)
{
	if (!w)
		return;
	while (w->count)
		drop_oldest(w);
}

void hpack_walk__free(struct hpack_walk *w)
{
	if (!w)
		return;
	hpack_walk__forget(w);
	if (w->scratch)
		nghttp2_hd_inflate_del(w->scratch);
	free(w->ring);
	free(w);
}

size_t hpack_walk__known(const struct hpack_walk *w)
{
	return w ? w->count : 0;
}

/* Learned entry k (0 = newest), or NULL if the decoder never saw it inserted. */
static const struct entry *learned(const struct hpack_walk *w, uint64_t k)
{
	if (k >= w->count)
		return NULL;
	return &w->ring[(w->head + HPACK_LEARN_MAX - 1 - k) % HPACK_LEARN_MAX];
}

static void learn(struct hpack_walk *w, uint8_t key, const uint8_t *v, size_t len)
{
	struct entry *e;

	if (w->count == HPACK_LEARN_MAX)
		drop_oldest(w);
	e = &w->ring[w->head];
	w->head = (w->head + 1) % HPACK_LEARN_MAX;
	w->count++;
	e->key = key;
	e->value = NULL;
	e->len = 0;
	if (key < HPACK_NKEYS) {
		/* kept values are cut where hpack__keep() would cut them anyway */
		size_t n = len < HTTP_PATH_MAX ? len : HTTP_PATH_MAX;

		e->value = malloc(n ? n : 1);
		if (!e->value) {
			e->key = KEY_UNKNOWN;
			return;
		}
		memcpy(e->value, v, n);
		e->len = (uint16_t)n;
	}
}

/* A cursor over one block. */
struct cur {
	const uint8_t *b;
	size_t len, pos;
	bool bad;		/* ran past the block or hit an impossible value */
};

/* An integer with an n-bit prefix (RFC 7541 5.1). */
static uint64_t read_int(struct cur *c, unsigned n)
{
	uint64_t max = (1u << n) - 1, v;
	unsigned shift = 0;

	if (c->pos >= c->len) {
		c->bad = true;
		return 0;
	}
	v = c->b[c->pos++] & max;
	if (v < max)
		return v;
	for (;;) {
		uint8_t b;

		if (c->pos >= c->len || shift > INT_MAX_BITS) {
			c->bad = true;
			return 0;
		}
		b = c->b[c->pos++];
		v += (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
}

/* The raw bytes of a string literal (RFC 7541 5.2), its length prefix included. */
struct str {
	const uint8_t *raw;	/* from the prefix */
	size_t raw_len;
	const uint8_t *data;	/* after the prefix */
	size_t len;
	bool huff;
};

static bool read_str(struct cur *c, struct str *s)
{
	size_t start = c->pos;
	uint64_t n;

	if (c->pos >= c->len) {
		c->bad = true;
		return false;
	}
	s->huff = c->b[c->pos] & 0x80;
	n = read_int(c, 7);
	if (c->bad || n > c->len - c->pos) {
		c->bad = true;
		return false;
	}
	s->raw = c->b + start;
	s->data = c->b + c->pos;
	s->len = (size_t)n;
	c->pos += (size_t)n;
	s->raw_len = c->pos - start;
	return true;
}

struct sink {
	uint8_t *out;
	size_t size;
	long got;
};

static void take_value(void *arg, const nghttp2_nv *nv)
{
	struct sink *k = arg;

	memcpy(k->out, nv->value, nv->valuelen < k->size ? nv->valuelen : k->size);
	k->got = (long)nv->valuelen;
}

/*
 * The decoded string, into out (size bytes, cut to fit); its full decoded length, or -1 if
 * it is not valid Huffman code.
 */
static long decode_str(struct hpack_walk *w, const struct str *s, uint8_t *out, size_t size)
{
	static const uint8_t prefix[] = { 0x00, 0x01, 'x' };
	struct sink k = { out, size, -1 };

	if (!s->huff) {
		memcpy(out, s->data, s->len < size ? s->len : size);
		return (long)s->len;
	}
	if (!w->scratch && nghttp2_hd_inflate_new(&w->scratch))
		return -1;
	if (hpack__inflate(w->scratch, prefix, sizeof(prefix), false, take_value, &k) == 0 &&
	    hpack__inflate(w->scratch, s->raw, s->raw_len, true, take_value, &k) == 1)
		return k.got;
	/* an inflater that failed cannot be used again */
	nghttp2_hd_inflate_del(w->scratch);
	w->scratch = NULL;
	return -1;
}

/* A name: the key it is, KEY_UNKNOWN if it cannot be decoded. */
static uint8_t name_key(struct hpack_walk *w, const struct str *s)
{
	uint8_t buf[32];	/* longer than any kept name */
	long n = decode_str(w, s, buf, sizeof(buf));

	if (n < 0)
		return KEY_UNKNOWN;
	if ((size_t)n > sizeof(buf))
		return HPACK_OTHER;
	return (uint8_t)hpack__key((const char *)buf, (size_t)n);
}

/* What index idx names: key, and value when the whole field is indexed. */
struct ref {
	uint8_t key;
	const uint8_t *value;
	size_t len;
};

static bool lookup(const struct hpack_walk *w, uint64_t idx, struct ref *r)
{
	if (idx >= 1 && idx <= HPACK_STATIC_LEN) {
		const char *name = static_tab[idx - 1][0];

		r->key = (uint8_t)hpack__key(name, strlen(name));
		r->value = (const uint8_t *)static_tab[idx - 1][1];
		r->len = strlen(static_tab[idx - 1][1]);
		return true;
	}
	if (idx > HPACK_STATIC_LEN) {
		const struct entry *e = learned(w, idx - HPACK_STATIC_LEN - 1);

		if (e && e->key != KEY_UNKNOWN) {
			r->key = e->key;
			r->value = (const uint8_t *)e->value;
			r->len = e->len;
			return true;
		}
	}
	return false;
}

/* A literal field (6.2): the name by index or literal, then the value; inserted if index. */
static void literal(struct hpack_walk *w, struct cur *c, unsigned prefix, bool index,
		    struct hpack_fields *f)
{
	uint8_t vbuf[HTTP_PATH_MAX];
	uint64_t idx = read_int(c, prefix);
	struct ref r = { .key = KEY_UNKNOWN };
	struct str name, value;
	long vlen = -1;

	if (c->bad)
		return;
	if (idx == 0) {
		if (!read_str(c, &name))
			return;
		r.key = name_key(w, &name);
	} else if (!lookup(w, idx, &r)) {
		r.key = KEY_UNKNOWN;
	}
	if (!read_str(c, &value))
		return;
	f->fields++;
	if (r.key < HPACK_NKEYS) {
		vlen = decode_str(w, &value, vbuf, sizeof(vbuf));
		if (vlen < 0)
			r.key = KEY_UNKNOWN;
	}
	if (r.key == KEY_UNKNOWN)
		f->unknown++;
	else if (r.key < HPACK_NKEYS)
		hpack__keep(f, r.key, vbuf, (size_t)vlen < sizeof(vbuf) ? (size_t)vlen
							     : sizeof(vbuf));
	if (index)
		learn(w, r.key, vbuf, vlen > 0 ? ((size_t)vlen < sizeof(vbuf) ? (size_t)vlen
								      : sizeof(vbuf)) : 0);
}

void hpack_walk__block(struct hpack_walk *w, const uint8_t *b, size_t len,
		       struct hpack_fields *f)
{
	struct cur c = { .b = b, .len = len };

	while (c.pos < c.len && !c.bad) {
		uint8_t first = b[c.pos];

		if (first & 0x80) {
			/* indexed field (6.1) */
			uint64_t idx = read_int(&c, 7);
			struct ref r;

			if (c.bad || idx == 0) {
				c.bad = true;
				break;
			}
			f->fields++;
			if (!lookup(w, idx, &r))
				f->unknown++;
			else if (r.key < HPACK_NKEYS)
				hpack__keep(f, r.key, r.value, r.len);
		} else if (first & 0x40) {
			literal(w, &c, 6, true, f);
		} else if (first & 0x20) {
			/* dynamic table size update (6.3): 0 empties the table */
			uint64_t size = read_int(&c, 5);

			if (!c.bad && size == 0)
				hpack_walk__forget(w);
		} else {
			/* without indexing (0000) or never indexed (0001) */
			literal(w, &c, 4, false, f);
		}
	}
	if (c.bad) {
		/* the rest of the block, and what it inserted, are unknown */
		f->unknown++;
		hpack_walk__forget(w);
	}
}
