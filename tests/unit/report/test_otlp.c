// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --otlp's encoding, without a network: the configuration from the OTEL_* variables, the W3C
 * traceparent rules, a request's span (ids, kind, GenAI and tokentrace attributes, stall and
 * token events, their bounds), the metrics (OTel bucket boundaries, cumulative counts,
 * exemplars with the spans' ids), and both whole messages decoded by protoc against the
 * schema stated in otlp_subset.proto (unknown fields, wrong wire types and invalid UTF-8
 * fail there). The sending is test_otlp_export.c.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "buckets.h"
#include "otlp.h"
#include "otlp_walk.h"
#include "stall.h"
#include "stall_text.h"
#include "util.h"

#define WALL_OFF	1700000000000000000ll	/* CLOCK_REALTIME - CLOCK_MONOTONIC, fixed */

/* ---------------------------------------------------------------- config */

static const char *const *fake_env;

static const char *fake_get(const char *name)
{
	for (int i = 0; fake_env && fake_env[i]; i += 2)
		if (!strcmp(fake_env[i], name))
			return fake_env[i + 1];
	return NULL;
}

static int load(struct otlp_config *c, const char *url, const char *const *env, char *why)
{
	fake_env = env;
	why[0] = '\0';
	return otlp_config__load(c, url, fake_get, why, 256);
}

static void test_config(void **state)
{
	struct otlp_config c;
	char why[256], shown[OTLP_URL_MAX];

	(void)state;
	assert_int_equal(load(&c, NULL, NULL, why), 0);
	assert_string_equal(c.traces.url, "http://localhost:4318/v1/traces");
	assert_string_equal(c.metrics.url, "http://localhost:4318/v1/metrics");
	assert_string_equal(c.service_name, "tokentrace");
	assert_true(c.gzip);
	assert_int_equal(c.batch_max, 512);

	const char *const e1[] = {
		"OTEL_EXPORTER_OTLP_ENDPOINT", "https://otel.example:4318/",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m.example/custom",
		"OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20abc, x-tenant = t1",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-tenant=t2",
		"OTEL_SERVICE_NAME", "llm-node",
		"OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod,k8s.node.name=n%2C1",
		"OTEL_EXPORTER_OTLP_COMPRESSION", "none",
		"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "64",
		NULL };
	assert_int_equal(load(&c, NULL, e1, why), 0);
	assert_string_equal(c.traces.url, "https://otel.example:4318/v1/traces");
	assert_string_equal(c.metrics.url, "http://m.example/custom");
	assert_int_equal(c.traces.nheaders, 2);
	assert_string_equal(c.traces.headers[0], "Authorization: Bearer abc");
	assert_string_equal(c.traces.headers[1], "x-tenant: t2");	/* the signal's own wins */
	assert_string_equal(c.metrics.headers[1], "x-tenant: t1");
	assert_string_equal(c.service_name, "llm-node");
	assert_int_equal(c.nres_attr, 2);
	assert_string_equal(c.res_attr[1].value, "n,1");
	assert_false(c.gzip);
	assert_int_equal(c.batch_max, 64);

	/* --otlp URL: a base, over every endpoint variable */
	assert_int_equal(load(&c, "http://127.0.0.1:9999", e1, why), 0);
	assert_string_equal(c.traces.url, "http://127.0.0.1:9999/v1/traces");
	assert_string_equal(c.metrics.url, "http://127.0.0.1:9999/v1/metrics");
	assert_int_equal(load(&c, "http://127.0.0.1:9999/v1/traces", NULL, why), 0);
	assert_string_equal(c.traces.url, "http://127.0.0.1:9999/v1/traces");
	assert_string_equal(c.metrics.url, "http://127.0.0.1:9999/v1/metrics");

	/* refused, each with its one reason, never a header's value */
	const char *const bad[][3] = {
		{ "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "http/protobuf only" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://x", "not an http:// or https:// URL" },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "Authorization=secret%0d%0aX-Evil: 1",
		  "OTEL_EXPORTER_OTLP_HEADERS: not name=value" },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "bad name=secret", "OTEL_EXPORTER_OTLP_HEADERS" },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "content-type=secret", "OTEL_EXPORTER_OTLP_HEADERS" },
		{ "OTEL_BSP_SCHEDULE_DELAY", "soon", "not a number" },
		{ "OTEL_EXPORTER_OTLP_COMPRESSION", "zstd", "gzip or none" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		const char *const e[] = { bad[i][0], bad[i][1], NULL };

		assert_int_equal(load(&c, NULL, e, why), -EINVAL);
		assert_non_null(strstr(why, bad[i][2]));
		assert_null(strstr(why, "secret"));
	}
	assert_int_equal(load(&c, "localhost:4318", NULL, why), -EINVAL);
	assert_non_null(strstr(why, "--otlp"));

	otlp_config__url_shown("https://user:pw@h.example:4318/v1/traces", shown, sizeof(shown));
	assert_string_equal(shown, "https://h.example:4318/v1/traces");
}

/* ---------------------------------------------------------------- traceparent */

static void test_traceparent(void **state)
{
	uint8_t t[16], p[8], fl;
	static const char *const bad[] = {
		"",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0",	/* short */
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-",	/* 00 is 55 long */
		"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",	/* version ff */
		"00-00000000000000000000000000000000-b7ad6b7169203331-01",	/* zero trace */
		"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",	/* zero parent */
		"00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",	/* upper case */
		"00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0g",
		"01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x",	/* later: '-' next */
	};

	(void)state;
	assert_int_equal(otlp__traceparent("00-0af7651916cd43dd8448eb211c80319c-"
					   "b7ad6b7169203331-01", t, p, &fl), 0);
	assert_int_equal(t[0], 0x0a);
	assert_int_equal(t[15], 0x9c);
	assert_int_equal(p[0], 0xb7);
	assert_int_equal(p[7], 0x31);
	assert_int_equal(fl, 1);
	/* a later version may carry more after the flags */
	assert_int_equal(otlp__traceparent("01-0af7651916cd43dd8448eb211c80319c-"
					   "b7ad6b7169203331-00-", t, p, &fl), 0);
	assert_int_equal(fl, 0);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(otlp__traceparent(bad[i], t, p, &fl), -EINVAL);
	assert_int_equal(otlp__traceparent(NULL, t, p, &fl), -EINVAL);
}

static void test_operation(void **state)
{
	(void)state;
	assert_string_equal(otlp__operation("/v1/chat/completions?key=1"), "chat");
	assert_string_equal(otlp__operation("/v1/messages"), "chat");
	assert_string_equal(otlp__operation("/api/generate"), "text_completion");
	assert_string_equal(otlp__operation("/v1/embeddings/"), "embeddings");
	assert_null(otlp__operation("/health"));
	assert_null(otlp__operation(""));
}

/* ---------------------------------------------------------------- a request's span */

static struct tt_request *mkreq(bool client, uint32_t chunks)
{
	struct tt_request *r = request__new();
	struct tt_stall *st;

	assert_non_null(r);
	r->pid = 4242;
	r->client = client;
	strcpy(r->comm, "vllm");
	strcpy(r->conn, "10.0.0.5:8000-10.0.0.9:51000");
	strcpy(r->method, "POST");
	strcpy(r->path, "/v1/chat/completions?api_key=SECRET");
	strcpy(r->host, "llm.internal:8000");
	strcpy(r->model, "llama-3-8b");
	strcpy(r->resp_id, "chatcmpl-1");
	strcpy(r->request_id, "rid-1");
	r->status = 200;
	r->format = FMT_SSE;
	r->model_tokens = chunks;
	r->t_recv_ns = 1000000000;
	r->t_start_ns = 1000100000;
	for (uint32_t i = 0; i < chunks; i++)
		request__add_chunk(r, r->t_start_ns + 50000000 + i * 10000000ull +
				      (i >= 5 ? 300000000ull : 0));
	r->t_end_ns = r->tok_ns[chunks - 1] + 1000;
	r->complete = true;
	r->saw_final = true;
	request__finish(r);
	if (chunks < 6)
		return r;
	/* one stall: the gap after token 5, mostly on CPU */
	st = calloc(1, sizeof(*st));
	assert_non_null(st);
	st->after_chunk = 4;
	st->t_begin_ns = r->tok_ns[4];
	st->t_end_ns = r->tok_ns[5];
	st->part_ns[STALL_ONCPU] = 250000000;
	st->part_ns[STALL_RUNQ] = st->t_end_ns - st->t_begin_ns - 250000000;
	st->cause = STALL_ONCPU;
	st->engine_late = -1;
	strcpy(st->stack, "schedule_heavy <- step");
	r->stalls = st;
	r->nstalls = r->stalls_cap = 1;
	request__finish(r);
	return r;
}

static struct pbuf_field span_of(struct pbuf *b, const struct tt_request *r,
				 const struct otlp_ids *ids, uint32_t token_events)
{
	struct otlp_span_opts o = { .token_events = token_events };

	pbuf__init(b, 1 << 20);
	otlp__span(b, r, ids, &o);
	assert_true(pbuf__ok(b));
	return pb_whole(b->buf, b->len);
}

static void test_span(void **state)
{
	struct tt_request *r = mkreq(false, 12);
	struct otlp_ids ids = { .trace_flags = 1 };
	struct pbuf b;
	struct pbuf_field s, f, ev, v;
	char str[STALL_LINE_MAX];
	int64_t n;
	bool bv;

	(void)state;
	assert_int_equal(otlp__traceparent("00-0af7651916cd43dd8448eb211c80319c-"
					   "b7ad6b7169203331-01", ids.trace_id, ids.parent_id,
					   &ids.trace_flags), 0);
	ids.has_parent = ids.parent_remote = true;
	memcpy(ids.span_id, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
	s = span_of(&b, r, &ids, 0);

	assert_true(pb_get(s, SPAN_TRACE_ID, 0, &f));
	assert_int_equal(f.len, 16);
	assert_memory_equal(f.data, ids.trace_id, 16);
	assert_true(pb_get(s, SPAN_PARENT_SPAN_ID, 0, &f));
	assert_memory_equal(f.data, ids.parent_id, 8);
	assert_true(pb_get(s, SPAN_SPAN_ID, 0, &f));
	assert_memory_equal(f.data, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
	assert_true(pb_get(s, SPAN_FLAGS, 0, &f));
	assert_int_equal(f.wire, PB_I32);
	assert_int_equal(f.v, 0x301);		/* sampled, parent known remote */
	assert_true(pb_get(s, SPAN_KIND, 0, &f));
	assert_int_equal(f.v, SPAN_KIND_SERVER);
	assert_true(pb_get(s, SPAN_NAME, 0, &f));
	assert_true(pb_str_is(f, "chat llama-3-8b"));
	assert_true(pb_get(s, SPAN_START, 0, &f));
	assert_int_equal(f.v, WALL_OFF + r->t_recv_ns);
	assert_true(pb_get(s, SPAN_END, 0, &f));
	assert_int_equal(f.v, WALL_OFF + r->t_end_ns);

	assert_true(kv_str(s, SPAN_ATTR, "gen_ai.operation.name", str, sizeof(str)));
	assert_string_equal(str, "chat");
	assert_true(kv_str(s, SPAN_ATTR, "gen_ai.request.model", str, sizeof(str)));
	assert_string_equal(str, "llama-3-8b");
	assert_true(kv_str(s, SPAN_ATTR, "gen_ai.response.id", str, sizeof(str)));
	assert_true(kv_int(s, SPAN_ATTR, "gen_ai.usage.output_tokens", &n));
	assert_int_equal(n, 12);
	assert_true(kv_str(s, SPAN_ATTR, "url.path", str, sizeof(str)));
	assert_string_equal(str, "/v1/chat/completions");	/* never the query */
	assert_null(memmem(b.buf, b.len, "SECRET", 6));
	assert_true(kv_str(s, SPAN_ATTR, "http.request.method", str, sizeof(str)));
	assert_true(kv_int(s, SPAN_ATTR, "http.response.status_code", &n));
	assert_int_equal(n, 200);
	assert_true(kv_str(s, SPAN_ATTR, "server.address", str, sizeof(str)));
	assert_string_equal(str, "llm.internal");
	assert_true(kv_int(s, SPAN_ATTR, "server.port", &n));
	assert_int_equal(n, 8000);
	assert_true(kv_str(s, SPAN_ATTR, "client.address", str, sizeof(str)));
	assert_string_equal(str, "10.0.0.9");
	assert_false(kv_find(s, SPAN_ATTR, "error.type", &v));
	assert_false(pb_get(s, SPAN_STATUS, 0, &f));
	assert_true(kv_int(s, SPAN_ATTR, "tokentrace.ttft_ns", &n));
	assert_int_equal(n, (int64_t)r->ttft_ns);
	assert_true(kv_int(s, SPAN_ATTR, "tokentrace.itl.max_ns", &n));
	assert_int_equal(n, 310000000);
	assert_true(kv_int(s, SPAN_ATTR, "tokentrace.tpot_ns", &n));
	assert_int_equal(n, (int64_t)r->tpot_ns);
	assert_true(kv_bool(s, SPAN_ATTR, "tokentrace.complete", &bv) && bv);
	assert_true(kv_bool(s, SPAN_ATTR, "tokentrace.aborted", &bv) && !bv);
	assert_true(kv_bool(s, SPAN_ATTR, "tokentrace.lost", &bv) && !bv);

	/* events: the first token, then the stall with its line and its parts */
	assert_int_equal(pb_count(s, SPAN_EVENT), 2);
	assert_true(pb_get(s, SPAN_EVENT, 1, &ev));
	assert_true(pb_get(ev, EVENT_NAME, 0, &f));
	assert_true(pb_str_is(f, "tokentrace.stall"));
	assert_true(pb_get(ev, EVENT_TIME, 0, &f));
	assert_int_equal(f.v, WALL_OFF + r->tok_ns[4]);
	assert_true(kv_int(ev, EVENT_ATTR, "tokentrace.stall.gap_ns", &n));
	assert_int_equal(n, 310000000);
	assert_true(kv_int(ev, EVENT_ATTR, "tokentrace.stall.after_token", &n));
	assert_int_equal(n, 5);
	assert_true(kv_str(ev, EVENT_ATTR, "tokentrace.stall.cause", str, sizeof(str)));
	assert_string_equal(str, stall_cause_name(STALL_ONCPU));
	assert_true(kv_str(ev, EVENT_ATTR, "tokentrace.stall.explain", str, sizeof(str)));
	{
		char line[STALL_LINE_MAX];

		stall__describe(&r->stalls[0], line, sizeof(line));
		assert_string_equal(str, line);
	}
	snprintf(str, sizeof(str), "tokentrace.stall.part.%s_ns", stall_cause_name(STALL_RUNQ));
	assert_true(kv_int(ev, EVENT_ATTR, str, &n));
	assert_int_equal(n, 60000000);
	snprintf(str, sizeof(str), "tokentrace.stall.part.%s_ns", stall_cause_name(STALL_IO));
	assert_false(kv_int(ev, EVENT_ATTR, str, &n));	/* zero parts are left out */
	assert_false(pb_get(s, SPAN_DROPPED_EVENTS, 0, &f));
	pbuf__free(&b);

	/* token events, bounded: what was cut is counted */
	s = span_of(&b, r, &ids, 4);
	assert_int_equal(pb_count(s, SPAN_EVENT), 2 + 4);
	assert_true(pb_get(s, SPAN_DROPPED_EVENTS, 0, &f));
	assert_int_equal(f.v, 8);
	assert_true(kv_int(s, SPAN_ATTR, "tokentrace.token_events_cut", &n));
	assert_int_equal(n, 8);
	assert_true(pb_get(s, SPAN_EVENT, 5, &ev));
	assert_true(kv_int(ev, EVENT_ATTR, "tokentrace.token.index", &n));
	assert_int_equal(n, 3);
	pbuf__free(&b);
	request__free(r);
}

static void test_span_client_error(void **state)
{
	struct tt_request *r = mkreq(true, 3);
	struct otlp_ids ids = { .trace_flags = 1 };
	struct pbuf b;
	struct pbuf_field s, f, st;
	char str[64];
	int64_t n;

	(void)state;
	memset(ids.trace_id, 7, 16);
	memset(ids.span_id, 8, 8);
	r->status = 503;
	/* a model name with control bytes and invalid UTF-8 from the wire */
	strcpy(r->model, "m\x1b[31m\xff");
	strcpy(r->host, "[fd00::1]");
	s = span_of(&b, r, &ids, 0);
	assert_true(pb_get(s, SPAN_KIND, 0, &f));
	assert_int_equal(f.v, SPAN_KIND_CLIENT);
	assert_false(pb_get(s, SPAN_PARENT_SPAN_ID, 0, &f));
	assert_true(pb_get(s, SPAN_FLAGS, 0, &f));
	assert_int_equal(f.v, 0x101);		/* a local root */
	assert_true(kv_str(s, SPAN_ATTR, "error.type", str, sizeof(str)));
	assert_string_equal(str, "503");
	assert_true(pb_get(s, SPAN_STATUS, 0, &st));
	assert_true(pb_get(st, STATUS_CODE, 0, &f));
	assert_int_equal(f.v, STATUS_CODE_ERROR);
	assert_true(kv_str(s, SPAN_ATTR, "gen_ai.request.model", str, sizeof(str)));
	assert_string_equal(str, "m\\u001b[31m\xef\xbf\xbd");
	/* a client: server.* is the API it called, port from the connection */
	assert_true(kv_str(s, SPAN_ATTR, "server.address", str, sizeof(str)));
	assert_string_equal(str, "fd00::1");
	assert_true(kv_int(s, SPAN_ATTR, "server.port", &n));
	assert_int_equal(n, 51000);
	assert_false(kv_find(s, SPAN_ATTR, "client.address", &f));
	pbuf__free(&b);

	/* a 4xx served is the client's error, not the server's; an abort is one */
	r->client = false;
	r->status = 404;
	s = span_of(&b, r, &ids, 0);
	assert_false(kv_find(s, SPAN_ATTR, "error.type", &f));
	pbuf__free(&b);
	r->status = 200;
	r->abort = ABORT_CLIENT;
	s = span_of(&b, r, &ids, 0);
	assert_true(kv_str(s, SPAN_ATTR, "error.type", str, sizeof(str)));
	assert_string_equal(str, "client_closed");
	pbuf__free(&b);
	request__free(r);
}

/* ---------------------------------------------------------------- metrics */

static const uint8_t *res_fn(void *ud, uint32_t pid, size_t *len)
{
	static uint8_t res[2][64];
	struct pbuf b;

	pbuf__init(&b, 64);
	otlp__kv_int(&b, RESOURCE_ATTR, "process.pid", pid);
	assert_true(pbuf__ok(&b));
	memcpy(res[!!pid], b.buf, b.len);
	*len = b.len;
	pbuf__free(&b);
	(void)ud;
	return res[!!pid];
}

/* the Metric named name in the first ResourceMetrics of process pid */
static bool metric(struct pbuf_field req, uint32_t pid, const char *name, struct pbuf_field *m)
{
	struct pbuf_field rm, res, sm, f;
	int64_t p;

	for (int i = 0; pb_get(req, EXPORT_RESOURCE, i, &rm); i++) {
		if (!pb_get(rm, RES_RESOURCE, 0, &res) ||
		    !kv_int(res, RESOURCE_ATTR, "process.pid", &p) || p != pid)
			continue;
		assert_true(pb_get(rm, RES_SCOPE, 0, &sm));
		for (int j = 0; pb_get(sm, SCOPE_ITEMS, j, m); j++)
			if (pb_get(*m, METRIC_NAME, 0, &f) && pb_str_is(f, name))
				return true;
	}
	return false;
}

static uint64_t fixed_at(struct pbuf_field packed, int i)
{
	uint64_t v = 0;

	assert_true((size_t)(i + 1) * 8 <= packed.len);
	for (int k = 0; k < 8; k++)
		v |= (uint64_t)packed.data[i * 8 + k] << (8 * k);
	return v;
}

static void test_metrics(void **state)
{
	struct otlp_metrics *m = otlp_metrics__new();
	struct tt_request *r = mkreq(false, 12), *e = mkreq(false, 2);
	struct otlp_ids ids = { .trace_flags = 1 };
	struct pbuf b;
	struct pbuf_field req, mt, h, dp, f, ex;
	struct otlp_counter extra = { "tokentrace.test", "x", 7 };
	uint32_t points;
	uint64_t sum = 0;
	int ttft_bucket;

	(void)state;
	assert_non_null(m);
	memset(ids.trace_id, 0xab, 16);
	memset(ids.span_id, 0xcd, 8);
	otlp_metrics__request(m, r, &ids);
	otlp_metrics__request(m, r, &ids);
	e->status = 500;	/* an error: in tokentrace.requests only */
	otlp_metrics__request(m, e, &ids);
	pbuf__init(&b, 1 << 22);
	otlp_metrics__encode(m, &b, 1000, 2000, res_fn, NULL, &extra, 1, &points);
	assert_true(pbuf__ok(&b));
	req = pb_whole(b.buf, b.len);
	assert_true(points > 0);

	assert_true(metric(req, 4242, "gen_ai.server.time_to_first_token", &mt));
	assert_true(pb_get(mt, METRIC_UNIT, 0, &f) && pb_str_is(f, "s"));
	assert_true(pb_get(mt, METRIC_HISTOGRAM, 0, &h));
	assert_true(pb_get(h, HIST_TEMPORALITY, 0, &f));
	assert_int_equal(f.v, TEMPORALITY_CUMULATIVE);
	assert_int_equal(pb_count(h, HIST_POINTS), 1);
	assert_true(pb_get(h, HIST_POINTS, 0, &dp));
	assert_true(pb_get(dp, HDP_COUNT, 0, &f));
	assert_int_equal(f.v, 2);
	assert_true(pb_get(dp, HDP_BOUNDS, 0, &f));
	assert_int_equal(f.len, bucket_ttft.n * 8);
	for (int i = 0; i < bucket_ttft.n; i++) {
		uint64_t u = fixed_at(f, i);
		double d;

		memcpy(&d, &u, 8);
		assert_true(d == (double)bucket_ttft.le_ns[i] / 1e9);
	}
	assert_true(pb_get(dp, HDP_BUCKETS, 0, &f));
	assert_int_equal(f.len, (bucket_ttft.n + 1) * 8);
	ttft_bucket = buckets__index(&bucket_ttft, r->ttft_ns);
	for (int i = 0; i <= bucket_ttft.n; i++) {
		assert_int_equal(fixed_at(f, i), i == ttft_bucket ? 2 : 0);
		sum += fixed_at(f, i);
	}
	assert_int_equal(sum, 2);
	assert_true(pb_get(dp, HDP_SUM, 0, &f));
	assert_true(pb_double(&f) == (double)(2 * r->ttft_ns) / 1e9);
	/* one exemplar, in the bucket that was hit, pointing at the span */
	assert_int_equal(pb_count(dp, HDP_EXEMPLARS), 1);
	assert_true(pb_get(dp, HDP_EXEMPLARS, 0, &ex));
	assert_true(pb_get(ex, EXEMPLAR_TRACE_ID, 0, &f));
	assert_memory_equal(f.data, ids.trace_id, 16);
	assert_true(pb_get(ex, EXEMPLAR_SPAN_ID, 0, &f));
	assert_memory_equal(f.data, ids.span_id, 8);
	assert_true(pb_get(ex, EXEMPLAR_AS_DOUBLE, 0, &f));
	assert_true(pb_double(&f) == (double)r->ttft_ns / 1e9);
	assert_true(pb_get(dp, HDP_START, 0, &f));
	assert_int_equal(f.v, WALL_OFF + 1000);

	/* ITL: every gap of both requests */
	assert_true(metric(req, 4242, "tokentrace.inter_token_latency", &mt));
	assert_true(pb_get(mt, METRIC_HISTOGRAM, 0, &h));
	assert_true(pb_get(h, HIST_POINTS, 0, &dp));
	assert_true(pb_get(dp, HDP_COUNT, 0, &f));
	assert_int_equal(f.v, 2 * 11);
	/* no client calls: no client histograms */
	assert_false(metric(req, 4242, "gen_ai.client.operation.duration", &mt));

	/* requests by status, the error among them */
	assert_true(metric(req, 4242, "tokentrace.requests", &mt));
	assert_true(pb_get(mt, METRIC_SUM, 0, &h));
	assert_true(pb_get(h, SUM_MONOTONIC, 0, &f) && f.v == 1);
	assert_int_equal(pb_count(h, SUM_POINTS), 2);
	assert_true(pb_get(h, SUM_POINTS, 1, &dp));
	{
		int64_t st;

		assert_true(kv_int(dp, NDP_ATTR, "http.response.status_code", &st));
		assert_int_equal(st, 500);
	}
	assert_true(pb_get(dp, NDP_AS_INT, 0, &f));
	assert_int_equal(f.v, 1);
	/* tokentrace's own resource: losses and the extra counters */
	assert_true(metric(req, 0, "tokentrace.events_lost", &mt));
	assert_true(metric(req, 0, "tokentrace.test", &mt));
	assert_true(pb_get(mt, METRIC_SUM, 0, &h));
	assert_true(pb_get(h, SUM_POINTS, 0, &dp));
	assert_true(pb_get(dp, NDP_AS_INT, 0, &f) && f.v == 7);
	pbuf__free(&b);
	request__free(r);
	request__free(e);
	otlp_metrics__free(m);
}

/* ---------------------------------------------------------------- protoc */

/* protoc's decoding of msg as type, against otlp_subset.proto; NULL if protoc failed */
static char *protoc_decode(const uint8_t *msg, size_t len, const char *type)
{
	char dir[512], in[] = "/tmp/tt-otlp-XXXXXX", cmd[2048], *out = NULL;
	const char *slash = strrchr(__FILE__, '/');
	size_t cap = 0, n = 0, k;
	char buf[4096];
	int fd = mkstemp(in);
	FILE *p;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, msg, len), (ssize_t)len);
	close(fd);
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - __FILE__) : 1,
		 slash ? __FILE__ : ".");
	snprintf(cmd, sizeof(cmd), "protoc --proto_path=%s --decode=otlp_subset.%s "
		 "%s/otlp_subset.proto < %s 2>&1", dir, type, dir, in);
	p = popen(cmd, "r");
	assert_non_null(p);
	while ((k = fread(buf, 1, sizeof(buf), p)) > 0) {
		if (n + k + 1 > cap) {
			cap = (n + k + 1) * 2;
			out = realloc(out, cap);
			assert_non_null(out);
		}
		memcpy(out + n, buf, k);
		n += k;
	}
	if (out)
		out[n] = '\0';
	if (pclose(p)) {
		fprintf(stderr, "protoc failed: %s\n", out ? out : "");
		free(out);
		out = NULL;
	}
	unlink(in);
	return out;
}

/* a field protoc does not know shows by its number: "12: 5", "12 {" */
static void no_unknown_fields(const char *text)
{
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		while (*l == ' ')
			l++;
		if (*l >= '0' && *l <= '9') {
			fprintf(stderr, "unknown field: %.60s\n", l);
			fail();
		}
	}
}

static void test_protoc(void **state)
{
	struct tt_request *r = mkreq(false, 12);
	struct otlp_ids ids = { .trace_flags = 1 };
	struct otlp_config c;
	struct otlp_proc proc = { .pid = 4242, .exe = "python3.12",
				  .container_id = "0123456789abcdef", .pod_uid = "pod-uid-1" };
	struct otlp_metrics *m = otlp_metrics__new();
	struct otlp_span_opts so = { .token_events = 3 };
	struct pbuf b;
	uint32_t points;
	char why[256], *t;

	(void)state;
	assert_int_equal(load(&c, NULL, NULL, why), 0);
	memset(ids.trace_id, 0x11, 16);
	memset(ids.span_id, 0x22, 8);
	strcpy(r->model, "bad\xff utf8");	/* must still decode: cleaned */
	pbuf__init(&b, 1 << 20);
	pbuf__open(&b, EXPORT_RESOURCE);
	otlp__resource(&b, RES_RESOURCE, &c, "node-1", &proc);
	pbuf__open(&b, RES_SCOPE);
	otlp__scope(&b, SCOPE_SCOPE);
	pbuf__open(&b, SCOPE_ITEMS);
	otlp__span(&b, r, &ids, &so);
	pbuf__close(&b);
	pbuf__close(&b);
	pbuf__close(&b);
	assert_true(pbuf__ok(&b));
	t = protoc_decode(b.buf, b.len, "ExportTraceServiceRequest");
	assert_non_null(t);
	no_unknown_fields(t);
	if (getenv("TT_DUMP"))
		fputs(t, stderr);
	assert_non_null(strstr(t, "kind: SPAN_KIND_SERVER"));
	assert_non_null(strstr(t, "key: \"service.name\""));
	assert_non_null(strstr(t, "string_value: \"python3.12\""));
	assert_non_null(strstr(t, "key: \"container.id\""));
	assert_non_null(strstr(t, "key: \"k8s.pod.uid\""));
	assert_non_null(strstr(t, "name: \"tokentrace.stall\""));
	assert_non_null(strstr(t, "dropped_events_count: 9"));
	free(t);

	pbuf__reset(&b);
	otlp_metrics__request(m, r, &ids);
	r->client = true;
	otlp_metrics__request(m, r, &ids);
	otlp_metrics__encode(m, &b, 1, 2, res_fn, NULL, NULL, 0, &points);
	assert_true(pbuf__ok(&b));
	t = protoc_decode(b.buf, b.len, "ExportMetricsServiceRequest");
	assert_non_null(t);
	no_unknown_fields(t);
	if (getenv("TT_DUMP"))
		fputs(t, stderr);
	assert_non_null(strstr(t, "aggregation_temporality: AGGREGATION_TEMPORALITY_CUMULATIVE"));
	assert_non_null(strstr(t, "name: \"gen_ai.client.token.usage\""));
	assert_non_null(strstr(t, "explicit_bounds: 0.001"));
	assert_non_null(strstr(t, "is_monotonic: true"));
	free(t);
	pbuf__free(&b);
	otlp_metrics__free(m);
	request__free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_traceparent),
		cmocka_unit_test(test_operation),
		cmocka_unit_test(test_span),
		cmocka_unit_test(test_span_client_error),
		cmocka_unit_test(test_metrics),
		cmocka_unit_test(test_protoc),
	};

	set_wall_offset(WALL_OFF);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
