// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The traced set as it changes: the kernel side's process records (a fork, one found by
 * name, cgroup or port, an exec, an exit) and the Unix peers followed for their time, each
 * said on stderr, its OpenSSL probed and its interpreter looked at; then the record goes
 * into the session and the recording.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "app.h"
#include "hmap.h"
#include "loader.h"
#include "procfind.h"
#include "python.h"
#include "record.h"
#include "session.h"
#include "targets.h"
#include "util.h"

/* what a joined pid maps to: its sockets traced, or a peer followed for its time only */
static const char joined_data, joined_peer;

static bool joined_has(const struct app *a, uint32_t pid)
{
	return hmap__get(a->joined, pid) || targets__has(a->targets, pid);
}

/* data: its sockets are traced (a peer followed for its time is not) */
static void joined_add(struct app *a, uint32_t pid, bool data)
{
	if (!joined_has(a, pid))
		hmap__put(a->joined, pid, (void *)(data ? &joined_data : &joined_peer));
}

/* The traced set changed: say so on stderr (JSON lines come from the outputs). */
static void on_proc(struct app *a, const struct tt_proc_ev *e)
{
	char comm[4 * 16];

	if (e->kind == TT_PROC_THREAD_EXIT)
		return;	/* bookkeeping, not the traced set */
	esc_term(comm, sizeof(comm), e->comm, strnlen(e->comm, sizeof(e->comm)));
	switch (e->kind) {
	case TT_PROC_FORK:
	case TT_PROC_FOUND:
		joined_add(a, e->h.tgid, e->why != 4);
		/* its OpenSSL too (a fork shares its parent's files, but not its probes) */
		if (e->why != 4)
			loader__attach_process(a->loader, e->h.tgid);
		pyctl__probe(a->py, e->h.tgid);	/* a Unix peer too: vLLM's engine */
		/* a peer traced for its time does not keep the trace going by itself */
		if (e->why != 4)
			a->nprocs_live++;
		if (e->kind == TT_PROC_FORK)
			fprintf(stderr, "tokentrace: tracing PID %u (%s): forked by PID %u\n",
				e->h.tgid, comm, e->ppid);
		else
			fprintf(stderr, "tokentrace: tracing PID %u (%s): found by its %s%s\n",
				e->h.tgid, comm, target_why_name(e->why) ?: "?",
				e->why == 4 ? " (its time only, for stalls)" : "");
		break;
	case TT_PROC_EXEC:
		/* a new program: its own OpenSSL, the old one's is not its any more */
		loader__forget_process(a->loader, e->h.tgid);
		loader__attach_process(a->loader, e->h.tgid);
		fprintf(stderr, "tokentrace: PID %u runs %s now (exec), still traced\n", e->h.tgid,
			comm);
		pyctl__probe(a->py, e->h.tgid);
		break;
	case TT_PROC_EXIT:
		if (a->nprocs_live && !targets__has(a->targets, e->h.tgid) && !(e->flags == TT_TGT_SCHED))
			a->nprocs_live--;
		fprintf(stderr, "tokentrace: PID %u (%s) exited\n", e->h.tgid, comm);
		pyctl__gone(a->py, e->h.tgid);
		loader__forget_process(a->loader, e->h.tgid);
		/* gone: a later process with its PID joins afresh, and rescans skip it */
		hmap__del(a->joined, e->h.tgid);
		a->proc_exited = true;
		break;
	}
}

/*
 * A Unix socket's peer that is not traced (vLLM's engine behind the API server's ZMQ socket):
 * its threads' time is accounted from now on, so stalls can follow a wait to it. A record
 * of it goes through the session like the kernel's own, so a recording replays it.
 */
static void follow_peer(struct app *a, const struct tt_conn_ev *c)
{
	struct tt_proc_ev e = {};
	uint32_t pid = c->peer_pid;

	if (a->env.no_stalls || !pid || pid == 1 || pid == (uint32_t)getpid() || joined_has(a, pid))
		return;
	joined_add(a, pid, false);
	if (loader__add_target(a->loader, pid, TT_TGT_SCHED))
		return;	/* already traced (a fork the kernel saw) */
	e.h.type = TT_EV_PROC;
	e.h.size = sizeof(e);
	e.h.ts = c->h.ts;
	e.h.tgid = e.h.tid = pid;
	e.kind = TT_PROC_FOUND;
	e.why = 4;
	e.flags = TT_TGT_SCHED;
	procfind__comm(pid, e.comm, sizeof(e.comm));
	on_proc(a, &e);
	session__record(a->sess, &e, sizeof(e));
	if (a->rec)
		recorder__record(a->rec, &e, sizeof(e));
}

int app__on_record(void *ctx, void *data, size_t size)
{
	struct app *a = ctx;
	const struct tt_hdr *h = data;

	if (size >= sizeof(struct tt_proc_ev) && h->type == TT_EV_PROC)
		on_proc(a, data);
	session__record(a->sess, data, size);
	/* after the feed: what the session wrote out meanwhile (aux_record) comes first */
	if (a->rec)
		recorder__record(a->rec, data, size);
	if (size >= sizeof(struct tt_conn_ev) && h->type == TT_EV_CONN &&
	    (((const struct tt_conn_ev *)data)->flags & TT_CF_UNIX))
		follow_peer(a, data);
	return 0;
}

void app__rescan_tls(struct app *a)
{
	const uint32_t *pids = targets__pids(a->targets);
	uint64_t pid;
	void *what;

	for (int i = 0; i < targets__count(a->targets); i++)
		if (targets__alive(a->targets, i))
			loader__attach_process(a->loader, pids[i]);
	for (size_t it = 0; hmap__next(a->joined, &it, &pid, &what);)
		if (what == &joined_data)
			loader__attach_process(a->loader, pid);
}

int app__procs_init(struct app *a)
{
	a->joined = hmap__new(0);
	return a->joined ? 0 : -ENOMEM;
}

void app__procs_free(struct app *a)
{
	hmap__free(a->joined);
	a->joined = NULL;
}
