// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The processes a trace starts with. See targets.h. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "procfind.h"
#include "targets.h"
#include "util.h"

struct target {
	uint32_t pid;
	int pidfd;		/* -1: not watched (exited, or not yet checked) */
	char comm[16];
};

struct targets {
	struct target v[TARGETS_MAX];
	uint32_t pids[TARGETS_MAX];	/* v's pids, for the loader */
	int n;
	int nlisted;			/* v[0..nlisted) were given; the rest found */
	uint64_t cgroup_id;
	char cgroup_rel[256];
};

bool targets__comm_ok(const char *name)
{
	return name[0] && strlen(name) <= 15 && !strchr(name, '/');
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
 * sockets to trace) only with force. False, with the reason, to refuse.
 */
static bool target_ok(uint32_t pid, bool force, char *why, size_t sz)
{
	struct proc_stat st;
	char path[64], buf[512];
	uint32_t tgid = pid;
	FILE *f;

	if (procfind__stat(pid, &st))
		return true;	/* gone, or hidden: kill() and pidfd_open() say which */
	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	while (f && fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "Tgid: %u", &tgid) == 1)
			break;
	if (f)
		fclose(f);
	if (st.state == 'Z' || st.state == 'X')
		snprintf(why, sz, "has exited (a zombie its parent has not reaped): nothing to "
			 "trace");
	else if (tgid != pid)
		snprintf(why, sz, "is a thread of process %u: give -p %u", tgid, tgid);
	else if ((st.flags & 0x00200000) && !force)	/* PF_KTHREAD */
		snprintf(why, sz, "is a kernel thread: it has no user-space sockets to trace "
			 "(--force to try anyway)");
	else if (pid == 1 && !force)
		snprintf(why, sz, "is init: every service on the host is its child, not what it "
			 "serves (--force to trace it anyway)");
	else
		return true;
	return false;
}

/* pid appended unless it is there already: false when full */
static bool add(struct targets *t, uint32_t pid)
{
	for (int i = 0; i < t->n; i++)
		if (t->v[i].pid == pid)
			return true;
	if (t->n == TARGETS_MAX)
		return false;
	t->v[t->n++] = (struct target){ .pid = pid, .pidfd = -1 };
	return true;
}

/*
 * --comm, --cgroup, --port alone: the processes that match now (the kernel side adds the
 * ones that come later). None is not an error: they may come.
 */
static int find(struct targets *t, const struct targets_opts *o)
{
	struct procfind q = {
		.comms = o->comms,
		.ncomms = o->ncomms,
		.port = o->port,
	};
	uint32_t found[TARGETS_MAX];
	int n, err, before = t->n;

	if (o->cgroup) {
		err = procfind__cgroup(o->cgroup, &t->cgroup_id, t->cgroup_rel,
				       sizeof(t->cgroup_rel));
		if (err)
			return err;
		q.cgroup_id = t->cgroup_id;
		q.cgroup_rel = t->cgroup_rel;
	}
	n = procfind__scan(&q, o->self, found, TARGETS_MAX);
	if (n < 0) {
		fprintf(stderr, "tokentrace: looking for processes in /proc failed: %s\n",
			strerror(-n));
		return n;
	}
	for (int i = 0; i < MIN(n, TARGETS_MAX) && add(t, found[i]); i++)
		;
	if (n > TARGETS_MAX)
		fprintf(stderr, "tokentrace: %d processes match, tracing the first %d\n", n,
			TARGETS_MAX);
	if (t->n == before)
		fprintf(stderr, "tokentrace: no process matches yet: waiting for one\n");
	return 0;
}

static int add_descendants(struct targets *t)
{
	uint32_t kids[TARGETS_MAX];
	int n = procfind__descendants(t->pids, t->nlisted, kids, TARGETS_MAX);

	if (n < 0) {
		fprintf(stderr, "tokentrace: looking for the children of the targets failed: %s\n",
			strerror(-n));
		return n;
	}
	for (int i = 0; i < n && add(t, kids[i]); i++)
		;
	if (n)
		fprintf(stderr, "tokentrace: %d child process%s of the given PIDs traced too "
			"(--no-follow: not)\n", n, n == 1 ? "" : "es");
	return 0;
}

/*
 * Every given target must exist before anything is loaded: a typo should not attach
 * anything. A found one that cannot be traced (it exited meanwhile, a zombie) is left out.
 */
static int check(struct targets *t, int from, bool force)
{
	for (int i = from; i < t->n; i++) {
		struct target *x = &t->v[i];
		char comm[4 * 16], why[160];
		bool found = i >= t->nlisted;

		if (kill(x->pid, 0) && errno == ESRCH) {
			if (found)
				goto drop;
			fprintf(stderr, "tokentrace: no process with PID %u\n", x->pid);
			return -ESRCH;
		}
		procfind__comm(x->pid, x->comm, sizeof(x->comm));
		/* a process names itself: as untrusted as its traffic */
		esc_term(comm, sizeof(comm), x->comm, strnlen(x->comm, sizeof(x->comm)));
		if (!target_ok(x->pid, force, why, sizeof(why))) {
			if (found)
				goto drop;
			fprintf(stderr, "tokentrace: PID %u (%s) %s\n", x->pid, comm, why);
			return -EINVAL;
		}
		x->pidfd = syscall(SYS_pidfd_open, x->pid, 0);
		if (x->pidfd < 0) {
			fprintf(stderr, "tokentrace: cannot watch PID %u: %s\n", x->pid,
				strerror(errno));
			return -errno;
		}
		if (pidfd_exited(x->pidfd)) {
			close(x->pidfd);
			x->pidfd = -1;
			if (found)
				goto drop;
			fprintf(stderr, "tokentrace: PID %u (%s) has exited: nothing to trace\n",
				x->pid, comm);
			return -ESRCH;
		}
		t->pids[i] = x->pid;
		continue;
drop:
		/* the last one takes its place; look at it next */
		*x = t->v[--t->n];
		i--;
	}
	return 0;
}

int targets__new(const struct targets_opts *o, struct targets **out)
{
	struct targets *t = calloc(1, sizeof(*t));
	int err = 0, from;

	if (!t)
		return -ENOMEM;
	for (int i = 0; i < o->npids && i < TARGETS_MAX; i++)
		add(t, o->pids[i]);
	t->nlisted = t->n;
	if (o->ncomms || o->cgroup || o->port)
		err = find(t, o);
	/* the given ones first: a refused PID (init) stops before its children are looked at */
	if (!err)
		err = check(t, 0, o->force);
	/* children: those forked before attach too (nginx's, uvicorn's workers) */
	if (!err && o->follow && t->nlisted) {
		from = t->n;
		err = add_descendants(t);
		if (!err)
			err = check(t, from, o->force);
	}
	if (err) {
		targets__free(t);
		return err;
	}
	*out = t;
	return 0;
}

void targets__free(struct targets *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->n; i++)
		if (t->v[i].pidfd >= 0)
			close(t->v[i].pidfd);
	free(t);
}

int targets__count(const struct targets *t)
{
	return t->n;
}

const uint32_t *targets__pids(const struct targets *t)
{
	return t->pids;
}

const char *targets__comm(const struct targets *t, int i)
{
	return i >= 0 && i < t->n ? t->v[i].comm : "";
}

bool targets__alive(const struct targets *t, int i)
{
	return i >= 0 && i < t->n && t->v[i].pidfd >= 0;
}

bool targets__has(const struct targets *t, uint32_t pid)
{
	for (int i = 0; i < t->n; i++)
		if (t->v[i].pid == pid)
			return true;
	return false;
}

bool targets__listed(const struct targets *t, uint32_t pid)
{
	for (int i = 0; i < t->nlisted && i < t->n; i++)
		if (t->v[i].pid == pid)
			return true;
	return false;
}

uint64_t targets__cgroup_id(const struct targets *t)
{
	return t->cgroup_id;
}

void targets__watch(const struct targets *t, int epfd)
{
	for (int i = 0; i < t->n; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = t->v[i].pidfd };

		if (t->v[i].pidfd >= 0)
			epoll_ctl(epfd, EPOLL_CTL_ADD, t->v[i].pidfd, &ev);
	}
}

bool targets__reap(struct targets *t, int epfd)
{
	bool any = false;

	for (int i = 0; i < t->n; i++) {
		struct target *x = &t->v[i];

		if (x->pidfd < 0)
			continue;
		/* a readable pidfd: exited, also as a zombie that kill() still finds */
		if (pidfd_exited(x->pidfd) || (kill(x->pid, 0) && errno == ESRCH)) {
			epoll_ctl(epfd, EPOLL_CTL_DEL, x->pidfd, NULL);
			close(x->pidfd);	/* nothing more to watch: its fd goes with it */
			x->pidfd = -1;
			fprintf(stderr, "tokentrace: PID %u exited\n", x->pid);
			continue;
		}
		any = true;
	}
	return !any;
}
