/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Python stacks over time, from TT_EV_PYSTACK records (bpf/pystack.h): per thread a timeline
 * of CPU samples and one of the frames it blocked in, kept in bounded rings (the oldest goes
 * first, counted). Answers, for stall attribution:
 *   - which Python functions ran on threads T during [t0, t1]: the innermost frames of the
 *     samples, grouped by function, with their share of the samples;
 *   - where thread T was blocked: the Python frame of its blocking switch-out, the futex, and
 *     for a wait on the GIL the thread that held it.
 * Names come from a callback (the sys side's pysym), so this stays libc-only and replays
 * the same from canned records.
 */
#ifndef TT_PYSAMPLES_H
#define TT_PYSAMPLES_H

#include <stddef.h>
#include <stdint.h>
#include "pystack.h"

#define PYSAMPLES_KEEP		12	/* innermost frames kept per record */
#define PYSAMPLES_NAME_MAX	192
#define PYSAMPLES_STACK_MAX	512

/* "function (file.py:line)" of a frame of process pid, or "?". Returns the length. */
typedef size_t (*py_name_fn)(void *ud, uint32_t pid, uint64_t code, int32_t lasti, char *buf,
			     size_t sz);

struct pysamples;

/*
 * max_threads: threads followed (past it, the one quiet longest is forgotten, counted);
 * per_thread: samples kept per thread (at 99 Hz, 1024 is ten seconds on CPU);
 * blocked_per_thread: blocking switch-outs kept per thread. 0 for any: a default.
 */
struct pysamples *pysamples__new(uint32_t max_threads, uint32_t per_thread,
				 uint32_t blocked_per_thread);
void pysamples__free(struct pysamples *ps);

/* One record as read from the ring buffer or a recording; size: the bytes there are. */
void pysamples__record(struct pysamples *ps, const struct tt_pystack_ev *e, size_t size);

struct py_top {
	uint32_t pid;
	uint64_t code;		/* the function's code object; 0: samples with no Python frame */
	int32_t lasti;		/* its most sampled instruction, for the line */
	uint32_t samples;
	uint32_t kernel;	/* of which in the kernel (a syscall under that frame) */
	uint32_t no_gil;	/* of which without holding the GIL (C code that released it) */
	double share;		/* of all samples of the threads in the interval */
	char name[PYSAMPLES_NAME_MAX];		/* the innermost frame */
	char stack[PYSAMPLES_STACK_MAX];	/* one sample's frames, innermost first */
};

/*
 * The functions that ran on threads tids[0..n) during [t0, t1], most sampled first, up to
 * max. *total: the samples of those threads in the interval (0: nothing was sampled then;
 * the interval was not on CPU, or shorter than a tick). Returns how many were written.
 */
int pysamples__top(struct pysamples *ps, const uint32_t *tids, int n, uint64_t t0, uint64_t t1,
		   struct py_top *out, int max, uint32_t *total, py_name_fn name, void *ud);

struct py_blocked {
	uint64_t ts;
	uint32_t pid, tid;
	uint32_t sysnr;
	uint64_t futex;
	uint8_t gil;		/* enum tt_py_gil */
	uint8_t flags;		/* TT_PYF_* */
	uint8_t nframes;	/* kept, up to PYSAMPLES_KEEP */
	uint8_t depth;		/* as recorded */
	uint32_t gil_holder;	/* native tid */
	uint64_t code[PYSAMPLES_KEEP];
	int32_t lasti[PYSAMPLES_KEEP];
};

/*
 * tid's blocking switch-outs kept with t0 <= ts <= t1, and the last one before t0 (the wait
 * under way at t0), into out (pointers into the store, good until its next record), oldest
 * first; how many, at most max (the latest).
 */
size_t pysamples__blocked_in(const struct pysamples *ps, uint32_t tid, uint64_t t0, uint64_t t1,
			     const struct py_blocked **out, size_t max);

/*
 * The last blocking switch-out of tid with t0 <= ts <= t1 (a scheduler OUT record's time
 * and the moment asked about). 0, or -ENOENT.
 */
int pysamples__blocked_at(const struct pysamples *ps, uint32_t tid, uint64_t t0, uint64_t t1,
			  struct py_blocked *out);

/* Frames as "a (f.py:1) <- b (f.py:9)" through name, cut to fit. Returns the length. */
size_t pysamples__format(uint32_t pid, const uint64_t *code, const int32_t *lasti, int n,
			 py_name_fn name, void *ud, char *buf, size_t sz);

/* What a stall asks of the Python stacks (pysamples__explain). */
struct py_ask {
	const uint32_t *tids;	/* the threads of the stall's chain */
	int n;
	uint64_t t0, t1;	/* the gap */
	uint32_t btid;		/* the thread whose block the chain ends in; 0: no block to tell */
	uint64_t t_out;		/* its switch-out */
	py_name_fn name;
	void *ud;
};

/*
 * One line for a stall, for the stall's text: the Python functions that ran on q->tids
 * during [t0, t1], up to three with their share ("ran: a (f.py:3) 62%, b (g.py:9) 30%"),
 * then where thread btid was blocked at its switch-out at t_out, the block the chain
 * followed (a later block of the same thread in the gap is not it) ("; thread B blocked in
 * c (h.py:4)" or "; thread B waiting for the GIL in c (h.py:4), held by thread H, running
 * d (k.py:7)", what H's samples show it ran meanwhile). Returns the length, 0 if nothing is
 * known.
 */
size_t pysamples__explain(struct pysamples *ps, const struct py_ask *q, char *buf, size_t sz);

struct pysamples_counts {
	uint64_t samples;		/* sample records taken in */
	uint64_t blocked;		/* blocked records taken in */
	uint64_t dropped;		/* pushed out of a full ring before anyone asked */
	uint64_t threads_dropped;	/* threads forgotten for a newer one */
	uint64_t bad;			/* records too short or inconsistent: ignored */
	uint64_t nomem;			/* records not kept for want of memory */
};

void pysamples__counts(const struct pysamples *ps, struct pysamples_counts *out);

#endif /* TT_PYSAMPLES_H */
