// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "util.h"
#include "aggregate.h"
#include "session.h"
#include "stats.h"

#define STACKS_MAX	4096

struct stack_text {
	uint32_t pid;
	int32_t kstack, ustack;
	char *str;
};

struct session {
	struct session_opts o;
	struct stack_text stacks[STACKS_MAX];	/* ring: the oldest goes first */
	size_t nstacks;
	struct correlator *corr;
	struct live_view live;
	struct stats stats;
	struct output out[SESSION_OUTPUTS_MAX];
	int nout;
	/* counters at the previous summary: summaries show what happened in their window */
	uint64_t kprev[TT_STAT_NR];
	struct corr_stats cprev;
};

static void emit_request(void *ud, const struct tt_request *r)
{
	struct session *s = ud;

	stats__add(&s->stats, r);
	for (int i = 0; i < s->nout; i++)
		s->out[i].ops->request(s->out[i].priv, r);
}

static struct stack_text *stack_find(struct session *s, uint32_t pid, int32_t k, int32_t u)
{
	for (size_t i = 0; i < MIN(s->nstacks, STACKS_MAX); i++) {
		struct stack_text *t = &s->stacks[i];

		if (t->pid == pid && t->kstack == k && t->ustack == u)
			return t;
	}
	return NULL;
}

static void stack_keep(struct session *s, uint32_t pid, int32_t k, int32_t u, const char *str)
{
	struct stack_text *t = &s->stacks[s->nstacks++ % STACKS_MAX];

	free(t->str);
	t->pid = pid;
	t->kstack = k;
	t->ustack = u;
	t->str = strdup(str);
}

/*
 * Stack ids are only meaningful in the live kernel: the first time one is needed its text is
 * made there, kept, and written out for recordings; a replay finds it in the recording.
 */
static void stack_str(void *ud, uint32_t pid, int32_t k, int32_t u, char *buf, size_t sz)
{
	struct session *s = ud;
	struct stack_text *t = stack_find(s, pid, k, u);
	struct tt_stack_ev e = {};

	buf[0] = '\0';
	if (t) {
		snprintf(buf, sz, "%s", t->str ? t->str : "");
		return;
	}
	if (!s->o.stack_live || s->o.stack_live(s->o.ud, pid, k, u, buf, sz))
		return;
	stack_keep(s, pid, k, u, buf);
	if (s->o.aux_record) {
		e.h.type = TT_EV_STACK;
		e.h.size = sizeof(e);
		e.h.tgid = pid;
		e.kstack = k;
		e.ustack = u;
		snprintf(e.str, sizeof(e.str), "%s", buf);
		s->o.aux_record(s->o.ud, &e, sizeof(e));
	}
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
	};

	if (!s)
		return NULL;
	s->o = *o;
	co.stack_ud = s;
	s->corr = correlator__new(&co);
	if (!s->corr) {
		free(s);
		return NULL;
	}
	stats__init(&s->stats, 0);
	return s;
}

void session__free(struct session *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nout; i++)
		s->out[i].ops->free(s->out[i].priv);
	correlator__free(s->corr);
	for (size_t i = 0; i < STACKS_MAX; i++)
		free(s->stacks[i].str);
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

void session__record(struct session *s, const void *data, size_t size)
{
	const struct tt_stack_ev *e = data;

	/* a recording's stack texts: kept for the records that follow */
	if (size >= sizeof(*e) && e->h.type == TT_EV_STACK) {
		char str[TT_STACK_STR_MAX + 1];

		memcpy(str, e->str, TT_STACK_STR_MAX);
		str[TT_STACK_STR_MAX] = '\0';
		stack_keep(s, e->h.tgid, e->kstack, e->ustack, str);
		return;
	}
	correlator__record(s->corr, data, size);
}

static void lost_since(const uint64_t *k, const uint64_t *kp, const struct corr_stats *cs,
		       const struct corr_stats *cp, struct lost_counts *l)
{
	l->ringbuf = k[TT_STAT_RB_DROP] - kp[TT_STAT_RB_DROP];
	l->conn_full = k[TT_STAT_CONN_FULL] - kp[TT_STAT_CONN_FULL];
	l->faults = k[TT_STAT_FAULT] - kp[TT_STAT_FAULT];
	l->truncated = k[TT_STAT_TRUNC] - kp[TT_STAT_TRUNC];
	l->bad_records = cs->bad_records - cp->bad_records;
	l->parse_errors = cs->parse_errors - cp->parse_errors;
}

void session__tick(struct session *s, uint64_t now_ns, const uint64_t kstats[TT_STAT_NR],
		   bool final)
{
	static const uint64_t kzero[TT_STAT_NR];
	static const struct corr_stats czero;
	const struct corr_stats *cs = correlator__stats(s->corr);
	const struct stats_win *w = final ? &s->stats.total : &s->stats.win;
	struct summary sum = {
		.w = w,
		.t_ns = now_ns,
		.secs = now_ns > w->t_begin_ns ? (now_ns - w->t_begin_ns) / 1e9 : 0,
		.final = final,
		.in_flight = correlator__in_flight(s->corr),
		.aggregate = s->o.aggregate,
	};

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
