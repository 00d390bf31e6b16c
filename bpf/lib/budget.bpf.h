/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --budget: how many data records a second the kernel side sends at most, a whole exchange in
 * or out (budget_admits() below says how).
 */

#ifndef TT_BUDGET_BPF_H
#define TT_BUDGET_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "events.h"
#include "record.bpf.h"
#include "conn_map.bpf.h"
#include "usrc.bpf.h"

/*
 * --budget's clock (budget_admits() below says how it is kept), alone in its map: a global
 * beside the ones every send reads would share their cache line.
 */
const volatile __u64 budget_cost_ns = 0;	/* 1e9 / records a second; 0: no budget */

struct budget_clock {
	__u64 tat;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct budget_clock);
} budget SEC(".maps");

/* c pays for the records it sent since it last did; the clock, or NULL */
static __always_inline struct budget_clock *budget_charge(struct tt_conn *c)
{
	__u32 zero = 0;
	struct budget_clock *b = bpf_map_lookup_elem(&budget, &zero);

	if (b && c->recs) {
		__sync_fetch_and_add(&b->tat, (__u64)c->recs * budget_cost_ns);
		c->recs = 0;
	}
	return b;
}

/*
 * --budget: at most so many data records a second, on average, with whole exchanges (a
 * request and its answer) left out beyond it, never parts of one. Under a load the server
 * cannot serve any faster, the cost of tracing then stays what that rate of records costs,
 * and every exchange traced is complete; those left out are counted.
 *
 * The rate is kept as the generic cell rate algorithm keeps it: one clock (the budget map's
 * tat), the time at which the records delivered so far are paid for at budget_cost_ns each.
 * A connection counts the records it sent (tt_conn.recs) and pays for them at its next
 * decision, or at its end: one atomic add an exchange, not one a record (a clock every CPU
 * wrote at every send cost 285 ns a token at 10k tokens/s, its line bouncing between the
 * CPUs). An exchange is let in while the clock is less than budget_burst_ns ahead of now;
 * a clock that fell behind (an idle server) is brought to now first, so idle time is not
 * saved up beyond the burst. Paying an exchange late lets in at most one more exchange per
 * connection than paying as it goes. Decided at an exchange's start: a
 * connection's first send or read, and each run of them the way requests go (a server's
 * reads, a client's sends) after a run the other way. That way is learnt from the first run
 * that opens with an HTTP request line; until then such a run is the only other start.
 * HTTP/2 (a run that opens with its preface) is decided once, at the connection's first
 * send or read: its streams share every run. Every other record follows the last decision.
 * An exchange in flight is never cut: a rate over the budget only defers the next one.
 * (Not by the bytes alone: Go's server reads a request's first byte on its own, in the
 * read that watches for the client's close.)
 *
 * An exchange is left out too while the ring is over half full: a consumer starved of CPU
 * (one thread among a saturated server's) then costs whole requests, counted, instead of
 * the middles of many, and the half left is for the exchanges already let in.
 */
const volatile __u64 budget_burst_ns = 0;
const volatile __u64 budget_ring_max = ~0ull;	/* bytes waiting in the ring: no new exchange */

/* c->req_run of an HTTP/2 connection: no run is an exchange's start */
#define REQ_RUN_H2	3

/*
 * The first bytes moved begin an HTTP request line (a method of capitals, a space): 1; the
 * HTTP/2 connection preface ("PRI * HTTP/2.0..."): 2; else 0.
 */
static __always_inline int request_line(const struct usrc *u, int ret)
{
	__u8 h[8] = {};
	__u32 n = peek8(u, h, ret < 8 ? ret : 8);

	if (n == 8 && h[0] == 'P' && h[1] == 'R' && h[2] == 'I' && h[3] == ' ' && h[4] == '*' &&
	    h[5] == ' ' && h[6] == 'H' && h[7] == 'T')
		return 2;
	for (int i = 0; i < 8 && i < n; i++) {
		if (h[i] == ' ')
			return i >= 3;
		if (h[i] < 'A' || h[i] > 'Z')
			return 0;
	}
	return 0;
}

/*
 * Is this send or read of c (ret bytes, in direction dir, its bytes where u says) to be sent
 * under the budget? u NULL: those of the current syscall.
 */
static __always_inline bool budget_admits(struct tt_conn *c, __u8 dir, int ret,
					  const struct usrc *u)
{
	__u8 run = dir + 1;
	bool first = !c->run;
	struct budget_clock *b;
	__u64 now, tat;
	struct usrc us;

	if (c->run == run || ret <= 0)
		goto follow;
	c->run = run;
	if (!c->req_run || c->req_run == run) {
		int line;

		if (!u) {
			usrc_of_syscall(&us);
			u = &us;
		}
		line = request_line(u, ret);
		if (line == 2) {
			/*
			 * HTTP/2 (prior knowledge, after an h2c upgrade): streams interleave
			 * in every run, and a run left out would take the connection's HPACK
			 * state with it. Its first decision stands for the whole connection.
			 */
			c->req_run = REQ_RUN_H2;
			if (!first)
				goto follow;
		} else if (line) {
			c->req_run = run;
		} else if (!first && !c->req_run) {
			goto follow;
		}
	} else {
		goto follow;	/* an answer, or HTTP/2 */
	}
	now = bpf_ktime_get_ns();
	b = budget_charge(c);
	if (!b)
		goto follow;
	tat = b->tat;
	if (tat < now) {
		/* another CPU's add in between wins: its charge is then the one lost */
		__sync_val_compare_and_swap(&b->tat, tat, now);
		tat = b->tat;
	}
	c->skip = (__s64)(tat - now) > (__s64)budget_burst_ns ||
		  bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > budget_ring_max;
	if (c->skip) {
		if (c->skipped < 0xffff)
			c->skipped++;
		stat_inc(TT_STAT_BUDGET_SKIP);
	}
follow:
	if (c->skip)
		stat_inc(TT_STAT_BUDGET_RECS);
	return !c->skip;
}

/* A record of c went out under the budget: to be paid for, and it told the exchanges left out. */
static __always_inline void budget_pay(struct tt_conn *c)
{
	c->recs++;
	c->skipped = 0;
}

#endif /* TT_BUDGET_BPF_H */
