// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Python sample timelines from canned TT_EV_PYSTACK records: which functions ran on a set of
 * threads in an interval and with what share, where a thread was blocked, and that bounded
 * memory drops the oldest and says so.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "pysamples.h"

#define MS	1000000ull

/* names as pysym would give them, from a made-up table of code objects */
static size_t fake_name(void *ud, uint32_t pid, uint64_t code, int32_t lasti, char *buf,
			size_t sz)
{
	int *calls = ud;
	int n;

	(*calls)++;
	n = snprintf(buf, sz, "f%llx (p%u.py:%d)", (unsigned long long)code, pid, 100 + lasti);
	return (size_t)n >= sz ? sz - 1 : (size_t)n;
}

static size_t mk(struct tt_pystack_ev *e, uint8_t kind, uint32_t pid, uint32_t tid,
		 uint64_t ts, int n, const uint64_t *codes, const int32_t *lastis)
{
	memset(e, 0, sizeof(*e));
	e->h.type = TT_EV_PYSTACK;
	e->h.tgid = pid;
	e->h.tid = tid;
	e->h.ts = ts;
	e->kind = kind;
	e->nframes = n;
	e->sysnr = (uint32_t)-1;
	for (int i = 0; i < n; i++) {
		e->frames[i].code = codes[i];
		e->frames[i].lasti = lastis ? lastis[i] : 0;
	}
	e->h.size = TT_PYSTACK_HDR_SIZE + n * sizeof(struct tt_py_frame);
	return e->h.size;
}

static void sample(struct pysamples *ps, uint32_t tid, uint64_t ts, uint64_t leaf, int32_t lasti,
		   uint8_t flags)
{
	uint64_t codes[3] = { leaf, 0xc0de, 0xba5e };
	int32_t lastis[3] = { lasti, 7, 9 };
	struct tt_pystack_ev e;
	size_t sz = mk(&e, TT_PY_SAMPLE, 50, tid, ts, 3, codes, lastis);

	e.flags = flags;
	pysamples__record(ps, &e, sz);
}

static void test_top(void **state)
{
	struct pysamples *ps = pysamples__new(0, 0, 0);
	struct py_top top[4];
	uint32_t tids[] = { 51, 52, 51 }, total;
	int calls = 0, n;

	/* in [100ms, 200ms]: thread 51 in 0xa 6 times (4 at lasti 2, 2 at 5), 0xb twice; */
	for (int i = 0; i < 4; i++)
		sample(ps, 51, (100 + i) * MS, 0xa, 2, TT_PYF_HOLDS_GIL);
	sample(ps, 51, 110 * MS, 0xa, 5, TT_PYF_KERNEL);
	sample(ps, 51, 111 * MS, 0xa, 5, TT_PYF_HOLDS_GIL);
	sample(ps, 51, 150 * MS, 0xb, 0, TT_PYF_HOLDS_GIL);
	sample(ps, 51, 200 * MS, 0xb, 0, TT_PYF_HOLDS_GIL);
	/* thread 52 once in 0xb, and once with no Python frame at all */
	sample(ps, 52, 120 * MS, 0xb, 1, TT_PYF_HOLDS_GIL);
	{
		struct tt_pystack_ev e;
		size_t sz = mk(&e, TT_PY_SAMPLE, 50, 52, 130 * MS, 0, NULL, NULL);

		e.flags = TT_PYF_NO_TSTATE;
		pysamples__record(ps, &e, sz);
	}
	/* outside the interval, and another thread: not counted */
	sample(ps, 51, 99 * MS, 0xb, 0, 0);
	sample(ps, 51, 201 * MS, 0xb, 0, 0);
	sample(ps, 53, 150 * MS, 0xb, 0, 0);

	n = pysamples__top(ps, tids, 3, 100 * MS, 200 * MS, top, 4, &total, fake_name, &calls);
	assert_int_equal(total, 10);	/* 51 listed twice counts once */
	assert_int_equal(n, 3);
	assert_int_equal(top[0].code, 0xa);
	assert_int_equal(top[0].samples, 6);
	assert_int_equal(top[0].lasti, 2);	/* its busiest instruction */
	assert_int_equal(top[0].kernel, 1);
	assert_int_equal(top[0].no_gil, 1);
	assert_true(top[0].share > 0.59 && top[0].share < 0.61);
	assert_string_equal(top[0].name, "fa (p50.py:102)");
	assert_string_equal(top[0].stack,
			    "fa (p50.py:102) <- fc0de (p50.py:107) <- fba5e (p50.py:109)");
	assert_int_equal(top[1].code, 0xb);
	assert_int_equal(top[1].samples, 3);
	assert_int_equal(top[2].code, 0);
	assert_int_equal(top[2].samples, 1);
	assert_string_equal(top[2].name, "(no Python frame)");
	/* names only for what is shown */
	calls = 0;
	n = pysamples__top(ps, tids, 3, 100 * MS, 200 * MS, top, 1, &total, fake_name, &calls);
	assert_int_equal(n, 1);
	assert_int_equal(calls, 1 + 3);

	/* an interval nothing ran in */
	n = pysamples__top(ps, tids, 3, 300 * MS, 400 * MS, top, 4, &total, fake_name, &calls);
	assert_int_equal(n, 0);
	assert_int_equal(total, 0);
	pysamples__free(ps);
}

static void test_blocked(void **state)
{
	struct pysamples *ps = pysamples__new(0, 0, 0);
	uint64_t codes[2] = { 0x5, 0x6 };
	int32_t zeros[2] = { 0, 0 };
	struct tt_pystack_ev e;
	struct py_blocked b;
	char buf[128];
	int calls = 0;
	size_t sz;

	sz = mk(&e, TT_PY_BLOCKED, 60, 61, 10 * MS, 2, codes, NULL);
	e.sysnr = 230;
	pysamples__record(ps, &e, sz);
	sz = mk(&e, TT_PY_BLOCKED, 60, 61, 20 * MS, 1, codes + 1, NULL);
	e.sysnr = 202;
	e.futex = 0x7000;
	e.gil = TT_PY_GIL_WAIT;
	e.gil_holder = 62;
	pysamples__record(ps, &e, sz);

	/* the switch-out at 20 ms, asked about at 25 ms: the GIL wait */
	assert_int_equal(pysamples__blocked_at(ps, 61, 20 * MS, 25 * MS, &b), 0);
	assert_int_equal(b.gil, TT_PY_GIL_WAIT);
	assert_int_equal(b.gil_holder, 62);
	assert_int_equal(b.futex, 0x7000);
	assert_int_equal(b.nframes, 1);
	assert_int_equal(b.code[0], 0x6);
	/* the one at 10 ms, and its frames */
	assert_int_equal(pysamples__blocked_at(ps, 61, 10 * MS, 19 * MS, &b), 0);
	assert_int_equal(b.sysnr, 230);
	assert_int_equal(b.gil, TT_PY_GIL_NONE);
	pysamples__format(b.pid, b.code, b.lasti, b.nframes, fake_name, &calls, buf, sizeof(buf));
	assert_string_equal(buf, "f5 (p60.py:100) <- f6 (p60.py:100)");
	/* nothing in the window, or an unknown thread */
	assert_int_equal(pysamples__blocked_at(ps, 61, 21 * MS, 30 * MS, &b), -ENOENT);
	assert_int_equal(pysamples__blocked_at(ps, 99, 0, 30 * MS, &b), -ENOENT);
	/* a short buffer is cut, never overrun */
	pysamples__format(60, codes, zeros, 2, fake_name, &calls, buf, 12);
	assert_int_equal(strlen(buf), 11);
	pysamples__free(ps);
}

/* What a stall's text says: the functions that ran, and a block, on the GIL or not. */
static void test_explain(void **state)
{
	struct pysamples *ps = pysamples__new(0, 0, 0);
	uint32_t tids[] = { 81 };
	uint64_t wcode = 0xe;
	struct tt_pystack_ev e;
	char buf[256];
	int calls = 0;
	size_t sz;

	for (int i = 0; i < 3; i++)
		sample(ps, 81, (10 + i) * MS, 0xa, 1, TT_PYF_HOLDS_GIL);
	sample(ps, 81, 13 * MS, 0xb, 2, TT_PYF_HOLDS_GIL);
	/* 82 waits for the GIL from 20 ms on, held by 83, which runs 0xc meanwhile */
	sz = mk(&e, TT_PY_BLOCKED, 50, 82, 20 * MS, 1, &wcode, NULL);
	e.sysnr = 202;
	e.gil = TT_PY_GIL_WAIT;
	e.gil_holder = 83;
	pysamples__record(ps, &e, sz);
	sample(ps, 83, 25 * MS, 0xc, 3, TT_PYF_HOLDS_GIL);
	sample(ps, 83, 15 * MS, 0xd, 3, TT_PYF_HOLDS_GIL);	/* before the wait: not told */

	pysamples__explain(ps, &(struct py_ask){ tids, 1, 0, 30 * MS, 82, 20 * MS, fake_name,
						 &calls }, buf, sizeof(buf));
	assert_string_equal(buf, "ran: fa (p50.py:101) 75%, fb (p50.py:102) 25%; thread 82 "
			    "waiting for the GIL in fe (p50.py:100), held by thread 83, running "
			    "fc (p50.py:103)");
	/* a plain block; and a switch-out outside [t_out, t1] is not this block */
	sz = mk(&e, TT_PY_BLOCKED, 50, 84, 40 * MS, 1, &wcode, NULL);
	e.sysnr = 230;
	pysamples__record(ps, &e, sz);
	pysamples__explain(ps, &(struct py_ask){ tids, 1, 35 * MS, 50 * MS, 84, 40 * MS, fake_name,
						 &calls }, buf, sizeof(buf));
	assert_string_equal(buf, "thread 84 blocked in fe (p50.py:100)");
	assert_int_equal(pysamples__explain(ps, &(struct py_ask){ tids, 1, 35 * MS, 50 * MS, 84,
								  41 * MS, fake_name, &calls },
					    buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	/* cut to fit, terminated */
	pysamples__explain(ps, &(struct py_ask){ tids, 1, 0, 30 * MS, 82, 20 * MS, fake_name,
						 &calls }, buf, 20);
	assert_int_equal(strlen(buf), 19);
	pysamples__free(ps);
}

static void test_bounds(void **state)
{
	struct pysamples *ps = pysamples__new(2, 100, 4);
	struct pysamples_counts c;
	struct py_top top[2];
	uint64_t code = 0xa;
	struct tt_pystack_ev e;
	uint32_t tid = 71, total;
	struct py_blocked b;
	size_t sz;

	/*
	 * 250 samples into a ring of 100: the oldest 150 dropped and counted. After every push,
	 * each sample still kept is there once, with its own time, as the ring grows and wraps.
	 */
	for (int i = 0; i < 250; i++) {
		sample(ps, tid, (uint64_t)(i + 1) * MS, 0xa, i, 0);
		for (int k = i; k >= 0 && k > i - 100; k -= 7) {
			pysamples__top(ps, &tid, 1, (k + 1) * MS, (k + 1) * MS, top, 2, &total,
				       NULL, NULL);
			assert_int_equal(total, 1);
			assert_int_equal(top[0].lasti, k);
		}
		pysamples__top(ps, &tid, 1, 0, 1000 * MS, top, 2, &total, NULL, NULL);
		assert_int_equal(total, i < 100 ? i + 1 : 100);
	}
	pysamples__counts(ps, &c);
	assert_int_equal(c.samples, 250);
	assert_int_equal(c.dropped, 150);
	pysamples__top(ps, &tid, 1, 0, 150 * MS, top, 2, &total, NULL, NULL);
	assert_int_equal(total, 0);
	/* without a name callback, the code address */
	pysamples__top(ps, &tid, 1, 151 * MS, 151 * MS, top, 2, &total, NULL, NULL);
	assert_string_equal(top[0].name, "0xa+150");

	for (int i = 0; i < 6; i++) {
		sz = mk(&e, TT_PY_BLOCKED, 70, tid, (uint64_t)i * MS, 1, &code, NULL);
		pysamples__record(ps, &e, sz);
	}
	assert_int_equal(pysamples__blocked_at(ps, tid, 0, 1 * MS, &b), -ENOENT);
	assert_int_equal(pysamples__blocked_at(ps, tid, 0, 2 * MS, &b), 0);

	/* a third thread: the one heard from longest ago (72, at 5 ms) is forgotten */
	sample(ps, 72, 5 * MS, 0xa, 0, 0);
	sample(ps, 73, 6 * MS, 0xa, 0, 0);
	pysamples__counts(ps, &c);
	assert_int_equal(c.threads_dropped, 1);
	tid = 72;
	pysamples__top(ps, &tid, 1, 0, 1000 * MS, top, 2, &total, NULL, NULL);
	assert_int_equal(total, 0);
	tid = 71;
	pysamples__top(ps, &tid, 1, 0, 1000 * MS, top, 2, &total, NULL, NULL);
	assert_int_equal(total, 100);
	pysamples__free(ps);
}

static void test_bad_records(void **state)
{
	struct pysamples *ps = pysamples__new(0, 0, 0);
	uint64_t codes[2] = { 1, 2 };
	struct pysamples_counts c;
	struct tt_pystack_ev e;
	size_t sz;

	sz = mk(&e, TT_PY_SAMPLE, 1, 2, 3, 2, codes, NULL);
	pysamples__record(ps, &e, sz - 1);		/* cut short */
	pysamples__record(ps, &e, TT_PYSTACK_HDR_SIZE - 1);
	e.nframes = TT_PY_DEPTH + 1;			/* more frames than a record holds */
	pysamples__record(ps, &e, sizeof(e));
	sz = mk(&e, 9, 1, 2, 3, 2, codes, NULL);	/* unknown kind */
	pysamples__record(ps, &e, sz);
	sz = mk(&e, TT_PY_SAMPLE, 1, 2, 3, 2, codes, NULL);
	e.h.type = TT_EV_SCHED;
	pysamples__record(ps, &e, sz);
	pysamples__counts(ps, &c);
	assert_int_equal(c.bad, 5);
	assert_int_equal(c.samples, 0);
	/* the full depth is fine, and only PYSAMPLES_KEEP frames are kept */
	{
		uint64_t many[TT_PY_DEPTH];
		struct py_blocked b;

		for (int i = 0; i < TT_PY_DEPTH; i++)
			many[i] = 0x100 + i;
		sz = mk(&e, TT_PY_BLOCKED, 1, 2, 3, TT_PY_DEPTH, many, NULL);
		pysamples__record(ps, &e, sz);
		assert_int_equal(pysamples__blocked_at(ps, 2, 0, 10, &b), 0);
		assert_int_equal(b.nframes, PYSAMPLES_KEEP);
		assert_int_equal(b.depth, TT_PY_DEPTH);
		assert_int_equal(b.code[PYSAMPLES_KEEP - 1], 0x100 + PYSAMPLES_KEEP - 1);
	}
	pysamples__free(ps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_top),
		cmocka_unit_test(test_blocked),
		cmocka_unit_test(test_explain),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_bad_records),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
