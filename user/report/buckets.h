/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The histograms' bucket boundaries, one definition for every output that buckets (--metrics,
 * --otlp): the OpenTelemetry GenAI semantic conventions' explicit boundaries, and tokentrace's
 * own for inter-token latency.
 */
#ifndef TT_BUCKETS_H
#define TT_BUCKETS_H

#include <stdint.h>

#define BUCKETS_MAX	24

struct family_buckets {
	int n;
	uint64_t le_ns[BUCKETS_MAX];	/* upper bounds, inclusive: ns (tokens for bucket_tokens) */
	const char *le[BUCKETS_MAX];	/* the same, as Prometheus writes them (seconds) */
};

/* gen_ai.server.time_to_first_token */
extern const struct family_buckets bucket_ttft;
/* gen_ai.server.time_per_output_token */
extern const struct family_buckets bucket_tpot;
/* gen_ai.server.request.duration */
extern const struct family_buckets bucket_e2e;
/* the client's three (operation.duration, time_to_first_chunk, time_per_output_chunk):
 * durations from 10 ms doubling to 81.92 s, as the server's request duration */
#define bucket_client	bucket_e2e
/* tokentrace's inter-token latency: from 0.5 ms, dense where streams live (5-100 ms) */
extern const struct family_buckets bucket_itl;
/* gen_ai.client.token.usage, in tokens: powers of 4 from 1 to 67108864 */
extern const struct family_buckets bucket_tokens;

/* The bucket a value falls in: the first whose bound it does not pass; b->n past them all. */
static inline int buckets__index(const struct family_buckets *b, uint64_t v)
{
	int i;

	for (i = 0; i < b->n && v > b->le_ns[i]; i++)
		;
	return i;
}

#endif /* TT_BUCKETS_H */
