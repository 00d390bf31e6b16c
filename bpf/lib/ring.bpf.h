/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The ring buffer every record goes through, and when a record wakes the consumer. It polls
 * on a short timer (POLL_MS in user/cli) and drains whatever waits, so a record wakes it only
 * when a burst could fill the ring before the next poll: a wakeup per record costs ~6 us on
 * these VMs, more than the rest of a send.
 *
 * The backlog is looked at once per quarter of wake_bytes produced, not at every record:
 * the producer position is on a page the reservation has just written, the consumer
 * position on one the consumer writes from another CPU, a cache line to fetch (~0.1 us a
 * record when it was read every time). A wakeup is forced when wake_bytes wait, then not
 * again before wake_bytes more are produced: a consumer that is behind is already awake.
 * The position of the next look is shared by every CPU without atomics: a race only moves
 * a look by a record.
 *
 * Compiled into the bench's floor and ringfeed programs too (tools/bench): they measure this
 * code.
 */

#ifndef TT_RING_BPF_H
#define TT_RING_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);	/* resized by the loader */
} events SEC(".maps");

const volatile __u64 wake_bytes = 0;	/* 0: wake the consumer per record */

__u64 rbwake_next = 0;	/* producer position of the next look at the backlog */

static __always_inline __u64 rb_flags(void)
{
	__u64 prod;

	if (!wake_bytes)
		return 0;
	prod = bpf_ringbuf_query(&events, BPF_RB_PROD_POS);
	if ((__s64)(prod - rbwake_next) < 0)
		return BPF_RB_NO_WAKEUP;
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) < wake_bytes) {
		rbwake_next = prod + wake_bytes / 4;
		return BPF_RB_NO_WAKEUP;
	}
	rbwake_next = prod + wake_bytes;
	return BPF_RB_FORCE_WAKEUP;
}

#endif /* TT_RING_BPF_H */
