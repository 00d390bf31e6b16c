// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Stall detection and explanation. See stall.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "sched_book.h"
#include "stall.h"
#include "util.h"

uint64_t stall__threshold(const struct tt_request *r, uint64_t stall_ns)
{
	uint64_t gaps[STALL_WINDOW], med = 0;
	uint32_t n = 0;

	if (stall_ns)
		return stall_ns;
	for (uint32_t i = r->chunks ? r->chunks - 1 : 0; i > 0 && n < STALL_WINDOW; i--)
		gaps[n++] = r->tok_ns[i] - r->tok_ns[i - 1];
	if (n) {
		qsort(gaps, n, sizeof(*gaps), cmp_u64);
		med = gaps[n / 2];
	}
	return MAX(STALL_FACTOR * med, STALL_FLOOR_NS);
}

static void add_tid(uint32_t *v, int *n, int max, uint32_t tid)
{
	for (int i = 0; i < *n; i++)
		if (v[i] == tid)
			return;
	if (*n < max)
		v[(*n)++] = tid;
}

int stall__explain(struct tt_request *r, struct sched_book *sb, uint32_t ender_tid,
		   uint64_t t0, uint64_t t1, const struct stall_net *net, stack_str_fn stack_str,
		   void *stack_ud)
{
	uint32_t tids[8];
	int n = 0;
	struct sched_account acc;
	struct tt_stall *st;

	if (r->nstalls == r->stalls_cap) {
		uint32_t cap = r->stalls_cap ? r->stalls_cap * 2 : 4;
		struct tt_stall *v = realloc(r->stalls, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->stalls = v;
		r->stalls_cap = cap;
	}
	st = &r->stalls[r->nstalls++];
	memset(st, 0, sizeof(*st));
	st->after_chunk = r->chunks - 1;
	st->t_begin_ns = t0;
	st->t_end_ns = t1;

	/*
	 * With token markers: was the token made late (the engine), or made in time and sent
	 * late (the front end)? The chunk being added is token r->chunks.
	 */
	st->engine_late = -1;
	if (r->nmade > r->chunks) {
		uint64_t made = r->made_ns[r->chunks];

		st->engine_late = made > t0 && made - t0 > (t1 - t0) / 2;
	}
	/*
	 * The first thread's blocks name the cause: the one the stream waited for, the engine
	 * when it made the token late, else the thread that ended the gap with its send.
	 */
	if (st->engine_late == 1 && r->made_tid)
		add_tid(tids, &n, ARRAY_SIZE(tids), r->made_tid);
	add_tid(tids, &n, ARRAY_SIZE(tids), ender_tid);
	for (uint32_t i = 0; i < r->nsenders; i++)
		add_tid(tids, &n, ARRAY_SIZE(tids), r->senders[i]);
	if (r->made_tid)
		add_tid(tids, &n, ARRAY_SIZE(tids), r->made_tid);
	sched_book__account(sb, tids, n, t0, t1, &acc);
	memcpy(st->part_ns, acc.part_ns, sizeof(st->part_ns));
	st->cause = STALL_UNKNOWN;
	for (int i = 0; i < STALL_NR; i++)
		if (st->part_ns[i] > st->part_ns[st->cause])
			st->cause = i;
	st->stack_pid = r->pid;
	st->kstack = acc.kstack;
	st->ustack = acc.ustack;
	if (stack_str && (acc.kstack >= 0 || acc.ustack >= 0))
		st->stack_pending = !stack_str(stack_ud, r->pid, acc.kstack, acc.ustack, st->stack,
					       sizeof(st->stack));

	if (net) {
		for (uint32_t i = 0; i < net->nretrans; i++)
			if (net->retrans[i] >= t0 && net->retrans[i] <= t1)
				st->retransmits++;
		st->zero_window = net->zw_from && net->zw_from < t1 &&
				  (!net->zw_to || net->zw_to > t0);
	}
	return 0;
}
