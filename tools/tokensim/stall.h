/* SPDX-License-Identifier: MIT */
/*
 * Stall injection: make the calling thread lose exactly dur_ns in one of four
 * ways a tracer should tell apart (on CPU, asleep, blocked on a lock,
 * runnable but preempted).
 */
#ifndef TS_STALL_H
#define TS_STALL_H

#include <stdint.h>

#include "config.h"

struct stall_rec {
	uint32_t before_chunk; /* 0-based index of the delayed content event */
	enum stall_kind kind;
	enum stall_where where;
	uint64_t t_start_ns;
	uint64_t t_end_ns;
	uint64_t cause_req_num; /* engine stalls delay the whole batch: whose event caused it */
	/*
	 * CPU time the stalled thread got during it (CLOCK_THREAD_CPUTIME_ID): what really
	 * happened, whatever was meant (a contention hog that RT throttling held back lets the
	 * stalled thread spin on CPU)
	 */
	uint64_t thread_cpu_ns;
};

/* Runs one stall on the calling thread; *t0 / *t1 bracket it, *cpu its CPU time in it. */
void stall_run(enum stall_kind kind, uint64_t dur_ns, uint64_t *t0, uint64_t *t1,
	       uint64_t *cpu);

/* True if content event idx (0-based) of a response is preceded by a stall. */
static inline int stall_due(uint32_t idx)
{
	return cfg.stall_every && (idx + 1) % cfg.stall_every == 0;
}

#endif
