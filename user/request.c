// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "request.h"
#include "util.h"

const char *body_format_name(enum body_format f)
{
	switch (f) {
	case FMT_SSE: return "sse";
	case FMT_NDJSON: return "ndjson";
	case FMT_JSON: return "json";
	case FMT_RAW: return "raw";
	default: return "none";
	}
}

const char *abort_reason_name(enum abort_reason r)
{
	switch (r) {
	case ABORT_CLIENT: return "client_closed";
	case ABORT_SERVER: return "server_closed";
	case ABORT_LOST: return "events_lost";
	case ABORT_DESYNC: return "parse_error";
	default: return NULL;
	}
}

struct tt_request *request__new(void)
{
	struct tt_request *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->stream = -1;
	r->max_tokens = -1;
	r->model_tokens = -1;
	return r;
}

void request__free(struct tt_request *r)
{
	if (!r)
		return;
	free(r->tok_ns);
	free(r->made_ns);
	free(r->stalls);
	free(r);
}

const char *stall_cause_name(enum stall_cause c)
{
	static const char *const names[STALL_NR] = {
		[STALL_ONCPU] = "on_cpu",
		[STALL_RUNQ] = "runqueue",
		[STALL_LOCK] = "lock",
		[STALL_IO] = "io",
		[STALL_SLEEP] = "sleep",
		[STALL_POLL] = "poll",
		[STALL_BLOCKED] = "blocked",
		[STALL_SEND] = "send_blocked",
		[STALL_UNKNOWN] = "unknown",
	};

	return (unsigned int)c < STALL_NR ? names[c] : "unknown";
}

int request__add_chunk(struct tt_request *r, uint64_t ts)
{
	if (r->chunks == r->tok_cap) {
		uint32_t cap = r->tok_cap ? r->tok_cap * 2 : 64;
		uint64_t *n = realloc(r->tok_ns, cap * sizeof(*n));

		if (!n) {
			r->truncated = true;
			return -ENOMEM;
		}
		r->tok_ns = n;
		r->tok_cap = cap;
	}
	r->tok_ns[r->chunks++] = ts;
	return 0;
}

int request__add_made(struct tt_request *r, uint64_t ts)
{
	if (r->nmade == r->made_cap) {
		uint32_t cap = r->made_cap ? r->made_cap * 2 : 64;
		uint64_t *n = realloc(r->made_ns, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		r->made_ns = n;
		r->made_cap = cap;
	}
	r->made_ns[r->nmade++] = ts;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* nearest-rank percentile of a sorted array */
static uint64_t pct(const uint64_t *v, uint32_t n, double p)
{
	uint32_t rank = (uint32_t)(p / 100.0 * n + 0.999999);

	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

static void breakdown(struct tt_request *r)
{
	uint64_t first_send = r->chunks ? r->tok_ns[0] : 0, stackbuf[256], *d;
	uint32_t n = 0;

	if (r->t_admit_ns && r->t_start_ns) {
		r->admit_ns = (int64_t)(r->t_admit_ns - r->t_start_ns);
		r->admit_known = true;
	}
	if (r->t_made_first_ns && r->t_admit_ns) {
		r->prefill_ns = (int64_t)(r->t_made_first_ns - r->t_admit_ns);
		r->prefill_known = true;
	}
	if (r->t_made_first_ns && first_send) {
		r->emit_to_wire_ns = (int64_t)(first_send - r->t_made_first_ns);
		r->emit_known = true;
	}
	/* the i-th token made is the i-th chunk sent: both come in order */
	n = MIN(r->nmade, r->chunks);
	if (!n)
		return;
	d = n <= ARRAY_SIZE(stackbuf) ? stackbuf : malloc(n * sizeof(*d));
	if (!d)
		return;
	for (uint32_t i = 0; i < n; i++)
		d[i] = r->tok_ns[i] > r->made_ns[i] ? r->tok_ns[i] - r->made_ns[i] : 0;
	qsort(d, n, sizeof(*d), cmp_u64);
	r->nemit = n;
	r->emit_p50_ns = pct(d, n, 50);
	r->emit_p99_ns = pct(d, n, 99);
	r->emit_max_ns = d[n - 1];
	if (d != stackbuf)
		free(d);
}

void request__finish(struct tt_request *r)
{
	uint32_t gaps = r->chunks > 1 ? r->chunks - 1 : 0;

	r->tokens = r->model_tokens >= 0 ? (uint64_t)r->model_tokens : r->chunks;
	if (r->chunks && r->t_start_ns && r->tok_ns[0] >= r->t_start_ns)
		r->ttft_ns = r->tok_ns[0] - r->t_start_ns;
	if (r->t_start_ns && r->t_end_ns >= r->t_start_ns)
		r->e2e_ns = r->t_end_ns - r->t_start_ns;
	/*
	 * TPOT per output token after the first: per model token when the stream counted them
	 * (several tokens per event), else per chunk.
	 */
	if (gaps && r->tokens > 1)
		r->tpot_ns = (r->tok_ns[r->chunks - 1] - r->tok_ns[0]) / (r->tokens - 1);
	if (gaps) {
		uint64_t stackbuf[256], *itl = stackbuf;

		if (gaps > sizeof(stackbuf) / sizeof(stackbuf[0]) && !(itl = malloc(gaps * sizeof(*itl)))) {
			r->truncated = true;
			return;
		}
		for (uint32_t i = 0; i < gaps; i++)
			itl[i] = request__itl(r, i);
		qsort(itl, gaps, sizeof(*itl), cmp_u64);
		r->itl_p50_ns = pct(itl, gaps, 50);
		r->itl_p90_ns = pct(itl, gaps, 90);
		r->itl_p99_ns = pct(itl, gaps, 99);
		r->itl_max_ns = itl[gaps - 1];
		if (itl != stackbuf)
			free(itl);
	}
	breakdown(r);
}
