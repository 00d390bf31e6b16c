// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pyinfo against a process that only pretends to be CPython: this test defines _PyRuntime and
 * Py_Version itself and probes its own PID, so the refusals and the layout check run on any
 * machine, with no other Python installed: another version is refused in one line, a 3.11
 * that is not initialized says so, a layout that does not check out is refused, and a made-up
 * 3.11 runtime with a thread and two frames is walked the way the kernel walks it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "pyinfo.h"

/* what pyinfo looks for, as a CPython executable has them: data symbols */
volatile unsigned long Py_Version = 0x030c01f0;
unsigned char _PyRuntime[1024] __attribute__((aligned(64)));

static unsigned char interp[256] __attribute__((aligned(64)));
static unsigned char tstate[512] __attribute__((aligned(64)));
static unsigned char cframe[64] __attribute__((aligned(64)));
static unsigned char frames[2][128] __attribute__((aligned(64)));
static unsigned char code[2][256] __attribute__((aligned(64)));

static void put(void *base, unsigned int off, uint64_t v)
{
	memcpy((unsigned char *)base + off, &v, sizeof(v));
}

static void reset(void)
{
	memset(_PyRuntime, 0, sizeof(_PyRuntime));
	memset(interp, 0, sizeof(interp));
	memset(tstate, 0, sizeof(tstate));
	memset(cframe, 0, sizeof(cframe));
	memset(frames, 0, sizeof(frames));
}

static void test_other_version(void **state)
{
	struct tt_py_proc p;
	char why[256];

	reset();
	Py_Version = 0x030c01f0;
	assert_int_equal(pyinfo__probe(getpid(), &p, why, sizeof(why)), -ENOTSUP);
	printf("  %s\n", why);
	assert_non_null(strstr(why, "runs CPython 3.12.1"));
	assert_non_null(strstr(why, "only CPython 3.11 is supported"));
	assert_null(strchr(why, '\n'));
	Py_Version = 0x030b00c1;	/* 3.11.0rc1: not the layout of the final releases */
	assert_int_equal(pyinfo__probe(getpid(), &p, why, sizeof(why)), -ENOTSUP);
	assert_non_null(strstr(why, "3.11.0rc1"));
}

static void test_not_initialized(void **state)
{
	struct tt_py_proc p;
	char why[256];

	reset();
	Py_Version = 0x030b02f0;
	assert_int_equal(pyinfo__probe(getpid(), &p, why, sizeof(why)), -EAGAIN);
	printf("  %s\n", why);
	assert_non_null(strstr(why, "no thread state yet"));
}

static void test_layout_refused(void **state)
{
	const struct tt_py_offsets *o = pyinfo__offsets(0x030b02f0);
	struct tt_py_proc p;
	char why[256];

	reset();
	Py_Version = 0x030b02f0;
	put(_PyRuntime, o->rt_interp_head, (uintptr_t)interp);
	put(interp, o->interp_threads_head, (uintptr_t)tstate);
	/* the thread state does not point back at its interpreter: not the layout we know */
	put(tstate, o->ts_interp, (uintptr_t)cframe);
	put(tstate, o->ts_native_tid, gettid());
	assert_int_equal(pyinfo__probe(getpid(), &p, why, sizeof(why)), -ENOTSUP);
	printf("  %s\n", why);
	assert_non_null(strstr(why, "does not have the 3.11 layout"));
	/* ... nor does a native id that is none of the process's threads */
	put(tstate, o->ts_interp, (uintptr_t)interp);
	put(tstate, o->ts_native_tid, 0x7ffffff0);
	assert_int_equal(pyinfo__probe(getpid(), &p, why, sizeof(why)), -ENOTSUP);
}

static void test_walk(void **state)
{
	const struct tt_py_offsets *o = pyinfo__offsets(0x030b02f0);
	struct tt_py_frame fr[4];
	struct tt_py_proc p;
	uint32_t tids[4];
	char why[256];
	int n;

	reset();
	Py_Version = 0x030b02f0;
	put(_PyRuntime, o->rt_interp_head, (uintptr_t)interp);
	put(interp, o->interp_threads_head, (uintptr_t)tstate);
	put(tstate, o->ts_interp, (uintptr_t)interp);
	put(tstate, o->ts_native_tid, gettid());
	put(tstate, o->ts_cframe, (uintptr_t)cframe);
	put(cframe, o->cframe_current, (uintptr_t)frames[0]);
	/* innermost: code[0] at instruction 5; its caller code[1] before its first one (-1) */
	put(frames[0], o->fr_code, (uintptr_t)code[0]);
	put(frames[0], o->fr_previous, (uintptr_t)frames[1]);
	put(frames[0], o->fr_prev_instr, (uintptr_t)code[0] + o->co_code_adaptive + 2 * 5);
	put(frames[1], o->fr_code, (uintptr_t)code[1]);
	put(frames[1], o->fr_prev_instr, (uintptr_t)code[1] + o->co_code_adaptive - 2);
	frames[1][o->fr_is_entry] = 1;
	frames[1][o->fr_owner] = 1;	/* FRAME_OWNED_BY_GENERATOR */

	assert_int_equal(pyinfo__probe(getpid(), &p, why, sizeof(why)), 0);
	assert_int_equal(p.runtime, (uintptr_t)_PyRuntime);
	assert_int_equal(p.version, 0x030b02f0);
	assert_int_equal(pyinfo__threads(getpid(), &p, tids, 4), 1);
	assert_int_equal(tids[0], gettid());
	n = pyinfo__walk(getpid(), &p, gettid(), fr, 4);
	assert_int_equal(n, 2);
	assert_int_equal(fr[0].code, (uintptr_t)code[0]);
	assert_int_equal(fr[0].lasti, 5);
	assert_int_equal(fr[0].flags, 0);
	assert_int_equal(fr[1].code, (uintptr_t)code[1]);
	assert_int_equal(fr[1].lasti, -1);
	assert_int_equal(fr[1].flags, TT_PYFR_ENTRY | (1 << 1));
	/* bounded by the caller's room; a thread with no state */
	assert_int_equal(pyinfo__walk(getpid(), &p, gettid(), fr, 1), 1);
	assert_int_equal(pyinfo__walk(getpid(), &p, 1, fr, 4), -ESRCH);
	/* a frame chain into unmapped memory ends the walk, it does not crash it */
	put(frames[0], o->fr_previous, 0x10);
	assert_int_equal(pyinfo__walk(getpid(), &p, gettid(), fr, 4), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_other_version),
		cmocka_unit_test(test_not_initialized),
		cmocka_unit_test(test_layout_refused),
		cmocka_unit_test(test_walk),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
