/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The outputs, one per file: text.c, json.c, top.c, metrics.c, perfetto.c. Each implements
 * struct output_ops (core/output.h) and reads requests only through what the session hands
 * it; several can run at once.
 */
#ifndef TT_OUTPUTS_H
#define TT_OUTPUTS_H

#include <stdio.h>
#include <sys/socket.h>
#include "output.h"

struct output_opts {
	FILE *f;
	bool quiet;		/* summaries only, no per-request lines */
	bool color;
	const struct live_view *live;	/* --top: the requests in flight */
	const char *addr;	/* --metrics [ADDR:]PORT */
	const char *path;	/* --perfetto FILE */
	uint64_t stall_ns;	/* --top: --stall-ms; 0 the adaptive rule (core/stall.h) */
	bool show_query;	/* --show-query: paths keep their query string (API keys...) */
	bool force;		/* --force: --perfetto may replace others' files and links */
	bool *failed;		/* set when an output could not write what was asked: exit 1 */
};


int output_text__new(struct output *o, const struct output_opts *opts);
int output_json__new(struct output *o, const struct output_opts *opts);
/* Without a terminal on opts->f, a text output instead (and a note on stderr). */
int output_top__new(struct output *o, const struct output_opts *opts);
/* Serves http://ADDR:PORT/metrics on a thread of its own; errors in one line on stderr. */
int output_metrics__new(struct output *o, const struct output_opts *opts);
/* "PORT", "ADDR:PORT" or "[ADDR6]:PORT"; ADDR defaults to 127.0.0.1. 0 or -EINVAL. */
int metrics__parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len);
/* Whether a parsed address reaches only this host (127.0.0.0/8, ::1, ::ffff:127.x). */
bool metrics__addr_is_loopback(const struct sockaddr_storage *ss);
/* A Prometheus label value from untrusted src[0..n): quote, backslash and newline escaped
 * as the exposition format says, other controls and invalid UTF-8 as the text \xNN / \uNNNN;
 * cut at an escape boundary to fit sz. */
void metrics__label_escape(char *dst, size_t sz, const char *src, size_t n);
/* Chrome Trace Event JSON (Perfetto UI, chrome://tracing), completed at exit. */
int output_perfetto__new(struct output *o, const struct output_opts *opts);

#endif /* TT_OUTPUTS_H */
