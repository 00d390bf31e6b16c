/* SPDX-License-Identifier: MIT */
/*
 * The ground truth: one JSON line per finished response, written and
 * flushed when the response ends, so a test can read it while tokensim runs.
 */
#ifndef TS_TRUTH_H
#define TS_TRUTH_H

#include <stdbool.h>
#include <stdint.h>

#include "stall.h"

struct truth {
	const char *request_id;
	uint64_t req_num;
	uint64_t conn_num;
	const char *method;
	const char *path;
	const char *format;
	bool stream;
	unsigned status;
	const char *model;
	uint64_t t_accept_call_ns;
	uint64_t t_accept_ns;
	uint64_t t_start_ns;
	uint64_t t_headers_ns; /* just before the send of the response headers */
	uint64_t t_admit_ns;   /* 0: never admitted by the engine */
	uint64_t t_admit_end_ns; /* right after the admit marker's call */
	uint64_t t_first_end_ns; /* right after the first content event's token marker call */
	const uint64_t *t_produced_ns;
	uint32_t n_produced;
	const uint64_t *t_token_ns; /* chunks entries */
	const uint64_t *t_token_end_ns; /* chunks entries: right after each of those sends */
	uint64_t t_end_ns;
	uint32_t chunks;
	uint32_t tokens;
	uint32_t tool_frames;
	uint32_t prompt_tokens;
	uint32_t heartbeats;
	bool count_on_wire; /* the stream carries the model-token count */
	bool aborted;
	const struct stall_rec *stalls;
	uint32_t nstalls;
};

/* Opens --truth FILE (NULL: no truth file). Returns -errno. */
int truth_open(const char *path);
void truth_write(const struct truth *t);
void truth_close(void);

#endif
