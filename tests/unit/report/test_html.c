// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --report: the file is one self-contained page (no script, no URL, nothing to fetch), with
 * the summary, both distributions counted as --metrics counts, a timeline per request with a
 * mark and a line per stall, everything from the wire escaped (a model name that tries to be
 * markup stays text, a query string never shows), the drawn requests bounded with stalled
 * ones kept first, and a write failure said.
 *
 *   test_html --showcase FILE   writes the showcase report (tests/cli/report_html.sh renders
 *                               it with headless Chromium)
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
#include "outputs.h"
#include "stall.h"
#include "stall_text.h"
#include "util.h"

struct spec {
	uint32_t chunks;
	uint64_t ttft_ns, itl_ns;
	int status;
	uint32_t stall_after[3];	/* 1-based tokens after which a stall comes; 0 ends */
	uint64_t stall_ns;
	const char *model, *path;
	bool client;
	enum abort_reason abort;
};

static void add_stall(struct tt_request *r, uint32_t after, uint64_t t0, uint64_t t1, int kind)
{
	struct tt_stall *st;

	r->stalls = realloc(r->stalls, (r->nstalls + 1) * sizeof(*r->stalls));
	assert_non_null(r->stalls);
	st = &r->stalls[r->nstalls++];
	r->stalls_cap = r->nstalls;
	memset(st, 0, sizeof(*st));
	st->after_chunk = after - 1;
	st->t_begin_ns = t0;
	st->t_end_ns = t1;
	st->engine_late = kind ? 1 : -1;
	if (kind) {
		/* the two-process shape: the API server idle, woken by the engine, computing */
		st->cause = STALL_ONCPU;
		st->part_ns[STALL_IDLE] = (t1 - t0) / 10;
		st->part_ns[STALL_ONCPU] = t1 - t0 - st->part_ns[STALL_IDLE];
		st->nhops = 2;
		st->hop[0] = (struct stall_hop){ .pid = 4242, .tid = 4242, .cause = STALL_IDLE,
						 .ns = t1 - t0, .woken_by = WAKE_UNIX };
		strcpy(st->hop[0].comm, "python3");
		st->hop[1] = (struct stall_hop){ .pid = 4300, .tid = 4300, .cause = STALL_ONCPU,
						 .ns = st->part_ns[STALL_ONCPU] };
		strcpy(st->hop[1].comm, "EngineCore");
		strcpy(st->hop[1].func, "schedule_heavy (engine.py:63)");
	} else {
		st->cause = STALL_RUNQ;
		st->part_ns[STALL_RUNQ] = (t1 - t0) * 3 / 4;
		st->part_ns[STALL_ONCPU] = t1 - t0 - st->part_ns[STALL_RUNQ];
	}
}

static struct tt_request *mkreq(const struct spec *s, uint64_t t0, uint64_t n)
{
	struct tt_request *r = request__new();
	uint64_t t;
	int k = 0;

	assert_non_null(r);
	r->pid = 4242;
	strcpy(r->comm, "python3");
	r->client = s->client;
	r->conn_id = n;
	snprintf(r->conn, sizeof(r->conn), "127.0.0.1:8000-127.0.0.1:%llu",
		 (unsigned long long)(50000 + n));
	strcpy(r->method, "POST");
	snprintf(r->path, sizeof(r->path), "%s", s->path ? s->path : "/v1/chat/completions");
	snprintf(r->model, sizeof(r->model), "%s", s->model ? s->model : "llama-3-8b");
	snprintf(r->request_id, sizeof(r->request_id), "req-%llu", (unsigned long long)n);
	r->status = s->status ? s->status : 200;
	r->format = FMT_SSE;
	r->t_recv_ns = t0;
	r->t_start_ns = t0 + 200000;
	t = r->t_start_ns + s->ttft_ns;
	for (uint32_t i = 0; i < s->chunks; i++) {
		if (i && k < 3 && s->stall_after[k] == i) {
			add_stall(r, i, t - s->itl_ns, t + s->stall_ns - s->itl_ns, k % 2 == 0);
			t += s->stall_ns - s->itl_ns;
			k++;
		}
		request__add_chunk(r, t);
		t += s->itl_ns;
	}
	r->t_end_ns = s->chunks ? r->tok_ns[s->chunks - 1] + 50000 : t;
	r->abort = s->abort;
	r->complete = s->abort == ABORT_NONE;
	r->saw_final = r->complete;
	request__finish(r);
	return r;
}

static const struct spec showcase[] = {
	{ 120, 48000000, 12000000, 0, { 0 }, 0, NULL, NULL, false, ABORT_NONE },
	{ 200, 95000000, 10000000, 0, { 40, 130, 0 }, 420000000, NULL, NULL, false, ABORT_NONE },
	{ 60, 310000000, 25000000, 0, { 0 }, 0, "qwen2.5-7b", "/v1/completions?key=SECRET",
	  false, ABORT_NONE },
	{ 0, 0, 0, 503, { 0 }, 0, NULL, NULL, false, ABORT_NONE },
	{ 35, 60000000, 15000000, 0, { 20, 0 }, 180000000, NULL, NULL, false, ABORT_CLIENT },
	{ 80, 120000000, 9000000, 0, { 0 }, 0, "<script>alert(1)</script>\"&'", "/api/chat",
	  true, ABORT_NONE },
};

/* the report of specs, written to path through the output itself */
static void write_report(const char *path, const struct spec *specs, size_t n, bool *failed)
{
	struct output_opts oo = { .report_path = path, .force = true, .failed = failed };
	struct ready_info ri = { .t_ns = 1, .npids = 1, .npids_total = 1, .pids = { 4242 } };
	struct stats st;
	struct summary sum = { 0 };
	struct output o;
	uint64_t t0 = 5000000000ull;

	assert_int_equal(output_html__new(&o, &oo), 0);
	strcpy(ri.comms[0], "python3");
	o.ops->ready(o.priv, &ri);
	stats__init(&st, t0);
	for (size_t i = 0; i < n; i++) {
		struct tt_request *r = mkreq(&specs[i], t0 + i * 700000000ull, i + 1);

		stats__add(&st, r);
		o.ops->request(o.priv, r);
		request__free(r);
	}
	sum.w = &st.total;
	sum.final = true;
	sum.secs = 4.2;
	sum.lost.n[LOST_RINGBUF] = 3;
	o.ops->summary(o.priv, &sum);
	o.ops->free(o.priv);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc(n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static char tmp[64];

static int setup(void **state)
{
	(void)state;
	snprintf(tmp, sizeof(tmp), "/tmp/tt-report-%d.html", getpid());
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(tmp);
	return 0;
}

static void test_showcase(void **state)
{
	char *h, want[64];

	(void)state;
	write_report(tmp, showcase, ARRAY_SIZE(showcase), NULL);
	h = slurp(tmp);
	assert_true(!strncmp(h, "<!DOCTYPE html>", 15));
	assert_non_null(strstr(h, "</html>\n"));
	/* self-contained: nothing to load, nothing to run */
	assert_null(strstr(h, "<script"));
	assert_null(strstr(h, "src="));
	assert_null(strstr(h, "http:"));
	assert_null(strstr(h, "https:"));
	assert_null(strstr(h, "url("));
	assert_null(strstr(h, "<link"));
	/* from the wire: text, never markup; never the query string */
	assert_non_null(strstr(h, "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&amp;&#39;"));
	assert_null(strstr(h, "SECRET"));
	/* a timeline per request, a mark and a line per stall */
	assert_int_equal(count(h, "<section class=\"req\""), ARRAY_SIZE(showcase));
	assert_int_equal(count(h, "<svg class=\"timeline\""), ARRAY_SIZE(showcase));
	assert_int_equal(count(h, "<rect class=\"stall\""), 3);
	assert_int_equal(count(h, "<li class=\"stall-line\""), 3);
	assert_non_null(strstr(h, "data-req=\"2\" data-stalls=\"2\""));
	assert_non_null(strstr(h, "data-req=\"5\" data-stalls=\"1\""));
	/* the stall's own line, as stall__describe says it */
	assert_non_null(strstr(h, "EngineCore (pid 4300) on-CPU"));
	assert_non_null(strstr(h, "schedule_heavy (engine.py:63)"));
	assert_non_null(strstr(h, "aborted: client_closed"));
	/* the distributions: the served, successful ones (not the 503, not the outbound) */
	snprintf(want, sizeof(want), "Time to first token &mdash; %d samples", 4);
	assert_non_null(strstr(h, want));
	snprintf(want, sizeof(want), "Inter-token latency &mdash; %d samples",
		 119 + 199 + 59 + 34);
	assert_non_null(strstr(h, want));
	assert_non_null(strstr(h, "ringbuf 3"));
	free(h);
}

/* more requests than are drawn: stalled ones keep their place, the rest is counted */
static void test_bounded(void **state)
{
	static struct spec many[600];
	char *h;

	(void)state;
	for (int i = 0; i < 600; i++)
		many[i] = (struct spec){ 3, 1000000, 1000000, 0, { 0 }, 0, NULL, NULL, false,
					 ABORT_NONE };
	many[599] = (struct spec){ 10, 1000000, 1000000, 0, { 5, 0 }, 300000000, NULL, NULL,
				   false, ABORT_NONE };
	write_report(tmp, many, 600, NULL);
	h = slurp(tmp);
	assert_int_equal(count(h, "<section class=\"req\""), 500);
	assert_int_equal(count(h, "<rect class=\"stall\""), 1);
	assert_non_null(strstr(h, "500 drawn of 600, 1 with stalls; 100 not drawn"));
	assert_non_null(strstr(h, "id=\"req-600\""));	/* the stalled one, last */
	assert_null(strstr(h, "id=\"req-1\""));		/* the oldest made room */
	free(h);
}

static void test_write_failure(void **state)
{
	bool failed = false;

	(void)state;
	if (access("/dev/full", W_OK))
		skip();
	write_report("/dev/full", showcase, 2, &failed);
	assert_true(failed);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_showcase, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_failure, setup, teardown),
	};

	set_wall_offset(1700000000000000000ll);
	if (argc == 3 && !strcmp(argv[1], "--showcase")) {
		write_report(argv[2], showcase, ARRAY_SIZE(showcase), NULL);
		return 0;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
