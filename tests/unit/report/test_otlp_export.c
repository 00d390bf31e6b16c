// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --otlp's sender against a local receiver (otlp_receiver.h) that answers 200, 429 with
 * Retry-After, 503, 400, a partial success, holds a request, or is not there: what arrives
 * is each batch once, gzipped, with its headers; what is retried is delivered once; what
 * cannot be sent is counted, in exactly one place; a full queue drops and counts without
 * waiting; the end never hangs on a collector that does not answer. Then the whole output:
 * a proxy's upstream span a child of its downstream one, a traceparent's trace joined, the
 * metrics' exemplars pointing at the spans.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>
#include "otlp.h"
#include "proxy.h"
#include "otlp_receiver.h"
#include "otlp_walk.h"

static struct rx rx;
static struct otlp_target target;

static struct otlp_exporter *mk(uint32_t queue_batches, uint64_t retry_for_ns)
{
	struct otlp_export_opts o = {
		.target = &target,
		.gzip = true,
		.timeout_ms = 10000,
		.queue_items = 1000,
		.queue_batches = queue_batches,
		.backoff_first_ns = 10000000,
		.backoff_max_ns = 40000000,
		.retry_for_ns = retry_for_ns,
	};
	struct otlp_exporter *e;

	snprintf(target.url, sizeof(target.url), "http://127.0.0.1:%u/v1/traces", rx.port);
	strcpy(target.headers[0], "X-Tenant: t1");
	target.nheaders = 1;
	e = otlp_exporter__new(&o);
	assert_non_null(e);
	return e;
}

static void *payload(int i, size_t *len)
{
	char *p = malloc(4096);

	assert_non_null(p);
	/* compressible, and each one told apart */
	memset(p, 'a' + i % 26, 4096);
	snprintf(p, 32, "batch-%d;", i);
	*len = 4096;
	return p;
}

/* how many arrived with batch i's body and were answered status */
static int arrived(int i, unsigned int status)
{
	size_t len;
	char *want = payload(i, &len);
	int n = 0;

	for (int k = 0; k < rx.ngot; k++)
		n += rx.got[k].len == len && !memcmp(rx.got[k].body, want, len) &&
		     rx.got[k].answered == status;
	free(want);
	return n;
}

static void put(struct otlp_exporter *e, int i, uint32_t items, bool expect_ok)
{
	size_t len;
	void *p = payload(i, &len);

	assert_int_equal(otlp_exporter__send(e, p, len, items), expect_ok);
}

static int setup(void **state)
{
	(void)state;
	rx_init(&rx);
	assert_true(rx_start(&rx, 0));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rx_free(&rx);
	return 0;
}

static void check_accounted(const struct otlp_export_stats *st)
{
	assert_int_equal(st->queued, st->sent + st->rejected + st->dropped + st->failed);
}

static void test_ok(void **state)
{
	struct otlp_exporter *e = mk(8, 0);

	(void)state;
	for (int i = 0; i < 3; i++)
		put(e, i, 10, true);
	otlp_exporter__free(e, 5000000000ull);
	assert_int_equal(rx.ngot, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(arrived(i, 200), 1);
		assert_string_equal(rx.got[i].path, "/v1/traces");
		assert_string_equal(rx.got[i].encoding, "gzip");
		assert_string_equal(rx.got[i].type, "application/x-protobuf");
		assert_string_equal(rx.got[i].tenant, "t1");
	}
}

static void test_stats_ok(void **state)
{
	struct otlp_exporter *e = mk(8, 0);
	struct otlp_export_stats st;

	(void)state;
	put(e, 0, 10, true);
	put(e, 1, 5, true);
	otlp_exporter__stop(e, 5000000000ull);
	otlp_exporter__stats(e, &st);
	otlp_exporter__free(e, 0);
	assert_int_equal(st.sent, 15);
	assert_int_equal(st.batches, 2);
	assert_int_equal(st.failed + st.dropped + st.rejected + st.retries, 0);
	assert_true(st.bytes > 0 && st.bytes < 2 * 4096);	/* gzipped */
	assert_int_equal(st.last_status, 200);
	check_accounted(&st);
}

/* 429 with Retry-After: 1, then 200: sent once, no sooner than the server asked */
static void test_retry_after(void **state)
{
	struct otlp_exporter *e;
	struct otlp_export_stats st;

	(void)state;
	rx.script[0] = (struct rx_answer){ 429, 1, NULL, 0, false };
	rx.nscript = 1;
	e = mk(8, 0);
	put(e, 7, 4, true);
	rx_wait(&rx, 2);
	otlp_exporter__stop(e, 5000000000ull);
	otlp_exporter__stats(e, &st);
	otlp_exporter__free(e, 0);
	assert_int_equal(rx.ngot, 2);
	assert_int_equal(arrived(7, 429), 1);
	assert_int_equal(arrived(7, 200), 1);
	assert_true(rx.got[1].t_ns - rx.got[0].t_ns >= 1000000000ull);
	assert_int_equal(st.sent, 4);
	assert_int_equal(st.retries, 1);
	check_accounted(&st);
}

/* 503 three times, then 200 after backoffs; 502 and 504 are retried as well */
static void test_503_backoff(void **state)
{
	struct otlp_exporter *e;
	struct otlp_export_stats st;

	(void)state;
	rx.script[0] = (struct rx_answer){ 503, -1, NULL, 0, false };
	rx.script[1] = (struct rx_answer){ 502, -1, NULL, 0, false };
	rx.script[2] = (struct rx_answer){ 504, -1, NULL, 0, false };
	rx.nscript = 3;
	e = mk(8, 0);
	put(e, 1, 3, true);
	put(e, 2, 3, true);
	rx_wait(&rx, 5);
	otlp_exporter__stop(e, 5000000000ull);
	otlp_exporter__stats(e, &st);
	otlp_exporter__free(e, 0);
	assert_int_equal(rx.ngot, 5);
	assert_int_equal(arrived(1, 200), 1);	/* the first batch: after its three failures */
	assert_int_equal(arrived(2, 200), 1);	/* then the second, in order */
	assert_int_equal(arrived(1, 503) + arrived(1, 502) + arrived(1, 504), 3);
	assert_int_equal(st.sent, 6);
	assert_int_equal(st.retries, 3);
	check_accounted(&st);
}

/* a 400 is not retried; a partial success counts its rejected items */
static void test_not_retried_and_partial(void **state)
{
	static const uint8_t status_body[] = { 0x12, 0x03, 'b', 'a', 'd' };	/* message "bad" */
	/* partial_success { rejected: 2, error_message: "dup" } */
	static const uint8_t partial[] = { 0x0a, 0x07, 0x08, 0x02, 0x12, 0x03, 'd', 'u', 'p' };
	struct otlp_exporter *e;
	struct otlp_export_stats st;

	(void)state;
	rx.script[0] = (struct rx_answer){ 400, -1, status_body, sizeof(status_body), false };
	rx.script[1] = (struct rx_answer){ 200, -1, partial, sizeof(partial), false };
	rx.nscript = 2;
	e = mk(8, 0);
	put(e, 1, 5, true);
	put(e, 2, 5, true);
	rx_wait(&rx, 2);
	otlp_exporter__stop(e, 5000000000ull);
	otlp_exporter__stats(e, &st);
	otlp_exporter__free(e, 0);
	assert_int_equal(rx.ngot, 2);
	assert_int_equal(st.failed, 5);
	assert_int_equal(st.rejected, 2);
	assert_int_equal(st.sent, 3);
	assert_int_equal(st.retries, 0);
	assert_non_null(strstr(st.last_error, "dup"));
	check_accounted(&st);
}

static uint16_t free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, len), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

/* the collector down, then up: retried until it is, delivered once */
static void test_down_then_up(void **state)
{
	struct otlp_exporter *e;
	struct otlp_export_stats st;

	(void)state;
	rx_stop(&rx);
	rx.port = free_port();
	e = mk(8, 0);
	put(e, 3, 2, true);
	do {	/* until it has failed at least twice: nothing listens */
		usleep(5000);
		otlp_exporter__stats(e, &st);
	} while (st.retries < 2);
	assert_int_equal(st.last_status, 0);
	assert_true(st.last_error[0]);
	rx.released = false;
	assert_true(rx_start(&rx, rx.port));
	rx_wait(&rx, 1);
	otlp_exporter__stop(e, 5000000000ull);
	otlp_exporter__stats(e, &st);
	otlp_exporter__free(e, 0);
	assert_int_equal(rx.ngot, 1);
	assert_int_equal(arrived(3, 200), 1);
	assert_int_equal(st.sent, 2);
	check_accounted(&st);
}

/* down for good: given up once its retry time is over, counted as failed */
static void test_down_gives_up(void **state)
{
	struct otlp_exporter *e;
	struct otlp_export_stats st;

	(void)state;
	rx_stop(&rx);
	rx.port = free_port();
	e = mk(8, 100000000);
	put(e, 1, 6, true);
	do {
		usleep(5000);
		otlp_exporter__stats(e, &st);
	} while (!st.failed);
	put(e, 2, 4, true);
	otlp_exporter__stop(e, 0);
	otlp_exporter__stats(e, &st);
	otlp_exporter__free(e, 0);
	assert_int_equal(st.sent, 0);
	assert_int_equal(st.failed, 10);	/* the second: unsent when it stopped */
	check_accounted(&st);
}

/* a full queue drops at once, and counts; what was queued still goes, once */
static void test_queue_full(void **state)
{
	struct otlp_exporter *e;
	struct otlp_export_stats st;

	(void)state;
	rx.script[0] = (struct rx_answer){ 200, -1, NULL, 0, true };	/* held */
	rx.nscript = 1;
	e = mk(2, 0);
	put(e, 0, 1, true);
	pthread_mutex_lock(&rx.mu);
	while (!rx.holding)	/* batch 0 is in flight, held by the receiver */
		pthread_cond_wait(&rx.cv, &rx.mu);
	pthread_mutex_unlock(&rx.mu);
	put(e, 1, 1, true);
	put(e, 2, 1, true);
	put(e, 3, 7, false);	/* the queue holds two batches: this one is dropped */
	otlp_exporter__stats(e, &st);
	assert_int_equal(st.dropped, 7);
	rx_release(&rx);
	otlp_exporter__stop(e, 5000000000ull);
	otlp_exporter__stats(e, &st);
	otlp_exporter__free(e, 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(arrived(i, 200), 1);
	assert_int_equal(arrived(3, 200), 0);
	assert_int_equal(st.sent, 3);
	assert_int_equal(st.dropped, 7);
	check_accounted(&st);
}

/* a collector that takes the request and never answers: the end still comes */
static void test_hung_collector(void **state)
{
	struct otlp_exporter *e;
	struct otlp_export_stats st;

	(void)state;
	rx.script[0] = (struct rx_answer){ 200, -1, NULL, 0, true };
	rx.nscript = 1;
	e = mk(8, 0);
	put(e, 0, 3, true);
	put(e, 1, 2, true);
	rx_wait(&rx, 1);
	otlp_exporter__stop(e, 200000000);
	otlp_exporter__stats(e, &st);
	otlp_exporter__free(e, 0);
	rx_release(&rx);
	assert_int_equal(st.sent, 0);
	assert_int_equal(st.failed, 5);
	check_accounted(&st);
}

/* ---------------------------------------------------------------- the whole output */

static struct tt_request *req(uint32_t pid, bool client, const char *conn, uint64_t t0,
			      const char *traceparent)
{
	struct tt_request *r = request__new();

	r->pid = pid;
	r->client = client;
	strcpy(r->comm, client ? "gw-out" : "gateway");
	snprintf(r->conn, sizeof(r->conn), "%s", conn);
	strcpy(r->method, "POST");
	strcpy(r->path, "/v1/chat/completions");
	strcpy(r->model, "m");
	r->status = 200;
	r->model_tokens = 3;
	if (traceparent)
		snprintf(r->traceparent, sizeof(r->traceparent), "%s", traceparent);
	r->t_recv_ns = r->t_start_ns = t0;
	for (int i = 0; i < 4; i++)
		request__add_chunk(r, t0 + 20000000 + i * 5000000ull);
	r->t_end_ns = r->tok_ns[3];
	r->complete = true;
	request__finish(r);
	return r;
}

static void proc_hook(void *ud, uint32_t pid, struct otlp_proc *p)
{
	(void)ud;
	snprintf(p->container_id, sizeof(p->container_id), "ctr-%u", pid);
}

struct spanv {
	struct pbuf_field s, tid, sid, par;
	bool has_par;
	int64_t kind;
};

static bool span_by_conn(struct pbuf_field req, const char *conn, struct spanv *v)
{
	struct pbuf_field rs, ss, sp, f;
	char c[REQ_ADDR_MAX];

	for (int i = 0; pb_get(req, EXPORT_RESOURCE, i, &rs); i++)
		for (int j = 0; pb_get(rs, RES_SCOPE, j, &ss); j++)
			for (int k = 0; pb_get(ss, SCOPE_ITEMS, k, &sp); k++) {
				if (!kv_str(sp, SPAN_ATTR, "tokentrace.conn", c, sizeof(c)) ||
				    strcmp(c, conn))
					continue;
				v->s = sp;
				assert_true(pb_get(sp, SPAN_TRACE_ID, 0, &v->tid));
				assert_true(pb_get(sp, SPAN_SPAN_ID, 0, &v->sid));
				v->has_par = pb_get(sp, SPAN_PARENT_SPAN_ID, 0, &v->par);
				assert_true(pb_get(sp, SPAN_KIND, 0, &f));
				v->kind = (int64_t)f.v;
				return true;
			}
	return false;
}

static void test_output(void **state)
{
	static const char tp[] = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
	const char *up_conn = "127.0.0.1:40000-127.0.0.1:9000";
	const char *down_conn = "127.0.0.1:8080-127.0.0.1:50000";
	char url[64];
	struct output_opts oo = { .otlp_proc = proc_hook };
	struct output out;
	struct tt_request *u, *d, *t, *c;
	struct otlp_stats st;
	struct pbuf_field tr, me, rs, res, f;
	struct spanv su, sd, stp, sc;
	char s[64];
	int traces = -1, metrics = -1;

	(void)state;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", rx.port);
	oo.otlp_url = url;
	assert_int_equal(output_otlp__new(&out, &oo), 0);
	out.ops->ready(out.priv, &(struct ready_info){ .replay = true });
	/* the proxy's upstream call finishes first, then the downstream request it served */
	u = req(10, true, up_conn, 2001000000, tp);	/* nginx passes the header through */
	d = req(10, false, down_conn, 2000000000, tp);
	d->up.paired = true;
	d->up.by = PAIR_STREAM_ID;
	snprintf(d->up.conn, sizeof(d->up.conn), "%s", up_conn);
	d->up.request_delay_ns = 1000000;
	/* a slow reader downstream: it ends long after the call did, and still claims it */
	d->t_end_ns = u->t_end_ns + 3000000000ull;
	t = req(11, false, "127.0.0.1:8081-127.0.0.1:50001", 2100000000, tp);
	c = req(11, true, "127.0.0.1:40001-127.0.0.1:9001", 2200000000, NULL);
	out.ops->request(out.priv, u);
	out.ops->request(out.priv, d);
	out.ops->request(out.priv, t);
	out.ops->request(out.priv, c);
	output_otlp__finish(&out);
	output_otlp__stats(&out, &st);
	out.ops->free(out.priv);

	assert_int_equal(st.traces.sent, 4);
	assert_int_equal(st.traces.failed + st.traces.dropped + st.traces.rejected, 0);
	assert_true(st.metrics.sent > 0);
	for (int i = 0; i < rx.ngot; i++) {
		assert_false(rx.got[i].gunzip_failed);
		if (!strcmp(rx.got[i].path, "/v1/traces"))
			traces = i;
		if (!strcmp(rx.got[i].path, "/v1/metrics"))
			metrics = i;
	}
	assert_true(traces >= 0 && metrics >= 0);
	tr = pb_whole(rx.got[traces].body, rx.got[traces].len);
	assert_int_equal(pb_count(tr, EXPORT_RESOURCE), 2);	/* two processes */
	assert_true(pb_get(tr, EXPORT_RESOURCE, 0, &rs));
	assert_true(pb_get(rs, RES_RESOURCE, 0, &res));
	assert_true(kv_str(res, RESOURCE_ATTR, "container.id", s, sizeof(s)));
	assert_true(!strcmp(s, "ctr-10") || !strcmp(s, "ctr-11"));
	/* a replay: the executable's name is the comm, not this host's /proc */
	assert_true(kv_str(res, RESOURCE_ATTR, "process.executable.name", s, sizeof(s)));
	assert_true(!strcmp(s, "gateway") || !strcmp(s, "gw-out"));

	assert_true(span_by_conn(tr, up_conn, &su));
	assert_true(span_by_conn(tr, down_conn, &sd));
	assert_true(span_by_conn(tr, t->conn, &stp));
	assert_true(span_by_conn(tr, c->conn, &sc));
	/* the downstream joins its caller; the upstream call is its child, in the same trace */
	assert_int_equal(sd.kind, SPAN_KIND_SERVER);
	assert_true(sd.has_par);
	assert_memory_equal(sd.par.data, "\xb7\xad\x6b\x71\x69\x20\x33\x31", 8);
	assert_memory_equal(sd.tid.data, "\x0a\xf7\x65\x19\x16\xcd\x43\xdd", 8);
	assert_int_equal(su.kind, SPAN_KIND_CLIENT);
	assert_true(su.has_par);
	assert_memory_equal(su.tid.data, sd.tid.data, 16);
	assert_memory_equal(su.par.data, sd.sid.data, 8);
	assert_true(pb_get(su.s, SPAN_FLAGS, 0, &f));
	assert_int_equal(f.v, 0x101);	/* its parent is local */
	/* the other traceparent'd request: the same caller's trace, its own span */
	assert_memory_equal(stp.tid.data, sd.tid.data, 16);
	assert_memory_not_equal(stp.sid.data, sd.sid.data, 8);
	/* an outbound call nobody claimed and without a traceparent: a root of its own */
	assert_false(sc.has_par);
	assert_memory_not_equal(sc.tid.data, sd.tid.data, 16);

	/* the metrics' exemplars point at these spans */
	me = pb_whole(rx.got[metrics].body, rx.got[metrics].len);
	{
		bool found = false;
		const uint8_t *hit = memmem(me.data, me.len, sd.tid.data, 16);

		found = hit || memmem(me.data, me.len, stp.tid.data, 16);
		assert_true(found);
		assert_non_null(memmem(me.data, me.len, "gen_ai.server.time_to_first_token", 33));
		assert_non_null(memmem(me.data, me.len, "gen_ai.client.token.usage", 25));
	}
	request__free(u);
	request__free(d);
	request__free(t);
	request__free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ok, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats_ok, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retry_after, setup, teardown),
		cmocka_unit_test_setup_teardown(test_503_backoff, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_retried_and_partial, setup, teardown),
		cmocka_unit_test_setup_teardown(test_down_then_up, setup, teardown),
		cmocka_unit_test_setup_teardown(test_down_gives_up, setup, teardown),
		cmocka_unit_test_setup_teardown(test_queue_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hung_collector, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
