/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The processes a trace starts with: the PIDs given (-p), the ones found by name, cgroup or
 * port (procfind.h), and the children of the given ones, each checked before anything is
 * loaded (a typo attaches nothing) and watched by a pidfd until it exits. What a PID must
 * be: a live user-space process, given by its own PID; PID 1 and kernel threads only with
 * force. A given PID that fails is an error said in one line; a found one is left out.
 */
#ifndef TT_TARGETS_H
#define TT_TARGETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TARGETS_MAX	1024	/* TT_MAX_TARGETS */

struct targets_opts {
	const uint32_t *pids;		/* -p */
	int npids;
	const char (*comms)[16];	/* --comm */
	int ncomms;
	const char *cgroup;		/* --cgroup */
	uint16_t port;			/* --port with nothing else: who serves it */
	bool follow;			/* the given PIDs' children too */
	bool force;			/* PID 1, kernel threads */
	uint32_t self;			/* never found: tokentrace itself */
};

struct targets;

/* Found and checked: 0, or -errno said in one line (no such PID, one refused, /proc). */
int targets__new(const struct targets_opts *o, struct targets **out);
void targets__free(struct targets *t);

int targets__count(const struct targets *t);
const uint32_t *targets__pids(const struct targets *t);
/* The name of the i-th, as it was when it was checked (untrusted: escape it to print). */
const char *targets__comm(const struct targets *t, int i);
/* The i-th has not been seen exiting yet. */
bool targets__alive(const struct targets *t, int i);
/* pid is one of them (given, found or a child at start) */
bool targets__has(const struct targets *t, uint32_t pid);
/* pid was given with -p */
bool targets__listed(const struct targets *t, uint32_t pid);
/* --cgroup's cgroup v2 id, 0 without */
uint64_t targets__cgroup_id(const struct targets *t);

/* Their pidfds into epfd (EPOLLIN: exited). */
void targets__watch(const struct targets *t, int epfd);
/* Those that exited since the last look, each said and let go: true when none is left. */
bool targets__reap(struct targets *t, int epfd);

/* Is NAME a process name --comm can match (1 to 15 bytes, as in /proc/PID/comm)? */
bool targets__comm_ok(const char *name);

#endif /* TT_TARGETS_H */
