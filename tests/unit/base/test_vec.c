// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The growable array and the byte buffer: room as asked, bounds kept, contents intact. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "vec.h"

static void test_reserve(void **state)
{
	uint64_t *v = NULL;
	size_t cap = 0;

	assert_int_equal(VEC_RESERVE(v, &cap, 0, SIZE_MAX), 0);
	assert_null(v);
	for (size_t i = 0; i < 10000; i++) {
		assert_int_equal(VEC_RESERVE(v, &cap, i + 1, SIZE_MAX), 0);
		assert_true(cap >= i + 1);
		v[i] = i * 3;
	}
	for (size_t i = 0; i < 10000; i++)
		assert_true(v[i] == i * 3);
	/* doubling: far fewer capacities than appends */
	assert_true(cap < 2 * 10000);
	free(v);
}

static void test_reserve_bounded(void **state)
{
	uint32_t *v = NULL;
	size_t cap = 0;

	assert_int_equal(VEC_RESERVE(v, &cap, 5, 100), 0);
	assert_int_equal(VEC_RESERVE(v, &cap, 100, 100), 0);
	assert_int_equal(cap, 100);	/* doubling stops at the bound */
	assert_int_equal(VEC_RESERVE(v, &cap, 101, 100), -E2BIG);
	assert_int_equal(cap, 100);
	assert_int_equal(VEC_RESERVE(v, &cap, SIZE_MAX / 2, SIZE_MAX), -ENOMEM);
	assert_int_equal(cap, 100);
	free(v);
}

static void test_buf(void **state)
{
	struct buf b = {};
	char big[3000];

	memset(big, 'x', sizeof(big));
	assert_int_equal(buf__append(&b, "abc", 3, 10), 3);
	assert_string_equal((char *)b.data, "abc");
	assert_int_equal(buf__append(&b, "defghijkl", 9, 10), 7);	/* cut at the bound */
	assert_int_equal(b.len, 10);
	assert_string_equal((char *)b.data, "abcdefghij");
	assert_int_equal(buf__append(&b, "z", 1, 10), 0);
	assert_true(b.cap <= 11);	/* never more memory than the bound needs */
	buf__reset(&b);
	assert_int_equal(b.len, 0);
	assert_string_equal((char *)b.data, "");
	assert_int_equal(buf__append(&b, big, sizeof(big), SIZE_MAX), sizeof(big));
	assert_int_equal(buf__append(&b, "", 0, SIZE_MAX), 0);
	assert_int_equal(b.len, sizeof(big));
	assert_int_equal(b.data[b.len], '\0');
	assert_memory_equal(b.data, big, sizeof(big));
	buf__release(&b);
	assert_null(b.data);
	assert_int_equal(b.len + b.cap, 0);
	buf__release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reserve),
		cmocka_unit_test(test_reserve_bounded),
		cmocka_unit_test(test_buf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
