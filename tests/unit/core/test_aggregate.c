// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* --aggregate's kernel buckets and their reading back: within the promised resolution. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "aggregate.h"

static void test_bucket_roundtrip(void **state)
{
	/* every value reads back within 12.5% (half a bucket of an octave in four) */
	for (uint64_t v = 1; v < (1ull << 40); v = v * 3 / 2 + 1) {
		uint64_t mid = agg__bucket_mid(tt_agg_bucket(v));
		double err = mid > v ? (double)(mid - v) / v : (double)(v - mid) / v;

		assert_true(err <= 0.125);
	}
	assert_int_equal(tt_agg_bucket(1ull << 50), TT_AGG_BUCKETS - 1);
	for (uint64_t v = 4; v < (1ull << 39); v *= 2)
		assert_true(tt_agg_bucket(v) < tt_agg_bucket(v * 2));
}

static void test_delta_never_negative(void **state)
{
	static struct agg_totals a, b, d;
	struct tt_agg x = { .sends = 5, .firsts = 1 };

	x.itl[tt_agg_bucket(8000000)] = 4;
	x.ttft[tt_agg_bucket(30000000)] = 1;
	agg__add(&b, &x);
	agg__add(&b, &x);
	agg__add(&a, &x);	/* a connection missed in the later snapshot */
	agg__delta(&a, &b, &d);
	assert_int_equal(d.sends, 0);
	agg__delta(&b, &a, &d);
	assert_int_equal(d.sends, 5);
	assert_int_equal(d.itl[tt_agg_bucket(8000000)], 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bucket_roundtrip),
		cmocka_unit_test(test_delta_never_negative),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
