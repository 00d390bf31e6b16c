/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where a thread's time went: per-thread timelines built from the scheduler records (switch
 * out, switch in, wakeup), and the accounting of any interval over a set of threads.
 *
 * A thread is on CPU, runnable (waiting in a runqueue), or blocked for a cause the kernel
 * tells: the syscall it blocked in (futex: a lock; nanosleep: a sleep; epoll/poll/select:
 * waiting for events; a read; a TCP send with a full socket buffer) or its state
 * (uninterruptible: I/O). Records of one thread can come from different CPUs slightly out of
 * order: the timeline is kept sorted. Before a thread's first record its state is inferred
 * from that record (switched out: it was on CPU; switched in: runnable; woken: blocked), and a
 * send by the thread says it was on CPU then.
 */
#ifndef TT_SCHED_BOOK_H
#define TT_SCHED_BOOK_H

#include <stdint.h>
#include "events.h"
#include "request.h"

enum thr_state {
	TS_UNKNOWN,
	TS_ONCPU,
	TS_RUNQ,
	TS_BLOCKED,
};

struct sched_account {
	uint64_t part_ns[STALL_NR];	/* by cause; they add up to the interval */
	/* the longest time off CPU inside the interval, of the first thread preferably */
	uint64_t longest_ns;
	uint32_t longest_tid;
	enum stall_cause longest_cause;
	int32_t kstack, ustack;		/* its stack ids, < 0 if none */
};

struct sched_book;

/* keep_ns: how much history a thread keeps (a stall longer than that is partly unknown) */
struct sched_book *sched_book__new(uint64_t keep_ns);
void sched_book__free(struct sched_book *b);

void sched_book__record(struct sched_book *b, const struct tt_sched_ev *e);
/* tid was running at ts (it made a syscall then) */
void sched_book__oncpu(struct sched_book *b, uint32_t tid, uint64_t ts);

/*
 * Account [t0, t1] over threads tids[0..n): at each instant the interval counts as on CPU if
 * any of them ran, else runnable if any waited for a CPU, else blocked for the cause of the
 * first thread (the one that ended the interval), else of any.
 */
void sched_book__account(struct sched_book *b, const uint32_t *tids, int n, uint64_t t0,
			 uint64_t t1, struct sched_account *out);

/* The cause of a block from what the kernel said (exposed for tests). */
enum stall_cause sched_block_cause(uint32_t sysnr, uint32_t state, int in_send);

#endif /* TT_SCHED_BOOK_H */
