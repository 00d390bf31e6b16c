// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* NDJSON splitter: lines whatever the split, CRLF, blank lines, end, overlong lines, gaps. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ndjson.h"

/* Every line as its text ("!" first when truncated), joined with "|". */
struct rec {
	char log[8192];
	size_t n;
	int lines;
	size_t last_len;
	uint64_t last_total;
	bool last_trunc;
};

static void on_line(void *ud, const struct ndjson_line *l)
{
	struct rec *r = ud;
	int k;

	assert_non_null(l->text);
	assert_int_equal(l->text[l->len], '\0');
	assert_true(l->len <= NDJSON_LINE_MAX);
	assert_true(l->total >= l->len);
	r->lines++;
	r->last_len = l->len;
	r->last_total = l->total;
	r->last_trunc = l->truncated;
	if (l->len < 200)
		k = snprintf(r->log + r->n, sizeof(r->log) - r->n, "%s%s|",
			     l->truncated ? "!" : "", l->text);
	else
		k = snprintf(r->log + r->n, sizeof(r->log) - r->n, "%s<%zu>|",
			     l->truncated ? "!" : "", l->len);
	assert_true(k >= 0 && (size_t)k < sizeof(r->log) - r->n);
	r->n += (size_t)k;
}

static const struct ndjson_cb cbs = { .on_line = on_line };

static struct ndjson_parser *new_parser(struct rec *r)
{
	struct ndjson_parser *p;

	memset(r, 0, sizeof(*r));
	p = ndjson_parser__new(&cbs, r);
	assert_non_null(p);
	return p;
}

static void feed(struct ndjson_parser *p, const char *s, size_t len)
{
	ndjson_parser__feed(p, (const uint8_t *)s, len);
}

static void feed_str(struct ndjson_parser *p, const char *s)
{
	feed(p, s, strlen(s));
}

static void check_splits(const char *stream, const char *want)
{
	size_t len = strlen(stream);
	char *copy = malloc(len + 1);
	struct rec r;

	assert_non_null(copy);
	memcpy(copy, stream, len);
	for (size_t cut = 0; cut <= len + 1; cut++) {
		struct ndjson_parser *p = new_parser(&r);

		if (cut <= len) {
			feed(p, copy, cut);
			feed(p, copy + cut, len - cut);
		} else {
			for (size_t i = 0; i < len; i++)
				feed(p, copy + i, 1);
		}
		ndjson_parser__end(p);
		if (strcmp(r.log, want) != 0)
			fail_msg("split at %zu: got \"%s\", want \"%s\"", cut, r.log, want);
		ndjson_parser__free(p);
	}
	free(copy);
}

static void test_ollama_every_split(void **state)
{
	(void)state;
	check_splits("{\"model\":\"llama3\",\"response\":\"Hi\",\"done\":false}\n"
		     "{\"model\":\"llama3\",\"response\":\"!\",\"done\":false}\n"
		     "{\"model\":\"llama3\",\"response\":\"\",\"done\":true,\"eval_count\":2}\n",
		     "{\"model\":\"llama3\",\"response\":\"Hi\",\"done\":false}|"
		     "{\"model\":\"llama3\",\"response\":\"!\",\"done\":false}|"
		     "{\"model\":\"llama3\",\"response\":\"\",\"done\":true,\"eval_count\":2}|");
}

static void test_crlf_blank_and_last_line(void **state)
{
	(void)state;
	check_splits("{\"a\":1}\r\n{\"b\":2}\r\n", "{\"a\":1}|{\"b\":2}|");
	/* blank and whitespace-only lines are separators, not records */
	check_splits("\n\r\n{\"a\":1}\n\n  \n\t\r\n{\"b\":2}\n", "{\"a\":1}|{\"b\":2}|");
	/* the last line without "\n" is dispatched at end() */
	check_splits("{\"a\":1}\n{\"b\":2}", "{\"a\":1}|{\"b\":2}|");
	check_splits("{\"b\":2}\r", "{\"b\":2}|");
	/* a CR not before an LF is part of the line */
	check_splits("a\rb\n\r\r\n", "a\rb|");
	check_splits("", "");
}

static void test_overlong_line(void **state)
{
	struct rec r;
	struct ndjson_parser *p = new_parser(&r);
	size_t big = NDJSON_LINE_MAX + 77;
	char *s = malloc(big);

	(void)state;
	assert_non_null(s);
	memset(s, 'x', big);
	for (size_t off = 0; off < big; off += 1000)
		feed(p, s + off, big - off < 1000 ? big - off : 1000);
	feed_str(p, "\r\n{\"ok\":1}\n");
	assert_int_equal(r.lines, 2);
	assert_string_equal(r.log, "!<65536>|{\"ok\":1}|");
	assert_int_equal(r.last_total, 8);
	ndjson_parser__free(p);

	/* the first line's numbers */
	p = new_parser(&r);
	feed(p, s, big);
	ndjson_parser__end(p);
	assert_int_equal(r.last_len, NDJSON_LINE_MAX);
	assert_int_equal(r.last_total, big);
	assert_true(r.last_trunc);
	ndjson_parser__free(p);
	free(s);
}

static void test_gap(void **state)
{
	struct rec r;
	struct ndjson_parser *p = new_parser(&r);

	(void)state;
	/*
	 * A line longer than the capture: dispatched at the gap, flagged. The next line, read
	 * before a line end confirmed where lines are, is flagged too; the one after is whole.
	 */
	feed_str(p, "{\"a\":1}\n{\"response\":\"lo");
	ndjson_parser__gap(p, 30);
	assert_string_equal(r.log, "{\"a\":1}|!{\"response\":\"lo|");
	feed_str(p, "{\"b\":2}\n{\"c\":3}\n");
	assert_string_equal(r.log, "{\"a\":1}|!{\"response\":\"lo|!{\"b\":2}|{\"c\":3}|");
	ndjson_parser__free(p);

	/* a gap at a line start: only what follows it is in doubt */
	p = new_parser(&r);
	feed_str(p, "{\"a\":1}\n");
	ndjson_parser__gap(p, 12);
	ndjson_parser__gap(p, 0);
	feed_str(p, "ne\":1}\n{\"c\":3}\n");
	assert_string_equal(r.log, "{\"a\":1}|!ne\":1}|{\"c\":3}|");
	ndjson_parser__free(p);

	/* a CR held before the gap was not a line end we saw */
	p = new_parser(&r);
	feed_str(p, "{\"a\":1}\r");
	ndjson_parser__gap(p, 1);
	feed_str(p, "\n{\"c\":3}\n");
	assert_string_equal(r.log, "!{\"a\":1}\r|{\"c\":3}|");
	ndjson_parser__free(p);
}

static void test_reset(void **state)
{
	struct rec r;
	struct ndjson_parser *p = new_parser(&r);

	(void)state;
	feed_str(p, "{\"half\":");
	ndjson_parser__reset(p);
	feed_str(p, "{\"next\":1}\n");
	assert_string_equal(r.log, "{\"next\":1}|");
	ndjson_parser__free(p);
	ndjson_parser__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ollama_every_split),
		cmocka_unit_test(test_crlf_blank_and_last_line),
		cmocka_unit_test(test_overlong_line),
		cmocka_unit_test(test_gap),
		cmocka_unit_test(test_reset),
	};

	return cmocka_run_group_tests_name("ndjson", tests, NULL, NULL);
}
