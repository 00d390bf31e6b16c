// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * SSE parser: the same events whatever the split (every byte boundary, byte by byte), line
 * ends, comments, field rules, bounded data, end of body, gaps.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sse.h"

/* Every event as "[name]data" ("!" after the name when truncated), joined with "|". */
struct rec {
	char log[16384];
	size_t n;
	int events;
	int comments;
	uint64_t last_total;
	size_t last_len;
	bool last_trunc;
};

static void put(struct rec *r, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(r->log + r->n, sizeof(r->log) - r->n, fmt, ap);
	va_end(ap);
	assert_true(k >= 0 && (size_t)k < sizeof(r->log) - r->n);
	r->n += (size_t)k;
}

static void on_event(void *ud, const struct sse_event *ev)
{
	struct rec *r = ud;

	/* what a consumer relies on: NUL-terminated, lengths consistent */
	assert_non_null(ev->event);
	assert_non_null(ev->data);
	assert_int_equal(ev->data[ev->data_len], '\0');
	assert_true(ev->data_len <= SSE_DATA_MAX);
	assert_true(ev->data_total >= ev->data_len);
	assert_true(strlen(ev->event) < SSE_EVENT_MAX);
	r->events++;
	r->last_total = ev->data_total;
	r->last_len = ev->data_len;
	r->last_trunc = ev->truncated;
	if (ev->data_len < 200)
		put(r, "[%s]%s%s|", ev->event, ev->truncated ? "!" : "", ev->data);
	else
		put(r, "[%s]%s<%zu>|", ev->event, ev->truncated ? "!" : "", ev->data_len);
}

static void on_comment(void *ud)
{
	((struct rec *)ud)->comments++;
}

static const struct sse_cb cbs = { .on_event = on_event, .on_comment = on_comment };

static struct sse_parser *new_parser(struct rec *r)
{
	struct sse_parser *p;

	memset(r, 0, sizeof(*r));
	p = sse_parser__new(&cbs, r);
	assert_non_null(p);
	return p;
}

static void feed(struct sse_parser *p, const char *s, size_t len)
{
	sse_parser__feed(p, (const uint8_t *)s, len);
}

static void feed_str(struct sse_parser *p, const char *s)
{
	feed(p, s, strlen(s));
}

/* One feed, two feeds at every position, and byte by byte: the log must not change. */
static void check_splits(const char *stream, const char *want, bool end)
{
	size_t len = strlen(stream);
	struct rec r;
	struct sse_parser *p;
	char *copy = malloc(len + 1);

	assert_non_null(copy);
	for (size_t cut = 0; cut <= len + 1; cut++) {
		p = new_parser(&r);
		if (cut <= len) {
			/* separate buffers: nothing may be read past either piece */
			memcpy(copy, stream, len);
			feed(p, copy, cut);
			feed(p, copy + cut, len - cut);
		} else {
			for (size_t i = 0; i < len; i++)
				feed(p, stream + i, 1);
		}
		if (end)
			sse_parser__end(p);
		if (strcmp(r.log, want) != 0)
			fail_msg("split at %zu: got \"%s\", want \"%s\"", cut, r.log, want);
		sse_parser__free(p);
	}
	free(copy);
}

static void test_openai_stream_every_split(void **state)
{
	(void)state;
	check_splits("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n"
		     "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n"
		     "data: [DONE]\n\n",
		     "[]{\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}|"
		     "[]{\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}|[][DONE]|", false);
}

static void test_line_ends(void **state)
{
	(void)state;
	/* LF, CRLF and CR, mixed in one stream; a CRLF split across feeds is one line end */
	check_splits("data: a\r\n\r\ndata: b\r\rdata: c\n\ndata: d\r\n\n", "[]a|[]b|[]c|[]d|",
		     false);
	check_splits("data: x\r\ndata: y\r\n\r\n", "[]x\ny|", false);
	/* CR CR LF: the LF belongs to the second CR; one blank line, not two */
	check_splits("data: a\r\r\ndata: b\n\n", "[]a|[]b|", false);
}

/* Line ends are searched a window (256 bytes) at a time: lines across windows, either end */
static void test_long_lines(void **state)
{
	char stream[3000], line[700];

	(void)state;
	for (size_t i = 0; i < sizeof(line) - 1; i++)
		line[i] = (char)('a' + i % 26);
	line[sizeof(line) - 1] = '\0';
	/* 690 data bytes ended by CR, then CRLF, then LF; a CR at the window's edge */
	snprintf(stream, sizeof(stream), "data: %s\r\rdata: %s\r\n\r\ndata: %.255s\r\n\n"
		 "data: %s\n\n", line, line, line, line);
	/* the log gives data of 200 bytes and more by its length: the line ends found exactly */
	check_splits(stream, "[]<699>|[]<699>|[]<255>|[]<699>|", false);
}

static void test_fields(void **state)
{
	(void)state;
	/* one space after the colon is dropped, only one */
	check_splits("data:a\n\ndata:  b\n\ndata\n\ndata:\n\n", "[]a|[] b|[]|[]|", false);
	/* multi-line data is joined with '\n' */
	check_splits("data: one\ndata: two\ndata:\ndata: four\n\n", "[]one\ntwo\n\nfour|", false);
	/* event names, and they do not carry over to the next event */
	check_splits("event: content_block_delta\ndata: {}\n\ndata: x\n\n",
		     "[content_block_delta]{}|[]x|", false);
	/* the last event line of a block wins; id, retry and unknown fields are ignored */
	check_splits("event: a\nid: 7\nretry: 100\nfoo: bar\nevent: b\ndata: d\n\n", "[b]d|",
		     false);
	/* a field name must match exactly */
	check_splits("Data: no\ndatax: no\ndata : no\ndata: yes\n\n", "[]yes|", false);
	/* a colon in the value is part of it */
	check_splits("data: {\"a\":\"b:c\"}\n\n", "[]{\"a\":\"b:c\"}|", false);
	/* a blank line right after another dispatches nothing */
	check_splits("\n\n\r\n\rdata: x\n\n\n\n", "[]x|", false);
}

static void test_comments(void **state)
{
	struct rec r;
	struct sse_parser *p = new_parser(&r);
	const struct sse_stats *st;

	(void)state;
	feed_str(p, ": ping\n\n:\ndata: a\n: mid-event heartbeat\ndata: b\n\n: keep-alive\r\n\r\n");
	assert_string_equal(r.log, "[]a\nb|");
	assert_int_equal(r.comments, 4);
	st = sse_parser__stats(p);
	assert_int_equal(st->comments, 4);
	assert_int_equal(st->events, 1);
	assert_int_equal(st->empty, 0);
	sse_parser__free(p);
	check_splits(": x\r\ndata: a\r\n\r\n", "[]a|", false);
}

static void test_event_without_data(void **state)
{
	struct rec r;
	struct sse_parser *p = new_parser(&r);

	(void)state;
	/* per spec not dispatched, but counted */
	feed_str(p, "event: ping\n\nid: 3\n\ndata: x\n\n");
	assert_string_equal(r.log, "[]x|");
	assert_int_equal(sse_parser__stats(p)->empty, 2);
	assert_int_equal(sse_parser__stats(p)->events, 1);
	sse_parser__free(p);
}

static void test_end_without_blank_line(void **state)
{
	struct rec r;
	struct sse_parser *p = new_parser(&r);

	(void)state;
	check_splits("data: a\n\ndata: b\n", "[]a|[]!b|", true);
	/* the last line itself unterminated */
	check_splits("data: a\n\ndata: b", "[]a|[]!b|", true);
	check_splits("data: a\n\nevent: x\n", "[]a|", true);
	/* nothing pending: end() dispatches nothing */
	feed_str(p, "data: a\n\n");
	sse_parser__end(p);
	sse_parser__end(p);
	assert_string_equal(r.log, "[]a|");
	sse_parser__free(p);
}

static void test_data_over_max(void **state)
{
	struct rec r;
	struct sse_parser *p = new_parser(&r);
	size_t big = SSE_DATA_MAX + 1000;
	char *s = malloc(big);

	(void)state;
	assert_non_null(s);
	memset(s, 'x', big);
	feed_str(p, "data: ");
	/* in pieces, as a big event arrives */
	for (size_t off = 0; off < big; off += 4096)
		feed(p, s, big - off < 4096 ? big - off : 4096);
	feed_str(p, "\ndata: yy\n\n");
	assert_int_equal(r.events, 1);
	assert_int_equal(r.last_len, SSE_DATA_MAX);
	assert_int_equal(r.last_total, big + 3);	/* joined: big, '\n', "yy" */
	assert_true(r.last_trunc);
	/* the next event is whole again */
	feed_str(p, "data: small\n\n");
	assert_int_equal(r.events, 2);
	assert_int_equal(r.last_len, 5);
	assert_int_equal(r.last_total, 5);
	assert_false(r.last_trunc);
	sse_parser__free(p);
	free(s);

	/* exactly SSE_DATA_MAX is not cut */
	p = new_parser(&r);
	s = malloc(SSE_DATA_MAX);
	assert_non_null(s);
	memset(s, 'y', SSE_DATA_MAX);
	feed_str(p, "data:");
	feed(p, s, SSE_DATA_MAX);
	feed_str(p, "\n\n");
	assert_int_equal(r.last_len, SSE_DATA_MAX);
	assert_false(r.last_trunc);
	sse_parser__free(p);
	free(s);
}

static void test_long_event_name(void **state)
{
	struct rec r;
	struct sse_parser *p = new_parser(&r);
	char line[256];

	(void)state;
	snprintf(line, sizeof(line), "event: %0100d\ndata: x\n\n", 1);
	feed_str(p, line);
	assert_int_equal(r.events, 1);
	sse_parser__free(p);
}

static void test_gap_inside_event(void **state)
{
	struct rec r;
	struct sse_parser *p = new_parser(&r);

	(void)state;
	/*
	 * A send longer than the capture: its event's tail (and blank line) is a gap. The event
	 * is dispatched at the gap, flagged, with the send that carried it; the next send's
	 * event, parsed before a line end confirmed where lines are, is flagged too; the one
	 * after is whole.
	 */
	feed_str(p, "data: a\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"lo");
	assert_string_equal(r.log, "[]a|");
	sse_parser__gap(p, 40);
	assert_string_equal(r.log, "[]a|[]!{\"choices\":[{\"delta\":{\"content\":\"lo|");
	feed_str(p, "data: b\n\n");
	feed_str(p, "data: c\n\n");
	assert_string_equal(r.log, "[]a|[]!{\"choices\":[{\"delta\":{\"content\":\"lo|[]!b|[]c|");
	assert_int_equal(sse_parser__stats(p)->gaps, 1);
	assert_int_equal(sse_parser__stats(p)->events, 4);
	sse_parser__free(p);

	/* the send after the gap starts with the tail of the cut event: dropped, not an event */
	p = new_parser(&r);
	feed_str(p, "event: delta\ndata: {\"a\":\"xx");
	sse_parser__gap(p, 10);
	feed_str(p, "yy\"}\n\ndata: next\n\n");
	assert_string_equal(r.log, "[delta]!{\"a\":\"xx|[]next|");
	assert_int_equal(sse_parser__stats(p)->empty, 1);
	sse_parser__free(p);

	/* a gap after an event line: its data was in the gap, the event still counts */
	p = new_parser(&r);
	feed_str(p, "event: content_block_delta\n");
	sse_parser__gap(p, 100);
	feed_str(p, "event: ping\ndata: {}\n\n");
	assert_string_equal(r.log, "[content_block_delta]!|[ping]!{}|");
	sse_parser__free(p);
}

static void test_gap_between_events(void **state)
{
	struct rec r;
	struct sse_parser *p = new_parser(&r);

	(void)state;
	/* at a clean boundary nothing is dispatched for the gap */
	feed_str(p, "data: a\n\n");
	sse_parser__gap(p, 5);
	sse_parser__gap(p, 0);	/* nothing moved: no gap */
	feed_str(p, "\ndata: b\n\n");
	assert_string_equal(r.log, "[]a|[]b|");
	assert_int_equal(sse_parser__stats(p)->gaps, 1);
	/* a CR before a gap: the LF after it is not swallowed as its pair */
	feed_str(p, "data: c\r");
	sse_parser__gap(p, 1);
	feed_str(p, "\ndata: d\n\n");
	assert_string_equal(r.log, "[]a|[]b|[]!c|[]d|");
	sse_parser__free(p);
}

static void test_bom_and_reset(void **state)
{
	struct rec r;
	struct sse_parser *p;

	(void)state;
	check_splits("\xef\xbb\xbf" "data: a\n\n", "[]a|", false);
	/* a BOM is only skipped at the very start */
	check_splits("data: a\n\n\xef\xbb\xbf" "data: b\n\n", "[]a|", false);
	/* not a BOM after all: its bytes are a (bad) field name */
	check_splits("\xef\xbb" "data: a\n\ndata: b\n\n", "[]b|", false);

	p = new_parser(&r);
	feed_str(p, "event: x\ndata: half");
	sse_parser__reset(p);
	assert_int_equal(sse_parser__stats(p)->events, 0);
	feed_str(p, "data: next\n\n");
	assert_string_equal(r.log, "[]next|");
	sse_parser__free(p);
	sse_parser__free(NULL);
}

static void test_many_events_one_feed(void **state)
{
	struct rec r;
	struct sse_parser *p = new_parser(&r);
	char buf[64 * 32];
	size_t n = 0;

	(void)state;
	for (int i = 0; i < 64; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "data: %d\n\n", i);
	feed(p, buf, n);
	assert_int_equal(r.events, 64);
	assert_int_equal(sse_parser__stats(p)->events, 64);
	sse_parser__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openai_stream_every_split),
		cmocka_unit_test(test_line_ends),
		cmocka_unit_test(test_long_lines),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_comments),
		cmocka_unit_test(test_event_without_data),
		cmocka_unit_test(test_end_without_blank_line),
		cmocka_unit_test(test_data_over_max),
		cmocka_unit_test(test_long_event_name),
		cmocka_unit_test(test_gap_inside_event),
		cmocka_unit_test(test_gap_between_events),
		cmocka_unit_test(test_bom_and_reset),
		cmocka_unit_test(test_many_events_one_feed),
	};

	return cmocka_run_group_tests_name("sse", tests, NULL, NULL);
}
