// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>
#include "hist.h"

void hist__reset(struct hist *h)
{
	memset(h, 0, sizeof(*h));
}

static unsigned int bucket_of(uint64_t v)
{
	unsigned int e, idx;

	if (v < HIST_SUB)
		return v;
	e = 63 - __builtin_clzll(v);	/* v in [2^e, 2^(e+1)) with e >= HIST_SUB_BITS */
	if (e >= HIST_MAX_EXP)
		return HIST_BUCKETS - 1;
	idx = HIST_SUB + (e - HIST_SUB_BITS) * HIST_SUB;
	return idx + ((v >> (e - HIST_SUB_BITS)) & (HIST_SUB - 1));
}

/* [lo, hi) of bucket b */
static void bucket_bounds(unsigned int b, uint64_t *lo, uint64_t *hi)
{
	unsigned int e, sub;

	if (b < HIST_SUB) {
		*lo = b;
		*hi = b + 1;
		return;
	}
	e = (b - HIST_SUB) / HIST_SUB + HIST_SUB_BITS;
	sub = (b - HIST_SUB) % HIST_SUB;
	*lo = (1ull << e) + ((uint64_t)sub << (e - HIST_SUB_BITS));
	*hi = *lo + (1ull << (e - HIST_SUB_BITS));
}

void hist__record_n(struct hist *h, uint64_t v, uint64_t n)
{
	if (!n)
		return;
	if (!h->count || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->count += n;
	h->sum += v * n;
	h->buckets[bucket_of(v)] += n;
}

void hist__record(struct hist *h, uint64_t v)
{
	hist__record_n(h, v, 1);
}

void hist__merge(struct hist *dst, const struct hist *src)
{
	if (!src->count)
		return;
	if (!dst->count || src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	dst->count += src->count;
	dst->sum += src->sum;
	for (unsigned int i = 0; i < HIST_BUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
}

uint64_t hist__percentile(const struct hist *h, double p)
{
	uint64_t rank, seen = 0, lo, hi, mid;

	if (!h->count)
		return 0;
	if (p <= 0)
		return h->min;
	if (p >= 100)
		return h->max;
	/* nearest rank: the smallest value with at least p% of samples at or below it */
	rank = (uint64_t)(p / 100.0 * h->count + 0.999999);
	if (rank < 1)
		rank = 1;
	for (unsigned int i = 0; i < HIST_BUCKETS; i++) {
		seen += h->buckets[i];
		if (seen < rank)
			continue;
		bucket_bounds(i, &lo, &hi);
		mid = lo + (hi - lo - 1) / 2;
		if (mid < h->min)
			mid = h->min;
		if (mid > h->max)
			mid = h->max;
		return mid;
	}
	return h->max;
}

uint64_t hist__mean(const struct hist *h)
{
	return h->count ? h->sum / h->count : 0;
}

uint64_t hist__count_le(const struct hist *h, uint64_t v)
{
	uint64_t n = 0, lo, hi;
	unsigned int last;

	if (!h->count || v < h->min)
		return 0;
	if (v >= h->max)
		return h->count;
	last = bucket_of(v);
	for (unsigned int i = 0; i < last; i++)
		n += h->buckets[i];
	/* the bucket holding v: count it whole only if v reaches its top */
	bucket_bounds(last, &lo, &hi);
	if (v + 1 >= hi)
		n += h->buckets[last];
	return n;
}
