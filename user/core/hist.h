/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Log-linear latency histogram (HDR style) over nanoseconds, in fixed memory.
 *
 * Values below 2^HIST_SUB_BITS have a bucket each; above, every power of two is cut into
 * 2^HIST_SUB_BITS equal buckets, so a bucket is never wider than 1/128 of its lower bound and
 * a reported percentile (the bucket's midpoint, clamped to the exact min and max) is within
 * 0.4% of the true sample. Values past HIST_MAX_NS (73 minutes) land in the last bucket;
 * count, sum, min and max are exact.
 */
#ifndef TT_HIST_H
#define TT_HIST_H

#include <stdbool.h>
#include <stdint.h>

#define HIST_SUB_BITS	7
#define HIST_SUB	(1u << HIST_SUB_BITS)
#define HIST_MAX_EXP	42	/* 2^42 ns ~ 73 min */
#define HIST_BUCKETS	(HIST_SUB + (HIST_MAX_EXP - HIST_SUB_BITS) * HIST_SUB)

struct hist {
	uint64_t count;
	uint64_t sum;
	uint64_t min;
	uint64_t max;
	uint32_t buckets[HIST_BUCKETS];
};

void hist__reset(struct hist *h);
void hist__record(struct hist *h, uint64_t v);
void hist__record_n(struct hist *h, uint64_t v, uint64_t n);	/* n samples of v */
void hist__merge(struct hist *dst, const struct hist *src);
/* p in [0, 100]; 0 for an empty histogram. */
uint64_t hist__percentile(const struct hist *h, double p);
uint64_t hist__mean(const struct hist *h);
/* Samples <= v: for cumulative buckets (Prometheus), exact at bucket bounds, else within 0.8%. */
uint64_t hist__count_le(const struct hist *h, uint64_t v);

#endif /* TT_HIST_H */
