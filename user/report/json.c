// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --json: one JSON object per line, every field listed in docs/records.md. Fields
 * are added, never renamed. Latencies in ns; a latency that does not exist (no token yet)
 * is null.
 */
#include <stdlib.h>
#include "json_writer.h"
#include "attribute.h"
#include "outputs.h"
#include "stall_text.h"
#include "proxy.h"
#include "util.h"

struct out_json {
	struct output_opts o;
	struct jw w;
};

static void kns_or_null(struct jw *w, const char *key, bool known, uint64_t v)
{
	if (known)
		jw__ku64(w, key, v);
	else
		jw__knull(w, key);
}

static void ki64_or_null(struct jw *w, const char *key, bool known, int64_t v)
{
	if (known)
		jw__ki64(w, key, v);
	else
		jw__knull(w, key);
}

static void kstr_or_null(struct jw *w, const char *key, const char *s)
{
	if (s && s[0])
		jw__kstr(w, key, s);
	else
		jw__knull(w, key);
}

static void json_ready(void *priv, const struct ready_info *ri)
{
	struct out_json *oj = priv;
	struct jw *w = &oj->w;

	jw__obj_open(w);
	jw__kstr(w, "type", "ready");
	jw__kstr(w, "version", TT_VERSION);
	jw__ku64(w, "t_ns", ri->t_ns);
	jw__key(w, "pids");
	jw__arr_open(w);
	for (int i = 0; i < ri->npids; i++)
		jw__u64(w, ri->pids[i]);
	jw__arr_close(w);
	jw__key(w, "comms");
	jw__arr_open(w);
	for (int i = 0; i < ri->npids; i++)
		jw__str(w, ri->comms[i]);
	jw__arr_close(w);
	/* more than the lists hold: how many in all ("target" lines tell each one that joins) */
	jw__ku64(w, "pids_total", ri->npids_total > ri->npids ? ri->npids_total : ri->npids);
	jw__ku64(w, "probes", ri->probes);
	jw__kstr(w, "hooks", ri->hooks);
	jw__ku64(w, "capture_bytes", ri->capture_bytes);
	jw__ku64(w, "ringbuf_bytes", ri->ringbuf_bytes);
	jw__key(w, "markers");
	jw__arr_open(w);
	for (int i = 0; i < ri->nmarkers; i++)
		jw__str(w, marker_kind_name(ri->marker_kind[i]));
	jw__arr_close(w);
	jw__obj_close(w);
	jw__flush_line(w, oj->o.f);
	fflush(oj->o.f);
}

static void json_target(void *priv, const struct target_event *te)
{
	struct out_json *oj = priv;
	struct jw *w = &oj->w;

	jw__obj_open(w);
	jw__kstr(w, "type", "target");
	jw__kstr(w, "event", target_event_name(te->kind));
	jw__ku64(w, "t_ns", te->t_ns);
	jw__ku64(w, "pid", te->pid);
	if (te->ppid)
		jw__ku64(w, "ppid", te->ppid);
	else
		jw__knull(w, "ppid");
	jw__kstr(w, "comm", te->comm);
	if (target_why_name(te->why))
		jw__kstr(w, "why", target_why_name(te->why));
	else
		jw__knull(w, "why");
	jw__kbool(w, "sockets", te->flags & TT_TGT_DATA);
	jw__obj_close(w);
	jw__flush_line(w, oj->o.f);
}

static void stall_obj(struct jw *w, const struct tt_stall *st)
{
	char line[STALL_LINE_MAX];

	jw__obj_open(w);
	jw__ku64(w, "after_token", st->after_chunk + 1);
	jw__ku64(w, "t_start_ns", st->t_begin_ns);
	jw__ku64(w, "t_end_ns", st->t_end_ns);
	jw__ku64(w, "gap_ns", st->t_end_ns - st->t_begin_ns);
	jw__kstr(w, "cause", stall_cause_name(st->cause));
	jw__key(w, "parts_ns");
	jw__obj_open(w);
	for (int c = 0; c < STALL_NR; c++)
		jw__ku64(w, stall_cause_name(c), st->part_ns[c]);
	jw__obj_close(w);
	kstr_or_null(w, "stack", st->stack);
	kstr_or_null(w, "python", st->python);
	jw__ku64(w, "retransmits", st->retransmits);
	jw__kbool(w, "zero_window", st->zero_window);
	/* HTTP/2: the window a flow-control wait was for ("stream", "connection"), or null */
	kstr_or_null(w, "flow_window", stall_flow_window_name(st->flow_window));
	jw__kbool(w, "chain_cut", st->hops_cut);
	jw__kbool(w, "lost", st->lost);
	if (st->engine_late >= 0)
		jw__kbool(w, "engine_late", st->engine_late);
	else
		jw__knull(w, "engine_late");
	/* the chain: who the stream waited for, who woke it and what they did meanwhile */
	jw__key(w, "chain");
	jw__arr_open(w);
	for (uint32_t h = 0; h < st->nhops; h++) {
		const struct stall_hop *hp = &st->hop[h];

		jw__obj_open(w);
		jw__ku64(w, "pid", hp->pid);
		jw__ku64(w, "tid", hp->tid);
		jw__kstr(w, "comm", hp->comm);
		jw__kstr(w, "cause", stall_cause_name(hp->cause));
		jw__ku64(w, "ns", hp->ns);
		jw__kstr(w, "woken_by", wake_kind_name(hp->woken_by));
		kstr_or_null(w, "wake_stack", hp->wake_stack);
		kstr_or_null(w, "function", hp->func);
		jw__obj_close(w);
	}
	jw__arr_close(w);
	/* the hop the line names first, the one that did the late work */
	if (stall__root(st) >= 0)
		jw__ku64(w, "root_hop", stall__root(st));
	else
		jw__knull(w, "root_hop");
	stall__describe(st, line, sizeof(line));
	jw__kstr(w, "explain", line);
	jw__obj_close(w);
}

/* HTTP/2 and gRPC: the stream, what of its head could not be decoded, gRPC's status */
static void h2_fields(struct jw *w, const struct tt_request *r)
{
	jw__kstr(w, "http_version", r->h2 ? "2" : "1.1");
	if (r->h2)
		jw__ku64(w, "stream_id", r->h2_stream);
	else
		jw__knull(w, "stream_id");
	jw__kbool(w, "joined", r->joined);
	jw__key(w, "unknown");
	jw__arr_open(w);
	for (int f = 0; f < RF_NR; f++)
		if (r->unknown & 1u << f)
			jw__str(w, req_field_name(f));
	jw__arr_close(w);
	if (r->grpc_status >= 0) {
		jw__ku64(w, "grpc_status", r->grpc_status);
		jw__kstr(w, "grpc_message", r->grpc_message);
	} else {
		jw__knull(w, "grpc_status");
		jw__knull(w, "grpc_message");
	}
}

static void json_request(void *priv, const struct tt_request *r)
{
	struct out_json *oj = priv;
	struct jw *w = &oj->w;
	bool tok = r->chunks > 0, gaps = r->chunks > 1;

	if (oj->o.quiet)
		return;
	jw__obj_open(w);
	jw__kstr(w, "type", "request");
	jw__ku64(w, "pid", r->pid);
	jw__kstr(w, "comm", r->comm);
	jw__kstr(w, "conn", r->conn);
	/* server: the traced process answered; client: it made the call (an outbound stream) */
	jw__kstr(w, "direction", r->client ? "client" : "server");
	jw__kbool(w, "tls", r->tls);
	jw__ku64(w, "conn_id", r->conn_id);
	jw__ku64(w, "seq", r->seq);
	kstr_or_null(w, "request_id", r->request_id);
	kstr_or_null(w, "host", r->host);
	jw__kstr(w, "method", r->method);
	jw__key(w, "path");	/* without its query string (API keys), unless --show-query */
	jw__strn(w, r->path, path_shown_len(r->path, oj->o.show_query));
	if (r->status)
		jw__ku64(w, "status", r->status);
	else
		jw__knull(w, "status");
	kstr_or_null(w, "model", r->model);
	kstr_or_null(w, "response_id", r->resp_id);
	jw__kstr(w, "format", body_format_name(r->format));
	if (r->stream >= 0)
		jw__kbool(w, "stream", r->stream);
	else
		jw__knull(w, "stream");
	jw__ku64(w, "t_start_ns", r->t_start_ns);
	kns_or_null(w, "t_first_token_ns", tok, tok ? r->tok_ns[0] : 0);
	kns_or_null(w, "t_end_ns", r->t_end_ns, r->t_end_ns);
	kns_or_null(w, "ttft_ns", tok && r->t_start_ns, r->ttft_ns);
	jw__ku64(w, "chunks", r->chunks);
	jw__ku64(w, "tokens", r->tokens);
	if (r->model_tokens >= 0)
		jw__ki64(w, "model_tokens", r->model_tokens);
	else
		jw__knull(w, "model_tokens");
	jw__key(w, "itl_ns");
	jw__arr_open(w);
	for (uint32_t i = 0; i + 1 < r->chunks; i++)
		jw__u64(w, request__itl(r, i));
	jw__arr_close(w);
	kns_or_null(w, "itl_p50_ns", gaps, r->itl_p50_ns);
	kns_or_null(w, "itl_p90_ns", gaps, r->itl_p90_ns);
	kns_or_null(w, "itl_p99_ns", gaps, r->itl_p99_ns);
	kns_or_null(w, "itl_max_ns", gaps, r->itl_max_ns);
	kns_or_null(w, "tpot_ns", gaps && r->tokens > 1, r->tpot_ns);
	kns_or_null(w, "e2e_ns", r->t_start_ns && r->t_end_ns, r->e2e_ns);
	kns_or_null(w, "queue_ns", r->queue_known, r->queue_ns);
	/* a proxy's downstream request and the upstream call it made for it (core/proxy.h) */
	if (r->up.paired) {
		jw__key(w, "upstream");
		jw__obj_open(w);
		jw__kstr(w, "conn", r->up.conn);
		if (r->up.stream_id)
			jw__ku64(w, "stream_id", r->up.stream_id);
		else
			jw__knull(w, "stream_id");
		kstr_or_null(w, "request_id", r->up.request_id);
		jw__kstr(w, "paired_by", pair_by_name(r->up.by));
		jw__ku64(w, "ttft_ns", r->up.ttft_ns);
		jw__ki64(w, "request_delay_ns", r->up.request_delay_ns);
		jw__ki64(w, "first_token_delay_ns", r->up.first_token_delay_ns);
		kns_or_null(w, "token_delay_p50_ns", r->up.ntoken_delays, r->up.token_delay_p50_ns);
		kns_or_null(w, "token_delay_p99_ns", r->up.ntoken_delays, r->up.token_delay_p99_ns);
		kns_or_null(w, "token_delay_max_ns", r->up.ntoken_delays, r->up.token_delay_max_ns);
		jw__obj_close(w);
	} else {
		jw__knull(w, "upstream");
	}
	kns_or_null(w, "accept_wait_ns", r->accept_wait_known, r->accept_wait_ns);
	kns_or_null(w, "t_admit_ns", r->t_admit_ns, r->t_admit_ns);
	kns_or_null(w, "t_made_first_ns", r->t_made_first_ns, r->t_made_first_ns);
	ki64_or_null(w, "admit_ns", r->admit_known, r->admit_ns);
	ki64_or_null(w, "prefill_ns", r->prefill_known, r->prefill_ns);
	ki64_or_null(w, "emit_to_wire_ns", r->emit_known, r->emit_to_wire_ns);
	kns_or_null(w, "emit_p50_ns", r->nemit, r->emit_p50_ns);
	kns_or_null(w, "emit_p99_ns", r->nemit, r->emit_p99_ns);
	kns_or_null(w, "emit_max_ns", r->nemit, r->emit_max_ns);
	jw__ku64(w, "markers_made", r->nmade);
	jw__ku64(w, "markers_ambiguous", r->markers_ambiguous);
	jw__ku64(w, "tool_frames", r->tool_frames);
	jw__key(w, "stalls");
	jw__arr_open(w);
	for (uint32_t i = 0; i < r->nstalls; i++)
		stall_obj(w, &r->stalls[i]);
	jw__arr_close(w);
	jw__kbool(w, "error", request__is_error(r));
	jw__kbool(w, "complete", r->complete);
	jw__kbool(w, "aborted", r->abort != ABORT_NONE);
	kstr_or_null(w, "abort_reason", abort_reason_name(r->abort));
	jw__kbool(w, "truncated", r->truncated);
	jw__kbool(w, "lost", r->lost);
	/* when its first byte was read (its HEADERS frame, for HTTP/2) */
	jw__ku64(w, "t_recv_ns", r->t_recv_ns);
	h2_fields(w, r);
	jw__obj_close(w);
	jw__flush_line(w, oj->o.f);
}

static void pct_obj(struct jw *w, const char *key, const struct hist *h)
{
	jw__key(w, key);
	jw__obj_open(w);
	jw__ku64(w, "count", h->count);
	kns_or_null(w, "p50", h->count, hist__percentile(h, 50));
	kns_or_null(w, "p90", h->count, hist__percentile(h, 90));
	kns_or_null(w, "p99", h->count, hist__percentile(h, 99));
	kns_or_null(w, "max", h->count, h->max);
	jw__obj_close(w);
}

static void json_summary(void *priv, const struct summary *s)
{
	struct out_json *oj = priv;
	struct jw *w = &oj->w;
	const struct stats_win *sw = s->w;

	jw__obj_open(w);
	jw__kstr(w, "type", "summary");
	jw__kbool(w, "final", s->final);
	jw__kstr(w, "mode", s->aggregate ? "aggregate" : "records");
	jw__ku64(w, "t_ns", s->t_ns);
	jw__kf64(w, "interval_s", s->secs);
	jw__ku64(w, "requests", sw->requests);
	jw__ku64(w, "errors", sw->errors);
	jw__ku64(w, "aborted", sw->aborted);
	jw__ku64(w, "truncated", sw->truncated);
	jw__ku64(w, "lost_requests", sw->lost);	/* touched by dropped records: "lost":true */
	/* losses told with no request in flight: each may hide whole requests, unreported */
	jw__ku64(w, "lost_between_requests", s->lost.between_requests);
	/* --budget: left out whole (not lost), and the sends and reads not sent */
	jw__ku64(w, "left_out_by_budget", s->lost.left_out);
	jw__ku64(w, "left_out_records", s->lost.left_out_records);
	jw__ku64(w, "data_records", s->lost.data_records);
	jw__ku64(w, "tokens", sw->tokens);
	jw__ku64(w, "chunks", sw->chunks);
	jw__kf64(w, "tokens_per_s", s->secs > 0 ? sw->tokens / s->secs : 0);
	pct_obj(w, "ttft_ns", &sw->ttft);
	pct_obj(w, "itl_ns", &sw->itl);
	pct_obj(w, "tpot_ns", &sw->tpot);
	pct_obj(w, "e2e_ns", &sw->e2e);
	jw__ku64(w, "lost_events", lost_total(&s->lost));
	jw__key(w, "lost");
	jw__obj_open(w);
	for (int i = 0; i < LOST_NR; i++)
		jw__ku64(w, lost_kind_name(i), s->lost.n[i]);
	jw__obj_close(w);
	jw__ku64(w, "truncated_captures", s->lost.truncated);
	jw__ku64(w, "walks_cut", s->lost.walks_cut);
	jw__ku64(w, "switches_mended", s->lost.switches_mended);
	jw__ku64(w, "timer_marks_skipped", s->lost.timer_marks_skipped);
	if (s->hooks.lazy) {	/* --stall-hooks lazy, since the start */
		jw__key(w, "stall_hooks");
		jw__obj_open(w);
		jw__ku64(w, "attaches", s->hooks.attaches);
		jw__ku64(w, "failed", s->hooks.failed);
		jw__ku64(w, "on_ns", s->hooks.armed_ns);
		jw__ku64(w, "run_ns", s->run_ns);
		jw__obj_close(w);
	}
	jw__ku64(w, "parse_errors", s->lost.parse_errors);
	jw__ku64(w, "in_flight", s->in_flight);
	jw__key(w, "conns");	/* since the start */
	jw__obj_open(w);
	jw__ku64(w, "seen", s->conns);
	jw__ku64(w, "unparsed", s->conns_unparsed);
	jw__ku64(w, "tls", s->conns_tls);
	jw__ku64(w, "unmatched_responses", s->unmatched_responses);
	jw__obj_close(w);
	jw__key(w, "h2");	/* HTTP/2, since the start: nothing its parser dropped is silent */
	jw__obj_open(w);
	jw__ku64(w, "conns", s->h2.conns);
	jw__ku64(w, "streams", s->h2.streams);
	jw__ku64(w, "joined_streams", s->h2.joined);
	jw__ku64(w, "dropped_bytes", s->h2.dropped);
	jw__ku64(w, "resyncs", s->h2.resyncs);
	jw__ku64(w, "untracked_streams", s->h2.untracked);
	jw__ku64(w, "stray_frames", s->h2.stray);
	jw__ku64(w, "errors", s->h2.errors);
	jw__obj_close(w);
	jw__key(w, "client");	/* outbound calls the traced processes made */
	jw__obj_open(w);
	jw__ku64(w, "requests", sw->client_requests);
	jw__ku64(w, "errors", sw->client_errors);
	jw__ku64(w, "tokens", sw->client_tokens);
	pct_obj(w, "ttft_ns", &sw->client_ttft);
	pct_obj(w, "itl_ns", &sw->client_itl);
	jw__obj_close(w);
	jw__key(w, "stalls");
	jw__obj_open(w);
	jw__ku64(w, "total", sw->stalls);
	for (int c = 0; c < STALL_NR; c++)
		jw__ku64(w, stall_cause_name(c), sw->stalls_by_cause[c]);
	jw__obj_close(w);
	jw__obj_close(w);
	jw__flush_line(w, oj->o.f);
	fflush(oj->o.f);
}

static bool json_flush(void *priv)
{
	struct out_json *oj = priv;

	fflush(oj->o.f);
	return false;
}

static void json_free(void *priv)
{
	struct out_json *oj = priv;

	jw__free(&oj->w);
	free(oj);
}

static const struct output_ops json_ops = {
	.target = json_target,
	.ready = json_ready,
	.request = json_request,
	.summary = json_summary,
	.flush = json_flush,
	.free = json_free,
};

int output_json__new(struct output *o, const struct output_opts *opts)
{
	struct out_json *oj = calloc(1, sizeof(*oj));

	if (!oj)
		return -1;
	oj->o = *opts;
	jw__init(&oj->w);
	o->ops = &json_ops;
	o->priv = oj;
	return 0;
}
