// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --perfetto: the file is one valid JSON array of trace events; a request is one slice on its
 * connection's track with its phases inside, a token one instant, a stall one slice named by
 * its cause, a marker one instant; pipelined requests that overlap get a track of their own.
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
#include "jscan.h"
#include "outputs.h"

#define EV_MAX	512

struct ev {
	char ph[4], name[64], cat[16], cause[16], req_id[16];
	long long pid, tid;
	char ts[32], dur[32];
	bool has_dur;
};

static struct ev evs[EV_MAX];
static int nev;

static int visit(void *ud, const struct jscan_path *p, const struct jscan_value *v)
{
	struct ev *e;
	char *dst = NULL;
	size_t sz = 0;

	if (p->depth < 2 || p->step[0].index < 0 || p->step[0].index >= EV_MAX)
		return 0;
	e = &evs[p->step[0].index];
	if (p->step[0].index >= nev)
		nev = p->step[0].index + 1;
	if (p->depth == 2 && v->type == JS_STRING) {
		if (jscan__key_is(p, "ph"))
			dst = e->ph, sz = sizeof(e->ph);
		else if (jscan__key_is(p, "name"))
			dst = e->name, sz = sizeof(e->name);
		else if (jscan__key_is(p, "cat"))
			dst = e->cat, sz = sizeof(e->cat);
	} else if (p->depth == 2 && v->type == JS_NUMBER) {
		if (jscan__key_is(p, "pid"))
			jscan__int(v, &e->pid);
		else if (jscan__key_is(p, "tid"))
			jscan__int(v, &e->tid);
		else if (jscan__key_is(p, "ts"))
			snprintf(e->ts, sizeof(e->ts), "%.*s", (int)v->raw_len, v->raw);
		else if (jscan__key_is(p, "dur")) {
			snprintf(e->dur, sizeof(e->dur), "%.*s", (int)v->raw_len, v->raw);
			e->has_dur = true;
		}
	} else if (p->depth == 3 && v->type == JS_STRING) {
		if (jscan__key_is(p, "cause"))
			dst = e->cause, sz = sizeof(e->cause);
		else if (jscan__key_is(p, "request_id") || (jscan__key_is(p, "name") && !e->req_id[0]))
			dst = e->req_id, sz = sizeof(e->req_id);
	}
	if (dst)
		jscan__string(v, dst, sz);
	return 0;
}

static struct tt_request *mkreq(const char *id, uint64_t start, uint32_t chunks, uint64_t itl)
{
	struct tt_request *r = request__new();

	r->pid = 4242;
	strcpy(r->comm, "server");
	r->conn_id = 7;
	strcpy(r->conn, "127.0.0.1:8000-127.0.0.1:50001");
	strcpy(r->method, "POST");
	strcpy(r->path, "/v1/chat/completions");
	strcpy(r->request_id, id);
	strcpy(r->model, "m-7b");
	r->status = 200;
	r->format = FMT_SSE;
	r->t_start_ns = start;
	for (uint32_t i = 0; i < chunks; i++)
		request__add_chunk(r, start + 30000000 + i * itl);
	r->t_end_ns = r->tok_ns[chunks - 1] + 1000;
	r->complete = true;
	r->model_tokens = -1;
	request__finish(r);
	return r;
}

static void test_trace(void **state)
{
	char path[] = "/tmp/tt-test-perfetto.XXXXXX";
	struct output_opts oo = { .path = path };
	struct ready_info ri = { .npids = 1, .pids = { 4242 }, .comms = { "server" } };
	struct tt_request *a, *b, *c;
	struct output o;
	int fd = mkstemp(path), slices = 0, tokens = 0, stalls = 0, admitted = 0, threads = 0;
	int procs = 0, ttft = 0, gen = 0;
	char *text;
	long len;
	FILE *f;

	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(output_perfetto__new(&o, &oo), 0);
	o.ops->ready(o.priv, &ri);

	a = mkreq("a", 1000000000, 5, 10000000);
	a->nstalls = 1;
	a->stalls = calloc(1, sizeof(*a->stalls));
	a->stalls[0] = (struct tt_stall){
		.after_chunk = 2, .t_begin_ns = a->tok_ns[2], .t_end_ns = a->tok_ns[3],
		.cause = STALL_LOCK, .engine_late = -1,
	};
	a->stalls[0].part_ns[STALL_LOCK] = 8000000;
	a->stalls[0].part_ns[STALL_ONCPU] = 2000000;
	a->t_admit_ns = 1000001234;
	/* b pipelined behind a: read while a streams, so it overlaps a on the timeline */
	b = mkreq("b", 1010000000, 3, 5000000);
	/* c after both: back on the first track */
	c = mkreq("c", 2000000000, 4, 1000000);
	o.ops->request(o.priv, a);
	o.ops->request(o.priv, b);
	o.ops->request(o.priv, c);
	o.ops->flush(o.priv);
	o.ops->free(o.priv);

	f = fopen(path, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	text = malloc(len + 1);
	assert_int_equal(fread(text, 1, len, f), (size_t)len);
	fclose(f);
	unlink(path);

	assert_int_equal(jscan__walk(text, len, visit, NULL), JSCAN_OK);
	for (int i = 0; i < nev; i++) {
		struct ev *e = &evs[i];

		assert_int_equal(e->pid, 4242);
		if (!strcmp(e->ph, "M")) {
			threads += !strcmp(e->name, "thread_name");
			procs += !strcmp(e->name, "process_name");
			continue;
		}
		assert_true(e->ts[0]);
		if (!strcmp(e->ph, "X")) {
			assert_true(e->has_dur);
			slices += !strcmp(e->cat, "request");
			ttft += !strcmp(e->name, "prefill/TTFT");
			gen += !strcmp(e->name, "generation");
			if (!strcmp(e->cat, "stall")) {
				stalls++;
				assert_string_equal(e->name, "stall: lock");
				assert_string_equal(e->cause, "lock");
			}
			if (!strcmp(e->cat, "request")) {
				/* a and c share a track, b overlaps a: its own */
				if (!strcmp(e->req_id, "b"))
					assert_int_equal(e->tid, 2);
				else
					assert_int_equal(e->tid, 1);
			}
		} else {
			assert_string_equal(e->ph, "i");
			tokens += !strcmp(e->name, "token");
			if (!strcmp(e->name, "admitted")) {
				admitted++;
				assert_string_equal(e->ts, "1000001.234");
			}
		}
	}
	assert_int_equal(procs, 1);
	assert_int_equal(threads, 2);
	assert_int_equal(slices, 3);
	assert_int_equal(ttft, 3);
	assert_int_equal(gen, 3);
	assert_int_equal(tokens, 5 + 3 + 4);
	assert_int_equal(stalls, 1);
	assert_int_equal(admitted, 1);
	request__free(a);
	request__free(b);
	request__free(c);
	free(text);
}

static void test_open_error(void **state)
{
	struct output_opts oo = { .path = "/nonexistent/dir/trace.json" };
	struct output o;

	assert_int_equal(output_perfetto__new(&o, &oo), -ENOENT);
}

static char *run_one(const struct tt_request *r, bool show_query, size_t *len)
{
	char path[] = "/tmp/tt-test-perfetto.XXXXXX";
	struct output_opts oo = { .path = path, .show_query = show_query };
	struct output o;
	int fd = mkstemp(path);
	char *text;
	FILE *f;

	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(output_perfetto__new(&o, &oo), 0);
	o.ops->request(o.priv, r);
	o.ops->free(o.priv);
	f = fopen(path, "r");
	assert_non_null(f);
	text = calloc(1, 1 << 16);
	*len = fread(text, 1, (1 << 16) - 1, f);
	fclose(f);
	unlink(path);
	return text;
}

/* Strings from the wire: escaped, valid UTF-8, and the query string (a key) left out. */
static void test_untrusted_strings(void **state)
{
	struct tt_request *r = mkreq("id\x1b[2J", 1000000000, 2, 1000000);
	size_t len;
	char *text;

	strcpy(r->path, "/v1/\xc2\x9b" "31m\x9b?api_key=SECRET");
	strcpy(r->model, "m\xff\x07");
	text = run_one(r, false, &len);
	assert_int_equal(jscan__walk(text, len, visit, NULL), JSCAN_OK);
	assert_null(strstr(text, "SECRET"));
	assert_null(strstr(text, "api_key"));
	assert_non_null(strstr(text, "\"path\":\"/v1/\\u009b31m\\ufffd\""));
	assert_non_null(strstr(text, "\"request_id\":\"id\\u001b[2J\""));
	assert_non_null(strstr(text, "\"model\":\"m\\ufffd\\u0007\""));
	for (size_t i = 0; i < len; i++)
		assert_true((unsigned char)text[i] >= 0x20 ? (unsigned char)text[i] < 0x7f :
							  text[i] == '\n');
	free(text);
	/* --show-query keeps it: the option, and this test, do something */
	text = run_one(r, true, &len);
	assert_non_null(strstr(text, "?api_key=SECRET"));
	free(text);
	request__free(r);
}

/* A write that fails (a full disk) is said once and fails the run. */
static void test_write_failed(void **state)
{
	struct output_opts oo = { .path = "/dev/full" };
	struct tt_request *r = mkreq("a", 1000000000, 50, 1000000);
	struct output o;
	bool failed = false;

	if (access("/dev/full", W_OK))
		skip();
	oo.failed = &failed;
	assert_int_equal(output_perfetto__new(&o, &oo), 0);
	o.ops->request(o.priv, r);
	o.ops->flush(o.priv);
	o.ops->free(o.priv);
	assert_true(failed);
	request__free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trace),
		cmocka_unit_test(test_open_error),
		cmocka_unit_test(test_untrusted_strings),
		cmocka_unit_test(test_write_failed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
