/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stalls: which gaps between two tokens count as one, and where the time of one went.
 *
 * A gap over stall_ns, or when stall_ns is 0 over max(STALL_FACTOR x the stream's running
 * median gap, STALL_FLOOR_NS), is a stall. Its time is accounted from the scheduler records
 * of the threads that serve the stream (sched_book.h): the thread the stream waited for first
 * (the engine, when token markers say the token was made late), then the one that ended the
 * gap with its send, then the others that sent for the response.
 */
#ifndef TT_STALL_H
#define TT_STALL_H

#include <stddef.h>
#include <stdint.h>
#include "request.h"

#define STALL_FACTOR	5
#define STALL_FLOOR_NS	50000000ull	/* 50 ms: below, a pause is not one a reader sees */
#define STALL_WINDOW	32		/* gaps the running median looks back on */

/* The gap above which the stream's next one is a stall (stall_ns 0: the adaptive rule). */
uint64_t stall__threshold(const struct tt_request *r, uint64_t stall_ns);

/*
 * The text of a stack (kernel and user stack ids of a process) into buf when it is known
 * now; false when it will be resolved later (the stall keeps the ids, stack_pending).
 */
typedef bool (*stack_str_fn)(void *ud, uint32_t pid, int32_t kstack, int32_t ustack,
			     char *buf, size_t sz);

struct sched_book;

/* What the connection knew of TCP trouble, for the gap. */
struct stall_net {
	const uint64_t *retrans;	/* times of recent retransmits */
	uint32_t nretrans;
	uint64_t zw_from, zw_to;	/* the last zero-window spell; zw_to 0: still zero */
};

/*
 * The gap [t0, t1] before r's next chunk is a stall, ended by a send of thread ender_tid:
 * append it to r->stalls with its parts, cause, stack and TCP trouble. -ENOMEM if it could
 * not be kept.
 */
int stall__explain(struct tt_request *r, struct sched_book *sb, uint32_t ender_tid,
		   uint64_t t0, uint64_t t1, const struct stall_net *net, stack_str_fn stack_str,
		   void *stack_ud);

#endif /* TT_STALL_H */
