// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tokentrace: per-request TTFT / ITL / TPOT of a running token-streaming server, from its
 * socket traffic, with eBPF.
 *
 * main(): the command line, the targets checked, the loader and the session set up, the
 * outputs connected, then the main loop (loop.c) until it ends, the final summary, and
 * everything let go in reverse order. A replay (-r) goes through replay.c instead.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "app.h"
#include "loader.h"
#include "python.h"
#include "session.h"
#include "stall.h"
#include "symbolize.h"
#include "targets.h"
#include "util.h"

volatile sig_atomic_t exiting;

static void on_signal(int sig)
{
	if (exiting)	/* second Ctrl-C: give up on the final summary */
		_exit(130);
	exiting = sig;
}

static void ignore_conn(void *ud, uint64_t conn_id)
{
	struct app *a = ud;

	loader__ignore_conn(a->loader, conn_id);
}

/* A stall's stack, from the addresses the kernel captured, named from the process's files. */
static int stack_live(void *ud, const struct stack_ips *st, char *buf, size_t sz)
{
	struct app *a = ud;

	if (stack_ips__empty(st))
		return -1;
	if (!a->sym && !(a->sym = symbolizer__new()))
		return -1;
	if (!st->nu)
		symbolizer__format_kernel(a->sym, st->k, st->nk, TT_KSTACK_MAX, buf, sz);
	else
		symbolizer__format(a->sym, st->pid, st->u, st->nu, st->k, st->nk, buf, sz);
	return 0;
}

/* A Python frame's name, read from the live process. */
static size_t py_live(void *ud, uint32_t pid, uint64_t code, int32_t lasti, char *buf, size_t sz)
{
	struct app *a = ud;

	return pyctl__name(a->py, pid, code, lasti, buf, sz);
}

static int open_targets(struct app *a)
{
	const struct env *e = &a->env;
	struct targets_opts to = {
		.pids = e->pids,
		.npids = e->npids,
		.comms = (const char (*)[16])e->comms,
		.ncomms = e->ncomms,
		.cgroup = e->cgroup,
		/* --port with nothing else finds who serves it; else it only filters */
		.port = e->find && !e->ncomms && !e->cgroup ? e->port : 0,
		.follow = !e->no_follow,
		.force = e->force,
		.self = getpid(),
	};

	return targets__new(&to, &a->targets);
}

static int open_loader(struct app *a)
{
	const struct env *e = &a->env;
	struct loader_opts lo = {
		.pids = targets__pids(a->targets),
		.npids = targets__count(a->targets),
		.capture_bytes = e->capture_bytes,
		.ringbuf_bytes = e->ringbuf_bytes,
		.port = e->port,
		.verbose = e->verbose,
		.stalls = !e->no_stalls,
		.lazy_stalls = !e->stall_hooks_always,
		.aggregate = e->aggregate,
		.budget = e->budget,
		.markers = a->env.markers,
		.nmarkers = e->nmarkers,
		.hooks = e->hooks,
		.follow_forks = !e->no_follow,
		/* --aggregate copies no payload, TLS none either */
		.tls = !e->no_tls && !e->aggregate,
		.python_hz = e->no_stalls || e->aggregate ? 0 : e->python_hz,
		.find_comms = (const char (*)[16])e->comms,
		.nfind_comms = e->ncomms,
		.find_cgroup = targets__cgroup_id(a->targets),
		.find_port = e->find && !e->ncomms && !e->cgroup ? e->port : 0,
		/*
		 * Spans off CPU the kernel sends in full: a fifth of the smallest stall, so that
		 * every part of one worth naming arrives with its details; shorter ones are only
		 * summed.
		 */
		.span_floor_ns = MAX((e->stall_ns ? e->stall_ns : STALL_FLOOR_NS) / 5,
				     1000000ull),
	};

	return loader__open(&lo, &a->loader);
}

/* The session, and CPython's stacks for it when they are asked for. */
static int open_session(struct app *a)
{
	struct session_opts so = {
		.ignore_conn = ignore_conn,
		.ud = a,
		.stalls = !a->env.no_stalls,
		.aggregate = a->env.aggregate,
		.stall_ns = a->env.stall_ns,
		.stack_live = stack_live,
		.aux_record = app__aux_record,
	};

	if (!a->env.no_stalls && !a->env.aggregate && a->env.python_hz) {
		a->py = pyctl__new(a->loader, a->env.verbose);
		if (!a->py)
			goto oom;
		so.py_live = py_live;
		for (int i = 0; i < targets__count(a->targets); i++)
			pyctl__probe(a->py, targets__pids(a->targets)[i]);
	}
	a->sess = session__new(&so);
	if (!a->sess)
		goto oom;
	return 0;
oom:
	fprintf(stderr, "tokentrace: out of memory\n");
	return -ENOMEM;
}

/* Everything set up in order, the ready line last: 0 or -errno, said. */
static int start(struct app *a, int argc, char **argv)
{
	int err;

	if ((err = open_targets(a)) || (err = open_loader(a)) || (err = open_session(a)))
		return err;
	if ((err = app__procs_init(a))) {
		fprintf(stderr, "tokentrace: out of memory\n");
		return err;
	}
	a->rb = ring_buffer__new(loader__ringbuf_fd(a->loader), app__on_record, a, NULL);
	if (!a->rb) {
		err = -errno;
		fprintf(stderr, "tokentrace: opening the ring buffer failed: %s\n", strerror(-err));
		return err;
	}
	if (a->env.record_path && (err = app__start_recording(a, argc, argv)))
		return err;
	if ((err = app__setup_outputs(a)))
		return err;
	app__announce(a);
	return 0;
}

static int trace(struct app *a)
{
	int err = app__run(a);

	if (err)
		fprintf(stderr, "tokentrace: polling failed: %s\n", strerror(-err));
	app__harvest(a);	/* the last interval's histograms count in the total */
	app__summary(a, true);
	if (a->stdout_err && a->stdout_err != EPIPE && !err)
		err = -a->stdout_err;
	return err;
}

int main(int argc, char **argv)
{
	struct app a = {};
	int err;

	switch (env__parse(&a.env, argc, argv)) {
	case ENV_OK:
		break;
	case ENV_EXIT_OK:
		return 0;
	default:
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);

	if (a.env.replay_path) {
		err = app__replay(&a);
		session__free(a.sess);	/* the outputs' last writes: they may fail */
		return err || a.out_failed;
	}
	err = start(&a, argc, argv);
	if (!err)
		err = trace(&a);
	if (app__stop_recording(&a) && !err)
		err = -EIO;
	ring_buffer__free(a.rb);
	session__free(a.sess);
	symbolizer__free(a.sym);
	pyctl__free(a.py);
	loader__close(a.loader);
	targets__free(a.targets);
	app__procs_free(&a);
	/* an output asked for and not written (--perfetto to a full disk) is a failed run */
	return err || a.out_failed ? 1 : 0;
}
