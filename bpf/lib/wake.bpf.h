/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stall attribution at a wake of a traced thread: who woke it (a thread, a timer, an
 * interrupt), how (the waker's kernel stack), and what the waker's own counters were.
 */

#ifndef TT_WAKE_BPF_H
#define TT_WAKE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "events.h"
#include "record.bpf.h"
#include "thread.bpf.h"
#include "block.bpf.h"
#include "sched.bpf.h"
#include "sock.bpf.h"
#include "core_fixes.bpf.h"

/*
 * Is this CPU running an interrupt's work: a timer's expiry (an hrtimer: sleeps' and polls'
 * timeouts), a softirq (the network's receive, the timer wheel) or a device's interrupt
 * handler? Then "current" is whatever task was interrupted, or the idle task, not a waker.
 *
 * On x86-64 every hardirq and softirq runs on the CPU's own interrupt stack, never on the
 * interrupted task's: the entry code switches to it, softirqs go there too (irq_exit() runs
 * them while still on it, local_bh_enable() through do_softirq_own_stack()). A BPF program
 * runs on the stack of whatever it was called from, so the address of one of its own
 * variables says which: just below its pt_regs it is the task. This costs a subtraction at
 * a wake (a pointer minus a pointer is a number to a program that may read kernel memory; a
 * probe read of both addresses did it before, 25-30 ns more a wake), where a pair of hooks
 * around every softirq and interrupt of the machine cost ~0.5 us a loopback send
 * (BENCHMARKS.md; the kernel's preempt count, which says the same, is a per-CPU variable
 * libbpf can only resolve with CONFIG_KALLSYMS_ALL).
 * ksoftirqd runs softirqs on its own task stack: told by its name. Timers' expiries are
 * told apart from the rest by the hooks around them, per CPU: inside one while the last
 * begin is later than the last end (times, not depths: a begin or an end missed is mended
 * by the next one). One is missed when an interrupt's timer expires inside a soft timer's
 * (run from the softirq) while the same hook is running for that one: the kernel skips a
 * program already running on the CPU (its recursion_misses; the loader counts these as
 * timer_marks_skipped, not as lost records: the hooks make none). Only a wake in an
 * interrupt's context is a timer's, so a bracket left open so until the next end on that
 * CPU can only name a timer for an interrupt's wake, never for a task's.
 */
struct irq_ctx {
	__u64 in;
	__u64 out;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct irq_ctx);
} hrtimer_ctx SEC(".maps");

static __always_inline int hrtimer_step(bool in)
{
	__u32 zero = 0;
	struct irq_ctx *v = bpf_map_lookup_elem(&hrtimer_ctx, &zero);

	if (!v)
		return 0;
	if (in)
		v->in = bpf_ktime_get_ns();
	else
		v->out = bpf_ktime_get_ns();
	return 0;
}

#define PF_KTHREAD	0x00200000

/*
 * Does this run on the current task's own kernel stack (not an interrupt's)? x86-64's task
 * stack is 16 KiB (32 with KASAN) with the task's pt_regs at its top: a frame
 * of the task's own is less than 16 KiB below them (on a KASAN kernel one deeper than that
 * would read as an interrupt's), an interrupt stack's is not between them at all. The
 * stack's base itself is a number the verifiers before 6.18 will not subtract from a pointer.
 */
#define TT_TASK_STACK_MIN	16384

static __always_inline bool on_task_stack(struct task_struct *t)
{
	__u64 here = 0;
	/* pointer minus pointer is a number for a program that may read kernel memory; the
	 * barrier keeps the compiler from folding the tests below into the subtraction (into
	 * arithmetic on a pointer, which no verifier takes) */
	long below = (char *)bpf_task_pt_regs(t) - (char *)&here;

	barrier_var(below);
	return below > 0 && below < TT_TASK_STACK_MIN;
}

/*
 * Who does a wake on this CPU now: a timer's expiry (TT_WAKER_TIMER), an interrupt
 * (TT_WAKER_IRQ: a device, a softirq run for whatever task it interrupted, the idle task),
 * or the current task itself (0). A softirq inside a send syscall is the sender's own
 * delivery (loopback TCP runs the receive there): the sender woke the reader.
 */
static __always_inline __u32 in_irq_work(void)
{
	struct task_struct *t = bpf_get_current_task_btf();
	__u32 zero = 0;
	struct irq_ctx *v = bpf_map_lookup_elem(&hrtimer_ctx, &zero);
	static const char ksoftirqd[] = "ksoftirqd/";

	bool task = t->pid && on_task_stack(t), softirqd = false;

	if (task && (t->flags & PF_KTHREAD)) {
		softirqd = true;
		for (int i = 0; i < sizeof(ksoftirqd) - 1; i++)
			if (t->comm[i] != ksoftirqd[i])
				softirqd = false;
	}
	if (task && !softirqd)
		return 0;
	/* (an expiry begun before the hooks' last attach is one whose end was not seen) */
	if (v && v->in > v->out && v->in >= t_attach)
		return TT_WAKER_TIMER;
	if (t->pid && !softirqd && in_send_syscall())
		return 0;
	return TT_WAKER_IRQ;
}

/* a syscall whose wakes take one path in the kernel for one first argument (a fd, a futex) */
static __always_inline bool wake_path_keyed(unsigned long nr)
{
	return nr == TT_NR_futex || nr == TT_NR_write || nr == TT_NR_writev ||
	       nr == TT_NR_sendto || nr == TT_NR_sendmsg;
}

/*
 * How the waker woke ts (its kernel stack into ts->wkips): how many addresses. The walk is
 * the dearest part of a wake (~3-4 us on a VM, a server's long waits end in one each), and
 * most of them repeat: the same thread writes to the same eventfd or socket, or wakes the
 * same futex, to wake the same thread every engine step. A wake by the thread whose path
 * wkips holds, in the same syscall on the same first argument, takes that path again: kept.
 * A timer's expiry needs none (the kernel side said it was a timer: TT_WAKER_TIMER).
 */
static __always_inline __u16 wake_path(void *ctx, struct thr_sched *ts, __u32 irq, __u32 tid)
{
	struct pt_regs *regs;
	unsigned long nr;
	__u64 a1;

	if (irq == TT_WAKER_TIMER)
		return 0;
	if (irq) {
		ts->wk_tid = 0;
		return get_stack(ctx, ts->wkips, sizeof(ts->wkips), 0);
	}
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	nr = regs->orig_ax;
	a1 = regs->di;
	if (ts->wk_tid == tid && ts->wk_nr == nr && ts->wk_a1 == a1 && ts->wk_n)
		return ts->wk_n;
	ts->wk_n = get_stack(ctx, ts->wkips, sizeof(ts->wkips), 0);
	ts->wk_tid = wake_path_keyed(nr) ? tid : 0;
	ts->wk_nr = nr;
	ts->wk_a1 = a1;
	return ts->wk_n;
}

/*
 * A blocked traced thread is being woken, in the waker's context. For a block already long
 * enough to be sent: where it blocked in the kernel (its stack, still as it was), who woke it
 * and how (the waker's kernel stack: a timer interrupt, a futex wake, a write to a socket or
 * pipe), and the waker's own counters if it is traced, so userspace can say what the waker
 * did meanwhile.
 */

static __always_inline int wake_traced(void *ctx, struct task_struct *p)
{
	struct thr_sched *ts, *w;
	__u64 now, pid_tgid;
	__u32 irq;

	ts = thr_of(p);
	if (!ts)
		return 0;
	/*
	 * State made just now: a traced thread not seen since tracing began, blocked since
	 * before then (a Go runtime's idle M parked in a futex, a worker waiting for its first
	 * job); what ends that wait, and who, is what a gap's chain follows
	 */
	if (!ts->t_in && !ts->t_out && !ts->on) {
		/*
		 * Only off the run queue is it blocked: a wake also reaches a thread that set its
		 * sleeping state and was preempted, or is still on CPU about to sleep; that one
		 * gets its state at its next switch, as any thread first seen there
		 */
		if (task_queued(p))
			return 0;
		blocked_since_attach(p, ts);
	}
	if (!ts->t_out || ts->runnable || ts->t_wake)
		return 0;
	now = bpf_ktime_get_ns();
	ts->t_wake = now;
	pid_tgid = bpf_get_current_pid_tgid();
	/*
	 * Every wake, short ones too: an event loop's last wait before a send is often short,
	 * and who ended it is what a stall's chain follows. From an interrupt no one did.
	 */
	ts->t_woken = now;
	irq = in_irq_work();
	ts->woken_by_tid = irq ? 0 : (__u32)pid_tgid;
	ts->woken_by_tgid = irq ?: pid_tgid >> 32;	/* an interrupt's: which kind */
	/* a traced waker has state, unless it never switched nor woke yet */
	w = irq || !sched_target(pid_tgid >> 32) ? NULL :
		bpf_task_storage_get(&thr, bpf_get_current_task_btf(), 0, 0);
	if (w && !thr_current(bpf_get_current_task_btf(), w, now))
		w = NULL;
	/* a waker in its own context is on CPU, whatever its state says */
	if (w)
		mend_switch_in(ctx, bpf_get_current_task_btf(), w, now, cpu_steal_ns());
	/*
	 * What the waker did up to the wake is asked of its counters (the woken thread's wait
	 * ends here): a sample now if it sent none for a floor's time. A GIL holder in one long
	 * call wakes the waiter as it drops the GIL, on CPU all along, and sends nothing else.
	 */
	if (w && now - w->t_snap >= span_floor_ns)
		emit_snap(bpf_get_current_task_btf(), w, now, true);
	if (now - ts->t_out < span_floor_ns)
		return 0;
	/*
	 * A long wait in a syscall whose span waits for its exit (late_bit()): that exit looks at
	 * the thread's state until its switch-in is seen, in case it is not (mend_switch_in()).
	 */
	if ((late_mask & late_bit(ts->sysnr)) && !ts->exit_armed) {
		ts->exit_armed = 1;
		__sync_fetch_and_add(&late_pending, 1);
	}
	/* blocks whose syscall says it all (a lock, a sleep, a poll) need no kernel stack */
	if (kstack_tells(ts->sysnr))
		ts->nk = stack_len(bpf_get_task_stack(p, ts->kips, sizeof(ts->kips), 0));
	/* from an interrupt: no task woke it, the kind of interrupt did (TT_WAKER_*) */
	ts->waker_tid = ts->woken_by_tid;
	ts->waker_tgid = ts->woken_by_tgid;
	if (irq)
		__builtin_memset(ts->waker_comm, 0, sizeof(ts->waker_comm));
	else
		bpf_get_current_comm(ts->waker_comm, sizeof(ts->waker_comm));
	ts->nwk = wake_path(ctx, ts, irq, (__u32)pid_tgid);
	ts->waker_traced = 0;
	if (w) {
		__builtin_memcpy(ts->waker_cum, w->cum, sizeof(ts->waker_cum));
		if (w->on && w->t_in)
			add_oncpu(ts->waker_cum, w, now);
		ts->waker_traced = 1;
	}
	return 0;
}

#endif /* TT_WAKE_BPF_H */
