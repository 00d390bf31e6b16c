/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Kernel-version differences, in one place, each with the version that changed it. Fields
 * are read through CO-RE: a field a kernel lacks is never touched.
 */
#ifndef TT_CORE_FIXES_BPF_H
#define TT_CORE_FIXES_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>

/*
 * task_struct::state was renamed __state in Linux 5.14 (commit 2f064a59a11f, "sched: Change
 * task_struct::state"); sched_switch's raw tracepoint gained prev_state as a 4th argument in
 * 5.18 (commit fa2c3254d7cf). Older kernels: read it from the task.
 */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline unsigned int task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

/*
 * struct sock::sk_type and sk_protocol became plain u16 fields in Linux 5.6 (commit
 * bf9765145b85, "sock: Make sk_protocol a 16-bit value"); tokentrace needs 5.15 or newer
 * (bpf_task_pt_regs), so the plain reads are enough.
 */

#endif /* TT_CORE_FIXES_BPF_H */
