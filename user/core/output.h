/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the session drives: outputs consume the ready announcement, finished requests and
 * summaries, and may look at the requests in flight through a live view. The outputs
 * themselves live in user/report/ (outputs.h); the core knows only this interface.
 */
#ifndef TT_OUTPUT_H
#define TT_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include "events.h"
#include "request.h"
#include "stats.h"

#define READY_PIDS_MAX	16

/* Tracing really runs: every probe is attached. */
struct ready_info {
	uint64_t t_ns;
	uint32_t pids[READY_PIDS_MAX];
	char comms[READY_PIDS_MAX][16];
	int npids;		/* in pids[] and comms[]: the first READY_PIDS_MAX */
	int npids_total;	/* traced at the start, all of them */
	int probes;
	uint32_t capture_bytes;
	uint32_t ringbuf_bytes;
	uint8_t marker_kind[TT_MARKERS_MAX];	/* enum marker_kind of each marker, in order */
	int nmarkers;
	bool replay;		/* reading a recording, not a live process */
	/* which kernel hooks carry the data, data-ready and the scheduler: "data=tp ready=tp
	 * sched=tp loop=yes" */
	char hooks[96];
};

/*
 * The requests in flight, for live views: being answered (streaming) or read and waiting for
 * the response. Called between records; a request must not be kept past the callback.
 */
typedef void (*inflight_fn)(void *ud, const struct tt_request *r, bool streaming);

struct live_view {
	void (*foreach_inflight)(const void *src, inflight_fn fn, void *ud);
	const void *src;
};

static inline void live_view__foreach(const struct live_view *lv, inflight_fn fn, void *ud)
{
	if (lv && lv->foreach_inflight)
		lv->foreach_inflight(lv->src, fn, ud);
}

/* A process joined or left the traced set (a TT_EV_PROC record). */
struct target_event {
	uint64_t t_ns;
	uint32_t pid, ppid;
	uint32_t kind;		/* enum tt_proc_kind */
	uint32_t why;		/* FOUND: 1 comm, 2 cgroup, 3 port, 4 peer */
	uint32_t flags;		/* TT_TGT_* */
	char comm[16];
};

const char *target_event_name(uint32_t kind);
const char *target_why_name(uint32_t why);

struct output_ops {
	void (*ready)(void *priv, const struct ready_info *ri);
	void (*request)(void *priv, const struct tt_request *r);
	void (*summary)(void *priv, const struct summary *s);
	void (*target)(void *priv, const struct target_event *te);	/* optional */
	/* write out what is buffered; true when the user asked to stop (--top's 'q') */
	bool (*flush)(void *priv);
	void (*free)(void *priv);
};

struct output {
	const struct output_ops *ops;
	void *priv;
};

#endif /* TT_OUTPUT_H */
