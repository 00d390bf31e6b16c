// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The hash table against a plain array: whatever order puts and deletes come in (clusters
 * that wrap around the end of the table, deletes inside them, growth in between), every key
 * finds its value, walks see each entry once, and the count agrees.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include "hmap.h"

#define KEYS	2048

static uint64_t rng = 88172645463325252ull;

static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* the reference: value (an index + 1, as a pointer) by key index, 0 when absent */
static uintptr_t ref[KEYS];
static uint64_t keys[KEYS];

static void check_all(const struct hmap *m)
{
	size_t n = 0, it = 0, seen = 0;
	uint64_t k;
	void *v;

	for (size_t i = 0; i < KEYS; i++) {
		assert_ptr_equal(hmap__get(m, keys[i]), (void *)ref[i]);
		n += ref[i] != 0;
	}
	assert_int_equal(hmap__count(m), n);
	while (hmap__next(m, &it, &k, &v)) {
		size_t i = (uintptr_t)v - 1;

		assert_true(i < KEYS);
		assert_true(keys[i] == k);
		assert_true(ref[i] == (uintptr_t)v);
		seen++;
	}
	assert_int_equal(seen, n);
	assert_false(hmap__next(m, &it, &k, &v));
}

static void random_ops(uint64_t (*key_of)(size_t), size_t ops)
{
	struct hmap *m = hmap__new(0);

	assert_non_null(m);
	for (size_t i = 0; i < KEYS; i++) {
		keys[i] = key_of(i);
		ref[i] = 0;
	}
	for (size_t op = 0; op < ops; op++) {
		size_t i = xorshift() % KEYS;
		uint64_t r = xorshift() % 3;

		if (r < 2) {
			assert_int_equal(hmap__put(m, keys[i], (void *)(uintptr_t)(i + 1)), 0);
			ref[i] = i + 1;
		} else {
			assert_ptr_equal(hmap__del(m, keys[i]), (void *)ref[i]);
			ref[i] = 0;
		}
		if (op % 4096 == 0)
			check_all(m);
	}
	check_all(m);
	/* empty it: every delete finds its entry, nothing is left behind */
	for (size_t i = 0; i < KEYS; i++) {
		assert_ptr_equal(hmap__del(m, keys[i]), (void *)ref[i]);
		ref[i] = 0;
	}
	check_all(m);
	hmap__free(m);
}

static uint64_t key_seq(size_t i)
{
	return i;			/* 0 included: any key is a key */
}

static uint64_t key_sparse(size_t i)
{
	return 0xffff888000000000ull + ((uint64_t)i << 11);	/* sockets: aligned addresses */
}

static uint64_t key_high(size_t i)
{
	return UINT64_MAX - i;
}

static void test_random_seq(void **state)
{
	random_ops(key_seq, 200000);
}

static void test_random_sparse(void **state)
{
	random_ops(key_sparse, 200000);
}

static void test_random_high(void **state)
{
	random_ops(key_high, 200000);
}

static void test_basics(void **state)
{
	struct hmap *m = hmap__new(100);
	int a, b;

	assert_non_null(m);
	assert_null(hmap__get(m, 7));
	assert_null(hmap__del(m, 7));
	assert_int_equal(hmap__put(m, 7, NULL), -EINVAL);
	assert_int_equal(hmap__put(m, 7, &a), 0);
	assert_int_equal(hmap__put(m, 7, &b), 0);	/* replaced, not added */
	assert_int_equal(hmap__count(m), 1);
	assert_ptr_equal(hmap__get(m, 7), &b);
	assert_ptr_equal(hmap__del(m, 7), &b);
	assert_int_equal(hmap__count(m), 0);
	hmap__free(m);
	hmap__free(NULL);
}

/* Grown from the smallest table to 100k entries: none lost on the way. */
static void test_growth(void **state)
{
	struct hmap *m = hmap__new(0);
	size_t n = 100000;

	for (size_t i = 0; i < n; i++)
		assert_int_equal(hmap__put(m, i * 0x9e3779b97f4a7c15ull, (void *)(i + 1)), 0);
	assert_int_equal(hmap__count(m), n);
	for (size_t i = 0; i < n; i++)
		assert_ptr_equal(hmap__get(m, i * 0x9e3779b97f4a7c15ull), (void *)(i + 1));
	for (size_t i = 0; i < n; i += 2)
		assert_ptr_equal(hmap__del(m, i * 0x9e3779b97f4a7c15ull), (void *)(i + 1));
	for (size_t i = 0; i < n; i++)
		assert_ptr_equal(hmap__get(m, i * 0x9e3779b97f4a7c15ull),
				 i % 2 ? (void *)(i + 1) : NULL);
	hmap__free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basics),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_random_seq),
		cmocka_unit_test(test_random_sparse),
		cmocka_unit_test(test_random_high),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
