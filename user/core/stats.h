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
};

struct stats {
	struct stats_win win;
	struct stats_win total;
};

void stats__init(struct stats *s, uint64_t now_ns);
void stats__add(struct stats *s, const struct tt_request *r);
void stats__roll(struct stats *s, uint64_t now_ns);	/* start a new interval */

/* Counters the kernel side and the correlator keep, cumulative since start. */
struct lost_counts {
	uint64_t ringbuf;	/* records dropped: ring buffer full */
	uint64_t conn_full;	/* connections not traced: conns map full */
	uint64_t faults;	/* payload copies that failed */
	uint64_t truncated;	/* sends/receives longer than the capture */
	uint64_t bad_records;	/* malformed records (a corrupt recording) */
	uint64_t parse_errors;	/* HTTP sync lost */
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
};

uint64_t lost_total(const struct lost_counts *l);

#endif /* TT_STATS_H */
