// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --top: a full-screen live view (ncurses). Redrawn at most once a second from the main
 * loop's flush (every 20 ms), which also reads the keyboard without blocking:
 *
 *   - the streams in flight: connection, path, model, state, age, tokens so far, last ITL, a
 *     sparkline of the recent ITLs (gaps far above the stream's own median in red), and a
 *     STALL marker while a stream is silent for much longer than its median gap;
 *   - rolling percentiles of TTFT, ITL and TPOT over the last WIN_SECS seconds, and tokens/s;
 *   - a pane of the recent stalls, newest first, each with its line (stall_text.h): who was
 *     late and what it did, then who waited for it.
 *
 * The rolling window is binned by the events' own times (a token counts in the second it was
 * sent, finished request or not), so a long stream shows in tokens/s and ITL while it runs.
 * Keys: a/t/l/c/p sort by age, tokens, last ITL, connection, path; r reverses; q (or Ctrl-C)
 * quits: the main loop stops, and the final summary is printed on the normal screen.
 *
 * While the screen is up, stderr (the main loop's notes: a target exited...) goes to a
 * temporary file, its last line shown at the bottom, and is copied back to stderr at the end.
 * Without a terminal on stdout, --top is the text output, with a note on stderr. This file
 * gathers what the screen shows and keeps the screen; top_draw.c draws it.
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
#include "stall_text.h"
#include "vec.h"
#include "top.h"
#include "util.h"

#define REDRAW_NS	1000000000ull
#define ROWS_MAX	100000

/* ------------------------------------------------------------------ recent stalls */

/*
 * A stall seen, in a finished request or one in flight: kept if it is among the newest, its
 * line said again at each sighting (the text of its stack can come after the stall).
 */
static void recent_note(struct out_top *t, const struct tt_request *r, const struct tt_stall *st)
{
	char line[STALL_LINE_MAX], gap[16];
	struct recent *e = NULL;
	int i, n;

	for (i = 0; i < t->nrecent && !e; i++)
		if (t->recent[i].conn_id == r->conn_id && t->recent[i].seq == r->seq &&
		    t->recent[i].t_begin == st->t_begin_ns)
			e = &t->recent[i];
	if (!e) {
		if (t->nrecent == RECENT_MAX && st->t_end_ns <= t->recent[RECENT_MAX - 1].t_end)
			return;
		if (t->nrecent == RECENT_MAX)
			t->nrecent--;
		for (i = t->nrecent; i > 0 && t->recent[i - 1].t_end < st->t_end_ns; i--)
			t->recent[i] = t->recent[i - 1];
		e = &t->recent[i];
		t->nrecent++;
		e->conn_id = r->conn_id;
		e->seq = r->seq;
		e->t_begin = st->t_begin_ns;
		e->t_end = st->t_end_ns;
	}
	fmt_dur(gap, sizeof(gap), st->t_end_ns - st->t_begin_ns);
	n = snprintf(e->text, sizeof(e->text), "stall %s after token %u: ", gap,
		     st->after_chunk + 1);
	stall__describe(st, line, sizeof(line));
	/* names and symbols come from the traced processes, as untrusted as their traffic */
	esc_term(e->text + n, sizeof(e->text) - n, line, strlen(line));
}

static void recent_note_all(struct out_top *t, const struct tt_request *r)
{
	for (uint32_t i = 0; i < r->nstalls; i++)
		recent_note(t, r, &r->stalls[i]);
}

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
	recent_note_all(t, r);
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

	/* a bound on what one screen can sort; what is past it still counts as in flight */
	if (VEC_RESERVE(t->rows, &t->rows_cap, (size_t)t->nrows + 1, ROWS_MAX)) {
		t->rows_unshown++;
		return;
	}
	w = &t->rows[t->nrows++];
	memset(w, 0, sizeof(*w));
	/* from the wire: escaped, so a client cannot write to the operator's terminal */
	esc_term(w->conn, sizeof(w->conn), r->conn, strnlen(r->conn, sizeof(r->conn)));
	if (r->h2) {	/* a stream of its connection */
		size_t n = strlen(w->conn);

		snprintf(w->conn + n, sizeof(w->conn) - n, "#%u", r->h2_stream);
	}
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
	recent_note_all(t, r);
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

/* ------------------------------------------------------------------ a draw */

static void window_merge(struct out_top *t, struct window *win)
{
	uint64_t now_sec = t->now / 1000000000ull;

	memset(win, 0, sizeof(*win));
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
		win->chunks += s->chunks;
		win->requests += s->requests;
		win->errors += s->errors;
	}
	win->secs = t->ready ? MIN((double)WIN_SECS, (t->now - t->t_ready) / 1e9) : WIN_SECS;
	if (win->secs < 1)
		win->secs = 1;
}


/* What a draw shows: the window merged, the streams in flight gathered and sorted. */
static void gather(struct out_top *t, struct window *win)
{
	struct collect c = { .t = t };

	t->now = now_mono_ns();
	window_merge(t, win);
	t->nrows = 0;
	t->rows_unshown = 0;
	live_view__foreach(t->o.live, collect_one, &c);
	win->chunks += c.chunks;
	for (int i = 0; i < t->nrows; i++)
		win->streaming += t->rows[i].streaming;
	sort_by = t->sort;
	sort_rev = t->reverse;
	qsort(t->rows, t->nrows, sizeof(*t->rows), cmp_rows);
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
	struct window win;
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
	gather(t, &win);
	top__draw(t, &win);
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
	top__line(0, " tokentrace: starting...");
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
