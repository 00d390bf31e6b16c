/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Outputs: each is a consumer of finished requests and summaries, one per file
 * (output_text.c, output_json.c, ...). Several can run at once.
 */
#ifndef TT_OUTPUT_H
#define TT_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
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

struct output_opts {
	FILE *f;
	bool quiet;		/* summaries only, no per-request lines */
	bool color;
};

int output_text__new(struct output *o, const struct output_opts *opts);
int output_json__new(struct output *o, const struct output_opts *opts);

#endif /* TT_OUTPUT_H */
