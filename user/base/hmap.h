/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The hash table of all of userspace: 64-bit keys to non-NULL pointers, open addressing with
 * linear probing, growing by doubling. Keys are mixed here (any key will do: a socket's
 * address, a thread id, a string's hash); a caller with several values under one key (two
 * requests with one X-Request-Id) chains them itself from the value it keeps here.
 *
 * Deletion moves the entries after a freed slot back (no tombstones), so lookups stay
 * short however much comes and goes; it also means the table must not change while it is
 * walked with hmap__next().
 */
#ifndef TT_HMAP_H
#define TT_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hmap;

/* An empty table with room for about hint entries before it grows (0: a small default). */
struct hmap *hmap__new(size_t hint);
void hmap__free(struct hmap *m);

/* The value under key, or NULL. */
void *hmap__get(const struct hmap *m, uint64_t key);
/* Set key to val (non-NULL), replacing any value it had. 0, -EINVAL (NULL) or -ENOMEM. */
int hmap__put(struct hmap *m, uint64_t key, void *val);
/* Take key out; its value, or NULL if it was not there. */
void *hmap__del(struct hmap *m, uint64_t key);
size_t hmap__count(const struct hmap *m);

/*
 * Walk the entries in no particular order: start with *iter 0; false when there are no more.
 * key may be NULL.
 */
bool hmap__next(const struct hmap *m, size_t *iter, uint64_t *key, void **val);

#endif /* TT_HMAP_H */
