// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The protocol-buffers writer against bytes worked out by hand from the encoding rules
 * (varints, zigzag-free int64, fixed little-endian, length-delimited nesting), its bound, its
 * string cleaning, and the reader over what the writer wrote.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "pbuf.h"

static void expect(const struct pbuf *b, const uint8_t *want, size_t n)
{
	assert_true(pbuf__ok(b));
	assert_int_equal(b->len, n);
	assert_memory_equal(b->buf, want, n);
}

static void test_scalars(void **state)
{
	struct pbuf b;
	/* field 1 varint 150; field 2 int64 -1 (ten bytes); field 3 bool true; field 4 0 */
	static const uint8_t v[] = { 0x08, 0x96, 0x01, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				     0xff, 0xff, 0xff, 0x01, 0x18, 0x01, 0x20, 0x00 };
	/* field 7 fixed64 0x0102030405060708; field 16 fixed32 0x301 (tag 16<<3|5 = 0x85 0x01);
	 * field 4 double 1.0 */
	static const uint8_t f[] = { 0x39, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
				     0x85, 0x01, 0x01, 0x03, 0x00, 0x00,
				     0x21, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x3f };

	(void)state;
	pbuf__init(&b, 1024);
	pbuf__uint(&b, 1, 150);
	pbuf__int(&b, 2, -1);
	pbuf__uint(&b, 3, true);
	pbuf__uint(&b, 4, 0);
	expect(&b, v, sizeof(v));
	pbuf__reset(&b);
	pbuf__fixed64(&b, 7, 0x0102030405060708ull);
	pbuf__fixed32(&b, 16, 0x301);
	pbuf__double(&b, 4, 1.0);
	expect(&b, f, sizeof(f));
	pbuf__free(&b);
}

static void test_len_and_nesting(void **state)
{
	struct pbuf b;
	static const uint8_t s[] = { 0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g' };
	/* field 3 { field 1: 150 } */
	static const uint8_t n1[] = { 0x1a, 0x03, 0x08, 0x96, 0x01 };
	/* field 1 { field 2 { } field 3: 1 } */
	static const uint8_t n2[] = { 0x0a, 0x04, 0x12, 0x00, 0x18, 0x01 };
	char big[300];

	(void)state;
	pbuf__init(&b, 4096);
	pbuf__cstr(&b, 2, "testing");
	expect(&b, s, sizeof(s));
	pbuf__reset(&b);
	pbuf__open(&b, 3);
	pbuf__uint(&b, 1, 150);
	pbuf__close(&b);
	expect(&b, n1, sizeof(n1));
	pbuf__reset(&b);
	pbuf__open(&b, 1);
	pbuf__open(&b, 2);
	pbuf__close(&b);
	pbuf__uint(&b, 3, 1);
	pbuf__close(&b);
	expect(&b, n2, sizeof(n2));
	/* a body of 300 bytes: its length takes two bytes (0xac 0x02), nothing left between */
	pbuf__reset(&b);
	memset(big, 'x', sizeof(big));
	pbuf__open(&b, 5);
	pbuf__raw(&b, big, sizeof(big));
	pbuf__close(&b);
	assert_true(pbuf__ok(&b));
	assert_int_equal(b.len, 1 + 2 + 300);
	assert_int_equal(b.buf[0], 0x2a);
	assert_int_equal(b.buf[1], 0xac);
	assert_int_equal(b.buf[2], 0x02);
	assert_int_equal(b.buf[3], 'x');
	/* packed: field 6, 2 x 8 bytes */
	pbuf__reset(&b);
	pbuf__packed_fixed64(&b, 6, (uint64_t[]){ 1, 2 }, 2);
	assert_int_equal(b.len, 2 + 16);
	assert_int_equal(b.buf[0], 0x32);
	assert_int_equal(b.buf[1], 16);
	assert_int_equal(b.buf[2], 1);
	assert_int_equal(b.buf[10], 2);
	pbuf__free(&b);
}

static void test_bound_and_balance(void **state)
{
	struct pbuf b;
	size_t mark;

	(void)state;
	pbuf__init(&b, 8);
	pbuf__cstr(&b, 1, "12345");	/* 7 bytes: fits */
	assert_true(pbuf__ok(&b));
	pbuf__cstr(&b, 1, "abc");	/* past 8: the buffer fails, and stays failed */
	assert_false(pbuf__ok(&b));
	pbuf__uint(&b, 2, 1);
	assert_false(pbuf__ok(&b));
	/* a rewind takes the failed field out */
	pbuf__rewind(&b, 7);
	assert_true(pbuf__ok(&b));
	assert_int_equal(b.len, 7);
	pbuf__free(&b);

	pbuf__init(&b, 1024);
	pbuf__open(&b, 1);
	assert_false(pbuf__ok(&b));	/* open: not a whole message */
	mark = pbuf__mark(&b);
	pbuf__open(&b, 2);
	pbuf__rewind(&b, mark);		/* the inner one is gone, the outer one still open */
	assert_int_equal(b.depth, 1);
	pbuf__close(&b);
	assert_true(pbuf__ok(&b));
	pbuf__close(&b);		/* one close too many */
	assert_false(pbuf__ok(&b));
	pbuf__reset(&b);
	for (int i = 0; i <= PBUF_DEPTH_MAX; i++)
		pbuf__open(&b, 1);
	assert_true(b.err);
	pbuf__free(&b);
}

static void test_str_cleaned(void **state)
{
	struct pbuf b;
	/* "a", an invalid byte, "b", ESC, "é" (valid), U+202E (a bidi override), a NUL ending it */
	static const char in[] = "a\xff" "b\x1b\xc3\xa9\xe2\x80\xae\0hidden";
	static const char want[] = "a\xef\xbf\xbd" "b\\u001b\xc3\xa9\\u202e";

	(void)state;
	pbuf__init(&b, 1024);
	pbuf__str(&b, 1, in, sizeof(in));
	assert_true(pbuf__ok(&b));
	assert_int_equal(b.buf[0], 0x0a);
	assert_int_equal(b.buf[1], strlen(want));
	assert_memory_equal(b.buf + 2, want, strlen(want));
	pbuf__free(&b);
}

static void test_reader(void **state)
{
	struct pbuf b;
	struct pbuf_reader r, sub;
	struct pbuf_field f;

	(void)state;
	pbuf__init(&b, 1024);
	pbuf__uint(&b, 1, 300);
	pbuf__open(&b, 2);
	pbuf__cstr(&b, 1, "in");
	pbuf__close(&b);
	pbuf__fixed64(&b, 3, 7);
	pbuf__fixed32(&b, 4, 9);
	assert_true(pbuf__ok(&b));

	pbuf_reader__init(&r, b.buf, b.len);
	assert_true(pbuf_reader__next(&r, &f));
	assert_int_equal(f.num, 1);
	assert_int_equal(f.wire, PB_VARINT);
	assert_int_equal(f.v, 300);
	assert_true(pbuf_reader__next(&r, &f));
	assert_int_equal(f.num, 2);
	assert_int_equal(f.wire, PB_LEN);
	pbuf_reader__sub(&sub, &f);
	assert_true(pbuf_reader__next(&sub, &f));
	assert_int_equal(f.len, 2);
	assert_memory_equal(f.data, "in", 2);
	assert_false(pbuf_reader__next(&sub, &f));
	assert_false(sub.err);
	assert_true(pbuf_reader__next(&r, &f));
	assert_int_equal(f.v, 7);
	assert_true(pbuf_reader__next(&r, &f));
	assert_int_equal(f.wire, PB_I32);
	assert_int_equal(f.v, 9);
	assert_false(pbuf_reader__next(&r, &f));
	assert_false(r.err);

	/* cut short: an error, never a read past the end */
	for (size_t n = 1; n < b.len; n++) {
		bool any_err = false;

		pbuf_reader__init(&r, b.buf, n);
		while (pbuf_reader__next(&r, &f))
			;
		any_err = r.err;
		/* a cut that falls between fields is a shorter valid message */
		if (n != 3 && n != 3 + 6 && n != 3 + 6 + 9)
			assert_true(any_err);
	}
	/* field number 0 and group wire types are malformed */
	pbuf_reader__init(&r, (const uint8_t[]){ 0x00, 0x01 }, 2);
	assert_false(pbuf_reader__next(&r, &f));
	assert_true(r.err);
	pbuf_reader__init(&r, (const uint8_t[]){ 0x0b }, 1);
	assert_false(pbuf_reader__next(&r, &f));
	assert_true(r.err);
	pbuf__free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scalars),
		cmocka_unit_test(test_len_and_nesting),
		cmocka_unit_test(test_bound_and_balance),
		cmocka_unit_test(test_str_cleaned),
		cmocka_unit_test(test_reader),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
