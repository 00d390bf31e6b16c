/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Outputs: each is a consumer of finished requests and summaries, one per file
 * (output_text.c, output_json.c, ...). Several can run at once.
 */
#ifndef TT_OUTPUT_H
#define TT_OUTPUT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include "events.h"
#include "request.h"
#include "stats.h"

#define READY_PIDS_MAX	16

/* Tracing really runs: every probe is attached. */
struct ready_info {
	uint64_t t_ns;
	uint32_t pids[READY_PIDS_MAX];
	char comms[READY_PIDS_MAX][16];
	int npids;
	int probes;
	uint32_t capture_bytes;
	uint32_t ringbuf_bytes;
	uint8_t marker_kind[TT_MARKERS_MAX];	/* enum marker_kind of each marker, in order */
	int nmarkers;
	bool replay;		/* reading a recording, not a live process */
};

struct output_ops {
	void (*ready)(void *priv, const struct ready_info *ri);
	void (*request)(void *priv, const struct tt_request *r);
	void (*summary)(void *priv, const struct summary *s);
	void (*flush)(void *priv);
	void (*free)(void *priv);
};

struct output {
	const struct output_ops *ops;
	void *priv;
};

struct correlator;

struct output_opts {
	FILE *f;
	bool quiet;		/* summaries only, no per-request lines */
	bool color;
	/* --top: the requests in flight, and a way to ask the main loop to stop ('q') */
	const struct correlator *corr;
	volatile sig_atomic_t *quit;
	const char *addr;	/* --metrics [ADDR:]PORT */
	const char *path;	/* --perfetto FILE */
	uint64_t stall_ns;	/* --top: --stall-ms; 0 the adaptive rule (correlate.h) */
};

int output_text__new(struct output *o, const struct output_opts *opts);
int output_json__new(struct output *o, const struct output_opts *opts);
/* Without a terminal on opts->f, a text output instead (and a note on stderr). */
int output_top__new(struct output *o, const struct output_opts *opts);
/* Serves http://ADDR:PORT/metrics on a thread of its own; errors in one line on stderr. */
int output_metrics__new(struct output *o, const struct output_opts *opts);
/* "PORT", "ADDR:PORT" or "[ADDR6]:PORT"; ADDR defaults to 127.0.0.1. 0 or -EINVAL. */
int metrics__parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len);
/* Chrome Trace Event JSON (Perfetto UI, chrome://tracing), completed at exit. */
int output_perfetto__new(struct output *o, const struct output_opts *opts);

#endif /* TT_OUTPUT_H */
