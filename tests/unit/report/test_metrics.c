// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --metrics, without a network: the exposition a scrape gets (OTel bucket boundaries, le
 * inclusive, errors only in requests_total), label values made safe, label sets and statuses
 * bounded, and the address forms --metrics takes. The scrape itself is tests/e2e/metrics.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* the renderer is static: test it from inside (the archive's copy is then not linked) */
#include "../../../user/report/metrics.c"

static struct out_metrics *mk(void)
{
	struct out_metrics *m = calloc(1, sizeof(*m));

	assert_non_null(m);
	assert_int_equal(mtx_init(&m->mu, mtx_plain), thrd_success);
	return m;
}

static struct tt_request *req(const char *model, const char *path, int status, uint64_t ttft,
			      uint32_t chunks, uint64_t itl)
{
	struct tt_request *r = request__new();

	r->pid = 42;
	strcpy(r->comm, "srv");
	strcpy(r->method, "POST");
	snprintf(r->model, sizeof(r->model), "%s", model);
	snprintf(r->path, sizeof(r->path), "%s", path);
	r->status = status;
	r->t_start_ns = 1000000000;
	for (uint32_t i = 0; i < chunks; i++)
		request__add_chunk(r, r->t_start_ns + ttft + i * itl);
	r->t_end_ns = chunks ? r->tok_ns[chunks - 1] : r->t_start_ns + ttft;
	r->complete = true;
	request__finish(r);
	return r;
}

static void feed(struct out_metrics *m, struct tt_request *r)
{
	metrics_request(m, r);
	request__free(r);
}

static char *text(struct out_metrics *m, bool om)
{
	size_t len;
	char *t = render(m, om, &len);

	assert_non_null(t);
	assert_int_equal(strlen(t), len);
	return t;
}

static bool has(const char *t, const char *line)
{
	char want[512];

	snprintf(want, sizeof(want), "\n%s\n", line);
	return strstr(t, want) != NULL;
}

/* No byte of the exposition is a control (newline apart), and it is all valid UTF-8. */
static void assert_no_controls(const char *t)
{
	const unsigned char *p = (const unsigned char *)t;
	size_t n = strlen(t), l;
	uint32_t cp;

	for (size_t i = 0; i < n; i += l) {
		l = utf8_seq(p + i, n - i, &cp);
		if (!l)
			fail_msg("invalid UTF-8 at byte %zu", i);
		if (cp != '\n' && (cp_is_control(cp) || cp_is_invisible(cp)))
			fail_msg("control U+%04X at byte %zu", (unsigned int)cp, i);
	}
}

#define L(rest) "pid=\"42\",comm=\"srv\",model=\"m\",path=\"/v1/chat/completions\"" rest

static void test_histograms(void **state)
{
	struct out_metrics *m = mk();
	char *t;

	/* TTFT exactly on a bound counts in it (le is <=); 4 gaps of 7 ms */
	feed(m, req("m", "/v1/chat/completions", 200, 40000000, 5, 7000000));
	feed(m, req("m", "/v1/chat/completions?x=1", 200, 40000001, 5, 7000000));
	feed(m, req("m", "/v1/chat/completions", 503, 1000000, 1, 0));
	t = text(m, false);
	assert_true(has(t, "gen_ai_server_time_to_first_token_seconds_bucket{" L(",le=\"0.02\"} 0")));
	assert_true(has(t, "gen_ai_server_time_to_first_token_seconds_bucket{" L(",le=\"0.04\"} 1")));
	assert_true(has(t, "gen_ai_server_time_to_first_token_seconds_bucket{" L(",le=\"0.06\"} 2")));
	assert_true(has(t, "gen_ai_server_time_to_first_token_seconds_bucket{" L(",le=\"+Inf\"} 2")));
	assert_true(has(t, "gen_ai_server_time_to_first_token_seconds_count{" L("} 2")));
	assert_true(has(t, "gen_ai_server_time_to_first_token_seconds_sum{" L("} 0.080000001")));
	assert_true(has(t, "tokentrace_inter_token_latency_seconds_bucket{" L(",le=\"0.005\"} 0")));
	assert_true(has(t, "tokentrace_inter_token_latency_seconds_bucket{" L(",le=\"0.01\"} 8")));
	assert_true(has(t, "gen_ai_server_time_per_output_token_seconds_count{" L("} 2")));
	assert_true(has(t, "gen_ai_server_request_duration_seconds_count{" L("} 2")));
	/* the error: counted, in no latency */
	assert_true(has(t, "tokentrace_requests_total{" L(",status=\"200\"} 2")));
	assert_true(has(t, "tokentrace_requests_total{" L(",status=\"503\"} 1")));
	assert_true(has(t, "tokentrace_output_tokens_total{" L("} 10")));
	assert_true(has(t, "tokentrace_stalls_total{" L(",cause=\"lock\"} 0")));
	assert_true(has(t, "# TYPE tokentrace_requests_total counter"));
	assert_null(strstr(t, "# EOF"));
	free(t);

	t = text(m, true);
	assert_true(has(t, "# TYPE tokentrace_requests counter"));
	assert_true(has(t, "# UNIT gen_ai_server_time_to_first_token_seconds seconds"));
	assert_string_equal(t + strlen(t) - 6, "# EOF\n");
	free(t);
	metrics_free(m);
}

#define LC(rest) L(",direction=\"client\",server_address=\"api.example.com\"" rest)

/* An outbound call: the OTel GenAI client families, with the Host called; never the server's. */
static void test_client(void **state)
{
	struct out_metrics *m = mk();
	struct tt_request *r = req("m", "/v1/chat/completions", 200, 300000000, 4, 15000000);
	char *t;

	r->client = true;
	strcpy(r->host, "api.example.com");
	feed(m, r);
	t = text(m, false);
	assert_true(has(t, "gen_ai_client_operation_time_to_first_chunk_seconds_bucket{"
			LC(",le=\"0.16\"} 0")));
	assert_true(has(t, "gen_ai_client_operation_time_to_first_chunk_seconds_bucket{"
			LC(",le=\"0.32\"} 1")));
	/* each of the 3 gaps of 15 ms: over 0.01, within 0.02 */
	assert_true(has(t, "gen_ai_client_operation_time_per_output_chunk_seconds_bucket{"
			LC(",le=\"0.01\"} 0")));
	assert_true(has(t, "gen_ai_client_operation_time_per_output_chunk_seconds_bucket{"
			LC(",le=\"0.02\"} 3")));
	assert_true(has(t, "gen_ai_client_operation_duration_seconds_count{" LC("} 1")));
	assert_null(strstr(t, "gen_ai_server_time_to_first_token_seconds_bucket{"));
	assert_true(has(t, "tokentrace_requests_total{" LC(",status=\"200\"} 1")));
	free(t);
	metrics_free(m);
}

static void test_labels_bounded(void **state)
{
	struct out_metrics *m = mk();
	char model[32], *t;

	feed(m, req("we\"ird\\mo\ndel\xc3\xa9", "/p", 200, 1000000, 1, 0));
	for (int i = 0; i < 70; i++) {
		snprintf(model, sizeof(model), "m-%d", i);
		feed(m, req(model, "/v1/completions", 200, 1000000, 1, 0));
	}
	for (int s = 200; s < 220; s++)
		feed(m, req("m-0", "/v1/completions", s, 1000000, 1, 0));
	assert_int_equal(m->nseries, SERIES_MAX + 1);
	assert_int_equal(m->overflow, 70 - (SERIES_MAX - 1));
	t = text(m, false);
	/* quote, backslash and newline escaped as the format says; UTF-8 kept */
	assert_non_null(strstr(t, "model=\"we\\\"ird\\\\mo\\ndel\xc3\xa9\""));
	assert_non_null(strstr(t, "model=\"other\",path=\"other\",status=\"200\"} 7"));
	assert_true(has(t, "tokentrace_label_overflow_total 7"));
	/* statuses of one series: 15 kept (200..214), the rest under "other" (215..219) */
	assert_non_null(strstr(t, "model=\"m-0\",path=\"/v1/completions\",status=\"214\"} 1"));
	assert_non_null(strstr(t, "model=\"m-0\",path=\"/v1/completions\",status=\"other\"} 5"));
	assert_no_controls(t);
	free(t);
	metrics_free(m);
}

/* The one escaping of label values: nothing a client sends reaches a scrape raw. */
static void test_label_escape(void **state)
{
	char out[LABEL_MAX];
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "/v1/chat", "/v1/chat" },
		{ "a\"b\\c\nd", "a\\\"b\\\\c\\nd" },
		{ "\x1b[2J", "\\\\x1b[2J" },			/* 7-bit CSI */
		{ "x\x9b" "31m", "x\\\\x9b31m" },			/* 8-bit CSI, not UTF-8 */
		{ "x\xc2\x9b" "31m", "x\\\\u009b31m" },		/* C1 CSI in UTF-8 */
		{ "\x7f\r\t", "\\\\x7f\\\\x0d\\\\x09" },
		{ "\xe2\x80\xae" "txt", "\\\\u202etxt" },		/* right-to-left override */
		/* an overlong form, a surrogate */
		{ "\xc0\xaf\xed\xa0\x80", "\\\\xc0\\\\xaf\\\\xed\\\\xa0\\\\x80" },
		{ "caf\xc3\xa9 \xe6\xa8\xa1\xe5\x9e\x8b", "caf\xc3\xa9 \xe6\xa8\xa1\xe5\x9e\x8b" },
		/* invisible: a TAG character (past the BMP: eight digits), a zero-width space */
		{ "m\xf3\xa0\x81\x81\xe2\x80\x8bx", "m\\\\U000e0041\\\\u200bx" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		metrics__label_escape(out, sizeof(out), cases[i].in, strlen(cases[i].in));
		if (strcmp(out, cases[i].out))
			fail_msg("case %zu: '%s', expected '%s'", i, out, cases[i].out);
	}
	/* cut at an escape boundary, never inside one */
	metrics__label_escape(out, 9, "ab\x01\x02", 4);
	assert_string_equal(out, "ab\\\\x01");
	metrics__label_escape(out, 4, "\xc3\xa9\xc3\xa9", 4);
	assert_string_equal(out, "\xc3\xa9");
	/* the length given is the end: a query string is never part of the path label */
	metrics__label_escape(out, sizeof(out), "/p?api_key=SECRET", 2);
	assert_string_equal(out, "/p");
}

/* A request with hostile strings and a key in its query: the scrape escapes and drops them. */
static void test_hostile_request(void **state)
{
	struct out_metrics *m = mk();
	struct tt_request *r = req("m\xc2\x9b" "2J", "/v1/x\x1b]0;t\x07?api_key=SECRET", 200,
				   1000000, 2, 1000000);
	char *t;

	strcpy(r->comm, "s\x9bv");
	feed(m, r);
	t = text(m, false);
	assert_non_null(strstr(t, "comm=\"s\\\\x9bv\",model=\"m\\\\u009b2J\","
				  "path=\"/v1/x\\\\x1b]0;t\\\\x07\""));
	assert_null(strstr(t, "SECRET"));
	assert_no_controls(t);
	free(t);
	metrics_free(m);
}

static void test_loopback(void **state)
{
	struct sockaddr_storage ss;
	socklen_t len;
	static const char *const local[] = { "9464", "127.0.0.1:1", "127.1.2.3:1", "[::1]:1",
					     "localhost:1", "[::ffff:127.0.0.1]:1" };
	static const char *const open_[] = { "0.0.0.0:1", "[::]:1", "10.0.0.1:1", "[fe80::1]:1",
					     "[::ffff:10.0.0.1]:1", "192.168.0.1:1" };

	for (size_t i = 0; i < ARRAY_SIZE(local); i++) {
		assert_int_equal(metrics__parse_addr(local[i], &ss, &len), 0);
		if (!metrics__addr_is_loopback(&ss))
			fail_msg("'%s' said not loopback", local[i]);
	}
	for (size_t i = 0; i < ARRAY_SIZE(open_); i++) {
		assert_int_equal(metrics__parse_addr(open_[i], &ss, &len), 0);
		if (metrics__addr_is_loopback(&ss))
			fail_msg("'%s' said loopback", open_[i]);
	}
}

static void test_addr(void **state)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	static const char *const bad[] = {
		"", ":80", "1.2.3.4:", "[::1]80", "[::1", "host.example:80", "99999", "-1",
		"1.2.3:80", "127.0.0.1:8o", "[1.2.3.4]:80",
	};

	assert_int_equal(metrics__parse_addr("9464", &ss, &len), 0);
	assert_int_equal(in4->sin_family, AF_INET);
	assert_int_equal(ntohl(in4->sin_addr.s_addr), 0x7f000001);	/* loopback by default */
	assert_int_equal(ntohs(in4->sin_port), 9464);
	assert_int_equal(metrics__parse_addr("0.0.0.0:80", &ss, &len), 0);
	assert_int_equal(in4->sin_addr.s_addr, 0);
	assert_int_equal(metrics__parse_addr("localhost:0", &ss, &len), 0);
	assert_int_equal(ntohl(in4->sin_addr.s_addr), 0x7f000001);
	assert_int_equal(metrics__parse_addr("[::1]:9464", &ss, &len), 0);
	assert_int_equal(in6->sin6_family, AF_INET6);
	assert_int_equal(len, sizeof(*in6));
	assert_int_equal(ntohs(in6->sin6_port), 9464);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (metrics__parse_addr(bad[i], &ss, &len) != -EINVAL)
			fail_msg("'%s' accepted", bad[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_histograms),
		cmocka_unit_test(test_client),
		cmocka_unit_test(test_labels_bounded),
		cmocka_unit_test(test_label_escape),
		cmocka_unit_test(test_hostile_request),
		cmocka_unit_test(test_loopback),
		cmocka_unit_test(test_addr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
