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

	jw_init(&w);
	jw_obj_open(&w);
	jw_kstr(&w, "a", "x");
	jw_ku64(&w, "n", 18446744073709551615ull);
	jw_ki64(&w, "i", -5);
	jw_key(&w, "arr");
	jw_arr_open(&w);
	jw_u64(&w, 1);
	jw_u64(&w, 2);
	jw_arr_open(&w);
	jw_arr_close(&w);
	jw_arr_close(&w);
	jw_knull(&w, "z");
	jw_kbool(&w, "t", true);
	jw_kf64(&w, "f", 0.0 / 0.0);
	jw_obj_close(&w);
	assert_string_equal(jw_data(&w), "{\"a\":\"x\",\"n\":18446744073709551615,\"i\":-5,"
			    "\"arr\":[1,2,[]],\"z\":null,\"t\":true,\"f\":null}");
	jw_free(&w);
}

static void test_escapes_and_bad_utf8(void **state)
{
	struct jw w;

	jw_init(&w);
	/* quotes, backslash, control bytes, valid UTF-8 kept, invalid bytes replaced */
	jw_strn(&w, "q\"b\\n\n\x01\xc3\xa9\xff\xe2\x82", 12);
	assert_string_equal(jw_data(&w), "\"q\\\"b\\\\n\\n\\u0001\xc3\xa9\\ufffd\\ufffd\\ufffd\"");
	jw_reset(&w);
	/* an overlong encoding of '/' and a UTF-16 surrogate are not valid UTF-8 */
	jw_strn(&w, "\xc0\xaf\xed\xa0\x80", 5);
	assert_string_equal(jw_data(&w), "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"");
	jw_free(&w);
}

/* What a client put in a path reaches no terminal raw through a JSON log viewer. */
static void test_controls_escaped(void **state)
{
	struct jw w;

	jw_init(&w);
	/* 7-bit CSI, DEL, C1 CSI and NEL in UTF-8, a raw 8-bit CSI byte (not UTF-8) */
	jw_str(&w, "\x1b[2J\x7f\xc2\x9b" "1m\xc2\x85\x9b");
	assert_string_equal(jw_data(&w), "\"\\u001b[2J\\u007f\\u009b1m\\u0085\\ufffd\"");
	jw_reset(&w);
	/* bidi override and line separator: same string to a parser, inert to a display */
	jw_str(&w, "a\xe2\x80\xae" "b\xe2\x80\xa8" "c\xc2\xa0" "d");
	assert_string_equal(jw_data(&w), "\"a\\u202eb\\u2028c\xc2\xa0" "d\"");
	jw_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_object),
		cmocka_unit_test(test_escapes_and_bad_utf8),
		cmocka_unit_test(test_controls_escaped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
