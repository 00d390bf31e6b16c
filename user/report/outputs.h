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

/*
 * --otlp: who a traced process is, for its OTLP Resource. The output fills pid and exe
 * (/proc/PID/exe's name, or the comm in a replay); a hook may add or change the rest
 * (user/sys/container.c: the container and the pod from the process's cgroup). "" where
 * not known.
 */
struct otlp_proc {
	uint32_t pid;
	char exe[64];			/* process.executable.name */
	char container_id[80];		/* container.id */
	char pod_uid[48];		/* k8s.pod.uid */
};
typedef void (*otlp_proc_fn)(void *ud, uint32_t pid, struct otlp_proc *p);

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
	/* --otlp [URL]: NULL for the OTEL_EXPORTER_OTLP_* variables' endpoints */
	const char *otlp_url;
	uint32_t otlp_token_events;	/* an event per token in each span, up to this many */
	otlp_proc_fn otlp_proc;		/* optional */
	void *otlp_proc_ud;
	const char *report_path;	/* --report FILE.html */
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

/* --report FILE.html: one self-contained HTML file (summary, distributions, a timeline per
 * request with its stalls), written at the end; the file is created at once (safe_create). */
int output_html__new(struct output *o, const struct output_opts *opts);

/* What one OTLP signal's sender did, since the start: every item (span, data point) handed
 * to it is, once it has stopped, in exactly one of sent, rejected, dropped or failed. */
struct otlp_export_stats {
	uint64_t queued;		/* items handed to the sender */
	uint64_t sent;			/* accepted by the collector */
	uint64_t rejected;		/* refused by the collector as a partial success */
	uint64_t dropped;		/* not queued: the queue was full */
	uint64_t failed;		/* given up: a status that is not retried, or the retries
					 * ran out, or still unsent when tokentrace stopped */
	uint64_t batches;		/* requests that were answered 2xx */
	uint64_t retries;		/* attempts after the first */
	uint64_t bytes;			/* sent, as on the wire (compressed) */
	int last_status;		/* the last HTTP status, 0 none (or a network error) */
	char last_error[160];		/* the last failure, escaped for a terminal ("" none) */
};

struct otlp_stats {
	struct otlp_export_stats traces, metrics;
	uint64_t spans_unencoded;	/* too large to encode, no memory, or after the end */
};

/*
 * --otlp [URL]: spans and metrics to an OpenTelemetry Collector over OTLP/HTTP (protobuf,
 * gzip), from a thread of its own; the configuration from the OTEL_* variables (report/otlp.h).
 * Errors in one line on stderr.
 */
int output_otlp__new(struct output *o, const struct output_opts *opts);
/* For the summaries: what the senders did so far (o made by output_otlp__new). */
void output_otlp__stats(const struct output *o, struct otlp_stats *st);
/*
 * At the end, after the final summary was handed to the outputs: the last spans and metrics
 * go, with a few seconds for the senders to finish, and one line on stderr says what was and
 * was not sent. The output's free does it if this was not called.
 */
void output_otlp__finish(struct output *o);

#endif /* TT_OUTPUTS_H */
