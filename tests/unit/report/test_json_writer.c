// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* What reaches a JSON consumer is valid JSON whatever bytes the wire carried. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "json_writer.h"

static void test_object(void **state)
{
	struct jw w;

	jw__init(&w);
	jw__obj_open(&w);
	jw__kstr(&w, "a", "x");
	jw__ku64(&w, "n", 18446744073709551615ull);
	jw__ki64(&w, "i", -5);
	jw__key(&w, "arr");
	jw__arr_open(&w);
	jw__u64(&w, 1);
	jw__u64(&w, 2);
	jw__arr_open(&w);
	jw__arr_close(&w);
	jw__arr_close(&w);
	jw__knull(&w, "z");
	jw__kbool(&w, "t", true);
	jw__kf64(&w, "f", 0.0 / 0.0);
	jw__obj_close(&w);
	assert_string_equal(jw__data(&w), "{\"a\":\"x\",\"n\":18446744073709551615,\"i\":-5,"
			    "\"arr\":[1,2,[]],\"z\":null,\"t\":true,\"f\":null}");
	jw__free(&w);
}

static void test_escapes_and_bad_utf8(void **state)
{
	struct jw w;

	jw__init(&w);
	/* quotes, backslash, control bytes, valid UTF-8 kept, invalid bytes replaced */
	jw__strn(&w, "q\"b\\n\n\x01\xc3\xa9\xff\xe2\x82", 12);
	assert_string_equal(jw__data(&w), "\"q\\\"b\\\\n\\n\\u0001\xc3\xa9\\ufffd\\ufffd\\ufffd\"");
	jw__reset(&w);
	/* an overlong encoding of '/' and a UTF-16 surrogate are not valid UTF-8 */
	jw__strn(&w, "\xc0\xaf\xed\xa0\x80", 5);
	assert_string_equal(jw__data(&w), "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"");
	jw__free(&w);
}

/* What a client put in a path reaches no terminal raw through a JSON log viewer. */
static void test_controls_escaped(void **state)
{
	struct jw w;

	jw__init(&w);
	/* 7-bit CSI, DEL, C1 CSI and NEL in UTF-8, a raw 8-bit CSI byte (not UTF-8) */
	jw__str(&w, "\x1b[2J\x7f\xc2\x9b" "1m\xc2\x85\x9b");
	assert_string_equal(jw__data(&w), "\"\\u001b[2J\\u007f\\u009b1m\\u0085\\ufffd\"");
	jw__reset(&w);
	/* bidi override and line separator: same string to a parser, inert to a display */
	jw__str(&w, "a\xe2\x80\xae" "b\xe2\x80\xa8" "c\xc2\xa0" "d");
	assert_string_equal(jw__data(&w), "\"a\\u202eb\\u2028c\xc2\xa0" "d\"");
	jw__free(&w);
}

/* Invisible code points are escaped (TAGs as surrogate pairs): a parser gets them back. */
static void test_invisible_escaped(void **state)
{
	struct jw w;

	jw__init(&w);
	/* U+E0041 TAG LATIN CAPITAL LETTER A, U+200B ZERO WIDTH SPACE, U+FEFF; an e-acute kept */
	jw__str(&w, "x\xf3\xa0\x81\x81y\xe2\x80\x8bz\xef\xbb\xbf\xc3\xa9");
	assert_string_equal(jw__data(&w), "\"x\\udb40\\udc41y\\u200bz\\ufeff\xc3\xa9\"");
	jw__free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_object),
		cmocka_unit_test(test_escapes_and_bad_utf8),
		cmocka_unit_test(test_controls_escaped),
		cmocka_unit_test(test_invisible_escaped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
