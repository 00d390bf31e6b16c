// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The histogram's percentiles against exact ones computed from the sorted samples. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include "hist.h"

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t exact(uint64_t *v, size_t n, double p)
{
	size_t rank = (size_t)ceil(p / 100.0 * n);

	if (rank < 1)
		rank = 1;
	return v[rank - 1];
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Relative error <= 1% at every percentile, for values spread over 9 decades. */
static void test_relative_error(void **state)
{
	static struct hist h;
	enum { N = 100000 };
	uint64_t *v = malloc(N * sizeof(*v)), seed = 88172645463325252ull;
	double worst = 0;

	hist__reset(&h);
	for (int i = 0; i < N; i++) {
		/* log-uniform between 1 us and 1000 s */
		v[i] = (uint64_t)(1e3 * pow(10, (rnd(&seed) % 1000000) / 1e6 * 9));
		hist__record(&h, v[i]);
	}
	qsort(v, N, sizeof(*v), cmp);
	for (double p = 1; p < 100; p += 0.5) {
		double e = fabs((double)hist__percentile(&h, p) - exact(v, N, p)) / exact(v, N, p);

		if (e > worst)
			worst = e;
	}
	print_message("worst relative error %.4f%%\n", worst * 100);
	assert_true(worst <= 0.01);
	assert_int_equal(hist__percentile(&h, 100), v[N - 1]);
	assert_int_equal(hist__percentile(&h, 0), v[0]);
	assert_int_equal(h.count, N);
	free(v);
}

static void test_small_exact_and_empty(void **state)
{
	static struct hist h;

	hist__reset(&h);
	assert_int_equal(hist__percentile(&h, 50), 0);
	for (uint64_t i = 1; i <= 100; i++)
		hist__record(&h, i);
	/* below 128 every value has its own bucket */
	assert_int_equal(hist__percentile(&h, 50), 50);
	assert_int_equal(hist__percentile(&h, 99), 99);
	assert_int_equal(hist__mean(&h), 50);
	assert_int_equal(hist__count_le(&h, 10), 10);
	assert_int_equal(hist__count_le(&h, 1000), 100);
}

static void test_merge_and_huge(void **state)
{
	static struct hist a, b;

	hist__reset(&a);
	hist__reset(&b);
	hist__record(&a, 1000000);
	hist__record(&b, 3000000);
	hist__record(&b, UINT64_MAX / 2);	/* far past the range: kept in the last bucket */
	hist__merge(&a, &b);
	assert_int_equal(a.count, 3);
	assert_int_equal(a.min, 1000000);
	assert_int_equal(a.max, UINT64_MAX / 2);
	assert_int_equal(hist__percentile(&a, 100), UINT64_MAX / 2);
	assert_true(hist__percentile(&a, 34) > 2970000 && hist__percentile(&a, 34) < 3030000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_relative_error),
		cmocka_unit_test(test_small_exact_and_empty),
		cmocka_unit_test(test_merge_and_huge),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
