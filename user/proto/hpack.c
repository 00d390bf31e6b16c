// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * HPACK decoder (hpack.h). Exact decoding streams each piece of a block into libnghttp2's
 * inflater as it arrives, so nothing is buffered; partial decoding (hpack_walk.c) needs the
 * whole block and buffers it, up to HPACK_BLOCK_MAX.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nghttp2/nghttp2.h>

#include "hpack.h"
#include "hpack_walk.h"

struct hpack_decoder {
	nghttp2_hd_inflater *inf;	/* exact; NULL once partial */
	struct hpack_walk *walk;	/* partial */
	uint32_t max_table;		/* the settings' bound, for the inflater */
	bool max_pending;		/* set while a block was open: applied at the next one */
	bool in_block;
	bool lost_block;		/* the block being fed can no longer be decoded */
	bool failed;			/* it broke the inflater */
	bool was_partial;		/* the block began partial */

	/* partial: the block, buffered */
	uint8_t *buf;
	size_t len;
	bool overflow;

	struct hpack_fields cur;
};

static const struct {
	const char *name;
	enum hpack_key key;
} kept[] = {
	{ ":method", HPACK_METHOD },
	{ ":path", HPACK_PATH },
	{ ":status", HPACK_STATUS },
	{ ":authority", HPACK_AUTHORITY },
	{ "host", HPACK_AUTHORITY },
	{ "content-type", HPACK_CONTENT_TYPE },
	{ "te", HPACK_TE },
	{ "grpc-status", HPACK_GRPC_STATUS },
	{ "grpc-message", HPACK_GRPC_MESSAGE },
	{ "x-request-id", HPACK_REQUEST_ID },
	{ "traceparent", HPACK_TRACEPARENT },
};

enum hpack_key hpack__key(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		if (strlen(kept[i].name) == len && !strncasecmp(name, kept[i].name, len))
			return kept[i].key;
	return HPACK_OTHER;
}

static void copy_str(char *dst, size_t size, const uint8_t *v, size_t len, bool *cut)
{
	size_t n = len < size - 1 ? len : size - 1;

	memcpy(dst, v, n);
	dst[n] = '\0';
	*cut = n < len;
}

/* A decimal number of at most digits digits, else -1. */
static int small_number(const uint8_t *v, size_t len, size_t digits)
{
	int n = 0;

	if (!len || len > digits)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		n = n * 10 + (v[i] - '0');
	}
	return n;
}

#define STR_FIELD(k, m) [k] = { offsetof(struct hpack_fields, m), \
				sizeof(((struct hpack_fields *)0)->m) }
/* where each string-valued key is kept; size 0: a number */
static const struct {
	size_t off, size;
} str_field[HPACK_NKEYS] = {
	STR_FIELD(HPACK_METHOD, method),
	STR_FIELD(HPACK_PATH, path),
	STR_FIELD(HPACK_AUTHORITY, authority),
	STR_FIELD(HPACK_CONTENT_TYPE, content_type),
	STR_FIELD(HPACK_TE, te),
	STR_FIELD(HPACK_GRPC_MESSAGE, grpc_message),
	STR_FIELD(HPACK_REQUEST_ID, request_id),
	STR_FIELD(HPACK_TRACEPARENT, traceparent),
};

void hpack__keep(struct hpack_fields *f, enum hpack_key key, const uint8_t *v, size_t len)
{
	bool cut = false;
	int n;

	if (key >= HPACK_NKEYS || f->state[key] == HPACK_KNOWN)
		return;
	if (key == HPACK_STATUS) {
		n = small_number(v, len, 3);
		f->status = n >= 100 ? n : 0;
	} else if (key == HPACK_GRPC_STATUS) {
		/* the codes run 0..16; anything else is kept as "not a number" */
		f->grpc_status = small_number(v, len, 9);
	} else {
		copy_str((char *)f + str_field[key].off, str_field[key].size, v, len, &cut);
	}
	f->state[key] = HPACK_KNOWN;
	if (cut)
		f->cut |= (uint16_t)(1u << key);
}

static void clear_fields(struct hpack_fields *f)
{
	memset(f, 0, sizeof(*f));
	f->grpc_status = -1;
}

/* The inflater failed: this decoder decodes partially from now on. */
static void go_partial(struct hpack_decoder *d)
{
	if (d->inf) {
		nghttp2_hd_inflate_del(d->inf);
		d->inf = NULL;
	}
	if (d->walk)
		hpack_walk__forget(d->walk);
	else
		d->walk = hpack_walk__new();
}

struct hpack_decoder *hpack_decoder__new(bool joined)
{
	struct hpack_decoder *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->max_table = HPACK_DEFAULT_TABLE;
	if (joined) {
		d->walk = hpack_walk__new();
		if (!d->walk)
			goto fail;
	} else if (nghttp2_hd_inflate_new(&d->inf)) {
		goto fail;
	}
	return d;
fail:
	hpack_decoder__free(d);
	return NULL;
}

void hpack_decoder__free(struct hpack_decoder *d)
{
	if (!d)
		return;
	if (d->inf)
		nghttp2_hd_inflate_del(d->inf);
	hpack_walk__free(d->walk);
	free(d->buf);
	free(d);
}

void hpack_decoder__set_max_table(struct hpack_decoder *d, uint32_t size)
{
	if (!d)
		return;
	d->max_table = size;
	d->max_pending = true;
	if (!d->in_block && d->inf) {
		/* only fails inside a block, which in_block rules out */
		nghttp2_hd_inflate_change_table_size(d->inf, size);
		d->max_pending = false;
	}
}

void hpack_decoder__begin(struct hpack_decoder *d)
{
	if (!d)
		return;
	if (d->in_block)
		hpack_decoder__abandon(d);
	if (d->max_pending && d->inf)
		nghttp2_hd_inflate_change_table_size(d->inf, d->max_table);
	d->max_pending = false;
	clear_fields(&d->cur);
	d->in_block = true;
	d->lost_block = false;
	d->failed = false;
	d->was_partial = !d->inf;
	d->len = 0;
	d->overflow = false;
	if (!d->inf && !d->walk)
		d->lost_block = true;	/* out of memory when going partial */
}

int hpack__inflate(nghttp2_hd_inflater *inf, const uint8_t *in, size_t len, bool final,
		   void (*emit)(void *arg, const nghttp2_nv *nv), void *arg)
{
	for (;;) {
		nghttp2_nv nv;
		int flags = 0;
		ssize_t rv = nghttp2_hd_inflate_hd2(inf, &nv, &flags, in, len, final);

		if (rv < 0)
			return -1;
		if (rv) {
			in += rv;
			len -= (size_t)rv;
		}
		if (flags & NGHTTP2_HD_INFLATE_EMIT)
			emit(arg, &nv);
		if (flags & NGHTTP2_HD_INFLATE_FINAL) {
			nghttp2_hd_inflate_end_headers(inf);
			return 1;
		}
		if (!(flags & NGHTTP2_HD_INFLATE_EMIT) && (!len || !rv))
			return final ? -1 : 0;	/* all taken: more of the block to come */
	}
}

static void emit_field(void *arg, const nghttp2_nv *nv)
{
	struct hpack_fields *f = arg;

	f->fields++;
	hpack__keep(f, hpack__key((const char *)nv->name, nv->namelen), nv->value, nv->valuelen);
}

/* Stream a piece into the inflater; false if it failed. */
static bool inflate(struct hpack_decoder *d, const uint8_t *in, size_t len, bool final)
{
	return hpack__inflate(d->inf, in, len, final, emit_field, &d->cur) >= 0;
}

static void inflate_failed(struct hpack_decoder *d)
{
	d->failed = true;
	d->lost_block = true;
	go_partial(d);
}

static void buffer(struct hpack_decoder *d, const uint8_t *frag, size_t len)
{
	if (d->overflow || len > HPACK_BLOCK_MAX - d->len) {
		d->overflow = true;
		return;
	}
	if (!d->buf) {
		d->buf = malloc(HPACK_BLOCK_MAX);
		if (!d->buf) {
			d->overflow = true;
			return;
		}
	}
	memcpy(d->buf + d->len, frag, len);
	d->len += len;
}

void hpack_decoder__feed(struct hpack_decoder *d, const uint8_t *frag, size_t len)
{
	if (!d || !d->in_block || d->lost_block || !len)
		return;
	if (d->inf) {
		if (!inflate(d, frag, len, false))
			inflate_failed(d);
		return;
	}
	buffer(d, frag, len);
}

void hpack_decoder__end(struct hpack_decoder *d, struct hpack_fields *out)
{
	struct hpack_fields *f;

	if (!d || !d->in_block) {
		/* no block began: nothing was decoded, nothing is known */
		clear_fields(out);
		out->unknown = 1;
		for (int k = 0; k < HPACK_NKEYS; k++)
			out->state[k] = HPACK_UNKNOWN;
		out->partial = true;
		return;
	}
	f = &d->cur;
	if (d->inf && !d->lost_block && !inflate(d, NULL, 0, true))
		inflate_failed(d);
	if (!d->lost_block && !d->inf) {
		if (d->overflow) {
			/* what the block inserted is unknown */
			hpack_walk__forget(d->walk);
			d->lost_block = true;
		} else {
			hpack_walk__block(d->walk, d->buf, d->len, f);
		}
	}
	if (d->lost_block)
		f->unknown++;	/* at least one field went undecoded */
	f->partial = d->was_partial || d->failed;
	f->failed = d->failed;
	if (f->unknown)
		for (int k = 0; k < HPACK_NKEYS; k++)
			if (f->state[k] == HPACK_ABSENT)
				f->state[k] = HPACK_UNKNOWN;
	d->in_block = false;
	if (d->max_pending && d->inf) {
		nghttp2_hd_inflate_change_table_size(d->inf, d->max_table);
		d->max_pending = false;
	}
	*out = *f;
}

void hpack_decoder__abandon(struct hpack_decoder *d)
{
	if (!d || !d->in_block)
		return;
	go_partial(d);
	d->in_block = false;
}

bool hpack_decoder__partial(const struct hpack_decoder *d)
{
	return !d || !d->inf;
}
