// SPDX-License-Identifier: GPL-2.0
/*
 * hookprobe: every hook tokentrace could use for socket sends and receives, the scheduler and
 * the connection life cycle, each one counting how often it fired in the probing process and
 * the byte count it saw. Which of them load, attach and fire on a kernel is what decides the
 * hook variant tokentrace can pick there. A program is named hN (N indexes the counters);
 * hN_helper programs only test that a helper loads and are never attached.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

#define NHOOK 64

const volatile __u32 target_tgid;
__u64 hits[NHOOK];
__u64 bytes[NHOOK];

static __always_inline int hit(int id, long len)
{
	if ((bpf_get_current_pid_tgid() >> 32) != target_tgid)
		return 0;
	__sync_fetch_and_add(&hits[id], 1);
	if (len > 0)
		__sync_fetch_and_add(&bytes[id], len);
	return 0;
}

/* the tracepoints tokentrace uses today (6.3+) */
SEC("raw_tp/sock_send_length")
int BPF_PROG(h0, struct sock *sk, int ret, int flags)
{
	return hit(0, ret);
}

SEC("raw_tp/sock_recv_length")
int BPF_PROG(h1, struct sock *sk, int ret, int flags)
{
	return hit(1, ret);
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(h2, struct sock *sk, int ret, int flags)
{
	return hit(2, ret);
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(h3, struct sock *sk, int ret, int flags)
{
	return hit(3, ret);
}

/* fexit: the return value is the byte count; which paths reach each function differs */
SEC("fexit/sock_sendmsg")
int BPF_PROG(h4, struct socket *sock, struct msghdr *msg, int ret)
{
	return hit(4, ret);
}

SEC("fexit/sock_recvmsg")
int BPF_PROG(h5, struct socket *sock, struct msghdr *msg, int flags, int ret)
{
	return hit(5, ret);
}

SEC("fexit/__sock_sendmsg")
int BPF_PROG(h6, struct socket *sock, struct msghdr *msg, int ret)
{
	return hit(6, ret);
}

SEC("fexit/sock_write_iter")
int BPF_PROG(h7, struct kiocb *iocb, struct iov_iter *from, long ret)
{
	return hit(7, ret);
}

SEC("fexit/sock_read_iter")
int BPF_PROG(h8, struct kiocb *iocb, struct iov_iter *to, long ret)
{
	return hit(8, ret);
}

SEC("fexit/inet_sendmsg")
int BPF_PROG(h9, struct socket *sock, struct msghdr *msg, size_t size, int ret)
{
	return hit(9, ret);
}

SEC("fexit/inet_recvmsg")
int BPF_PROG(h10, struct socket *sock, struct msghdr *msg, size_t size, int flags, int ret)
{
	return hit(10, ret);
}

SEC("fexit/inet6_sendmsg")
int BPF_PROG(h11, struct socket *sock, struct msghdr *msg, size_t size, int ret)
{
	return hit(11, ret);
}

SEC("fexit/inet6_recvmsg")
int BPF_PROG(h12, struct socket *sock, struct msghdr *msg, size_t size, int flags, int ret)
{
	return hit(12, ret);
}

SEC("fexit/tcp_sendmsg")
int BPF_PROG(h13, struct sock *sk, struct msghdr *msg, size_t size, int ret)
{
	return hit(13, ret);
}

SEC("fexit/tcp_recvmsg")
int BPF_PROG(h14, struct sock *sk, struct msghdr *msg, size_t len, int flags, int *addr_len,
	     int ret)
{
	return hit(14, ret);
}
/* both send paths pass the LSM hook, but before the bytes move: no result here */
SEC("fentry/security_socket_sendmsg")
int BPF_PROG(h15, struct socket *sock, struct msghdr *msg, int size)
{
	return hit(15, size);
}

SEC("fentry/security_socket_recvmsg")
int BPF_PROG(h16, struct socket *sock, struct msghdr *msg, int size, int flags)
{
	return hit(16, 0);
}

/* kretprobes: no BTF needed, any exported or static symbol that is not inlined */
#define KRET(id, func)							\
	SEC("kretprobe/" #func)						\
	int BPF_KRETPROBE(h##id, long ret)				\
	{								\
		return hit(id, (int)ret);				\
	}
KRET(17, sock_sendmsg)
KRET(18, sock_recvmsg)
KRET(19, __sock_sendmsg)
KRET(20, sock_write_iter)
KRET(21, sock_read_iter)
KRET(22, tcp_sendmsg)
KRET(23, tcp_recvmsg)
KRET(24, inet_sendmsg)
KRET(25, inet_recvmsg)

/* syscall exits: every kernel has them, but each sees its own syscall only */
#define SYS_EXIT(id, name)						\
	SEC("tracepoint/syscalls/sys_exit_" #name)			\
	int h##id(struct trace_event_raw_sys_exit *ctx)			\
	{								\
		return hit(id, ctx->ret);				\
	}
SYS_EXIT(26, write)
SYS_EXIT(27, read)
SYS_EXIT(28, sendto)
SYS_EXIT(29, recvfrom)
SYS_EXIT(30, sendmsg)
SYS_EXIT(31, recvmsg)
SYS_EXIT(32, writev)
SYS_EXIT(33, readv)

/* the other tracepoints tokentrace attaches */
SEC("raw_tp/sk_data_ready")
int BPF_PROG(h34, struct sock *sk)
{
	return hit(34, 0);
}

SEC("raw_tp/inet_sock_set_state")
int BPF_PROG(h35, struct sock *sk, int oldstate, int newstate)
{
	return hit(35, 0);
}

SEC("raw_tp/tcp_retransmit_skb")
int BPF_PROG(h36, struct sock *sk)
{
	return hit(36, 0);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(h37, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return hit(37, 0);
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(h38, struct task_struct *p)
{
	return hit(38, 0);
}
/* tp_btf checks the four-argument prototype (prev_state, 5.18+) against the kernel's */
SEC("tp_btf/sched_switch")
int BPF_PROG(h39, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return hit(39, prev_state);
}

SEC("kprobe/sock_sendmsg")
int BPF_KPROBE(h40)
{
	return hit(40, 0);
}

SEC("kprobe/tcp_sendmsg")
int BPF_KPROBE(h41)
{
	return hit(41, 0);
}

/*
 * helpers: loaded, never attached; the result goes to a global, since fexit programs must
 * return 0 (6.12's verifier checks it)
 */
__u64 sink;

static long loop_cb(__u64 i, void *ctx)
{
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(h50_bpf_loop)
{
	sink = bpf_loop(4, loop_cb, NULL, 0);
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(h51_bpf_get_current_task_btf)
{
	struct task_struct *t = bpf_get_current_task_btf();

	sink = t->tgid;
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(h52_bpf_task_pt_regs)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

	sink = regs != NULL;
	return 0;
}

SEC("kprobe/sock_sendmsg")
int BPF_KPROBE(h53_bpf_get_attach_cookie)
{
	sink = bpf_get_attach_cookie(ctx);
	return 0;
}

SEC("fexit/sock_recvmsg")
int BPF_PROG(h54_bpf_get_attach_cookie_fexit, struct socket *sock, struct msghdr *msg,
	     int flags, int ret)
{
	sink = bpf_get_attach_cookie(ctx);
	return 0;
}
