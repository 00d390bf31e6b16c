/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where a thread's time went, from what the kernel side sums and sends (bpf/events.h,
 * struct tt_sched_ev): per thread, samples of its counters (time on CPU, runnable, blocked
 * by cause, summed in the kernel) and the long spans off CPU with where it blocked and who
 * woke it. The kernel sends no record per context switch.
 *
 * A thread's counters are known at the samples: a span gives three (off CPU, woken, on CPU
 * again; between them exactly one counter grows), a snapshot one, and a wakeup by a traced
 * thread one of the waker's. Between samples time is shared as the counters grew; after the
 * last one the thread is taken to be on CPU (its next block, if long, is not over yet).
 * The time of an interval is then the difference of the counters at its two ends, by
 * cause: the parts add up to the interval.
 */
#ifndef TT_SCHED_BOOK_H
#define TT_SCHED_BOOK_H

#include <stdbool.h>
#include <stdint.h>
#include "events.h"
#include "request.h"
#include "stack.h"

/* A long span off CPU of a thread. */
struct sched_span {
	uint64_t t_out, t_wake, t_in;	/* t_wake 0: preempted, runnable throughout */
	enum stall_cause cause;		/* of the blocked part */
	uint32_t sysnr;
	uint64_t futex;			/* the futex word it waited on, or 0 */
	struct stack_ips where;		/* where it blocked */
	uint32_t waker_tid, waker_pid;	/* who woke it, 0 if not known */
	char waker_comm[16];
	struct stack_ips how;		/* the waker's kernel stack: how it woke it */
};

struct sched_book;

/* keep_ns: how much history a thread keeps (a stall longer than that is partly unknown) */
struct sched_book *sched_book__new(uint64_t keep_ns);
void sched_book__free(struct sched_book *b);

void sched_book__record(struct sched_book *b, const struct tt_sched_ev *e);
/* tid was running at ts (it made a syscall then) */
void sched_book__oncpu(struct sched_book *b, uint32_t tid, uint64_t ts);
/* tid's counters at ts, as a send of it carried them */
void sched_book__counters(struct sched_book *b, uint32_t tid, uint32_t pid, uint64_t ts,
			  const __u64 cum[TT_T_NR]);

/*
 * tid's own counters as the kernel keeps them, at ts (a send or read of it carried them,
 * whether the lazy scheduler hooks were on or not): what splits a time they missed.
 */
void sched_book__kcounters(struct sched_book *b, uint32_t tid, uint32_t pid, uint64_t ts,
			   const struct tt_kcnt *k);

/*
 * Thread tid's time in [t0, t1] by cause (STALL_GIL and STALL_IDLE stay 0: they are
 * decided above this, from the spans). The parts add up to t1 - t0; what no sample covers
 * is split by the kernel's own counters where they were read (on CPU, waiting for one,
 * blocked), and the rest is STALL_UNKNOWN. False if the thread is not known at all.
 */
bool sched_book__account(struct sched_book *b, uint32_t tid, uint64_t t0, uint64_t t1,
			 uint64_t part_ns[STALL_NR]);

/*
 * The longest span of tid off CPU overlapping [t0, t1] whose blocked part has one of the
 * causes in the mask (1 << enum stall_cause), or NULL. Valid until the next record.
 */
const struct sched_span *sched_book__longest_span(struct sched_book *b, uint32_t tid,
						  uint64_t t0, uint64_t t1, uint32_t cause_mask);

/*
 * The span of tid off CPU overlapping [t0, t1] whose blocked part ended last (with a cause in
 * the mask), or NULL: the wait whose end let the thread go on.
 */
/*
 * A thread's wake, however short its wait, as a send of it told: when, and by which thread
 * (0: an interrupt, a timer or the network, not a thread).
 */
struct sched_wake {
	uint64_t t_woken;
	uint32_t waker_tid, waker_pid;
};
void sched_book__woken(struct sched_book *b, uint32_t tid, uint32_t pid, uint64_t t_woken,
		       uint32_t waker_tid, uint32_t waker_pid);
/* The last wake of tid in (t0, t1] its sends told of: false if none. */
bool sched_book__last_wake(struct sched_book *b, uint32_t tid, uint64_t t0, uint64_t t1,
			   struct sched_wake *out);

const struct sched_span *sched_book__last_span(struct sched_book *b, uint32_t tid, uint64_t t0,
					       uint64_t t1, uint32_t cause_mask);

/*
 * When tid was made (TT_SCHED_BIRTH: a thread of a traced process), and by which thread
 * into *by; 0 if its making was not seen (it is older than tracing).
 */
uint64_t sched_book__born(struct sched_book *b, uint32_t tid, uint32_t *by);

/* The process a known thread belongs to, 0 if unknown. */
uint32_t sched_book__pid_of(struct sched_book *b, uint32_t tid);

/*
 * tid exited at ts: it is forgotten SCHED_EXITED_KEEP_NS later (a stall being explained
 * may still ask who it was and what it did), not keep_ns.
 */
#define SCHED_EXITED_KEEP_NS	5000000000ull
void sched_book__exited(struct sched_book *b, uint32_t tid, uint64_t ts);

/* Forget threads not heard of since before now_ns - keep_ns (exited ones sooner); returns
 * how many went. */
uint64_t sched_book__expire(struct sched_book *b, uint64_t now_ns);

/* Threads known now (bounded by expiry: the memory of thread churn comes back). */
uint64_t sched_book__threads(const struct sched_book *b);

/* The cause of a block from what the kernel said (the kernel's own rule, for tests). */
enum stall_cause sched_block_cause(uint32_t sysnr, uint32_t state, int in_send);

#endif /* TT_SCHED_BOOK_H */
