// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "hmap.h"
#include "util.h"
#include "aggregate.h"
#include "session.h"
#include "stats.h"

#define STACKS_MAX	4096	/* stack texts kept; the oldest goes first */

struct text {
	uint64_t key;		/* stack_ips__key(), py_key() */
	char *str;
	bool used;
};

/* Texts by a 64-bit key, the oldest going first past STACKS_MAX. */
struct texts {
	struct text e[STACKS_MAX];		/* ring */
	size_t n;
	struct hmap *idx;			/* key -> its entry in e */
};

struct session {
	struct session_opts o;
	struct texts stacks;			/* stacks' texts */
	struct texts pynames;			/* Python frames' names */
	struct correlator *corr;
	struct live_view live;
	/*
	 * Finished requests waiting for the text of a stall's stack, and the ones that finished
	 * after them (outputs see requests in the order they finished): symbolizing reads ELF
	 * files, so it is done after a batch of records, never inside the ring's callback.
	 */
	struct tt_request *waiting_head, *waiting_tail;
	size_t nwaiting;
	struct stats stats;
	struct stall_hook_stats hooks;
	struct output out[SESSION_OUTPUTS_MAX];
	int nout;
	/* counters at the previous summary: summaries show what happened in their window */
	uint64_t kprev[TT_STAT_NR];
	struct corr_stats cprev;
};

static const char *text_find(const struct texts *t, uint64_t key)
{
	const struct text *x = hmap__get(t->idx, key);

	return x ? x->str ?: "" : NULL;
}

static void text_keep(struct texts *t, uint64_t key, const char *str)
{
	struct text *x;

	if (text_find(t, key))
		return;
	x = &t->e[t->n++ % STACKS_MAX];
	if (x->used)
		hmap__del(t->idx, x->key);
	free(x->str);
	x->key = key;
	x->str = strdup(str);
	x->used = true;
	hmap__put(t->idx, key, x);	/* no memory: the text is made again when asked */
}

static int texts_init(struct texts *t)
{
	t->idx = hmap__new(STACKS_MAX);
	return t->idx ? 0 : -1;
}

static void texts_free(struct texts *t)
{
	for (size_t i = 0; i < STACKS_MAX; i++)
		free(t->e[i].str);
	hmap__free(t->idx);
}

static void stack_made(struct session *s, const struct stack_ips *st, uint64_t key,
		       const char *str)
{
	struct tt_stack_ev e = {};

	text_keep(&s->stacks, key, str);
	if (s->o.aux_record) {
		e.h.type = TT_EV_STACK;
		e.h.size = sizeof(e);
		e.h.tgid = st->pid;
		e.key = key;
		snprintf(e.str, sizeof(e.str), "%s", str);
		s->o.aux_record(s->o.ud, &e, sizeof(e));
	}
}

/*
 * The correlator asks for a stack's text: known already (cached, or from a recording), or
 * later. A kernel stack alone (how a waker woke a thread) is only a lookup in the kernel's
 * symbol table, made at once: the explanation needs it to follow the waker.
 */
static bool stack_str(void *ud, const struct stack_ips *st, char *buf, size_t sz)
{
	struct session *s = ud;
	uint64_t key = stack_ips__key(st);
	const char *t = text_find(&s->stacks, key);

	if (!t && !st->nu && s->o.stack_live) {
		char tmp[STALL_STACK_MAX] = "";

		if (s->o.stack_live(s->o.ud, st, tmp, sizeof(tmp)))
			tmp[0] = '\0';
		stack_made(s, st, key, tmp);
		t = text_find(&s->stacks, key);
	}
	if (!t)
		return false;
	snprintf(buf, sz, "%s", t);
	return true;
}

/*
 * The text of a pending stack: in a live run made from its addresses now and written out
 * for recordings (also when it cannot be made, so a replay waits for nothing); in a replay,
 * what the recording said. False if not known (a replay still waiting for it).
 */
static bool stack_resolve(struct session *s, struct tt_stall *st, bool force)
{
	char buf[STALL_STACK_MAX] = "";

	if (stack_str(s, &st->stack_ips, st->stack, sizeof(st->stack)))
		goto done;
	if (!s->o.stack_live) {
		if (!force)
			return false;
		st->stack[0] = '\0';
		goto done;
	}
	if (s->o.stack_live(s->o.ud, &st->stack_ips, buf, sizeof(buf)))
		buf[0] = '\0';
	stack_made(s, &st->stack_ips, stack_ips__key(&st->stack_ips), buf);
	snprintf(st->stack, sizeof(st->stack), "%s", buf);
done:
	st->stack_pending = false;
	return true;
}

static bool stacks_pending(const struct tt_request *r)
{
	for (uint32_t i = 0; i < r->nstalls; i++)
		if (r->stalls[i].stack_pending)
			return true;
	return false;
}

static void deliver(struct session *s, const struct tt_request *r)
{
	stats__add(&s->stats, r);
	for (int i = 0; i < s->nout; i++)
		s->out[i].ops->request(s->out[i].priv, r);
}

static void emit_request(void *ud, const struct tt_request *r)
{
	struct session *s = ud;
	struct tt_request *d;

	if (!s->waiting_head && !stacks_pending(r)) {
		deliver(s, r);
		return;
	}
	d = request__dup(r);
	if (!d) {	/* no memory to wait: out now, the stacks unnamed */
		deliver(s, r);
		return;
	}
	if (s->waiting_tail)
		s->waiting_tail->next = d;
	else
		s->waiting_head = d;
	s->waiting_tail = d;
	s->nwaiting++;
}

void session__drain(struct session *s, bool force)
{
	struct tt_request *r;

	while ((r = s->waiting_head)) {
		for (uint32_t i = 0; i < r->nstalls; i++)
			if (r->stalls[i].stack_pending && !stack_resolve(s, &r->stalls[i], force))
				return;
		s->waiting_head = r->next;
		if (!s->waiting_head)
			s->waiting_tail = NULL;
		s->nwaiting--;
		deliver(s, r);
		request__free(r);
	}
}

/* A Python frame's key: its process, code object and instruction, mixed. */
static uint64_t py_key(uint32_t pid, uint64_t code, int32_t lasti)
{
	uint64_t k = code ^ ((uint64_t)pid << 32 | (uint32_t)lasti) * 0x9e3779b97f4a7c15ull;

	k ^= k >> 31;
	k *= 0xbf58476d1ce4e5b9ull;
	k ^= k >> 29;
	return k ?: 1;
}

/*
 * The name of a Python frame: known (read before, or a recording's), else read from the
 * live process now and written out for recordings; "?" in a replay that did not record it.
 */
static size_t py_name(void *ud, uint32_t pid, uint64_t code, int32_t lasti, char *buf,
		      size_t sz)
{
	struct session *s = ud;
	uint64_t key = py_key(pid, code, lasti);
	const char *t = text_find(&s->pynames, key);
	struct tt_pyname_ev e = {};

	if (!t && s->o.py_live) {
		if (!s->o.py_live(s->o.ud, pid, code, lasti, e.str, sizeof(e.str)))
			snprintf(e.str, sizeof(e.str), "?");
		text_keep(&s->pynames, key, e.str);
		t = text_find(&s->pynames, key);
		if (s->o.aux_record) {
			e.h.type = TT_EV_PYNAME;
			e.h.size = sizeof(e);
			e.h.tgid = pid;
			e.code = code;
			e.lasti = lasti;
			s->o.aux_record(s->o.ud, &e, sizeof(e));
		}
	}
	return snprintf(buf, sz, "%s", t ? t : "?");
}

/* Recording a live run: the frames a stack record holds get their names now, written out
 * before the record, while the code objects they point at still live. */
static void py_name_frames(struct session *s, const struct tt_pystack_ev *e, size_t size)
{
	char tmp[TT_PYNAME_STR_MAX];
	uint32_t n = e->nframes;

	if (size < TT_PYSTACK_HDR_SIZE || e->h.size > size)
		return;
	n = MIN(n, (uint32_t)((e->h.size - TT_PYSTACK_HDR_SIZE) / sizeof(e->frames[0])));
	n = MIN(n, (uint32_t)PYSAMPLES_KEEP);
	for (uint32_t i = 0; i < n; i++)
		py_name(s, e->h.tgid, e->frames[i].code, e->frames[i].lasti, tmp, sizeof(tmp));
}

struct session *session__new(const struct session_opts *o)
{
	struct session *s = calloc(1, sizeof(*s));
	struct corr_opts co = {
		.on_request = emit_request,
		.ud = s,
		.ignore_conn = o->ignore_conn,
		.ignore_ud = o->ud,
		.stalls = o->stalls,
		.stall_ns = o->stall_ns,
		.stack_str = stack_str,
		.py_name = py_name,
	};

	if (!s)
		return NULL;
	s->o = *o;
	co.stack_ud = s;
	co.py_ud = s;
	if (texts_init(&s->stacks) || texts_init(&s->pynames) ||
	    !(s->corr = correlator__new(&co))) {
		session__free(s);
		return NULL;
	}
	stats__init(&s->stats, 0);
	return s;
}

void session__free(struct session *s)
{
	struct tt_request *r, *next;

	if (!s)
		return;
	for (r = s->waiting_head; r; r = next) {
		next = r->next;
		request__free(r);
	}
	for (int i = 0; i < s->nout; i++)
		s->out[i].ops->free(s->out[i].priv);
	correlator__free(s->corr);
	texts_free(&s->stacks);
	texts_free(&s->pynames);
	free(s);
}

int session__add_output(struct session *s, const struct output *o)
{
	if (s->nout == SESSION_OUTPUTS_MAX)
		return -1;
	s->out[s->nout++] = *o;
	return 0;
}

void session__ready(struct session *s, const struct ready_info *ri)
{
	stats__init(&s->stats, ri->t_ns);
	for (int i = 0; i < ri->npids && i < READY_PIDS_MAX; i++)
		if (ri->comms[i][0])
			correlator__set_comm(s->corr, ri->pids[i], ri->comms[i]);
	correlator__set_markers(s->corr, ri->marker_kind, ri->nmarkers);
	for (int i = 0; i < s->nout; i++)
		s->out[i].ops->ready(s->out[i].priv, ri);
}

const char *target_event_name(uint32_t kind)
{
	switch (kind) {
	case TT_PROC_FORK: return "fork";
	case TT_PROC_EXEC: return "exec";
	case TT_PROC_EXIT: return "exit";
	case TT_PROC_FOUND: return "found";
	default: return "?";
	}
}

const char *target_why_name(uint32_t why)
{
	static const char *const names[] = { NULL, "comm", "cgroup", "port", "peer" };

	return why < sizeof(names) / sizeof(names[0]) ? names[why] : NULL;
}

/* A process joined or left: its name for the requests to come, and the outputs told. */
static void proc_event(struct session *s, const struct tt_proc_ev *e)
{
	struct target_event te = {
		.t_ns = e->h.ts, .pid = e->h.tgid, .ppid = e->ppid, .kind = e->kind,
		.why = e->why, .flags = e->flags,
	};

	if (e->kind == TT_PROC_THREAD_EXIT)
		return;	/* for the correlator's thread bookkeeping only */
	memcpy(te.comm, e->comm, sizeof(te.comm));
	te.comm[sizeof(te.comm) - 1] = '\0';
	if (e->kind != TT_PROC_EXIT && te.comm[0])
		correlator__set_comm(s->corr, te.pid, te.comm);
	for (int i = 0; i < s->nout; i++)
		if (s->out[i].ops->target)
			s->out[i].ops->target(s->out[i].priv, &te);
}

void session__record(struct session *s, const void *data, size_t size)
{
	const struct tt_hdr *h = data;
	const struct tt_stack_ev *e = data;

	if (size < sizeof(*h)) {
		correlator__record(s->corr, data, size);	/* counted as malformed */
		return;
	}
	if (size >= sizeof(struct tt_proc_ev) && h->type == TT_EV_PROC && h->size <= size)
		proc_event(s, data);

	/* a recording's stack texts: kept for the records that follow */
	if (size >= sizeof(*e) && e->h.type == TT_EV_STACK) {
		char str[TT_STACK_STR_MAX + 1];

		memcpy(str, e->str, TT_STACK_STR_MAX);
		str[TT_STACK_STR_MAX] = '\0';
		text_keep(&s->stacks, e->key, str);
		if (s->waiting_head && !s->o.stack_live)
			session__drain(s, false);	/* a replay: what waited for it goes */
		return;
	}
	if (size >= sizeof(struct tt_pyname_ev) && h->type == TT_EV_PYNAME) {
		const struct tt_pyname_ev *pn = data;
		char str[TT_PYNAME_STR_MAX + 1];

		memcpy(str, pn->str, TT_PYNAME_STR_MAX);
		str[TT_PYNAME_STR_MAX] = '\0';
		text_keep(&s->pynames, py_key(pn->h.tgid, pn->code, pn->lasti), str);
		return;
	}
	if (h->type == TT_EV_PYSTACK && s->o.aux_record && s->o.py_live && s->o.stalls)
		py_name_frames(s, data, size);
	correlator__record(s->corr, data, size);
}

static void lost_since(const uint64_t *k, const uint64_t *kp, const struct corr_stats *cs,
		       const struct corr_stats *cp, struct lost_counts *l)
{
#define K(i) (k[i] - kp[i])
	l->n[LOST_RINGBUF] = K(TT_STAT_RB_DROP);
	l->n[LOST_CONN_FULL] = K(TT_STAT_CONN_FULL);
	l->n[LOST_FAULT] = K(TT_STAT_FAULT);
	l->n[LOST_EARLY_FULL] = K(TT_STAT_EARLY_FULL);
	l->n[LOST_STACK] = K(TT_STAT_STACK_LOST);
	l->n[LOST_PROG_MISS] = K(TT_STAT_PROG_MISS);
	l->n[LOST_SCHED_MISS] = K(TT_STAT_SCHED_MISS);
	l->truncated = K(TT_STAT_TRUNC);
	l->walks_cut = K(TT_STAT_IOV_CUT);
	l->switches_mended = K(TT_STAT_SCHED_MENDED);
	l->timer_marks_skipped = K(TT_STAT_TIMER_SKIP);
	l->left_out = K(TT_STAT_BUDGET_SKIP);
	l->left_out_records = K(TT_STAT_BUDGET_RECS);
#undef K
	l->n[LOST_CONN_EVICTED] = cs->conns_evicted - cp->conns_evicted;
	l->n[LOST_CONN_ORPHANED] = cs->conns_orphaned - cp->conns_orphaned;
	l->n[LOST_MARKERS] = cs->markers.pending_evicted - cp->markers.pending_evicted;
	l->n[LOST_BAD_RECORD] = cs->bad_records - cp->bad_records;
	l->parse_errors = cs->parse_errors - cp->parse_errors;
	l->between_requests = cs->lost_between - cp->lost_between;
	l->data_records = cs->data_records - cp->data_records;
}

void session__expire(struct session *s, uint64_t now_ns)
{
	correlator__expire(s->corr, now_ns);
}

void session__tick(struct session *s, uint64_t now_ns, const uint64_t kstats[TT_STAT_NR],
		   bool final)
{
	static const uint64_t kzero[TT_STAT_NR];
	static const struct corr_stats czero;
	const struct corr_stats *cs;
	const struct stats_win *w = final ? &s->stats.total : &s->stats.win;
	struct summary sum = {
		.w = w,
		.t_ns = now_ns,
		.secs = now_ns > w->t_begin_ns ? (now_ns - w->t_begin_ns) / 1e9 : 0,
		.final = final,
		.aggregate = s->o.aggregate,
	};

	correlator__expire(s->corr, now_ns);
	session__drain(s, true);
	cs = correlator__stats(s->corr);
	sum.in_flight = correlator__in_flight(s->corr);
	sum.conns = cs->conns;
	sum.conns_unparsed = cs->conns_ignored;
	sum.conns_tls = cs->conns_tls;
	sum.unmatched_responses = cs->unmatched_responses;
	sum.h2.conns = cs->h2_conns;
	sum.h2.streams = cs->h2_streams;
	sum.h2.joined = cs->h2_joined;
	sum.h2.dropped = cs->h2_dropped;
	sum.h2.resyncs = cs->h2_resyncs;
	sum.h2.untracked = cs->h2_untracked;
	sum.h2.stray = cs->h2_stray;
	sum.h2.errors = cs->h2_errors;
	sum.hooks = s->hooks;
	sum.run_ns = now_ns > s->stats.total.t_begin_ns ? now_ns - s->stats.total.t_begin_ns : 0;
	if (final) {
		lost_since(kstats, kzero, cs, &czero, &sum.lost);
	} else {
		lost_since(kstats, s->kprev, cs, &s->cprev, &sum.lost);
		memcpy(s->kprev, kstats, sizeof(s->kprev));
		s->cprev = *cs;
	}
	for (int i = 0; i < s->nout; i++)
		s->out[i].ops->summary(s->out[i].priv, &sum);
	stats__roll(&s->stats, now_ns);
}

void session__aggregate(struct session *s, const struct agg_totals *d)
{
	struct stats_win *w[2] = { &s->stats.win, &s->stats.total };

	for (int i = 0; i < 2; i++) {
		agg__to_hist(d->ttft, &w[i]->ttft);
		agg__to_hist(d->itl, &w[i]->itl);
		w[i]->requests += d->firsts;
		w[i]->tokens += d->sends;
		w[i]->chunks += d->sends;
	}
}

bool session__flush(struct session *s)
{
	bool stop = false;

	for (int i = 0; i < s->nout; i++)
		stop |= s->out[i].ops->flush(s->out[i].priv);
	return stop;
}

static void live_foreach(const void *src, inflight_fn fn, void *ud)
{
	correlator__foreach_inflight(src, fn, ud);
}

const struct live_view *session__live_view(struct session *s)
{
	s->live.foreach_inflight = live_foreach;
	s->live.src = s->corr;
	return &s->live;
}

uint64_t session__arm_at(struct session *s, uint64_t now_ns)
{
	return correlator__arm_at(s->corr, now_ns);
}

void session__stall_hooks(struct session *s, const struct stall_hook_stats *sh)
{
	s->hooks = *sh;
}
