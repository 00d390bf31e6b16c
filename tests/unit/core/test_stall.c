// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Stalls: which gaps count, and how one is explained. The parts add up to the gap; idle is
 * never the answer when a traced thread ended the wait (its work is); a timer's wakeup is
 * idle time waiting for the timer; a GIL wait is named with its holder; a lock held by a
 * sleeping thread stays a lock; the engine is accounted first when markers say it was late.
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
#include "stall_text.h"
#include "sysnr.h"

#define MS	1000000ull
#define K_UNIX	1
#define K_TIMER	2
#define K_FUTEX	3
#define K_TCP	4	/* TCP's receive path: the network's, or loopback's inside the sender */
#define K_PIPE	5
#define GIL	0x7000

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
}

/* stack texts: user stack 9 is a sleep, 8 a lock; kernel stacks say how wakers woke */
static bool stack_str(void *ud, const struct stack_ips *st, char *buf, size_t sz)
{
	int64_t k = st->nk ? (int64_t)st->k[0] : -1, u = st->nu ? (int64_t)st->u[0] : -1;
	const char *t = u == 9 ? "libc.so.6`clock_nanosleep <- app`stall" :
			u == 8 ? "libc.so.6`__lll_lock_wait <- app`serve" :
			k == K_UNIX ? "[k] try_to_wake_up <- ep_poll_callback <- sock_def_readable <- "
				      "unix_stream_sendmsg <- __sys_sendmsg" :
			k == K_TIMER ? "[k] try_to_wake_up <- hrtimer_wakeup <- __hrtimer_run_queues "
				       "<- hrtimer_interrupt <- asm_sysvec_apic_timer_interrupt" :
			k == K_FUTEX ? "[k] try_to_wake_up <- wake_up_q <- futex_wake <- do_futex" :
			k == K_TCP ? "[k] try_to_wake_up <- ep_poll_callback <- sock_def_readable <- "
				     "tcp_data_queue <- tcp_rcv_established <- tcp_v4_rcv" :
			k == K_PIPE ? "[k] ep_poll_callback <- anon_pipe_write <- vfs_write <- "
				      "ksys_write" : "";

	snprintf(buf, sz, "%s", t);
	return true;
}

/* Python code objects of the canned stacks, and their names */
#define CO_SCHED	0x100
#define CO_HASH		0x200
#define CO_STEP		0x300
#define CO_LOOP		0x400
#define CO_COND		0x500

static struct pysamples *ps;

static size_t py_name(void *ud, uint32_t pid, uint64_t code, int32_t lasti, char *buf, size_t sz)
{
	return snprintf(buf, sz, "%s", code == CO_SCHED ? "schedule_heavy (engine.py:63)" :
				       code == CO_HASH ? "hash_prompt (api.py:12)" :
				       code == CO_STEP ? "step (engine.py:40)" :
				       code == CO_LOOP ? "run_forever (base_events.py:607)" :
				       code == CO_COND ? "Condition.wait (threading.py:320)" : "?");
}

/* A Python stack record: leaf, then the loop under it */
static void py_rec(uint8_t kind, uint32_t tid, uint32_t pid, uint64_t ts, uint64_t leaf,
		   uint8_t gil, uint32_t holder)
{
	struct tt_pystack_ev e = {
		.h = { .ts = ts, .tgid = pid, .tid = tid, .type = TT_EV_PYSTACK },
		.kind = kind, .nframes = 2, .sysnr = kind == TT_PY_BLOCKED ? TT_NR_futex : -1,
		.gil = gil, .gil_holder = holder,
		.flags = kind == TT_PY_SAMPLE && tid == holder ? TT_PYF_HOLDS_GIL : 0,
	};

	e.frames[0].code = leaf;
	e.frames[1].code = CO_LOOP;
	e.h.size = TT_PYSTACK_HDR_SIZE + 2 * sizeof(e.frames[0]);
	pysamples__record(ps, &e, e.h.size);
}

/* thread tid on CPU in leaf, sampled every 10 ms over [from, to) */
static void py_samples(uint32_t tid, uint32_t pid, uint64_t from, uint64_t to, uint64_t leaf)
{
	for (uint64_t t = from; t < to; t += 10 * MS)
		py_rec(TT_PY_SAMPLE, tid, pid, t, leaf, 0, 0);
}

static const char *comm_of(void *ud, uint32_t pid)
{
	return pid == 2 ? "EngineCore" : "api";
}

static struct stall_env env(struct sched_book *b)
{
	return (struct stall_env){ .sb = b, .stack_str = stack_str, .ps = ps, .py_name = py_name,
				   .comm_of = comm_of };
}

/* what the kernel would have summed for a thread: on CPU since its last span or snapshot */
static struct {
	uint32_t tid;
	uint64_t at;
	uint64_t cum[TT_T_NR];
} model[16];
#define MODEL_N	(sizeof(model) / sizeof(model[0]))

static uint64_t *model_at(uint32_t tid, uint64_t ts)
{
	for (size_t i = 0; i < MODEL_N; i++) {
		if (model[i].tid == tid || !model[i].tid) {
			model[i].tid = tid;
			if (ts > model[i].at)
				model[i].cum[TT_T_ONCPU] += ts - model[i].at;
			model[i].at = ts;
			return model[i].cum;
		}
	}
	fail();
	return NULL;
}

/* futex blocks have a user stack (8) */
static bool futex_stack;

static void rec(struct sched_book *b, uint32_t tid, uint32_t pid, uint64_t out, uint64_t wake,
		uint64_t in, uint32_t sysnr, uint64_t futex, uint32_t waker, uint32_t waker_pid,
		int32_t how, const uint64_t *waker_cum)
{
	struct tt_sched_ev e = {
		.h = { .ts = in, .tgid = pid, .tid = tid, .type = TT_EV_SCHED, .size = sizeof(e) },
		.kind = TT_SCHED_SPAN, .state = 1, .sysnr = sysnr, .t_out = out, .t_wake = wake,
		.t_in = in, .futex = futex,
		.waker_tid = waker, .waker_tgid = waker_pid,
		.waker_traced = waker_cum != NULL,
	};

	if (sysnr == TT_NR_clock_nanosleep) {
		e.uips[0] = 9;
		e.nu = 1;
	}
	if (sysnr == TT_NR_futex && futex_stack) {
		e.uips[0] = 8;
		e.nu = 1;
	}
	if (how >= 0) {
		e.wkips[0] = how;
		e.nwk = 1;
	}
	uint64_t *m = model_at(tid, out);

	memcpy(e.cum, m, sizeof(e.cum));
	m[sched_block_cause(sysnr, 1, 0)] += wake - out;
	m[TT_T_RUNQ] += in - wake;
	for (size_t i = 0; i < MODEL_N; i++)
		if (model[i].tid == tid)
			model[i].at = in;
	if (waker_cum)
		memcpy(e.waker_cum, waker_cum, sizeof(e.waker_cum));
	sched_book__record(b, &e);
}

static void snap(struct sched_book *b, uint32_t tid, uint32_t pid, uint64_t ts,
		 const uint64_t *cum)
{
	struct tt_sched_ev e = {
		.h = { .ts = ts, .tgid = pid, .tid = tid, .type = TT_EV_SCHED, .size = sizeof(e) },
		.kind = TT_SCHED_SNAP,
	};
	uint64_t *m = model_at(tid, ts);

	memcpy(m, cum, sizeof(e.cum));
	memcpy(e.cum, cum, sizeof(e.cum));
	sched_book__record(b, &e);
}

static int reset(void **state)
{
	memset(model, 0, sizeof(model));
	futex_stack = false;
	pysamples__free(ps);
	ps = pysamples__new(0, 0, 0);
	return ps ? 0 : -1;
}

static uint64_t sum(const struct tt_stall *st)
{
	uint64_t s = 0;

	for (int i = 0; i < STALL_NR; i++)
		s += st->part_ns[i];
	return s;
}

/* The sender itself slept through the gap: sleep, with where. */
static void test_sleep(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t ts[] = { 0, 10 * MS, 20 * MS }, z[TT_T_NR] = {};
	struct tt_request *r = stream(ts, 3);
	struct stall_env e = env(b);
	uint64_t retrans[] = { 5 * MS, 100 * MS, 400 * MS };
	struct stall_net net = { .retrans = retrans, .nretrans = 3, .zw_from = 150 * MS,
				 .zw_to = 160 * MS };
	struct tt_stall *st;
	char line[512];

	snap(b, 5, 1, 0, z);
	py_rec(TT_PY_BLOCKED, 5, 1, 30 * MS, CO_STEP, TT_PY_GIL_NONE, 0);
	rec(b, 5, 1, 30 * MS, 300 * MS, 302 * MS, TT_NR_clock_nanosleep, 0, 0, 0, -1, NULL);
	assert_int_equal(stall__explain(r, &e, 5, 20 * MS, 320 * MS, &net), 0);
	st = &r->stalls[0];
	assert_int_equal(sum(st), 300 * MS);
	assert_int_equal(st->cause, STALL_SLEEP);
	assert_int_equal(st->part_ns[STALL_SLEEP], 270 * MS);
	assert_string_equal(st->stack, "libc.so.6`clock_nanosleep <- app`stall");
	assert_int_equal(st->retransmits, 1);
	assert_true(st->zero_window);
	stall__describe(st, line, sizeof(line));
	assert_non_null(strstr(line, "asleep 270ms in step (engine.py:40)"));
	/* where, in Python: the frame it went off CPU in */
	assert_string_equal(st->hop[0].func, "step (engine.py:40)");
	assert_non_null(strstr(st->python, "thread 5 blocked in step (engine.py:40)"));
	request__free(r);
	sched_book__free(b);
}

/*
 * Go moved the stream's goroutine: the thread that sent the token before the gap (5) slept
 * through it in a blocking syscall, and the runtime, its P taken away meanwhile, let another
 * thread (7) send the next token. The stream, with thread 5's part of it recorded.
 */
static struct tt_request *goroutine_moved(struct sched_book *b)
{
	uint64_t ts[] = { 0, 10 * MS, 20 * MS }, z[TT_T_NR] = {};
	struct tt_request *r = stream(ts, 3);

	memset(model, 0, sizeof(model));
	r->tid = 5;
	snap(b, 5, 1, 20 * MS, z);
	rec(b, 5, 1, 25 * MS, 300 * MS, 301 * MS, TT_NR_clock_nanosleep, 0, 0, 0, -1, NULL);
	return r;
}

/* 7 was started during the gap and has no account of it: 5's is the answer, with where */
static void test_goroutine_moved(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	struct tt_request *r = goroutine_moved(b);
	struct stall_env e = env(b);
	uint64_t z[TT_T_NR] = {};
	struct tt_stall *st;
	char line[512];

	snap(b, 7, 1, 318 * MS, z);
	assert_int_equal(stall__explain(r, &e, 7, 20 * MS, 320 * MS, NULL), 0);
	st = &r->stalls[0];
	assert_int_equal(st->hop[0].tid, 5);
	assert_int_equal(st->part_ns[STALL_SLEEP], 275 * MS);
	assert_int_equal(sum(st), 300 * MS);	/* the parts still add up to the gap */
	assert_string_equal(st->stack, "libc.so.6`clock_nanosleep <- app`stall");
	stall__describe(st, line, sizeof(line));
	assert_non_null(strstr(line, "asleep 275ms at app`stall"));
	request__free(r);
	sched_book__free(b);

	/* 7 knows the gap (it waited on a lock all along): its account stands, not 5's */
	b = sched_book__new(60000 * MS);
	r = goroutine_moved(b);
	e = env(b);
	snap(b, 7, 1, 20 * MS, z);
	rec(b, 7, 1, 21 * MS, 310 * MS, 311 * MS, TT_NR_futex, 0x1000, 0, 0, -1, NULL);
	assert_int_equal(stall__explain(r, &e, 7, 20 * MS, 320 * MS, NULL), 0);
	assert_int_equal(r->stalls[0].hop[0].tid, 7);
	assert_int_equal(r->stalls[0].cause, STALL_LOCK);
	request__free(r);
	sched_book__free(b);
}

/*
 * Go's shape of a blocking syscall: thread 7 slept 200 ms in it; back, it started a new M
 * (9) to hand its P to, and 9 woke the poller (5, in epoll) through the runtime's pipe; 5
 * sent the token. 9 did not exist for most of the gap: before its making the chain follows
 * its maker, and the sleep is the stall's.
 */
static void test_new_thread(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t ts[] = { 0, 10 * MS }, z[TT_T_NR] = {};
	struct tt_request *r = stream(ts, 2);
	struct stall_env e = env(b);
	struct tt_sched_ev birth = {
		.h = { .ts = 213 * MS, .tgid = 1, .tid = 9, .type = TT_EV_SCHED,
		       .size = sizeof(birth) },
		.kind = TT_SCHED_BIRTH, .sysnr = -1, .waker_tid = 7, .waker_tgid = 1,
	};
	struct tt_stall *st;
	uint32_t by = 0;
	char line[512];

	snap(b, 5, 1, 0, z);
	snap(b, 7, 1, 0, z);
	/* a thread 9 before, that exited: what the book had of it is not the new one's */
	snap(b, 9, 1, 1 * MS, z);
	sched_book__exited(b, 9, 2 * MS);
	rec(b, 7, 1, 12 * MS, 212 * MS, 212 * MS + 100000, TT_NR_clock_nanosleep, 0, 0,
	    TT_WAKER_TIMER, K_TIMER, NULL);
	sched_book__record(b, &birth);
	assert_int_equal(sched_book__born(b, 9, &by), 213 * MS);
	assert_int_equal(by, 7);
	rec(b, 5, 1, 11 * MS, 215 * MS, 216 * MS, TT_NR_epoll_wait, 0, 9, 1, K_PIPE, NULL);
	assert_int_equal(stall__explain(r, &e, 5, 10 * MS, 217 * MS, NULL), 0);
	st = &r->stalls[0];
	assert_int_equal(sum(st), 207 * MS);
	assert_int_equal(st->nhops, 3);
	assert_int_equal(st->hop[0].woken_by, WAKE_PIPE);
	assert_int_equal(st->hop[1].tid, 9);
	assert_int_equal(st->hop[1].woken_by, WAKE_CREATED);
	assert_int_equal(st->hop[2].tid, 7);
	assert_int_equal(st->hop[2].cause, STALL_SLEEP);
	assert_int_equal(st->cause, STALL_SLEEP);
	/* scaled into the poller's wait (from 11 ms) by the chain */
	assert_true(st->part_ns[STALL_SLEEP] >= 199 * MS);
	/* what no record covers: 9 from its making to its write, 5 and 7 after their last */
	assert_true(st->part_ns[STALL_UNKNOWN] < 4 * MS);
	assert_string_equal(st->stack, "libc.so.6`clock_nanosleep <- app`stall");
	stall__describe(st, line, sizeof(line));
	assert_non_null(strstr(line, "(pid 1, thread 7) asleep 200ms at app`stall"));
	assert_non_null(strstr(line, "thread 9 (a new thread it started)"));
	request__free(r);
	sched_book__free(b);

	/* made early in the gap, the new thread slept through the rest itself: it answers */
	b = sched_book__new(60000 * MS);
	r = stream(ts, 2);
	e = env(b);
	memset(model, 0, sizeof(model));
	snap(b, 7, 1, 0, z);
	birth.h.ts = 15 * MS;
	sched_book__record(b, &birth);
	snap(b, 9, 1, 15 * MS + 100000, z);
	rec(b, 9, 1, 16 * MS, 216 * MS, 216 * MS + 100000, TT_NR_clock_nanosleep, 0, 0,
	    TT_WAKER_TIMER, K_TIMER, NULL);
	assert_int_equal(stall__explain(r, &e, 9, 10 * MS, 217 * MS, NULL), 0);
	st = &r->stalls[0];
	assert_int_equal(st->nhops, 1);
	assert_int_equal(st->hop[0].tid, 9);
	assert_int_equal(st->cause, STALL_SLEEP);
	request__free(r);
	sched_book__free(b);
}

/*
 * The sender ran through the gap, but in a guest whose hypervisor took its virtual CPU for a
 * tenth of it (steal, summed apart by the kernel side): on-CPU is what it ran, the stolen
 * time is its own part and said in the line.
 */
static void test_steal(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t ts[] = { 0, 10 * MS, 20 * MS }, z[TT_T_NR] = {};
	uint64_t c1[TT_T_NR] = { [TT_T_ONCPU] = 255 * MS, [TT_T_STEAL] = 45 * MS };
	struct tt_request *r = stream(ts, 3);
	struct stall_env e = env(b);
	struct tt_stall *st;
	char line[512];

	snap(b, 5, 1, 20 * MS, z);
	snap(b, 5, 1, 320 * MS, c1);
	assert_int_equal(stall__explain(r, &e, 5, 20 * MS, 320 * MS, NULL), 0);
	st = &r->stalls[0];
	assert_int_equal(sum(st), 300 * MS);
	assert_int_equal(st->cause, STALL_ONCPU);
	assert_int_equal(st->part_ns[STALL_ONCPU], 255 * MS);
	assert_int_equal(st->part_ns[STALL_STEAL], 45 * MS);
	assert_string_equal(stall_cause_name(STALL_STEAL), "steal");
	stall__describe(st, line, sizeof(line));
	assert_non_null(strstr(line, "on-CPU 255ms; 45.0ms of it stolen by the hypervisor"));
	request__free(r);
	sched_book__free(b);

	/* a stall that is mostly stolen: that is its cause, and not said twice */
	uint64_t c2[TT_T_NR] = { [TT_T_ONCPU] = 100 * MS, [TT_T_STEAL] = 200 * MS };

	memset(model, 0, sizeof(model));
	b = sched_book__new(60000 * MS);
	r = stream(ts, 3);
	e = env(b);
	snap(b, 5, 1, 20 * MS, z);
	snap(b, 5, 1, 320 * MS, c2);
	assert_int_equal(stall__explain(r, &e, 5, 20 * MS, 320 * MS, NULL), 0);
	st = &r->stalls[0];
	assert_int_equal(st->cause, STALL_STEAL);
	stall__describe(st, line, sizeof(line));
	assert_non_null(strstr(line, "waiting 200ms for its CPU, taken by the hypervisor"));
	assert_null(strstr(line, "of it stolen"));
	request__free(r);
	sched_book__free(b);
}

/*
 * The front end idled in epoll; the engine (another process, traced) woke it through a Unix
 * socket when its step was done, having been on CPU meanwhile: the gap is the engine's.
 */
static void test_idle_follows_waker(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t ts[] = { 0, 10 * MS }, z[TT_T_NR] = {};
	uint64_t w0[TT_T_NR] = { [TT_T_ONCPU] = 1000 * MS }, w1[TT_T_NR] = { [TT_T_ONCPU] = 1200 * MS };
	struct tt_request *r = stream(ts, 2);
	struct stall_env e = env(b);
	struct tt_stall *st;
	char line[512];

	snap(b, 5, 1, 0, z);
	/* the previous wake, at 10 ms, and this one at 210 ms: the engine's counters at both */
	rec(b, 5, 1, 5 * MS, 10 * MS, 10 * MS, TT_NR_epoll_wait, 0, 20, 2, K_UNIX, w0);
	rec(b, 5, 1, 11 * MS, 210 * MS, 211 * MS, TT_NR_epoll_wait, 0, 20, 2, K_UNIX, w1);
	/* the engine ran schedule_heavy the whole time; before the gap, something else */
	py_samples(20, 2, 0, 10 * MS, CO_STEP);
	py_samples(20, 2, 10 * MS, 210 * MS, CO_SCHED);
	assert_int_equal(stall__explain(r, &e, 5, 10 * MS, 212 * MS, NULL), 0);
	st = &r->stalls[0];
	assert_int_equal(sum(st), 202 * MS);
	assert_int_equal(st->cause, STALL_ONCPU);
	assert_true(st->part_ns[STALL_ONCPU] >= 199 * MS);
	assert_int_equal(st->nhops, 2);
	assert_int_equal(st->hop[0].woken_by, WAKE_UNIX);
	assert_int_equal(st->hop[1].pid, 2);
	assert_string_equal(st->hop[1].comm, "EngineCore");
	assert_int_equal(st->hop[1].cause, STALL_ONCPU);
	stall__describe(st, line, sizeof(line));
	/* the engine first, then the front end that waited for it */
	assert_non_null(strstr(line, "EngineCore (pid 2, thread 20) on-CPU 2"));
	assert_non_null(strstr(line, "in schedule_heavy (engine.py:63); api (pid 1, thread 5)"));
	assert_non_null(strstr(line, "waiting on a Unix socket"));
	/* the front end's epoll wait has no Python frame: its waker's code tells */
	assert_string_equal(st->hop[0].func, "");
	assert_non_null(strstr(st->python, "ran: schedule_heavy (engine.py:63) 100%"));
	request__free(r);
	sched_book__free(b);
}

/*
 * Woken through TCP's receive path: by the engine (a task, its send delivering on loopback),
 * followed into it and said as a loopback TCP connection; by no task (the network), idle.
 */
static void test_tcp_wake(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t ts[] = { 0, 10 * MS }, z[TT_T_NR] = {};
	uint64_t w1[TT_T_NR] = { [TT_T_ONCPU] = 200 * MS };
	struct tt_request *r = stream(ts, 2);
	struct stall_env e = env(b);
	struct tt_stall *st;
	char line[STALL_LINE_MAX];

	snap(b, 5, 1, 0, z);
	snap(b, 20, 2, 0, z);
	rec(b, 5, 1, 11 * MS, 210 * MS, 211 * MS, TT_NR_epoll_wait, 0, 20, 2, K_TCP, w1);
	rec(b, 5, 1, 220 * MS, 420 * MS, 421 * MS, TT_NR_epoll_wait, 0, 0, TT_WAKER_IRQ, K_TCP,
	    NULL);
	assert_int_equal(stall__explain(r, &e, 5, 10 * MS, 212 * MS, NULL), 0);
	st = &r->stalls[0];
	assert_int_equal(st->nhops, 2);
	assert_int_equal(st->hop[0].woken_by, WAKE_TCP_LOCAL);
	assert_int_equal(st->hop[1].tid, 20);
	assert_int_equal(st->cause, STALL_ONCPU);
	stall__describe(st, line, sizeof(line));
	assert_non_null(strstr(line, "waiting on a loopback TCP connection"));
	assert_int_equal(stall__explain(r, &e, 5, 219 * MS, 422 * MS, NULL), 0);
	st = &r->stalls[1];
	assert_int_equal(st->nhops, 1);
	assert_int_equal(st->hop[0].woken_by, WAKE_NET);
	assert_int_equal(st->cause, STALL_IDLE);
	stall__describe(st, line, sizeof(line));
	assert_non_null(strstr(line, "idle 2"));
	assert_non_null(strstr(line, "waiting for the network"));
	request__free(r);
	sched_book__free(b);
}

/* Woken by a timer (a setTimeout, a Go time.Sleep): idle, waiting for the timer. */
static void test_idle_timer(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t ts[] = { 0, 10 * MS }, z[TT_T_NR] = {};
	struct tt_request *r = stream(ts, 2);
	struct stall_env e = env(b);
	struct tt_stall *st;

	snap(b, 5, 1, 0, z);
	/* the interrupt ran in some task (tid 77): not a waker to follow */
	rec(b, 5, 1, 11 * MS, 210 * MS, 211 * MS, TT_NR_epoll_wait, 0, 77, 9, K_TIMER, z);
	assert_int_equal(stall__explain(r, &e, 5, 10 * MS, 212 * MS, NULL), 0);
	st = &r->stalls[0];
	assert_int_equal(st->cause, STALL_IDLE);
	assert_true(st->part_ns[STALL_IDLE] >= 199 * MS);
	assert_int_equal(sum(st), 202 * MS);
	assert_int_equal(st->nhops, 1);
	assert_int_equal(st->hop[0].woken_by, WAKE_TIMER);
	request__free(r);
	sched_book__free(b);
}

/* A wait on the GIL: named so, with the thread that held it and what it ran. */
static void test_gil(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t ts[] = { 0, 10 * MS }, z[TT_T_NR] = {};
	uint64_t h0[TT_T_NR] = { [TT_T_ONCPU] = 10 * MS }, h1[TT_T_NR] = { [TT_T_ONCPU] = 210 * MS };
	struct tt_request *r = stream(ts, 2);
	struct stall_env e = env(b);
	struct tt_stall *st;
	char line[512];

	snap(b, 5, 1, 0, z);
	snap(b, 30, 1, 10 * MS, h0);
	/* the kernel side saw the futex was the GIL's cond, held by thread 30 */
	py_rec(TT_PY_BLOCKED, 5, 1, 11 * MS, CO_STEP, TT_PY_GIL_WAIT, 30);
	rec(b, 5, 1, 11 * MS, 210 * MS, 211 * MS, TT_NR_futex, GIL, 30, 1, K_FUTEX, h1);
	py_samples(30, 1, 10 * MS, 210 * MS, CO_HASH);
	assert_int_equal(stall__explain(r, &e, 5, 10 * MS, 212 * MS, NULL), 0);
	st = &r->stalls[0];
	assert_int_equal(st->cause, STALL_GIL);
	assert_true(st->part_ns[STALL_GIL] >= 199 * MS);
	assert_int_equal(sum(st), 202 * MS);
	assert_int_equal(st->nhops, 2);
	assert_int_equal(st->hop[1].tid, 30);
	stall__describe(st, line, sizeof(line));
	assert_non_null(strstr(line, "(pid 1, thread 30) on-CPU 2"));
	assert_non_null(strstr(line, "in hash_prompt (api.py:12), holding the GIL"));
	assert_non_null(strstr(line, "for the GIL in step (engine.py:40)"));
	assert_string_equal(st->hop[0].func, "step (engine.py:40)");
	assert_string_equal(st->hop[1].func, "hash_prompt (api.py:12)");
	assert_non_null(strstr(st->python, "thread 5 waiting for the GIL in step (engine.py:40), "
				       "held by thread 30"));
	request__free(r);
	sched_book__free(b);
}

/*
 * The same futex, not the GIL (the kernel side said so): a lock, not a GIL wait. And a GIL
 * wait whose waker is not known still names the holder the kernel side saw.
 */
static void test_gil_or_not(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t ts[] = { 0, 10 * MS }, z[TT_T_NR] = {};
	uint64_t h1[TT_T_NR] = { [TT_T_ONCPU] = 210 * MS };
	struct tt_request *r = stream(ts, 2);
	struct stall_env e = env(b);
	struct tt_stall *st;

	snap(b, 5, 1, 0, z);
	snap(b, 30, 1, 10 * MS, z);
	py_rec(TT_PY_BLOCKED, 5, 1, 11 * MS, CO_STEP, TT_PY_GIL_NONE, 0);
	rec(b, 5, 1, 11 * MS, 210 * MS, 211 * MS, TT_NR_futex, GIL, 30, 1, K_FUTEX, h1);
	assert_int_equal(stall__explain(r, &e, 5, 10 * MS, 212 * MS, NULL), 0);
	st = &r->stalls[0];
	assert_int_not_equal(st->cause, STALL_GIL);
	assert_int_not_equal(st->hop[0].cause, STALL_GIL);
	request__free(r);

	r = stream(ts, 2);
	py_rec(TT_PY_BLOCKED, 5, 1, 300 * MS, CO_STEP, TT_PY_GIL_WAIT, 30);
	uint64_t h2[TT_T_NR] = { [TT_T_ONCPU] = 220 * MS };
	snap(b, 30, 1, 290 * MS, h2);
	rec(b, 5, 1, 300 * MS, 500 * MS, 501 * MS, TT_NR_futex, GIL, 0, 0, -1, NULL);
	uint64_t h3[TT_T_NR] = { [TT_T_ONCPU] = 420 * MS };
	snap(b, 30, 1, 505 * MS, h3);
	assert_int_equal(stall__explain(r, &e, 5, 299 * MS, 502 * MS, NULL), 0);
	st = &r->stalls[0];
	assert_int_equal(st->cause, STALL_GIL);
	assert_int_equal(st->nhops, 2);
	assert_int_equal(st->hop[1].tid, 30);
	request__free(r);
	sched_book__free(b);
}

/* A lock whose holder slept while holding it: a lock, the holder told. */
/* thread 5 waits 200 ms at a futex; 31, which woke it, slept that long: the stall */
static struct tt_stall *lock_holder(struct sched_book *b, struct tt_request *r)
{
	uint64_t z[TT_T_NR] = {}, h1[TT_T_NR] = { [TT_T_SLEEP] = 200 * MS };
	struct stall_env e = env(b);

	snap(b, 5, 1, 0, z);
	snap(b, 31, 1, 10 * MS, z);
	rec(b, 5, 1, 11 * MS, 210 * MS, 211 * MS, TT_NR_futex, 0x1234, 31, 1, K_FUTEX, h1);
	assert_int_equal(stall__explain(r, &e, 5, 10 * MS, 212 * MS, NULL), 0);
	return &r->stalls[r->nstalls - 1];
}

static void test_lock_holder(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t ts[] = { 0, 10 * MS };
	struct tt_request *r = stream(ts, 2);
	struct tt_stall *st = lock_holder(b, r);

	assert_int_equal(st->cause, STALL_LOCK);
	assert_true(st->part_ns[STALL_LOCK] >= 199 * MS);
	assert_int_equal(st->nhops, 2);
	assert_int_equal(st->hop[1].tid, 31);
	assert_int_equal(st->hop[1].cause, STALL_SLEEP);
	request__free(r);
	sched_book__free(b);
}

/*
 * The same, but the holder's sleep is not in (its switch-in went unseen: its span comes
 * later): the stall has no stack, rather than the waiter's, which would read as where the
 * holder slept.
 */
static void test_lock_holder_unseen(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t ts[] = { 0, 10 * MS };
	struct tt_request *r = stream(ts, 2);
	struct stall_env e = env(b);
	struct tt_stall *st;
	char line[512];

	futex_stack = true;
	st = lock_holder(b, r);
	assert_int_equal(st->nhops, 2);
	assert_int_equal(st->hop[1].cause, STALL_SLEEP);
	assert_string_equal(st->stack, "");
	stall__describe(st, line, sizeof(line));
	assert_null(strstr(line, " at "));
	assert_null(strstr(line, "; stack: "));
	/* with the holder's sleep in, its stack is the stall's */
	rec(b, 31, 1, 10 * MS, 210 * MS, 210 * MS, TT_NR_clock_nanosleep, 0, 0, 0, -1, NULL);
	assert_int_equal(stall__explain(r, &e, 5, 10 * MS, 212 * MS, NULL), 0);
	assert_string_equal(r->stalls[1].stack, "libc.so.6`clock_nanosleep <- app`stall");
	request__free(r);
	sched_book__free(b);
}

/*
 * A thread waiting in a queue's get (Condition.wait) waits for work: its waker slept before
 * putting the work there, so the time is sleep, not a lock. The same wait at a lock the
 * waker held while it slept stays a lock.
 */
static void test_wait_for_work(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t ts[] = { 0, 10 * MS }, z[TT_T_NR] = {};
	uint64_t h1[TT_T_NR] = { [TT_T_SLEEP] = 200 * MS };
	struct tt_request *r = stream(ts, 2);
	struct stall_env e = env(b);
	struct tt_stall *st;

	for (int lock = 0; lock < 2; lock++) {
		uint64_t o = lock * 1000 * MS;

		memset(model, 0, sizeof(model));
		snap(b, 5, 1, o, z);
		snap(b, 31, 1, o + 10 * MS, z);
		py_rec(TT_PY_BLOCKED, 5, 1, o + 11 * MS, lock ? CO_STEP : CO_COND, 0, 0);
		rec(b, 5, 1, o + 11 * MS, o + 210 * MS, o + 211 * MS, TT_NR_futex, 0x1234, 31, 1,
		    K_FUTEX, h1);
		r->nstalls = 0;
		assert_int_equal(stall__explain(r, &e, 5, o + 10 * MS, o + 212 * MS, NULL), 0);
		st = &r->stalls[0];
		assert_int_equal(st->nhops, 2);
		assert_int_equal(st->hop[1].cause, STALL_SLEEP);
		assert_int_equal(st->cause, lock ? STALL_LOCK : STALL_SLEEP);
		assert_string_equal(st->hop[0].func, lock ? "step (engine.py:40)" :
					"Condition.wait (threading.py:320)");
	}
	request__free(r);
	sched_book__free(b);
}

/*
 * A chain of n threads (an SGLang-shaped server's ZMQ relays): thread base waits in epoll,
 * woken by base + 1, ... woken by base + n - 1, which ran on CPU all along. A stall over it.
 */
static struct tt_stall *relay_chain(struct sched_book *b, struct tt_request *r, uint32_t base,
				    int n)
{
	uint64_t z[TT_T_NR] = {}, cum[TT_T_NR], t = 210 * MS;
	struct stall_env e = env(b);

	memset(model, 0, sizeof(model));
	for (int k = 0; k < n; k++)
		snap(b, base + k, 1, 0, z);
	/* the worker wakes the last relay at 210 ms, each relay the one before it 10 us on */
	for (int k = n - 2; k >= 0; k--, t += MS / 100) {
		memcpy(cum, model_at(base + k + 1, t), sizeof(cum));
		rec(b, base + k, 1, 11 * MS, t, t + MS / 200, TT_NR_epoll_wait, 0, base + k + 1, 1,
		    K_UNIX, cum);
	}
	assert_int_equal(stall__explain(r, &e, base, 10 * MS, t + MS, NULL), 0);
	return &r->stalls[r->nstalls - 1];
}

/* As long a chain as a stall holds is followed to its end; a longer one is cut, and said. */
static void test_long_chain(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t ts[] = { 0, 10 * MS };
	struct tt_request *r = stream(ts, 2);
	struct tt_stall *st;
	char line[STALL_LINE_MAX];

	st = relay_chain(b, r, 100, STALL_HOPS_MAX);
	assert_int_equal(st->nhops, STALL_HOPS_MAX);
	assert_false(st->hops_cut);
	assert_int_equal(st->hop[STALL_HOPS_MAX - 1].tid, 100 + STALL_HOPS_MAX - 1);
	assert_int_equal(st->hop[STALL_HOPS_MAX - 1].cause, STALL_ONCPU);
	assert_int_equal(st->cause, STALL_ONCPU);
	stall__describe(st, line, sizeof(line));
	assert_null(strstr(line, "not followed"));
	assert_non_null(strstr(line, "api (pid 1, thread 107) on-CPU"));

	st = relay_chain(b, r, 200, STALL_HOPS_MAX + 2);
	assert_int_equal(st->nhops, STALL_HOPS_MAX);
	assert_true(st->hops_cut);
	/* the last hop told is left waiting on its socket: idle, its waker past the cut */
	assert_int_equal(st->hop[STALL_HOPS_MAX - 1].cause, STALL_IDLE);
	stall__describe(st, line, sizeof(line));
	assert_non_null(strstr(line, "; the chain goes on past 8 threads, not followed"));
	assert_int_equal(sum(st), st->t_end_ns - st->t_begin_ns);
	request__free(r);
	sched_book__free(b);
}

/*
 * The Python summary tells the block the chain followed: the engine slept in step() until
 * it woke the front end, then slept again (its next step's wait) before the gap's end. The
 * later block is not the stall's.
 */
static void test_py_block_in_window(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t ts[] = { 0, 10 * MS }, z[TT_T_NR] = {}, cum[TT_T_NR];
	struct tt_request *r = stream(ts, 2);
	struct stall_env e = env(b);
	struct tt_stall *st;

	snap(b, 5, 1, 0, z);
	snap(b, 20, 2, 0, z);
	py_rec(TT_PY_BLOCKED, 20, 2, 10 * MS, CO_STEP, TT_PY_GIL_NONE, 0);
	rec(b, 20, 2, 10 * MS, 200 * MS, 200 * MS, TT_NR_clock_nanosleep, 0, 0, 0, -1, NULL);
	memcpy(cum, model_at(20, 200 * MS + MS / 10), sizeof(cum));
	rec(b, 5, 1, 11 * MS, 200 * MS + MS / 10, 200 * MS + MS / 5, TT_NR_epoll_wait, 0, 20, 2,
	    K_UNIX, cum);
	py_rec(TT_PY_BLOCKED, 20, 2, 201 * MS, CO_COND, TT_PY_GIL_NONE, 0);
	rec(b, 20, 2, 201 * MS, 209 * MS, 209 * MS, TT_NR_clock_nanosleep, 0, 0, 0, -1, NULL);
	assert_int_equal(stall__explain(r, &e, 5, 10 * MS, 210 * MS, NULL), 0);
	st = &r->stalls[0];
	assert_int_equal(st->nhops, 2);
	assert_int_equal(st->hop[1].cause, STALL_SLEEP);
	assert_string_equal(st->hop[1].func, "step (engine.py:40)");
	assert_non_null(strstr(st->python, "thread 20 blocked in step (engine.py:40)"));
	assert_null(strstr(st->python, "Condition.wait"));
	request__free(r);
	sched_book__free(b);
}

/* With token markers saying the token was made late, the engine's thread comes first. */
static void test_engine_first(void **state)
{
	struct sched_book *b = sched_book__new(60000 * MS);
	uint64_t ts[] = { 0, 10 * MS }, z[TT_T_NR] = {};
	struct tt_request *r = stream(ts, 2);
	struct stall_env e = env(b);
	struct tt_stall *st;

	request__add_made(r, 0);
	request__add_made(r, 9 * MS);
	request__add_made(r, 300 * MS);	/* token 2, made late */
	r->made_tid = 7;
	snap(b, 7, 1, 0, z);
	uint64_t c[TT_T_NR] = { [TT_T_ONCPU] = 310 * MS };
	snap(b, 7, 1, 310 * MS, c);
	assert_int_equal(stall__explain(r, &e, 5, 10 * MS, 302 * MS, NULL), 0);
	st = &r->stalls[0];
	assert_int_equal(st->engine_late, 1);
	assert_int_equal(st->hop[0].tid, 7);
	assert_int_equal(st->cause, STALL_ONCPU);
	request__free(r);
	sched_book__free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_threshold, reset),
		cmocka_unit_test_setup(test_sleep, reset),
		cmocka_unit_test_setup(test_goroutine_moved, reset),
		cmocka_unit_test_setup(test_new_thread, reset),
		cmocka_unit_test_setup(test_steal, reset),
		cmocka_unit_test_setup(test_idle_follows_waker, reset),
		cmocka_unit_test_setup(test_idle_timer, reset),
		cmocka_unit_test_setup(test_tcp_wake, reset),
		cmocka_unit_test_setup(test_gil, reset),
		cmocka_unit_test_setup(test_gil_or_not, reset),
		cmocka_unit_test_setup(test_wait_for_work, reset),
		cmocka_unit_test_setup(test_lock_holder, reset),
		cmocka_unit_test_setup(test_lock_holder_unseen, reset),
		cmocka_unit_test_setup(test_engine_first, reset),
		cmocka_unit_test_setup(test_long_chain, reset),
		cmocka_unit_test_setup(test_py_block_in_window, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
