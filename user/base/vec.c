// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The one growable array. See vec.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "vec.h"

/* the first allocation: a few elements, or this many bytes of small ones */
#define VEC_MIN_BYTES	256
#define VEC_MIN_ELEMS	4

int vec__reserve(void **data, size_t *cap, size_t esz, size_t need, size_t max)
{
	size_t nc;
	void *nd;

	if (need <= *cap)
		return 0;
	if (need > max)
		return -E2BIG;
	if (!esz || need > SIZE_MAX / esz)
		return -ENOMEM;
	nc = *cap ? *cap : VEC_MIN_BYTES / esz;
	if (nc < VEC_MIN_ELEMS)
		nc = VEC_MIN_ELEMS;
	while (nc < need && nc <= SIZE_MAX / 2)
		nc *= 2;
	if (nc < need)
		nc = need;
	if (nc > max)
		nc = max;
	if (nc > SIZE_MAX / esz)
		nc = need;
	nd = realloc(*data, nc * esz);
	if (!nd)
		return -ENOMEM;
	*data = nd;
	*cap = nc;
	return 0;
}

size_t buf__append(struct buf *b, const void *d, size_t n, size_t max)
{
	size_t take = b->len >= max ? 0 : max - b->len;

	if (n < take)
		take = n;
	/* one byte more for the NUL: text users read the buffer as a string */
	if (vec__reserve((void **)&b->data, &b->cap, 1, b->len + take + 1,
			 max == SIZE_MAX ? SIZE_MAX : max + 1))
		return 0;
	if (take)
		memcpy(b->data + b->len, d, take);
	b->len += take;
	b->data[b->len] = '\0';
	return take;
}

void buf__reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void buf__release(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
