// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>
#include "aggregate.h"

void agg__add(struct agg_totals *t, const struct tt_agg *a)
{
	for (int i = 0; i < TT_AGG_BUCKETS; i++) {
		t->itl[i] += a->itl[i];
		t->ttft[i] += a->ttft[i];
	}
	t->sends += a->sends;
	t->firsts += a->firsts;
}

void agg__delta(const struct agg_totals *now, const struct agg_totals *then,
		struct agg_totals *d)
{
	/* a connection missed once (closing while read) comes back: never go below zero */
#define SUB(a, b) ((a) > (b) ? (a) - (b) : 0)
	for (int i = 0; i < TT_AGG_BUCKETS; i++) {
		d->itl[i] = SUB(now->itl[i], then->itl[i]);
		d->ttft[i] = SUB(now->ttft[i], then->ttft[i]);
	}
	d->sends = SUB(now->sends, then->sends);
	d->firsts = SUB(now->firsts, then->firsts);
#undef SUB
}

/* the inverse of the kernel's agg_bucket() */
uint64_t agg__bucket_mid(unsigned int i)
{
	unsigned int e = i / 4, sub = i % 4;
	uint64_t lo, step;

	if (i < 4)
		return i;
	step = 1ull << (e - 2);
	lo = (1ull << e) + sub * step;
	return lo + step / 2;
}

void agg__to_hist(const uint64_t *buckets, struct hist *h)
{
	for (unsigned int i = 0; i < TT_AGG_BUCKETS; i++)
		hist__record_n(h, agg__bucket_mid(i), buckets[i]);
}
