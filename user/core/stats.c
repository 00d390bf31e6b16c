// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>
#include "stats.h"

static void win_reset(struct stats_win *w, uint64_t now_ns)
{
	memset(w, 0, sizeof(*w));	/* histograms are fixed-size arrays: one memset */
	w->t_begin_ns = now_ns;
}

void stats__init(struct stats *s, uint64_t now_ns)
{
	win_reset(&s->win, now_ns);
	win_reset(&s->total, now_ns);
}

/* An outbound call: what the traced process waited for, kept apart from what it served. */
static void win_add_client(struct stats_win *w, const struct tt_request *r)
{
	w->client_requests++;
	if (request__is_error(r)) {
		w->client_errors++;
		return;
	}
	w->client_tokens += r->tokens;
	if (r->chunks && r->t_start_ns)
		hist__record(&w->client_ttft, r->ttft_ns);
	for (uint32_t i = 0; i + 1 < r->chunks; i++)
		hist__record(&w->client_itl, request__itl(r, i));
}

static void win_add(struct stats_win *w, const struct tt_request *r)
{
	if (r->client) {
		win_add_client(w, r);
		return;
	}
	w->requests++;
	w->stalls += r->nstalls;
	for (uint32_t i = 0; i < r->nstalls; i++)
		w->stalls_by_cause[r->stalls[i].cause]++;
	if (r->abort)
		w->aborted++;
	if (r->truncated)
		w->truncated++;
	if (r->lost)
		w->lost++;
	if (request__is_error(r)) {
		w->errors++;
		return;
	}
	w->tokens += r->tokens;
	w->chunks += r->chunks;
	if (!r->chunks)
		return;
	if (r->t_start_ns)
		hist__record(&w->ttft, r->ttft_ns);
	for (uint32_t i = 0; i + 1 < r->chunks; i++)
		hist__record(&w->itl, request__itl(r, i));
	if (r->chunks > 1)
		hist__record(&w->tpot, r->tpot_ns);
	if (r->complete && r->t_start_ns)
		hist__record(&w->e2e, r->e2e_ns);
}

void stats__add(struct stats *s, const struct tt_request *r)
{
	win_add(&s->win, r);
	win_add(&s->total, r);
}

void stats__roll(struct stats *s, uint64_t now_ns)
{
	win_reset(&s->win, now_ns);
}

const char *lost_kind_name(enum lost_kind k)
{
	/* the first four are the summary's original keys: never renamed */
	static const char *const names[LOST_NR] = {
		[LOST_RINGBUF] = "ringbuf",
		[LOST_CONN_FULL] = "conn_table_full",
		[LOST_FAULT] = "capture_faults",
		[LOST_BAD_RECORD] = "bad_records",
		[LOST_EARLY_FULL] = "early_table_full",
		[LOST_STACK] = "stacks",
		[LOST_PROG_MISS] = "probe_misses",
		[LOST_SCHED_MISS] = "sched_state_missed",
		[LOST_CONN_EVICTED] = "conns_evicted",
		[LOST_CONN_ORPHANED] = "conns_orphaned",
		[LOST_MARKERS] = "markers_unkeyed_evicted",
	};

	return (unsigned int)k < LOST_NR ? names[k] : "?";
}

uint64_t lost_total(const struct lost_counts *l)
{
	uint64_t t = 0;

	for (int i = 0; i < LOST_NR; i++)
		if (i != LOST_BAD_RECORD)	/* a recording's, not the kernel's */
			t += l->n[i];
	return t;
}
