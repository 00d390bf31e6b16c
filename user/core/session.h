/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A tracing session: everything after the ring buffer (correlation, statistics, outputs),
 * driven by a stream of inputs: the ready announcement, ring-buffer records, and ticks (a
 * summary is due, with the kernel's counters as they stood). Nothing in here reads a clock:
 * a live run and the replay of its recording feed the same inputs and print the same bytes.
 */
#ifndef TT_SESSION_H
#define TT_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "correlate.h"
#include "events.h"
#include "output.h"
#include "stack.h"

#define SESSION_OUTPUTS_MAX	8

struct session;

struct session_opts {
	/* optional: stop capturing a connection in the kernel (live runs only) */
	void (*ignore_conn)(void *ud, uint64_t conn_id);
	void *ud;
	bool stalls;		/* explain stalls (the sched records come with it) */
	bool aggregate;		/* --aggregate: summaries from kernel histograms only */
	uint64_t stall_ns;	/* 0: the adaptive rule */
	/*
	 * Live runs: the text of a stack (ids of the kernel's stack map). The session keeps
	 * it, and hands it to aux_record as a TT_EV_STACK record so that a recording holds
	 * it before the record that needed it: a replay then prints the same text.
	 */
	int (*stack_live)(void *ud, const struct stack_ips *st, char *buf, size_t sz);
	void (*aux_record)(void *ud, const void *rec, size_t size);
	/*
	 * Live runs: the name of a Python frame, read from the process ("?" if it cannot be).
	 * Kept like stack texts; when recording, every frame of a Python stack record is named
	 * as it comes and written out as a TT_EV_PYNAME record, so a replay names it too.
	 */
	size_t (*py_live)(void *ud, uint32_t pid, uint64_t code, int32_t lasti, char *buf,
			  size_t sz);
};

struct session *session__new(const struct session_opts *o);
void session__free(struct session *s);	/* frees the outputs too */

/* Takes ownership of the output. */
int session__add_output(struct session *s, const struct output *o);

void session__ready(struct session *s, const struct ready_info *ri);
/* Enforce the memory bounds at now_ns (connections, orphans, threads): about once a second. */
void session__expire(struct session *s, uint64_t now_ns);
void session__record(struct session *s, const void *data, size_t size);
/*
 * A summary at now_ns. kstats: the kernel side's cumulative counters (enum tt_stat) at that
 * moment. final: the whole run's summary, at the end.
 */
void session__tick(struct session *s, uint64_t now_ns, const uint64_t kstats[TT_STAT_NR],
		   bool final);
struct agg_totals;
/* --aggregate: what the kernel's histograms gained since the last call, into the windows. */
void session__aggregate(struct session *s, const struct agg_totals *delta);

/*
 * Finished requests waiting for the text of a stall's stack get it and go to the outputs, in
 * the order they finished. Live: after each batch of records (symbolizing reads files; the
 * ring's callback must not). force: do not wait for texts a replay has not seen (the end).
 */
void session__drain(struct session *s, bool force);

/*
 * Outputs write out what they buffered (called after each batch of records). True when an
 * output asked to stop (--top's 'q').
 */
bool session__flush(struct session *s);

/* The requests in flight, for outputs that show them live (valid as long as the session). */
const struct live_view *session__live_view(struct session *s);

struct stall_hook_stats;
/* the lazy scheduler hooks' doings so far, for the summaries */
void session__stall_hooks(struct session *s, const struct stall_hook_stats *sh);

/* correlator__arm_at(): when the lazy scheduler hooks must be on */
uint64_t session__arm_at(struct session *s, uint64_t now_ns);

#endif /* TT_SESSION_H */
