/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Making a record: its header, its way into the ring, and the per-CPU counters of what could
 * not be done (enum tt_stat), a dropped record among them.
 */

#ifndef TT_RECORD_BPF_H
#define TT_RECORD_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "events.h"
#include "ring.bpf.h"

const volatile bool aggregate = false;	/* --aggregate: histograms in maps, no records */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TT_STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

__u32 drops_total = 0;	/* records dropped, all CPUs: stamped into every record header */

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += 1;	/* per-CPU: no atomics needed */
}

static __always_inline void rb_drop(void)
{
	stat_inc(TT_STAT_RB_DROP);
	__sync_fetch_and_add(&drops_total, 1);
}

static __always_inline void fill_hdr(struct tt_hdr *h, __u16 type, __u16 size)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	h->ts = bpf_ktime_get_ns();
	h->tgid = pid_tgid >> 32;
	h->tid = (__u32)pid_tgid;
	h->type = type;
	h->size = size;
	h->cpu = bpf_get_smp_processor_id();
	h->drops = drops_total;
	h->pad = 0;
}

static __always_inline int rb_output(void *rec, __u64 size)
{
	if (bpf_ringbuf_output(&events, rec, size, rb_flags())) {
		rb_drop();
		return -1;
	}
	return 0;
}

#endif /* TT_RECORD_BPF_H */
