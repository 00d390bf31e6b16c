// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The first bytes of a connection, however they are split. A client may write "P" and then
 * "OST /v1/...", and a server read it so (issue 32: a first read of "P", "PO" or "POS" gave
 * the method "OST", "ST" or "T"; one of exactly "POST" lost the request). Each request of a
 * few real shapes is cut at every byte offset of its first line and of its whole head (and
 * body) into two reads, and at every pair of offsets into three: the record must come out
 * the same every time, to the method, path, status, chunk count, TTFT and queue time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "core/corr_feed.h"

#define T_READ0		1000	/* the reads of the request bytes: 1000, 1100, 1200 */
#define T_READ_STEP	100
#define T_ARRIVAL	900	/* the first read's bytes arrived in the socket then */

/* What one request must come out as; times of 0 are worked out from the cuts. */
struct want {
	const char *method, *path, *rid, *model;
	int status;
	uint32_t chunks;
	uint64_t t_first_chunk;
	size_t first_byte, last_byte;	/* of the request bytes: which reads began and ended it */
};

struct shape {
	const char *name;
	char req[1024];		/* every request, as the client wrote them */
	size_t len, head;	/* the bytes, and the first request's head */
	void (*respond)(struct correlator *c, uint64_t id);
	int nreq;
	struct want w[2];
};

/* The read holding byte i of the request bytes cut at c1 and c2 (0: no cut). */
static uint64_t read_time(size_t i, size_t c1, size_t c2)
{
	return T_READ0 + T_READ_STEP * ((c1 && i >= c1) + (c2 && i >= c2));
}

static void read_pieces(struct correlator *c, uint64_t id, const char *b, size_t len, size_t c1,
			size_t c2)
{
	size_t at[4] = { 0, c1 ? c1 : len, c2 ? c2 : len, len };

	for (int i = 0; i < 3; i++) {
		if (at[i + 1] <= at[i])
			continue;
		if (!at[i])
			next_arrival = T_ARRIVAL;
		rec_data(c, id, TT_DIR_RECV, read_time(at[i], c1, c2), b + at[i],
			 at[i + 1] - at[i]);
	}
}

static void sse_answer(struct correlator *c, uint64_t id)
{
	char b[512];

	send_s(c, id, 2000, sse_head);
	chunk(b, sizeof(b), ROLE TOK("Hello"));
	send_s(c, id, 5000, b);
	chunk(b, sizeof(b), TOK(" world"));
	send_s(c, id, 6000, b);
	chunk(b, sizeof(b), TOK("!") FIN DONE);
	send_s(c, id, 8000, b);
	send_s(c, id, 9000, "0\r\n\r\n");
}

#define JSON_ANSWER "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" \
		    "Content-Length: 11\r\n\r\n{\"data\":[]}"

static void json_answer(struct correlator *c, uint64_t id)
{
	send_s(c, id, 3000, JSON_ANSWER);
}

static void both_answers(struct correlator *c, uint64_t id)
{
	sse_answer(c, id);
	send_s(c, id, 9500, JSON_ANSWER);
}

static void check(const struct tt_request *r, const struct want *w, size_t c1, size_t c2,
		  bool first)
{
	uint64_t t_recv = read_time(w->first_byte, c1, c2), t_start = read_time(w->last_byte, c1, c2);

	assert_string_equal(r->method, w->method);
	assert_string_equal(r->path, w->path);
	assert_string_equal(r->request_id, w->rid);
	assert_string_equal(r->model, w->model);
	assert_int_equal(r->status, w->status);
	assert_int_equal(r->chunks, w->chunks);
	assert_int_equal(r->t_recv_ns, t_recv);
	assert_int_equal(r->t_start_ns, t_start);
	assert_int_equal(r->ttft_ns, w->t_first_chunk - t_start);
	assert_true(r->complete);
	assert_false(r->lost);
	assert_false(r->truncated);
	if (first) {
		/* how long the first read's bytes waited: from its own arrival, held or not */
		assert_true(r->queue_known);
		assert_int_equal(r->queue_ns, T_READ0 - T_ARRIVAL);
	}
}

static void run(const struct shape *s, size_t c1, size_t c2)
{
	struct correlator *c = new_corr();
	const struct corr_stats *st;

	rec_conn(c, 1, 100);
	read_pieces(c, 1, s->req, s->len, c1, c2);
	s->respond(c, 1);
	if (ndone != s->nreq)
		fail_msg("%s cut at %zu,%zu: %d requests, not %d", s->name, c1, c2, ndone, s->nreq);
	for (int i = 0; i < s->nreq; i++)
		check(&done[i].r, &s->w[i], c1, c2, i == 0);
	st = correlator__stats(c);
	assert_int_equal(st->unmatched_responses, 0);
	assert_int_equal(st->parse_errors, 0);
	assert_int_equal(st->conns_ignored, 0);
	correlator__free(c);
}

/* Two reads cut anywhere; three reads cut anywhere in the first head, then anywhere after. */
static void every_split(const struct shape *s)
{
	run(s, 0, 0);
	for (size_t c1 = 1; c1 < s->len; c1++)
		run(s, c1, 0);
	for (size_t c1 = 1; c1 <= s->head; c1++)
		for (size_t c2 = c1 + 1; c2 < s->len; c2++)
			run(s, c1, c2);
}

static const struct want post_want = {
	.method = "POST", .path = "/v1/chat/completions", .rid = "split-1", .model = "llama-3",
	.status = 200, .chunks = 3, .t_first_chunk = 5000,
};

static void post_shape(struct shape *s)
{
	memset(s, 0, sizeof(*s));
	s->name = "POST";
	request_text(s->req, sizeof(s->req), "split-1");
	s->len = strlen(s->req);
	s->head = strstr(s->req, "\r\n\r\n") + 4 - s->req;
	s->respond = sse_answer;
	s->nreq = 1;
	s->w[0] = post_want;
	s->w[0].last_byte = s->len - 1;
}

static void test_post_every_split(void **state)
{
	struct shape s;

	post_shape(&s);
	every_split(&s);
}

static const struct want get_want = {
	.method = "GET", .path = "/v1/models", .rid = "split-2", .model = "",
	.status = 200, .chunks = 1,
};

static void test_get_every_split(void **state)
{
	struct shape s = { .name = "GET", .respond = json_answer, .nreq = 1, .w = { get_want } };

	s.len = snprintf(s.req, sizeof(s.req), "GET /v1/models HTTP/1.1\r\nHost: x\r\n"
			 "X-Request-Id: split-2\r\n\r\n");
	s.head = s.len;
	s.w[0].t_first_chunk = 3000;
	s.w[0].last_byte = s.len - 1;
	every_split(&s);
}

/* Two requests in the client's bytes, answered in order: each cut the same way. */
static void test_pipelined_every_split(void **state)
{
	struct shape s;
	size_t one;

	post_shape(&s);
	s.name = "pipelined";
	one = s.len;
	s.len += snprintf(s.req + one, sizeof(s.req) - one, "GET /v1/models HTTP/1.1\r\nHost: x\r\n"
			  "X-Request-Id: split-2\r\n\r\n");
	s.respond = both_answers;
	s.nreq = 2;
	s.w[1] = get_want;
	s.w[1].t_first_chunk = 9500;
	s.w[1].first_byte = one;
	s.w[1].last_byte = s.len - 1;
	s.w[0].last_byte = one - 1;
	every_split(&s);
}

/*
 * The target as a client: its request written in pieces, then the answer's status line read
 * in pieces. The same outbound call comes out whatever the cuts.
 */
static void test_client_every_split(void **state)
{
	char req[256], b[512];
	size_t len = snprintf(req, sizeof(req), "POST /v1/chat/completions HTTP/1.1\r\nHost: api\r\n"
			      "X-Request-Id: out-1\r\nContent-Length: 0\r\n\r\n");
	size_t hlen = strlen(sse_head);

	for (size_t cut = 0; cut < len + hlen; cut++) {
		struct correlator *c = new_corr();
		size_t rcut = cut >= len ? cut - len : 0, qcut = cut < len ? cut : 0;

		rec_conn(c, 9, 1);
		if (qcut)
			rec_data(c, 9, TT_DIR_SEND, 50, req, qcut);
		rec_data(c, 9, TT_DIR_SEND, 100, req + qcut, len - qcut);
		if (rcut)
			rec_data(c, 9, TT_DIR_RECV, 150, sse_head, rcut);
		rec_data(c, 9, TT_DIR_RECV, 200, sse_head + rcut, hlen - rcut);
		chunk(b, sizeof(b), TOK("a"));
		recv_s(c, 9, 350, b);
		chunk(b, sizeof(b), TOK("b") DONE);
		recv_s(c, 9, 420, b);
		recv_s(c, 9, 440, "0\r\n\r\n");
		assert_int_equal(ndone, 1);
		assert_true(done[0].r.client);
		assert_string_equal(done[0].r.method, "POST");
		assert_string_equal(done[0].r.path, "/v1/chat/completions");
		assert_string_equal(done[0].r.request_id, "out-1");
		assert_int_equal(done[0].r.status, 200);
		assert_int_equal(done[0].r.chunks, 2);
		assert_int_equal(done[0].r.t_recv_ns, qcut ? 50 : 100);
		assert_int_equal(done[0].r.ttft_ns, 250);
		assert_true(done[0].r.complete);
		assert_int_equal(correlator__stats(c)->conns_ignored, 0);
		correlator__free(c);
	}
}

/*
 * Joined mid-exchange at a response's status line, read in two pieces ("HTT", "P/1.1 200"):
 * the target is a client from those bytes on. The answer has no request to pair with, and is
 * counted so; the next exchange comes out whole.
 */
static void test_joined_at_split_status_line(void **state)
{
	static const char answer[] = JSON_ANSWER;

	for (size_t cut = 1; cut < 7; cut++) {
		struct correlator *c = new_corr();

		rec_conn(c, 9, 1);
		rec_data(c, 9, TT_DIR_RECV, 100, answer, cut);
		rec_data(c, 9, TT_DIR_RECV, 110, answer + cut, strlen(answer) - cut);
		assert_int_equal(correlator__stats(c)->unmatched_responses, 1);
		send_s(c, 9, 200, "GET /v1/models HTTP/1.1\r\nX-Request-Id: m\r\n\r\n");
		recv_s(c, 9, 300, JSON_ANSWER);
		assert_int_equal(ndone, 1);
		assert_true(done[0].r.client);
		assert_string_equal(done[0].r.request_id, "m");
		assert_int_equal(done[0].r.ttft_ns, 100);
		assert_int_equal(correlator__stats(c)->unmatched_responses, 1);
		correlator__free(c);
	}
}

/*
 * What only looks like the start of a request is none: the tail of a request line whose
 * first bytes came before the trace ("T /v1/..."), or held bytes that the next read does not
 * continue. The first whole request after them is read from its own first byte.
 */
static void test_not_a_start(void **state)
{
	struct correlator *c = new_corr();
	char b[1024];

	rec_conn(c, 5, 1);
	recv_s(c, 5, 100, "T /v1/chat/completions HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
	send_s(c, 5, 200, JSON_ANSWER);		/* its answer: a server, but nothing to pair */
	assert_int_equal(ndone, 0);
	correlator__free(c);

	c = new_corr();
	rec_conn(c, 6, 1);
	recv_s(c, 6, 100, "PO");
	recv_s(c, 6, 110, "{\"not\":\"a request\"}");	/* held, then not continued: none */
	recv_s(c, 6, 120, "GE");
	recv_s(c, 6, 1000, request_text(b, sizeof(b), "split-1"));
	sse_answer(c, 6);
	assert_int_equal(ndone, 1);
	assert_string_equal(done[0].r.method, "POST");
	assert_int_equal(done[0].r.t_recv_ns, 1000);
	assert_int_equal(done[0].r.ttft_ns, 4000);
	assert_int_equal(correlator__stats(c)->parse_errors, 0);
	correlator__free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_post_every_split),
		cmocka_unit_test(test_get_every_split),
		cmocka_unit_test(test_pipelined_every_split),
		cmocka_unit_test(test_client_every_split),
		cmocka_unit_test(test_joined_at_split_status_line),
		cmocka_unit_test(test_not_a_start),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
