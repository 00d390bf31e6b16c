/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Is this process traced, and how (TT_TGT_*)? Every send, receive, context switch and wake
 * on the machine asks, so the answer for the processes that are not traced must cost next
 * to nothing: two bits per tgid in an array in global data, indexed by the tgid, is a load
 * the verifier resolves to an address (no helper call, no hash, one cache line) where a hash
 * lookup cost ~0.1 us on these VMs. PID_MAX_LIMIT tgids at two bits are 1 MiB. Both sides
 * change a word with atomic or/and: the kernel side here, userspace through the mapped .bss
 * (loader__add_target()), so neither loses the other's update of a neighbouring tgid.
 */

#ifndef TT_TARGETS_BPF_H
#define TT_TARGETS_BPF_H

#include "vmlinux.h"
#include "events.h"

__u64 target_bits[TT_TGT_WORDS];

static __always_inline __u32 target_flags(__u32 tgid)
{
	return (target_bits[TT_TGT_WORD(tgid)] >> TT_TGT_SHIFT(tgid)) & 3;
}

/* tgid joins with flags; what it had before (0: it is new) */
static __always_inline __u32 target_add(__u32 tgid, __u32 flags)
{
	__u32 sh = TT_TGT_SHIFT(tgid);

	return (__sync_fetch_and_or(&target_bits[TT_TGT_WORD(tgid)], (__u64)flags << sh) >> sh) &
	       3;
}

static __always_inline void target_del(__u32 tgid)
{
	__sync_fetch_and_and(&target_bits[TT_TGT_WORD(tgid)], ~(3ull << TT_TGT_SHIFT(tgid)));
}

#endif /* TT_TARGETS_BPF_H */
