/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Correlation: the ring buffer's records in, finished requests out.
 *
 * Plain C over an event stream, no BPF in sight: the same code runs live, on a recording and
 * in unit tests fed with canned records. Per connection it runs an HTTP parser for each
 * direction, pairs responses with requests in order (keep-alive, pipelining), parses streamed
 * bodies (SSE, NDJSON) into chunks, and timestamps each content chunk with the send that
 * completed it.
 */
#ifndef TT_CORRELATE_H
#define TT_CORRELATE_H

#include <stddef.h>
#include <stdint.h>
#include "attribute.h"
#include "request.h"
#include "stall.h"

struct correlator;

struct corr_opts {
	/* a request finished (response complete, aborted, or its connection gone) */
	void (*on_request)(void *ud, const struct tt_request *r);
	void *ud;
	/* optional: stop capturing this connection in the kernel (not HTTP: binary, TLS ciphertext) */
	void (*ignore_conn)(void *ignore_ud, uint64_t conn_id);
	void *ignore_ud;
	size_t req_body_max;	/* request body bytes kept to read model/stream; 0: 64 KiB */
	/* memory bounds: connections kept (0: CORR_MAX_CONNS, the least active go first) */
	size_t max_conns;
	/* a connection with work in flight silent this long after a drop is gone (0: default) */
	uint64_t idle_ns;
	/* Stalls (stall.h): gaps over the threshold are explained from the scheduler records */
	bool stalls;
	uint64_t stall_ns;
	/* optional: the text of a stack (kernel and user stack ids of a process) */
	stack_str_fn stack_str;
	void *stack_ud;
	/*
	 * optional: the name of a Python frame, for stalls. With it, TT_EV_PYSTACK records
	 * are kept (pysamples.h) and stalls say what Python code ran and where it blocked.
	 */
	py_name_fn py_name;
	void *py_ud;
};

#define CORR_MAX_CONNS	65536			/* as many as the kernel side tracks */
#define CORR_IDLE_NS	30000000000ull		/* 30 s */

struct corr_stats {
	uint64_t records;		/* records decoded */
	uint64_t data_records;		/* of them, sends and reads (their first segments) */
	uint64_t bad_records;		/* malformed records (short, unknown type) */
	uint64_t conns;			/* connections seen */
	uint64_t conns_ignored;		/* not HTTP (binary, TLS whose plaintext is not seen) */
	uint64_t conns_tls;		/* TLS connections whose plaintext came from OpenSSL */
	uint64_t requests;		/* finished requests reported */
	uint64_t unanswered;		/* requests whose connection closed before any response */
	uint64_t unmatched_responses;	/* responses without a request (joined mid-connection) */
	uint64_t parse_errors;		/* HTTP sync lost */
	uint64_t lost_records;		/* records the kernel dropped, as seen by connections */
	uint64_t lost_between;		/* losses told while no request was in flight on the
					 * connection: whole requests may be among them */
	uint64_t truncated_sends;	/* sends/receives longer than the capture */
	uint64_t chunks;		/* content chunks seen so far */
	struct attrib_stats markers;	/* marker hits and where they went (attribute.h) */
	uint64_t sched_records;
	uint64_t stalls;
	uint64_t drops_seen;		/* drops the records' headers told of */
	uint64_t conns_evicted;		/* over max_conns: dropped, what they had flagged lost */
	uint64_t conns_orphaned;	/* their close was likely dropped: ended, flagged lost */
	uint64_t py_records;		/* Python stack records taken in */
	uint64_t threads_forgotten;	/* stall bookkeeping of threads silent for its history */
	/* HTTP/2 (h2.h's h2_stats summed over its connections) */
	uint64_t h2_conns;		/* connections read as HTTP/2 */
	uint64_t h2_streams;		/* streams seen */
	uint64_t h2_joined;		/* streams reported that began before they were seen */
	uint64_t h2_dropped;		/* bytes dropped out of sync */
	uint64_t h2_resyncs;		/* times sync was found again */
	uint64_t h2_untracked;		/* streams over the parser's bound: not reported */
	uint64_t h2_stray;		/* frames of streams closed or never seen opening */
	uint64_t h2_errors;		/* sync lost or a protocol rule broken */
};

struct correlator *correlator__new(const struct corr_opts *opts);
void correlator__free(struct correlator *c);

/* One ring-buffer record. -EINVAL if malformed (counted, otherwise ignored). */
int correlator__record(struct correlator *c, const void *data, size_t size);

/* The kinds (enum marker_kind) of the markers, by their index in marker records. */
void correlator__set_markers(struct correlator *c, const uint8_t *kinds, int n);

/* The comm to report for a process (its main thread's), instead of the sending thread's. */
void correlator__set_comm(struct correlator *c, uint32_t pid, const char *comm);

/*
 * The trace is ending: report nothing more, count what is still in flight. Returns the number
 * of requests in flight (read, not yet answered or still streaming).
 */
uint64_t correlator__in_flight(const struct correlator *c);

/*
 * Enforce the memory bounds at now_ns (called on ticks): connections over max_conns, and
 * those whose close was likely dropped, end; their requests in flight are reported lost.
 */
void correlator__expire(struct correlator *c, uint64_t now_ns);

/* Were records dropped somewhere in [t0, t1]? */
bool correlator__dropped_within(const struct correlator *c, uint64_t t0, uint64_t t1);

const struct corr_stats *correlator__stats(struct correlator *c);

/* The Python stacks kept for stalls, NULL when they are not (no py_name). */
const struct pysamples *correlator__pysamples(const struct correlator *c);

/*
 * Every request in flight: being answered (streaming: response started) or read and waiting
 * for its response. For live views; the request must not be kept past the call.
 */
void correlator__foreach_inflight(const struct correlator *c,
				  void (*fn)(void *ud, const struct tt_request *r, bool streaming),
				  void *ud);

/*
 * --stall-hooks lazy: the earliest time, from now_ns on, at which a stream being answered
 * will have been quiet for a quarter of its stall threshold (STALL_ARM_DIV) counting from
 * its last chunk: the scheduler hooks must be on by then for that gap to be accounted if
 * it becomes a stall. now_ns or earlier: one is that quiet already. UINT64_MAX: none.
 */
uint64_t correlator__arm_at(struct correlator *c, uint64_t now_ns);

#endif /* TT_CORRELATE_H */
