/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where the bytes a send or read moved are in the process: the syscall's own user buffers, from
 * the registers saved at its entry, and a peek at their first bytes.
 */

#ifndef TT_USRC_BPF_H
#define TT_USRC_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "sysnr.h"

/* Where the syscall that moved the bytes had them. */
enum usrc_kind {
	USRC_NONE,
	USRC_CONTIG,
	USRC_IOV,
};

struct usrc {
	__u32 kind;
	__u32 sysnr;
	__u64 ptr;	/* the buffer, or the iovec array */
	__u64 len;	/* its length, or the number of iovecs */
};

/*
 * The user buffers of the current syscall, from the registers saved at its entry: they are
 * the caller's, unchanged while the syscall runs.
 */
static __always_inline void usrc_of_syscall(struct usrc *u)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	/*
	 * A BTF pointer: plain loads, each done once here (clang would otherwise merge a load
	 * from regs with one from msg into one instruction, which the verifier refuses)
	 */
	unsigned long nr = regs->orig_ax, a2 = regs->si, a3 = regs->dx;
	struct user_msghdr msg;

	barrier_var(a2);
	barrier_var(a3);
	u->sysnr = nr;
	u->kind = USRC_NONE;
	switch (nr) {
	case TT_NR_read:
	case TT_NR_write:
	case TT_NR_recvfrom:
	case TT_NR_sendto:
		u->kind = USRC_CONTIG;
		u->ptr = a2;	/* 2nd argument */
		u->len = a3;	/* 3rd */
		break;
	case TT_NR_readv:
	case TT_NR_writev:
		u->kind = USRC_IOV;
		u->ptr = a2;
		u->len = a3;
		break;
	case TT_NR_recvmsg:
	case TT_NR_sendmsg:
		if (bpf_probe_read_user(&msg, sizeof(msg), (void *)a2))
			break;
		u->kind = USRC_IOV;
		u->ptr = (__u64)msg.msg_iov;
		u->len = msg.msg_iovlen;
		break;
	default:
		/* sendfile, splice, sendmmsg, io_uring: the length is known, the bytes are not */
		break;
	}
	/* one iovec is one buffer: copied once like write() */
	if (u->kind == USRC_IOV && u->len == 1) {
		struct iovec v;

		if (!bpf_probe_read_user(&v, sizeof(v), (void *)u->ptr)) {
			u->kind = USRC_CONTIG;
			u->ptr = (__u64)v.iov_base;
			u->len = v.iov_len;
		}
	}
}

/*
 * The first bytes (up to 8) a send or read moved, enough to tell a response head, the chunked
 * end or a request line; how many were read.
 */
static __always_inline __u32 peek8(const struct usrc *u, __u8 *h, __u32 want)
{
	__u64 p = u->ptr;

	if (u->kind == USRC_IOV) {
		struct iovec v;

		if (!u->len || bpf_probe_read_user(&v, sizeof(v), (void *)u->ptr))
			return 0;
		p = (__u64)v.iov_base;
		if (v.iov_len < want)
			want = v.iov_len;
	} else if (u->kind != USRC_CONTIG) {
		return 0;
	}
	/*
	 * A constant size, or a masked one the verifier sees: clang drops a mask or a clamp it
	 * can prove idle from the caller's bound, which the verifier may not have kept
	 */
	if (want >= 8)
		return bpf_probe_read_user(h, 8, (void *)p) ? 0 : 8;
	barrier_var(want);
	want &= 7;
	if (bpf_probe_read_user(h, want, (void *)p))
		return 0;
	return want;
}

#endif /* TT_USRC_BPF_H */
