// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A request's span (otlp.h). Attributes follow the OpenTelemetry semantic conventions where
 * one exists (GenAI: gen_ai.*; HTTP: http.*, url.path, server.*, client.*, error.type) and are
 * tokentrace.* for what only tokentrace measures, in ns as the JSON lines give them. Events:
 * the first token, the server's own markers, a stall each (its one-line explanation and its
 * parts by cause), and with opts->token_events an event per token.
 *
 * The span runs from the request's first byte read (or sent, for an outbound call) to the
 * response's last byte. Never the query string: it carries keys.
 */
#include <stdio.h>
#include <string.h>
#include "otlp.h"
#include "otlp_proto.h"
#include "proxy.h"
#include "stall.h"
#include "stall_text.h"
#include "util.h"

struct addr {
	char host[64];
	uint32_t port;
};

/* "1.2.3.4:80" or "[::1]:80": false for anything else (a Unix socket, a memory BIO) */
static bool addr_parse(const char *s, size_t n, struct addr *a)
{
	const char *colon;
	uint64_t port;
	char num[8];
	size_t hl;

	if (!n)
		return false;
	colon = memrchr(s, ':', n);
	if (!colon || (size_t)(s + n - colon - 1) >= sizeof(num))
		return false;
	memcpy(num, colon + 1, s + n - colon - 1);
	num[s + n - colon - 1] = '\0';
	if (parse_uint(num, 0, 65535, &port))
		return false;
	hl = colon - s;
	if (hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
		s++;
		hl -= 2;
	}
	if (!hl || hl >= sizeof(a->host) || memchr(s, '[', hl) || memchr(s, ']', hl))
		return false;
	memcpy(a->host, s, hl);
	a->host[hl] = '\0';
	a->port = (uint32_t)port;
	return true;
}

/* the local and remote ends of "laddr:lport-raddr:rport" */
static bool conn_ends(const char *conn, struct addr *l, struct addr *r)
{
	const char *dash = strchr(conn, '-');

	return dash && addr_parse(conn, dash - conn, l) && addr_parse(dash + 1, strlen(dash + 1), r);
}

/* Host: "name", "name:port", "[v6]" or "[v6]:port" (port 0 when not said) */
static void host_parse(const char *s, size_t n, struct addr *h)
{
	const char *end = s + n, *colon;

	h->host[0] = '\0';
	h->port = 0;
	if (!n)
		return;
	if (s[0] == '[') {
		const char *rb = memchr(s, ']', n);

		if (!rb)
			return;
		colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
		snprintf(h->host, sizeof(h->host), "%.*s", (int)(rb - s - 1), s + 1);
	} else {
		colon = memchr(s, ':', n);
		snprintf(h->host, sizeof(h->host), "%.*s", (int)(colon ? colon - s : (long)n), s);
	}
	if (colon) {
		char num[8];
		uint64_t port;

		snprintf(num, sizeof(num), "%.*s", (int)(end - colon - 1), colon + 1);
		if (!parse_uint(num, 1, 65535, &port))
			h->port = (uint32_t)port;
	}
}

static void net_attrs(struct pbuf *b, const struct tt_request *r)
{
	struct addr l, rem, h;
	bool ends = conn_ends(r->conn, &l, &rem);

	host_parse(r->host, strnlen(r->host, sizeof(r->host)), &h);
	if (r->client) {
		/* the API it called: by its Host, else the address it connected to */
		if (h.host[0] || ends)
			otlp__kv_str(b, SPAN_ATTR, "server.address", h.host[0] ? h.host : rem.host,
				     sizeof(h.host));
		if (ends || h.port)
			otlp__kv_int(b, SPAN_ATTR, "server.port", ends ? rem.port : h.port);
		return;
	}
	if (h.host[0] || ends)
		otlp__kv_str(b, SPAN_ATTR, "server.address", h.host[0] ? h.host : l.host,
			     sizeof(h.host));
	if (ends || h.port)
		otlp__kv_int(b, SPAN_ATTR, "server.port", h.port ? h.port : l.port);
	if (ends) {
		otlp__kv_cstr(b, SPAN_ATTR, "client.address", rem.host);
		otlp__kv_int(b, SPAN_ATTR, "client.port", rem.port);
	}
}

/* error.type, or NULL: a status that failed the call (5xx served; 4xx and 5xx called), a
 * stream that said error, a stream cut short (not by a loss of ours: that is "lost") */
static const char *error_type(const struct tt_request *r, char *buf, size_t sz)
{
	if (r->status >= (r->client ? 400 : 500)) {
		snprintf(buf, sz, "%d", r->status);
		return buf;
	}
	/* gRPC's own status (semantic conventions: its code, as a string) */
	if (r->grpc_status > 0) {
		snprintf(buf, sz, "%d", r->grpc_status);
		return buf;
	}
	if (r->stream_error)
		return "stream_error";
	if (r->abort != ABORT_NONE && r->abort != ABORT_LOST)
		return abort_reason_name(r->abort);
	return NULL;
}

static void kv_ns(struct pbuf *b, const char *key, bool known, uint64_t ns)
{
	if (known)
		otlp__kv_int(b, SPAN_ATTR, key, (int64_t)ns);
}

static void genai_attrs(struct pbuf *b, const struct tt_request *r, const char *op)
{
	if (op)
		otlp__kv_cstr(b, SPAN_ATTR, "gen_ai.operation.name", op);
	if (r->model[0])
		otlp__kv_str(b, SPAN_ATTR, "gen_ai.request.model", r->model, sizeof(r->model));
	if (r->resp_id[0])
		otlp__kv_str(b, SPAN_ATTR, "gen_ai.response.id", r->resp_id, sizeof(r->resp_id));
	if (r->max_tokens >= 0)
		otlp__kv_int(b, SPAN_ATTR, "gen_ai.request.max_tokens", r->max_tokens);
	/* the stream's own count only: chunks are not tokens */
	if (r->model_tokens >= 0)
		otlp__kv_int(b, SPAN_ATTR, "gen_ai.usage.output_tokens", r->model_tokens);
}

static void http_attrs(struct pbuf *b, const struct tt_request *r)
{
	char buf[16];
	const char *et = error_type(r, buf, sizeof(buf));

	if (r->method[0])
		otlp__kv_str(b, SPAN_ATTR, "http.request.method", r->method, sizeof(r->method));
	if (r->path[0])
		otlp__kv_str(b, SPAN_ATTR, "url.path", r->path, path_shown_len(r->path, false));
	if (r->status)
		otlp__kv_int(b, SPAN_ATTR, "http.response.status_code", r->status);
	if (et)
		otlp__kv_cstr(b, SPAN_ATTR, "error.type", et);
	if (r->h2)
		otlp__kv_cstr(b, SPAN_ATTR, "network.protocol.version", "2");
	if (r->format == FMT_GRPC)
		otlp__kv_cstr(b, SPAN_ATTR, "rpc.system", "grpc");
	if (r->grpc_status >= 0)
		otlp__kv_int(b, SPAN_ATTR, "rpc.grpc.status_code", r->grpc_status);
	net_attrs(b, r);
}

static void own_attrs(struct pbuf *b, const struct tt_request *r)
{
	bool tok = r->chunks > 0, gaps = r->chunks > 1;

	kv_ns(b, "tokentrace.ttft_ns", tok && r->t_start_ns, r->ttft_ns);
	kv_ns(b, "tokentrace.tpot_ns", gaps, r->tpot_ns);
	kv_ns(b, "tokentrace.itl.p50_ns", gaps, r->itl_p50_ns);
	kv_ns(b, "tokentrace.itl.p99_ns", gaps, r->itl_p99_ns);
	kv_ns(b, "tokentrace.itl.max_ns", gaps, r->itl_max_ns);
	kv_ns(b, "tokentrace.e2e_ns", r->t_end_ns && r->t_start_ns, r->e2e_ns);
	kv_ns(b, "tokentrace.queue_ns", r->queue_known, r->queue_ns);
	otlp__kv_int(b, SPAN_ATTR, "tokentrace.chunks", r->chunks);
	otlp__kv_int(b, SPAN_ATTR, "tokentrace.tokens", (int64_t)r->tokens);
	otlp__kv_cstr(b, SPAN_ATTR, "tokentrace.format", body_format_name(r->format));
	otlp__kv_bool(b, SPAN_ATTR, "tokentrace.complete", r->complete);
	otlp__kv_bool(b, SPAN_ATTR, "tokentrace.aborted", r->abort != ABORT_NONE);
	if (r->abort != ABORT_NONE)
		otlp__kv_cstr(b, SPAN_ATTR, "tokentrace.abort_reason", abort_reason_name(r->abort));
	otlp__kv_bool(b, SPAN_ATTR, "tokentrace.lost", r->lost);
	otlp__kv_bool(b, SPAN_ATTR, "tokentrace.truncated", r->truncated);
	otlp__kv_int(b, SPAN_ATTR, "tokentrace.stalls", r->nstalls);
	otlp__kv_str(b, SPAN_ATTR, "tokentrace.conn", r->conn, sizeof(r->conn));
	otlp__kv_str(b, SPAN_ATTR, "tokentrace.comm", r->comm, sizeof(r->comm));
	if (r->request_id[0])
		otlp__kv_str(b, SPAN_ATTR, "tokentrace.request_id", r->request_id,
			     sizeof(r->request_id));
	if (r->tls)
		otlp__kv_bool(b, SPAN_ATTR, "tokentrace.tls", true);
	if (r->h2)
		otlp__kv_int(b, SPAN_ATTR, "tokentrace.h2.stream_id", r->h2_stream);
	if (r->joined)
		otlp__kv_bool(b, SPAN_ATTR, "tokentrace.joined", true);
	if (r->up.paired) {
		const char *by = pair_by_name(r->up.by);

		otlp__kv_cstr(b, SPAN_ATTR, "tokentrace.upstream.paired_by", by ? by : "unknown");
		otlp__kv_int(b, SPAN_ATTR, "tokentrace.upstream.ttft_ns", (int64_t)r->up.ttft_ns);
		otlp__kv_int(b, SPAN_ATTR, "tokentrace.upstream.request_delay_ns",
			     r->up.request_delay_ns);
		otlp__kv_int(b, SPAN_ATTR, "tokentrace.upstream.first_token_delay_ns",
			     r->up.first_token_delay_ns);
	}
}

static void event_open(struct pbuf *b, uint64_t mono_ns, const char *name)
{
	pbuf__open(b, SPAN_EVENT);
	pbuf__fixed64(b, EVENT_TIME, mono_to_wall_ns(mono_ns));
	pbuf__cstr(b, EVENT_NAME, name);
}

static void event_simple(struct pbuf *b, uint64_t mono_ns, const char *name)
{
	if (!mono_ns)
		return;
	event_open(b, mono_ns, name);
	pbuf__close(b);
}

static void stall_event(struct pbuf *b, const struct tt_stall *st)
{
	char line[STALL_LINE_MAX], key[64];

	event_open(b, st->t_begin_ns, "tokentrace.stall");
	otlp__kv_int(b, EVENT_ATTR, "tokentrace.stall.gap_ns",
		     (int64_t)(st->t_end_ns - st->t_begin_ns));
	otlp__kv_int(b, EVENT_ATTR, "tokentrace.stall.after_token", st->after_chunk + 1);
	otlp__kv_cstr(b, EVENT_ATTR, "tokentrace.stall.cause", stall_cause_name(st->cause));
	stall__describe(st, line, sizeof(line));
	otlp__kv_str(b, EVENT_ATTR, "tokentrace.stall.explain", line, sizeof(line));
	for (int c = 0; c < STALL_NR; c++) {
		if (!st->part_ns[c])
			continue;
		snprintf(key, sizeof(key), "tokentrace.stall.part.%s_ns", stall_cause_name(c));
		otlp__kv_int(b, EVENT_ATTR, key, (int64_t)st->part_ns[c]);
	}
	if (st->stack[0])
		otlp__kv_str(b, EVENT_ATTR, "tokentrace.stall.stack", st->stack, sizeof(st->stack));
	if (st->python[0])
		otlp__kv_str(b, EVENT_ATTR, "tokentrace.stall.python", st->python,
			     sizeof(st->python));
	if (st->retransmits)
		otlp__kv_int(b, EVENT_ATTR, "tokentrace.stall.retransmits", st->retransmits);
	if (st->zero_window)
		otlp__kv_bool(b, EVENT_ATTR, "tokentrace.stall.zero_window", true);
	if (st->engine_late >= 0)
		otlp__kv_bool(b, EVENT_ATTR, "tokentrace.stall.engine_late", st->engine_late);
	otlp__kv_bool(b, EVENT_ATTR, "tokentrace.stall.lost", st->lost);
	otlp__kv_int(b, EVENT_ATTR, "tokentrace.stall.chain_hops", st->nhops);
	if (st->hops_cut)
		otlp__kv_bool(b, EVENT_ATTR, "tokentrace.stall.chain_cut", true);
	pbuf__close(b);
}

/* The events; returns how many a bound left out. */
static uint32_t events(struct pbuf *b, const struct tt_request *r, const struct otlp_span_opts *o,
		       uint32_t *tok_cut)
{
	uint32_t cut = 0, ntok = 0, nst;

	if (r->chunks)
		event_simple(b, r->tok_ns[0], "tokentrace.first_token");
	event_simple(b, r->t_admit_ns, "tokentrace.admitted");
	event_simple(b, r->t_made_first_ns, "tokentrace.first_token_made");
	event_simple(b, r->t_made_done_ns, "tokentrace.generation_done");
	nst = r->stalls ? MIN(r->nstalls, OTLP_STALL_EVENTS_MAX) : 0;
	for (uint32_t i = 0; i < nst; i++)
		stall_event(b, &r->stalls[i]);
	if (r->stalls && r->nstalls > nst)
		cut += r->nstalls - nst;
	if (o && o->token_events) {
		ntok = MIN(r->chunks, o->token_events);
		for (uint32_t i = 0; i < ntok; i++) {
			event_open(b, r->tok_ns[i], "tokentrace.token");
			otlp__kv_int(b, EVENT_ATTR, "tokentrace.token.index", i);
			pbuf__close(b);
		}
		*tok_cut = r->chunks - ntok;
		cut += *tok_cut;
	}
	return cut;
}

static uint64_t span_start(const struct tt_request *r)
{
	if (r->t_recv_ns && (!r->t_start_ns || r->t_recv_ns <= r->t_start_ns))
		return r->t_recv_ns;
	if (r->t_start_ns)
		return r->t_start_ns;
	return r->chunks ? r->tok_ns[0] : r->t_head_ns;
}

static uint64_t span_end(const struct tt_request *r, uint64_t start)
{
	uint64_t end = r->t_end_ns;

	if (r->chunks && r->tok_ns[r->chunks - 1] > end)
		end = r->tok_ns[r->chunks - 1];
	return MAX(end, start);
}

void otlp__span(struct pbuf *b, const struct tt_request *r, const struct otlp_ids *ids,
		const struct otlp_span_opts *o)
{
	const char *op = otlp__operation(r->path);
	uint64_t start = span_start(r), end = span_end(r, start);
	uint32_t flags = ids->trace_flags | SPAN_FLAGS_HAS_IS_REMOTE, cut, tok_cut = 0;
	char name[OTLP_NAME_MAX + 64], buf[16];
	const char *et = error_type(r, buf, sizeof(buf));

	if (ids->has_parent && ids->parent_remote)
		flags |= SPAN_FLAGS_IS_REMOTE;
	pbuf__bytes(b, SPAN_TRACE_ID, ids->trace_id, 16);
	pbuf__bytes(b, SPAN_SPAN_ID, ids->span_id, 8);
	if (ids->has_parent)
		pbuf__bytes(b, SPAN_PARENT_SPAN_ID, ids->parent_id, 8);
	pbuf__fixed32(b, SPAN_FLAGS, flags);
	/* GenAI: "{operation} {model}"; else HTTP's "{method}" (a path is not a route) */
	if (op && r->model[0])
		snprintf(name, sizeof(name), "%s %s", op, r->model);
	else
		snprintf(name, sizeof(name), "%s", op ? op : r->method[0] ? r->method : "HTTP");
	pbuf__str(b, SPAN_NAME, name, sizeof(name));
	pbuf__uint(b, SPAN_KIND, r->client ? SPAN_KIND_CLIENT : SPAN_KIND_SERVER);
	pbuf__fixed64(b, SPAN_START, mono_to_wall_ns(start));
	pbuf__fixed64(b, SPAN_END, mono_to_wall_ns(end));
	genai_attrs(b, r, op);
	http_attrs(b, r);
	own_attrs(b, r);
	cut = events(b, r, o, &tok_cut);
	if (tok_cut)
		otlp__kv_int(b, SPAN_ATTR, "tokentrace.token_events_cut", tok_cut);
	if (cut)
		pbuf__uint(b, SPAN_DROPPED_EVENTS, cut);
	if (et) {
		pbuf__open(b, SPAN_STATUS);
		pbuf__cstr(b, STATUS_MESSAGE, et);
		pbuf__uint(b, STATUS_CODE, STATUS_CODE_ERROR);
		pbuf__close(b);
	}
}
