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
#include "stack.h"
#include "pysamples.h"

#define STALL_FACTOR	5
#define STALL_FLOOR_NS	50000000ull	/* 50 ms: below, a pause is not one a reader sees */
#define STALL_WINDOW	32		/* gaps the running median looks back on */
/*
 * --stall-hooks lazy: a stream's scheduler hooks go on once its gap is a quarter of its
 * threshold (12.5 ms by default): what a stall's first quarter at most was is not known.
 */
#define STALL_ARM_DIV	4

/* The gap above which the stream's next one is a stall (stall_ns 0: the adaptive rule). */
uint64_t stall__threshold(const struct tt_request *r, uint64_t stall_ns);

struct sched_book;

/* What the explanation may ask of the rest of the program; every callback is optional. */
struct stall_env {
	struct sched_book *sb;
	/* stack texts (stack.h): kernel-only ones (how a waker woke) are given at once */
	stack_str_fn stack_str;
	void *stack_ud;
	/*
	 * CPython's stacks (pysamples.h): what Python code ran on a thread, where it blocked,
	 * and whether a futex it waited on was the GIL; names through py_name.
	 */
	struct pysamples *ps;
	py_name_fn py_name;
	void *py_ud;
	/* the comm of a process, "" if unknown */
	const char *(*comm_of)(void *ud, uint32_t pid);
	void *comm_ud;
};

#define STALL_FLOW_SPANS	8

/*
 * HTTP/2: the last spells during which the server's send window (a stream's or the
 * connection's) was used up: from the DATA frame that emptied it to the WINDOW_UPDATE that
 * opened it again (to 0: still closed). Only windows known from their start are kept.
 */
struct stall_flow {
	uint64_t from[STALL_FLOW_SPANS], to[STALL_FLOW_SPANS];
	uint32_t n;			/* spells begun; the last STALL_FLOW_SPANS are kept */
	bool open;			/* the last one is not over */
};

/* A window was used up at ts / opened again at ts. */
void stall_flow__blocked(struct stall_flow *f, uint64_t ts);
void stall_flow__opened(struct stall_flow *f, uint64_t ts);

/* What the connection knew of TCP trouble, and of HTTP/2 flow control, for the gap. */
struct stall_net {
	const uint64_t *retrans;	/* times of recent retransmits */
	uint32_t nretrans;
	uint64_t zw_from, zw_to;	/* the last zero-window spell; zw_to 0: still zero */
	/* by enum stall_flow_window: the stream's and the connection's, NULL if none */
	const struct stall_flow *flow[3];
};

/*
 * The gap [t0, t1] before r's next chunk is a stall, ended by a send of thread ender_tid:
 * append it to r->stalls, explained. The thread the stream waited for (the engine when token
 * markers say the token was made late, else the sender) is accounted over the gap. Idle is
 * not a cause: when it sat in its event loop's wait or on a lock and a traced thread woke it,
 * that thread is followed (up to two hops) and the idle time is what that thread did
 * meanwhile; a wait ended by a timer or the network is idle time, waiting for that. -ENOMEM
 * if it could not be kept.
 */
int stall__explain(struct tt_request *r, const struct stall_env *env, uint32_t ender_tid,
		   uint64_t t0, uint64_t t1, const struct stall_net *net);

/* How a waker woke a thread, from the text of its kernel stack ("fn <- fn ..."). */
enum wake_kind stall__wake_kind(const char *kstack_text, bool *from_irq);

#endif /* TT_STALL_H */
