/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Sockets as tokentrace sees them: which ones it follows (the targets' TCP and Unix stream
 * sockets), the socket behind a descriptor, and the kernel's constants vmlinux.h cannot carry
 * (macros).
 *
 * Where a program has the socket typed (tp and fexit: BTF pointers) its fields are plain
 * loads, which the kernel guards against faults; kprobes and the syscall family have an
 * address only, and read through bpf_probe_read_kernel(), a helper call per field.
 */

#ifndef TT_SOCK_BPF_H
#define TT_SOCK_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sysnr.h"
#include "targets.bpf.h"

/*
 * A field of a socket: typed is a constant in each program (the branch not taken is
 * compiled away), true where the socket is a BTF pointer (see above).
 */
#define SK_READ(typed, p, field) ((typed) ? (p)->field : BPF_CORE_READ(p, field))

/* sk as a tcp_sock: a typed struct sock * does not reach its fields, the kernel's cast does */
static __always_inline struct tcp_sock *tcp_of(struct sock *sk, bool typed)
{
	return typed ? bpf_skc_to_tcp_sock(sk) : (struct tcp_sock *)sk;
}

#define AF_UNIX		1
#define AF_INET		2
#define AF_INET6	10
#define SOCK_STREAM	1
#define MSG_PEEK	2
#define S_IFMT		0170000
#define S_IFSOCK	0140000

const volatile bool unix_socks = true;	/* trace Unix-domain stream sockets too */

/* a process whose sockets are traced */
static __always_inline bool is_target(__u32 tgid)
{
	return target_flags(tgid) & TT_TGT_DATA;
}

/* A stream socket tokentrace can parse: TCP over IPv4/IPv6, or a Unix stream socket. */
static __always_inline bool sk_is_stream(struct sock *sk)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);

	if (family == AF_UNIX)
		return unix_socks && BPF_CORE_READ(sk, sk_type) == SOCK_STREAM;
	if (family != AF_INET && family != AF_INET6)
		return false;
	return BPF_CORE_READ(sk, sk_protocol) == IPPROTO_TCP;
}

/*
 * The socket behind a descriptor of task, or NULL. The task need not be current (the
 * iterator, or a waker, asks of a thread blocked in a send): its table is read as it is.
 */
static __always_inline struct sock *sock_of_task_fd(struct task_struct *task, long fd)
{
	struct fdtable *fdt;
	struct file **fds, *f;
	struct socket *sock;

	if (fd < 0)
		return NULL;
	fdt = BPF_CORE_READ(task, files, fdt);
	/* the descriptor is a user register: never index past the table */
	if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) || !f)
		return NULL;
	if ((BPF_CORE_READ(f, f_inode, i_mode) & S_IFMT) != S_IFSOCK)
		return NULL;
	sock = BPF_CORE_READ(f, private_data);
	return BPF_CORE_READ(sock, sk);
}

/* The socket behind a descriptor of the current task, or NULL. */
static __always_inline struct sock *sock_of_fd(long fd)
{
	return sock_of_task_fd((struct task_struct *)bpf_get_current_task(), fd);
}

/*
 * The current thread is inside a send syscall. Its queued bytes also leave when an ACK is
 * processed in its context while it waits in epoll or runs in userspace (an interrupt's
 * softirq): such a delivery is of older bytes, and must not date the thread's next send.
 */
static __always_inline bool in_send_syscall(void)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	long nr = regs->orig_ax;

	return nr == TT_NR_write || nr == TT_NR_writev || nr == TT_NR_sendto ||
	       nr == TT_NR_sendmsg;
}

#endif /* TT_SOCK_BPF_H */
