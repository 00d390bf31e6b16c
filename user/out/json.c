// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --json: one JSON object per line, per the contract in docs/design.md section 1.6. Fields
 * are added, never renamed. Latencies in ns; a latency that does not exist (no token yet)
 * is null.
 */
#include <stdlib.h>
#include "json_writer.h"
#include "attribute.h"
#include "outputs.h"
#include "stall.h"
#include "proxy.h"
#include "util.h"

struct out_json {
	struct output_opts o;
	struct jw w;
};

static void kns_or_null(struct jw *w, const char *key, bool known, uint64_t v)
{
	if (known)
		jw_ku64(w, key, v);
	else
		jw_knull(w, key);
}

static void ki64_or_null(struct jw *w, const char *key, bool known, int64_t v)
{
	if (known)
		jw_ki64(w, key, v);
	else
		jw_knull(w, key);
}

static void kstr_or_null(struct jw *w, const char *key, const char *s)
{
	if (s && s[0])
		jw_kstr(w, key, s);
	else
		jw_knull(w, key);
}

static void json_ready(void *priv, const struct ready_info *ri)
{
	struct out_json *oj = priv;
	struct jw *w = &oj->w;

	jw_obj_open(w);
	jw_kstr(w, "type", "ready");
	jw_kstr(w, "version", TT_VERSION);
	jw_ku64(w, "t_ns", ri->t_ns);
	jw_key(w, "pids");
	jw_arr_open(w);
	for (int i = 0; i < ri->npids; i++)
		jw_u64(w, ri->pids[i]);
	jw_arr_close(w);
	jw_key(w, "comms");
	jw_arr_open(w);
	for (int i = 0; i < ri->npids; i++)
		jw_str(w, ri->comms[i]);
	jw_arr_close(w);
	jw_ku64(w, "probes", ri->probes);
	jw_kstr(w, "hooks", ri->hooks);
	jw_ku64(w, "capture_bytes", ri->capture_bytes);
	jw_ku64(w, "ringbuf_bytes", ri->ringbuf_bytes);
	jw_key(w, "markers");
	jw_arr_open(w);
	for (int i = 0; i < ri->nmarkers; i++)
		jw_str(w, marker_kind_name(ri->marker_kind[i]));
	jw_arr_close(w);
	jw_obj_close(w);
	jw_flush_line(w, oj->o.f);
	fflush(oj->o.f);
}

static void json_target(void *priv, const struct target_event *te)
{
	struct out_json *oj = priv;
	struct jw *w = &oj->w;

	jw_obj_open(w);
	jw_kstr(w, "type", "target");
	jw_kstr(w, "event", target_event_name(te->kind));
	jw_ku64(w, "t_ns", te->t_ns);
	jw_ku64(w, "pid", te->pid);
	if (te->ppid)
		jw_ku64(w, "ppid", te->ppid);
	else
		jw_knull(w, "ppid");
	jw_kstr(w, "comm", te->comm);
	if (target_why_name(te->why))
		jw_kstr(w, "why", target_why_name(te->why));
	else
		jw_knull(w, "why");
	jw_kbool(w, "sockets", te->flags & TT_TGT_DATA);
	jw_obj_close(w);
	jw_flush_line(w, oj->o.f);
}

static void stall_obj(struct jw *w, const struct tt_stall *st)
{
	char line[1024];

	jw_obj_open(w);
	jw_ku64(w, "after_token", st->after_chunk + 1);
	jw_ku64(w, "t_start_ns", st->t_begin_ns);
	jw_ku64(w, "t_end_ns", st->t_end_ns);
	jw_ku64(w, "gap_ns", st->t_end_ns - st->t_begin_ns);
	jw_kstr(w, "cause", stall_cause_name(st->cause));
	jw_key(w, "parts_ns");
	jw_obj_open(w);
	for (int c = 0; c < STALL_NR; c++)
		jw_ku64(w, stall_cause_name(c), st->part_ns[c]);
	jw_obj_close(w);
	kstr_or_null(w, "stack", st->stack);
	kstr_or_null(w, "python", st->python);
	jw_ku64(w, "retransmits", st->retransmits);
	jw_kbool(w, "zero_window", st->zero_window);
	jw_kbool(w, "lost", st->lost);
	if (st->engine_late >= 0)
		jw_kbool(w, "engine_late", st->engine_late);
	else
		jw_knull(w, "engine_late");
	/* the chain: who the stream waited for, who woke it and what they did meanwhile */
	jw_key(w, "chain");
	jw_arr_open(w);
	for (uint32_t h = 0; h < st->nhops; h++) {
		const struct stall_hop *hp = &st->hop[h];

		jw_obj_open(w);
		jw_ku64(w, "pid", hp->pid);
		jw_ku64(w, "tid", hp->tid);
		jw_kstr(w, "comm", hp->comm);
		jw_kstr(w, "cause", stall_cause_name(hp->cause));
		jw_ku64(w, "ns", hp->ns);
		jw_kstr(w, "woken_by", wake_kind_name(hp->woken_by));
		kstr_or_null(w, "wake_stack", hp->wake_stack);
		kstr_or_null(w, "function", hp->func);
		jw_obj_close(w);
	}
	jw_arr_close(w);
	stall__describe(st, line, sizeof(line));
	jw_kstr(w, "explain", line);
	jw_obj_close(w);
}

static void json_request(void *priv, const struct tt_request *r)
{
	struct out_json *oj = priv;
	struct jw *w = &oj->w;
	bool tok = r->chunks > 0, gaps = r->chunks > 1;

	if (oj->o.quiet)
		return;
	jw_obj_open(w);
	jw_kstr(w, "type", "request");
	jw_ku64(w, "pid", r->pid);
	jw_kstr(w, "comm", r->comm);
	jw_kstr(w, "conn", r->conn);
	/* server: the traced process answered; client: it made the call (an outbound stream) */
	jw_kstr(w, "direction", r->client ? "client" : "server");
	jw_kbool(w, "tls", r->tls);
	jw_ku64(w, "conn_id", r->conn_id);
	jw_ku64(w, "seq", r->seq);
	kstr_or_null(w, "request_id", r->request_id);
	kstr_or_null(w, "host", r->host);
	jw_kstr(w, "method", r->method);
	jw_key(w, "path");	/* without its query string (API keys), unless --show-query */
	jw_strn(w, r->path, path_shown_len(r->path, oj->o.show_query));
	if (r->status)
		jw_ku64(w, "status", r->status);
	else
		jw_knull(w, "status");
	kstr_or_null(w, "model", r->model);
	kstr_or_null(w, "response_id", r->resp_id);
	jw_kstr(w, "format", body_format_name(r->format));
	if (r->stream >= 0)
		jw_kbool(w, "stream", r->stream);
	else
		jw_knull(w, "stream");
	jw_ku64(w, "t_start_ns", r->t_start_ns);
	kns_or_null(w, "t_first_token_ns", tok, tok ? r->tok_ns[0] : 0);
	kns_or_null(w, "t_end_ns", r->t_end_ns, r->t_end_ns);
	kns_or_null(w, "ttft_ns", tok && r->t_start_ns, r->ttft_ns);
	jw_ku64(w, "chunks", r->chunks);
	jw_ku64(w, "tokens", r->tokens);
	if (r->model_tokens >= 0)
		jw_ki64(w, "model_tokens", r->model_tokens);
	else
		jw_knull(w, "model_tokens");
	jw_key(w, "itl_ns");
	jw_arr_open(w);
	for (uint32_t i = 0; i + 1 < r->chunks; i++)
		jw_u64(w, request__itl(r, i));
	jw_arr_close(w);
	kns_or_null(w, "itl_p50_ns", gaps, r->itl_p50_ns);
	kns_or_null(w, "itl_p90_ns", gaps, r->itl_p90_ns);
	kns_or_null(w, "itl_p99_ns", gaps, r->itl_p99_ns);
	kns_or_null(w, "itl_max_ns", gaps, r->itl_max_ns);
	kns_or_null(w, "tpot_ns", gaps && r->tokens > 1, r->tpot_ns);
	kns_or_null(w, "e2e_ns", r->t_start_ns && r->t_end_ns, r->e2e_ns);
	kns_or_null(w, "queue_ns", r->queue_known, r->queue_ns);
	/* a proxy's downstream request and the upstream call it made for it (core/proxy.h) */
	if (r->up.paired) {
		jw_key(w, "upstream");
		jw_obj_open(w);
		jw_kstr(w, "conn", r->up.conn);
		kstr_or_null(w, "request_id", r->up.request_id);
		jw_kstr(w, "paired_by", pair_by_name(r->up.by));
		jw_ku64(w, "ttft_ns", r->up.ttft_ns);
		jw_ki64(w, "request_delay_ns", r->up.request_delay_ns);
		jw_ki64(w, "first_token_delay_ns", r->up.first_token_delay_ns);
		kns_or_null(w, "token_delay_p50_ns", r->up.ntoken_delays, r->up.token_delay_p50_ns);
		kns_or_null(w, "token_delay_p99_ns", r->up.ntoken_delays, r->up.token_delay_p99_ns);
		kns_or_null(w, "token_delay_max_ns", r->up.ntoken_delays, r->up.token_delay_max_ns);
		jw_obj_close(w);
	} else {
		jw_knull(w, "upstream");
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
	jw_ku64(w, "markers_made", r->nmade);
	jw_ku64(w, "markers_ambiguous", r->markers_ambiguous);
	jw_ku64(w, "tool_frames", r->tool_frames);
	jw_key(w, "stalls");
	jw_arr_open(w);
	for (uint32_t i = 0; i < r->nstalls; i++)
		stall_obj(w, &r->stalls[i]);
	jw_arr_close(w);
	jw_kbool(w, "error", request__is_error(r));
	jw_kbool(w, "complete", r->complete);
	jw_kbool(w, "aborted", r->abort != ABORT_NONE);
	kstr_or_null(w, "abort_reason", abort_reason_name(r->abort));
	jw_kbool(w, "truncated", r->truncated);
	jw_kbool(w, "lost", r->lost);
	jw_obj_close(w);
	jw_flush_line(w, oj->o.f);
}

static void pct_obj(struct jw *w, const char *key, const struct hist *h)
{
	jw_key(w, key);
	jw_obj_open(w);
	jw_ku64(w, "count", h->count);
	kns_or_null(w, "p50", h->count, hist__percentile(h, 50));
	kns_or_null(w, "p90", h->count, hist__percentile(h, 90));
	kns_or_null(w, "p99", h->count, hist__percentile(h, 99));
	kns_or_null(w, "max", h->count, h->max);
	jw_obj_close(w);
}

static void json_summary(void *priv, const struct summary *s)
{
	struct out_json *oj = priv;
	struct jw *w = &oj->w;
	const struct stats_win *sw = s->w;

	jw_obj_open(w);
	jw_kstr(w, "type", "summary");
	jw_kbool(w, "final", s->final);
	jw_kstr(w, "mode", s->aggregate ? "aggregate" : "records");
	jw_ku64(w, "t_ns", s->t_ns);
	jw_kf64(w, "interval_s", s->secs);
	jw_ku64(w, "requests", sw->requests);
	jw_ku64(w, "errors", sw->errors);
	jw_ku64(w, "aborted", sw->aborted);
	jw_ku64(w, "truncated", sw->truncated);
	jw_ku64(w, "lost_requests", sw->lost);	/* touched by dropped records: "lost":true */
	jw_ku64(w, "tokens", sw->tokens);
	jw_ku64(w, "chunks", sw->chunks);
	jw_kf64(w, "tokens_per_s", s->secs > 0 ? sw->tokens / s->secs : 0);
	pct_obj(w, "ttft_ns", &sw->ttft);
	pct_obj(w, "itl_ns", &sw->itl);
	pct_obj(w, "tpot_ns", &sw->tpot);
	pct_obj(w, "e2e_ns", &sw->e2e);
	jw_ku64(w, "lost_events", lost_total(&s->lost));
	jw_key(w, "lost");
	jw_obj_open(w);
	for (int i = 0; i < LOST_NR; i++)
		jw_ku64(w, lost_kind_name(i), s->lost.n[i]);
	jw_obj_close(w);
	jw_ku64(w, "truncated_captures", s->lost.truncated);
	jw_ku64(w, "walks_cut", s->lost.walks_cut);
	jw_ku64(w, "parse_errors", s->lost.parse_errors);
	jw_ku64(w, "in_flight", s->in_flight);
	jw_key(w, "conns");	/* since the start */
	jw_obj_open(w);
	jw_ku64(w, "seen", s->conns);
	jw_ku64(w, "unparsed", s->conns_unparsed);
	jw_ku64(w, "tls", s->conns_tls);
	jw_ku64(w, "unmatched_responses", s->unmatched_responses);
	jw_obj_close(w);
	jw_key(w, "client");	/* outbound calls the traced processes made */
	jw_obj_open(w);
	jw_ku64(w, "requests", sw->client_requests);
	jw_ku64(w, "errors", sw->client_errors);
	jw_ku64(w, "tokens", sw->client_tokens);
	pct_obj(w, "ttft_ns", &sw->client_ttft);
	pct_obj(w, "itl_ns", &sw->client_itl);
	jw_obj_close(w);
	jw_key(w, "stalls");
	jw_obj_open(w);
	jw_ku64(w, "total", sw->stalls);
	for (int c = 0; c < STALL_NR; c++)
		jw_ku64(w, stall_cause_name(c), sw->stalls_by_cause[c]);
	jw_obj_close(w);
	jw_obj_close(w);
	jw_flush_line(w, oj->o.f);
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

	jw_free(&oj->w);
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
	jw_init(&oj->w);
	o->ops = &json_ops;
	o->priv = oj;
	return 0;
}
