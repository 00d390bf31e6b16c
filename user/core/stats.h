/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Aggregates over finished requests, for an interval (reset at each summary) and for the
 * whole run. Errors (4xx/5xx) are counted apart and kept out of the latency histograms;
 * aborted requests count for what they streamed before the abort.
 */
#ifndef TT_STATS_H
#define TT_STATS_H

#include <stdint.h>
#include "hist.h"
#include "request.h"

struct stats_win {
	uint64_t t_begin_ns;
	uint64_t requests;	/* finished, errors and aborted included */
	uint64_t errors;	/* status >= 400 */
	uint64_t aborted;
	uint64_t truncated;
	uint64_t lost;		/* requests touched by dropped records */
	uint64_t tokens;	/* model tokens where the stream counted them, else chunks */
	uint64_t chunks;
	uint64_t stalls;
	uint64_t stalls_by_cause[STALL_NR];	/* by the cause that took most of the gap */
	struct hist ttft, itl, tpot, e2e;
	/* outbound calls the traced processes made (direction client): apart, not served */
	uint64_t client_requests, client_errors, client_tokens;
	struct hist client_ttft, client_itl;
};

struct stats {
	struct stats_win win;
	struct stats_win total;
};

void stats__init(struct stats *s, uint64_t now_ns);
void stats__add(struct stats *s, const struct tt_request *r);
void stats__roll(struct stats *s, uint64_t now_ns);	/* start a new interval */

/*
 * Everything lost, by where: counters the kernel side and the correlator keep. Each bound
 * reached and each drop has its own; the requests and stalls they touched say so too.
 */
enum lost_kind {
	LOST_RINGBUF,		/* records dropped: ring buffer full */
	LOST_CONN_FULL,		/* connections not traced: the kernel's conns map full */
	LOST_FAULT,		/* payload copies that failed */
	LOST_EARLY_FULL,	/* backlog waits not known: the kernel's early map full */
	LOST_STACK,		/* stacks not walked: bpf_get_stack failed */
	LOST_PROG_MISS,		/* probe runs the kernel skipped (a program already running) */
	LOST_SCHED_MISS,	/* a thread's switch not accounted: its time there unknown */
	LOST_CONN_EVICTED,	/* connections dropped over the userspace bound */
	LOST_CONN_ORPHANED,	/* connections whose close was dropped, ended */
	LOST_MARKERS,		/* keyed marker hits whose key never showed, over the bound */
	LOST_BAD_RECORD,	/* malformed records (a corrupt recording) */
	LOST_NR,
};

/* its key in JSON and Prometheus */
const char *lost_kind_name(enum lost_kind k);

struct lost_counts {
	uint64_t n[LOST_NR];
	uint64_t truncated;	/* sends/receives longer than the capture: content missing */
	uint64_t walks_cut;	/* iovec walks or segment loops that hit their bound */
	uint64_t switches_mended;	/* switch-ins the kernel sent no event for, mended */
	uint64_t timer_marks_skipped;	/* timer hook runs the kernel skipped (no record) */
	uint64_t parse_errors;	/* HTTP sync lost */
	/* losses with no request in flight on their connection: whole requests may be among them */
	uint64_t between_requests;
	/*
	 * --budget: exchanges (a request and its answer) left out whole, not lost: none of
	 * their records was sent; and their sends and reads
	 */
	uint64_t left_out, left_out_records;
	uint64_t data_records;	/* sends and reads received, a record each: what the budget paid */
};

/* How the lazy scheduler hooks went (--stall-hooks lazy), since the start. */
struct stall_hook_stats {
	bool lazy;
	uint64_t attaches;	/* times attached */
	uint64_t failed;	/* attaches that failed (the hooks stayed off) */
	uint64_t armed_ns;	/* time attached, all told */
};

/* What a summary shows; built by the main loop, rendered by the outputs. */
struct summary {
	const struct stats_win *w;
	uint64_t t_ns;		/* CLOCK_MONOTONIC at the summary */
	double secs;		/* length of the window */
	bool final;		/* the whole run, printed at exit */
	struct lost_counts lost;	/* in the window */
	uint64_t in_flight;
	bool aggregate;		/* --aggregate: send gaps from kernel histograms, approximate */
	/* connections since the start: seen, left unparsed (not HTTP, or TLS whose plaintext
	 * is not seen) and TLS ones read from OpenSSL's plaintext; responses whose request was
	 * not read (joined mid-connection, or the request was not HTTP: a 400 to garbage) */
	uint64_t conns, conns_unparsed, conns_tls, unmatched_responses;
	/* HTTP/2 since the start (correlate.h's h2_*): streams, and what its parser dropped */
	struct {
		uint64_t conns, streams, joined, dropped, resyncs, untracked, stray, errors;
	} h2;
	struct stall_hook_stats hooks;
	uint64_t run_ns;	/* since the start: what hooks.armed_ns is a share of */
};

uint64_t lost_total(const struct lost_counts *l);

#endif /* TT_STATS_H */
