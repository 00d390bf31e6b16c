// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The --metrics series as OTLP metrics (otlp.h): the same histograms, with the same bucket
 * boundaries (buckets.h) and the same rules (errors count in tokentrace.requests only, never
 * in a latency; a series per process, direction, model, path and called host, at most
 * SERIES_MAX, later ones under "other"), as cumulative histograms and monotonic sums.
 *
 * Each histogram bucket keeps the last value that fell in it as an exemplar, with the trace
 * and span ids of its request, as the OTel SDKs' aligned-bucket reservoir does: a bad bucket
 * leads to a span that shows why.
 *
 * The Resource of a series is its process; the losses (which belong to no process) and
 * tokentrace's own counters go to a resource of their own, tokentrace itself.
 */
#include <stdlib.h>
#include <string.h>
#include "buckets.h"
#include "counts.h"
#include "otlp.h"
#include "otlp_proto.h"
#include "util.h"

#define SERIES_MAX	64
#define SERIES_HARD_MAX	(SERIES_MAX + 16)	/* + an "other" series per process */
#define VAL_MAX		96

struct exemplar {
	uint64_t t_ns;			/* CLOCK_MONOTONIC */
	uint64_t v;
	uint8_t trace_id[16], span_id[8];
	bool set;
};

struct ohist {
	uint64_t n[BUCKETS_MAX + 1];
	uint64_t count, sum, min, max;
	struct exemplar ex[BUCKETS_MAX + 1];
};

struct oseries {
	uint32_t pid;
	bool client;
	char comm[16];
	char model[VAL_MAX], path[VAL_MAX], server[VAL_MAX];
	const char *op;
	struct ohist ttft, tpot, e2e, itl, usage;
	struct status_counts status;
	uint64_t stalls[STALL_NR];
	uint64_t tokens;
};

struct otlp_metrics {
	struct oseries *s[SERIES_HARD_MAX];
	int n;
	uint64_t overflow;
	struct lost_totals lt;
};

struct hdef {
	const char *name, *desc, *unit;
	bool client;
	const struct family_buckets *b;
	size_t off;
	bool tokens;			/* counts, not ns */
};

static const struct hdef hdefs[] = {
	{ "gen_ai.server.time_to_first_token", "Time to first token of successful responses: "
	  "from the read of the request's last byte to the send of the first token.", "s",
	  false, &bucket_ttft, offsetof(struct oseries, ttft), false },
	{ "gen_ai.server.time_per_output_token", "Time per output token after the first, of "
	  "successful responses.", "s", false, &bucket_tpot, offsetof(struct oseries, tpot), false },
	{ "gen_ai.server.request.duration", "Successful, complete requests: request read to last "
	  "byte sent.", "s", false, &bucket_e2e, offsetof(struct oseries, e2e), false },
	{ "tokentrace.inter_token_latency", "Gaps between consecutive streamed tokens (chunks) "
	  "of successful responses.", "s", false, &bucket_itl, offsetof(struct oseries, itl),
	  false },
	{ "gen_ai.client.operation.duration", "Outbound calls, successful and complete: the "
	  "request's send to the last byte received.", "s", true, &bucket_client,
	  offsetof(struct oseries, e2e), false },
	{ "gen_ai.client.operation.time_to_first_chunk", "Outbound streaming calls: the "
	  "request's send to the first chunk received.", "s", true, &bucket_client,
	  offsetof(struct oseries, ttft), false },
	{ "gen_ai.client.operation.time_per_output_chunk", "Outbound streaming calls: each gap "
	  "between two chunks received.", "s", true, &bucket_client,
	  offsetof(struct oseries, itl), false },
	{ "gen_ai.client.token.usage", "Output tokens of outbound calls, as the stream counted "
	  "them.", "{token}", true, &bucket_tokens, offsetof(struct oseries, usage), true },
};

struct otlp_metrics *otlp_metrics__new(void)
{
	return calloc(1, sizeof(struct otlp_metrics));
}

void otlp_metrics__free(struct otlp_metrics *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->n; i++)
		free(m->s[i]);
	free(m);
}

/* ---------------------------------------------------------------- recording */

static void cut(char *dst, const char *src, size_t n)
{
	strncpy_cut(dst, VAL_MAX, src, strnlen(src, n));
}

static struct oseries *series_of(struct otlp_metrics *m, const struct tt_request *r)
{
	char model[VAL_MAX] = "", path[VAL_MAX] = "", server[VAL_MAX] = "";
	bool other = false;
	struct oseries *s;

	cut(model, r->model, sizeof(r->model));
	cut(path, r->path, path_shown_len(r->path, false));	/* never the query */
	if (r->client)
		cut(server, r->host, sizeof(r->host));
again:
	for (int i = 0; i < m->n; i++) {
		s = m->s[i];
		if (s->pid == r->pid && s->client == r->client && !strcmp(s->model, model) &&
		    !strcmp(s->path, path) && !strcmp(s->server, server) &&
		    !strncmp(s->comm, r->comm, sizeof(s->comm)))
			return s;
	}
	if ((m->n >= SERIES_MAX && !other) || m->n >= SERIES_HARD_MAX) {
		if (!other) {
			m->overflow++;
			other = true;
			strcpy(model, "other");
			strcpy(path, "other");
			if (r->client)
				strcpy(server, "other");
			goto again;
		}
		return m->s[m->n - 1];
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->pid = r->pid;
	s->client = r->client;
	memcpy(s->comm, r->comm, sizeof(s->comm));
	strcpy(s->model, model);
	strcpy(s->path, path);
	strcpy(s->server, server);
	s->op = other ? NULL : otlp__operation(r->path);
	m->s[m->n++] = s;
	return s;
}

static void hadd(struct ohist *h, const struct family_buckets *b, uint64_t v, uint64_t t_ns,
		 const struct otlp_ids *ids)
{
	int i = buckets__index(b, v);
	struct exemplar *e = &h->ex[i];

	h->n[i]++;
	h->min = h->count ? MIN(h->min, v) : v;
	h->max = h->count ? MAX(h->max, v) : v;
	h->count++;
	h->sum += v;
	e->t_ns = t_ns;
	e->v = v;
	memcpy(e->trace_id, ids->trace_id, sizeof(e->trace_id));
	memcpy(e->span_id, ids->span_id, sizeof(e->span_id));
	e->set = true;
}

void otlp_metrics__request(struct otlp_metrics *m, const struct tt_request *r,
			   const struct otlp_ids *ids)
{
	const struct family_buckets *bt = r->client ? &bucket_client : &bucket_ttft;
	const struct family_buckets *bi = r->client ? &bucket_client : &bucket_itl;
	const struct family_buckets *be = r->client ? &bucket_client : &bucket_e2e;
	struct oseries *s = series_of(m, r);

	if (!s)
		return;
	status_counts__add(&s->status, r->status);
	for (uint32_t i = 0; r->stalls && i < r->nstalls; i++)
		if ((unsigned int)r->stalls[i].cause < STALL_NR)
			s->stalls[r->stalls[i].cause]++;
	if (request__is_error(r))
		return;
	s->tokens += r->tokens;
	if (r->client && r->model_tokens >= 0)
		hadd(&s->usage, &bucket_tokens, (uint64_t)r->model_tokens, r->t_end_ns, ids);
	if (!r->chunks)
		return;
	if (r->t_start_ns)
		hadd(&s->ttft, bt, r->ttft_ns, r->tok_ns[0], ids);
	for (uint32_t i = 0; i + 1 < r->chunks; i++)
		hadd(&s->itl, bi, request__itl(r, i), r->tok_ns[i + 1], ids);
	/* a client's chunks are its time per output chunk above: no TPOT of its own */
	if (!r->client && r->chunks > 1)
		hadd(&s->tpot, &bucket_tpot, r->tpot_ns, r->tok_ns[r->chunks - 1], ids);
	if (r->complete && r->t_start_ns)
		hadd(&s->e2e, be, r->e2e_ns, r->t_end_ns, ids);
}

void otlp_metrics__summary(struct otlp_metrics *m, const struct summary *sum)
{
	lost_totals__add(&m->lt, sum);
}

/* ---------------------------------------------------------------- encoding */

struct enc {
	struct pbuf *b;
	uint64_t t0, t1;		/* wall ns: the start of the run, now */
	uint32_t points;
};

static void series_attrs(struct pbuf *b, uint32_t field, const struct oseries *s)
{
	if (s->op)
		otlp__kv_cstr(b, field, "gen_ai.operation.name", s->op);
	if (s->model[0])
		otlp__kv_cstr(b, field, "gen_ai.request.model", s->model);
	if (s->path[0])
		otlp__kv_cstr(b, field, "url.path", s->path);
	if (s->client && s->server[0])
		otlp__kv_cstr(b, field, "server.address", s->server);
	otlp__kv_str(b, field, "tokentrace.comm", s->comm, sizeof(s->comm));
}

static double unit_of(const struct hdef *d, uint64_t v)
{
	return d->tokens ? (double)v : (double)v / 1e9;
}

static void hist_point(struct enc *e, const struct hdef *d, const struct oseries *s)
{
	const struct ohist *h = (const struct ohist *)((const char *)s + d->off);
	double bounds[BUCKETS_MAX];
	struct pbuf *b = e->b;

	for (int i = 0; i < d->b->n; i++)
		bounds[i] = unit_of(d, d->b->le_ns[i]);
	pbuf__open(b, HIST_POINTS);
	series_attrs(b, HDP_ATTR, s);
	if (d->tokens)
		otlp__kv_cstr(b, HDP_ATTR, "gen_ai.token.type", "output");
	pbuf__fixed64(b, HDP_START, e->t0);
	pbuf__fixed64(b, HDP_TIME, e->t1);
	pbuf__fixed64(b, HDP_COUNT, h->count);
	pbuf__double(b, HDP_SUM, unit_of(d, h->sum));
	pbuf__packed_fixed64(b, HDP_BUCKETS, h->n, d->b->n + 1);
	pbuf__packed_double(b, HDP_BOUNDS, bounds, d->b->n);
	for (int i = 0; i <= d->b->n; i++) {
		const struct exemplar *x = &h->ex[i];

		if (!x->set)
			continue;
		pbuf__open(b, HDP_EXEMPLARS);
		pbuf__fixed64(b, EXEMPLAR_TIME, mono_to_wall_ns(x->t_ns));
		pbuf__double(b, EXEMPLAR_AS_DOUBLE, unit_of(d, x->v));
		pbuf__bytes(b, EXEMPLAR_SPAN_ID, x->span_id, 8);
		pbuf__bytes(b, EXEMPLAR_TRACE_ID, x->trace_id, 16);
		pbuf__close(b);
	}
	if (h->count) {
		pbuf__double(b, HDP_MIN, unit_of(d, h->min));
		pbuf__double(b, HDP_MAX, unit_of(d, h->max));
	}
	pbuf__close(b);
	e->points++;
}

static void metric_open(struct pbuf *b, const char *name, const char *desc, const char *unit,
			uint32_t kind)
{
	pbuf__open(b, SCOPE_ITEMS);
	pbuf__cstr(b, METRIC_NAME, name);
	pbuf__cstr(b, METRIC_DESCRIPTION, desc);
	if (unit)
		pbuf__cstr(b, METRIC_UNIT, unit);
	pbuf__open(b, kind);
}

static void metric_close(struct pbuf *b, bool sum)
{
	pbuf__uint(b, sum ? SUM_TEMPORALITY : HIST_TEMPORALITY, TEMPORALITY_CUMULATIVE);
	if (sum)
		pbuf__uint(b, SUM_MONOTONIC, 1);
	pbuf__close(b);
	pbuf__close(b);
}

/* one monotonic sum's data point; attributes: a series' (s), then key=value (key not NULL) */
static void sum_point(struct enc *e, const struct oseries *s, const char *key, const char *sv,
		      int64_t iv, uint64_t v)
{
	struct pbuf *b = e->b;

	pbuf__open(b, SUM_POINTS);
	if (s)
		series_attrs(b, NDP_ATTR, s);
	if (key && sv)
		otlp__kv_cstr(b, NDP_ATTR, key, sv);
	else if (key)
		otlp__kv_int(b, NDP_ATTR, key, iv);
	pbuf__fixed64(b, NDP_START, e->t0);
	pbuf__fixed64(b, NDP_TIME, e->t1);
	pbuf__fixed64(b, NDP_AS_INT, v);
	pbuf__close(b);
	e->points++;
}

static bool has(const struct otlp_metrics *m, uint32_t pid, int client)
{
	for (int i = 0; i < m->n; i++)
		if (m->s[i]->pid == pid && (client < 0 || m->s[i]->client == client))
			return true;
	return false;
}

static void process_counters(struct enc *e, const struct otlp_metrics *m, uint32_t pid)
{
	struct pbuf *b = e->b;

	metric_open(b, "tokentrace.requests", "Finished requests, by HTTP status (none: no "
		    "status was sent).", "{request}", METRIC_SUM);
	for (int i = 0; i < m->n; i++) {
		const struct oseries *s = m->s[i];

		const struct status_counts *c = &s->status;

		for (int j = 0; s->pid == pid && j < c->nstatus; j++) {
			if (c->status[j] > 0)
				sum_point(e, s, "http.response.status_code", NULL, c->status[j],
					  c->n[j]);
			else
				sum_point(e, s, "tokentrace.status", c->status[j] ? "other" :
					  "none", 0, c->n[j]);
		}
	}
	metric_close(b, true);
	metric_open(b, "tokentrace.output_tokens", "Tokens streamed by successful responses "
		    "(the stream's own count where it gives one, else chunks).", "{token}",
		    METRIC_SUM);
	for (int i = 0; i < m->n; i++)
		if (m->s[i]->pid == pid)
			sum_point(e, m->s[i], NULL, NULL, 0, m->s[i]->tokens);
	metric_close(b, true);
	metric_open(b, "tokentrace.stalls", "Stalls in streams, by the cause that took most of "
		    "the gap.", "{stall}", METRIC_SUM);
	for (int i = 0; i < m->n; i++)
		for (int c = 0; m->s[i]->pid == pid && c < STALL_NR; c++)
			sum_point(e, m->s[i], "tokentrace.stall.cause", stall_cause_name(c), 0,
				  m->s[i]->stalls[c]);
	metric_close(b, true);
}

static void process_metrics(struct enc *e, const struct otlp_metrics *m, uint32_t pid,
			    const uint8_t *res, size_t reslen)
{
	struct pbuf *b = e->b;

	pbuf__open(b, EXPORT_RESOURCE);
	pbuf__msg(b, RES_RESOURCE, res, reslen);
	pbuf__open(b, RES_SCOPE);
	otlp__scope(b, SCOPE_SCOPE);
	for (size_t k = 0; k < ARRAY_SIZE(hdefs); k++) {
		const struct hdef *d = &hdefs[k];

		if (!has(m, pid, d->client))
			continue;
		metric_open(b, d->name, d->desc, d->unit, METRIC_HISTOGRAM);
		for (int i = 0; i < m->n; i++)
			if (m->s[i]->pid == pid && m->s[i]->client == d->client)
				hist_point(e, d, m->s[i]);
		metric_close(b, false);
	}
	process_counters(e, m, pid);
	pbuf__close(b);
	pbuf__close(b);
}

static void own_counter(struct enc *e, const char *name, const char *desc, uint64_t v)
{
	metric_open(e->b, name, desc, NULL, METRIC_SUM);
	sum_point(e, NULL, NULL, NULL, 0, v);
	metric_close(e->b, true);
}

static void own_metrics(struct enc *e, const struct otlp_metrics *m, const uint8_t *res,
			size_t reslen, const struct otlp_counter *extra, int nextra)
{
	struct pbuf *b = e->b;

	pbuf__open(b, EXPORT_RESOURCE);
	pbuf__msg(b, RES_RESOURCE, res, reslen);
	pbuf__open(b, RES_SCOPE);
	otlp__scope(b, SCOPE_SCOPE);
	own_counter(e, "tokentrace.events_lost", "Kernel records lost (ring buffer full, "
		    "connection table full): affected requests say so.", m->lt.lost);
	metric_open(b, "tokentrace.lost", "What was lost or left out, by where: each drop and "
		    "each bound reached.", NULL, METRIC_SUM);
	for (int i = 0; i < LOST_NR; i++)
		sum_point(e, NULL, "tokentrace.lost.what", lost_kind_name(i), 0, m->lt.by[i]);
	metric_close(b, true);
	own_counter(e, "tokentrace.lost_between_requests", "Losses with no request in flight, "
		    "or crossing a request and its answer: whole requests may be among them.",
		    m->lt.between);
	own_counter(e, "tokentrace.left_out_by_budget", "Requests (exchanges) not traced, "
		    "whole, to keep to --budget's records a second.", m->lt.left_out);
	own_counter(e, "tokentrace.label_overflow", "Requests counted under model and path "
		    "\"other\": more combinations than tokentrace keeps.", m->overflow);
	for (int i = 0; i < nextra; i++)
		own_counter(e, extra[i].name, extra[i].description, extra[i].value);
	pbuf__close(b);
	pbuf__close(b);
}

void otlp_metrics__encode(struct otlp_metrics *m, struct pbuf *b, uint64_t t_start_ns,
			  uint64_t t_now_ns, otlp_resource_fn res, void *ud,
			  const struct otlp_counter *extra, int nextra, uint32_t *points)
{
	struct enc e = { b, mono_to_wall_ns(t_start_ns), mono_to_wall_ns(t_now_ns), 0 };
	const uint8_t *rb;
	size_t rl;

	for (int i = 0; i < m->n; i++) {
		uint32_t pid = m->s[i]->pid;
		bool seen = false;

		for (int j = 0; j < i && !seen; j++)
			seen = m->s[j]->pid == pid;
		if (seen || !(rb = res(ud, pid, &rl)))
			continue;
		process_metrics(&e, m, pid, rb, rl);
	}
	if ((rb = res(ud, 0, &rl)))
		own_metrics(&e, m, rb, rl, extra, nextra);
	*points = e.points;
}
