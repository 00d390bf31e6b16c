// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * HTTP/1.1 parser: canned exchanges, each fed whole, split at every byte boundary and byte by
 * byte, must give the same callbacks; framing (Content-Length, chunked, close, no body),
 * keep-alive, pipelining, errors, resync, gaps, EOF.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "http.h"

/*
 * Every callback as a log entry ending in '|': H:<head>, B:<body bytes> (consecutive
 * on_body calls merged, since how the body is split depends on the feeds), G:<gap>, E, X:<why>.
 */
static char log_buf[1 << 17];

struct rec {
	char *log;		/* log_buf */
	size_t n;
	bool in_body;
	int heads, ends, errors;
	struct http_head last;
	const bool *answers;	/* answers_head() replies, in order; false past the end */
	int nanswers;
	int asked;
	uint64_t body;		/* body bytes seen, gaps included, for the current message */
	struct http_parser *p;	/* the parser calling back */
};

static void put(struct rec *r, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(r->log + r->n, sizeof(log_buf) - r->n, fmt, ap);
	va_end(ap);
	assert_true(k >= 0 && (size_t)k < sizeof(log_buf) - r->n);
	r->n += (size_t)k;
}

static void close_body(struct rec *r)
{
	if (r->in_body)
		put(r, "|");
	r->in_body = false;
}

static const char *framing_name(const struct http_head *h)
{
	static char buf[32];

	switch (h->framing) {
	case HTTP_BODY_NONE:
		return "none";
	case HTTP_BODY_LENGTH:
		snprintf(buf, sizeof(buf), "len=%llu", (unsigned long long)h->content_length);
		return buf;
	case HTTP_BODY_CHUNKED:
		return "chunked";
	case HTTP_BODY_CLOSE:
		return "close-delimited";
	}
	return "?";
}

static void on_head(void *ud, const struct http_head *h)
{
	struct rec *r = ud;

	close_body(r);
	/* strings are NUL-terminated inside their arrays */
	assert_true(strnlen(h->method, sizeof(h->method)) < sizeof(h->method));
	assert_true(strnlen(h->path, sizeof(h->path)) < sizeof(h->path));
	assert_true(strnlen(h->request_id, sizeof(h->request_id)) < sizeof(h->request_id));
	assert_true(strnlen(h->content_type, sizeof(h->content_type)) < sizeof(h->content_type));
	if (h->dir == HTTP_REQUEST)
		put(r, "H:%s %s 1.%d", h->method, h->path, h->version_minor);
	else
		put(r, "H:%d 1.%d", h->status, h->version_minor);
	if (h->request_id[0])
		put(r, " rid=%s", h->request_id);
	if (h->content_type[0])
		put(r, " ct=%s", h->content_type);
	put(r, " %s%s%s|", framing_name(h), h->keep_alive ? "" : " close",
	    h->expect_continue ? " expect" : "");
	r->heads++;
	r->last = *h;
	r->body = 0;
}

static void on_body(void *ud, const uint8_t *d, size_t len)
{
	struct rec *r = ud;

	assert_true(len > 0);
	if (!r->in_body)
		put(r, "B:");
	r->in_body = true;
	for (size_t i = 0; i < len; i++) {
		if (d[i] == '\r')
			put(r, "\\r");
		else if (d[i] == '\n')
			put(r, "\\n");
		else if (d[i] < ' ' || d[i] >= 0x7f)
			put(r, "\\x%02x", d[i]);
		else
			put(r, "%c", d[i]);
	}
	r->body += len;
}

static void on_body_gap(void *ud, uint64_t len)
{
	struct rec *r = ud;

	close_body(r);
	put(r, "G:%llu|", (unsigned long long)len);
	r->body += len;
}

static void on_end(void *ud)
{
	struct rec *r = ud;

	close_body(r);
	put(r, http_parser__ended_in_gap(r->p) ? "E+gap|" : "E|");
	r->ends++;
	/* what the head promised is what came */
	if (r->last.framing == HTTP_BODY_LENGTH)
		assert_int_equal(r->body, r->last.content_length);
	if (r->last.framing == HTTP_BODY_NONE)
		assert_int_equal(r->body, 0);
}

static bool answers_head(void *ud)
{
	struct rec *r = ud;
	int i = r->asked++;

	return i < r->nanswers && r->answers[i];
}

static void on_error(void *ud, const char *why)
{
	struct rec *r = ud;

	close_body(r);
	assert_non_null(why);
	put(r, "X:%s|", why);
	r->errors++;
}

static const struct http_cb cbs = {
	.on_head = on_head, .on_body = on_body, .on_body_gap = on_body_gap, .on_end = on_end,
	.answers_head = answers_head, .on_error = on_error,
};

static struct rec R;

static struct http_parser *new_parser(enum http_dir dir)
{
	struct http_parser *p;

	memset(&R, 0, sizeof(R));
	R.log = log_buf;
	log_buf[0] = '\0';
	p = http_parser__new(dir, &cbs, &R);
	assert_non_null(p);
	R.p = p;
	return p;
}

static void feed(struct http_parser *p, const char *s, size_t len)
{
	http_parser__feed(p, (const uint8_t *)s, len);
}

static void feed_str(struct http_parser *p, const char *s)
{
	feed(p, s, strlen(s));
}

static const char *flush(void)
{
	close_body(&R);
	return R.log;
}

/*
 * Feed stream whole, then in two feeds split at every position, then three feeds at every
 * pair of positions (short streams only), then byte by byte: each run must log want.
 */
static void check_splits_n(enum http_dir dir, const char *stream, size_t len, const char *want,
			   bool eof, const bool *answers, int nanswers)
{
	char *copy = malloc(len + 1);

	assert_non_null(copy);
	memcpy(copy, stream, len);
	for (size_t cut = 0; cut <= len + 1; cut++) {
		struct http_parser *p = new_parser(dir);

		R.answers = answers;
		R.nanswers = nanswers;
		if (cut <= len) {
			feed(p, copy, cut);
			feed(p, copy + cut, len - cut);
		} else {
			for (size_t i = 0; i < len; i++)
				feed(p, copy + i, 1);
		}
		if (eof)
			http_parser__eof(p);
		if (strcmp(flush(), want) != 0)
			fail_msg("split at %zu:\n got  %s\n want %s", cut, R.log, want);
		assert_false(http_parser__in_message(p));
		http_parser__free(p);
	}
	for (size_t a = 1; len <= 600 && a < len; a++) {
		for (size_t b = a + 1; b < len; b++) {
			struct http_parser *p = new_parser(dir);

			R.answers = answers;
			R.nanswers = nanswers;
			feed(p, copy, a);
			feed(p, copy + a, b - a);
			feed(p, copy + b, len - b);
			if (eof)
				http_parser__eof(p);
			if (strcmp(flush(), want) != 0)
				fail_msg("split at %zu,%zu:\n got  %s\n want %s", a, b, R.log,
					 want);
			http_parser__free(p);
		}
	}
	free(copy);
}

static void check_splits(enum http_dir dir, const char *stream, const char *want, bool eof)
{
	check_splits_n(dir, stream, strlen(stream), want, eof, NULL, 0);
}

static void test_requests_keepalive(void **state)
{
	(void)state;
	check_splits(HTTP_REQUEST,
		     "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost:8000\r\n"
		     "x-request-id: req-42\r\nContent-Type: application/json\r\n"
		     "Content-Length: 15\r\n\r\n{\"stream\":true}"
		     "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
		     "POST /api/generate HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
		     "X-REQUEST-ID: abc\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
		     /* a stray CRLF between messages is ignored (RFC 9112 2.2) */
		     "\r\nGET /x?q=1 HTTP/1.0\r\n\r\n",
		     "H:POST /v1/chat/completions 1.1 rid=req-42 ct=application/json len=15|"
		     "B:{\"stream\":true}|E|"
		     "H:GET /health 1.1 none|E|"
		     "H:POST /api/generate 1.1 rid=abc chunked|B:hello|E|"
		     "H:GET /x?q=1 1.0 none close|E|", false);
}

static void test_pipelined_one_feed(void **state)
{
	struct http_parser *p = new_parser(HTTP_REQUEST);

	(void)state;
	feed_str(p, "GET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"
		    "GET /c HTTP/1.1\r\n\r\n");
	assert_string_equal(flush(), "H:GET /a 1.1 none|E|H:POST /b 1.1 len=2|B:hi|E|"
				     "H:GET /c 1.1 none|E|");
	http_parser__free(p);
}

/* A streamed response as uvicorn writes it, then more responses on the same connection. */
static void test_responses_keepalive(void **state)
{
	(void)state;
	check_splits(HTTP_RESPONSE,
		     "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
		     "transfer-encoding: chunked\r\nx-request-id: r1\r\n\r\n"
		     "18;name=value;q=\"a;b\"\r\ndata: {\"content\":\"Hi\"}\n\n\r\n"
		     "1A\r\ndata: {\"content\":\"!!!!\"}\n\n\r\n"
		     "e \r\ndata: [DONE]\n\n\r\n"
		     "0\r\nX-Trailer: yes\r\nX-Other: 1\r\n\r\n"
		     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		     "Content-Length: 11\r\n\r\n"
		     "{\"ok\":true}"
		     "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"
		     "HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n"
		     "HTTP/1.1 100 Continue\r\n\r\n"
		     "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
		     "H:200 1.1 rid=r1 ct=text/event-stream; charset=utf-8 chunked|"
		     "B:data: {\"content\":\"Hi\"}\\n\\ndata: {\"content\":\"!!!!\"}\\n\\n"
		     "data: [DONE]\\n\\n|E|"
		     "H:200 1.1 ct=application/json len=11|B:{\"ok\":true}|E|"
		     "H:204 1.1 none|E|H:304 1.1 none|E|H:100 1.1 none|E|H:201 1.1 len=2|B:ok|E|",
		     false);
}

static void test_chunked_last_chunk_alone(void **state)
{
	struct http_parser *p = new_parser(HTTP_RESPONSE);

	(void)state;
	/* Node writes each piece apart; the terminating chunk often is its own send */
	feed_str(p, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
	feed_str(p, "5\r\n");
	feed_str(p, "hello");
	feed_str(p, "\r\n");
	assert_true(http_parser__in_message(p));
	feed_str(p, "0\r\n\r\n");
	assert_false(http_parser__in_message(p));
	assert_string_equal(flush(), "H:200 1.1 chunked|B:hello|E|");
	http_parser__free(p);
}

static void test_chunked_and_length(void **state)
{
	(void)state;
	/* Transfer-Encoding wins over Content-Length; a bare LF after chunk data is tolerated */
	check_splits(HTTP_RESPONSE,
		     "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: gzip, chunked\r\n"
		     "\r\n3\r\nabc\n0\r\n\r\n",
		     "H:200 1.1 chunked|B:abc|E|", false);
	/* chunked not last: for a response, the body runs to the close */
	check_splits(HTTP_RESPONSE,
		     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nxyz",
		     "H:200 1.1 close-delimited close|B:xyz|E|", true);
	/* "5, 5" is one length */
	check_splits(HTTP_REQUEST, "PUT /x HTTP/1.1\r\nContent-Length: 2, 2\r\n\r\nab",
		     "H:PUT /x 1.1 len=2|B:ab|E|", false);
}

static void test_close_delimited(void **state)
{
	struct http_parser *p;

	(void)state;
	check_splits(HTTP_RESPONSE,
		     "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nhello world",
		     "H:200 1.0 ct=text/plain close-delimited close|B:hello world|E|", true);
	/* without the EOF the message is still going */
	p = new_parser(HTTP_RESPONSE);
	feed_str(p, "HTTP/1.1 200 OK\r\n\r\ndata");
	assert_true(http_parser__in_message(p));
	http_parser__gap(p, 100);
	http_parser__eof(p);
	assert_false(http_parser__in_message(p));
	assert_string_equal(flush(), "H:200 1.1 close-delimited close|B:data|G:100|E|");
	http_parser__free(p);
}

static void test_head_response(void **state)
{
	static const bool answers[] = { true, false };
	const char *s = "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"
			"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";

	(void)state;
	/* the first response answers HEAD: its Content-Length promises nothing on the wire */
	check_splits_n(HTTP_RESPONSE, s, strlen(s), "H:200 1.1 none|E|H:200 1.1 len=3|B:abc|E|",
		       false, answers, 2);
	assert_int_equal(R.asked, 2);
}

static void test_answers_head_asked_per_final_response(void **state)
{
	struct http_parser *p = new_parser(HTTP_RESPONSE);

	(void)state;
	/* once per final response, never for an interim one */
	feed_str(p, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"
		    "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
	assert_int_equal(R.asked, 2);
	http_parser__free(p);
}

static void test_keepalive_rules(void **state)
{
	(void)state;
	check_splits(HTTP_REQUEST,
		     "GET /a HTTP/1.0\r\n\r\n"
		     "GET /b HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
		     "GET /c HTTP/1.0\r\nConnection: Keep-Alive, close\r\n\r\n"
		     "GET /d HTTP/1.1\r\n\r\n"
		     "GET /e HTTP/1.1\r\nConnection: Upgrade, CLOSE\r\n\r\n"
		     "GET /f HTTP/1.1\r\nconnection:close\r\n\r\n",
		     "H:GET /a 1.0 none close|E|H:GET /b 1.0 none|E|H:GET /c 1.0 none close|E|"
		     "H:GET /d 1.1 none|E|H:GET /e 1.1 none close|E|H:GET /f 1.1 none close|E|",
		     false);
	check_splits(HTTP_RESPONSE,
		     "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"
		     "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
		     "H:200 1.0 len=0|E|H:200 1.1 len=0 close|E|", false);
}

static void test_request_id_any_case(void **state)
{
	struct http_parser *p = new_parser(HTTP_REQUEST);

	(void)state;
	feed_str(p, "GET /1 HTTP/1.1\r\nX-Request-Id: a\r\n\r\n"
		    "GET /2 HTTP/1.1\r\nx-request-id:b\r\n\r\n"
		    "GET /3 HTTP/1.1\r\nX-REQUEST-ID: \t c d \t\r\n\r\n"
		    "GET /4 HTTP/1.1\r\nX-Request-Idx: no\r\nX-Requestid: no\r\n\r\n");
	assert_string_equal(flush(), "H:GET /1 1.1 rid=a none|E|H:GET /2 1.1 rid=b none|E|"
				     "H:GET /3 1.1 rid=c d none|E|H:GET /4 1.1 none|E|");
	http_parser__free(p);
}

/* the first traceparent of a request is kept as sent, for its span's parent */
static void test_traceparent(void **state)
{
	struct http_parser *p = new_parser(HTTP_REQUEST);
	const char *tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

	(void)state;
	feed_str(p, "POST /v1/chat/completions HTTP/1.1\r\nTraceparent: "
		    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n"
		    "traceparent: 00-11111111111111111111111111111111-2222222222222222-00\r\n"
		    "Content-Length: 0\r\n\r\n");
	assert_string_equal(R.last.traceparent, tp);
	feed_str(p, "GET /2 HTTP/1.1\r\ntraceparentx: no\r\n\r\n");
	assert_string_equal(R.last.traceparent, "");
	/* cut, one past a version-00 value: the OTLP side sees it is not one */
	feed_str(p, "GET /3 HTTP/1.1\r\ntraceparent: 00-0af7651916cd43dd8448eb211c80319c-"
		    "b7ad6b7169203331-01-and-more-than-fits\r\n\r\n");
	assert_int_equal(strlen(R.last.traceparent), HTTP_TRACEPARENT_MAX - 1);
	http_parser__free(p);
}

static void test_expect_continue(void **state)
{
	struct http_parser *req = new_parser(HTTP_REQUEST);

	(void)state;
	/* the body comes only after the server's 100 Continue, in a later receive */
	feed_str(req, "POST /x HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n");
	assert_true(R.last.expect_continue);
	assert_true(http_parser__in_message(req));
	feed_str(req, "abc");
	assert_string_equal(flush(), "H:POST /x 1.1 len=3 expect|B:abc|E|");
	http_parser__free(req);
}

static void test_long_path_and_method(void **state)
{
	char buf[1024];
	struct http_parser *p = new_parser(HTTP_REQUEST);

	(void)state;
	snprintf(buf, sizeof(buf), "GET /%0400d HTTP/1.1\r\n\r\n", 5);
	feed_str(p, buf);
	assert_int_equal(R.heads, 1);
	assert_true(R.last.path_trunc);
	assert_int_equal(strlen(R.last.path), HTTP_PATH_MAX - 1);
	http_parser__free(p);

	/* a method longer than any real one is not a request line */
	p = new_parser(HTTP_REQUEST);
	feed_str(p, "ABCDEFGHIJKLMNOPQ / HTTP/1.1\r\n\r\n");
	assert_string_equal(flush(), "X:bad request line|");
	http_parser__free(p);
	p = new_parser(HTTP_REQUEST);
	feed_str(p, "PROPFIND /x HTTP/1.1\r\n\r\n");
	assert_string_equal(flush(), "H:PROPFIND /x 1.1 none|E|");
	http_parser__free(p);
}

static void expect_log(enum http_dir dir, const char *msg, const char *want)
{
	struct http_parser *p = new_parser(dir);

	feed_str(p, msg);
	if (strcmp(flush(), want) != 0)
		fail_msg("%s\n got  %s\n want %s", msg, R.log, want);
	assert_false(http_parser__in_message(p));
	http_parser__free(p);
}

static void expect_error(enum http_dir dir, const char *msg, const char *why)
{
	char want[128];

	snprintf(want, sizeof(want), "X:%s|", why);
	expect_log(dir, msg, want);
}

static void test_bad_heads(void **state)
{
	(void)state;
	expect_error(HTTP_REQUEST, "GET / HTTP/1.1\r\nX-A: 1\r\n  folded\r\n\r\n",
		     "header folding");
	expect_error(HTTP_REQUEST, "GET / HTTP/1.1\r\nNoColon\r\n\r\n", "bad header line");
	expect_error(HTTP_REQUEST, "GET / HTTP/1.1\r\nHost : x\r\n\r\n", "bad header line");
	expect_error(HTTP_REQUEST, "GET / HTTP/1.1\r\n: x\r\n\r\n", "bad header line");
	expect_error(HTTP_REQUEST, "get / HTTP/1.1\r\n\r\n", "bad request line");
	expect_error(HTTP_REQUEST, "GET /  HTTP/1.1\r\n\r\n", "bad request line");
	expect_error(HTTP_REQUEST, "GET / HTTP/2.0\r\n\r\n", "bad request line");
	expect_error(HTTP_REQUEST, "GET / HTTP/1.1 x\r\n\r\n", "bad request line");
	expect_error(HTTP_REQUEST, "GET / HTTP/1.1\rX\r\n\r\n", "bad request line");
	expect_error(HTTP_REQUEST, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "bad request line");
	expect_error(HTTP_RESPONSE, "HTTP/1.1 20 OK\r\n\r\n", "bad status line");
	expect_error(HTTP_RESPONSE, "HTTP/1.1 abc\r\n\r\n", "bad status line");
	expect_error(HTTP_RESPONSE, "HTTP/2 200\r\n\r\n", "bad status line");
	expect_error(HTTP_RESPONSE, "data: {\"content\":\"x\"}\n\n", "bad status line");
	expect_error(HTTP_REQUEST, "POST / HTTP/1.1\r\nContent-Length: 5, 6\r\n\r\n",
		     "bad content-length");
	expect_error(HTTP_REQUEST, "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
		     "bad content-length");
	expect_error(HTTP_REQUEST, "POST / HTTP/1.1\r\nContent-Length:\r\n\r\n",
		     "bad content-length");
	expect_error(HTTP_REQUEST,
		     "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		     "bad content-length");
	expect_error(HTTP_REQUEST,
		     "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
		     "bad content-length");
	/* a request body of unknown length cannot be framed */
	expect_error(HTTP_REQUEST, "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
		     "bad transfer-encoding");
}

static void test_bad_chunks(void **state)
{
#define CHUNKED_HEAD "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	(void)state;
	expect_log(HTTP_RESPONSE, CHUNKED_HEAD "zz\r\n", "H:200 1.1 chunked|X:bad chunk size|");
	expect_log(HTTP_RESPONSE, CHUNKED_HEAD "\r\n", "H:200 1.1 chunked|X:bad chunk size|");
	expect_log(HTTP_RESPONSE, CHUNKED_HEAD "5 x\r\n", "H:200 1.1 chunked|X:bad chunk size|");
	expect_log(HTTP_RESPONSE, CHUNKED_HEAD "5\rx", "H:200 1.1 chunked|X:bad chunk size|");
	/* a size that does not fit in 64 bits */
	expect_log(HTTP_RESPONSE, CHUNKED_HEAD "1FFFFFFFFFFFFFFFF\r\n",
		   "H:200 1.1 chunked|X:bad chunk size|");
	expect_log(HTTP_RESPONSE, CHUNKED_HEAD "3\r\nabcX",
		   "H:200 1.1 chunked|B:abc|X:bad chunk end|");

	/* extensions and trailers are skipped, not stored, but not without end either */
	char *big = malloc(2 * HTTP_HEAD_MAX);
	size_t n;

	assert_non_null(big);
	n = (size_t)snprintf(big, 64, CHUNKED_HEAD "5;");
	memset(big + n, 'e', 8000);
	big[n + 8000] = '\0';
	expect_log(HTTP_RESPONSE, big, "H:200 1.1 chunked|X:chunk-size line too long|");
	n = (size_t)snprintf(big, 64, CHUNKED_HEAD "0\r\nX-T: ");
	memset(big + n, 't', HTTP_HEAD_MAX);
	big[n + HTTP_HEAD_MAX] = '\0';
	expect_log(HTTP_RESPONSE, big, "H:200 1.1 chunked|X:trailers too long|");
	free(big);
#undef CHUNKED_HEAD
}

/* A request head of exactly len bytes: one big header fills it. */
static char *make_head(size_t len)
{
	static const char start[] = "GET / HTTP/1.1\r\nX-Big: ", end[] = "\r\n\r\n";
	char *h = malloc(len + 1);

	assert_non_null(h);
	assert_true(len > sizeof(start) + sizeof(end));
	memcpy(h, start, sizeof(start) - 1);
	memset(h + sizeof(start) - 1, 'a', len - (sizeof(start) - 1) - (sizeof(end) - 1));
	memcpy(h + len - (sizeof(end) - 1), end, sizeof(end) - 1);
	h[len] = '\0';
	return h;
}

static void test_head_too_long(void **state)
{
	char *fits = make_head(HTTP_HEAD_MAX), *over = make_head(HTTP_HEAD_MAX + 1);
	struct http_parser *p;

	(void)state;
	/* in one feed, then the next feed that starts a message is parsed */
	p = new_parser(HTTP_REQUEST);
	feed_str(p, over);
	assert_string_equal(flush(), "X:head too long|");
	feed_str(p, "GET /ok HTTP/1.1\r\n\r\n");
	assert_string_equal(flush(), "X:head too long|H:GET /ok 1.1 none|E|");
	http_parser__free(p);

	/* in many feeds, one error only */
	p = new_parser(HTTP_REQUEST);
	for (size_t i = 0; i < HTTP_HEAD_MAX + 1; i += 1000)
		feed(p, over + i, HTTP_HEAD_MAX + 1 - i < 1000 ? HTTP_HEAD_MAX + 1 - i : 1000);
	assert_string_equal(flush(), "X:head too long|");
	http_parser__free(p);

	/* exactly HTTP_HEAD_MAX is fine, whole or split anywhere */
	for (size_t split = 0; split <= HTTP_HEAD_MAX; split += 997) {
		p = new_parser(HTTP_REQUEST);
		feed(p, fits, split);
		feed(p, fits + split, HTTP_HEAD_MAX - split);
		assert_int_equal(R.heads, 1);
		assert_int_equal(R.ends, 1);
		assert_int_equal(R.errors, 0);
		http_parser__free(p);
	}
	free(fits);
	free(over);
}

static void test_resync(void **state)
{
	struct http_parser *p = new_parser(HTTP_REQUEST);

	(void)state;
	/* joined mid-stream: garbage is one loss of sync, reported once */
	feed_str(p, "{\"messages\":[{\"role\":\"user\"}]}");
	feed_str(p, "more garbage\r\n\r\n");
	assert_string_equal(flush(), "X:bad request line|");
	assert_false(http_parser__in_message(p));
	/* resync happens only at the start of a feed: a message in mid-feed stays lost */
	feed_str(p, "xx GET /lost HTTP/1.1\r\n\r\n");
	/* a false start at a feed start fails quietly: the loss was told already */
	feed_str(p, "GET / HTTP/1.1\r\nbad line\r\n\r\n");
	assert_int_equal(R.errors, 1);
	feed_str(p, "GET /found HTTP/1.1\r\n\r\nGET /next HTTP/1.1\r\n\r\n");
	assert_string_equal(flush(), "X:bad request line|H:GET /found 1.1 none|E|"
				     "H:GET /next 1.1 none|E|");
	/* back in sync: a new loss is reported again */
	feed_str(p, "junk");
	assert_int_equal(R.errors, 2);
	http_parser__free(p);

	/* a response head split over feeds is recovered as well */
	p = new_parser(HTTP_RESPONSE);
	feed_str(p, "4\r\ndata\r\n");
	feed_str(p, "HTTP/1.1 2");
	feed_str(p, "00 OK\r\nContent-Length: 0\r\n\r\n");
	assert_string_equal(flush(), "X:bad status line|H:200 1.1 len=0|E|");
	http_parser__free(p);
}

static void test_gap_in_chunk_data(void **state)
{
	struct http_parser *p = new_parser(HTTP_RESPONSE);

	(void)state;
	/* a chunk longer than the capture: the framing continues by length through the gap */
	feed_str(p, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123");
	http_parser__gap(p, 12 + 2);	/* the rest of the data, and its CRLF */
	assert_true(http_parser__in_message(p));
	feed_str(p, "5\r\nhello\r\n");
	/* a gap inside the data only */
	feed_str(p, "8\r\nab");
	http_parser__gap(p, 3);
	feed_str(p, "fgh\r\n");
	/* a gap that ends between the CR and the LF */
	feed_str(p, "2\r\nxy");
	http_parser__gap(p, 1);
	feed_str(p, "\n0\r\n\r\n");
	assert_string_equal(flush(), "H:200 1.1 chunked|B:0123|G:12|B:helloab|G:3|B:fghxy|E|");
	assert_int_equal(R.errors, 0);
	http_parser__free(p);
}

static struct http_parser *chunked_response(const char *first)
{
	struct http_parser *p = new_parser(HTTP_RESPONSE);

	feed_str(p, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
	feed_str(p, first);
	return p;
}

static void test_gap_in_chunk_size_line(void **state)
{
	struct http_parser *p;

	(void)state;
	/*
	 * uvicorn's writev of queued chunks, cut by the capture: the gap runs past the chunk whose
	 * size was known into chunks whose sizes it hid. The rest of the gap is unknown body; the
	 * next send starts at a chunk boundary and the body resumes there.
	 */
	p = chunked_response("10\r\n0123");
	http_parser__gap(p, 30);	/* 12 data, CRLF, then 16 unknown */
	assert_true(http_parser__in_message(p));
	feed_str(p, "5\r\nhello\r\n");
	feed_str(p, "3;name=\"v\"\r\nabc\r\n");	/* an extension at the resync point is fine */
	feed_str(p, "0\r\n\r\n");
	assert_string_equal(flush(), "H:200 1.1 chunked|B:0123|G:12|G:16|B:helloabc|E|");
	assert_int_equal(R.errors, 0);
	http_parser__free(p);

	/* the last chunk itself at the resync point */
	p = chunked_response("4\r\nab");
	http_parser__gap(p, 20);
	feed_str(p, "0\r\n\r\n");
	assert_string_equal(flush(), "H:200 1.1 chunked|B:ab|G:2|G:16|E|");
	http_parser__free(p);

	/* a gap inside the size line itself, and a bare LF after the size */
	p = chunked_response("1");
	http_parser__gap(p, 1);
	feed_str(p, "3\nabc\r\n0\r\n\r\n");
	assert_string_equal(flush(), "H:200 1.1 chunked|G:1|B:abc|E|");
	http_parser__free(p);

	/* a gap right at a chunk boundary (the size line not begun), then another gap */
	p = chunked_response("2\r\nab\r\n");
	http_parser__gap(p, 7);
	http_parser__gap(p, 5);
	feed_str(p, "1\r\nz\r\n0\r\n\r\n");
	assert_string_equal(flush(), "H:200 1.1 chunked|B:ab|G:7|G:5|B:z|E|");
	http_parser__free(p);

	/* a size line the feed cuts short counts as far as it goes */
	p = chunked_response("2\r\nab");
	http_parser__gap(p, 10);
	feed_str(p, "1");
	feed_str(p, "a\r\n");
	feed_str(p, "abcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n");
	assert_string_equal(flush(), "H:200 1.1 chunked|B:ab|G:8|B:abcdefghijklmnopqrstuvwxyz|E|");
	http_parser__free(p);

	/* the next response starts instead: this one ended inside the gap, and says so */
	p = chunked_response("10\r\n0123");
	http_parser__gap(p, 40);
	assert_false(http_parser__ended_in_gap(p));
	feed_str(p, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
	assert_string_equal(flush(), "H:200 1.1 chunked|B:0123|G:12|G:26|E+gap|"
				     "H:200 1.1 len=2|B:ok|E|");
	assert_int_equal(R.errors, 0);
	assert_false(http_parser__ended_in_gap(p));
	http_parser__free(p);

	/* neither (a send that continues a chunk): sync is lost, reported once, found again */
	p = chunked_response("10\r\n0123");
	http_parser__gap(p, 30);
	feed_str(p, "ta: {\"choices\":[]}\n\n\r\n");
	feed_str(p, "1g\r\nx\r\n");	/* hex, then not: no chunk-size line either */
	feed_str(p, "HTTP/1.1 204 No Content\r\n\r\n");
	assert_string_equal(flush(), "H:200 1.1 chunked|B:0123|G:12|G:16|"
				     "X:chunk framing lost in a gap|H:204 1.1 none|E|");
	assert_int_equal(R.errors, 1);
	http_parser__free(p);

	/* the connection closes while waiting: the message is abandoned */
	p = chunked_response("4\r\nab");
	http_parser__gap(p, 20);
	http_parser__eof(p);
	assert_string_equal(flush(), "H:200 1.1 chunked|B:ab|G:2|G:16|"
				     "X:connection closed inside a message|");
	http_parser__free(p);

	/*
	 * A chunked request body resyncs the same way; but a request whose end the gap hid
	 * cannot be timed: the next request line loses it, and is read in full.
	 */
	p = new_parser(HTTP_REQUEST);
	feed_str(p, "POST /upload HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab");
	http_parser__gap(p, 9);
	feed_str(p, "2\r\nxy\r\n0\r\n\r\n");
	feed_str(p, "POST /upload HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab");
	http_parser__gap(p, 9);
	feed_str(p, "GET /next HTTP/1.1\r\n\r\n");
	assert_string_equal(flush(), "H:POST /upload 1.1 chunked|B:ab|G:1|G:6|B:xy|E|"
				     "H:POST /upload 1.1 chunked|B:ab|G:1|G:6|"
				     "X:request end lost in a gap|H:GET /next 1.1 none|E|");
	/* a bad head after that is not a second loss to report */
	feed_str(p, "POST /upload HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab");
	http_parser__gap(p, 9);
	feed_str(p, "GET /x HTTP/1.1\r\nbad\r\n\r\n");
	assert_int_equal(R.errors, 2);
	http_parser__free(p);

	/* in the trailers sync is lost at once: no chunk can follow */
	p = chunked_response("0\r\nX-T: 1");
	http_parser__gap(p, 5);
	assert_string_equal(flush(), "H:200 1.1 chunked|X:gap in trailers|");
	http_parser__free(p);
}

static void test_gap_in_head(void **state)
{
	struct http_parser *p = new_parser(HTTP_RESPONSE);

	(void)state;
	feed_str(p, "HTTP/1.1 200 OK\r\nContent-Ty");
	http_parser__gap(p, 30);
	feed_str(p, "pe: x\r\n\r\n");	/* the head's tail: dropped quietly */
	feed_str(p, "HTTP/1.1 404 Not Found\r\nContent-Length: 1\r\n\r\nx");
	assert_string_equal(flush(), "X:gap in a head|H:404 1.1 len=1|B:x|E|");
	http_parser__free(p);

	/* between messages: the next head was not captured */
	p = new_parser(HTTP_REQUEST);
	feed_str(p, "GET / HTTP/1.1\r\n\r\n");
	http_parser__gap(p, 10);
	http_parser__gap(p, 10);
	assert_string_equal(flush(), "H:GET / 1.1 none|E|X:gap at a message start|");
	http_parser__free(p);
}

static void test_gap_in_length_body(void **state)
{
	struct http_parser *p = new_parser(HTTP_REQUEST);
	char body[100];

	(void)state;
	/* a prompt longer than the capture */
	memset(body, 'p', sizeof(body));
	feed_str(p, "POST /v1/completions HTTP/1.1\r\nContent-Length: 10000\r\n\r\n");
	feed(p, body, sizeof(body));
	http_parser__gap(p, 9900);
	assert_false(http_parser__in_message(p));
	feed_str(p, "GET / HTTP/1.1\r\n\r\n");
	assert_int_equal(R.ends, 2);
	assert_int_equal(R.errors, 0);
	http_parser__free(p);

	/* a gap that ends exactly with the body */
	p = new_parser(HTTP_REQUEST);
	feed_str(p, "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc");
	http_parser__gap(p, 7);
	feed_str(p, "GET / HTTP/1.1\r\n\r\n");
	assert_string_equal(flush(), "H:POST / 1.1 len=10|B:abc|G:7|E|H:GET / 1.1 none|E|");
	http_parser__free(p);

	/* a gap past the end of the body swallowed the next head */
	p = new_parser(HTTP_REQUEST);
	feed_str(p, "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc");
	http_parser__gap(p, 50);
	assert_string_equal(flush(), "H:POST / 1.1 len=10|B:abc|G:7|E|X:gap at a message start|");
	http_parser__free(p);
}

static void test_eof(void **state)
{
	struct http_parser *p = new_parser(HTTP_RESPONSE);

	(void)state;
	/* the client went away mid-stream: the message is abandoned, and said so */
	feed_str(p, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel");
	http_parser__eof(p);
	assert_string_equal(flush(),
			    "H:200 1.1 chunked|B:hel|X:connection closed inside a message|");
	assert_false(http_parser__in_message(p));
	http_parser__free(p);

	p = new_parser(HTTP_RESPONSE);
	http_parser__eof(p);
	feed_str(p, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
	http_parser__eof(p);
	assert_string_equal(flush(), "H:200 1.1 len=0|E|");
	http_parser__free(p);
}

static void test_switching_protocols(void **state)
{
	struct http_parser *p = new_parser(HTTP_RESPONSE);

	(void)state;
	feed_str(p, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x05hello");
	/* websocket payload, whatever it looks like */
	feed_str(p, "HTTP/1.1 200 OK\r\n\r\n");
	http_parser__gap(p, 1000);
	assert_string_equal(flush(), "H:101 1.1 none|E|");
	assert_false(http_parser__in_message(p));
	http_parser__free(p);
}

/* h2c upgrade: the request asks, the 101 grants, the bytes after it go to on_tunnel. */
static uint8_t tunnel[256];
static size_t ntunnel;
static struct http_head up_head;

static void up_on_head(void *ud, const struct http_head *h)
{
	(void)ud;
	up_head = *h;
}

static void up_on_tunnel(void *ud, const uint8_t *d, size_t len)
{
	(void)ud;
	assert_true(len > 0 && ntunnel + len <= sizeof(tunnel));
	memcpy(tunnel + ntunnel, d, len);
	ntunnel += len;
}

static void test_h2c_upgrade(void **state)
{
	static const struct http_cb up_cbs = { .on_head = up_on_head, .on_tunnel = up_on_tunnel };
	struct http_parser *req = http_parser__new(HTTP_REQUEST, &up_cbs, NULL);
	struct http_parser *resp = http_parser__new(HTTP_RESPONSE, &up_cbs, NULL);
	static const char settings[] = "\0\0\0\x04\0\0\0\0\0";	/* an empty SETTINGS frame */

	(void)state;
	http_parser__feed(req, (const uint8_t *)"GET / HTTP/1.1\r\nHost: x\r\n"
			  "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
			  "HTTP2-Settings: AAMAAABkAAQAEAAAAAIAAAAA\r\n\r\n", 120);
	assert_true(up_head.upgrade_h2c);
	assert_string_equal(up_head.http2_settings, "AAMAAABkAAQAEAAAAAIAAAAA");
	http_parser__feed(resp, (const uint8_t *)"HTTP/1.1 101 Switching Protocols\r\n"
			  "Connection: Upgrade\r\nUpgrade: h2c\r\n\r\n", 71);
	assert_true(up_head.upgrade_h2c);
	assert_int_equal(up_head.status, 101);
	assert_int_equal(ntunnel, 0);
	http_parser__feed(resp, (const uint8_t *)settings, 9);
	http_parser__feed(resp, (const uint8_t *)"HTTP/1.1 200 OK\r\n", 17);
	assert_int_equal(ntunnel, 9 + 17);
	assert_memory_equal(tunnel, settings, 9);
	/* a websocket upgrade is no h2c */
	http_parser__free(resp);
	resp = http_parser__new(HTTP_RESPONSE, &up_cbs, NULL);
	http_parser__feed(resp, (const uint8_t *)"HTTP/1.1 101 OK\r\n"
			  "Upgrade: websocket\r\n\r\n", 39);
	assert_false(up_head.upgrade_h2c);
	http_parser__free(req);
	http_parser__free(resp);
}

static void test_in_message(void **state)
{
	struct http_parser *p = new_parser(HTTP_REQUEST);

	(void)state;
	assert_false(http_parser__in_message(p));
	feed_str(p, "\r\n");
	assert_false(http_parser__in_message(p));
	feed_str(p, "P");
	assert_true(http_parser__in_message(p));
	feed_str(p, "OST / HTTP/1.1\r\nContent-Length: 1\r\n\r\n");
	assert_true(http_parser__in_message(p));
	feed_str(p, "x");
	assert_false(http_parser__in_message(p));
	assert_false(http_parser__in_message(NULL));
	http_parser__free(p);
	assert_null(http_parser__new((enum http_dir)7, &cbs, NULL));
}

static void test_no_callbacks(void **state)
{
	struct http_parser *p = http_parser__new(HTTP_RESPONSE, NULL, NULL);

	(void)state;
	/* every callback is optional */
	assert_non_null(p);
	feed_str(p, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc");
	http_parser__gap(p, 100);
	feed_str(p, "garbage");
	http_parser__eof(p);
	http_parser__free(p);
	http_parser__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_requests_keepalive),
		cmocka_unit_test(test_pipelined_one_feed),
		cmocka_unit_test(test_responses_keepalive),
		cmocka_unit_test(test_chunked_last_chunk_alone),
		cmocka_unit_test(test_chunked_and_length),
		cmocka_unit_test(test_close_delimited),
		cmocka_unit_test(test_head_response),
		cmocka_unit_test(test_answers_head_asked_per_final_response),
		cmocka_unit_test(test_keepalive_rules),
		cmocka_unit_test(test_request_id_any_case),
		cmocka_unit_test(test_traceparent),
		cmocka_unit_test(test_expect_continue),
		cmocka_unit_test(test_long_path_and_method),
		cmocka_unit_test(test_bad_heads),
		cmocka_unit_test(test_bad_chunks),
		cmocka_unit_test(test_head_too_long),
		cmocka_unit_test(test_resync),
		cmocka_unit_test(test_gap_in_chunk_data),
		cmocka_unit_test(test_gap_in_chunk_size_line),
		cmocka_unit_test(test_gap_in_head),
		cmocka_unit_test(test_gap_in_length_body),
		cmocka_unit_test(test_eof),
		cmocka_unit_test(test_switching_protocols),
		cmocka_unit_test(test_h2c_upgrade),
		cmocka_unit_test(test_in_message),
		cmocka_unit_test(test_no_callbacks),
	};

	return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
