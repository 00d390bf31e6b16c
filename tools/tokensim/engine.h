/* SPDX-License-Identifier: MIT */
/*
 * The engine: one scheduler thread with --max-batch slots, shaped like
 * vLLM's engine core.  A front end submits a request; the engine admits it
 * when a slot is free (FIFO), prefills for --ttft-ms, then produces one
 * event every --itl-ms and hands each to the front end through the
 * request's own mutex and condition variable.
 */
#ifndef TS_ENGINE_H
#define TS_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "stall.h"

#define TS_RID_MAX 128

enum ev_kind { EV_TOOL, EV_CONTENT };

/* One engine output: a tool-call frame or a content event of ntok tokens. */
struct ts_event {
	enum ev_kind kind;
	uint32_t index;	    /* 0-based among events of its kind */
	uint32_t first_tok; /* content: number of its first token in the response */
	uint32_t ntok;	    /* content: tokens it carries (>= 1) */
	uint64_t t_produced;
};

struct ts_req {
	/* Set by req_new(), read-only afterwards. */
	uint64_t req_num;
	char rid[TS_RID_MAX + 1];
	uint32_t n_tool;
	uint32_t n_content;
	uint32_t max_tokens;

	/* Engine -> front end, under mu; cv uses CLOCK_MONOTONIC (heartbeat waits). */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct ts_event *ev; /* n_tool tool frames then n_content content events */
	uint32_t produced;   /* ev[0..produced) are out */
	bool done;	     /* the engine will not touch ev again */
	bool dropped;	     /* done before the end: cancelled, or the server stops */
	uint64_t t_admit;    /* 0 until admitted */
	/* right after the admit marker, and after the first content event's token marker: a
	 * marker's truth is the interval from its clock read to there (a preemption can fall
	 * between the two) */
	uint64_t t_admit_end;
	uint64_t t_first_end;
	struct stall_rec *stalls;
	uint32_t nstalls;

	/* Front end -> engine. */
	atomic_bool cancelled; /* the client went away: free the slot */
	atomic_int refs;
	struct ts_req *next; /* engine FIFO link */
};

/* n_tool tool-call frames come before the ceil(max_tokens / --tokens-per-event) content events. */
struct ts_req *req_new(uint64_t req_num, const char *rid, uint32_t max_tokens, uint32_t n_tool);
void req_put(struct ts_req *r);
/* Appends a stall record (either thread may call it). */
void req_add_stall(struct ts_req *r, const struct stall_rec *s);

int engine_start(void);
/* Queues r for admission; takes a reference for the engine. */
void engine_submit(struct ts_req *r);
/* Stops the engine: every request still queued or running is dropped. */
void engine_stop(void);

#endif
