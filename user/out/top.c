// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --top: a full-screen live view (ncurses). Redrawn at most once a second from the main
 * loop's flush (every 20 ms), which also reads the keyboard without blocking:
 *
 *   - the streams in flight: connection, path, model, state, age, tokens so far, last ITL, a
 *     sparkline of the recent ITLs (gaps far above the stream's own median in red), and a
 *     STALL marker while a stream is silent for much longer than its median gap;
 *   - rolling percentiles of TTFT, ITL and TPOT over the last WIN_SECS seconds, and tokens/s.
 *
 * The rolling window is binned by the events' own times (a token counts in the second it was
 * sent, finished request or not), so a long stream shows in tokens/s and ITL while it runs.
 * Keys: a/t/l/c/p sort by age, tokens, last ITL, connection, path; r reverses; q (or Ctrl-C)
 * quits: the main loop stops, and the final summary is printed on the normal screen.
 *
 * While the screen is up, stderr (the main loop's notes: a target exited...) goes to a
 * temporary file, its last line shown at the bottom, and is copied back to stderr at the end.
 * Without a terminal on stdout, --top is the text output, with a note on stderr.
 */
#include <curses.h>
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "stall.h"
#include "outputs.h"
#include "util.h"

#define WIN_SECS	10
#define REDRAW_NS	1000000000ull
#define SPARK_MAX	32
#define MARK_W		14	/* " STALL 1.23s" */
#define ROWS_MAX	100000

enum sort_key { SORT_AGE, SORT_TOKENS, SORT_ITL, SORT_CONN, SORT_PATH };

static const char *const sort_names[] = { "age", "tokens", "last ITL", "connection", "path" };

struct slot {
	uint64_t sec;
	struct hist ttft, itl, tpot;
	uint64_t chunks;
	uint64_t requests, errors;
};

struct row {
	char conn[REQ_ADDR_MAX];
	char path[48];
	char model[32];
	const char *state;
	uint64_t age_ns;
	uint64_t tokens;
	uint64_t last_itl;	/* 0: none yet */
	uint64_t gaps[SPARK_MAX];
	int ngaps;		/* the last ngaps gaps, oldest first */
	uint64_t stall_thr;	/* gaps above it are stalls; 0: not enough gaps to say */
	uint64_t silent_ns;	/* a stall in progress: since the last token */
	uint32_t stalls;	/* stalls so far in this stream */
	bool streaming;
};

enum color { C_TITLE = 1, C_STALL, C_DIM };

struct out_top {
	struct output_opts o;
	struct output text;	/* the final summary, once the screen is gone */
	SCREEN *scr;
	bool active;
	bool utf8, colors;
	int saved_stderr;
	FILE *errlog;
	char last_err[160];
	long errlog_seen;

	struct ready_info ri;
	bool ready;
	uint64_t t_ready, next_draw;
	struct slot slots[WIN_SECS];
	struct hist ttft, itl, tpot;	/* the window, merged for a draw */
	uint64_t requests, errors, aborted, tokens, lost, left_out;

	enum sort_key sort;
	bool reverse;
	bool quit;		/* 'q' pressed: the next flush asks the main loop to stop */
	struct row *rows;
	int nrows, rows_cap;
	uint64_t now;
};

/* ------------------------------------------------------------------ the rolling window */

static struct slot *slot_of(struct out_top *t, uint64_t ts)
{
	uint64_t sec = ts / 1000000000ull, now_sec = t->now / 1000000000ull;
	struct slot *s;

	if (sec + WIN_SECS <= now_sec || sec > now_sec + 1)
		return NULL;	/* out of the window (or from a clock we do not share) */
	s = &t->slots[sec % WIN_SECS];
	if (s->sec != sec) {
		hist__reset(&s->ttft);
		hist__reset(&s->itl);
		hist__reset(&s->tpot);
		s->chunks = s->requests = s->errors = 0;
		s->sec = sec;
	}
	return s;
}

static void top_request(void *priv, const struct tt_request *r)
{
	struct out_top *t = priv;
	struct slot *s;

	if (!t->active) {
		t->text.ops->request(t->text.priv, r);
		return;
	}
	t->now = now_mono_ns();
	t->requests++;
	t->aborted += r->abort != ABORT_NONE;
	s = slot_of(t, r->t_end_ns ? r->t_end_ns : t->now);
	if (s)
		s->requests++;
	if (request__is_error(r)) {
		t->errors++;
		if (s)
			s->errors++;
		return;
	}
	t->tokens += r->tokens;
	if (r->chunks && r->t_start_ns && (s = slot_of(t, r->tok_ns[0])))
		hist__record(&s->ttft, r->ttft_ns);
	for (uint32_t i = 0; i < r->chunks; i++) {
		if (!(s = slot_of(t, r->tok_ns[i])))
			continue;
		s->chunks++;
		if (i)
			hist__record(&s->itl, request__itl(r, i - 1));
	}
	if (r->chunks > 1 && (s = slot_of(t, r->t_end_ns ? r->t_end_ns : t->now)))
		hist__record(&s->tpot, r->tpot_ns);
}

/* ------------------------------------------------------------------ in flight */

struct collect {
	struct out_top *t;
	uint64_t chunks;	/* sent inside the window */
};

static void collect_one(void *ud, const struct tt_request *r, bool streaming)
{
	struct collect *c = ud;
	struct out_top *t = c->t;
	uint64_t win_begin = t->now > WIN_SECS * 1000000000ull ?
			     t->now - WIN_SECS * 1000000000ull : 0;
	uint64_t start = r->t_start_ns ? r->t_start_ns : r->t_recv_ns;
	struct row *w;
	uint32_t n, first;

	/* the rolling numbers see the stream as it goes */
	if (!request__is_error(r)) {
		if (r->chunks && r->t_start_ns && r->tok_ns[0] >= win_begin &&
		    r->tok_ns[0] >= r->t_start_ns)
			hist__record(&t->ttft, r->tok_ns[0] - r->t_start_ns);
		for (uint32_t i = 0; i < r->chunks; i++) {
			if (r->tok_ns[i] < win_begin)
				continue;
			c->chunks++;
			if (i)
				hist__record(&t->itl, request__itl(r, i - 1));
		}
	}

	if (t->nrows == t->rows_cap) {
		int cap = t->rows_cap ? t->rows_cap * 2 : 64;
		struct row *nr;

		if (cap > ROWS_MAX || !(nr = realloc(t->rows, cap * sizeof(*nr))))
			return;
		t->rows = nr;
		t->rows_cap = cap;
	}
	w = &t->rows[t->nrows++];
	memset(w, 0, sizeof(*w));
	/* from the wire: escaped, so a client cannot write to the operator's terminal */
	esc_term(w->conn, sizeof(w->conn), r->conn, strnlen(r->conn, sizeof(r->conn)));
	esc_term(w->path, sizeof(w->path), r->path, path_shown_len(r->path, t->o.show_query));
	if (r->model[0])
		esc_term(w->model, sizeof(w->model), r->model, strnlen(r->model, sizeof(r->model)));
	else
		strcpy(w->model, "-");
	w->streaming = streaming;
	w->age_ns = start && t->now > start ? t->now - start : 0;
	w->tokens = r->chunks;
	w->stalls = r->nstalls;
	w->state = !streaming ? "queued" : r->chunks ? "stream" : "prefill";
	if (r->chunks < 2)
		return;
	w->last_itl = request__itl(r, r->chunks - 2);
	n = MIN(r->chunks - 1, SPARK_MAX);
	first = r->chunks - 1 - n;
	for (uint32_t i = 0; i < n; i++)
		w->gaps[i] = request__itl(r, first + i);
	w->ngaps = n;
	/* the correlator's rule, so the screen calls stalls what the lines do */
	w->stall_thr = stall__threshold(r, t->o.stall_ns);
	if (!r->nstalls) {
		for (uint32_t i = 0; i + 1 < r->chunks; i++)
			w->stalls += request__itl(r, i) > w->stall_thr;
	}
	if (t->now > r->tok_ns[r->chunks - 1] &&
	    t->now - r->tok_ns[r->chunks - 1] > w->stall_thr && !r->saw_final) {
		w->silent_ns = t->now - r->tok_ns[r->chunks - 1];
		w->state = "STALL";
	}
}

static enum sort_key sort_by;
static bool sort_rev;

static int cmp_rows(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int c = 0;

	switch (sort_by) {
	case SORT_AGE:		/* oldest first */
		c = x->age_ns > y->age_ns ? -1 : x->age_ns < y->age_ns;
		break;
	case SORT_TOKENS:	/* most first */
		c = x->tokens > y->tokens ? -1 : x->tokens < y->tokens;
		break;
	case SORT_ITL:		/* slowest first, a stall above all */
		c = MAX(x->last_itl, x->silent_ns) > MAX(y->last_itl, y->silent_ns) ? -1 :
		    MAX(x->last_itl, x->silent_ns) < MAX(y->last_itl, y->silent_ns);
		break;
	case SORT_CONN:
		c = strcmp(x->conn, y->conn);
		break;
	case SORT_PATH:
		c = strcmp(x->path, y->path);
		break;
	}
	if (!c)
		c = strcmp(x->conn, y->conn);
	return sort_rev ? -c : c;
}

/* ------------------------------------------------------------------ drawing */

/* "42s", "12m05s", "3h07m" */
static void fmt_up(char *buf, size_t sz, uint64_t ns)
{
	uint64_t s = ns / 1000000000ull;

	if (s < 60)
		snprintf(buf, sz, "%llus", (unsigned long long)s);
	else if (s < 3600)
		snprintf(buf, sz, "%llum%02llus", (unsigned long long)s / 60,
			 (unsigned long long)s % 60);
	else
		snprintf(buf, sz, "%lluh%02llum", (unsigned long long)s / 3600,
			 (unsigned long long)s / 60 % 60);
}

static void attr(struct out_top *t, int pair, bool on)
{
	if (!t->colors || !pair)
		return;
	if (on)
		attron(COLOR_PAIR(pair));
	else
		attroff(COLOR_PAIR(pair));
}

/* A row of text at y, cut to the screen (ASCII: a byte is a cell). */
static void line(int y, const char *s)
{
	if (y >= LINES)
		return;
	mvaddnstr(y, 0, s, COLS);
	clrtoeol();
}

static void sparkline(struct out_top *t, const struct row *w, int width)
{
	static const char *const bars_utf8[8] = {
		"\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588",
	};
	static const char bars_ascii[] = "_.-~=+*#";
	uint64_t max = 1;
	int first = w->ngaps > width ? w->ngaps - width : 0;

	for (int i = first; i < w->ngaps; i++)
		max = MAX(max, w->gaps[i]);
	for (int i = first; i < w->ngaps; i++) {
		int lvl = (int)((w->gaps[i] * 7 + max / 2) / max);
		bool stall = w->stall_thr && w->gaps[i] > w->stall_thr;

		if (stall)
			attr(t, C_STALL, true);
		if (t->utf8)
			addstr(bars_utf8[lvl]);
		else
			addch(bars_ascii[lvl]);
		if (stall)
			attr(t, C_STALL, false);
	}
	for (int i = w->ngaps - first; i < width; i++)
		addch(' ');
}

static void pct_line(struct out_top *t, int y, const char *name, const struct hist *h)
{
	char buf[160], v[4][16];

	if (!h->count) {
		snprintf(buf, sizeof(buf), "  %-5s %9s %9s %9s %9s %9s", name, "-", "-", "-", "-",
			 "0");
	} else {
		fmt_dur(v[0], sizeof(v[0]), hist__percentile(h, 50));
		fmt_dur(v[1], sizeof(v[1]), hist__percentile(h, 90));
		fmt_dur(v[2], sizeof(v[2]), hist__percentile(h, 99));
		fmt_dur(v[3], sizeof(v[3]), h->max);
		snprintf(buf, sizeof(buf), "  %-5s %9s %9s %9s %9s %9llu", name, v[0], v[1], v[2],
			 v[3], (unsigned long long)h->count);
	}
	line(y, buf);
}

static void status_line(struct out_top *t)
{
	struct stat st;
	char buf[512];

	if (t->errlog && fstat(fileno(t->errlog), &st) == 0 && st.st_size > t->errlog_seen) {
		long from = MAX(st.st_size - (long)sizeof(buf) + 1, 0L);
		ssize_t n = pread(fileno(t->errlog), buf, sizeof(buf) - 1, from);

		if (n > 0) {
			char *end, *begin;

			buf[n] = '\0';
			end = buf + strlen(buf);
			while (end > buf && end[-1] == '\n')
				*--end = '\0';
			begin = strrchr(buf, '\n');
			strlcpy_cut(t->last_err, sizeof(t->last_err), begin ? begin + 1 : buf);
		}
		t->errlog_seen = st.st_size;
	}
	attr(t, C_DIM, true);
	line(LINES - 1, t->last_err[0] ? t->last_err :
	     "keys: a age  t tokens  l last ITL  c connection  p path  r reverse  q quit");
	attr(t, C_DIM, false);
}

static void draw(struct out_top *t)
{
	struct collect c = { .t = t };
	uint64_t win_chunks = 0, win_req = 0, win_err = 0, now_sec;
	double secs;
	char buf[512], clock[16], up[16], comm[4 * 16], left[48];
	int y, streaming = 0, conn_w, path_w = 22, model_w = 14, fixed, spark_w;
	bool show_model = true;

	t->now = now_mono_ns();
	now_sec = t->now / 1000000000ull;
	hist__reset(&t->ttft);
	hist__reset(&t->itl);
	hist__reset(&t->tpot);
	for (int i = 0; i < WIN_SECS; i++) {
		struct slot *s = &t->slots[i];

		if (s->sec + WIN_SECS <= now_sec || s->sec > now_sec)
			continue;
		hist__merge(&t->ttft, &s->ttft);
		hist__merge(&t->itl, &s->itl);
		hist__merge(&t->tpot, &s->tpot);
		win_chunks += s->chunks;
		win_req += s->requests;
		win_err += s->errors;
	}
	t->nrows = 0;
	live_view__foreach(t->o.live, collect_one, &c);
	win_chunks += c.chunks;
	for (int i = 0; i < t->nrows; i++)
		streaming += t->rows[i].streaming;
	sort_by = t->sort;
	sort_rev = t->reverse;
	qsort(t->rows, t->nrows, sizeof(*t->rows), cmp_rows);
	secs = t->ready ? MIN((double)WIN_SECS, (t->now - t->t_ready) / 1e9) : WIN_SECS;
	if (secs < 1)
		secs = 1;

	erase();
	esc_term(comm, sizeof(comm), t->ri.comms[0],
		 strnlen(t->ri.comms[0], sizeof(t->ri.comms[0])));
	fmt_clock(clock, sizeof(clock), t->now);
	clock[8] = '\0';
	fmt_up(up, sizeof(up), t->ready && t->now > t->t_ready ? t->now - t->t_ready : 0);
	attr(t, C_TITLE, true);
	attron(A_BOLD);
	if (t->ri.npids > 1)
		snprintf(buf, sizeof(buf), " tokentrace %s   PID %u (%s) and %d more   %s   up %s"
			 "   sort: %s%s", TT_VERSION, t->ri.pids[0], comm,
			 t->ri.npids - 1, clock, up, sort_names[t->sort],
			 t->reverse ? " (reversed)" : "");
	else
		snprintf(buf, sizeof(buf), " tokentrace %s   PID %u (%s)   %s   up %s   sort: %s%s",
			 TT_VERSION, t->ri.pids[0], comm, clock, up, sort_names[t->sort],
			 t->reverse ? " (reversed)" : "");
	line(0, buf);
	mvchgat(0, 0, -1, A_BOLD | (t->colors ? 0 : A_REVERSE), t->colors ? C_TITLE : 0, NULL);
	attroff(A_BOLD);
	attr(t, C_TITLE, false);

	snprintf(buf, sizeof(buf), " last %ds: %llu requests, %llu errors, %.1f tok/s   "
		 "in flight: %d (%d streaming)", WIN_SECS, (unsigned long long)win_req,
		 (unsigned long long)win_err, win_chunks / secs, t->nrows, streaming);
	line(1, buf);
	left[0] = '\0';
	if (t->left_out)
		snprintf(left, sizeof(left), ", %llu left out (budget)",
			 (unsigned long long)t->left_out);
	snprintf(buf, sizeof(buf), " total: %llu requests, %llu errors, %llu aborted, %llu tokens,"
		 " %llu events lost%s", (unsigned long long)t->requests,
		 (unsigned long long)t->errors, (unsigned long long)t->aborted,
		 (unsigned long long)t->tokens, (unsigned long long)t->lost, left);
	line(2, buf);
	attron(A_BOLD);
	snprintf(buf, sizeof(buf), "  %-5s %9s %9s %9s %9s %9s   (last %ds)", "", "p50", "p90",
		 "p99", "max", "count", WIN_SECS);
	line(4, buf);
	attroff(A_BOLD);
	pct_line(t, 5, "TTFT", &t->ttft);
	pct_line(t, 6, "ITL", &t->itl);
	pct_line(t, 7, "TPOT", &t->tpot);

	/* columns: fixed ones and the stall mark, then the sparkline takes what is left */
	conn_w = 31;
	fixed = conn_w + 1 + path_w + 1 + model_w + 1 + 7 + 1 + 7 + 1 + 6 + 1 + 9 + 1 + MARK_W;
	if (COLS < fixed + 12) {
		show_model = false;
		fixed -= model_w + 1;
	}
	spark_w = MIN(SPARK_MAX, MAX(COLS - fixed, 0));
	{
		const char *arrow = t->reverse ? (t->utf8 ? "\u25b2" : "^") :
				    (t->utf8 ? "\u25bc" : "v");
		char h[5][24];

		snprintf(h[0], sizeof(h[0]), "CONNECTION%s", t->sort == SORT_CONN ? arrow : "");
		snprintf(h[1], sizeof(h[1]), "PATH%s", t->sort == SORT_PATH ? arrow : "");
		snprintf(h[2], sizeof(h[2]), "AGE%s", t->sort == SORT_AGE ? arrow : "");
		snprintf(h[3], sizeof(h[3]), "TOKENS%s", t->sort == SORT_TOKENS ? arrow : "");
		snprintf(h[4], sizeof(h[4]), "LAST ITL%s", t->sort == SORT_ITL ? arrow : "");
		/* the arrow is one cell whatever its bytes: pad by hand */
		y = 9;
		if (y < LINES - 1) {
			move(y, 0);
			attron(A_REVERSE | A_BOLD);
			printw("%-*s %-*s ", conn_w + (t->sort == SORT_CONN && t->utf8 ? 2 : 0),
			       h[0], path_w + (t->sort == SORT_PATH && t->utf8 ? 2 : 0), h[1]);
			if (show_model)
				printw("%-*s ", model_w, "MODEL");
			printw("%-7s %*s %*s %*s %-*s %-10s", "STATE",
			       7 + (t->sort == SORT_AGE && t->utf8 ? 2 : 0), h[2],
			       6 + (t->sort == SORT_TOKENS && t->utf8 ? 2 : 0), h[3],
			       9 + (t->sort == SORT_ITL && t->utf8 ? 2 : 0), h[4], spark_w,
			       spark_w >= 10 ? "RECENT ITL" : "", "");
			clrtoeol();
			mvchgat(y, 0, -1, A_REVERSE | A_BOLD, 0, NULL);
			attroff(A_REVERSE | A_BOLD);
		}
	}
	y = 10;
	for (int i = 0; i < t->nrows && y < LINES - 1; i++, y++) {
		const struct row *w = &t->rows[i];
		char age[16], itl[16] = "-", mark[24] = "";
		int pos;

		if (y == LINES - 2 && i + 1 < t->nrows) {
			snprintf(buf, sizeof(buf), " ... %d more (sort with a/t/l/c/p)",
				 t->nrows - i);
			line(y, buf);
			break;
		}
		fmt_dur(age, sizeof(age), w->age_ns);
		if (w->last_itl)
			fmt_dur(itl, sizeof(itl), w->last_itl);
		if (show_model)
			pos = snprintf(buf, sizeof(buf), "%-*.*s %-*.*s %-*.*s ", conn_w, conn_w,
				       w->conn, path_w, path_w, w->path, model_w, model_w,
				       w->model);
		else
			pos = snprintf(buf, sizeof(buf), "%-*.*s %-*.*s ", conn_w, conn_w, w->conn,
				       path_w, path_w, w->path);
		snprintf(buf + pos, sizeof(buf) - pos, "%-7s %7s %6llu %9s ", w->state, age,
			 (unsigned long long)w->tokens, itl);
		move(y, 0);
		if (w->silent_ns)
			attr(t, C_STALL, true);
		addnstr(buf, COLS);
		if (w->silent_ns)
			attr(t, C_STALL, false);
		if (getcurx(stdscr) + spark_w < COLS) {
			sparkline(t, w, spark_w);
			if (w->silent_ns) {
				char d[16];

				fmt_dur(d, sizeof(d), w->silent_ns);
				snprintf(mark, sizeof(mark), " STALL %s", d);
			} else if (w->stalls) {
				snprintf(mark, sizeof(mark), " %u stall%s", w->stalls,
					 w->stalls > 1 ? "s" : "");
			}
			attr(t, C_STALL, true);
			attron(A_BOLD);
			addnstr(mark, MAX(COLS - getcurx(stdscr), 0));
			attroff(A_BOLD);
			attr(t, C_STALL, false);
		}
	}
	if (!t->nrows && 10 < LINES - 1) {
		attr(t, C_DIM, true);
		line(10, " (no request in flight)");
		attr(t, C_DIM, false);
	}
	status_line(t);
	refresh();
}

/* ------------------------------------------------------------------ screen lifetime */

static void stderr_back(struct out_top *t)
{
	char buf[4096];
	size_t n;

	if (t->saved_stderr < 0)
		return;
	fflush(stderr);
	dup2(t->saved_stderr, STDERR_FILENO);
	close(t->saved_stderr);
	t->saved_stderr = -1;
	if (!t->errlog)
		return;
	/* what was said while the screen was up */
	rewind(t->errlog);
	while ((n = fread(buf, 1, sizeof(buf), t->errlog)) > 0)
		if (fwrite(buf, 1, n, stderr) != n)
			break;
	fclose(t->errlog);
	t->errlog = NULL;
}

static void screen_end(struct out_top *t)
{
	if (!t->active)
		return;
	endwin();
	delscreen(t->scr);
	t->scr = NULL;
	t->active = false;
	fflush(t->o.f);
	stderr_back(t);
}

static void top_ready(void *priv, const struct ready_info *ri)
{
	struct out_top *t = priv;

	t->ri = *ri;
	t->ready = true;
	t->t_ready = ri->t_ns ? ri->t_ns : now_mono_ns();
	if (!t->active) {
		t->text.ops->ready(t->text.priv, ri);
		return;
	}
	t->next_draw = 0;	/* at the next flush */
}

static void top_summary(void *priv, const struct summary *s)
{
	struct out_top *t = priv;

	if (!s->final && t->active) {
		t->lost += lost_total(&s->lost);
		t->left_out += s->lost.left_out;
		return;
	}
	/* the end: the screen goes, the run's summary stays on the normal screen */
	screen_end(t);
	t->text.ops->summary(t->text.priv, s);
}

static void key(struct out_top *t, int ch)
{
	switch (ch) {
	case 'q':
	case 'Q':
	case 3:		/* Ctrl-C: the terminal is raw, it does not signal */
		t->quit = true;
		break;
	case 'a': t->sort = SORT_AGE; break;
	case 't': t->sort = SORT_TOKENS; break;
	case 'l': case 'i': t->sort = SORT_ITL; break;
	case 'c': t->sort = SORT_CONN; break;
	case 'p': t->sort = SORT_PATH; break;
	case 'r': t->reverse = !t->reverse; break;
	default: return;
	}
}

static bool top_flush(void *priv)
{
	struct out_top *t = priv;
	bool now = false;
	int ch;

	if (!t->active)
		return t->text.ops->flush(t->text.priv);
	while ((ch = getch()) != ERR) {
		if (ch == KEY_RESIZE)
			clearok(curscr, TRUE);
		else
			key(t, ch);
		now = true;
	}
	if (!now && now_mono_ns() < t->next_draw)
		return t->quit;
	draw(t);
	t->next_draw = now_mono_ns() + REDRAW_NS;
	return t->quit;
}

static void top_free(void *priv)
{
	struct out_top *t = priv;

	screen_end(t);
	t->text.ops->free(t->text.priv);
	free(t->rows);
	free(t);
}

static const struct output_ops top_ops = {
	.ready = top_ready,
	.request = top_request,
	.summary = top_summary,
	.flush = top_flush,
	.free = top_free,
};

static bool screen_start(struct out_top *t)
{
	/* only the character type: numbers elsewhere keep their C format */
	setlocale(LC_CTYPE, "");
	t->utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
	t->scr = newterm(NULL, t->o.f, stdin);
	if (!t->scr)
		return false;
	set_term(t->scr);
	raw();
	noecho();
	nodelay(stdscr, TRUE);
	keypad(stdscr, TRUE);
	curs_set(0);
	t->colors = t->o.color && has_colors();
	if (t->colors) {
		start_color();
		use_default_colors();
		init_pair(C_TITLE, COLOR_BLACK, COLOR_CYAN);
		init_pair(C_STALL, COLOR_RED, -1);
		init_pair(C_DIM, COLOR_BLUE, -1);
	}
	t->active = true;

	/* stderr would scribble over the screen: keep it aside, show its last line */
	if (isatty(STDERR_FILENO)) {
		t->errlog = tmpfile();
		t->saved_stderr = t->errlog ? dup(STDERR_FILENO) : -1;
		if (t->saved_stderr >= 0) {
			fflush(stderr);
			dup2(fileno(t->errlog), STDERR_FILENO);
		} else if (t->errlog) {
			fclose(t->errlog);
			t->errlog = NULL;
		}
	}
	erase();
	line(0, " tokentrace: starting...");
	refresh();
	return true;
}

int output_top__new(struct output *o, const struct output_opts *opts)
{
	struct out_top *t;
	int err;

	if (!isatty(fileno(opts->f))) {
		fprintf(stderr, "tokentrace: --top: stdout is not a terminal; printing lines\n");
		return output_text__new(o, opts);
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->o = *opts;
	t->saved_stderr = -1;
	err = output_text__new(&t->text, opts);
	if (err) {
		free(t);
		return err;
	}
	if (!screen_start(t)) {
		fprintf(stderr, "tokentrace: --top: terminal '%s' unknown to curses; printing "
			"lines\n", getenv("TERM") ? getenv("TERM") : "");
		/* the text output alone, as without a terminal */
		*o = t->text;
		free(t);
		return 0;
	}
	o->ops = &top_ops;
	o->priv = t;
	return 0;
}
