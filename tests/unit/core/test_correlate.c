// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The correlator fed with canned ring-buffer records, as the kernel side would write them:
 * what a user reads in the output (chunks, TTFT, ITL, flags) must follow from the bytes and
 * the send times alone.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "correlate.h"
#include "events.h"
#include "core/corr_feed.h"

static void test_stream_basic(void **state)
{
	struct correlator *c = new_corr();
	char b[512];

	rec_conn(c, 1, 100);
	send_request(c, 1, 1000, "req-1");
	send_s(c, 1, 2000, sse_head);		/* headers go out before prefill */
	chunk(b, sizeof(b), ROLE TOK("Hello"));	/* role-only chunk shares the first token's send */
	send_s(c, 1, 5000, b);
	chunk(b, sizeof(b), TOK(" world"));
	send_s(c, 1, 6000, b);
	chunk(b, sizeof(b), TOK("!"));
	send_s(c, 1, 8000, b);
	chunk(b, sizeof(b), FIN DONE);
	strcat(b, "0\r\n\r\n");			/* tail, [DONE] and terminator in one send */
	send_s(c, 1, 9000, b);

	assert_int_equal(ndone, 1);
	struct tt_request *r = &done[0].r;
	assert_string_equal(r->request_id, "req-1");
	assert_string_equal(r->method, "POST");
	assert_string_equal(r->path, "/v1/chat/completions");
	assert_string_equal(r->model, "llama-3");
	assert_string_equal(r->conn, "127.0.0.1:8000-127.0.0.1:50001");
	assert_int_equal(r->status, 200);
	assert_int_equal(r->format, FMT_SSE);
	assert_int_equal(r->stream, 1);
	assert_int_equal(r->chunks, 3);
	assert_int_equal(r->t_start_ns, 1000);
	assert_int_equal(r->ttft_ns, 4000);
	assert_int_equal(request__itl(r, 0), 1000);
	assert_int_equal(request__itl(r, 1), 2000);
	assert_int_equal(r->tpot_ns, 1500);
	assert_int_equal(r->e2e_ns, 8000);
	assert_true(r->complete);
	assert_true(r->saw_final);
	assert_int_equal(r->abort, ABORT_NONE);
	assert_false(r->truncated);
	correlator__free(c);
}

/*
 * The same response bytes cut into two sends at every position: the chunk count never
 * changes, and each chunk is stamped with the send that completed its event.
 */
static void test_stream_every_split(void **state)
{
	const char *events[] = { ROLE, TOK("a"), TOK("b"), TOK("c"), FIN, DONE };
	char body[2048] = "", b[512];
	size_t ends[6], len;
	int content[6] = { 0, 1, 1, 1, 0, 0 };

	for (int i = 0; i < 6; i++) {
		chunk(b, sizeof(b), events[i]);
		strcat(body, b);
		/* the event is complete when its blank line is, two bytes before the chunk CRLF */
		ends[i] = strlen(body) - 2;
	}
	strcat(body, "0\r\n\r\n");
	len = strlen(body);
	for (size_t cut = 1; cut < len; cut++) {
		struct correlator *c = new_corr();
		int k = 0;

		rec_conn(c, 7, 1);
		send_request(c, 7, 10, "split");
		send_s(c, 7, 20, sse_head);
		rec_data(c, 7, TT_DIR_SEND, 100, body, cut);
		rec_data(c, 7, TT_DIR_SEND, 200, body + cut, len - cut);
		assert_int_equal(ndone, 1);
		assert_int_equal(done[0].r.chunks, 3);
		for (int i = 0; i < 6; i++) {
			if (!content[i])
				continue;
			assert_int_equal(done[0].tok[k], ends[i] <= cut ? 100 : 200);
			k++;
		}
		assert_true(done[0].r.complete);
		correlator__free(c);
	}
}

static void test_keepalive(void **state)
{
	struct correlator *c = new_corr();
	char b[256];

	rec_conn(c, 2, 1);
	for (int i = 0; i < 3; i++) {
		uint64_t t0 = 10000 * (i + 1);

		send_request(c, 2, t0, i == 0 ? "a" : i == 1 ? "b" : "c");
		send_s(c, 2, t0 + 10, sse_head);
		chunk(b, sizeof(b), TOK("x") TOK("y"));	/* two events in one send */
		send_s(c, 2, t0 + 500, b);
		send_s(c, 2, t0 + 600, "0\r\n\r\n");
	}
	assert_int_equal(ndone, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(done[i].r.seq, i + 1);
		assert_int_equal(done[i].r.chunks, 2);
		assert_int_equal(done[i].r.ttft_ns, 500);
		assert_int_equal(request__itl(&done[i].r, 0), 0);	/* same send */
	}
	assert_string_equal(done[2].r.request_id, "c");
	correlator__free(c);
}

static void test_pipelined(void **state)
{
	struct correlator *c = new_corr();
	char one[512], two[1024], b[256];

	snprintf(one, sizeof(one),
		 "POST /v1/completions HTTP/1.1\r\nX-Request-Id: p1\r\nContent-Length: %zu\r\n\r\n%s",
		 strlen(req_body), req_body);
	snprintf(two, sizeof(two), "%sGET /v1/models HTTP/1.1\r\nX-Request-Id: p2\r\n\r\n", one);
	rec_conn(c, 3, 1);
	recv_s(c, 3, 100, two);
	send_s(c, 3, 200, sse_head);
	chunk(b, sizeof(b), TOK("z"));
	send_s(c, 3, 300, b);
	send_s(c, 3, 400, "0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		"Content-Length: 11\r\n\r\n{\"data\":[]}");
	assert_int_equal(ndone, 2);
	assert_string_equal(done[0].r.request_id, "p1");
	assert_string_equal(done[1].r.request_id, "p2");
	assert_int_equal(done[0].r.t_start_ns, 100);
	assert_int_equal(done[1].r.t_start_ns, 100);
	assert_int_equal(done[1].r.format, FMT_JSON);
	assert_int_equal(done[1].r.stream, 0);
	assert_int_equal(done[1].r.chunks, 1);	/* a non-streaming body is one unit */
	assert_int_equal(done[1].r.ttft_ns, 300);
	correlator__free(c);
}

static void test_client_abort(void **state)
{
	struct correlator *c = new_corr();
	char b[256];

	rec_conn(c, 4, 1);
	send_request(c, 4, 100, "ab");
	send_s(c, 4, 200, sse_head);
	chunk(b, sizeof(b), TOK("1"));
	send_s(c, 4, 300, b);
	rec_state(c, 4, TCP_CLOSE_WAIT, 350);	/* the client closed its side */
	assert_int_equal(ndone, 0);		/* a half-close alone aborts nothing */
	rec_data_cap(c, 4, TT_DIR_SEND, 400, "", 0, 0, 0, -32 /* EPIPE */);
	assert_int_equal(ndone, 1);
	assert_int_equal(done[0].r.abort, ABORT_CLIENT);
	assert_int_equal(done[0].r.chunks, 1);
	assert_false(done[0].r.complete);
	rec_state(c, 4, TCP_CLOSE, 500);
	assert_int_equal(ndone, 1);
	correlator__free(c);
}

static void test_close_mid_stream_and_unanswered(void **state)
{
	struct correlator *c = new_corr();
	char b[256];

	rec_conn(c, 5, 1);
	send_request(c, 5, 100, "mid");
	send_s(c, 5, 200, sse_head);
	chunk(b, sizeof(b), TOK("1"));
	send_s(c, 5, 300, b);
	rec_state(c, 5, TCP_CLOSE_WAIT, 350);
	rec_state(c, 5, TCP_CLOSE, 360);
	assert_int_equal(ndone, 1);
	assert_int_equal(done[0].r.abort, ABORT_CLIENT);

	/* a request read, then the server closes before any answer */
	rec_conn(c, 6, 1000);
	send_request(c, 6, 1100, "never");
	rec_state(c, 6, TCP_FIN_WAIT1, 1150);
	rec_state(c, 6, TCP_CLOSE, 1200);
	assert_int_equal(ndone, 2);
	assert_string_equal(done[1].r.request_id, "never");
	assert_int_equal(done[1].r.chunks, 0);
	assert_int_equal(done[1].r.abort, ABORT_SERVER);
	/* ... or the connection is reset, no FIN either way: the client went away */
	rec_conn(c, 16, 2000);
	send_request(c, 16, 2100, "reset");
	rec_state(c, 16, TCP_CLOSE, 2200);
	assert_int_equal(ndone, 3);
	assert_int_equal(done[2].r.abort, ABORT_CLIENT);
	assert_int_equal(correlator__stats(c)->unanswered, 2);
	correlator__free(c);
}

/* a one-token SSE response: its head at ts, the token 100 later, its end 200 later */
static void answer_one_token(struct correlator *c, uint64_t id, uint64_t ts)
{
	char b[256];

	send_s(c, id, ts, sse_head);
	chunk(b, sizeof(b), TOK("1"));
	send_s(c, id, ts + 100, b);
	send_s(c, id, ts + 200, "0\r\n\r\n");
}

static void test_lost_records(void **state)
{
	struct correlator *c = new_corr();
	char b[256], rq[1024];

	rec_conn(c, 8, 1);
	send_request(c, 8, 100, "lost");
	send_s(c, 8, 200, sse_head);
	chunk(b, sizeof(b), TOK("1"));
	send_s(c, 8, 300, b);
	/* the kernel dropped records before this one: the response can't be trusted */
	chunk(b, sizeof(b), TOK("9"));
	rec_data_cap(c, 8, TT_DIR_SEND, 900, b, strlen(b), strlen(b), TT_DF_LOST, 0);
	assert_int_equal(ndone, 1);
	assert_true(done[0].r.lost);
	assert_int_equal(done[0].r.abort, ABORT_LOST);
	assert_int_equal(correlator__stats(c)->lost_records, 3);
	/* the loss hit a response in flight: flagged there, not counted between requests */
	assert_int_equal(correlator__stats(c)->lost_between, 0);
	/* the next exchange on the connection is traced again */
	send_request(c, 8, 1000, "after");
	answer_one_token(c, 8, 1100);
	assert_int_equal(ndone, 2);
	assert_string_equal(done[1].r.request_id, "after");
	assert_false(done[1].r.lost);
	assert_int_equal(done[1].r.chunks, 1);
	/*
	 * A whole request and its response dropped: the loss rides on the next request's
	 * first record, with nothing in flight to flag. That request is intact; the loss is
	 * counted as between requests, where whole requests may be.
	 */
	request_text(rq, sizeof(rq), "next");
	rec_data_cap(c, 8, TT_DIR_RECV, 2000, rq, strlen(rq), strlen(rq), TT_DF_LOST, 0);
	assert_int_equal(correlator__stats(c)->lost_between, 1);
	answer_one_token(c, 8, 2100);
	assert_int_equal(ndone, 3);
	assert_string_equal(done[2].r.request_id, "next");
	assert_false(done[2].r.lost);
	assert_int_equal(correlator__stats(c)->lost_records, 6);
	/*
	 * A request seen, and the next record, a response's first, says records were lost both
	 * ways before it (TT_DF_LOST_XDIR: this request's answer and the next request, say):
	 * the request is flagged, and a whole exchange may be among the lost records, so the
	 * loss is counted between requests too.
	 */
	send_request(c, 8, 3000, "crossed");
	rec_data_cap(c, 8, TT_DIR_SEND, 3100, sse_head, strlen(sse_head), strlen(sse_head),
		     TT_DF_LOST | TT_DF_LOST_XDIR, 0);
	assert_int_equal(correlator__stats(c)->lost_between, 2);
	send_s(c, 8, 3200, "0\r\n\r\n");
	assert_int_equal(ndone, 4);
	assert_string_equal(done[3].r.request_id, "crossed");
	assert_true(done[3].r.lost);
	correlator__free(c);
}

/*
 * The target writes the request and reads the stream: an outbound call (a gateway, an app
 * calling an LLM API). Times are its own: the request's last byte sent, each chunk received.
 */
/*
 * --budget: the kernel left whole exchanges out and says so on the next record it sends, the
 * first of a request. The parsers start over there: a request left out midway through the
 * parsers' view (its head read, then the budget ran out: cannot happen in the kernel, which
 * decides at a request's start, but a record may say so) is flagged, never paired with the
 * next answer; with nothing in flight nothing is flagged or counted lost.
 */
static void test_budget_skipped(void **state)
{
	struct correlator *c = new_corr();
	char rq[1024];

	rec_conn(c, 9, 1);
	send_request(c, 9, 100, "first");
	answer_one_token(c, 9, 200);
	assert_int_equal(ndone, 1);
	/* two exchanges left out, then this one */
	next_skipped = 2;
	send_request(c, 9, 1000, "third");
	answer_one_token(c, 9, 1100);
	assert_int_equal(ndone, 2);
	assert_string_equal(done[1].r.request_id, "third");
	assert_false(done[1].r.lost);
	assert_int_equal(done[1].r.chunks, 1);
	assert_int_equal(correlator__stats(c)->lost_records, 0);
	assert_int_equal(correlator__stats(c)->lost_between, 0);
	/* a response head half parsed when the next record says exchanges were left out */
	send_request(c, 9, 2000, "cut");
	send_s(c, 9, 2100, "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n");
	next_skipped = 1;
	request_text(rq, sizeof(rq), "after");
	rec_data(c, 9, TT_DIR_RECV, 3000, rq, strlen(rq));
	answer_one_token(c, 9, 3100);
	assert_int_equal(ndone, 4);
	assert_string_equal(done[2].r.request_id, "cut");
	assert_true(done[2].r.lost);
	assert_string_equal(done[3].r.request_id, "after");
	assert_false(done[3].r.lost);
	assert_int_equal(done[3].r.chunks, 1);
	/* a request whose body was still to come (after a "100 Continue") goes as lost too */
	recv_s(c, 9, 4000, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
	       "X-Request-Id: half\r\nContent-Length: 100\r\n\r\n{\"messages\"");
	next_skipped = 1;
	send_request(c, 9, 5000, "last");
	answer_one_token(c, 9, 5100);
	assert_int_equal(ndone, 6);
	assert_string_equal(done[4].r.request_id, "half");
	assert_true(done[4].r.lost);
	assert_string_equal(done[5].r.request_id, "last");
	assert_false(done[5].r.lost);
	assert_int_equal(correlator__stats(c)->parse_errors, 0);
	assert_int_equal(correlator__stats(c)->data_records, 19);
	correlator__free(c);
}

static void test_client_role(void **state)
{
	struct correlator *c = new_corr();
	char b[512];

	rec_conn(c, 9, 1);
	send_s(c, 9, 100, "POST /v1/chat/completions HTTP/1.1\r\nHost: api\r\n"
			 "X-Request-Id: out-1\r\nContent-Length: 0\r\n\r\n");
	recv_s(c, 9, 200, sse_head);
	chunk(b, sizeof(b), TOK("a"));
	recv_s(c, 9, 350, b);
	chunk(b, sizeof(b), TOK("b"));
	recv_s(c, 9, 420, b);
	chunk(b, sizeof(b), DONE);
	recv_s(c, 9, 430, b);
	recv_s(c, 9, 440, "0\r\n\r\n");
	assert_int_equal(ndone, 1);
	assert_true(done[0].r.client);
	assert_string_equal(done[0].r.request_id, "out-1");
	assert_int_equal(done[0].r.chunks, 2);
	assert_int_equal(done[0].r.ttft_ns, 250);
	assert_int_equal(done[0].r.itl_max_ns, 70);
	assert_true(done[0].r.complete);
	assert_int_equal(correlator__stats(c)->conns_ignored, 0);
	/* the server closing mid-stream is the server's abort, from the client's side */
	send_s(c, 9, 500, "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
	recv_s(c, 9, 600, sse_head);
	chunk(b, sizeof(b), TOK("a"));
	recv_s(c, 9, 700, b);
	rec_state(c, 9, TCP_CLOSE_WAIT, 800);
	rec_state(c, 9, TCP_CLOSE, 900);
	assert_int_equal(ndone, 2);
	assert_int_equal(done[1].r.abort, ABORT_SERVER);
	correlator__free(c);
}

static void test_truncated_capture(void **state)
{
	struct correlator *c = new_corr();
	char b[256];

	rec_conn(c, 10, 1);
	send_request(c, 10, 100, "trunc");
	send_s(c, 10, 200, sse_head);
	chunk(b, sizeof(b), TOK("1") TOK("2"));
	/* only the first 20 bytes captured: the rest moved, unseen */
	rec_data_cap(c, 10, TT_DIR_SEND, 300, b, strlen(b), 20, 0, 0);
	send_s(c, 10, 400, "0\r\n\r\n");
	assert_int_equal(ndone, 1);
	assert_true(done[0].r.truncated);
	assert_true(done[0].r.complete);	/* framing went on through the gap by length */
	correlator__free(c);
}

static void test_conn_ids_not_confused(void **state)
{
	struct correlator *c = new_corr();
	char b[256];

	/* same socket address reused: the kernel side gives the new connection a new id */
	rec_conn(c, 11, 1);
	send_request(c, 11, 100, "old");
	send_s(c, 11, 200, sse_head);
	rec_state(c, 11, TCP_CLOSE, 300);
	rec_conn(c, 12, 400);
	send_request(c, 12, 500, "new");
	send_s(c, 12, 600, sse_head);
	chunk(b, sizeof(b), TOK("1"));
	send_s(c, 12, 700, b);
	send_s(c, 12, 800, "0\r\n\r\n");
	assert_int_equal(ndone, 2);
	assert_string_equal(done[1].r.request_id, "new");
	assert_int_equal(done[1].r.ttft_ns, 200);
	correlator__free(c);
}

static void test_malformed_records(void **state)
{
	struct correlator *c = new_corr();
	uint8_t junk[64] = { 0 };
	struct tt_data_ev e = { .h = { .type = TT_EV_DATA, .size = sizeof(e) }, .cap = 100 };

	assert_int_equal(correlator__record(c, junk, 3), -EINVAL);
	junk[16] = 99;	/* unknown type */
	((struct tt_hdr *)junk)->size = sizeof(junk);
	assert_int_equal(correlator__record(c, junk, sizeof(junk)), -EINVAL);
	/* claims more payload than the record holds */
	assert_int_equal(correlator__record(c, &e, sizeof(e)), -EINVAL);
	assert_int_equal(correlator__stats(c)->bad_records, 3);
	correlator__free(c);
}

static void test_garbage_then_http(void **state)
{
	struct correlator *c = new_corr();
	char b[256];

	rec_conn(c, 13, 1);
	recv_s(c, 13, 50, "\x01\x02garbage that is not http\r\n\r\n");
	send_request(c, 13, 100, "g");
	send_s(c, 13, 200, sse_head);
	chunk(b, sizeof(b), TOK("1"));
	send_s(c, 13, 300, b);
	send_s(c, 13, 400, "0\r\n\r\n");
	assert_int_equal(ndone, 1);
	assert_string_equal(done[0].r.request_id, "g");
	correlator__free(c);
}

static void rec_marker(struct correlator *c, uint16_t idx, uint32_t tid, uint64_t ts,
		       const char *key)
{
	struct tt_marker_ev e = {
		.h = { .ts = ts, .tgid = 42, .tid = tid, .type = TT_EV_MARKER, .size = sizeof(e) },
		.marker = idx,
	};

	if (key) {
		e.key_kind = TT_KEY_STR;
		strncpy(e.key_str, key, sizeof(e.key_str) - 1);
	}
	assert_int_equal(correlator__record(c, &e, sizeof(e)), 0);
}

/* admit, then token markers keyed by request id: the TTFT breakdown adds up */
static void test_markers_keyed(void **state)
{
	struct correlator *c = new_corr();
	const uint8_t kinds[] = { 0 /* admit */, 2 /* token */ };
	char b[256];

	correlator__set_markers(c, kinds, 2);
	rec_conn(c, 20, 1);
	send_request(c, 20, 1000, "k1");
	rec_marker(c, 0, 99, 1300, "k1");
	send_s(c, 20, 1400, sse_head);
	rec_marker(c, 1, 99, 5000, "k1");
	chunk(b, sizeof(b), TOK("a"));
	send_s(c, 20, 5200, b);
	rec_marker(c, 1, 99, 6000, "k1");
	rec_marker(c, 1, 99, 6100, "someone-else");	/* never shows: not given to k1 */
	chunk(b, sizeof(b), TOK("b"));
	send_s(c, 20, 6500, b);
	send_s(c, 20, 6600, "0\r\n\r\n");
	assert_int_equal(ndone, 1);
	struct tt_request *r = &done[0].r;
	assert_true(r->admit_known && r->prefill_known && r->emit_known);
	assert_int_equal(r->admit_ns, 300);
	assert_int_equal(r->prefill_ns, 3700);
	assert_int_equal(r->emit_to_wire_ns, 200);
	assert_int_equal(r->admit_ns + r->prefill_ns + r->emit_to_wire_ns, r->ttft_ns);
	assert_int_equal(r->nmade, 2);
	assert_int_equal(r->emit_max_ns, 500);
	correlator__free(c);
}

/* a stream id known only from the first chunk (vLLM's chatcmpl-...): markers wait for it */
static void test_markers_keyed_by_stream_id(void **state)
{
	struct correlator *c = new_corr();
	const uint8_t kinds[] = { 0, 2 };
	char b[256];

	correlator__set_markers(c, kinds, 2);
	rec_conn(c, 21, 1);
	send_request(c, 21, 1000, "");
	rec_marker(c, 0, 99, 1100, "chatcmpl-7");
	rec_marker(c, 1, 99, 3000, "chatcmpl-7");
	send_s(c, 21, 1200, sse_head);
	chunk(b, sizeof(b), "data: {\"id\":\"chatcmpl-7\",\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n");
	send_s(c, 21, 3100, b);
	send_s(c, 21, 3200, "0\r\n\r\n");
	assert_int_equal(ndone, 1);
	assert_int_equal(done[0].r.admit_ns, 100);
	assert_int_equal(done[0].r.prefill_ns, 1900);
	assert_int_equal(done[0].r.emit_to_wire_ns, 100);
	correlator__free(c);
}

/* Unkeyed: given when only one request can own the marker, counted ambiguous otherwise. */
static void test_markers_unkeyed(void **state)
{
	struct correlator *c = new_corr();
	const uint8_t kinds[] = { 0 };
	char b[256];

	correlator__set_markers(c, kinds, 1);
	rec_conn(c, 22, 1);
	rec_conn(c, 23, 1);
	send_request(c, 22, 1000, "u1");
	rec_marker(c, 0, 7, 1100, NULL);	/* the only request waiting: it is u1's */
	send_request(c, 23, 1200, "u2");
	send_request(c, 22, 1250, "u3");	/* pipelined behind u1 */
	rec_marker(c, 0, 7, 1300, NULL);	/* u2 or u3: ambiguous, not guessed */
	assert_int_equal(correlator__stats(c)->markers.ambiguous, 1);
	for (uint64_t id = 22; id <= 23; id++) {
		send_s(c, id, 2000, sse_head);
		chunk(b, sizeof(b), TOK("x"));
		send_s(c, id, 2100, b);
		send_s(c, id, 2200, "0\r\n\r\n");
	}
	send_s(c, 22, 2300, sse_head);
	send_s(c, 22, 2400, "0\r\n\r\n");
	assert_int_equal(ndone, 3);
	assert_string_equal(done[0].r.request_id, "u1");
	assert_int_equal(done[0].r.admit_ns, 100);
	assert_false(done[1].r.admit_known);
	assert_int_equal(done[1].r.markers_ambiguous, 1);
	assert_int_equal(done[2].r.markers_ambiguous, 1);
	correlator__free(c);
}

/* queue_ns: bytes that waited in the socket before the read returned them */
static void test_queue_time(void **state)
{
	struct correlator *c = new_corr();
	struct tt_data_ev *e;
	char req[512];
	size_t n;

	rec_conn(c, 24, 100);
	n = snprintf(req, sizeof(req), "GET /health HTTP/1.1\r\nX-Request-Id: q\r\n\r\n");
	e = calloc(1, sizeof(*e) + n);
	*e = (struct tt_data_ev){
		.h = { .ts = 5000, .tgid = 42, .tid = 43, .type = TT_EV_DATA,
		       .size = sizeof(*e) + n },
		.conn_id = 24, .ret = n, .cap = n, .dir = TT_DIR_RECV, .arrival = 3500,
	};
	memcpy(e->data, req, n);
	assert_int_equal(correlator__record(c, e, sizeof(*e) + n), 0);
	free(e);
	send_s(c, 24, 6000, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
	assert_int_equal(ndone, 1);
	assert_true(done[0].r.queue_known);
	assert_int_equal(done[0].r.queue_ns, 1500);
	correlator__free(c);
}

/* One send of len bytes arriving as segments of seg bytes (the kernel's TT_SEG_MAX pieces). */
static void send_segments(struct correlator *c, uint64_t id, uint64_t ts, uint64_t t_ready,
			  const char *buf, size_t len, size_t seg, int skip)
{
	for (size_t off = 0, i = 0; off < len; off += seg, i++) {
		size_t n = len - off < seg ? len - off : seg;
		size_t size = sizeof(struct tt_data_ev) + n;
		struct tt_data_ev *e = calloc(1, size);

		e->h = (struct tt_hdr){ .ts = ts, .tgid = 42, .tid = 43, .type = TT_EV_DATA,
					.size = size };
		e->conn_id = id;
		e->ret = len;
		e->off = off;
		e->cap = n;
		e->dir = TT_DIR_SEND;
		e->t_ready = t_ready;
		e->flags = off + n < len ? TT_DF_MORE : 0;
		memcpy(e->data, buf + off, n);
		if ((int)i != skip)
			assert_int_equal(correlator__record(c, e, size), 0);
		free(e);
	}
}

/*
 * A backlog flushed in one send much larger than a record: every event counts, each at the
 * send's time, the time a local reader had the bytes (t_ready) rather than the send's end.
 */
static void test_segments(void **state)
{
	struct correlator *c = new_corr();
	char body[20000], b[24000];
	size_t n = 0;

	rec_conn(c, 20, 1);
	send_request(c, 20, 100, "burst");
	send_s(c, 20, 200, sse_head);
	for (int i = 0; i < 150; i++)
		n += snprintf(body + n, sizeof(body) - n, TOK("tok"));
	chunk(b, sizeof(b), body);
	/* events straddle every segment boundary: 97-byte pieces */
	send_segments(c, 20, 5000, 4990, b, strlen(b), 97, -1);
	chunk(b, sizeof(b), DONE);
	send_s(c, 20, 6000, b);
	send_s(c, 20, 6100, "0\r\n\r\n");
	assert_int_equal(ndone, 1);
	assert_int_equal(done[0].r.chunks, 150);
	assert_int_equal(done[0].r.ttft_ns, 4990 - 100);
	assert_int_equal(done[0].r.itl_max_ns, 0);
	assert_false(done[0].r.truncated);
	assert_true(done[0].r.complete);
	correlator__free(c);
}

/* A segment missing in the middle of a send: the connection is out of sync, and says so. */
static void test_segment_missing(void **state)
{
	struct correlator *c = new_corr();
	char body[4000], b[5000];
	size_t n = 0;

	rec_conn(c, 21, 1);
	send_request(c, 21, 100, "gap");
	send_s(c, 21, 200, sse_head);
	for (int i = 0; i < 30; i++)
		n += snprintf(body + n, sizeof(body) - n, TOK("tok"));
	chunk(b, sizeof(b), body);
	send_segments(c, 21, 5000, 0, b, strlen(b), 500, 2);
	assert_int_equal(ndone, 1);
	assert_true(done[0].r.lost);
	assert_int_equal(done[0].r.abort, ABORT_LOST);
	assert_int_equal(correlator__stats(c)->lost_records, 1);
	correlator__free(c);
}

/*
 * The stream's own end arrived ([DONE]) and the client closed before the chunked terminator,
 * as the OpenAI SDKs do against llama.cpp's server: complete, not aborted.
 */
static void test_end_of_stream_is_complete(void **state)
{
	struct correlator *c = new_corr();
	char b[512];

	rec_conn(c, 22, 1);
	send_request(c, 22, 100, "ends");
	send_s(c, 22, 200, sse_head);
	chunk(b, sizeof(b), TOK("a"));
	send_s(c, 22, 300, b);
	chunk(b, sizeof(b), DONE);
	send_s(c, 22, 400, b);
	rec_state(c, 22, TCP_CLOSE_WAIT, 450);	/* the client read [DONE] and left */
	send_s(c, 22, 500, "0\r\n");
	rec_state(c, 22, TCP_CLOSE, 600);
	assert_int_equal(ndone, 1);
	assert_true(done[0].r.complete);
	assert_int_equal(done[0].r.abort, ABORT_NONE);
	assert_int_equal(done[0].r.chunks, 1);
	assert_true(done[0].r.e2e_ns > 0);
	/* the same without [DONE]: an abort */
	rec_conn(c, 23, 1000);
	send_request(c, 23, 1100, "cut");
	send_s(c, 23, 1200, sse_head);
	chunk(b, sizeof(b), TOK("a"));
	send_s(c, 23, 1300, b);
	rec_state(c, 23, TCP_CLOSE_WAIT, 1400);
	rec_state(c, 23, TCP_CLOSE, 1500);
	assert_int_equal(ndone, 2);
	assert_false(done[1].r.complete);
	assert_int_equal(done[1].r.abort, ABORT_CLIENT);
	correlator__free(c);
}

/* Records dropped right before a close: the request says lost, not that the client left. */
static void test_close_after_drops(void **state)
{
	struct correlator *c = new_corr();
	struct tt_state_ev e = {
		.h = { .ts = 900, .type = TT_EV_STATE, .size = sizeof(e) },
		.conn_id = 24, .oldstate = 1, .newstate = TCP_CLOSE, .lost = 7,
	};
	char b[512];

	rec_conn(c, 24, 1);
	send_request(c, 24, 100, "drops");
	send_s(c, 24, 200, sse_head);
	chunk(b, sizeof(b), TOK("a"));
	send_s(c, 24, 300, b);
	assert_int_equal(correlator__record(c, &e, sizeof(e)), 0);
	assert_int_equal(ndone, 1);
	assert_true(done[0].r.lost);
	assert_int_equal(done[0].r.abort, ABORT_LOST);
	assert_int_equal(correlator__stats(c)->lost_records, 7);
	correlator__free(c);
}

/*
 * --stall-hooks lazy: a stream asks for the scheduler hooks a quarter threshold after its
 * last chunk, unless the kernel dropped records since (they may be its chunks, and the rest
 * of a run that lost one is held back): a ring that overflows must not keep the hooks on.
 */
static void test_arm_after_drops(void **state)
{
	struct corr_opts o = { .on_request = on_request, .stalls = true,
			       .stall_ns = 100000000ull };
	struct correlator *c = correlator__new(&o);
	const uint64_t ms = 1000000, quarter = 25 * ms;
	char b[256];

	ndone = 0;
	rec_conn(c, 40, 1);
	rec_conn(c, 41, 1);
	send_request(c, 40, 1 * ms, "armed");
	send_s(c, 40, 2 * ms, sse_head);
	assert_int_equal(correlator__arm_at(c, 3 * ms), UINT64_MAX);	/* no chunk yet */
	chunk(b, sizeof(b), TOK("a"));
	send_s(c, 40, 3 * ms, b);
	assert_int_equal(correlator__arm_at(c, 4 * ms), 3 * ms + quarter);
	/* a record of another connection says 5 records were dropped before it */
	rec_data_drops(c, 41, TT_DIR_SEND, 5 * ms, b, strlen(b), strlen(b), 0, 0, 5);
	assert_int_equal(correlator__arm_at(c, 6 * ms), UINT64_MAX);
	/* a chunk after the drop: its silence counts again */
	send_s(c, 40, 7 * ms, b);
	assert_int_equal(correlator__arm_at(c, 8 * ms), 7 * ms + quarter);
	correlator__free(c);
}

/*
 * Keep-alive, a's whole response dropped: the drop is told on b's request. b's response must
 * not go silently to a: by the id it echoes it answers b (a ends lost); without one the
 * pairing is in doubt, and what it touches says lost, b too when the connection closes.
 */
static void lost_whole_response(bool echo_id)
{
	struct correlator *c = new_corr();
	char req[1024], b[256];

	ndone = 0;
	rec_conn(c, 30, 1);
	send_request(c, 30, 100, "a");
	snprintf(req, sizeof(req),
		 "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Request-Id: b\r\n"
		 "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
		 strlen(req_body), req_body);
	rec_data_cap(c, 30, TT_DIR_RECV, 5000, req, strlen(req), strlen(req), TT_DF_LOST, 0);
	send_s(c, 30, 5100, echo_id ? "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
			    "x-request-id: b\r\ntransfer-encoding: chunked\r\n\r\n" : sse_head);
	chunk(b, sizeof(b), TOK("x"));
	send_s(c, 30, 5200, b);
	send_s(c, 30, 5300, "0\r\n\r\n");
	rec_state(c, 30, TCP_CLOSE_WAIT, 6000);
	rec_state(c, 30, TCP_CLOSE, 6100);
	assert_int_equal(ndone, 2);
	for (int i = 0; i < 2; i++) {
		struct tt_request *r = &done[i].r;

		if (!strcmp(r->request_id, "a")) {
			assert_true(r->lost);
		} else {
			assert_string_equal(r->request_id, "b");
			/* answered exactly by id, else in doubt: never wrong and unflagged */
			if (echo_id) {
				assert_false(r->lost);
				assert_int_equal(r->chunks, 1);
				assert_true(r->complete);
			} else {
				assert_true(r->lost);
			}
		}
	}
	correlator__free(c);
}

static void test_lost_whole_response(void **state)
{
	lost_whole_response(true);
	lost_whole_response(false);
}

/* A Unix socket is named by its path and peer; binary plumbing on one is ignored at once. */
static void test_unix_sockets(void **state)
{
	struct tt_conn_ev e = {
		.h = { .ts = 1, .tgid = 42, .tid = 42, .type = TT_EV_CONN, .size = sizeof(e) },
		.conn_id = 25, .family = 1, .flags = TT_CF_ACCEPTED | TT_CF_UNIX,
		.peer_pid = 777, .path = "/run/app.sock", .comm = "server",
	};
	struct correlator *c = new_corr();
	char b[512];

	assert_int_equal(correlator__record(c, &e, sizeof(e)), 0);
	send_request(c, 25, 100, "uds");
	send_s(c, 25, 200, sse_head);
	chunk(b, sizeof(b), TOK("a") DONE);
	send_s(c, 25, 300, b);
	send_s(c, 25, 400, "0\r\n\r\n");
	assert_int_equal(ndone, 1);
	assert_string_equal(done[0].r.conn, "unix:/run/app.sock-pid:777");
	/* ZMQ's greeting on another one */
	e.conn_id = 26;
	assert_int_equal(correlator__record(c, &e, sizeof(e)), 0);
	rec_data(c, 26, TT_DIR_RECV, 500, "\xff\0\0\0\0\0\0\0\x01\x7f", 10);
	assert_int_equal(ignored_id, 26);
	correlator__free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_basic),
		cmocka_unit_test(test_stream_every_split),
		cmocka_unit_test(test_keepalive),
		cmocka_unit_test(test_pipelined),
		cmocka_unit_test(test_client_abort),
		cmocka_unit_test(test_close_mid_stream_and_unanswered),
		cmocka_unit_test(test_lost_records),
		cmocka_unit_test(test_budget_skipped),
		cmocka_unit_test(test_client_role),
		cmocka_unit_test(test_truncated_capture),
		cmocka_unit_test(test_conn_ids_not_confused),
		cmocka_unit_test(test_malformed_records),
		cmocka_unit_test(test_garbage_then_http),
		cmocka_unit_test(test_markers_keyed),
		cmocka_unit_test(test_markers_keyed_by_stream_id),
		cmocka_unit_test(test_markers_unkeyed),
		cmocka_unit_test(test_queue_time),
		cmocka_unit_test(test_segments),
		cmocka_unit_test(test_segment_missing),
		cmocka_unit_test(test_end_of_stream_is_complete),
		cmocka_unit_test(test_close_after_drops),
		cmocka_unit_test(test_arm_after_drops),
		cmocka_unit_test(test_lost_whole_response),
		cmocka_unit_test(test_unix_sockets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
