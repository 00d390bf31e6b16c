// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Stalls: which gaps count (the adaptive rule and a fixed threshold), and how one is
 * explained: the parts add up to the gap, the cause is the largest part, the engine is
 * blamed first when token markers say the token was made late, TCP trouble inside the gap
 * (and only inside it) is reported.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "sched_book.h"
#include "stall.h"
#include "sysnr.h"

#define MS	1000000ull

static void sched(struct sched_book *b, uint32_t tid, uint64_t ts, uint8_t kind, uint32_t sysnr)
{
	struct tt_sched_ev e = {
		.h = { .ts = ts, .tgid = 1, .tid = tid, .type = TT_EV_SCHED, .size = sizeof(e) },
		.kind = kind,
		.state = 1,
		.sysnr = sysnr,
		.kstack = -1,
		.ustack = 3,
	};

	sched_book__record(b, &e);
}

static struct tt_request *stream(const uint64_t *ts, int n)
{
	struct tt_request *r = request__new();

	for (int i = 0; i < n; i++)
		assert_int_equal(request__add_chunk(r, ts[i]), 0);
	r->pid = 1;
	return r;
}

static void test_threshold(void **state)
{
	uint64_t ts[40];
	struct tt_request *r;

	/* steady 10 ms gaps: 5 x the median is under the floor, the floor rules */
	for (int i = 0; i < 40; i++)
		ts[i] = i * 10 * MS;
	r = stream(ts, 40);
	assert_int_equal(stall__threshold(r, 0), STALL_FLOOR_NS);
	assert_int_equal(stall__threshold(r, 7 * MS), 7 * MS);
	request__free(r);
	/* 20 ms gaps: 100 ms; only the last STALL_WINDOW gaps count */
	for (int i = 0; i < 40; i++)
		ts[i] = (i < 5 ? i * 1 : 5 + (i - 5) * 20) * MS;
	r = stream(ts, 40);
	assert_int_equal(stall__threshold(r, 0), 5 * 20 * MS);
	request__free(r);
	/* no gap yet */
	r = stream(ts, 1);
	assert_int_equal(stall__threshold(r, 0), STALL_FLOOR_NS);
	request__free(r);
}

static char stack_seen[64];

static bool stack_str(void *ud, uint32_t pid, int32_t k, int32_t u, char *buf, size_t sz)
{
	snprintf(buf, sz, "stack-%d-%d", k, u);
	snprintf(stack_seen, sizeof(stack_seen), "%s", buf);
	return true;
}

/* The sender slept through the gap: the parts add up, sleep is the cause, its stack named. */
static void test_explain_sleep(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t ts[] = { 0, 10 * MS, 20 * MS };
	struct tt_request *r = stream(ts, 3);
	uint64_t retrans[] = { 5 * MS, 100 * MS, 400 * MS };
	struct stall_net net = { .retrans = retrans, .nretrans = 3, .zw_from = 150 * MS,
				 .zw_to = 160 * MS };
	struct tt_stall *st;
	uint64_t sum = 0;

	sched(b, 5, 30 * MS, TT_SCHED_OUT, TT_NR_clock_nanosleep);
	sched(b, 5, 300 * MS, TT_SCHED_WAKE, 0);
	sched(b, 5, 302 * MS, TT_SCHED_IN, 0);
	assert_int_equal(stall__explain(r, b, 5, 20 * MS, 320 * MS, &net, stack_str, NULL), 0);
	assert_int_equal(r->nstalls, 1);
	st = &r->stalls[0];
	assert_int_equal(st->after_chunk, 2);
	for (int i = 0; i < STALL_NR; i++)
		sum += st->part_ns[i];
	assert_int_equal(sum, 300 * MS);
	assert_int_equal(st->cause, STALL_SLEEP);
	assert_int_equal(st->part_ns[STALL_SLEEP], 270 * MS);
	assert_int_equal(st->part_ns[STALL_RUNQ], 2 * MS);
	assert_string_equal(st->stack, "stack--1-3");
	/* one retransmit inside [20, 320], a zero-window spell inside it */
	assert_int_equal(st->retransmits, 1);
	assert_true(st->zero_window);
	assert_int_equal(st->engine_late, -1);	/* no token markers */
	request__free(r);
	sched_book__free(b);
}

/*
 * With token markers saying the token was made late, the engine's thread is accounted
 * first: the front end idled in epoll, the engine computed; the cause is the engine's.
 */
static void test_explain_engine_first(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t ts[] = { 0, 10 * MS };
	struct tt_request *r = stream(ts, 2);
	struct tt_stall *st;

	request__add_made(r, 0);
	request__add_made(r, 9 * MS);
	request__add_made(r, 300 * MS);	/* token 2, made late */
	r->made_tid = 7;
	/* front end (tid 5) waits in epoll from 10 ms; the engine (7) runs throughout */
	sched(b, 5, 11 * MS, TT_SCHED_OUT, TT_NR_epoll_wait);
	sched(b, 5, 301 * MS, TT_SCHED_WAKE, 0);
	sched(b, 5, 301 * MS, TT_SCHED_IN, 0);
	sched_book__oncpu(b, 7, 10 * MS);
	sched_book__oncpu(b, 7, 300 * MS);
	assert_int_equal(stall__explain(r, b, 5, 10 * MS, 302 * MS, NULL, NULL, NULL), 0);
	st = &r->stalls[0];
	assert_int_equal(st->engine_late, 1);
	assert_int_equal(st->cause, STALL_ONCPU);
	assert_false(st->zero_window);
	assert_int_equal(st->retransmits, 0);
	request__free(r);
	sched_book__free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threshold),
		cmocka_unit_test(test_explain_sleep),
		cmocka_unit_test(test_explain_engine_first),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
