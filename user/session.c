// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include <string.h>
#include "session.h"
#include "stats.h"

struct session {
	struct correlator *corr;
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

struct session *session__new(const struct session_opts *o)
{
	struct session *s = calloc(1, sizeof(*s));
	struct corr_opts co = {
		.on_request = emit_request,
		.ud = s,
		.ignore_conn = o->ignore_conn,
		.ignore_ud = o->ud,
	};

	if (!s)
		return NULL;
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

void session__flush(struct session *s)
{
	for (int i = 0; i < s->nout; i++)
		s->out[i].ops->flush(s->out[i].priv);
}

struct correlator *session__correlator(struct session *s)
{
	return s->corr;
}
