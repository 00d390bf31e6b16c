// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* jscan: paths, values, cuts, malformed text, string decoding, integers, path patterns. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "jscan.h"

/* Every visit as "path=type:raw" (a trailing "~" when cut), joined with " ". */
struct trace {
	char s[8192];
	size_t n;
	int stop_after;		/* stop the walk after this many visits; 0 never */
	int visits;
};

static const char *type_name(enum jscan_type t)
{
	static const char *const names[] = { "str", "num", "true", "false", "null", "obj", "arr" };

	return names[t];
}

static void put(struct trace *t, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(t->s + t->n, sizeof(t->s) - t->n, fmt, ap);
	va_end(ap);
	assert_true(r >= 0 && (size_t)r < sizeof(t->s) - t->n);
	t->n += (size_t)r;
}

static int record(void *ud, const struct jscan_path *p, const struct jscan_value *v)
{
	struct trace *t = ud;

	if (t->n)
		put(t, " ");
	if (p->depth == 0)
		put(t, "$");
	for (int i = 0; i < p->depth; i++) {
		if (p->step[i].key)
			put(t, "%s%.*s", i ? "." : "", (int)p->step[i].key_len, p->step[i].key);
		else
			put(t, "%s%d", i ? "." : "", p->step[i].index);
	}
	put(t, "=%s", type_name(v->type));
	if (v->type != JS_OBJECT && v->type != JS_ARRAY)
		put(t, ":%.*s", (int)v->raw_len, v->raw);
	if (v->cut)
		put(t, "~");
	t->visits++;
	return t->stop_after && t->visits >= t->stop_after;
}

static enum jscan_result walk(const char *s, struct trace *t)
{
	memset(t, 0, sizeof(*t));
	return jscan__walk(s, strlen(s), record, t);
}

static void test_object_paths(void **state)
{
	struct trace t;

	(void)state;
	assert_int_equal(walk(" {\"a\": 1, \"b\": [true, false, null, {\"c\": \"x\"}], \"d\": {}} ",
			      &t), JSCAN_OK);
	assert_string_equal(t.s, "$=obj a=num:1 b=arr b.0=true:true b.1=false:false b.2=null:null "
			    "b.3=obj b.3.c=str:x d=obj");
}

static void test_openai_chunk_paths(void **state)
{
	struct trace t;

	(void)state;
	assert_int_equal(walk("{\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":"
			      "{\"content\":\" the\"},\"logprobs\":null}]}", &t), JSCAN_OK);
	assert_string_equal(t.s, "$=obj id=str:chatcmpl-1 choices=arr choices.0=obj "
			    "choices.0.index=num:0 choices.0.delta=obj "
			    "choices.0.delta.content=str: the choices.0.logprobs=null:null");
}

static void test_top_level_scalars(void **state)
{
	struct trace t;

	(void)state;
	assert_int_equal(walk("42", &t), JSCAN_OK);
	assert_string_equal(t.s, "$=num:42");
	assert_int_equal(walk("  \"s\"\n", &t), JSCAN_OK);
	assert_string_equal(t.s, "$=str:s");
	assert_int_equal(walk("null", &t), JSCAN_OK);
	assert_int_equal(walk("[]", &t), JSCAN_OK);
	assert_string_equal(t.s, "$=arr");
	/* a top-level number that ends with the text is whole; "1." is not */
	assert_int_equal(walk("-0.5e+3", &t), JSCAN_OK);
	assert_string_equal(t.s, "$=num:-0.5e+3");
	assert_int_equal(walk("1.", &t), JSCAN_CUT);
	assert_string_equal(t.s, "$=num:1.~");
}

static void test_numbers(void **state)
{
	struct trace t;
	static const char *const bad[] = {
		"[01]", "[-]", "[1.]", "[1e]", "[+1]", "[.5]", "[1.e3]", "[--1]", "[1e+]", "[0x1]",
	};

	(void)state;
	assert_int_equal(walk("[-12, 3.5e-2, 0, 1E+10, -0, 0.25]", &t), JSCAN_OK);
	assert_string_equal(t.s, "$=arr 0=num:-12 1=num:3.5e-2 2=num:0 3=num:1E+10 4=num:-0 "
			    "5=num:0.25");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(walk(bad[i], &t), JSCAN_ERROR);
}

static void test_int(void **state)
{
	struct { const char *raw; bool ok; long long v; } c[] = {
		{ "0", true, 0 }, { "-12", true, -12 }, { "42", true, 42 },
		{ "9223372036854775807", true, 9223372036854775807LL },
		{ "-9223372036854775808", true, -9223372036854775807LL - 1 },
		{ "9223372036854775808", false, 0 }, { "-9223372036854775809", false, 0 },
		{ "3.5", false, 0 }, { "1e3", false, 0 }, { "-", false, 0 }, { "", false, 0 },
	};
	long long v;

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct jscan_value jv = { .type = JS_NUMBER, .raw = c[i].raw,
					  .raw_len = strlen(c[i].raw) };

		v = 7;
		assert_int_equal(jscan__int(&jv, &v), c[i].ok);
		if (c[i].ok)
			assert_int_equal(v, c[i].v);
	}
	/* not a number at all */
	struct jscan_value s = { .type = JS_STRING, .raw = "12", .raw_len = 2 };

	assert_false(jscan__int(&s, &v));
	assert_false(jscan__int(NULL, &v));
}

static void test_cut(void **state)
{
	struct trace t;

	(void)state;
	assert_int_equal(walk("{\"a\":\"hel", &t), JSCAN_CUT);
	assert_string_equal(t.s, "$=obj a=str:hel~");
	/* inside a container a number that reaches the end may have had more digits */
	assert_int_equal(walk("{\"n\":12", &t), JSCAN_CUT);
	assert_string_equal(t.s, "$=obj n=num:12~");
	/* a cut literal or key is not reported: nothing is guessed */
	assert_int_equal(walk("{\"a\":tru", &t), JSCAN_CUT);
	assert_string_equal(t.s, "$=obj");
	assert_int_equal(walk("{\"ke", &t), JSCAN_CUT);
	assert_string_equal(t.s, "$=obj");
	assert_int_equal(walk("{\"key\" ", &t), JSCAN_CUT);
	assert_int_equal(walk("[", &t), JSCAN_CUT);
	assert_int_equal(walk("", &t), JSCAN_CUT);
	assert_int_equal(walk("   ", &t), JSCAN_CUT);
	assert_int_equal(walk("{\"a\":\"x\\", &t), JSCAN_CUT);
	assert_string_equal(t.s, "$=obj a=str:x\\~");
	assert_int_equal(walk("{\"a\":\"\\u12", &t), JSCAN_CUT);
	assert_int_equal(walk("[1,", &t), JSCAN_CUT);
	assert_string_equal(t.s, "$=arr 0=num:1");
	assert_int_equal(jscan__walk(NULL, 5, record, &t), JSCAN_CUT);
}

static void test_malformed(void **state)
{
	struct trace t;
	static const char *const bad[] = {
		"{a:1}", "{\"a\" 1}", "[1,]", "{\"a\":1,}", "{\"a\":1 \"b\":2}", "[1 2]",
		"{\"a\":\"x\ty\"}",	/* raw control character */
		"\"\\x\"", "\"\\u12G4\"", "[}", "{]", "nulx", "trueish", "hello world", "}",
		"{\"a\":1}}", "{\"a\":1} x", "{\"a\":1}{", "[1]]", "{,}", "[,1]", "'a'",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		enum jscan_result r = walk(bad[i], &t);

		if (r != JSCAN_ERROR)
			fail_msg("\"%s\": %d, want JSCAN_ERROR", bad[i], r);
	}
	/* trailing whitespace is not garbage */
	assert_int_equal(walk("{\"a\":1} \r\n\t", &t), JSCAN_OK);
}

static void test_depth_limit(void **state)
{
	char buf[2 * JSCAN_DEPTH_MAX + 8];
	struct trace t;
	int n;

	(void)state;
	/* JSCAN_DEPTH_MAX open containers: the innermost members sit at depth JSCAN_DEPTH_MAX */
	for (n = 0; n < JSCAN_DEPTH_MAX; n++)
		buf[n] = '[';
	buf[n++] = '1';
	for (int i = 0; i < JSCAN_DEPTH_MAX; i++)
		buf[n++] = ']';
	buf[n] = '\0';
	assert_int_equal(walk(buf, &t), JSCAN_OK);

	for (n = 0; n <= JSCAN_DEPTH_MAX; n++)
		buf[n] = '[';
	buf[n] = '\0';
	assert_int_equal(walk(buf, &t), JSCAN_ERROR);

	/* deep objects too, and far deeper text must not hurt */
	char deep[20001];

	for (n = 0; n < 4000; n++)
		memcpy(deep + 5 * n, "{\"a\":", 5);
	deep[5 * n] = '\0';
	assert_int_equal(walk(deep, &t), JSCAN_ERROR);
}

static void test_stop(void **state)
{
	struct trace t = { .stop_after = 2 };
	const char *s = "{\"a\":1,\"b\":2}";

	(void)state;
	assert_int_equal(jscan__walk(s, strlen(s), record, &t), JSCAN_STOPPED);
	assert_string_equal(t.s, "$=obj a=num:1");
	/* no visitor at all: a validity check */
	assert_int_equal(jscan__walk(s, strlen(s), NULL, NULL), JSCAN_OK);
}

static size_t dec(const char *raw, bool cut, char *out, size_t outsz)
{
	struct jscan_value v = {
		.type = JS_STRING, .raw = raw, .raw_len = strlen(raw), .cut = cut,
	};

	return jscan__string(&v, out, outsz);
}

static void test_string_decode(void **state)
{
	char out[64];

	(void)state;
	assert_int_equal(dec("a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t", false, out, sizeof(out)), 12);
	assert_string_equal(out, "a\"b\\c/d\b\f\n\r\t");
	assert_int_equal(dec("caf\\u00e9 \\u20AC", false, out, sizeof(out)), 9);
	assert_string_equal(out, "caf\xc3\xa9 \xe2\x82\xac");
	/* a surrogate pair is one code point, four bytes of UTF-8 */
	assert_int_equal(dec("\\ud83d\\ude00!", false, out, sizeof(out)), 5);
	assert_string_equal(out, "\xf0\x9f\x98\x80!");
	/* lone halves and NUL become U+FFFD: out stays a C string */
	assert_int_equal(dec("\\ud83dx", false, out, sizeof(out)), 4);
	assert_string_equal(out, "\xef\xbf\xbdx");
	assert_int_equal(dec("\\ude00", false, out, sizeof(out)), 3);
	assert_string_equal(out, "\xef\xbf\xbd");
	assert_int_equal(dec("\\ud83d\\u0041", false, out, sizeof(out)), 4);
	assert_string_equal(out, "\xef\xbf\xbd" "A");
	assert_int_equal(dec("a\\u0000b", false, out, sizeof(out)), 5);
	assert_string_equal(out, "a\xef\xbf\xbd" "b");
	/* raw UTF-8 passes through */
	assert_int_equal(dec("\xe4\xbd\xa0\xe5\xa5\xbd", false, out, sizeof(out)), 6);
	assert_string_equal(out, "\xe4\xbd\xa0\xe5\xa5\xbd");
}

/*
 * Strings are scanned eight bytes at a time: a quote, an escape or a control character must
 * be found at every offset of the word it falls in, and ASCII runs decode whole or cut to fit.
 */
static void test_string_stops_at_every_offset(void **state)
{
	char text[96], raw[64], want[256], out[64];
	struct trace t;

	(void)state;
	for (int at = 0; at < 20; at++) {
		/* ["aaa…a"] with the quote at offset at, and a tail the scan must not take in */
		snprintf(text, sizeof(text), "[\"%.*s\", \"b\\u00e9\"]", at,
			 "aaaaaaaaaaaaaaaaaaaaaaaa");
		assert_int_equal(walk(text, &t), JSCAN_OK);
		snprintf(want, sizeof(want), "$=arr 0=str:%.*s 1=str:b\\u00e9", at,
			 "aaaaaaaaaaaaaaaaaaaaaaaa");
		assert_string_equal(t.s, want);

		/* an escaped quote at offset at does not end the string */
		snprintf(raw, sizeof(raw), "%.*s\\\"zzzzzzzzzzzz", at, "aaaaaaaaaaaaaaaaaaaaaaaa");
		snprintf(text, sizeof(text), "[\"%s\"]", raw);
		assert_int_equal(walk(text, &t), JSCAN_OK);
		snprintf(want, sizeof(want), "$=arr 0=str:%s", raw);
		assert_string_equal(t.s, want);
		assert_int_equal(dec(raw, false, out, sizeof(out)), (size_t)at + 13);
		snprintf(want, sizeof(want), "%.*s\"zzzzzzzzzzzz", at, "aaaaaaaaaaaaaaaaaaaaaaaa");
		assert_string_equal(out, want);

		/* a raw control character at offset at is no JSON */
		snprintf(text, sizeof(text), "[\"%.*s\x01zzzzzzzzzzzz\"]", at,
			 "aaaaaaaaaaaaaaaaaaaaaaaa");
		assert_int_equal(walk(text, &t), JSCAN_ERROR);
	}
	/* a long ASCII run decodes cut to fit, counting all of it */
	assert_int_equal(dec("abcdefghijklmnopqrstuvwxyz\\n", false, out, 11), 27);
	assert_string_equal(out, "abcdefghij");
}

static void test_string_cut_to_fit(void **state)
{
	char out[8];

	(void)state;
	/* the full decoded length is returned; out holds what fits, NUL-terminated */
	assert_int_equal(dec("hello world", false, out, 6), 11);
	assert_string_equal(out, "hello");
	/* a multi-byte character that does not fit is left out whole */
	assert_int_equal(dec("abcd\\u20ac", false, out, 6), 7);
	assert_string_equal(out, "abcd");
	assert_int_equal(dec("abcd\xe2\x82\xac", false, out, 6), 7);
	assert_string_equal(out, "abcd");
	/* nor does anything after it sneak in */
	assert_int_equal(dec("abcd\\u20acx", false, out, 6), 8);
	assert_string_equal(out, "abcd");
	assert_int_equal(dec("x", false, out, 1), 1);
	assert_string_equal(out, "");
	assert_int_equal(dec("xyz", false, NULL, 0), 3);
}

static void test_string_cut_text(void **state)
{
	char out[32];

	(void)state;
	/* a string the text cut inside an escape: the escape is dropped, not guessed */
	assert_int_equal(dec("ab\\", true, out, sizeof(out)), 2);
	assert_string_equal(out, "ab");
	assert_int_equal(dec("ab\\u00", true, out, sizeof(out)), 2);
	assert_string_equal(out, "ab");
	/* the low half of a pair may be past the cut */
	assert_int_equal(dec("ab\\ud83d", true, out, sizeof(out)), 2);
	assert_string_equal(out, "ab");
	assert_int_equal(dec("ab\\ud83d\\u", true, out, sizeof(out)), 2);
	assert_int_equal(dec("ab\\ud83d\\ude", true, out, sizeof(out)), 2);
	/* and a raw UTF-8 sequence split by the cut is not output half-way */
	assert_int_equal(dec("ab\xe2\x82", true, out, sizeof(out)), 2);
	assert_string_equal(out, "ab");
	/* not a value from the scanner */
	struct jscan_value n = { .type = JS_NUMBER, .raw = "1", .raw_len = 1 };

	assert_int_equal(jscan__string(&n, out, sizeof(out)), 0);
	assert_string_equal(out, "");
}


static int count_content(void *ud, const struct jscan_path *p, const struct jscan_value *v)
{
	int *n = ud;

	(void)v;
	if (jscan__path_match(p, "choices", "*", "delta", "content", NULL))
		n[0]++;
	if (jscan__path_match(p, "**", "content", NULL))
		n[1]++;
	if (jscan__path_match(p, "choices", "**", NULL))
		n[2]++;
	if (jscan__key_is(p, "content"))
		n[3]++;
	return 0;
}

static void test_path_match(void **state)
{
	const char *s = "{\"content\":\"top\",\"choices\":[{\"delta\":{\"content\":\"a\"},"
			"\"logprobs\":{\"content\":[{\"token\":\"x\"}]}},"
			"{\"delta\":{\"content\":\"b\"}}],"
			"\"x\":{\"choices\":[{\"delta\":{\"content\":\"nested\"}}]}}";
	int n[4] = { 0 };

	(void)state;
	assert_int_equal(jscan__walk(s, strlen(s), count_content, n), JSCAN_OK);
	assert_int_equal(n[0], 2);	/* only choices[i].delta.content */
	assert_int_equal(n[1], 5);	/* every "content" key at any depth */
	/* choices, 2 elements, 2 deltas, 2 contents, logprobs, its content, element, token */
	assert_int_equal(n[2], 11);
	assert_int_equal(n[3], 5);
}

static int check_star(void *ud, const struct jscan_path *p, const struct jscan_value *v)
{
	int *n = ud;

	(void)v;
	/* "*" is an array index, never an object key */
	if (jscan__path_match(p, "*", NULL))
		n[0]++;
	/* "**" may match nothing */
	if (jscan__path_match(p, "**", NULL))
		n[1]++;
	if (jscan__path_match(p, "a", "**", "b", NULL))
		n[2]++;
	return 0;
}

static void test_path_star(void **state)
{
	int n[3] = { 0 };
	const char *obj = "{\"a\":{\"b\":1,\"c\":{\"b\":2}}}";
	const char *arr = "[1,2]";

	(void)state;
	assert_int_equal(jscan__walk(obj, strlen(obj), check_star, n), JSCAN_OK);
	assert_int_equal(n[0], 0);
	assert_int_equal(n[1], 5);	/* every value, the top-level one included */
	assert_int_equal(n[2], 2);	/* a.b and a.c.b */
	memset(n, 0, sizeof(n));
	assert_int_equal(jscan__walk(arr, strlen(arr), check_star, n), JSCAN_OK);
	assert_int_equal(n[0], 2);
	assert_false(jscan__key_is(NULL, "a"));
}

/* Every prefix of a valid document is CUT (never ERROR), values seen are whole or flagged. */
static void test_every_prefix(void **state)
{
	static const char *const docs[] = {
		("{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,"
		 "\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
		 "\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}"),
		"{\"a\":[1,-2.5e+3,true,false,null,\"x\\\"\\u00e9\\ud83d\\ude00\",{},[]],\"b\":{}}",
		("{\"model\":\"llama3\",\"message\":{\"role\":\"assistant\",\"content\":\"tok\"},"
		 "\"done\":false}"),
	};
	char buf[512];

	(void)state;
	for (size_t d = 0; d < sizeof(docs) / sizeof(docs[0]); d++) {
		size_t len = strlen(docs[d]);

		assert_true(len < sizeof(buf));
		for (size_t l = 0; l <= len; l++) {
			struct trace t;
			enum jscan_result r;

			memcpy(buf, docs[d], l);
			buf[l] = '\0';
			r = walk(buf, &t);
			if (r != (l == len ? JSCAN_OK : JSCAN_CUT))
				fail_msg("doc %zu prefix %zu: %d", d, l, r);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_object_paths),
		cmocka_unit_test(test_openai_chunk_paths),
		cmocka_unit_test(test_top_level_scalars),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_int),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_depth_limit),
		cmocka_unit_test(test_stop),
		cmocka_unit_test(test_string_decode),
		cmocka_unit_test(test_string_stops_at_every_offset),
		cmocka_unit_test(test_string_cut_to_fit),
		cmocka_unit_test(test_string_cut_text),
		cmocka_unit_test(test_path_match),
		cmocka_unit_test(test_path_star),
		cmocka_unit_test(test_every_prefix),
	};

	return cmocka_run_group_tests_name("jscan", tests, NULL, NULL);
}
