/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Test helpers: HTTP/2 frames into a buffer, header blocks through libnghttp2's deflater,
 * as a stack would write them.
 */
#ifndef TT_H2_BUILD_H
#define TT_H2_BUILD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "h2.h"

struct wbuf {
	uint8_t b[1 << 18];
	size_t len;
};

static inline void wb_put(struct wbuf *w, const void *d, size_t n)
{
	if (w->len + n > sizeof(w->b))
		abort();
	memcpy(w->b + w->len, d, n);
	w->len += n;
}

static inline void wb_frame(struct wbuf *w, uint8_t type, uint8_t flags, uint32_t stream,
			    const void *payload, size_t len)
{
	uint8_t h[9] = {
		(uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len, type, flags,
		(uint8_t)(stream >> 24), (uint8_t)(stream >> 16), (uint8_t)(stream >> 8),
		(uint8_t)stream,
	};

	wb_put(w, h, sizeof(h));
	if (len)
		wb_put(w, payload, len);
}

static inline void wb_u32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

/* SETTINGS with pairs (id, value), terminated by id 0 */
static inline void wb_settings(struct wbuf *w, const uint32_t *pairs)
{
	uint8_t p[64];
	size_t n = 0;

	for (; pairs[0]; pairs += 2) {
		p[n] = (uint8_t)(pairs[0] >> 8);
		p[n + 1] = (uint8_t)pairs[0];
		wb_u32(p + n + 2, pairs[1]);
		n += 6;
	}
	wb_frame(w, H2_SETTINGS, 0, 0, p, n);
}

static inline void wb_u32_frame(struct wbuf *w, uint8_t type, uint32_t stream, uint32_t v)
{
	uint8_t p[4];

	wb_u32(p, v);
	wb_frame(w, type, 0, stream, p, 4);
}

static inline void wb_goaway(struct wbuf *w, uint32_t last, uint32_t code)
{
	uint8_t p[8 + 5];

	wb_u32(p, last);
	wb_u32(p + 4, code);
	memcpy(p + 8, "debug", 5);
	wb_frame(w, H2_GOAWAY, 0, 0, p, sizeof(p));
}

/* a DATA frame, padded with pad bytes when pad >= 0 */
static inline void wb_data(struct wbuf *w, uint32_t stream, uint8_t flags, const void *d,
			   size_t len, int pad)
{
	uint8_t p[1 << 15];
	size_t n = 0;

	if (pad >= 0) {
		p[n++] = (uint8_t)pad;
		flags |= 0x08;
	}
	memcpy(p + n, d, len);
	n += len;
	if (pad > 0) {
		memset(p + n, 0, (size_t)pad);
		n += (size_t)pad;
	}
	wb_frame(w, H2_DATA, flags, stream, p, n);
}

/* a header block for nv (name, value, ..., NULL) */
static inline size_t h2b_block(nghttp2_hd_deflater *def, const char *const *nv, uint8_t *out,
			       size_t size)
{
	nghttp2_nv v[32];
	size_t n = 0;
	ssize_t rv;

	for (; nv[2 * n]; n++)
		v[n] = (nghttp2_nv){ (uint8_t *)nv[2 * n], (uint8_t *)nv[2 * n + 1],
				     strlen(nv[2 * n]), strlen(nv[2 * n + 1]),
				     NGHTTP2_NV_FLAG_NONE };
	rv = nghttp2_hd_deflate_hd(def, out, size, v, n);
	if (rv < 0)
		abort();
	return (size_t)rv;
}

/* HEADERS (+ CONTINUATIONs of at most frag bytes each when frag > 0) */
static inline void wb_headers(struct wbuf *w, nghttp2_hd_deflater *def, uint32_t stream,
			      uint8_t flags, const char *const *nv, size_t frag)
{
	uint8_t blk[4096];
	size_t n = h2b_block(def, nv, blk, sizeof(blk)), off = 0;

	if (!frag || frag >= n) {
		wb_frame(w, H2_HEADERS, flags | 0x04, stream, blk, n);
		return;
	}
	wb_frame(w, H2_HEADERS, flags, stream, blk, frag);
	for (off = frag; off < n; off += frag) {
		size_t k = n - off < frag ? n - off : frag;

		wb_frame(w, H2_CONTINUATION, off + k == n ? 0x04 : 0, stream, blk + off, k);
	}
}

#endif /* TT_H2_BUILD_H */
