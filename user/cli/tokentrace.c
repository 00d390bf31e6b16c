// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tokentrace: per-request TTFT / ITL / TPOT of a running token-streaming server, from its
 * socket traffic, with eBPF.
 *
 * The main loop: drain the ring buffer into the correlator on a short timer (the kernel side
 * wakes us only when the ring fills up: a wakeup per record would cost more than the record),
 * print summaries on the interval, stop on a signal or when every target has exited.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "aggregate.h"
#include "env.h"
#include "loader.h"
#include "outputs.h"
#include "record.h"
#include "session.h"
#include "procfind.h"
#include "python.h"
#include "stall.h"
#include "symbolize.h"
#include "util.h"

#define POLL_MS		20	/* bounds how late a finished request is printed */

static volatile sig_atomic_t exiting;

static void on_signal(int sig)
{
	if (exiting)	/* second Ctrl-C: give up on the final summary */
		_exit(130);
	exiting = sig;
}

struct app {
	struct env env;
	struct agg_totals agg_prev;	/* --aggregate: the kernel's totals at the last summary */
	struct symbolizer *sym;
	struct loader *loader;
	struct pyctl *py;		/* CPython processes' stacks, for stalls */
	struct session *sess;
	struct ring_buffer *rb;
	uint64_t arm_at, arm_scan_next;	/* stall_hooks(): the streams' moment, and its scan */
	bool hooks_failure_told;
	struct recorder *rec;		/* -w: the session's inputs, as they were fed */
	bool rec_failed;
	bool out_failed;		/* an output (--perfetto) could not write: exit 1 */
	bool announced;
	int stdout_err;			/* errno of the first failed write to stdout */
	int pidfd[ENV_PIDS_MAX];
	bool pid_alive[ENV_PIDS_MAX];
	char comm[ENV_PIDS_MAX][16];
	/* processes traced since the start: children, found ones, Unix peers (time only) */
	uint32_t *joined;
	size_t njoined, joined_cap;
	uint64_t nprocs_live;		/* traced processes alive that joined since the start */
	uint64_t cgroup_id;		/* --cgroup */
	int nlisted;			/* pids[] given with -p; the ones after were found */
	char cgroup_rel[256];
};

static void ignore_conn(void *ud, uint64_t conn_id)
{
	struct app *a = ud;

	loader__ignore_conn(a->loader, conn_id);
}

/* A stall's longest block: its stacks, read from the kernel's map while they are there. */
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

static int read_comm(uint32_t pid, char *buf, size_t sz);

static bool listed(const struct app *a, uint32_t pid)
{
	for (int i = 0; i < a->env.npids; i++)
		if (a->env.pids[i] == pid)
			return true;
	return false;
}

static bool joined_has(const struct app *a, uint32_t pid)
{
	for (size_t i = 0; i < a->njoined; i++)
		if (a->joined[i] == pid)
			return true;
	for (int i = 0; i < a->env.npids; i++)
		if (a->env.pids[i] == pid)
			return true;
	return false;
}

static void joined_add(struct app *a, uint32_t pid)
{
	uint32_t *v;

	if (joined_has(a, pid))
		return;
	if (a->njoined == a->joined_cap) {
		size_t cap = a->joined_cap ? a->joined_cap * 2 : 64;

		v = realloc(a->joined, cap * sizeof(*v));
		if (!v)
			return;
		a->joined = v;
		a->joined_cap = cap;
	}
	a->joined[a->njoined++] = pid;
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
		joined_add(a, e->h.tgid);
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
		/* a new program: its own OpenSSL, the old one's probes went with its memory */
		loader__attach_process(a->loader, e->h.tgid);
		fprintf(stderr, "tokentrace: PID %u runs %s now (exec), still traced\n", e->h.tgid,
			comm);
		pyctl__probe(a->py, e->h.tgid);
		break;
	case TT_PROC_EXIT:
		if (a->nprocs_live && !listed(a, e->h.tgid) && !(e->flags == TT_TGT_SCHED))
			a->nprocs_live--;
		fprintf(stderr, "tokentrace: PID %u (%s) exited\n", e->h.tgid, comm);
		pyctl__gone(a->py, e->h.tgid);
		loader__forget_process(a->loader, e->h.tgid);
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
	joined_add(a, pid);
	if (loader__add_target(a->loader, pid, TT_TGT_SCHED))
		return;	/* already traced (a fork the kernel saw) */
	e.h.type = TT_EV_PROC;
	e.h.size = sizeof(e);
	e.h.ts = c->h.ts;
	e.h.tgid = e.h.tid = pid;
	e.kind = TT_PROC_FOUND;
	e.why = 4;
	e.flags = TT_TGT_SCHED;
	read_comm(pid, e.comm, sizeof(e.comm));
	on_proc(a, &e);
	session__record(a->sess, &e, sizeof(e));
	if (a->rec)
		recorder__record(a->rec, &e, sizeof(e));
}

static int on_record(void *ctx, void *data, size_t size)
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

/* A record the session made (a stack's text), for the recording: before the one needing it */
static void aux_record(void *ud, const void *rec, size_t size)
{
	struct app *a = ud;

	if (a->rec)
		recorder__record(a->rec, rec, size);
}

static int read_comm(uint32_t pid, char *buf, size_t sz)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (!fgets(buf, sz, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* A target whose pidfd is readable has exited, reaped or not: a zombie counts as gone. */
static bool pidfd_exited(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return poll(&p, 1, 0) > 0;
}

/*
 * What a PID must be to be traced: a live user-space process, given by its own PID. PID 1
 * (every service's parent: its sockets are the host's) and kernel threads (no user-space
 * sockets to trace) only with --force. False, with the reason, to refuse.
 */
static bool target_ok(uint32_t pid, bool force, char *why, size_t sz)
{
	char path[64], buf[512], *p;
	unsigned long flags = 0;
	uint32_t tgid = pid;
	char state = '?';
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return true;	/* gone, or hidden: kill() and pidfd_open() say which */
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	/* comm may hold spaces and parentheses: the fields start after the last ')' */
	if (p && (p = strrchr(buf, ')')))
		sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags);
	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	while (f && fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "Tgid: %u", &tgid) == 1)
			break;
	if (f)
		fclose(f);
	if (state == 'Z' || state == 'X')
		snprintf(why, sz, "has exited (a zombie its parent has not reaped): nothing to "
			 "trace");
	else if (tgid != pid)
		snprintf(why, sz, "is a thread of process %u: give -p %u", tgid, tgid);
	else if ((flags & 0x00200000) && !force)	/* PF_KTHREAD */
		snprintf(why, sz, "is a kernel thread: it has no user-space sockets to trace "
			 "(--force to try anyway)");
	else if (pid == 1 && !force)
		snprintf(why, sz, "is init: every service on the host is its child, not what it "
			 "serves (--force to trace it anyway)");
	else
		return true;
	return false;
}

/*
 * --comm, --cgroup, --port alone: the processes that match now (the kernel side adds the
 * ones that come later). None is not an error: they may come.
 */
static int find_targets(struct app *a)
{
	struct procfind q = {
		.comms = (const char (*)[16])a->env.comms,
		.ncomms = a->env.ncomms,
		.port = !a->env.ncomms && !a->env.cgroup ? a->env.port : 0,
	};
	uint32_t found[ENV_PIDS_MAX];
	int n, err;

	if (a->env.cgroup) {
		err = procfind__cgroup(a->env.cgroup, &a->cgroup_id, a->cgroup_rel,
				       sizeof(a->cgroup_rel));
		if (err)
			return err;
		q.cgroup_id = a->cgroup_id;
		q.cgroup_rel = a->cgroup_rel;
	}
	n = procfind__scan(&q, getpid(), found, ENV_PIDS_MAX);
	if (n < 0) {
		fprintf(stderr, "tokentrace: looking for processes in /proc failed: %s\n",
			strerror(-n));
		return n;
	}
	a->nlisted = a->env.npids;
	for (int i = 0; i < MIN(n, ENV_PIDS_MAX) && a->env.npids < ENV_PIDS_MAX; i++) {
		bool dup = false;

		for (int j = 0; j < a->env.npids; j++)
			dup |= a->env.pids[j] == found[i];
		if (!dup)
			a->env.pids[a->env.npids++] = found[i];
	}
	if (n > ENV_PIDS_MAX)
		fprintf(stderr, "tokentrace: %d processes match, tracing the first %d\n", n,
			ENV_PIDS_MAX);
	if (a->env.npids == a->nlisted)
		fprintf(stderr, "tokentrace: no process matches yet: waiting for one\n");
	return 0;
}

static int add_descendants(struct app *a)
{
	uint32_t kids[ENV_PIDS_MAX];
	int n = procfind__descendants(a->env.pids, a->nlisted, kids, ENV_PIDS_MAX);

	if (n < 0) {
		fprintf(stderr, "tokentrace: looking for the children of the targets failed: %s\n",
			strerror(-n));
		return n;
	}
	for (int i = 0; i < n && a->env.npids < ENV_PIDS_MAX; i++) {
		bool dup = false;

		for (int j = 0; j < a->env.npids; j++)
			dup |= a->env.pids[j] == kids[i];
		if (!dup)
			a->env.pids[a->env.npids++] = kids[i];
	}
	if (n)
		fprintf(stderr, "tokentrace: %d child process%s of the given PIDs traced too "
			"(--no-follow: not)\n", n, n == 1 ? "" : "es");
	return 0;
}

/*
 * Every target must exist before anything is loaded: a typo should not attach anything.
 * A found one that cannot be traced (it exited meanwhile, a zombie) is left out instead.
 */
static int check_targets(struct app *a, int from)
{
	for (int i = from; i < a->env.npids; i++) {
		uint32_t pid = a->env.pids[i];
		char comm[4 * 16], why[160];
		bool found = i >= a->nlisted;	/* found by name, cgroup, port, or a child */

		if (kill(pid, 0) && errno == ESRCH) {
			if (found)
				goto drop;
			fprintf(stderr, "tokentrace: no process with PID %u\n", pid);
			return -ESRCH;
		}
		read_comm(pid, a->comm[i], sizeof(a->comm[i]));
		/* a process names itself: as untrusted as its traffic */
		esc_term(comm, sizeof(comm), a->comm[i], strnlen(a->comm[i], sizeof(a->comm[i])));
		if (!target_ok(pid, a->env.force, why, sizeof(why))) {
			if (found)
				goto drop;
			fprintf(stderr, "tokentrace: PID %u (%s) %s\n", pid, comm, why);
			return -EINVAL;
		}
		a->pidfd[i] = syscall(SYS_pidfd_open, pid, 0);
		if (a->pidfd[i] < 0) {
			fprintf(stderr, "tokentrace: cannot watch PID %u: %s\n", pid, strerror(errno));
			return -errno;
		}
		if (pidfd_exited(a->pidfd[i])) {
			close(a->pidfd[i]);
			a->pidfd[i] = -1;
			if (found)
				goto drop;
			fprintf(stderr, "tokentrace: PID %u (%s) has exited: nothing to trace\n",
				pid, comm);
			return -ESRCH;
		}
		a->pid_alive[i] = true;
		continue;
drop:
		/* the last one takes its place; look at it next */
		a->env.pids[i] = a->env.pids[--a->env.npids];
		i--;
	}
	return 0;
}

/* --aggregate: what the kernel's histograms gained since the last summary */
static void harvest(struct app *a)
{
	struct agg_totals now, d;

	if (!a->env.aggregate || loader__agg_read(a->loader, &now))
		return;
	agg__delta(&now, &a->agg_prev, &d);
	session__aggregate(a->sess, &d);
	a->agg_prev = now;
}

static void summary(struct app *a, bool final)
{
	uint64_t k[TT_STAT_NR] = {}, now;
	struct stall_hook_stats sh;

	if (!final)
		harvest(a);
	loader__read_stats(a->loader, k);
	now = now_mono_ns();
	loader__stall_hook_stats(a->loader, &sh);
	session__stall_hooks(a->sess, &sh);
	session__tick(a->sess, now, k, final);
	if (a->rec)
		recorder__tick(a->rec, now, k, &sh, final);
}

static void announce(struct app *a)
{
	struct ready_info ri = {
		.t_ns = now_mono_ns(),
		.npids = MIN(a->env.npids, READY_PIDS_MAX),
		.npids_total = a->env.npids,
		.probes = loader__nr_probes(a->loader),
		.capture_bytes = a->env.capture_bytes,
		.ringbuf_bytes = a->env.ringbuf_bytes,
	};
	char comm[4 * 16];

	for (int i = 0; i < a->env.npids && i < READY_PIDS_MAX; i++) {
		ri.pids[i] = a->env.pids[i];
		memcpy(ri.comms[i], a->comm[i], sizeof(ri.comms[i]));
	}
	const struct loader_choice *ch = loader__choice(a->loader);

	snprintf(ri.hooks, sizeof(ri.hooks),
		 "data=%s ready=%s sched=%s sys=%s loop=%s tls=%d python=%d",
		 hook_family_name(ch->data), ch->ready, ch->sched, ch->sys, ch->loop ? "yes" : "no",
		 ch->tls_probes, pyctl__nprocs(a->py));
	for (int i = 0; i < a->env.nmarkers; i++)
		ri.marker_kind[i] = a->env.markers[i].kind;
	ri.nmarkers = a->env.nmarkers;
	session__ready(a->sess, &ri);
	if (a->rec)
		recorder__ready(a->rec, &ri);
	a->announced = true;
	esc_term(comm, sizeof(comm), a->comm[0], strnlen(a->comm[0], sizeof(a->comm[0])));
	fprintf(stderr, "tokentrace: attached to PID %u (%s)%s: %d probes (%s), capture %u KiB, "
		"ring buffer %u MiB. Ctrl-C to stop.\n", a->env.pids[0], comm,
		a->env.npids > 1 ? " and others" : "", ri.probes, ri.hooks,
		a->env.capture_bytes >> 10, a->env.ringbuf_bytes >> 20);
}

static int add_output(struct app *a, int (*make)(struct output *, const struct output_opts *),
		      const struct output_opts *oo)
{
	struct output o;
	int err = make(&o, oo);

	if (err)
		return err;	/* the output said why */
	if (session__add_output(a->sess, &o)) {
		o.ops->free(o.priv);
		fprintf(stderr, "tokentrace: too many outputs\n");
		return -E2BIG;
	}
	return 0;
}

static int setup_outputs(struct app *a)
{
	struct output_opts oo = {
		.f = stdout,
		.quiet = a->env.quiet,
		.color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR"),
		.live = session__live_view(a->sess),
		.addr = a->env.metrics_addr,
		.path = a->env.perfetto_path,
		.stall_ns = a->env.stall_ns,
		.show_query = a->env.show_query,
		.force = a->env.force,
		.failed = &a->out_failed,
	};
	int err;

	if (a->env.metrics_addr && (err = add_output(a, output_metrics__new, &oo)))
		return err;
	if (a->env.perfetto_path && (err = add_output(a, output_perfetto__new, &oo)))
		return err;
	/* stdout's: --top last, its screen comes up once the rest is in place */
	if (a->env.top)
		return add_output(a, output_top__new, &oo);
	return add_output(a, a->env.json ? output_json__new : output_text__new, &oo);
}

/* -w: the header says what was traced, where, and how */
static int start_recording(struct app *a, int argc, char **argv)
{
	struct rec_header h = {
		.t_begin_ns = now_mono_ns(),
		.capture_bytes = a->env.capture_bytes,
		.ringbuf_bytes = a->env.ringbuf_bytes,
		.port = a->env.port,
		.npids = MIN(a->env.npids, READY_PIDS_MAX),
		.stalls = !a->env.no_stalls,
		.stall_ns = a->env.stall_ns,
	};
	char why[256], q[ARG_QUOTE_MAX];
	size_t n = 0;
	int err;

	for (int i = 0; i < h.npids; i++)
		h.pids[i] = a->env.pids[i];
	for (int i = 0; i < argc && n < sizeof(h.cmdline) - 1; i++)
		n += snprintf(h.cmdline + n, sizeof(h.cmdline) - n, "%s%s", i ? " " : "", argv[i]);
	err = recorder__open(a->env.record_path, a->env.force ? REC_FORCE : 0, &h, &a->rec, why,
			     sizeof(why));
	if (err)
		fprintf(stderr, "tokentrace: -w %s: %s\n", arg_quote(q, a->env.record_path), why);
	return err;
}

static void record_flush(struct app *a)
{
	char q[ARG_QUOTE_MAX];
	int err;

	if (!a->rec || a->rec_failed || !(err = recorder__flush(a->rec)))
		return;
	fprintf(stderr, "tokentrace: -w %s: write failed: %s; the recording stops here\n",
		arg_quote(q, a->env.record_path), strerror(-err));
	a->rec_failed = true;
}

static int stop_recording(struct app *a)
{
	char q[ARG_QUOTE_MAX];
	int err;

	if (!a->rec)
		return 0;
	if (!a->announced) {	/* nothing was traced: leave no empty recording behind */
		recorder__discard(a->rec);
		a->rec = NULL;
		return 0;
	}
	err = recorder__close(a->rec);
	a->rec = NULL;
	if (err && !a->rec_failed)
		fprintf(stderr, "tokentrace: -w %s: write failed: %s\n",
			arg_quote(q, a->env.record_path), strerror(-err));
	return err;
}

/*
 * stdout could not be written: the reader went away (a closed pipe, SIGPIPE is ignored: stop
 * quietly) or a real failure (said once). True when output should stop.
 */
static bool stdout_failed(struct app *a)
{
	if (!ferror(stdout))
		return false;
	if (!a->stdout_err) {
		a->stdout_err = errno ? errno : EIO;
		if (a->stdout_err != EPIPE)
			fprintf(stderr, "tokentrace: writing stdout failed: %s\n",
				strerror(a->stdout_err));
	}
	return true;
}

/*
 * -r: the recording's inputs into a session, in order, with no BPF and no clock: the outputs
 * print what they printed live.
 */
static int replay(struct app *a)
{
	struct session_opts so = {};
	const struct rec_header *h;
	struct rec_reader *r;
	struct rec_entry e;
	char msg[256], when[32], q[ARG_QUOTE_MAX];
	const char *path = a->env.replay_path;
	int rc;

	rc = rec_reader__open(path, &r, msg, sizeof(msg));
	if (rc) {
		fprintf(stderr, "tokentrace: %s: %s\n", arg_quote(q, path), msg);
		return 1;
	}
	h = rec_reader__header(r);
	/* wall-clock times print as they did live; the session runs as it did live */
	set_wall_offset(h->wall_offset_ns);
	so.stalls = h->stalls;
	so.stall_ns = h->stall_ns;
	a->sess = session__new(&so);
	if (!a->sess) {
		fprintf(stderr, "tokentrace: out of memory\n");
		rec_reader__free(r);
		return 1;
	}
	if (setup_outputs(a)) {
		rec_reader__free(r);
		return 1;
	}
	while (!exiting && (rc = rec_reader__next(r, &e)) > 0) {
		switch (e.type) {
		case REC_READY: {
			/* a recording may come from anywhere: its strings are escaped */
			char comm[4 * 16], kern[4 * 65], mach[4 * 65], ver[4 * 33];

			fmt_clock(when, sizeof(when), h->t_begin_ns);
			esc_term(comm, sizeof(comm), e.ready.comms[0],
				 strnlen(e.ready.comms[0], sizeof(e.ready.comms[0])));
			esc_term(kern, sizeof(kern), h->kernel, strlen(h->kernel));
			esc_term(mach, sizeof(mach), h->machine, strlen(h->machine));
			esc_term(ver, sizeof(ver), h->tt_version, strlen(h->tt_version));
			fprintf(stderr, "tokentrace: replaying %s: PID %u (%s)%s, recorded at %s "
				"on Linux %s %s by tokentrace %s\n", arg_quote(q, path),
				e.ready.pids[0], comm, e.ready.npids > 1 ? " and others" : "", when,
				kern, mach, ver);
			session__ready(a->sess, &e.ready);
			break;
		}
		case REC_RECORD:
			session__record(a->sess, e.data, e.size);
			break;
		case REC_TICK:
			session__stall_hooks(a->sess, &e.hooks);
			session__tick(a->sess, e.now_ns, e.kstats, e.final);
			session__flush(a->sess);
			break;
		default:
			break;
		}
		if (stdout_failed(a))
			break;
	}
	session__drain(a->sess, true);
	session__flush(a->sess);
	stdout_failed(a);
	if (rc < 0 && !a->stdout_err)
		fprintf(stderr, "tokentrace: %s: %s\n", arg_quote(q, path), rec_reader__error(r));
	rc = (rc < 0 && !a->stdout_err) || exiting || (a->stdout_err && a->stdout_err != EPIPE);
	rec_reader__free(r);
	return rc;
}

/* Returns true when every target has exited. */
static bool reap_targets(struct app *a, int epfd)
{
	bool any = false;

	for (int i = 0; i < a->env.npids; i++) {
		if (!a->pid_alive[i])
			continue;
		/* a readable pidfd: exited, also as a zombie that kill() still finds */
		if (pidfd_exited(a->pidfd[i]) || (kill(a->env.pids[i], 0) && errno == ESRCH)) {
			a->pid_alive[i] = false;
			epoll_ctl(epfd, EPOLL_CTL_DEL, a->pidfd[i], NULL);
			fprintf(stderr, "tokentrace: PID %u exited\n", a->env.pids[i]);
			continue;
		}
		any = true;
	}
	return !any;
}

#define EXPIRE_NS	1000000000ull	/* how often the memory bounds are enforced */
#define TLS_RESCAN_EVERY	2	/* expiries: the traced processes' maps read every 2 s */

static void rescan_tls(struct app *a)
{
	for (int i = 0; i < a->env.npids; i++)
		loader__attach_process(a->loader, a->env.pids[i]);
	for (size_t i = 0; i < a->njoined; i++)
		loader__attach_process(a->loader, a->joined[i]);
}

/*
 * --stall-hooks lazy: the scheduler hooks on while a stream is as quiet as
 * correlator__arm_at() says, and STALL_HOOKS_LINGER_NS after (the stall just ended is
 * explained from records already read, but another gap may be about to need them); the
 * wait for records no longer than until the next stream may need them. Returns that wait.
 */
#define STALL_HOOKS_LINGER_NS	200000000ull
/*
 * The streams are looked over at most this often (every one of them: a bound on the work
 * with many connections); a chunk only moves its stream's moment later, a new stream's
 * comes a quarter threshold after its first chunk: so the hooks come at most this late.
 */
#define STALL_HOOKS_SCAN_NS	2000000ull

static int stall_hooks(struct app *a, uint64_t *need_until)
{
	uint64_t now = now_mono_ns(), at;
	int err;

	if (now >= a->arm_scan_next || now >= a->arm_at) {
		a->arm_at = session__arm_at(a->sess, now);
		a->arm_scan_next = now + STALL_HOOKS_SCAN_NS;
	}
	at = a->arm_at;
	if (at <= now)
		*need_until = now + STALL_HOOKS_LINGER_NS;
	/* failures are counted in the summaries' stall_hooks; said here the first time */
	err = loader__stall_hooks(a->loader, now < *need_until);
	if (err && !a->hooks_failure_told) {
		a->hooks_failure_told = true;
		fprintf(stderr, "tokentrace: attaching the scheduler hooks failed: %s (stalls "
			"are not accounted while they are off)\n", strerror(-err));
	}
	if (at <= now || at - now >= (uint64_t)POLL_MS * 1000000)
		return POLL_MS;
	return (at - now + 999999) / 1000000;
}

static int run(struct app *a)
{
	struct epoll_event ev = { .events = EPOLLIN }, evs[ENV_PIDS_MAX + 1];
	uint64_t interval_ns = a->env.interval_s * 1e9, next, next_expire, summaries = 0;
	uint64_t rescans = 0, hooks_until = 0;
	bool targets_gone = false;
	int epfd, n, err = 0, wait_ms = POLL_MS;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return -errno;
	ev.data.fd = ring_buffer__epoll_fd(a->rb);
	epoll_ctl(epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	for (int i = 0; i < a->env.npids; i++) {
		ev.data.fd = a->pidfd[i];
		epoll_ctl(epfd, EPOLL_CTL_ADD, a->pidfd[i], &ev);
	}
	next = now_mono_ns() + interval_ns;
	next_expire = now_mono_ns() + EXPIRE_NS;
	while (!exiting) {
		bool pid_event = false;

		n = epoll_wait(epfd, evs, ARRAY_SIZE(evs), wait_ms);
		if (n < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		for (int i = 0; i < n; i++)
			if (evs[i].data.fd != ring_buffer__epoll_fd(a->rb))
				pid_event = true;
		/* the ring's epoll fd only says "woken"; records are read here either way */
		ring_buffer__consume(a->rb);
		/* stall stacks are symbolized here, out of the ring's callback */
		session__drain(a->sess, false);
		wait_ms = stall_hooks(a, &hooks_until);
		pyctl__retry(a->py, now_mono_ns());
		/*
		 * Every traced process gone: the listed ones (their pidfds) and the ones that
		 * joined. Processes that are found by name, cgroup or port may still come.
		 */
		if ((pid_event || a->njoined) && reap_targets(a, epfd) && !a->nprocs_live &&
		    !a->env.find) {
			targets_gone = true;
			break;
		}
		if (session__flush(a->sess))
			exiting = 1;	/* --top: the user pressed q */
		record_flush(a);
		if (stdout_failed(a))
			break;
		/* bounds hold without summaries too (INTERVAL 0, --top) */
		if (now_mono_ns() >= next_expire) {
			session__expire(a->sess, now_mono_ns());
			next_expire += EXPIRE_NS;
			/* an OpenSSL loaded since (dlopen, a lazy import): probed */
			if (++rescans % TLS_RESCAN_EVERY == 0)
				rescan_tls(a);
		}
		if (interval_ns && now_mono_ns() >= next) {
			summary(a, false);
			next += interval_ns;
			if (a->env.count && ++summaries >= a->env.count)
				break;
		}
	}
	/* what the kernel already wrote still counts, also the closes of an exiting target */
	if (targets_gone)
		usleep(POLL_MS * 1000);
	ring_buffer__consume(a->rb);
	close(epfd);
	return err;
}

int main(int argc, char **argv)
{
	struct app a = {};
	struct loader_opts lo = {};
	struct session_opts so = {};
	int err;

	switch (env__parse(&a.env, argc, argv)) {
	case ENV_OK:
		break;
	case ENV_EXIT_OK:
		return 0;
	default:
		return 2;
	}
	for (int i = 0; i < ENV_PIDS_MAX; i++)
		a.pidfd[i] = -1;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);

	if (a.env.replay_path) {
		err = replay(&a);
		session__free(a.sess);	/* the outputs' last writes: they may fail */
		return err || a.out_failed;
	}
	if (a.env.find && (err = find_targets(&a)))
		goto cleanup;
	if (!a.env.find)
		a.nlisted = a.env.npids;
	/* the given ones first: a refused PID (init) stops before its children are looked at */
	err = check_targets(&a, 0);
	if (err)
		goto cleanup;
	/* -p follows children: those forked before attach too (nginx's, uvicorn's workers) */
	if (!a.env.no_follow && a.nlisted) {
		int from = a.env.npids;

		err = add_descendants(&a);
		if (!err)
			err = check_targets(&a, from);
		if (err)
			goto cleanup;
	}
	lo.pids = a.env.pids;
	lo.npids = a.env.npids;
	lo.capture_bytes = a.env.capture_bytes;
	lo.ringbuf_bytes = a.env.ringbuf_bytes;
	lo.port = a.env.port;
	lo.verbose = a.env.verbose;
	lo.stalls = !a.env.no_stalls;
	lo.lazy_stalls = !a.env.stall_hooks_always;
	lo.aggregate = a.env.aggregate;
	lo.budget = a.env.budget;
	lo.markers = a.env.markers;
	lo.nmarkers = a.env.nmarkers;
	lo.hooks = a.env.hooks;
	lo.follow_forks = !a.env.no_follow;
	lo.tls = !a.env.no_tls && !a.env.aggregate;	/* --aggregate copies no payload, TLS none either */
	lo.python_hz = a.env.no_stalls || a.env.aggregate ? 0 : a.env.python_hz;
	lo.find_comms = (const char (*)[16])a.env.comms;
	lo.nfind_comms = a.env.ncomms;
	lo.find_cgroup = a.cgroup_id;
	lo.find_port = a.env.find && !a.env.ncomms && !a.env.cgroup ? a.env.port : 0;
	/*
	 * Spans off CPU the kernel sends in full: a fifth of the smallest stall, so that every
	 * part of one worth naming arrives with its details; shorter ones are only summed.
	 */
	lo.span_floor_ns = MAX((a.env.stall_ns ? a.env.stall_ns : STALL_FLOOR_NS) / 5, 1000000ull);
	err = loader__open(&lo, &a.loader);
	if (err)
		goto cleanup;

	so.ignore_conn = ignore_conn;
	so.ud = &a;
	so.stalls = !a.env.no_stalls;
	so.aggregate = a.env.aggregate;
	so.stall_ns = a.env.stall_ns;
	so.stack_live = stack_live;
	so.aux_record = aux_record;
	if (lo.python_hz) {
		a.py = pyctl__new(a.loader, a.env.verbose);
		if (!a.py) {
			err = -ENOMEM;
			fprintf(stderr, "tokentrace: out of memory\n");
			goto cleanup;
		}
		so.py_live = py_live;
		for (int i = 0; i < a.env.npids; i++)
			pyctl__probe(a.py, a.env.pids[i]);
	}
	a.sess = session__new(&so);
	if (!a.sess) {
		err = -ENOMEM;
		fprintf(stderr, "tokentrace: out of memory\n");
		goto cleanup;
	}
	a.rb = ring_buffer__new(loader__ringbuf_fd(a.loader), on_record, &a, NULL);
	if (!a.rb) {
		err = -errno;
		fprintf(stderr, "tokentrace: opening the ring buffer failed: %s\n", strerror(-err));
		goto cleanup;
	}
	if (a.env.record_path && (err = start_recording(&a, argc, argv)))
		goto cleanup;
	err = setup_outputs(&a);
	if (err)
		goto cleanup;
	announce(&a);

	err = run(&a);
	if (err)
		fprintf(stderr, "tokentrace: polling failed: %s\n", strerror(-err));
	harvest(&a);	/* the last interval's histograms count in the total */
	summary(&a, true);
	if (a.stdout_err && a.stdout_err != EPIPE && !err)
		err = -a.stdout_err;

cleanup:
	if (stop_recording(&a) && !err)
		err = -EIO;
	ring_buffer__free(a.rb);
	session__free(a.sess);
	symbolizer__free(a.sym);
	pyctl__free(a.py);
	loader__close(a.loader);
	for (int i = 0; i < ENV_PIDS_MAX; i++)
		if (a.pidfd[i] >= 0)
			close(a.pidfd[i]);
	/* an output asked for and not written (--perfetto to a full disk) is a failed run */
	return err || a.out_failed ? 1 : 0;
}
