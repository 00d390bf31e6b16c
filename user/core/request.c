// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "request.h"
#include "vec.h"
#include "util.h"

const char *body_format_name(enum body_format f)
{
	switch (f) {
	case FMT_SSE: return "sse";
	case FMT_NDJSON: return "ndjson";
	case FMT_JSON: return "json";
	case FMT_RAW: return "raw";
	case FMT_GRPC: return "grpc";
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
	r->grpc_status = -1;
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

static void *dup_mem(const void *p, size_t n)
{
	void *d;

	if (!p || !n)
		return NULL;
	d = malloc(n);
	if (d)
		memcpy(d, p, n);
	return d;
}

struct tt_request *request__dup(const struct tt_request *r)
{
	struct tt_request *d = malloc(sizeof(*d));

	if (!d)
		return NULL;
	*d = *r;
	d->next = NULL;
	d->tok_ns = dup_mem(r->tok_ns, r->chunks * sizeof(*r->tok_ns));
	d->made_ns = dup_mem(r->made_ns, r->nmade * sizeof(*r->made_ns));
	d->stalls = dup_mem(r->stalls, r->nstalls * sizeof(*r->stalls));
	d->tok_cap = d->tok_ns ? r->chunks : 0;
	d->made_cap = d->made_ns ? r->nmade : 0;
	d->stalls_cap = d->stalls ? r->nstalls : 0;
	if ((r->chunks && !d->tok_ns) || (r->nmade && !d->made_ns) ||
	    (r->nstalls && !d->stalls)) {
		request__free(d);
		return NULL;
	}
	return d;
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
		[STALL_STEAL] = "steal",
		[STALL_GIL] = "gil",
		[STALL_IDLE] = "idle",
		[STALL_FLOW] = "flow_control",
		[STALL_UNKNOWN] = "unknown",
	};

	return (unsigned int)c < STALL_NR ? names[c] : "unknown";
}

const char *req_field_name(enum req_field f)
{
	static const char *const names[RF_NR] = {
		[RF_METHOD] = "method", [RF_PATH] = "path", [RF_STATUS] = "status",
		[RF_HOST] = "host", [RF_CONTENT_TYPE] = "content_type",
		[RF_REQUEST_ID] = "request_id", [RF_TRACEPARENT] = "traceparent",
		[RF_GRPC_STATUS] = "grpc_status",
	};

	return (unsigned int)f < RF_NR ? names[f] : "?";
}

const char *stall_flow_window_name(enum stall_flow_window w)
{
	switch (w) {
	case FLOW_WINDOW_STREAM: return "stream";
	case FLOW_WINDOW_CONN: return "connection";
	default: return NULL;
	}
}

const char *wake_kind_name(enum wake_kind k)
{
	static const char *const names[WAKE_NR] = {
		[WAKE_NONE] = "none", [WAKE_TIMER] = "timer", [WAKE_FUTEX] = "futex",
		[WAKE_UNIX] = "unix_socket", [WAKE_PIPE] = "pipe", [WAKE_EVENTFD] = "eventfd",
		[WAKE_NET] = "network", [WAKE_TCP_LOCAL] = "loopback_tcp",
		[WAKE_SIGNAL] = "signal", [WAKE_CREATED] = "created", [WAKE_OTHER] = "other",
	};

	return (unsigned int)k < WAKE_NR ? names[k] : "other";
}

int request__add_chunk(struct tt_request *r, uint64_t ts)
{
	if (VEC_RESERVE(r->tok_ns, &r->tok_cap, (size_t)r->chunks + 1, UINT32_MAX)) {
		r->truncated = true;
		return -ENOMEM;
	}
	r->tok_ns[r->chunks++] = ts;
	return 0;
}

int request__add_made(struct tt_request *r, uint64_t ts)
{
	if (VEC_RESERVE(r->made_ns, &r->made_cap, (size_t)r->nmade + 1, UINT32_MAX))
		return -ENOMEM;
	r->made_ns[r->nmade++] = ts;
	return 0;
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

/* Sort v[0..n), n > 0, and take its nearest-rank p50, p90, p99 and max. */
static void sorted_pcts(uint64_t *v, uint32_t n, uint64_t *p50, uint64_t *p90, uint64_t *p99,
			uint64_t *max)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	*p50 = pct(v, n, 50);
	*p90 = pct(v, n, 90);
	*p99 = pct(v, n, 99);
	*max = v[n - 1];
}

/* The TTFT breakdown from markers; buf holds at least MIN(nmade, chunks) values. */
static void breakdown(struct tt_request *r, uint64_t *buf)
{
	uint64_t first_send = r->chunks ? r->tok_ns[0] : 0, p90;
	uint32_t n;

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
	if (!n || !buf)
		return;
	for (uint32_t i = 0; i < n; i++)
		buf[i] = r->tok_ns[i] > r->made_ns[i] ? r->tok_ns[i] - r->made_ns[i] : 0;
	r->nemit = n;
	sorted_pcts(buf, n, &r->emit_p50_ns, &p90, &r->emit_p99_ns, &r->emit_max_ns);
}

void request__finish(struct tt_request *r)
{
	uint32_t gaps = r->chunks > 1 ? r->chunks - 1 : 0, need = MAX(gaps, MIN(r->nmade, r->chunks));
	uint64_t stackbuf[256], *buf = stackbuf;

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
	/* one scratch for the sorts below: the stack's unless the stream is long */
	if (need > ARRAY_SIZE(stackbuf) && !(buf = malloc(need * sizeof(*buf))))
		r->truncated = true;
	if (gaps && buf) {
		for (uint32_t i = 0; i < gaps; i++)
			buf[i] = request__itl(r, i);
		sorted_pcts(buf, gaps, &r->itl_p50_ns, &r->itl_p90_ns, &r->itl_p99_ns,
			    &r->itl_max_ns);
	}
	breakdown(r, buf);
	if (buf != stackbuf)
		free(buf);
}
