/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hpack.c's partial decoding (hpack.h): a whole header block walked representation by
 * representation against a dynamic table of which only the newest entries are known.
 * Internal to hpack.c and its tests.
 */
#ifndef TT_HPACK_WALK_H
#define TT_HPACK_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nghttp2/nghttp2.h>

#include "hpack.h"

#define HPACK_STATIC_LEN	61

struct hpack_walk;

struct hpack_walk *hpack_walk__new(void);
void hpack_walk__free(struct hpack_walk *w);
/* Every entry inserted so far becomes unknown (a block was lost or could not be walked). */
void hpack_walk__forget(struct hpack_walk *w);
/* Walk one whole block: f's counts grow, its kept fields are set through hpack__keep(). */
void hpack_walk__block(struct hpack_walk *w, const uint8_t *b, size_t len,
		       struct hpack_fields *f);
/* Entries known (learned since the table was last unknown), for tests. */
size_t hpack_walk__known(const struct hpack_walk *w);

/* Static table entry 1..HPACK_STATIC_LEN (RFC 7541 Appendix A). */
const char *hpack__static_name(unsigned idx);
const char *hpack__static_value(unsigned idx);

/* Set a kept field of f from a decoded value (the first one of a key wins). */
void hpack__keep(struct hpack_fields *f, enum hpack_key key, const uint8_t *v, size_t len);

/*
 * Stream a piece of a block into inf, emit() called per field: 1 the block ended (final
 * given), 0 it wants more, -1 the inflater failed (it cannot be used again).
 */
int hpack__inflate(nghttp2_hd_inflater *inf, const uint8_t *in, size_t len, bool final,
		   void (*emit)(void *arg, const nghttp2_nv *nv), void *arg);

#endif /* TT_HPACK_WALK_H */
