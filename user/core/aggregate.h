/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --aggregate: the kernel keeps, per connection, histograms of the gaps between token-like
 * sends and of the time from a request's read to the first of them (events.h, struct tt_agg).
 * Userspace only adds them up now and then. Coarse (4 buckets per octave: a value is known
 * within about 20%) and blind to what a send carried, but nothing per send leaves the kernel.
 */
#ifndef TT_AGGREGATE_H
#define TT_AGGREGATE_H

#include <stdint.h>
#include "events.h"
#include "hist.h"

struct agg_totals {
	uint64_t itl[TT_AGG_BUCKETS];
	uint64_t ttft[TT_AGG_BUCKETS];
	uint64_t sends;		/* token-like sends */
	uint64_t firsts;	/* responses: first token-like send after a read */
};

void agg__add(struct agg_totals *t, const struct tt_agg *a);
/* d = now - then, bucket by bucket (counts only grow) */
void agg__delta(const struct agg_totals *now, const struct agg_totals *then,
		struct agg_totals *d);
/* The middle of bucket i, in ns. */
uint64_t agg__bucket_mid(unsigned int i);
/* Put bucket counts into a histogram, each at its bucket's middle. */
void agg__to_hist(const uint64_t *buckets, struct hist *h);

#endif /* TT_AGGREGATE_H */
