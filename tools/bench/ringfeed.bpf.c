// SPDX-License-Identifier: GPL-2.0
/*
 * ringfeed's producer: replays a script of prepared tokentrace records into tokentrace's own
 * ring buffer (the map is reused from the running tokentrace), at whatever rate userspace
 * calls it with BPF_PROG_TEST_RUN. Each call emits args[1] records starting at script
 * position args[0] (bpf_loop), stamping each with the current time and a connection id that
 * never repeats (script connection + loop number * connections per loop).
 *
 * Drops are accounted exactly as tokentrace's own programs account them: TT_STAT_RB_DROP in
 * tokentrace's stats map (also reused), and TT_DF_LOST with the count on the connection's
 * next data record. So tokentrace's summaries must report every one.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "events.h"
#include "ringfeed.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 nslots = 1;
const volatile __u32 nconns = 1;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);	/* resized to the script's length */
	__type(key, __u32);
	__type(value, struct rf_slot);
} script SEC(".maps");

/*
 * tokentrace's maps, reused by fd: the definitions only have to be compatible. The ring and its
 * wakeup policy (wake_bytes, rb_flags()) are tokentrace's own code.
 */
#include "lib/ring.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TT_STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* records of a connection dropped since its last one that got through */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RF_CONNS_MAX);
	__type(key, __u32);
	__type(value, __u32);
} conn_lost SEC(".maps");

__u64 produced = 0;
__u64 dropped = 0;
__u64 wakeups = 0;

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += 1;
}

/*
 * wake_once: tokentrace's own policy (bpf/lib/ring.bpf.h, compiled in). Else the earlier one,
 * for comparison: once the consumer lags past wake_bytes, a forced wakeup (an irq_work, a
 * self-IPI on x86) for every record until it catches up.
 */
const volatile bool wake_once = false;

static __always_inline __u64 feed_flags(void)
{
	__u64 f;

	if (wake_once) {
		f = rb_flags();
		if (f == BPF_RB_FORCE_WAKEUP)
			wakeups++;
		return f;
	}
	if (!wake_bytes)
		return 0;
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) < wake_bytes)
		return BPF_RB_NO_WAKEUP;
	wakeups++;
	return BPF_RB_FORCE_WAKEUP;
}

static long emit_one(__u64 i, void *ctx)
{
	__u64 seq = *(__u64 *)ctx + i;
	__u32 idx = seq % nslots, len;
	__u64 loop = seq / nslots;
	struct tt_data_ev *d;
	struct tt_hdr *h;
	struct rf_slot *s;
	__u32 *lost;

	s = bpf_map_lookup_elem(&script, &idx);
	if (!s)
		return 1;
	len = s->len;
	if (len < sizeof(struct tt_hdr) + 8 || len >= RF_SLOT_DATA)
		return 1;
	/* restate the bound on the register passed on (clang tests a copy) */
	barrier_var(len);
	len &= RF_SLOT_DATA - 1;
	h = (struct tt_hdr *)s->data;
	h->ts = bpf_ktime_get_ns();
	h->cpu = bpf_get_smp_processor_id();
	/* every record kind has its connection id right after the header */
	*(__u64 *)(s->data + sizeof(struct tt_hdr)) = 1 + s->conn + loop * nconns;
	lost = bpf_map_lookup_elem(&conn_lost, &s->conn);
	if (!lost)
		return 1;
	if (s->type == TT_EV_CONN)
		*lost = 0;
	if (s->type == TT_EV_DATA && len >= sizeof(*d)) {
		d = (struct tt_data_ev *)s->data;
		if (*lost) {
			d->flags |= TT_DF_LOST;
			d->lost = *lost;
		} else {
			d->flags &= ~TT_DF_LOST;
			d->lost = 0;
		}
	}
	if (bpf_ringbuf_output(&events, s->data, len, feed_flags())) {
		stat_inc(TT_STAT_RB_DROP);
		dropped++;
		if (s->type == TT_EV_DATA)
			*lost += 1;
		return 0;
	}
	produced++;
	if (s->type == TT_EV_DATA)
		*lost = 0;
	return 0;
}

SEC("raw_tp")
int feed(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 start = ctx->args[0];

	bpf_loop(ctx->args[1], emit_one, &start, 0);
	return 0;
}
