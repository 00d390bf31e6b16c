/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * OTLP/HTTP with protobuf (--otlp): the pieces of the output, each in its own file.
 *
 *   otlp_config.c   endpoints, headers and names from the OTEL_* variables and --otlp URL
 *   otlp_enc.c      attributes, resources, W3C traceparent: what spans and metrics share
 *   otlp_span.c     a request's span: GenAI attributes, tokentrace's numbers, stall events
 *   otlp_metrics.c  the --metrics series as cumulative OTLP histograms and sums, with
 *                   exemplars that point at the spans
 *   otlp_export.c   the sender: a bounded queue, a thread of its own, gzip, POST with
 *                   libcurl, retries with backoff; what is not sent is counted
 *   otlp.c          the output: requests in, spans and metrics out
 */
#ifndef TT_OTLP_H
#define TT_OTLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "pbuf.h"
#include "request.h"
#include "stats.h"
#include "outputs.h"

/* ---------------------------------------------------------------- config (otlp_config.c) */

#define OTLP_URL_MAX		512
#define OTLP_HEADERS_MAX	32
#define OTLP_HEADER_MAX		1024
#define OTLP_RES_ATTR_MAX	16
#define OTLP_NAME_MAX		128

struct otlp_kv {
	char key[OTLP_NAME_MAX];
	char value[OTLP_NAME_MAX * 2];
};

/* one signal's destination */
struct otlp_target {
	char url[OTLP_URL_MAX];
	char headers[OTLP_HEADERS_MAX][OTLP_HEADER_MAX];	/* "Name: value" */
	int nheaders;
};

struct otlp_config {
	struct otlp_target traces, metrics;
	char service_name[OTLP_NAME_MAX];
	struct otlp_kv res_attr[OTLP_RES_ATTR_MAX];	/* OTEL_RESOURCE_ATTRIBUTES */
	int nres_attr;
	bool gzip;
	uint32_t timeout_ms;		/* one POST */
	uint32_t batch_delay_ms;	/* spans wait at most this long for a batch */
	uint32_t batch_max;		/* spans in one request */
	uint32_t queue_max;		/* spans waiting to be sent, all batches told */
	uint32_t metric_interval_ms;
};

/*
 * The configuration from the environment (getenv: the OTEL_EXPORTER_OTLP_* variables,
 * OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_BSP_*, OTEL_METRIC_EXPORT_INTERVAL),
 * url (--otlp URL, may be NULL) overriding the endpoints: a base URL to which /v1/traces and
 * /v1/metrics are added, as for OTEL_EXPORTER_OTLP_ENDPOINT. 0, or -EINVAL with a one-line
 * reason in why (never a header's value: they carry keys). A url that names a signal's
 * path (.../v1/traces or .../v1/metrics) is taken as its base.
 */
int otlp_config__load(struct otlp_config *c, const char *url, const char *(*get)(const char *),
		      char *why, size_t whysz);
/* The URL for a message: its user:password@ part, if any, left out. */
void otlp_config__url_shown(const char *url, char *buf, size_t sz);

/* ---------------------------------------------------------------- shared (otlp_enc.c) */

struct otlp_ids {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t parent_id[8];
	bool has_parent;
	bool parent_remote;		/* the parent came in a traceparent header */
	uint8_t trace_flags;		/* W3C: 1 sampled */
};

/* The W3C traceparent of a request: 0, or -EINVAL when absent or not valid (the spec's
 * rules: version ff, all-zero ids, upper-case hex, a version 00 of another length). */
int otlp__traceparent(const char *s, uint8_t trace_id[16], uint8_t parent_id[8],
		      uint8_t *flags);

/* KeyValue fields (field is the repeated attributes field of the message being written) */
void otlp__kv_str(struct pbuf *b, uint32_t field, const char *key, const char *v, size_t n);
void otlp__kv_cstr(struct pbuf *b, uint32_t field, const char *key, const char *v);
void otlp__kv_int(struct pbuf *b, uint32_t field, const char *key, int64_t v);
void otlp__kv_bool(struct pbuf *b, uint32_t field, const char *key, bool v);
void otlp__kv_double(struct pbuf *b, uint32_t field, const char *key, double v);


/* A Resource message (field of the enclosing message): the config's service name and
 * attributes, host.name, and the process's (struct otlp_proc, outputs.h: pid 0 none). */
void otlp__resource(struct pbuf *b, uint32_t field, const struct otlp_config *c,
		    const char *host, const struct otlp_proc *p);
/* The InstrumentationScope: tokentrace and its version. */
void otlp__scope(struct pbuf *b, uint32_t field);

/* gen_ai.operation.name from an API path ("chat", "text_completion", ...), NULL if unknown. */
const char *otlp__operation(const char *path);

/* ---------------------------------------------------------------- spans (otlp_span.c) */

#define OTLP_STALL_EVENTS_MAX	128

struct otlp_span_opts {
	uint32_t token_events;		/* an event per token, up to this many (0: none) */
};

/*
 * The Span message body of a finished request (the caller wraps it in its field), its ids
 * given. Its times are wall-clock (the request's, CLOCK_MONOTONIC, moved by util.h's
 * offset). What a bound cut is counted in the span (dropped_events_count, and
 * tokentrace.token_events_cut).
 */
void otlp__span(struct pbuf *b, const struct tt_request *r, const struct otlp_ids *ids,
		const struct otlp_span_opts *o);

/* ---------------------------------------------------------------- metrics (otlp_metrics.c) */

struct otlp_metrics;

struct otlp_metrics *otlp_metrics__new(void);
void otlp_metrics__free(struct otlp_metrics *m);
/* A finished request, its span's ids for the exemplars. */
void otlp_metrics__request(struct otlp_metrics *m, const struct tt_request *r,
			   const struct otlp_ids *ids);
/* A summary's losses (as --metrics counts them: the final one replaces the sum). */
void otlp_metrics__summary(struct otlp_metrics *m, const struct summary *s);
/* The encoded Resource message of a process (pid 0: tokentrace itself), NULL if none. */
typedef const uint8_t *(*otlp_resource_fn)(void *ud, uint32_t pid, size_t *len);
/*
 * The ExportMetricsServiceRequest of everything so far, cumulative since t_start_ns
 * (CLOCK_MONOTONIC): a ResourceMetrics per process, each with its encoded Resource from res(),
 * and one for tokentrace itself (pid 0) with the losses and extra[] counters. The number of
 * data points in *points.
 */
struct otlp_counter {
	const char *name, *description;
	uint64_t value;
};
void otlp_metrics__encode(struct otlp_metrics *m, struct pbuf *b, uint64_t t_start_ns,
			  uint64_t t_now_ns, otlp_resource_fn res, void *ud,
			  const struct otlp_counter *extra, int nextra, uint32_t *points);

/* ---------------------------------------------------------------- sending (otlp_export.c) */

struct otlp_export_opts {
	const struct otlp_target *target;
	bool gzip;
	uint32_t timeout_ms;
	uint32_t queue_items;		/* the bound: items waiting, in all queued batches */
	uint32_t queue_batches;
	uint64_t backoff_first_ns;	/* the first retry's wait, doubled at each, with jitter */
	uint64_t backoff_max_ns;
	uint64_t retry_for_ns;		/* a batch is given up this long after its first try */
	uint64_t retry_after_max_ns;	/* a Retry-After past this is taken as this */
};

struct otlp_exporter;

/* Starts the sender's thread. NULL with errno set. */
struct otlp_exporter *otlp_exporter__new(const struct otlp_export_opts *o);
/*
 * Hands a whole Export*ServiceRequest (malloc'd; owned by the sender from now on, freed also
 * when refused) of items spans or points to the sender. Never waits for the network: a
 * lock held for a few instructions, then the sender's thread posts it. false when the queue
 * was full: dropped, and counted.
 */
bool otlp_exporter__send(struct otlp_exporter *e, void *msg, size_t len, uint32_t items);
void otlp_exporter__stats(struct otlp_exporter *e, struct otlp_export_stats *st);
/* Stops the sender: what is queued gets until drain_ns to go out (no retry waits past
 * that, a POST in progress is cut then), the rest counts as failed. Its stats stay. */
void otlp_exporter__stop(struct otlp_exporter *e, uint64_t drain_ns);
/* Stops it (as above) and frees it. */
void otlp_exporter__free(struct otlp_exporter *e, uint64_t drain_ns);

#endif /* TT_OTLP_H */
