// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Human output: a line per finished request under a header, a summary block per interval.
 * Payload never appears here: only method, path and the numbers. What came from the wire or
 * the traced process (method, path, a stack's symbols) is escaped for the terminal.
 */
#include <stdlib.h>
#include <string.h>
#include "outputs.h"
#include "stall_text.h"
#include "util.h"

struct out_text {
	struct output_opts o;
	bool header_done;
};

#define RED	"\033[31m"
#define YELLOW	"\033[33m"
#define RESET	"\033[0m"

static void text_ready(void *priv, const struct ready_info *ri)
{
	/* the "attached" line goes to stderr from the main loop: stdout stays data */
}

static void header(struct out_text *ot)
{
	if (ot->header_done || ot->o.quiet)
		return;
	fprintf(ot->o.f, "%-12s %-7s %-31s %-30s %3s %8s %6s %-20s %8s %8s\n", "TIME", "PID",
		"CONNECTION", "REQUEST", "ST", "TTFT", "TOKENS", "ITL p50/p99/max", "TPOT",
		"E2E");
	ot->header_done = true;
}

static void ms3(char *buf, size_t sz, uint64_t a, uint64_t b, uint64_t c)
{
	/* one unit for the three so they read as a row */
	if (c < 10000000)
		snprintf(buf, sz, "%.2f/%.2f/%.2fms", a / 1e6, b / 1e6, c / 1e6);
	else
		snprintf(buf, sz, "%.1f/%.1f/%.1fms", a / 1e6, b / 1e6, c / 1e6);
}

static void part(char *buf, size_t sz, bool known, int64_t ns)
{
	if (!known)
		snprintf(buf, sz, "?");
	else if (ns < 0) {
		buf[0] = '-';
		fmt_dur(buf + 1, sz - 1, -ns);
	} else {
		fmt_dur(buf, sz, ns);
	}
}

/* A proxy's share: "upstream 10.0.0.2:8000 TTFT 412ms = proxy 0.3ms + upstream 410ms + ..." */
static void upstream_line(FILE *f, const struct tt_request *r)
{
	char up[16], rq[16], ft[16], p50[16], p99[16], mx[16], conn[4 * REQ_ADDR_MAX];

	if (!r->up.paired)
		return;
	fmt_dur(up, sizeof(up), r->up.ttft_ns);
	fmt_dur(rq, sizeof(rq), r->up.request_delay_ns > 0 ? r->up.request_delay_ns : 0);
	fmt_dur(ft, sizeof(ft), r->up.first_token_delay_ns > 0 ? r->up.first_token_delay_ns : 0);
	fmt_dur(p50, sizeof(p50), r->up.token_delay_p50_ns);
	fmt_dur(p99, sizeof(p99), r->up.token_delay_p99_ns);
	fmt_dur(mx, sizeof(mx), r->up.token_delay_max_ns);
	esc_term(conn, sizeof(conn), r->up.conn, strnlen(r->up.conn, sizeof(r->up.conn)));
	if (r->up.stream_id) {
		size_t n = strlen(conn);

		snprintf(conn + n, sizeof(conn) - n, "#%u", r->up.stream_id);
	}
	fprintf(f, "%12s upstream %s: TTFT = proxy %s + upstream %s + forwarding %s; per token the "
		"proxy added p50 %s p99 %s max %s\n", "", conn, rq, up, ft, p50, p99, mx);
}

/* Where the time to first token went, when markers or the kernel said. */
static void breakdown_line(FILE *f, const struct tt_request *r)
{
	char a[16], p[16], e[16], q[16], e50[16], e99[16], emax[16];

	if (!r->admit_known && !r->prefill_known && !r->emit_known && !r->queue_known)
		return;
	fprintf(f, "%12s ", "");
	if (r->queue_known) {
		fmt_dur(q, sizeof(q), r->queue_ns);
		fprintf(f, "queued %s before the read", q);
	}
	if (r->admit_known || r->prefill_known || r->emit_known) {
		part(a, sizeof(a), r->admit_known, r->admit_ns);
		part(p, sizeof(p), r->prefill_known, r->prefill_ns);
		part(e, sizeof(e), r->emit_known, r->emit_to_wire_ns);
		fprintf(f, "%sTTFT = admit %s + prefill %s + emit-to-wire %s",
			r->queue_known ? "; " : "", a, p, e);
	}
	if (r->nemit) {
		fmt_dur(e50, sizeof(e50), r->emit_p50_ns);
		fmt_dur(e99, sizeof(e99), r->emit_p99_ns);
		fmt_dur(emax, sizeof(emax), r->emit_max_ns);
		fprintf(f, "; per token emit-to-wire p50 %s p99 %s max %s", e50, e99, emax);
	}
	if (r->markers_ambiguous)
		fprintf(f, "; %u marker hits ambiguous", r->markers_ambiguous);
	fputc('\n', f);
}

/* "stall 212ms after token 18: EngineCore (pid 4242) on-CPU 191ms in ...; api (pid ...) ..." */
static void stall_line(FILE *f, const struct tt_stall *st)
{
	char gap[16], line[STALL_LINE_MAX], shown[2 * STALL_LINE_MAX];

	fmt_dur(gap, sizeof(gap), st->t_end_ns - st->t_begin_ns);
	stall__describe(st, line, sizeof(line));
	/* names and symbols come from the traced processes, as untrusted as their traffic */
	esc_term(shown, sizeof(shown), line, strlen(line));
	fprintf(f, "%12s stall %s after token %u: %s\n", "", gap, st->after_chunk + 1, shown);
}

/* HTTP/2: "[grpc 13 engine failure]" in red, "[joined: path unknown]" */
static void h2_flags(struct out_text *ot, const struct tt_request *r)
{
	char msg[4 * REQ_GRPC_MSG_MAX];
	bool first = true;

	if (r->grpc_status > 0) {
		esc_term(msg, sizeof(msg), r->grpc_message, strlen(r->grpc_message));
		fprintf(ot->o.f, " %s[grpc %d%s%s]%s", ot->o.color ? RED : "", r->grpc_status,
			msg[0] ? " " : "", msg, ot->o.color ? RESET : "");
	}
	if (!r->joined && !r->unknown)
		return;
	fprintf(ot->o.f, " [%s", r->joined ? "joined" : "");
	for (int f = 0; f < RF_NR; f++) {
		if (!(r->unknown & 1u << f) || f == RF_TRACEPARENT || f == RF_REQUEST_ID)
			continue;
		fprintf(ot->o.f, "%s%s", first ? (r->joined ? ": " : "") : ", ", req_field_name(f));
		first = false;
	}
	fprintf(ot->o.f, "%s]", first ? "" : " unknown");
}

static void text_request(void *priv, const struct tt_request *r)
{
	struct out_text *ot = priv;
	char t[16], ttft[16] = "-", itl[48] = "-", tpot[16] = "-", e2e[16] = "-", req[64];
	char status[8] = "-", method[16], path[44], conn[REQ_ADDR_MAX + 16];
	const char *flag = "";

	if (ot->o.quiet)
		return;
	header(ot);
	fmt_clock(t, sizeof(t), r->t_end_ns ? r->t_end_ns : r->t_start_ns);
	if (r->chunks && r->t_start_ns)
		fmt_dur(ttft, sizeof(ttft), r->ttft_ns);
	if (r->chunks > 1) {
		ms3(itl, sizeof(itl), r->itl_p50_ns, r->itl_p99_ns, r->itl_max_ns);
		fmt_dur(tpot, sizeof(tpot), r->tpot_ns);
	}
	if (r->t_start_ns && r->t_end_ns)
		fmt_dur(e2e, sizeof(e2e), r->e2e_ns);
	if (r->status)
		snprintf(status, sizeof(status), "%d", r->status);
	/* the path is cut to the column: the end of a long path rarely matters */
	esc_term(method, sizeof(method), r->method, strlen(r->method));
	esc_term(path, sizeof(path), r->path, path_shown_len(r->path, ot->o.show_query));
	if (!path[0] && r->unknown & 1u << RF_PATH)
		snprintf(path, sizeof(path), "?");
	/* HTTP/2: a request is a stream of its connection */
	if (r->h2)
		snprintf(conn, sizeof(conn), "%s#%u", r->conn, r->h2_stream);
	else
		snprintf(conn, sizeof(conn), "%s", r->conn);
	/* an outbound call: the traced process is the client, the times its own */
	snprintf(req, sizeof(req), "%s%s %s", r->client ? "->" : "", method, path);
	if (strlen(req) > 30) {
		size_t k = 27;

		while (k && ((unsigned char)req[k] & 0xc0) == 0x80)
			k--;	/* not inside a UTF-8 character */
		strcpy(req + k, "...");
	}
	fprintf(ot->o.f, "%-12s %-7u %-31s %-30s %3s %8s %6llu %-20s %8s %8s", t, r->pid, conn,
		req, status, ttft, (unsigned long long)r->tokens, itl, tpot, e2e);
	h2_flags(ot, r);
	if (r->abort) {
		fprintf(ot->o.f, " %s[aborted: %s]%s", ot->o.color ? RED : "",
			abort_reason_name(r->abort), ot->o.color ? RESET : "");
	}
	if (r->truncated)
		flag = " [truncated]";
	if (r->lost)
		flag = r->truncated ? " [truncated, events lost]" : " [events lost]";
	if (*flag)
		fprintf(ot->o.f, "%s%s%s", ot->o.color ? YELLOW : "", flag,
			ot->o.color ? RESET : "");
	fputc('\n', ot->o.f);
	breakdown_line(ot->o.f, r);
	upstream_line(ot->o.f, r);
	for (uint32_t i = 0; i < r->nstalls; i++)
		stall_line(ot->o.f, &r->stalls[i]);
}

static void pct_row(FILE *f, const char *name, const struct hist *h)
{
	char v[5][16];

	if (!h->count) {
		fprintf(f, "  %-5s %9s\n", name, "-");
		return;
	}
	fmt_dur(v[0], sizeof(v[0]), hist__percentile(h, 50));
	fmt_dur(v[1], sizeof(v[1]), hist__percentile(h, 90));
	fmt_dur(v[2], sizeof(v[2]), hist__percentile(h, 99));
	fmt_dur(v[3], sizeof(v[3]), h->max);
	fprintf(f, "  %-5s %9s %9s %9s %9s %9llu\n", name, v[0], v[1], v[2], v[3],
		(unsigned long long)h->count);
}

static void text_summary(void *priv, const struct summary *s)
{
	struct out_text *ot = priv;
	const struct stats_win *w = s->w;
	FILE *f = ot->o.f;
	char t[16], lost[48] = "";

	fmt_clock(t, sizeof(t), s->t_ns);
	t[8] = '\0';
	if (w->lost)	/* requests touched by dropped records, flagged [events lost] */
		snprintf(lost, sizeof(lost), ", %llu with events lost", (unsigned long long)w->lost);
	fprintf(f, "--- %s %s %.1fs: %llu requests (%llu errors, %llu aborted%s), %llu tokens, "
		"%.1f tokens/s, %llu events lost", t, s->final ? "total" : "last", s->secs,
		(unsigned long long)w->requests, (unsigned long long)w->errors,
		(unsigned long long)w->aborted, lost,
		(unsigned long long)w->tokens, s->secs > 0 ? w->tokens / s->secs : 0,
		(unsigned long long)lost_total(&s->lost));
	if (lost_total(&s->lost)) {
		const char *sep = " (";

		for (int i = 0; i < LOST_NR; i++) {
			if (!s->lost.n[i] || i == LOST_BAD_RECORD)
				continue;
			fprintf(f, "%s%s %llu", sep, lost_kind_name(i),
				(unsigned long long)s->lost.n[i]);
			sep = ", ";
		}
		fputc(')', f);
	}
	if (s->lost.between_requests)
		fprintf(f, ", %llu losses between requests (whole requests may be missing)",
			(unsigned long long)s->lost.between_requests);
	if (s->lost.left_out)
		fprintf(f, ", %llu requests left out by the budget (--budget)",
			(unsigned long long)s->lost.left_out);
	if (s->lost.truncated)
		fprintf(f, ", %llu captures truncated", (unsigned long long)s->lost.truncated);
	if (s->lost.switches_mended)
		fprintf(f, ", %llu unseen switches mended",
			(unsigned long long)s->lost.switches_mended);
	if (s->lost.timer_marks_skipped)
		fprintf(f, ", %llu timer marks skipped",
			(unsigned long long)s->lost.timer_marks_skipped);
	if (s->final && s->hooks.lazy)
		fprintf(f, ", scheduler hooks on %.1f%% of the time (attached %llu times%s)",
			s->run_ns ? 100.0 * s->hooks.armed_ns / s->run_ns : 0.0,
			(unsigned long long)s->hooks.attaches,
			s->hooks.failed ? ", some attaches failed" : "");
	if (s->in_flight)
		fprintf(f, ", %llu in flight", (unsigned long long)s->in_flight);
	if (w->stalls) {
		bool first = true;

		fprintf(f, ", %llu stalls (", (unsigned long long)w->stalls);
		for (int c = 0; c < STALL_NR; c++) {
			if (!w->stalls_by_cause[c])
				continue;
			fprintf(f, "%s%s %llu", first ? "" : ", ", stall_cause_name(c),
				(unsigned long long)w->stalls_by_cause[c]);
			first = false;
		}
		fputc(')', f);
	}
	fputc('\n', f);
	if (s->final && s->conns)
		fprintf(f, "  connections: %llu (%llu not parsed: not HTTP, or TLS not seen in "
			"OpenSSL; %llu TLS read from OpenSSL; %llu responses to a request not "
			"read)\n", (unsigned long long)s->conns,
			(unsigned long long)s->conns_unparsed, (unsigned long long)s->conns_tls,
			(unsigned long long)s->unmatched_responses);
	if (s->final && s->h2.conns)
		fprintf(f, "  HTTP/2: %llu connections, %llu streams (%llu joined mid-way); %llu bytes "
			"dropped out of sync (%llu resyncs), %llu streams not tracked, %llu stray "
			"frames, %llu errors\n", (unsigned long long)s->h2.conns,
			(unsigned long long)s->h2.streams, (unsigned long long)s->h2.joined,
			(unsigned long long)s->h2.dropped, (unsigned long long)s->h2.resyncs,
			(unsigned long long)s->h2.untracked, (unsigned long long)s->h2.stray,
			(unsigned long long)s->h2.errors);
	if (s->aggregate)
		fprintf(f, "  (--aggregate: responses and token-like sends, from kernel histograms "
			"of 4 buckets an octave: percentiles within ~20%%)\n");
	if (w->ttft.count || w->itl.count) {
		fprintf(f, "  %-5s %9s %9s %9s %9s %9s\n", "", "p50", "p90", "p99", "max", "count");
		pct_row(f, "TTFT", &w->ttft);
		pct_row(f, "ITL", &w->itl);
		pct_row(f, "TPOT", &w->tpot);
		pct_row(f, "E2E", &w->e2e);
	}
	fflush(f);
	ot->header_done = false;	/* repeat the header after a summary block */
}

static bool text_flush(void *priv)
{
	struct out_text *ot = priv;

	fflush(ot->o.f);
	return false;
}

static void text_free(void *priv)
{
	free(priv);
}

static const struct output_ops text_ops = {
	.ready = text_ready,
	.request = text_request,
	.summary = text_summary,
	.flush = text_flush,
	.free = text_free,
};

int output_text__new(struct output *o, const struct output_opts *opts)
{
	struct out_text *ot = calloc(1, sizeof(*ot));

	if (!ot)
		return -1;
	ot->o = *opts;
	o->ops = &text_ops;
	o->priv = ot;
	return 0;
}
