// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The stall line as a user reads it (stall_text.c), from explained stalls made by hand: the
 * thread that did the late work first, with its cause, duration and function or native frame;
 * then the way the stream waited for it; each process's pid said once. One case per cause,
 * a cut chain, a Python frame, a native frame, the line's own bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "stall_text.h"

#define MS	1000000ull

static struct tt_stall st;

/* a stall of gap ms, explained by nothing yet */
static void stall(uint64_t gap)
{
	memset(&st, 0, sizeof(st));
	st.t_begin_ns = 1000 * MS;
	st.t_end_ns = st.t_begin_ns + gap * MS;
	st.engine_late = -1;
}

/* hop h of the chain; its cause's time is the stall's part too, the largest one the cause */
static struct stall_hop *hop(uint32_t pid, uint32_t tid, const char *comm, enum stall_cause c,
			     uint64_t ms, enum wake_kind woken_by, const char *func)
{
	struct stall_hop *hp = &st.hop[st.nhops++];

	hp->pid = pid;
	hp->tid = tid;
	snprintf(hp->comm, sizeof(hp->comm), "%s", comm);
	hp->cause = c;
	hp->ns = ms * MS;
	hp->woken_by = woken_by;
	snprintf(hp->func, sizeof(hp->func), "%s", func ? func : "");
	if (hp->ns > st.part_ns[st.cause]) {
		st.cause = c;
		st.part_ns[c] = hp->ns;
	}
	return hp;
}

static void expect(const char *want)
{
	char line[STALL_LINE_MAX];

	stall__describe(&st, line, sizeof(line));
	if (strcmp(line, want))
		fail_msg("\n got: %s\nwant: %s", line, want);
}

static void test_on_cpu(void **state)
{
	stall(150);
	hop(50, 50, "tokensim", STALL_ONCPU, 148, WAKE_NONE, NULL);
	expect("tokensim (pid 50) on-CPU 148ms");
}

static void test_runqueue(void **state)
{
	stall(150);
	hop(50, 52, "tokensim", STALL_RUNQ, 149, WAKE_NONE, NULL);
	expect("tokensim (pid 50, thread 52) runnable 149ms, waiting for a CPU");
}

/* the holder of the lock slept holding it: the holder first, at its native frame */
static void test_lock(void **state)
{
	stall(155);
	hop(50, 52, "tokensim", STALL_LOCK, 155, WAKE_FUTEX, NULL);
	hop(50, 53, "tokensim", STALL_SLEEP, 148, WAKE_NONE, NULL);
	st.cause = STALL_LOCK;
	strcpy(st.stack, "libc.so.6`clock_nanosleep <- tokensim`lock_holder");
	expect("tokensim (pid 50, thread 53) asleep 148ms at tokensim`lock_holder; tokensim thread "
	       "52 blocked 155ms on a lock; stack: libc.so.6`clock_nanosleep <- "
	       "tokensim`lock_holder");
}

/* a native frame: the first past libc's wrappers */
static void test_sleep(void **state)
{
	stall(158);
	hop(50, 52, "tokensim", STALL_SLEEP, 158, WAKE_NONE, NULL);
	strcpy(st.stack, "libc.so.6`clock_nanosleep <- libc.so.6`nanosleep <- tokensim`stall_run "
	       "<- tokensim`frontend_main");
	expect("tokensim (pid 50, thread 52) asleep 158ms at tokensim`stall_run; stack: "
	       "libc.so.6`clock_nanosleep <- libc.so.6`nanosleep <- tokensim`stall_run <- "
	       "tokensim`frontend_main");
}

/* a kernel-only stack: its innermost frame; a stack of one frame is not said twice */
static void test_io(void **state)
{
	stall(120);
	hop(7, 7, "db", STALL_IO, 118, WAKE_NONE, NULL);
	strcpy(st.stack, "[k] io_schedule <- folio_wait_bit_common <- filemap_read");
	expect("db (pid 7) blocked 118ms on I/O at [k] io_schedule; stack: [k] io_schedule <- "
	       "folio_wait_bit_common <- filemap_read");
	strcpy(st.stack, "libc.so.6`read");
	expect("db (pid 7) blocked 118ms on I/O at libc.so.6`read");
}

/* the GIL's holder first, with what it ran; the Python summary is not said again */
static void test_gil(void **state)
{
	stall(182);
	hop(10074, 10074, "python3", STALL_GIL, 163, WAKE_NONE,
	    "Runner.run (asyncio/runners.py:118)");
	hop(10074, 10114, "python3", STALL_ONCPU, 164, WAKE_NONE,
	    "PromptHasher.hash_prompt (server.py:241)");
	st.cause = STALL_GIL;
	strcpy(st.python, "ran: PromptHasher.hash_prompt (server.py:241) 100%; thread 10074 "
	       "waiting for the GIL in Runner.run (asyncio/runners.py:118), held by thread 10114");
	expect("python3 (pid 10074, thread 10114) on-CPU 164ms in PromptHasher.hash_prompt "
	       "(server.py:241), holding the GIL; python3 main thread waiting 163ms for the GIL in "
	       "Runner.run (asyncio/runners.py:118)");
	/* more than the root's function ran: said */
	strcpy(st.python, "ran: a (x.py:1) 60%, b (y.py:2) 40%");
	expect("python3 (pid 10074, thread 10114) on-CPU 164ms in PromptHasher.hash_prompt "
	       "(server.py:241), holding the GIL; python3 main thread waiting 163ms for the GIL in "
	       "Runner.run (asyncio/runners.py:118); Python ran: a (x.py:1) 60%, b (y.py:2) 40%");
}

/* a GIL wait whose holder the chain could not follow: the holder the Python side saw */
static void test_gil_holder_unfollowed(void **state)
{
	stall(200);
	hop(1, 5, "api", STALL_GIL, 199, WAKE_NONE, "step (engine.py:40)");
	strcpy(st.python, "thread 5 waiting for the GIL in step (engine.py:40), held by thread 30, "
	       "running hash_prompt (api.py:12)");
	expect("api (pid 1, thread 5) waiting 199ms for the GIL in step (engine.py:40); the GIL "
	       "held by thread 30, running hash_prompt (api.py:12)");
}

static void test_slow_reader(void **state)
{
	stall(300);
	hop(50, 52, "tokensim", STALL_SEND, 297, WAKE_NONE, NULL);
	strcpy(st.stack, "libc.so.6`write <- tokensim`tx_write [k] tcp_sendmsg_locked");
	expect("tokensim (pid 50, thread 52) blocked 297ms in a send at tokensim`tx_write, its "
	       "socket buffer full: the client reads slowly; stack: libc.so.6`write <- "
	       "tokensim`tx_write [k] tcp_sendmsg_locked");
}

static void test_unknown(void **state)
{
	stall(158);
	hop(50, 52, "tokensim", STALL_UNKNOWN, 158, WAKE_NONE, NULL);
	expect("tokensim (pid 50, thread 52) unknown 158ms, no scheduler record of it");
	/* no chain at all (no scheduler hooks) */
	stall(300);
	st.cause = STALL_UNKNOWN;
	st.part_ns[STALL_UNKNOWN] = 300 * MS;
	expect("unknown 300ms, no scheduler record of it");
}

/* idle until a timer: the wait itself is the answer */
static void test_idle_timer(void **state)
{
	stall(200);
	hop(9, 9, "node", STALL_IDLE, 199, WAKE_TIMER, NULL);
	strcpy(st.stack, "libc.so.6`epoll_wait <- node`uv__io_poll");
	expect("node (pid 9) idle 199ms, waiting for a timer; stack: libc.so.6`epoll_wait <- "
	       "node`uv__io_poll");
}

/* the issue's own example: an engine behind its API server, in a Python function */
static void test_python_frame(void **state)
{
	stall(212);
	hop(4000, 4000, "api", STALL_POLL, 211, WAKE_UNIX, NULL);
	hop(4242, 4242, "EngineCore", STALL_ONCPU, 191, WAKE_NONE,
	    "build_batch_plan (engine.py:63)");
	st.cause = STALL_ONCPU;
	strcpy(st.python, "ran: build_batch_plan (engine.py:63) 100%");
	expect("EngineCore (pid 4242) on-CPU 191ms in build_batch_plan (engine.py:63); api (pid "
	       "4000) sat idle 211ms waiting on a Unix socket");
	/* with token markers: who made the token late */
	st.engine_late = 1;
	expect("EngineCore (pid 4242) on-CPU 191ms in build_batch_plan (engine.py:63); api (pid "
	       "4000) sat idle 211ms waiting on a Unix socket; the token was made late (engine)");
	st.engine_late = 0;
	st.retransmits = 2;
	st.zero_window = true;
	st.lost = true;
	expect("EngineCore (pid 4242) on-CPU 191ms in build_batch_plan (engine.py:63); api (pid "
	       "4000) sat idle 211ms waiting on a Unix socket; the token was made in time and sent "
	       "late (front end); 2 TCP retransmits; the peer's window was zero; records were "
	       "dropped in the gap");
}

/*
 * An SGLang-shaped chain, as e2e runs give it: the API loop, its ZMQ I/O thread, the
 * detokenizer's, the scheduler's I/O thread, its main thread at a condition, the thread
 * that made it wait. Relays said by how they were woken; processes named once.
 */
static void test_long_chain(void **state)
{
	stall(60);
	hop(11957, 11957, "python3", STALL_POLL, 42, WAKE_EVENTFD, NULL);
	hop(11957, 12089, "python3", STALL_POLL, 42, WAKE_UNIX, NULL);
	hop(12092, 12310, "sglang::detoken", STALL_POLL, 41, WAKE_UNIX, NULL);
	hop(12091, 12286, "sglang::schedul", STALL_POLL, 40, WAKE_EVENTFD, NULL);
	hop(12091, 12091, "sglang::schedul", STALL_LOCK, 29, WAKE_FUTEX,
	    "Condition.wait (threading.py:320)");
	hop(12091, 12288, "sglang::schedul", STALL_RUNQ, 27, WAKE_NONE, NULL);
	st.cause = STALL_RUNQ;
	expect("sglang::schedul (pid 12091, thread 12288) runnable 27.0ms, waiting for a CPU; "
	       "python3 (pid 11957) sat idle 42.0ms waiting on an eventfd <- python3 thread 12089 "
	       "(on a Unix socket) <- sglang::detoken (pid 12092, thread 12310) (on a Unix socket) "
	       "<- sglang::schedul thread 12286 (on an eventfd) <- sglang::schedul main thread "
	       "blocked 29.0ms on a lock in Condition.wait (threading.py:320) <- sglang::schedul "
	       "thread 12288");
}

/* a chain past the bound: the last thread told first, and the cut said */
static void test_chain_cut(void **state)
{
	stall(210);
	for (uint32_t h = 0; h + 1 < STALL_HOPS_MAX; h++)
		hop(1, 100 + h, "api", STALL_POLL, 200, WAKE_UNIX, NULL);
	hop(1, 100 + STALL_HOPS_MAX - 1, "api", STALL_IDLE, 200, WAKE_UNIX, NULL);
	st.cause = STALL_IDLE;
	st.hops_cut = true;
	expect("api (pid 1, thread 107) idle 200ms, waiting for a Unix socket; api thread 100 sat "
	       "idle 200ms waiting on a Unix socket <- api thread 101 (on a Unix socket) <- api "
	       "thread 102 (on a Unix socket) <- api thread 103 (on a Unix socket) <- api thread "
	       "104 (on a Unix socket) <- api thread 105 (on a Unix socket) <- api thread 106 (on "
	       "a Unix socket) <- api thread 107; the chain goes on past 8 threads, not followed");
}

/* two processes of one name (vLLM's API server and engine, both python3): pids kept */
static void test_same_name(void **state)
{
	stall(200);
	hop(10, 10, "python3", STALL_LOCK, 199, WAKE_FUTEX, NULL);
	hop(20, 20, "python3", STALL_POLL, 199, WAKE_UNIX, NULL);
	hop(10, 12, "python3", STALL_ONCPU, 150, WAKE_NONE, NULL);
	expect("python3 (pid 10, thread 12) on-CPU 150ms; python3 (pid 10) blocked 199ms on a lock "
	       "<- python3 (pid 20) (on a Unix socket) <- python3 thread 12");
	/* no name known: pids and tids */
	stall(200);
	hop(10, 11, "", STALL_SLEEP, 199, WAKE_NONE, NULL);
	expect("thread 11 of pid 10 asleep 199ms");
}

/* steal: its own cause when it is most of the gap, else said as a share */
static void test_steal(void **state)
{
	stall(300);
	hop(1, 5, "api", STALL_STEAL, 200, WAKE_NONE, NULL);
	expect("api (pid 1, thread 5) waiting 200ms for its CPU, taken by the hypervisor (steal)");
	stall(300);
	hop(1, 5, "api", STALL_ONCPU, 255, WAKE_NONE, NULL);
	st.part_ns[STALL_STEAL] = 45 * MS;
	expect("api (pid 1, thread 5) on-CPU 255ms; 45.0ms of it stolen by the hypervisor");
}

/* the line is cut to its buffer, NUL-terminated, whatever it holds */
static void test_bound(void **state)
{
	char small[24];

	stall(210);
	for (uint32_t h = 0; h < STALL_HOPS_MAX; h++)
		hop(1000000 + h, 2000000 + h, "a-long-comm-nam", STALL_LOCK, 200, WAKE_FUTEX,
		    "a_function_with_a_long_name (a/long/path/to/its/module.py:12345)");
	memset(st.stack, 'x', sizeof(st.stack) - 1);
	memset(st.python, 'y', sizeof(st.python) - 1);
	memcpy(st.python, "ran: ", 5);
	st.hops_cut = st.lost = st.zero_window = true;
	st.retransmits = 4000000000u;
	st.engine_late = 1;
	{
		char line[STALL_LINE_MAX];

		stall__describe(&st, line, sizeof(line));
		/* the whole of it fits in the room the outputs give it */
		assert_true(strlen(line) < STALL_LINE_MAX - 1);
		assert_non_null(strstr(line, "; records were dropped in the gap"));
	}
	memset(small, '#', sizeof(small));
	stall__describe(&st, small, sizeof(small));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	stall__describe(&st, small, 1);
	assert_string_equal(small, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_on_cpu),
		cmocka_unit_test(test_runqueue),
		cmocka_unit_test(test_lock),
		cmocka_unit_test(test_sleep),
		cmocka_unit_test(test_io),
		cmocka_unit_test(test_gil),
		cmocka_unit_test(test_gil_holder_unfollowed),
		cmocka_unit_test(test_slow_reader),
		cmocka_unit_test(test_unknown),
		cmocka_unit_test(test_idle_timer),
		cmocka_unit_test(test_python_frame),
		cmocka_unit_test(test_long_chain),
		cmocka_unit_test(test_chain_cut),
		cmocka_unit_test(test_same_name),
		cmocka_unit_test(test_steal),
		cmocka_unit_test(test_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
