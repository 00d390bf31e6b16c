// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The report's drawings (html.h), as inline SVG that any browser shows without a script or
 * the network: distributions as bars per bucket, and per request a timeline: the wait for
 * the first token, a tick per column that sent tokens, a bar per column as tall as the
 * longest gap that ended there (a stutter stands out), and each stall as a red band with its
 * number, its explanation in the band's tooltip and, in full, in the list under it.
 */
#include <stdio.h>
#include <string.h>
#include "html.h"
#include "util.h"

#define TL_W		1000		/* the timeline's width; columns from TL_X */
#define TL_X		30
#define TL_H		92

void html__esc(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, l;
	uint32_t cp;

	n = strnlen(s, n);
	while (i < n) {
		l = utf8_seq(p + i, n - i, &cp);
		if (!l) {
			fputs("\xef\xbf\xbd", f);	/* U+FFFD */
			i++;
			continue;
		}
		switch (cp) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default:
			if (cp < 0x20 || cp == 0x7f || cp_is_control(cp))
				fprintf(f, "\\u%04x", (unsigned int)cp);
			else
				fwrite(p + i, 1, l, f);
		}
		i += l;
	}
}

static void esc0(FILE *f, const char *s)
{
	html__esc(f, s, strlen(s));
}

/* ---------------------------------------------------------------- distributions */

void html__hist_svg(FILE *f, const char *id, const char *title, const struct html_hist *h)
{
	const int w = 46, top = 24, hgt = 150, nb = h->b->n + 1;
	uint64_t max = 1;
	char lab[24];

	for (int i = 0; i < nb; i++)
		max = MAX(max, h->n[i]);
	fprintf(f, "<figure class=\"dist\" id=\"%s\"><figcaption>", id);
	esc0(f, title);
	fprintf(f, " &mdash; %llu samples</figcaption>\n<svg class=\"hist\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n", (unsigned long long)h->count,
		nb * w + 10, top + hgt + 40, nb * w + 10, top + hgt + 40);
	for (int i = 0; i < nb; i++) {
		int bh = (int)(h->n[i] * (uint64_t)hgt / max), x = 5 + i * w;

		if (i < h->b->n)
			snprintf(lab, sizeof(lab), "&le;%s", h->b->le[i]);
		else
			snprintf(lab, sizeof(lab), "&gt;%s", h->b->le[h->b->n - 1]);
		fprintf(f, "<g class=\"bar\"><title>%s s: %llu</title>", lab,
			(unsigned long long)h->n[i]);
		if (h->n[i])
			fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>"
				"<text class=\"n\" x=\"%d\" y=\"%d\">%llu</text>", x + 3,
				top + hgt - MAX(bh, 1), w - 6, MAX(bh, 1), x + w / 2,
				top + hgt - MAX(bh, 1) - 4, (unsigned long long)h->n[i]);
		fprintf(f, "<text class=\"le\" x=\"%d\" y=\"%d\">%s</text></g>\n", x + w / 2,
			top + hgt + 16, lab);
	}
	fprintf(f, "<text class=\"unit\" x=\"5\" y=\"%d\">seconds</text></svg></figure>\n",
		top + hgt + 34);
}

/* ---------------------------------------------------------------- a request */

static double xpos(const struct html_req *q, uint64_t ns)
{
	return TL_X + (q->dur_ns ? (double)MIN(ns, q->dur_ns) * HTML_COLS / q->dur_ns : 0);
}

static void heading(FILE *f, const struct html_req *q)
{
	char a[16], b[16], c[16], d[16];

	fprintf(f, "<h3>#%llu ", (unsigned long long)q->n);
	html__esc(f, q->method, sizeof(q->method));
	fputc(' ', f);
	html__esc(f, q->path, path_shown_len(q->path, false));	/* never the query */
	if (q->model[0]) {
		fputs(" &middot; ", f);
		html__esc(f, q->model, sizeof(q->model));
	}
	if (q->status)
		fprintf(f, " &middot; <span class=\"%s\">%d</span>", q->error ? "bad" : "ok",
			q->status);
	fprintf(f, " &middot; pid %u (", q->pid);
	html__esc(f, q->comm, sizeof(q->comm));
	fprintf(f, ")%s</h3>\n<p class=\"nums\">", q->client ? " &middot; outbound call" : "");
	if (q->first_ns) {
		fmt_dur(a, sizeof(a), q->ttft_ns);
		fprintf(f, "TTFT <b>%s</b>", a);
	} else {
		fputs("no token", f);
	}
	if (q->chunks > 1) {
		fmt_dur(a, sizeof(a), q->itl_p50_ns);
		fmt_dur(b, sizeof(b), q->itl_p99_ns);
		fmt_dur(c, sizeof(c), q->itl_max_ns);
		fmt_dur(d, sizeof(d), q->tpot_ns);
		fprintf(f, " &middot; ITL p50 %s p99 %s max <b>%s</b> &middot; TPOT %s", a, b, c,
			d);
	}
	fmt_dur(a, sizeof(a), q->dur_ns);
	fprintf(f, " &middot; %u chunks, %llu tokens in %s", q->chunks,
		(unsigned long long)q->tokens, a);
	if (q->nst_total)
		fprintf(f, " &middot; <span class=\"bad\">%u stall%s</span>", q->nst_total,
			q->nst_total > 1 ? "s" : "");
	if (q->abort)
		fprintf(f, " &middot; <span class=\"bad\">aborted: %s</span>", q->abort);
	else if (!q->complete)
		fputs(" &middot; <span class=\"bad\">incomplete</span>", f);
	if (q->lost)
		fputs(" &middot; <span class=\"bad\">events lost: numbers may be wrong</span>", f);
	if (q->truncated)
		fputs(" &middot; captures truncated", f);
	if (q->request_id[0]) {
		fputs(" &middot; id ", f);
		html__esc(f, q->request_id, sizeof(q->request_id));
	}
	fputs("</p>\n", f);
}

/* tick labels under the axis: 0, quarters, the end */
static void axis(FILE *f, const struct html_req *q)
{
	char t[16];

	fprintf(f, "<line class=\"axis\" x1=\"%d\" y1=\"74\" x2=\"%d\" y2=\"74\"/>", TL_X,
		TL_X + HTML_COLS);
	for (int k = 0; k <= 4; k++) {
		uint64_t ns = q->dur_ns * k / 4;

		fmt_dur(t, sizeof(t), ns);
		fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"88\">%s</text>", xpos(q, ns),
			k ? t : "0");
	}
}

static void tokens(FILE *f, const struct html_req *q)
{
	/* against the stream's longest gap, or five times its median (where a gap starts to
	 * count as a stall) if that is longer: a steady stream's bars stay low */
	uint64_t maxgap = MAX(q->itl_p50_ns * 5, 1);

	for (int c = 0; c < HTML_COLS; c++)
		maxgap = MAX(maxgap, q->col_gap[c]);
	/* the tokens: one tick per column that sent any */
	fputs("<path class=\"tokens\" d=\"", f);
	for (int c = 0; c < HTML_COLS; c++)
		if (q->col_tokens[c])
			fprintf(f, "M%d 28v12", TL_X + c);
	fputs("\"><title>tokens sent</title></path>\n", f);
	/* the gaps: as tall as the longest that ended in the column, against this stream's max */
	fputs("<path class=\"gaps\" d=\"", f);
	for (int c = 0; c < HTML_COLS; c++)
		if (q->col_gap[c])
			fprintf(f, "M%d 70v-%.1f", TL_X + c,
				MAX(0.5, 26.0 * (double)q->col_gap[c] / maxgap));
	fputs("\"><title>gap before each token</title></path>\n", f);
}

static void stall_marks(FILE *f, const struct html_req *q)
{
	char g[16];

	for (uint32_t i = 0; i < q->nst; i++) {
		const struct html_stall *s = &q->st[i];
		double x0 = xpos(q, s->b_ns), x1 = xpos(q, s->e_ns);

		fmt_dur(g, sizeof(g), s->e_ns - s->b_ns);
		fprintf(f, "<g class=\"stall-mark\"><title>stall %u: %s after token %u: ", i + 1, g,
			s->after);
		esc0(f, s->explain);
		fprintf(f, "</title><rect class=\"stall\" data-stall=\"%u\" x=\"%.1f\" y=\"24\" "
			"width=\"%.1f\" height=\"48\"/><text class=\"sn\" x=\"%.1f\" y=\"20\">%u"
			"</text></g>\n", i + 1, x0, MAX(x1 - x0, 2.0), x0, i + 1);
	}
}

static void stall_lines(FILE *f, const struct html_req *q)
{
	char g[16], p[16];

	if (!q->nst_total)
		return;
	fputs("<ol class=\"stalls\">\n", f);
	for (uint32_t i = 0; i < q->nst; i++) {
		const struct html_stall *s = &q->st[i];
		const char *sep = "";

		fmt_dur(g, sizeof(g), s->e_ns - s->b_ns);
		fprintf(f, "<li class=\"stall-line\" data-stall=\"%u\"><b>%s</b> after token %u, "
			"mostly %s: ", i + 1, g, s->after, stall_cause_name(s->cause));
		esc0(f, s->explain);
		fputs(" <span class=\"parts\">(", f);
		for (int c = 0; c < STALL_NR; c++) {
			if (!s->part_ns[c])
				continue;
			fmt_dur(p, sizeof(p), s->part_ns[c]);
			fprintf(f, "%s%s %s", sep, stall_cause_name(c), p);
			sep = ", ";
		}
		fputs(")</span></li>\n", f);
	}
	fputs("</ol>\n", f);
	if (q->nst_total > q->nst)
		fprintf(f, "<p class=\"note\">and %u more stalls, not drawn</p>\n",
			q->nst_total - q->nst);
}

void html__request(FILE *f, const struct html_req *q)
{
	fprintf(f, "<section class=\"req\" id=\"req-%llu\" data-req=\"%llu\" data-stalls=\"%u\">\n",
		(unsigned long long)q->n, (unsigned long long)q->n, q->nst);
	heading(f, q);
	fprintf(f, "<svg class=\"timeline\" data-req=\"%llu\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" role=\"img\">\n", (unsigned long long)q->n, TL_W + 20, TL_H,
		TL_W + 20, TL_H);
	/* the wait: queued in the socket, then from the read to the first token */
	if (q->start_ns)
		fprintf(f, "<rect class=\"queue\" x=\"%d\" y=\"30\" width=\"%.1f\" height=\"8\">"
			"<title>read, before TTFT's start</title></rect>\n", TL_X,
			xpos(q, q->start_ns) - TL_X);
	if (q->first_ns)
		fprintf(f, "<rect class=\"ttft\" x=\"%.1f\" y=\"30\" width=\"%.1f\" height=\"8\">"
			"<title>waiting for the first token (TTFT)</title></rect>\n",
			xpos(q, q->start_ns), MAX(xpos(q, q->first_ns) - xpos(q, q->start_ns), 1.0));
	tokens(f, q);
	stall_marks(f, q);
	axis(f, q);
	fputs("</svg>\n", f);
	stall_lines(f, q);
	fputs("</section>\n", f);
}
