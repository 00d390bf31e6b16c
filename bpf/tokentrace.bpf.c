// SPDX-License-Identifier: GPL-2.0
/*
 * tokentrace kernel side: socket sends and receives of the traced processes, their TCP state
 * changes, the scheduler's view of their threads, and markers inside them.
 *
 * This file holds the programs, each a few lines over bpf/lib/, where every concern keeps its
 * types, maps and logic in a header of its own that includes what it needs:
 *   data.bpf.h       a send or receive on a traced socket, whichever family of hooks saw it
 *   conn_map.bpf.h   the connection table (struct tt_conn); conn.bpf.h its records and end
 *   budget.bpf.h     --budget;  capture.bpf.h the payload;  aggregate.bpf.h --aggregate
 *   ready.bpf.h      when bytes could first be read (data-ready, a send's delivery)
 *   lifecycle.bpf.h  accept, close, TCP state changes
 *   proc.bpf.h       the traced processes: found, forked, exec'ed, exited
 *   markers.bpf.h    the user's uprobes and USDT probes
 *   thread.bpf.h     a traced thread's scheduling state;  block.bpf.h why it is off CPU
 *   sched.bpf.h      stall attribution at switches;  wake.bpf.h at wakes;  seed.bpf.h the
 *                    state the lazy hooks start from (the task iterator)
 *   tls.bpf.h        OpenSSL's plaintext;  python.bpf.h CPython's frames
 *   record.bpf.h, ring.bpf.h, targets.bpf.h, sock.bpf.h, usrc.bpf.h, core_fixes.bpf.h:
 *                    what the others share (records, the ring, the traced set, sockets, user
 *                    buffers, kernel-version shims)
 * One object, one skeleton: the loader chooses programs by autoload (user/sys/loader.c), and
 * the names here are its skeleton fields (and tests/tools/pydriver.c's).
 *
 * Data hooks come in families, one loaded per run, chosen by what the kernel has
 * (user/sys/loader.c; docs/data-flow.md):
 *   tp       tracepoints sock:sock_send_length / sock_recv_length (Linux 6.5+). They fire
 *            inside sock_sendmsg()/sock_recvmsg() for every path into a socket, only for
 *            sockets, after the bytes moved: pipes and eventfds never reach them.
 *   fexit    the same place on kernels with BPF trampolines: inet_sendmsg, inet6_sendmsg and
 *            unix_stream_sendmsg, and their recvmsg (called through the socket's ops, so
 *            never inlined into their callers).
 *   kprobe   the same functions with kprobes and kretprobes, where fentry is refused.
 *   syscall  the exit tracepoints of write, writev, sendto, sendmsg and the reads: a
 *            descriptor-to-socket check for the targets' calls, on any kernel.
 * All end in data_of_sock(): the same records to userspace whichever fired. The user buffer
 * is found from the syscall's own arguments in the task's saved user registers.
 */

#include "lib/data.bpf.h"
#include "lib/lifecycle.bpf.h"
#include "lib/ready.bpf.h"
#include "lib/proc.bpf.h"
#include "lib/markers.bpf.h"
#include "lib/sched.bpf.h"
#include "lib/wake.bpf.h"
#include "lib/seed.bpf.h"
#include "lib/tls.bpf.h"
#include "lib/python.bpf.h"
#include "lib/conn.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* ------------------------------------------------------------------ data: tp family */

SEC("tp_btf/sock_send_length")
int BPF_PROG(sock_send_length, struct sock *sk, int ret, int flags)
{
	return handle_data(ctx, sk, ret, TT_DIR_SEND);
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(sock_recv_length, struct sock *sk, int ret, int flags)
{
	if (flags & MSG_PEEK)	/* the same bytes will be read again */
		return 0;
	return handle_data(ctx, sk, ret, TT_DIR_RECV);
}

/* ------------------------------------------------------------------ data: fexit family */

SEC("fexit/inet_sendmsg")
int BPF_PROG(fexit_inet_sendmsg, struct socket *sock, struct msghdr *msg, size_t size, int ret)
{
	return handle_data(ctx, sock->sk, ret, TT_DIR_SEND);
}

SEC("fexit/inet6_sendmsg")
int BPF_PROG(fexit_inet6_sendmsg, struct socket *sock, struct msghdr *msg, size_t size, int ret)
{
	return handle_data(ctx, sock->sk, ret, TT_DIR_SEND);
}

SEC("fexit/unix_stream_sendmsg")
int BPF_PROG(fexit_unix_sendmsg, struct socket *sock, struct msghdr *msg, size_t size, int ret)
{
	return handle_data(ctx, sock->sk, ret, TT_DIR_SEND);
}

SEC("fexit/inet_recvmsg")
int BPF_PROG(fexit_inet_recvmsg, struct socket *sock, struct msghdr *msg, size_t size,
	     int flags, int ret)
{
	if (flags & MSG_PEEK)
		return 0;
	return handle_data(ctx, sock->sk, ret, TT_DIR_RECV);
}

SEC("fexit/inet6_recvmsg")
int BPF_PROG(fexit_inet6_recvmsg, struct socket *sock, struct msghdr *msg, size_t size,
	     int flags, int ret)
{
	if (flags & MSG_PEEK)
		return 0;
	return handle_data(ctx, sock->sk, ret, TT_DIR_RECV);
}

SEC("fexit/unix_stream_recvmsg")
int BPF_PROG(fexit_unix_recvmsg, struct socket *sock, struct msghdr *msg, size_t size,
	     int flags, int ret)
{
	if (flags & MSG_PEEK)
		return 0;
	return handle_data(ctx, sock->sk, ret, TT_DIR_RECV);
}

/* ------------------------------------------------------------------ data: kprobe family */

SEC("kprobe/inet_sendmsg")
int BPF_KPROBE(kp_inet_sendmsg, struct socket *sock)
{
	return kprobe_enter(sock, 0);
}

SEC("kretprobe/inet_sendmsg")
int BPF_KRETPROBE(krp_inet_sendmsg, int ret)
{
	return kprobe_exit(ctx, ret, TT_DIR_SEND);
}

SEC("kprobe/inet6_sendmsg")
int BPF_KPROBE(kp_inet6_sendmsg, struct socket *sock)
{
	return kprobe_enter(sock, 0);
}

SEC("kretprobe/inet6_sendmsg")
int BPF_KRETPROBE(krp_inet6_sendmsg, int ret)
{
	return kprobe_exit(ctx, ret, TT_DIR_SEND);
}

SEC("kprobe/unix_stream_sendmsg")
int BPF_KPROBE(kp_unix_sendmsg, struct socket *sock)
{
	return kprobe_enter(sock, 0);
}

SEC("kretprobe/unix_stream_sendmsg")
int BPF_KRETPROBE(krp_unix_sendmsg, int ret)
{
	return kprobe_exit(ctx, ret, TT_DIR_SEND);
}

SEC("kprobe/inet_recvmsg")
int BPF_KPROBE(kp_inet_recvmsg, struct socket *sock, struct msghdr *msg, size_t size, int flags)
{
	return kprobe_enter(sock, flags);
}

SEC("kretprobe/inet_recvmsg")
int BPF_KRETPROBE(krp_inet_recvmsg, int ret)
{
	return kprobe_exit(ctx, ret, TT_DIR_RECV);
}

SEC("kprobe/inet6_recvmsg")
int BPF_KPROBE(kp_inet6_recvmsg, struct socket *sock, struct msghdr *msg, size_t size, int flags)
{
	return kprobe_enter(sock, flags);
}

SEC("kretprobe/inet6_recvmsg")
int BPF_KRETPROBE(krp_inet6_recvmsg, int ret)
{
	return kprobe_exit(ctx, ret, TT_DIR_RECV);
}

SEC("kprobe/unix_stream_recvmsg")
int BPF_KPROBE(kp_unix_recvmsg, struct socket *sock, struct msghdr *msg, size_t size, int flags)
{
	return kprobe_enter(sock, flags);
}

SEC("kretprobe/unix_stream_recvmsg")
int BPF_KRETPROBE(krp_unix_recvmsg, int ret)
{
	return kprobe_exit(ctx, ret, TT_DIR_RECV);
}

/* ------------------------------------------------------------------ data: syscall family */

SEC("tracepoint/syscalls/sys_exit_write")
int sys_exit_write(struct trace_event_raw_sys_exit *ctx)
{
	return sys_data(ctx, ctx->ret, TT_DIR_SEND);
}

SEC("tracepoint/syscalls/sys_exit_writev")
int sys_exit_writev(struct trace_event_raw_sys_exit *ctx)
{
	return sys_data(ctx, ctx->ret, TT_DIR_SEND);
}

SEC("tracepoint/syscalls/sys_exit_sendto")
int sys_exit_sendto(struct trace_event_raw_sys_exit *ctx)
{
	return sys_data(ctx, ctx->ret, TT_DIR_SEND);
}

SEC("tracepoint/syscalls/sys_exit_sendmsg")
int sys_exit_sendmsg(struct trace_event_raw_sys_exit *ctx)
{
	return sys_data(ctx, ctx->ret, TT_DIR_SEND);
}

SEC("tracepoint/syscalls/sys_exit_read")
int sys_exit_read(struct trace_event_raw_sys_exit *ctx)
{
	return sys_data(ctx, ctx->ret, TT_DIR_RECV);
}

SEC("tracepoint/syscalls/sys_exit_readv")
int sys_exit_readv(struct trace_event_raw_sys_exit *ctx)
{
	return sys_data(ctx, ctx->ret, TT_DIR_RECV);
}

SEC("tracepoint/syscalls/sys_exit_recvfrom")
int sys_exit_recvfrom(struct trace_event_raw_sys_exit *ctx)
{
	return sys_data(ctx, ctx->ret, TT_DIR_RECV);
}

SEC("tracepoint/syscalls/sys_exit_recvmsg")
int sys_exit_recvmsg(struct trace_event_raw_sys_exit *ctx)
{
	return sys_data(ctx, ctx->ret, TT_DIR_RECV);
}

/* ------------------------------------------------------------------ data ready */

SEC("tp_btf/sk_data_ready")
int BPF_PROG(sk_data_ready, struct sock *sk)
{
	return data_ready(sk, true);
}

/* kernels without the sk_data_ready tracepoint (before 6.4): the default callback itself */
SEC("fentry/sock_def_readable")
int BPF_PROG(fentry_sock_def_readable, struct sock *sk)
{
	return data_ready(sk, true);
}

SEC("kprobe/sock_def_readable")
int BPF_KPROBE(kp_sock_def_readable, struct sock *sk)
{
	return data_ready(sk, false);
}

/* ------------------------------------------------------------------ connections */

/*
 * The syscalls tokentrace hooks outside the socket layer (accept, close, and with stalls the
 * exits of futex and the sleeps) come in two forms. A syscall tracepoint, any one, sends
 * every syscall of every process on the machine down the kernel's tracing slow path while it
 * is attached (the per-task flag is set machine-wide): ~55 ns more a syscall on this
 * project's VMs (BENCHMARKS.md), paid by processes tokentrace does not trace. Where the
 * kernel has BPF trampolines (the loader probes: Linux 5.5+ with ftrace direct calls), the
 * syscalls' own functions are hooked instead, and only their calls pay. x86-64's wrappers,
 * which take the user registers: 64-bit processes' calls only (a 32-bit server's accept
 * would not be seen; its connections are still found at their first read or write).
 */
SEC("tracepoint/syscalls/sys_exit_accept4")
int sys_exit_accept4(struct trace_event_raw_sys_exit *ctx)
{
	return handle_accept(ctx->ret);
}

SEC("tracepoint/syscalls/sys_exit_accept")
int sys_exit_accept(struct trace_event_raw_sys_exit *ctx)
{
	return handle_accept(ctx->ret);
}

SEC("fexit/__x64_sys_accept4")
int BPF_PROG(fx_exit_accept4, const struct pt_regs *regs, long ret)
{
	return handle_accept(ret);
}

SEC("fexit/__x64_sys_accept")
int BPF_PROG(fx_exit_accept, const struct pt_regs *regs, long ret)
{
	return handle_accept(ret);
}

SEC("tracepoint/syscalls/sys_enter_close")
int sys_enter_close(struct trace_event_raw_sys_enter *ctx)
{
	return close_fd(ctx->args[0]);
}

SEC("fentry/__x64_sys_close")
int BPF_PROG(fx_enter_close, const struct pt_regs *regs)
{
	return close_fd(regs->di);
}

SEC("raw_tp/inet_sock_set_state")
int BPF_PROG(inet_sock_set_state, struct sock *sk, int oldstate, int newstate)
{
	return conn_state_change(sk, oldstate, newstate);
}

SEC("raw_tp/tcp_retransmit_skb")
int BPF_PROG(tcp_retransmit_skb, struct sock *sk)
{
	return conn_retransmit(sk);
}

/* ------------------------------------------------------------------ processes */

SEC("tp_btf/sched_process_fork")
int BPF_PROG(proc_fork, struct task_struct *parent, struct task_struct *child)
{
	return proc_forked(parent, child);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(proc_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	return proc_execed(p);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(proc_exit, struct task_struct *p)
{
	return proc_exited(ctx, p);
}

/* ------------------------------------------------------------------ markers */

/* Function entry: the key is an argument register (the C calling convention). */
SEC("uprobe")
int marker_uprobe(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	unsigned int n = TT_COOKIE_KEYARG(cookie);

	return emit_marker(ctx, cookie, reg_arg(ctx, n), n >= 1 && n <= 6);
}

/* Function return: only the return value is left. */
SEC("uretprobe")
int marker_uretprobe(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);

	return emit_marker(ctx, cookie, PT_REGS_RC(ctx),
			   TT_COOKIE_KEYARG(cookie) == TT_KEYARG_RET);
}

/* USDT: arguments as the probe's note describes them (register, stack or constant). */
SEC("usdt")
int marker_usdt(struct pt_regs *ctx)
{
	__u64 cookie = bpf_usdt_cookie(ctx);
	unsigned int n = TT_COOKIE_KEYARG(cookie);
	long key = 0;
	bool have = n >= 1 && n <= 6 && !bpf_usdt_arg(ctx, n - 1, &key);

	return emit_marker(ctx, cookie, key, have);
}

/* ------------------------------------------------------------------ stalls: switches */

/* tp_btf: the task pointers are typed, as task storage wants them */
SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return on_switch(ctx, preempt, prev, next, prev_state);
}

/* before Linux 5.18 the tracepoint has no prev_state: read it from the task (core_fixes) */
SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_nostate, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	return on_switch(ctx, preempt, prev, next, task_state(prev));
}

/*
 * The syscall tracepoints: one program, attached by userspace to each late exit's tracepoint
 * (the id says which), so the kernel verifies it once instead of once per syscall.
 */
SEC("tracepoint/syscalls/sys_exit_futex")
int late_exit_tp(struct trace_event_raw_sys_exit *ctx)
{
	return late_exit(ctx, ctx->id);
}

/* the trampoline on each syscall's function (see fx_exit_accept4): a program each */
#define LATE_EXIT(name)								\
SEC("fexit/__x64_sys_" #name)							\
int BPF_PROG(fx_late_exit_##name, const struct pt_regs *regs, long ret)		\
{										\
	return late_exit(ctx, TT_NR_##name);					\
}
LATE_EXIT(futex)
LATE_EXIT(nanosleep)
LATE_EXIT(clock_nanosleep)

/* ------------------------------------------------------------------ stalls: wakes */

SEC("raw_tp/hrtimer_expire_entry")
int BPF_PROG(irq_hrtimer_in) { return hrtimer_step(true); }
SEC("raw_tp/hrtimer_expire_exit")
int BPF_PROG(irq_hrtimer_out) { return hrtimer_step(false); }

SEC("tp_btf/sched_waking")
int BPF_PROG(sched_waking, struct task_struct *p)
{
	return wake_traced(ctx, p);
}

/* ------------------------------------------------------------------ stalls: seed */

SEC("iter/task")
int sched_seed(struct bpf_iter__task *ctx)
{
	return seed_thread(ctx->task);
}

/* ------------------------------------------------------------------ TLS */

SEC("uprobe")
int tls_write_enter(struct pt_regs *ctx)
{
	return tls_enter(ctx, TLS_WRITE);
}

SEC("uprobe")
int tls_write_ex_enter(struct pt_regs *ctx)
{
	return tls_enter(ctx, TLS_WRITE_EX);
}

SEC("uprobe")
int tls_read_enter(struct pt_regs *ctx)
{
	return tls_enter(ctx, TLS_READ);
}

SEC("uprobe")
int tls_read_ex_enter(struct pt_regs *ctx)
{
	return tls_enter(ctx, TLS_READ_EX);
}

SEC("uprobe")
int tls_handshake_enter(struct pt_regs *ctx)
{
	return tls_enter(ctx, TLS_HANDSHAKE);
}

SEC("uretprobe")
int tls_exit_prog(struct pt_regs *ctx)
{
	return tls_exit(ctx);
}

/* ------------------------------------------------------------------ Python */

SEC("?perf_event")
int py_sample(struct bpf_perf_event_data *ctx)
{
	return py_on_tick(ctx);
}

/*
 * The same switch-out hook standing alone, for tests/tools/pydriver.c (and for a loader that
 * does not call py_emit_blocked() from its own sched_switch program). Off unless asked for.
 */
SEC("?raw_tp/sched_switch")
int BPF_PROG(py_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	if (!preempt && prev_state)
		py_emit_blocked(0);
	return 0;
}
