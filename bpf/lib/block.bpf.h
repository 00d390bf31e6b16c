/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Why a traced thread is off CPU: the syscall it blocked in (a lock, a sleep, a poll, I/O, a
 * full socket buffer) and the stacks that say where.
 */

#ifndef TT_BLOCK_BPF_H
#define TT_BLOCK_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <linux/errno.h>
#include "events.h"
#include "sysnr.h"
#include "record.bpf.h"
#include "conn.bpf.h"
#include "sock.bpf.h"
#include "thread.bpf.h"
#include "core_fixes.bpf.h"

/* the block causes (block_cause()) are below 8: a mask the verifier sees bounds the index */
#define TT_T_BLOCK_MASK	7
_Static_assert(TT_T_SEND <= TT_T_BLOCK_MASK && TT_T_NR > TT_T_BLOCK_MASK, "block causes");

/*
 * A traced thread blocked inside a send to a traced socket: its buffer is full, the client
 * reads slowly. Said here, on the rare blocking path, rather than by a hook on every send;
 * and a zero window is noted where it matters, rather than on every segment of the machine.
 */
static __always_inline bool blocked_in_send(struct task_struct *t, unsigned long nr,
					   unsigned long fd)
{
	struct tt_conn *c;
	struct sock *sk;
	__u64 key;

	if (nr != TT_NR_write && nr != TT_NR_writev && nr != TT_NR_sendto && nr != TT_NR_sendmsg)
		return false;
	sk = sock_of_task_fd(t, fd);
	if (!sk)
		return false;
	key = (__u64)sk;
	c = bpf_map_lookup_elem(&conns, &key);
	if (!c || c->mode == TT_MODE_IGNORE)
		return false;
	if (!c->unix_sk && !BPF_CORE_READ((struct tcp_sock *)sk, snd_wnd))
		emit_tcp(c, TT_TCP_ZERO_WINDOW, BPF_CORE_READ((struct tcp_sock *)sk, snd_cwnd));
	return true;
}

static __always_inline bool is_poll(unsigned long nr)
{
	return nr == TT_NR_epoll_wait || nr == TT_NR_epoll_pwait || nr == TT_NR_epoll_pwait2 ||
	       nr == TT_NR_poll || nr == TT_NR_ppoll || nr == TT_NR_select || nr == TT_NR_pselect6;
}

/* Blocks whose syscall says it all (a lock, a sleep, a poll) skip the kernel stack walk. */
static __always_inline bool kstack_tells(unsigned long nr)
{
	return nr != TT_NR_futex && nr != TT_NR_futex_waitv && nr != TT_NR_nanosleep &&
	       nr != TT_NR_clock_nanosleep && !is_poll(nr);
}

/* What a block is, from the syscall it blocked in and the task's state (enum tt_time). */
static __always_inline __u32 block_cause(unsigned long nr, __u32 state, bool in_send)
{
	if (in_send)
		return TT_T_SEND;
	if (nr == TT_NR_futex || nr == TT_NR_futex_waitv)
		return TT_T_LOCK;
	if (nr == TT_NR_nanosleep || nr == TT_NR_clock_nanosleep)
		return TT_T_SLEEP;
	if (is_poll(nr))
		return TT_T_POLL;
	if (nr == TT_NR_read || nr == TT_NR_readv || nr == TT_NR_recvfrom || nr == TT_NR_recvmsg)
		return TT_T_IO;
	/* uninterruptible: the kernel waits on a device (disk, a page fault) */
	if (state & 2)
		return TT_T_IO;
	return TT_T_BLOCKED;
}

/*
 * t (ts its state) blocks in syscall nr, a1 its first argument: what its span's cause is
 * read from. t is current at its switch-out, not when the iterator or a waker finds it
 * blocked: its own descriptors say which socket it is in a send to.
 */
static __always_inline void blocked_in(struct task_struct *t, struct thr_sched *ts,
				       unsigned long nr, unsigned long a1)
{
	ts->sysnr = nr;
	ts->nsw_out = t->nvcsw + t->nivcsw;
	ts->in_send = blocked_in_send(t, nr, a1);
	ts->futex = nr == TT_NR_futex ? a1 : 0;
}

/*
 * t, blocked in a syscall and not seen since the attach (its first event is its wake): its
 * state as if it had blocked at the attach, in the syscall it is in.
 */
static __always_inline void blocked_since_attach(struct task_struct *t, struct thr_sched *ts)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);

	ts->t_out = t_attach ?: bpf_ktime_get_ns();
	/* a state made anew after the (lazy) attach knows nothing before its RESUME sample */
	if (ts->t_snap > ts->t_out)
		ts->t_out = ts->t_snap;
	ts->t_snap = ts->t_out;
	ts->runnable = 0;
	ts->out_unseen = 1;
	ts->state = task_state(t);
	blocked_in(t, ts, regs->orig_ax, regs->di);
}

/* A stack into buf; how many addresses. One that cannot be walked is counted. */
static __always_inline __u16 stack_len(long n)
{
	if (n < 0) {
		if (n != -EFAULT)
			stat_inc(TT_STAT_STACK_LOST);
		return 0;
	}
	return n / sizeof(__u64);
}

static __always_inline __u16 get_stack(void *ctx, __u64 *buf, __u32 size, __u64 flags)
{
	return stack_len(bpf_get_stack(ctx, buf, size, flags));
}

#endif /* TT_BLOCK_BPF_H */
