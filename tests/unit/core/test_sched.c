// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Interval accounting from scheduler records: the parts of a gap add up to it, whatever the
 * gap cuts through, whichever CPUs the records came from, however many threads serve it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "sched_book.h"
#include "sysnr.h"

#define MS	1000000ull

static void ev(struct sched_book *b, uint32_t tid, uint64_t ts, uint8_t kind, int runnable,
	       uint32_t sysnr, int in_send, uint32_t cpu)
{
	struct tt_sched_ev e = {
		.h = { .ts = ts, .tgid = 1, .tid = tid, .type = TT_EV_SCHED, .size = sizeof(e),
		       .cpu = cpu },
		.kind = kind,
		.runnable = runnable,
		.in_send = in_send,
		.state = runnable ? 0 : 1,
		.sysnr = sysnr,
		.kstack = 7,
		.ustack = 9,
	};

	sched_book__record(b, &e);
}

static uint64_t sum(const struct sched_account *a)
{
	uint64_t s = 0;

	for (int i = 0; i < STALL_NR; i++)
		s += a->part_ns[i];
	return s;
}

/* A gap that starts in the middle of a sleep and ends in the middle of running. */
static void test_mid_sleep(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	struct sched_account a;
	uint32_t tid = 10;

	ev(b, tid, 100 * MS, TT_SCHED_OUT, 0, TT_NR_clock_nanosleep, 0, 0);	/* sleeps */
	ev(b, tid, 400 * MS, TT_SCHED_WAKE, 0, 0, 0, 0);
	ev(b, tid, 410 * MS, TT_SCHED_IN, 0, 0, 0, 0);
	sched_book__account(b, &tid, 1, 200 * MS, 450 * MS, &a);
	assert_int_equal(a.part_ns[STALL_SLEEP], 200 * MS);	/* 200..400 */
	assert_int_equal(a.part_ns[STALL_RUNQ], 10 * MS);	/* 400..410 */
	assert_int_equal(a.part_ns[STALL_ONCPU], 40 * MS);	/* 410..450 */
	assert_int_equal(sum(&a), 250 * MS);
	/* the longest block is the sleep, cut to the gap, with its stacks */
	assert_int_equal(a.longest_ns, 200 * MS);
	assert_int_equal(a.longest_cause, STALL_SLEEP);
	assert_int_equal(a.kstack, 7);
	assert_int_equal(a.ustack, 9);
	/* before the first record it was on CPU: it switched out */
	sched_book__account(b, &tid, 1, 50 * MS, 150 * MS, &a);
	assert_int_equal(a.part_ns[STALL_ONCPU], 50 * MS);
	assert_int_equal(a.part_ns[STALL_SLEEP], 50 * MS);
	sched_book__free(b);
}

/*
 * A thread woken on another CPU: its records reach the ring buffer out of order. The
 * timeline is the same as if they had come in order.
 */
static void test_migration_out_of_order(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	struct sched_account a;
	uint32_t tid = 11;

	ev(b, tid, 100 * MS, TT_SCHED_OUT, 0, TT_NR_futex, 0, 0);
	ev(b, tid, 300 * MS, TT_SCHED_IN, 0, 0, 0, 1);		/* CPU 1's record first */
	ev(b, tid, 250 * MS, TT_SCHED_WAKE, 0, 0, 0, 0);	/* ... the waker's, on CPU 0, late */
	ev(b, tid, 350 * MS, TT_SCHED_OUT, 1, 0, 0, 1);		/* preempted */
	ev(b, tid, 360 * MS, TT_SCHED_IN, 0, 0, 0, 0);		/* back on CPU 0 */
	sched_book__account(b, &tid, 1, 100 * MS, 400 * MS, &a);
	assert_int_equal(a.part_ns[STALL_LOCK], 150 * MS);
	assert_int_equal(a.part_ns[STALL_RUNQ], 50 * MS + 10 * MS);
	assert_int_equal(a.part_ns[STALL_ONCPU], 50 * MS + 40 * MS);
	assert_int_equal(sum(&a), 300 * MS);
	sched_book__free(b);
}

/*
 * Two threads serve one stream: while either computes the stream is being worked on; when
 * both wait, the first thread's reason names the wait.
 */
static void test_several_threads(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	struct sched_account a;
	uint32_t front = 20, engine = 21, tids[2] = { front, engine };

	ev(b, front, 100 * MS, TT_SCHED_OUT, 0, TT_NR_futex, 0, 0);	/* waits for tokens */
	ev(b, engine, 100 * MS, TT_SCHED_IN, 0, 0, 0, 1);		/* computes */
	ev(b, engine, 250 * MS, TT_SCHED_OUT, 0, TT_NR_nanosleep, 0, 1);
	ev(b, engine, 300 * MS, TT_SCHED_WAKE, 0, 0, 0, 1);
	ev(b, engine, 320 * MS, TT_SCHED_IN, 0, 0, 0, 1);
	ev(b, engine, 330 * MS, TT_SCHED_OUT, 0, TT_NR_nanosleep, 0, 1);
	ev(b, front, 330 * MS, TT_SCHED_WAKE, 0, 0, 0, 0);
	ev(b, front, 335 * MS, TT_SCHED_IN, 0, 0, 0, 0);
	sched_book__account(b, tids, 2, 100 * MS, 340 * MS, &a);
	assert_int_equal(a.part_ns[STALL_ONCPU], 150 * MS + 10 * MS + 5 * MS);
	assert_int_equal(a.part_ns[STALL_LOCK], 50 * MS);	/* both off CPU: the front's futex */
	assert_int_equal(a.part_ns[STALL_RUNQ], 20 * MS + 5 * MS);
	assert_int_equal(sum(&a), 240 * MS);
	/* the longest block is the first thread's */
	assert_int_equal(a.longest_cause, STALL_LOCK);
	assert_int_equal(a.longest_ns, 230 * MS);
	/* the engine first: the same instants, its reason for the wait */
	tids[0] = engine;
	tids[1] = front;
	sched_book__account(b, tids, 2, 100 * MS, 340 * MS, &a);
	assert_int_equal(a.part_ns[STALL_SLEEP], 50 * MS);
	sched_book__free(b);
}

static void test_unknown_and_hints(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	struct sched_account a;
	uint32_t tid = 30, none = 31;

	/* a thread with no records at all: unknown, all of it */
	sched_book__account(b, &none, 1, 0, 10 * MS, &a);
	assert_int_equal(a.part_ns[STALL_UNKNOWN], 10 * MS);
	/* a thread only seen sending: it runs (a spin without a single switch) */
	sched_book__oncpu(b, tid, 100 * MS);
	sched_book__oncpu(b, tid, 200 * MS);
	sched_book__account(b, &tid, 1, 100 * MS, 200 * MS, &a);
	assert_int_equal(a.part_ns[STALL_ONCPU], 100 * MS);
	/* a wakeup while it still runs (it had not gone to sleep yet) changes nothing */
	ev(b, tid, 250 * MS, TT_SCHED_WAKE, 0, 0, 0, 0);
	sched_book__account(b, &tid, 1, 200 * MS, 300 * MS, &a);
	assert_int_equal(a.part_ns[STALL_ONCPU], 100 * MS);
	sched_book__free(b);
}

static void test_causes(void **state)
{
	assert_int_equal(sched_block_cause(TT_NR_futex, 1, 0), STALL_LOCK);
	assert_int_equal(sched_block_cause(TT_NR_epoll_wait, 1, 0), STALL_POLL);
	assert_int_equal(sched_block_cause(TT_NR_clock_nanosleep, 1, 0), STALL_SLEEP);
	assert_int_equal(sched_block_cause(TT_NR_write, 1, 1), STALL_SEND);
	assert_int_equal(sched_block_cause(-1, 2, 0), STALL_IO);	/* D state: a page fault */
	assert_int_equal(sched_block_cause(TT_NR_sendto, 1, 0), STALL_BLOCKED);
}

/* Old history goes, the state it left stays; before it, unknown. */
static void test_pruning(void **state)
{
	struct sched_book *b = sched_book__new(1000 * MS);
	struct sched_account a;
	uint32_t tid = 40;

	ev(b, tid, 100 * MS, TT_SCHED_OUT, 0, TT_NR_futex, 0, 0);
	ev(b, tid, 200 * MS, TT_SCHED_WAKE, 0, 0, 0, 0);
	ev(b, tid, 210 * MS, TT_SCHED_IN, 0, 0, 0, 0);
	ev(b, tid, 5000 * MS, TT_SCHED_OUT, 0, TT_NR_futex, 0, 0);
	ev(b, tid, 5100 * MS, TT_SCHED_WAKE, 0, 0, 0, 0);
	sched_book__account(b, &tid, 1, 4000 * MS, 5000 * MS, &a);
	assert_int_equal(a.part_ns[STALL_ONCPU], 1000 * MS);
	sched_book__account(b, &tid, 1, 0, 100 * MS, &a);
	assert_int_equal(a.part_ns[STALL_UNKNOWN], 100 * MS);
	sched_book__free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mid_sleep),
		cmocka_unit_test(test_migration_out_of_order),
		cmocka_unit_test(test_several_threads),
		cmocka_unit_test(test_unknown_and_hints),
		cmocka_unit_test(test_causes),
		cmocka_unit_test(test_pruning),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
