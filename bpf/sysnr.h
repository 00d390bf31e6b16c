/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Syscall numbers of the send/recv family, per architecture. The sock:sock_{send,recv}_length
 * tracepoints do not say which syscall they fired in nor where the user buffer is; the syscall
 * number and arguments saved in the task's user pt_regs do.
 */
#ifndef TT_SYSNR_H
#define TT_SYSNR_H

#if defined(__x86_64__) || defined(__TARGET_ARCH_x86)
#define TT_NR_read	0
#define TT_NR_write	1
#define TT_NR_readv	19
#define TT_NR_writev	20
#define TT_NR_sendto	44
#define TT_NR_recvfrom	45
#define TT_NR_sendmsg	46
#define TT_NR_recvmsg	47
/* where a thread blocks says why (stall attribution, in userspace) */
#define TT_NR_poll		7
#define TT_NR_select		23
#define TT_NR_nanosleep		35
#define TT_NR_futex		202
#define TT_NR_clock_nanosleep	230
#define TT_NR_epoll_wait	232
#define TT_NR_pselect6		270
#define TT_NR_ppoll		271
#define TT_NR_epoll_pwait	281
#define TT_NR_futex_waitv	449
#define TT_NR_epoll_pwait2	441
#else
#error "tokentrace: syscall numbers for this architecture are missing in bpf/sysnr.h"
#endif

#endif /* TT_SYSNR_H */
