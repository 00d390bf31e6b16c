/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The growable array of all of userspace, after libbpf's libbpf_ensure_mem(): an array is a
 * pointer and its capacity in elements, kept wherever its owner keeps them (a request's token
 * times, a thread's samples), and vec__reserve() makes room, doubling so that n appends cost
 * O(n). struct buf is the byte buffer on top of it (bodies kept to classify, a JSON line,
 * an SSE event's data), bounded by its user and always NUL-terminated for text.
 */
#ifndef TT_VEC_H
#define TT_VEC_H

#include <stddef.h>
#include <stdint.h>

/*
 * Room for need elements of esz bytes at *data, which has *cap: grown by doubling from a
 * small start, never past max elements (SIZE_MAX: no bound). 0; -E2BIG if need > max, or
 * -ENOMEM, with *data and *cap as they were.
 */
int vec__reserve(void **data, size_t *cap, size_t esz, size_t need, size_t max);

/* vec__reserve() for a typed pointer: VEC_RESERVE(r->tok_ns, &r->tok_cap, n + 1, SIZE_MAX) */
#define VEC_RESERVE(p, capp, need, max) \
	vec__reserve((void **)&(p), (capp), sizeof(*(p)), (need), (max))

/* Bytes; zero-initialised it is empty and holds no memory. */
struct buf {
	uint8_t *data;	/* NUL after the len bytes once anything was appended */
	size_t len, cap;
};

/*
 * Append n bytes from d, keeping at most max in all: those past it are left out, and so is
 * all of d when memory cannot be had. Returns the bytes appended (n when all were).
 */
size_t buf__append(struct buf *b, const void *d, size_t n, size_t max);
/* Empty again, memory kept for the next use. */
void buf__reset(struct buf *b);
/* Empty, its memory freed (a buffer idle between uses holds none). */
void buf__release(struct buf *b);

#endif /* TT_VEC_H */
