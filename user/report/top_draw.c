// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --top's screen, drawn from what top.c gathered: the title and counts, the rolling
 * percentiles, one row per stream in flight, the pane of recent stalls, the status line.
 */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "top.h"
#include "util.h"

static const char *const sort_names[] = { "age", "tokens", "last ITL", "connection", "path" };

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

void top__line(int y, const char *s)
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
	top__line(y, buf);
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
	top__line(LINES - 1, t->last_err[0] ? t->last_err :
	     "keys: a age  t tokens  l last ITL  c connection  p path  r reverse  q quit");
	attr(t, C_DIM, false);
}

/* Rows 0-7: the title, the window's and the run's counts, the rolling percentiles. */
static void draw_head(struct out_top *t, const struct window *win)
{
	char buf[512], clock[16], up[16], comm[4 * 16], left[48] = "", more[32] = "";

	esc_term(comm, sizeof(comm), t->ri.comms[0],
		 strnlen(t->ri.comms[0], sizeof(t->ri.comms[0])));
	fmt_clock(clock, sizeof(clock), t->now);
	clock[8] = '\0';
	fmt_up(up, sizeof(up), t->ready && t->now > t->t_ready ? t->now - t->t_ready : 0);
	if (t->ri.npids > 1)
		snprintf(more, sizeof(more), " and %d more", t->ri.npids - 1);
	attr(t, C_TITLE, true);
	attron(A_BOLD);
	snprintf(buf, sizeof(buf), " tokentrace %s   PID %u (%s)%s   %s   up %s   sort: %s%s",
		 TT_VERSION, t->ri.pids[0], comm, more, clock, up, sort_names[t->sort],
		 t->reverse ? " (reversed)" : "");
	top__line(0, buf);
	mvchgat(0, 0, -1, A_BOLD | (t->colors ? 0 : A_REVERSE), t->colors ? C_TITLE : 0, NULL);
	attroff(A_BOLD);
	attr(t, C_TITLE, false);

	snprintf(buf, sizeof(buf), " last %ds: %llu requests, %llu errors, %.1f tok/s   "
		 "in flight: %d (%d streaming)", WIN_SECS, (unsigned long long)win->requests,
		 (unsigned long long)win->errors, win->chunks / win->secs,
		 t->nrows + t->rows_unshown, win->streaming);
	top__line(1, buf);
	if (t->left_out)
		snprintf(left, sizeof(left), ", %llu left out (budget)",
			 (unsigned long long)t->left_out);
	snprintf(buf, sizeof(buf), " total: %llu requests, %llu errors, %llu aborted, %llu tokens,"
		 " %llu events lost%s", (unsigned long long)t->requests,
		 (unsigned long long)t->errors, (unsigned long long)t->aborted,
		 (unsigned long long)t->tokens, (unsigned long long)t->lost, left);
	top__line(2, buf);
	attron(A_BOLD);
	snprintf(buf, sizeof(buf), "  %-5s %9s %9s %9s %9s %9s   (last %ds)", "", "p50", "p90",
		 "p99", "max", "count", WIN_SECS);
	top__line(4, buf);
	attroff(A_BOLD);
	pct_line(t, 5, "TTFT", &t->ttft);
	pct_line(t, 6, "ITL", &t->itl);
	pct_line(t, 7, "TPOT", &t->tpot);
}

/* The streams' columns: the fixed ones and the stall mark, the sparkline takes what is left. */
struct cols {
	int conn, path, model, spark;
	bool show_model;
};

static void layout(struct cols *c)
{
	int fixed;

	c->conn = 31;
	c->path = 22;
	c->model = 14;
	c->show_model = true;
	fixed = c->conn + 1 + c->path + 1 + c->model + 1 + 7 + 1 + 7 + 1 + 6 + 1 + 9 + 1 + MARK_W;
	if (COLS < fixed + 12) {
		c->show_model = false;
		fixed -= c->model + 1;
	}
	c->spark = MIN(SPARK_MAX, MAX(COLS - fixed, 0));
}

static void draw_columns(struct out_top *t, const struct cols *c, int y)
{
	const char *arrow = t->reverse ? (t->utf8 ? "\u25b2" : "^") : (t->utf8 ? "\u25bc" : "v");
	/* the arrow is one cell whatever its bytes: pad by hand */
	int pad = t->utf8 ? 2 : 0;
	char h[5][24];

	snprintf(h[0], sizeof(h[0]), "CONNECTION%s", t->sort == SORT_CONN ? arrow : "");
	snprintf(h[1], sizeof(h[1]), "PATH%s", t->sort == SORT_PATH ? arrow : "");
	snprintf(h[2], sizeof(h[2]), "AGE%s", t->sort == SORT_AGE ? arrow : "");
	snprintf(h[3], sizeof(h[3]), "TOKENS%s", t->sort == SORT_TOKENS ? arrow : "");
	snprintf(h[4], sizeof(h[4]), "LAST ITL%s", t->sort == SORT_ITL ? arrow : "");
	if (y >= LINES - 1)
		return;
	move(y, 0);
	attron(A_REVERSE | A_BOLD);
	printw("%-*s %-*s ", c->conn + (t->sort == SORT_CONN ? pad : 0), h[0],
	       c->path + (t->sort == SORT_PATH ? pad : 0), h[1]);
	if (c->show_model)
		printw("%-*s ", c->model, "MODEL");
	printw("%-7s %*s %*s %*s %-*s %-10s", "STATE", 7 + (t->sort == SORT_AGE ? pad : 0), h[2],
	       6 + (t->sort == SORT_TOKENS ? pad : 0), h[3], 9 + (t->sort == SORT_ITL ? pad : 0),
	       h[4], c->spark, c->spark >= 10 ? "RECENT ITL" : "", "");
	clrtoeol();
	mvchgat(y, 0, -1, A_REVERSE | A_BOLD, 0, NULL);
	attroff(A_REVERSE | A_BOLD);
}

static void draw_row(struct out_top *t, const struct cols *c, const struct row *w, int y)
{
	char buf[512], age[16], itl[16] = "-", mark[24] = "";
	int pos;

	fmt_dur(age, sizeof(age), w->age_ns);
	if (w->last_itl)
		fmt_dur(itl, sizeof(itl), w->last_itl);
	if (c->show_model)
		pos = snprintf(buf, sizeof(buf), "%-*.*s %-*.*s %-*.*s ", c->conn, c->conn, w->conn,
			       c->path, c->path, w->path, c->model, c->model, w->model);
	else
		pos = snprintf(buf, sizeof(buf), "%-*.*s %-*.*s ", c->conn, c->conn, w->conn,
			       c->path, c->path, w->path);
	snprintf(buf + pos, sizeof(buf) - pos, "%-7s %7s %6llu %9s ", w->state, age,
		 (unsigned long long)w->tokens, itl);
	move(y, 0);
	if (w->silent_ns)
		attr(t, C_STALL, true);
	addnstr(buf, COLS);
	if (w->silent_ns)
		attr(t, C_STALL, false);
	if (getcurx(stdscr) + c->spark >= COLS)
		return;
	sparkline(t, w, c->spark);
	if (w->silent_ns) {
		char d[16];

		fmt_dur(d, sizeof(d), w->silent_ns);
		snprintf(mark, sizeof(mark), " STALL %s", d);
	} else if (w->stalls) {
		snprintf(mark, sizeof(mark), " %u stall%s", w->stalls, w->stalls > 1 ? "s" : "");
	}
	attr(t, C_STALL, true);
	attron(A_BOLD);
	addnstr(mark, MAX(COLS - getcurx(stdscr), 0));
	attroff(A_BOLD);
	attr(t, C_STALL, false);
}

/* The streams in flight from row y0, up to the row before end. */
static void draw_rows(struct out_top *t, const struct cols *c, int y0, int end)
{
	char buf[64];
	int y = y0;

	for (int i = 0; i < t->nrows && y < end; i++, y++) {
		if (y == end - 1 && i + 1 < t->nrows) {
			snprintf(buf, sizeof(buf), " ... %d more (sort with a/t/l/c/p)",
				 t->nrows - i);
			top__line(y, buf);
			return;
		}
		draw_row(t, c, &t->rows[i], y);
	}
	if (!t->nrows && y0 < end) {
		attr(t, C_DIM, true);
		top__line(y0, " (no request in flight)");
		attr(t, C_DIM, false);
	}
}

/* The bytes of escaped text s that fit in cells cells, a character a cell, never half one. */
static int fit(const char *s, int cells)
{
	int n = 0;

	for (; s[n] && cells > 0; cells--)
		for (n++; ((unsigned char)s[n] & 0xc0) == 0x80; n++)
			;
	return n;
}

/* The pane of recent stalls, newest first, h rows from y with its title. */
static void draw_stalls(struct out_top *t, int y, int h)
{
	char clock[16];

	if (h < 2)
		return;
	attron(A_REVERSE | A_BOLD);
	top__line(y, " RECENT STALLS (newest first): who was late, what it did; then who waited");
	mvchgat(y, 0, -1, A_REVERSE | A_BOLD, 0, NULL);
	attroff(A_REVERSE | A_BOLD);
	if (!t->nrecent) {
		attr(t, C_DIM, true);
		top__line(y + 1, " (none yet)");
		attr(t, C_DIM, false);
	}
	for (int i = 0; i < t->nrecent && i + 1 < h; i++) {
		const struct recent *e = &t->recent[i];

		fmt_clock(clock, sizeof(clock), e->t_end);
		clock[8] = '\0';
		move(y + 1 + i, 0);
		attr(t, C_DIM, true);
		addnstr(clock, COLS);
		attr(t, C_DIM, false);
		if (COLS > 10) {
			addch(' ');
			addnstr(e->text, fit(e->text, COLS - 10));
		}
		clrtoeol();
	}
}

void top__draw(struct out_top *t, const struct window *win)
{
	struct cols cols;
	int pane;

	erase();
	draw_head(t, win);
	layout(&cols);
	draw_columns(t, &cols, 9);
	/* the stalls' pane under the streams, when the screen leaves them rows enough */
	pane = LINES >= 30 ? RECENT_SHOWN + 1 : LINES >= 20 ? 3 : 0;
	draw_rows(t, &cols, 10, LINES - 1 - pane);
	draw_stalls(t, LINES - 1 - pane, pane);
	status_line(t);
	refresh();
}
