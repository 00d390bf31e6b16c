// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --report FILE.html: one self-contained HTML file, written at the end, that a person opens
 * in any browser on any host (no network, no script, no font or file beside it): the
 * summary, the TTFT and ITL distributions (the --metrics buckets), and a timeline per request
 * with its stalls marked and explained.
 *
 * Every request counts in the summary and the distributions; at most REQS_MAX are drawn.
 * Those with stalls are the ones a reader comes for: once the report is full, a stalled
 * request takes the place of the oldest one without; the report says how many were not
 * drawn. As in the summaries, error responses stay out of the latency distributions.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "html.h"
#include "outputs.h"
#include "stall.h"
#include "stall_text.h"
#include "util.h"

#define REQS_MAX	500

struct out_html {
	struct output_opts o;
	char *path;
	FILE *f;
	struct html_req *req[REQS_MAX];
	int nreq;
	uint64_t seen, not_drawn;	/* a request's number is its place in seen */
	struct html_hist ttft, itl;
	struct stats_win *final;	/* the final summary's, when it came */
	struct summary fsum;
	struct ready_info ri;
	bool have_ri;
	uint64_t t_first_ns, t_last_ns;	/* the requests' span */
};

/* ---------------------------------------------------------------- collecting */

static void hist_add(struct html_hist *h, uint64_t v)
{
	h->n[buckets__index(h->b, v)]++;
	h->count++;
}

static void columns(struct html_req *q, const struct tt_request *r)
{
	for (uint32_t i = 0; i < r->chunks; i++) {
		uint64_t t = r->tok_ns[i] >= q->t0_ns ? r->tok_ns[i] - q->t0_ns : 0;
		int c = q->dur_ns ? (int)MIN((double)t * HTML_COLS / q->dur_ns, HTML_COLS - 1) : 0;

		if (q->col_tokens[c] < UINT16_MAX)
			q->col_tokens[c]++;
		if (i)
			q->col_gap[c] = MAX(q->col_gap[c], request__itl(r, i - 1));
	}
}

static void stalls(struct html_req *q, const struct tt_request *r)
{
	char line[STALL_LINE_MAX];

	q->nst_total = r->stalls ? r->nstalls : 0;
	for (uint32_t i = 0; i < q->nst_total && q->nst < HTML_STALLS_MAX; i++) {
		const struct tt_stall *st = &r->stalls[i];
		struct html_stall *s = &q->st[q->nst];

		stall__describe(st, line, sizeof(line));
		s->explain = strdup(line);
		if (!s->explain)
			break;
		s->b_ns = st->t_begin_ns >= q->t0_ns ? st->t_begin_ns - q->t0_ns : 0;
		s->e_ns = st->t_end_ns >= q->t0_ns ? st->t_end_ns - q->t0_ns : s->b_ns;
		s->after = st->after_chunk + 1;
		s->cause = st->cause;
		memcpy(s->part_ns, st->part_ns, sizeof(s->part_ns));
		q->nst++;
	}
}

static struct html_req *make(const struct tt_request *r, uint64_t n)
{
	struct html_req *q = calloc(1, sizeof(*q));
	uint64_t end = r->t_end_ns;

	if (!q)
		return NULL;
	q->n = n;
	q->pid = r->pid;
	q->client = r->client;
	q->error = request__is_error(r);
	memcpy(q->comm, r->comm, sizeof(q->comm));
	memcpy(q->method, r->method, sizeof(q->method));
	memcpy(q->path, r->path, sizeof(q->path));
	memcpy(q->model, r->model, sizeof(q->model));
	memcpy(q->request_id, r->request_id, sizeof(q->request_id));
	q->status = r->status;
	q->abort = abort_reason_name(r->abort);
	q->complete = r->complete;
	q->lost = r->lost;
	q->truncated = r->truncated;
	q->t0_ns = r->t_recv_ns && (!r->t_start_ns || r->t_recv_ns <= r->t_start_ns) ?
		   r->t_recv_ns : r->t_start_ns;
	if (!q->t0_ns && r->chunks)
		q->t0_ns = r->tok_ns[0];
	if (r->chunks)
		end = MAX(end, r->tok_ns[r->chunks - 1]);
	q->dur_ns = end > q->t0_ns ? end - q->t0_ns : 0;
	q->start_ns = r->t_start_ns > q->t0_ns ? r->t_start_ns - q->t0_ns : 0;
	q->first_ns = r->chunks && r->tok_ns[0] > q->t0_ns ? r->tok_ns[0] - q->t0_ns : 0;
	q->ttft_ns = r->ttft_ns;
	q->tpot_ns = r->tpot_ns;
	q->itl_p50_ns = r->itl_p50_ns;
	q->itl_p99_ns = r->itl_p99_ns;
	q->itl_max_ns = r->itl_max_ns;
	q->chunks = r->chunks;
	q->tokens = r->tokens;
	columns(q, r);
	stalls(q, r);
	return q;
}

static void req_free(struct html_req *q)
{
	if (!q)
		return;
	for (uint32_t i = 0; i < q->nst; i++)
		free(q->st[i].explain);
	free(q);
}

/* Where a new request goes: a free slot, or a stall-free one's place when it has stalls. */
static int slot_for(struct out_html *h, const struct tt_request *r)
{
	if (h->nreq < REQS_MAX)
		return h->nreq++;
	if (!r->nstalls)
		return -1;
	for (int i = 0; i < h->nreq; i++)
		if (!h->req[i]->nst_total)
			return i;
	return -1;
}

static void html_request(void *priv, const struct tt_request *r)
{
	struct out_html *h = priv;
	struct html_req *q;
	int i;

	h->seen++;
	if (!h->t_first_ns || (r->t_start_ns && r->t_start_ns < h->t_first_ns))
		h->t_first_ns = r->t_start_ns;
	h->t_last_ns = MAX(h->t_last_ns, r->t_end_ns);
	if (!request__is_error(r) && !r->client && r->chunks) {
		if (r->t_start_ns)
			hist_add(&h->ttft, r->ttft_ns);
		for (uint32_t k = 0; k + 1 < r->chunks; k++)
			hist_add(&h->itl, request__itl(r, k));
	}
	i = slot_for(h, r);
	if (i < 0 || !(q = make(r, h->seen))) {
		h->not_drawn++;
		return;
	}
	if (h->req[i]) {
		/* the place of a stall-free one: keep the order the requests came in */
		req_free(h->req[i]);
		memmove(h->req + i, h->req + i + 1, (h->nreq - i - 1) * sizeof(*h->req));
		h->req[h->nreq - 1] = NULL;
		i = h->nreq - 1;
		h->not_drawn++;
	}
	h->req[i] = q;
}

static void html_ready(void *priv, const struct ready_info *ri)
{
	struct out_html *h = priv;

	h->ri = *ri;
	h->have_ri = true;
}

static void html_summary(void *priv, const struct summary *s)
{
	struct out_html *h = priv;

	if (!s->final)
		return;
	if (!h->final && !(h->final = malloc(sizeof(*h->final))))
		return;
	*h->final = *s->w;
	h->fsum = *s;
	h->fsum.w = h->final;
}

static bool html_flush(void *priv)
{
	return false;
}

/* ---------------------------------------------------------------- writing */

static const char style[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2330;background:#fff}"
	"h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px;"
	"border-bottom:1px solid #dde}h3{font-size:14px;margin:18px 0 2px;font-weight:600}"
	"table{border-collapse:collapse}td,th{padding:2px 10px;text-align:right;"
	"border-bottom:1px solid #eef}th{text-align:left;font-weight:600}"
	".nums{margin:0;color:#445}.bad{color:#b3261e;font-weight:600}.ok{color:#1b7f3b}"
	".note{color:#667}figure{display:inline-block;margin:0 24px 0 0}"
	"figcaption{font-weight:600}.hist rect{fill:#5b7fd6}.hist text{font-size:10px;"
	"text-anchor:middle;fill:#334}.hist .unit{text-anchor:start}"
	".timeline .tokens{stroke:#2d5bd1;stroke-width:1}.timeline .gaps{stroke:#8a96b3;"
	"stroke-width:1}.timeline .ttft{fill:#f2b84b}.timeline .queue{fill:#d9d9d9}"
	".timeline .stall{fill:#e5484d;fill-opacity:.28;stroke:#c0262b}.timeline .sn{"
	"font-size:11px;fill:#c0262b;font-weight:700}.timeline .axis{stroke:#99a}"
	".timeline .tick{font-size:10px;fill:#556;text-anchor:middle}"
	"ol.stalls{margin:2px 0 0;padding-left:28px}.stall-line{margin:2px 0}"
	".parts{color:#556}.legend span{display:inline-block;margin-right:14px}"
	".sw{display:inline-block;width:12px;height:10px;margin-right:4px;vertical-align:-1px}";

static void pct_row(FILE *f, const char *name, const struct hist *hh)
{
	char a[16], b[16], c[16], d[16];

	if (!hh->count) {
		fprintf(f, "<tr><th>%s</th><td colspan=\"5\">none</td></tr>\n", name);
		return;
	}
	fmt_dur(a, sizeof(a), hist__percentile(hh, 50));
	fmt_dur(b, sizeof(b), hist__percentile(hh, 90));
	fmt_dur(c, sizeof(c), hist__percentile(hh, 99));
	fmt_dur(d, sizeof(d), hh->max);
	fprintf(f, "<tr><th>%s</th><td>%llu</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
		"</tr>\n", name, (unsigned long long)hh->count, a, b, c, d);
}

static void summary_table(FILE *f, const struct out_html *h)
{
	const struct summary *s = &h->fsum;
	const struct stats_win *w = h->final;

	fputs("<h2>Summary</h2>\n", f);
	if (!w) {
		fprintf(f, "<p>%llu requests (no final summary was made: the run did not end "
			"normally)</p>\n", (unsigned long long)h->seen);
		return;
	}
	fprintf(f, "<p>%llu requests in %.1f s: %llu errors, %llu aborted, %llu touched by lost "
		"events; %llu tokens (%.1f/s); %llu stalls", (unsigned long long)w->requests,
		s->secs, (unsigned long long)w->errors, (unsigned long long)w->aborted,
		(unsigned long long)w->lost, (unsigned long long)w->tokens,
		s->secs > 0 ? w->tokens / s->secs : 0.0, (unsigned long long)w->stalls);
	for (int c = 0, first = 1; c < STALL_NR; c++) {
		if (!w->stalls_by_cause[c])
			continue;
		fprintf(f, "%s%s %llu", first ? " (" : ", ", stall_cause_name(c),
			(unsigned long long)w->stalls_by_cause[c]);
		first = 0;
	}
	if (w->client_requests)
		fprintf(f, "%s; %llu outbound calls (%llu errors)", w->stalls ? ")" : "",
			(unsigned long long)w->client_requests,
			(unsigned long long)w->client_errors);
	fprintf(f, "%s; %llu events lost", w->stalls && !w->client_requests ? ")" : "",
		(unsigned long long)lost_total(&s->lost));
	for (int i = 0; i < LOST_NR; i++)
		if (s->lost.n[i])
			fprintf(f, ", %s %llu", lost_kind_name(i), (unsigned long long)s->lost.n[i]);
	if (s->lost.between_requests)
		fprintf(f, ", %llu between requests (whole requests may be missing)",
			(unsigned long long)s->lost.between_requests);
	if (s->lost.left_out)
		fprintf(f, ", %llu requests left out by --budget",
			(unsigned long long)s->lost.left_out);
	fputs(".</p>\n<table><tr><th></th><th>count</th><th>p50</th><th>p90</th><th>p99</th>"
	      "<th>max</th></tr>\n", f);
	pct_row(f, "TTFT", &w->ttft);
	pct_row(f, "ITL", &w->itl);
	pct_row(f, "TPOT", &w->tpot);
	pct_row(f, "E2E", &w->e2e);
	if (w->client_requests) {
		pct_row(f, "outbound: time to first chunk", &w->client_ttft);
		pct_row(f, "outbound: gap between chunks", &w->client_itl);
	}
	fputs("</table>\n", f);
}

static void header(FILE *f, const struct out_html *h)
{
	char t0[16], t1[16];

	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	      "<meta name=\"viewport\" content=\"width=device-width\">"
	      "<title>tokentrace report</title>\n<style>", f);
	fputs(style, f);
	fputs("</style></head>\n<body>\n<h1>tokentrace report</h1>\n<p class=\"note\">", f);
	if (h->have_ri) {
		fputs(h->ri.replay ? "replayed recording: " : "traced: ", f);
		for (int i = 0; i < h->ri.npids; i++) {
			fprintf(f, "%spid %u (", i ? ", " : "", h->ri.pids[i]);
			html__esc(f, h->ri.comms[i], sizeof(h->ri.comms[i]));
			fputc(')', f);
		}
		if (h->ri.npids_total > h->ri.npids)
			fprintf(f, " and %d more", h->ri.npids_total - h->ri.npids);
		fputs("; ", f);
	}
	if (h->t_first_ns) {
		fmt_clock(t0, sizeof(t0), h->t_first_ns);
		fmt_clock(t1, sizeof(t1), h->t_last_ns);
		fprintf(f, "requests from %s to %s; ", t0, t1);
	}
	fprintf(f, "tokentrace %s</p>\n", TT_VERSION);
}

static void legend(FILE *f)
{
	fputs("<p class=\"legend note\"><span><i class=\"sw\" style=\"background:#d9d9d9\"></i>"
	      "request read</span><span><i class=\"sw\" style=\"background:#f2b84b\"></i>"
	      "waiting for the first token</span><span><i class=\"sw\" style=\"background:"
	      "#2d5bd1\"></i>tokens sent</span><span><i class=\"sw\" style=\"background:#8a96b3"
	      "\"></i>gap before a token (full: the longest, or 5x the median)</span><span><i "
	      "class=\"sw\" style=\"background:#f3b3b5\"></i>stall, numbered as in the list "
	      "under it</span></p>\n", f);
}

static int write_report(struct out_html *h)
{
	FILE *f = h->f;
	uint64_t stalled = 0;

	header(f, h);
	summary_table(f, h);
	fputs("<h2>Distributions</h2>\n", f);
	html__hist_svg(f, "dist-ttft", "Time to first token", &h->ttft);
	html__hist_svg(f, "dist-itl", "Inter-token latency", &h->itl);
	for (int i = 0; i < h->nreq; i++)
		stalled += h->req[i]->nst_total > 0;
	fprintf(f, "<h2>Requests</h2>\n<p class=\"note\">%d drawn of %llu, %llu with stalls",
		h->nreq, (unsigned long long)h->seen, (unsigned long long)stalled);
	if (h->not_drawn)
		fprintf(f, "; %llu not drawn (at most %d are: those with stalls first)",
			(unsigned long long)h->not_drawn, REQS_MAX);
	fputs(". Each timeline runs from the request's first byte to its last token.</p>\n", f);
	legend(f);
	if (stalled) {
		fputs("<p>Stalled:", f);
		for (int i = 0; i < h->nreq; i++)
			if (h->req[i]->nst_total)
				fprintf(f, " <a href=\"#req-%llu\">#%llu</a>",
					(unsigned long long)h->req[i]->n,
					(unsigned long long)h->req[i]->n);
		fputs("</p>\n", f);
	}
	for (int i = 0; i < h->nreq; i++)
		html__request(f, h->req[i]);
	fputs("</body></html>\n", f);
	errno = 0;
	return fflush(f) || ferror(f) ? -(errno ? errno : EIO) : 0;
}

static void html_free(void *priv)
{
	struct out_html *h = priv;
	char q[ARG_QUOTE_MAX];
	int err = write_report(h);

	if (fclose(h->f) && !err)
		err = -errno;
	if (err) {
		fprintf(stderr, "tokentrace: --report %s: write failed: %s\n",
			arg_quote(q, h->path), strerror(-err));
		if (h->o.failed)
			*h->o.failed = true;
	}
	for (int i = 0; i < h->nreq; i++)
		req_free(h->req[i]);
	free(h->final);
	free(h->path);
	free(h);
}

static const struct output_ops html_ops = {
	.ready = html_ready,
	.request = html_request,
	.summary = html_summary,
	.flush = html_flush,
	.free = html_free,
};

int output_html__new(struct output *o, const struct output_opts *opts)
{
	struct out_html *h = calloc(1, sizeof(*h));
	char why[256], q[ARG_QUOTE_MAX];
	int fd;

	if (!h || !(h->path = strdup(opts->report_path))) {
		free(h);
		return -ENOMEM;
	}
	h->o = *opts;
	h->ttft.b = &bucket_ttft;
	h->itl.b = &bucket_itl;
	/* paths, models and timings are in it: the same rules as -w and --perfetto */
	fd = safe_create(opts->report_path, opts->force ? SAFE_FORCE : 0, why, sizeof(why));
	if (fd < 0 || !(h->f = fdopen(fd, "w"))) {
		int err = fd < 0 ? fd : -errno;

		fprintf(stderr, "tokentrace: --report %s: %s\n", arg_quote(q, opts->report_path),
			fd < 0 ? why : strerror(-err));
		if (fd >= 0)
			close(fd);
		free(h->path);
		free(h);
		return err;
	}
	o->ops = &html_ops;
	o->priv = h;
	return 0;
}
