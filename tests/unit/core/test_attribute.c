// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Marker attribution on its own: keyed hits find their request by id, also when they come
 * before the key shows; unkeyed hits go to the one request that can own them (same thread
 * first), are counted ambiguous when several could, and the pending bound is counted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "attribute.h"

#define NREQ 3

static struct tt_request *reqs[NREQ];
static int nreqs;

static void each(void *src, attrib_each_fn fn, void *ud)
{
	for (int i = 0; i < nreqs; i++)
		fn(ud, reqs[i]);
}

static struct tt_request *req(uint32_t pid, uint32_t io_tid, const char *id)
{
	struct tt_request *r = request__new();

	r->pid = pid;
	r->io_tid = io_tid;
	r->t_start_ns = 1;
	snprintf(r->request_id, sizeof(r->request_id), "%s", id);
	reqs[nreqs++] = r;
	return r;
}

static struct tt_marker_ev hit(uint16_t marker, uint32_t pid, uint32_t tid, uint64_t ts,
			       const char *key)
{
	struct tt_marker_ev e = {
		.h = { .ts = ts, .tgid = pid, .tid = tid, .type = TT_EV_MARKER, .size = sizeof(e) },
		.marker = marker,
	};

	if (key) {
		e.key_kind = TT_KEY_STR;
		snprintf(e.key_str, sizeof(e.key_str), "%s", key);
	}
	return e;
}

static int teardown(void **state)
{
	for (int i = 0; i < nreqs; i++)
		request__free(reqs[i]);
	nreqs = 0;
	return 0;
}

static void test_keyed(void **state)
{
	const uint8_t kinds[] = { MK_ADMIT, MK_TOKEN };
	struct attributor *a = attributor__new(each, NULL);
	struct tt_request *r = req(10, 11, "req-1");
	struct tt_marker_ev e;

	attributor__set_markers(a, kinds, 2);
	assert_true(attributor__active(a));
	/* an admit before the request's key is known: kept, applied when it shows */
	e = hit(0, 10, 20, 100, "req-1");
	attributor__hit(a, &e);
	assert_int_equal(r->t_admit_ns, 0);
	attributor__key_add(a, r, r->request_id);
	assert_int_equal(r->t_admit_ns, 100);
	/* tokens by key; the first token is the first token marker (no "first" marker) */
	e = hit(1, 10, 20, 200, "req-1");
	attributor__hit(a, &e);
	e = hit(1, 10, 20, 300, "req-1");
	attributor__hit(a, &e);
	assert_int_equal(r->nmade, 2);
	assert_int_equal(r->t_made_first_ns, 200);
	assert_int_equal(r->made_tid, 20);
	/* another process's key of the same text is not this request's */
	e = hit(1, 99, 20, 400, "req-1");
	attributor__hit(a, &e);
	assert_int_equal(r->nmade, 2);
	attributor__forget(a, r);
	e = hit(1, 10, 20, 500, "req-1");
	attributor__hit(a, &e);
	assert_int_equal(r->nmade, 2);
	assert_int_equal(attributor__stats(a)->matched, 3);
	assert_int_equal(attributor__stats(a)->markers, 5);
	attributor__free(a);
}

static void test_unkeyed(void **state)
{
	const uint8_t kinds[] = { MK_ADMIT };
	struct attributor *a = attributor__new(each, NULL);
	struct tt_request *r1 = req(10, 11, "a"), *r2 = req(10, 12, "b");
	struct tt_marker_ev e;

	attributor__set_markers(a, kinds, 1);
	/* same thread as r2's reader: r2's */
	e = hit(0, 10, 12, 100, NULL);
	attributor__hit(a, &e);
	assert_int_equal(r2->t_admit_ns, 100);
	/* only r1 is still in its admit phase: r1's */
	e = hit(0, 10, 30, 200, NULL);
	attributor__hit(a, &e);
	assert_int_equal(r1->t_admit_ns, 200);
	/* nobody can own it */
	e = hit(0, 10, 30, 300, NULL);
	attributor__hit(a, &e);
	assert_int_equal(attributor__stats(a)->unmatched, 1);
	/* two new ones could: ambiguous, both told, neither given */
	struct tt_request *r3 = req(10, 13, "c");
	r1->t_admit_ns = r2->t_admit_ns = 0;
	nreqs = 3;
	e = hit(0, 10, 30, 400, NULL);
	attributor__hit(a, &e);
	assert_int_equal(attributor__stats(a)->ambiguous, 1);
	assert_int_equal(r1->markers_ambiguous + r2->markers_ambiguous + r3->markers_ambiguous, 3);
	assert_int_equal(r3->t_admit_ns, 0);
	/* an index past the markers given is unmatched, not a crash */
	e = hit(7, 10, 30, 500, NULL);
	attributor__hit(a, &e);
	assert_int_equal(attributor__stats(a)->unmatched, 2);
	attributor__free(a);
}

/* Keys that never show: the pending ring is bounded, and what falls out is counted. */
static void test_pending_bound(void **state)
{
	const uint8_t kinds[] = { MK_TOKEN };
	struct attributor *a = attributor__new(each, NULL);
	struct tt_marker_ev e;
	char key[32];

	attributor__set_markers(a, kinds, 1);
	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		e = hit(0, 10, 20, i, key);
		attributor__hit(a, &e);
	}
	assert_int_equal(attributor__stats(a)->pending_evicted, 5000 - 4096);
	assert_int_equal(attributor__stats(a)->unmatched, 5000 - 4096);
	attributor__free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_keyed, teardown),
		cmocka_unit_test_teardown(test_unkeyed, teardown),
		cmocka_unit_test_teardown(test_pending_bound, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
