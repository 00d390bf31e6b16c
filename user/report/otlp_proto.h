/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The OTLP messages tokentrace sends, as field numbers: opentelemetry-proto's
 * collector/{trace,metrics}/v1, trace/v1, metrics/v1, common/v1 and resource/v1 (OTLP 1.x,
 * where these numbers are stable). Only the fields written or read here are named.
 */
#ifndef TT_OTLP_PROTO_H
#define TT_OTLP_PROTO_H

/* ExportTraceServiceRequest, ExportMetricsServiceRequest */
enum { EXPORT_RESOURCE = 1 };	/* repeated ResourceSpans / ResourceMetrics */
/* Export*ServiceResponse { partial_success = 1 } and its
 * ExportTracePartialSuccess / ExportMetricsPartialSuccess */
enum { RESP_PARTIAL = 1, PARTIAL_REJECTED = 1, PARTIAL_MESSAGE = 2 };

/* ResourceSpans / ResourceMetrics: resource, scope_spans / scope_metrics */
enum { RES_RESOURCE = 1, RES_SCOPE = 2, RES_SCHEMA_URL = 3 };
/* ScopeSpans / ScopeMetrics: scope, spans / metrics */
enum { SCOPE_SCOPE = 1, SCOPE_ITEMS = 2 };
/* Resource */
enum { RESOURCE_ATTR = 1 };
/* InstrumentationScope */
enum { ISCOPE_NAME = 1, ISCOPE_VERSION = 2 };
/* KeyValue */
enum { KV_KEY = 1, KV_VALUE = 2 };
/* AnyValue */
enum { ANY_STRING = 1, ANY_BOOL = 2, ANY_INT = 3, ANY_DOUBLE = 4, ANY_ARRAY = 5 };
/* ArrayValue */
enum { ARRAY_VALUES = 1 };

/* Span */
enum {
	SPAN_TRACE_ID = 1,		/* bytes, 16 */
	SPAN_SPAN_ID = 2,		/* bytes, 8 */
	SPAN_TRACE_STATE = 3,
	SPAN_PARENT_SPAN_ID = 4,	/* bytes, 8; absent for a root span */
	SPAN_NAME = 5,
	SPAN_KIND = 6,
	SPAN_START = 7,			/* fixed64 start_time_unix_nano */
	SPAN_END = 8,			/* fixed64 end_time_unix_nano */
	SPAN_ATTR = 9,
	SPAN_DROPPED_ATTR = 10,
	SPAN_EVENT = 11,
	SPAN_DROPPED_EVENTS = 12,
	SPAN_STATUS = 15,
	SPAN_FLAGS = 16,		/* fixed32: W3C trace flags, and whether the parent is remote */
};
enum { SPAN_KIND_SERVER = 2, SPAN_KIND_CLIENT = 3 };
/* SpanFlags */
#define SPAN_FLAGS_HAS_IS_REMOTE	0x100u
#define SPAN_FLAGS_IS_REMOTE		0x200u
/* Span.Event */
enum { EVENT_TIME = 1, EVENT_NAME = 2, EVENT_ATTR = 3, EVENT_DROPPED_ATTR = 4 };
/* Status */
enum { STATUS_MESSAGE = 2, STATUS_CODE = 3 };
enum { STATUS_CODE_UNSET = 0, STATUS_CODE_OK = 1, STATUS_CODE_ERROR = 2 };

/* Metric */
enum { METRIC_NAME = 1, METRIC_DESCRIPTION = 2, METRIC_UNIT = 3, METRIC_SUM = 7,
       METRIC_HISTOGRAM = 9 };
/* Sum */
enum { SUM_POINTS = 1, SUM_TEMPORALITY = 2, SUM_MONOTONIC = 3 };
/* Histogram */
enum { HIST_POINTS = 1, HIST_TEMPORALITY = 2 };
enum { TEMPORALITY_CUMULATIVE = 2 };
/* NumberDataPoint */
enum { NDP_START = 2, NDP_TIME = 3, NDP_AS_INT = 6, NDP_ATTR = 7 };
/* HistogramDataPoint */
enum {
	HDP_START = 2, HDP_TIME = 3, HDP_COUNT = 4, HDP_SUM = 5, HDP_BUCKETS = 6, HDP_BOUNDS = 7,
	HDP_EXEMPLARS = 8, HDP_ATTR = 9, HDP_MIN = 11, HDP_MAX = 12,
};
/* Exemplar */
enum { EXEMPLAR_TIME = 2, EXEMPLAR_AS_DOUBLE = 3, EXEMPLAR_SPAN_ID = 4,
       EXEMPLAR_TRACE_ID = 5 };

#endif /* TT_OTLP_PROTO_H */
