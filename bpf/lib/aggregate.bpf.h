/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --aggregate: send gaps and times to first send as histograms in the kernel (events.h, struct
 * tt_agg), no records.
 */

#ifndef TT_AGGREGATE_BPF_H
#define TT_AGGREGATE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "events.h"
#include "conn_map.bpf.h"
#include "usrc.bpf.h"

/* --aggregate: histograms per CPU (the per-connection times are in struct tt_conn) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tt_agg);
} agg_hist SEC(".maps");

static __always_inline void agg_add(__u32 *hist, __u64 v)
{
	__u32 b = tt_agg_bucket(v);

	if (b < TT_AGG_BUCKETS)
		hist[b]++;	/* per-CPU */
}

/*
 * --aggregate: no records, no payload but the first bytes of a send, to leave out what is
 * not a token: the response head ("HTTP/1.") and the last-chunk marker ("0\r\n\r\n"). A read
 * starts a request: the next token-like send is its first, the ones after it its gaps.
 */
static __always_inline int aggregate_data(struct tt_conn *a, int ret, __u8 dir)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 zero = 0;
	struct tt_agg *t;
	struct usrc u;
	__u8 h[8] = {};

	if (ret <= 0)
		return 0;
	if (dir == TT_DIR_RECV) {
		a->agg_last_recv = now;
		a->agg_last_send = 0;
		return 0;
	}
	usrc_of_syscall(&u);
	if (peek8(&u, h, ret < 7 ? ret : 7) >= 5 &&
	    ((h[0] == 'H' && h[1] == 'T' && h[2] == 'T' && h[3] == 'P' && h[4] == '/') ||
	     (h[0] == '0' && h[1] == '\r' && h[2] == '\n' && h[3] == '\r' && h[4] == '\n')))
		return 0;
	t = bpf_map_lookup_elem(&agg_hist, &zero);
	if (!t)
		return 0;
	if (a->agg_last_send) {
		agg_add(t->itl, now - a->agg_last_send);
	} else if (a->agg_last_recv) {
		agg_add(t->ttft, now - a->agg_last_recv);
		t->firsts++;
	}
	a->agg_last_send = now;
	t->sends++;
	return 0;
}

#endif /* TT_AGGREGATE_BPF_H */
