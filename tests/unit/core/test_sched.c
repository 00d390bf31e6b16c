// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Threads' time from the kernel's summed counters and long spans: the parts of an interval
 * add up to it whatever it cuts through, records arriving out of order change nothing, a
 * traced waker's counters are known at its wakeups, and threads that are gone are forgotten.
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

static void snap(struct sched_book *b, uint32_t tid, uint64_t ts, const uint64_t *cum)
{
	struct tt_sched_ev e = {
		.h = { .ts = ts, .tgid = 1, .tid = tid, .type = TT_EV_SCHED, .size = sizeof(e) },
		.kind = TT_SCHED_SNAP,
	};

	memcpy(e.cum, cum, sizeof(e.cum));
	sched_book__record(b, &e);
}

static struct tt_sched_ev span(uint32_t tid, uint64_t out, uint64_t wake, uint64_t in,
			       uint32_t sysnr, const uint64_t *cum)
{
	struct tt_sched_ev e = {
		.h = { .ts = in, .tgid = 1, .tid = tid, .type = TT_EV_SCHED, .size = sizeof(e) },
		.kind = TT_SCHED_SPAN,
		.state = 1,
		.sysnr = sysnr,
		.t_out = out,
		.t_wake = wake,
		.t_in = in,
	};

	if (cum)
		memcpy(e.cum, cum, sizeof(e.cum));
	return e;
}

static uint64_t sum(const uint64_t *p)
{
	uint64_t s = 0;

	for (int i = 0; i < STALL_NR; i++)
		s += p[i];
	return s;
}

/* A gap that starts in the middle of a sleep and ends in the middle of running. */
static void test_mid_sleep(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t z[TT_T_NR] = {}, p[STALL_NR];
	struct tt_sched_ev e;

	snap(b, 10, 50 * MS, z);
	/* on CPU 50..100, asleep 100..400, runnable 400..410 */
	uint64_t c[TT_T_NR] = { [TT_T_ONCPU] = 50 * MS };
	e = span(10, 100 * MS, 400 * MS, 410 * MS, TT_NR_clock_nanosleep, c);
	sched_book__record(b, &e);
	assert_true(sched_book__account(b, 10, 200 * MS, 450 * MS, p));
	assert_int_equal(p[STALL_SLEEP], 200 * MS);	/* 200..400 */
	assert_int_equal(p[STALL_RUNQ], 10 * MS);	/* 400..410 */
	assert_int_equal(p[STALL_UNKNOWN], 40 * MS);	/* 410..450: past the last sample */
	assert_int_equal(sum(p), 250 * MS);
	/* a send at 460 carried its counters: on CPU since 410 */
	__u64 c2[TT_T_NR] = { [TT_T_ONCPU] = 100 * MS, [TT_T_SLEEP] = 300 * MS,
				 [TT_T_RUNQ] = 10 * MS };
	sched_book__counters(b, 10, 1, 460 * MS, c2);
	assert_true(sched_book__account(b, 10, 200 * MS, 450 * MS, p));
	assert_int_equal(p[STALL_ONCPU], 40 * MS);
	assert_int_equal(p[STALL_UNKNOWN], 0);
	/* before the first sample: unknown */
	assert_true(sched_book__account(b, 10, 0, 150 * MS, p));
	assert_int_equal(p[STALL_UNKNOWN], 50 * MS);
	assert_int_equal(p[STALL_ONCPU], 50 * MS);
	assert_int_equal(p[STALL_SLEEP], 50 * MS);
	assert_int_equal(sum(p), 150 * MS);
	/* a thread never heard of */
	assert_false(sched_book__account(b, 99, 0, 10, p));
	sched_book__free(b);
}

/* Between two snapshots, time is shared as the counters grew. */
static void test_interpolation(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t a[TT_T_NR] = {}, z[TT_T_NR] = { [TT_T_ONCPU] = 60 * MS, [TT_T_LOCK] = 40 * MS };
	uint64_t p[STALL_NR];

	snap(b, 11, 1000 * MS, a);
	snap(b, 11, 1100 * MS, z);
	assert_true(sched_book__account(b, 11, 1000 * MS, 1050 * MS, p));
	assert_int_equal(p[STALL_ONCPU], 30 * MS);
	assert_int_equal(p[STALL_LOCK], 20 * MS);
	sched_book__free(b);
}

/*
 * Lazy hooks: a RESUME sample says the counters start again there, after a time the hooks
 * were off. What lies between it and the sample before is unknown, not shared out as the
 * counters grew; what follows it is known again.
 */
static void test_resume(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t a[TT_T_NR] = { [TT_T_ONCPU] = 10 * MS }, z[TT_T_NR] = {}, p[STALL_NR];
	struct tt_sched_ev r = {
		.h = { .ts = 1300 * MS, .tgid = 1, .tid = 13, .type = TT_EV_SCHED,
		       .size = sizeof(r) },
		.kind = TT_SCHED_RESUME,
	};

	memcpy(r.cum, a, sizeof(a));
	snap(b, 13, 1000 * MS, a);
	sched_book__record(b, &r);	/* off from 1000 to 1300: no switch seen */
	z[TT_T_ONCPU] = 10 * MS + 60 * MS;
	z[TT_T_SLEEP] = 40 * MS;
	snap(b, 13, 1400 * MS, z);
	/* a gap across the hooks' return: 200 ms unknown, then 100 ms as counted */
	assert_true(sched_book__account(b, 13, 1100 * MS, 1400 * MS, p));
	assert_int_equal(p[STALL_UNKNOWN], 200 * MS);
	assert_int_equal(p[STALL_ONCPU], 60 * MS);
	assert_int_equal(p[STALL_SLEEP], 40 * MS);
	assert_int_equal(sum(p), 300 * MS);
	/* wholly while they were off: unknown, not the next sample's growth */
	assert_true(sched_book__account(b, 13, 1050 * MS, 1250 * MS, p));
	assert_int_equal(p[STALL_UNKNOWN], 200 * MS);
	assert_int_equal(sum(p), 200 * MS);
	sched_book__free(b);
	/* the same as a SNAP: the growth is shared over the whole 400 ms, nothing unknown */
	b = sched_book__new(60000 * MS);
	snap(b, 13, 1000 * MS, a);
	snap(b, 13, 1300 * MS, a);
	snap(b, 13, 1400 * MS, z);
	assert_true(sched_book__account(b, 13, 1100 * MS, 1400 * MS, p));
	assert_int_equal(p[STALL_UNKNOWN], 0);
	sched_book__free(b);
}

/*
 * The lazy hooks came too late for a gap, or only at its end (issue 32: a stalled thread
 * holding a CPU the tracer's own threads waited for): the sends at both ends carried the
 * kernel's own counters, and they split the time the hooks missed; what no reading brackets
 * stays unknown.
 */
static void test_kernel_counters(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t a[TT_T_NR] = {}, z[TT_T_NR] = {}, p[STALL_NR];
	struct tt_kcnt k0 = { .exec = 500 * MS, .rd = 20 * MS, .nvcsw = 7 };
	struct tt_kcnt k1 = { .exec = 580 * MS, .rd = 24 * MS, .nvcsw = 8 };
	struct tt_sched_ev r = {
		.h = { .ts = 1095 * MS, .tgid = 1, .tid = 14, .type = TT_EV_SCHED,
		       .size = sizeof(r) },
		.kind = TT_SCHED_RESUME,
	};

	/* no hooks at all: 80 on CPU, 4 waiting, the rest off CPU (it switched out) */
	sched_book__kcounters(b, 14, 1, 1000 * MS, &k0);
	sched_book__kcounters(b, 14, 1, 1090 * MS, &k1);
	assert_true(sched_book__account(b, 14, 1000 * MS, 1090 * MS, p));
	assert_int_equal(p[STALL_ONCPU], 80 * MS);
	assert_int_equal(p[STALL_RUNQ], 4 * MS);
	assert_int_equal(p[STALL_BLOCKED], 6 * MS);
	assert_int_equal(p[STALL_UNKNOWN], 0);
	/* a window the readings only partly bracket: the rest is unknown */
	assert_true(sched_book__account(b, 14, 990 * MS, 1090 * MS, p));
	assert_int_equal(p[STALL_UNKNOWN], 10 * MS);
	assert_int_equal(sum(p), 100 * MS);
	/* never switched out of its own accord: what the CPU time leaves is still on CPU (a
	 * running thread's CPU time lags: here it did not grow at all) */
	sched_book__kcounters(b, 14, 1, 1092 * MS, &k1);
	assert_true(sched_book__account(b, 14, 1090 * MS, 1092 * MS, p));
	assert_int_equal(p[STALL_ONCPU], 2 * MS);
	/* the hooks came at 1095 (a hook's RESUME, with the counters then), then ran 5 ms */
	k1.exec = 585 * MS;
	memcpy(r.cum, a, sizeof(a));
	r.k = k1;
	sched_book__record(b, &r);
	z[TT_T_ONCPU] = 5 * MS;
	snap(b, 14, 1100 * MS, z);
	assert_true(sched_book__account(b, 14, 1000 * MS, 1100 * MS, p));
	assert_int_equal(p[STALL_ONCPU], 85 * MS + 5 * MS);
	assert_int_equal(p[STALL_RUNQ], 4 * MS);
	assert_int_equal(p[STALL_UNKNOWN], 0);
	assert_int_equal(sum(p), 100 * MS);
	sched_book__free(b);
}

/* Records of one thread from two CPUs can cross: the same account either way. */
static void test_out_of_order(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t z[TT_T_NR] = {}, c[TT_T_NR] = { [TT_T_ONCPU] = 100 * MS }, p[STALL_NR];
	struct tt_sched_ev e = span(12, 100 * MS, 300 * MS, 300 * MS, TT_NR_futex, c);

	uint64_t c2[TT_T_NR] = { [TT_T_ONCPU] = 200 * MS, [TT_T_LOCK] = 200 * MS };

	snap(b, 12, 400 * MS, c2);
	sched_book__record(b, &e);
	snap(b, 12, 0, z);
	assert_true(sched_book__account(b, 12, 0, 400 * MS, p));
	assert_int_equal(p[STALL_ONCPU], 200 * MS);
	assert_int_equal(p[STALL_LOCK], 200 * MS);
	sched_book__free(b);
}

/* A traced waker's counters come with the span of the thread it woke. */
static void test_waker_counters(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t z[TT_T_NR] = {}, p[STALL_NR];
	struct tt_sched_ev e = span(13, 100 * MS, 300 * MS, 301 * MS, TT_NR_epoll_wait, z);
	const struct sched_span *sp;

	/* the engine (tid 20) on CPU the whole time: its counters at 100 and at 300 */
	e.waker_tid = 20;
	e.waker_tgid = 2;
	e.waker_traced = 1;
	e.waker_cum[TT_T_ONCPU] = 500 * MS;
	sched_book__record(b, &e);
	e = span(13, 50 * MS, 100 * MS, 100 * MS, TT_NR_epoll_wait, z);
	e.waker_tid = 20;
	e.waker_tgid = 2;
	e.waker_traced = 1;
	e.waker_cum[TT_T_ONCPU] = 300 * MS;
	sched_book__record(b, &e);
	assert_true(sched_book__account(b, 20, 100 * MS, 300 * MS, p));
	assert_int_equal(p[STALL_ONCPU], 200 * MS);
	assert_int_equal(sched_book__pid_of(b, 20), 2);
	/* the waiting thread's longest wait in the window, and who ended it */
	sp = sched_book__longest_span(b, 13, 60 * MS, 290 * MS, 1u << STALL_POLL);
	assert_non_null(sp);
	assert_int_equal(sp->t_out, 100 * MS);
	assert_int_equal(sp->waker_tid, 20);
	assert_null(sched_book__longest_span(b, 13, 60 * MS, 290 * MS, 1u << STALL_LOCK));
	sched_book__free(b);
}

static void test_causes(void **state)
{
	assert_int_equal(sched_block_cause(TT_NR_futex, 1, 0), STALL_LOCK);
	assert_int_equal(sched_block_cause(TT_NR_clock_nanosleep, 1, 0), STALL_SLEEP);
	assert_int_equal(sched_block_cause(TT_NR_epoll_wait, 1, 0), STALL_POLL);
	assert_int_equal(sched_block_cause(TT_NR_read, 1, 0), STALL_IO);
	assert_int_equal(sched_block_cause(9999, 2, 0), STALL_IO);
	assert_int_equal(sched_block_cause(TT_NR_write, 1, 1), STALL_SEND);
	assert_int_equal(sched_block_cause(9999, 1, 0), STALL_BLOCKED);
}

/* Thread churn: threads not heard of for keep_ns go, and their memory with them. */
static void test_expire(void **state)
{
	struct sched_book *b = sched_book__new(1000 * MS);
	uint64_t z[TT_T_NR] = {};

	for (uint32_t tid = 100; tid < 5100; tid++)
		snap(b, tid, tid * MS, z);
	assert_int_equal(sched_book__threads(b), 5000);
	/* at 5100 ms: what was last heard of before 4100 ms goes */
	assert_int_equal(sched_book__expire(b, 5100 * MS), 4000);
	assert_int_equal(sched_book__threads(b), 1000);
	assert_int_equal(sched_book__expire(b, 100000 * MS), 1000);
	assert_int_equal(sched_book__threads(b), 0);
	sched_book__free(b);
}

/* An exited thread goes SCHED_EXITED_KEEP_NS after its exit, a live one only after keep_ns. */
static void test_exited(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t z[TT_T_NR] = {};

	(void)state;
	snap(b, 7, 1000 * MS, z);
	snap(b, 8, 1000 * MS, z);
	sched_book__exited(b, 7, 1500 * MS);
	sched_book__exited(b, 99, 1500 * MS);	/* never seen: nothing to forget */
	assert_int_equal(sched_book__expire(b, 1500 * MS + SCHED_EXITED_KEEP_NS), 0);
	assert_int_equal(sched_book__expire(b, 1501 * MS + SCHED_EXITED_KEEP_NS), 1);
	assert_int_equal(sched_book__pid_of(b, 7), 0);
	assert_int_equal(sched_book__threads(b), 1);
	/* tid 8 exits, and the tid goes to a new thread at once: that one is kept */
	sched_book__exited(b, 8, 2000 * MS);
	snap(b, 8, 2100 * MS, z);
	assert_int_equal(sched_book__expire(b, 2000 * MS + 2 * SCHED_EXITED_KEEP_NS), 0);
	assert_int_equal(sched_book__threads(b), 1);
	sched_book__free(b);
}

/* a thread on CPU all along, its counters sent every step_ns from 0 to n steps */
static void busy(struct sched_book *b, uint32_t tid, uint64_t n, uint64_t step_ns)
{
	__u64 cum[TT_T_NR] = {};

	for (uint64_t i = 1; i <= n; i++) {
		cum[TT_T_ONCPU] = i * step_ns;
		sched_book__counters(b, tid, 1, i * step_ns, cum);
	}
}

/* [t0, t1] of thread tid is all of one cause, and the parts add up to it */
static void assert_all(struct sched_book *b, uint32_t tid, uint64_t t0, uint64_t t1,
		       enum stall_cause cause)
{
	uint64_t p[STALL_NR];

	assert_true(sched_book__account(b, tid, t0, t1, p));
	assert_int_equal(p[cause], t1 - t0);
	assert_int_equal(sum(p), t1 - t0);
}

/*
 * History is kept for keep_ns, and at most a bounded number of samples a thread: a window
 * inside it is accounted exactly, one older than it is unknown, whichever bound binds.
 */
static void test_history(void **state)
{
	/* the time bound: 100 ms of a sample a ms */
	struct sched_book *b = sched_book__new(100 * MS);

	(void)state;
	busy(b, 5, 2000, MS);
	assert_all(b, 5, 1950 * MS, 1960 * MS, STALL_ONCPU);
	assert_all(b, 5, 1500 * MS, 1510 * MS, STALL_UNKNOWN);
	sched_book__free(b);

	/* the count bound (thousands of samples a thread): a minute at 10 a ms, a minute kept */
	b = sched_book__new(60000 * MS);
	busy(b, 6, 600000, MS / 10);
	assert_all(b, 6, 59900 * MS, 59905 * MS, STALL_ONCPU);
	assert_all(b, 6, 50000 * MS, 50005 * MS, STALL_UNKNOWN);
	sched_book__free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mid_sleep),
		cmocka_unit_test(test_interpolation),
		cmocka_unit_test(test_resume),
		cmocka_unit_test(test_kernel_counters),
		cmocka_unit_test(test_out_of_order),
		cmocka_unit_test(test_waker_counters),
		cmocka_unit_test(test_causes),
		cmocka_unit_test(test_expire),
		cmocka_unit_test(test_exited),
		cmocka_unit_test(test_history),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
