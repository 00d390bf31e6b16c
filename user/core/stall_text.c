// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A stall in words, for people. See stall_text.h.
 *
 * The line is read on a terminal, often cut at its width: what did the late work comes first,
 * the way the stream reached it after. Each process is named with its pid once; a thread is
 * named by its tid only when it is not the process's main thread.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "stall_text.h"
#include "util.h"

struct text {
	char *buf;
	size_t sz, n;
	const struct tt_stall *st;
	uint32_t named[STALL_HOPS_MAX];	/* pids said with their pid so far */
	uint32_t nnamed;
};

static void add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (t->n + 1 >= t->sz)
		return;
	va_start(ap, fmt);
	k = vsnprintf(t->buf + t->n, t->sz - t->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		t->n = MIN(t->n + k, t->sz - 1);
}

static const char *wake_words(enum wake_kind k)
{
	switch (k) {
	case WAKE_TIMER: return "a timer";
	case WAKE_FUTEX: return "a futex wake";
	case WAKE_UNIX: return "a Unix socket";
	case WAKE_PIPE: return "a pipe";
	case WAKE_EVENTFD: return "an eventfd";
	case WAKE_NET: return "the network";
	case WAKE_TCP_LOCAL: return "a loopback TCP connection";
	case WAKE_SIGNAL: return "a signal";
	case WAKE_CREATED: return "its making";
	default: return "another thread";
	}
}

int stall__root(const struct tt_stall *st)
{
	return st->nhops ? (int)st->nhops - 1 : -1;
}

/* Does another process of the chain have hp's name? Then hp's pid is said whenever it is. */
static bool name_shared(const struct tt_stall *st, const struct stall_hop *hp)
{
	for (uint32_t h = 0; h < st->nhops; h++)
		if (st->hop[h].pid != hp->pid && !strcmp(st->hop[h].comm, hp->comm))
			return true;
	return false;
}

/* "EngineCore (pid 4242)", "python3 (pid 10, thread 12)"; once named: "python3 thread 12" */
static void who(struct text *t, const struct stall_hop *hp)
{
	bool main = hp->tid == hp->pid, again = false;
	const char *c = hp->comm;

	for (uint32_t i = 0; i < t->nnamed; i++)
		again |= t->named[i] == hp->pid;
	if (again && !main) {
		add(t, "%s%sthread %u", c, c[0] ? " " : "", hp->tid);
		return;
	}
	if (again && c[0] && !name_shared(t->st, hp)) {
		add(t, "%s main thread", c);
		return;
	}
	if (!again && t->nnamed < STALL_HOPS_MAX)
		t->named[t->nnamed++] = hp->pid;
	if (!c[0] && main)
		add(t, "pid %u", hp->pid);
	else if (!c[0])
		add(t, "thread %u of pid %u", hp->tid, hp->pid);
	else if (main)
		add(t, "%s (pid %u)", c, hp->pid);
	else
		add(t, "%s (pid %u, thread %u)", c, hp->pid, hp->tid);
}

/* What a thread did for ns, in two halves: a function or frame can go between them. */
static void doing(struct text *t, enum stall_cause c, uint64_t ns, enum wake_kind woken_by,
		  const char *where, const char *at)
{
	const char *tail = "";
	char d[16];

	fmt_dur(d, sizeof(d), ns);
	switch (c) {
	case STALL_ONCPU: add(t, "on-CPU %s", d); break;
	case STALL_RUNQ: add(t, "runnable %s", d); tail = ", waiting for a CPU"; break;
	case STALL_LOCK: add(t, "blocked %s on a lock", d); break;
	case STALL_IO: add(t, "blocked %s on I/O", d); break;
	case STALL_SLEEP: add(t, "asleep %s", d); break;
	case STALL_POLL: add(t, "waiting %s in poll/epoll", d); break;
	case STALL_BLOCKED: add(t, "blocked %s", d); break;
	case STALL_SEND:
		add(t, "blocked %s in a send", d);
		tail = ", its socket buffer full: the client reads slowly";
		break;
	case STALL_STEAL:
		add(t, "waiting %s", d);
		tail = " for its CPU, taken by the hypervisor (steal)";
		break;
	case STALL_GIL: add(t, "waiting %s for the GIL", d); break;
	case STALL_IDLE:
		add(t, "idle %s", d);
		if (woken_by != WAKE_NONE && woken_by != WAKE_OTHER)
			add(t, ", waiting for %s", wake_words(woken_by));
		break;
	case STALL_FLOW:
		add(t, "waiting %s for the client's HTTP/2 flow-control window", d);
		tail = ": no WINDOW_UPDATE came, the server could not send";
		break;
	default: add(t, "unknown %s", d); tail = ", no scheduler record of it"; break;
	}
	if (where && where[0])
		add(t, " in %s", where);
	else if (at && at[0])
		add(t, " at %s", at);
	add(t, "%s", tail);
}

static bool blocking(enum stall_cause c)
{
	return c == STALL_LOCK || c == STALL_IO || c == STALL_SLEEP || c == STALL_BLOCKED ||
	       c == STALL_SEND || c == STALL_GIL;
}

/*
 * The frame of a native stack ("libc.so.6`clock_nanosleep <- app`stall <- ...") that says
 * where the program was: the first past the C library's wrappers, else the innermost.
 */
static void telling_frame(const char *stack, char *out, size_t sz)
{
	static const char *const plumbing[] = {
		"libc.so", "libc-", "libpthread", "ld-linux", "libstdc++", "libgcc_s",
	};
	const char *f = stack, *next;

	for (; f && *f && strncmp(f, "[k] ", 4); f = next) {
		bool lib = false;

		for (size_t i = 0; i < ARRAY_SIZE(plumbing); i++)
			lib |= !strncmp(f, plumbing[i], strlen(plumbing[i]));
		if (!lib) {
			strncpy_cut(out, sz, f, strcspn(f, " "));
			return;
		}
		next = strstr(f, " <- ");
		next = next ? next + 4 : NULL;
	}
	/* only the C library's or the kernel's: the innermost frame, "[k] " and all */
	f = !strncmp(stack, "[k] ", 4) ? stack + 4 : stack;
	strncpy_cut(out, sz, stack, f - stack + strcspn(f, " "));
}

/* The thread that did the late work, what it did, and where. */
static void root_text(struct text *t, const struct stall_hop *hp, const char *frame)
{
	const struct tt_stall *st = t->st;
	const struct stall_hop *before = hp > st->hop ? hp - 1 : NULL;

	who(t, hp);
	add(t, " ");
	doing(t, hp->cause, hp->ns, hp->woken_by, hp->func, blocking(hp->cause) ? frame : NULL);
	if (before && before->cause == STALL_GIL)
		add(t, ", holding the GIL");
}

/* A thread on the way from the stream to the root: how it waited for the next one. */
static void step_text(struct text *t, uint32_t h)
{
	const struct stall_hop *hp = &t->st->hop[h];
	char d[16];

	who(t, hp);
	fmt_dur(d, sizeof(d), hp->ns);
	/* made in the gap by the thread named before it: that one's time was the gap's */
	if (hp->woken_by == WAKE_CREATED) {
		add(t, " (a new thread it started)");
		return;
	}
	if (hp->cause == STALL_POLL || hp->cause == STALL_IDLE) {
		/* a thread that only passed the wakeup on (an I/O thread, a runtime's poller) */
		if (h)
			add(t, " (on %s)", wake_words(hp->woken_by));
		else
			add(t, " sat idle %s waiting on %s", d, wake_words(hp->woken_by));
		return;
	}
	add(t, " ");
	doing(t, hp->cause, hp->ns, hp->woken_by, hp->func, NULL);
}

/*
 * The Python functions that ran on the chain's threads, when they say more than the root's
 * own function: st->python begins with "ran: a (f.py:3) 62%, b (g.py:9) 30%". A GIL holder
 * the chain could not follow is named there too ("held by thread H, running d").
 */
static void python_text(struct text *t, const struct stall_hop *root)
{
	const char *py = t->st->python, *held = strstr(py, ", held by thread "), *running;
	size_t ran = strncmp(py, "ran: ", 5) ? 0 : strcspn(py, ";");
	char only[sizeof(root->func) + 16];
	uint32_t holder = 0;
	bool known = false;

	snprintf(only, sizeof(only), "ran: %s 100%%", root ? root->func : "");
	if (ran && (ran != strlen(only) || strncmp(py, only, ran)))
		add(t, "; Python %.*s", (int)ran, py);
	if (!held || sscanf(held, ", held by thread %u", &holder) != 1)
		return;
	for (uint32_t h = 0; h < t->st->nhops; h++)
		known |= t->st->hop[h].tid == holder;
	if (known)
		return;
	add(t, "; the GIL held by thread %u", holder);
	running = strstr(held, ", running ");
	if (running)
		add(t, "%.*s", (int)strcspn(running, ";"), running);
}

/* "waiting 180ms for the client's HTTP/2 flow-control window (the stream's): ..." */
static void flow_text(struct text *t, const struct tt_stall *st)
{
	char d[16];

	fmt_dur(d, sizeof(d), st->part_ns[STALL_FLOW]);
	add(t, "waiting %s for the client's HTTP/2 flow-control window (%s): no WINDOW_UPDATE "
	    "came, the server could not send", d,
	    st->flow_window == FLOW_WINDOW_CONN ? "the connection's" : "the stream's");
}

void stall__describe(const struct tt_stall *st, char *buf, size_t sz)
{
	struct text t = { .buf = buf, .sz = sz, .st = st };
	int root = stall__root(st);
	char frame[STALL_STACK_MAX] = "", d[16];

	if (!sz)
		return;
	buf[0] = '\0';
	if (st->stack[0])
		telling_frame(st->stack, frame, sizeof(frame));
	/* HTTP/2 flow control first: what the threads did is what they could do meanwhile */
	if (st->cause == STALL_FLOW) {
		flow_text(&t, st);
		if (root >= 0)
			add(&t, "; meanwhile ");
	}
	if (root < 0 && st->cause != STALL_FLOW)
		doing(&t, st->cause, st->part_ns[st->cause], WAKE_NONE, NULL, NULL);
	else if (root >= 0)
		root_text(&t, &st->hop[root], frame);
	/* the way from the stream to it, each "<-" a "woken by" */
	for (int h = 0; h < root; h++) {
		add(&t, h ? " <- " : "; ");
		step_text(&t, h);
	}
	if (root >= 2) {
		add(&t, " <- ");
		who(&t, &st->hop[root]);
	}
	if (st->hops_cut)
		add(&t, "; the chain goes on past %u threads, not followed", STALL_HOPS_MAX);
	/* the whole stack, unless it is the frame said, or there was no block to have one */
	if (st->stack[0] && strcmp(st->stack, frame) && st->cause != STALL_ONCPU &&
	    st->cause != STALL_RUNQ && st->cause != STALL_STEAL)
		add(&t, "; stack: %s", st->stack);
	python_text(&t, root >= 0 ? &st->hop[root] : NULL);
	/* a guest's CPU taken by the hypervisor for a tenth of the gap or more: said */
	if (st->cause != STALL_STEAL && st->part_ns[STALL_STEAL] &&
	    st->part_ns[STALL_STEAL] * 10 >= st->t_end_ns - st->t_begin_ns) {
		fmt_dur(d, sizeof(d), st->part_ns[STALL_STEAL]);
		add(&t, "; %s of it stolen by the hypervisor", d);
	}
	if (st->cause != STALL_FLOW && st->part_ns[STALL_FLOW]) {
		add(&t, "; ");
		flow_text(&t, st);
	}
	if (st->engine_late >= 0)
		add(&t, st->engine_late ? "; the token was made late (engine)" :
		    "; the token was made in time and sent late (front end)");
	if (st->retransmits)
		add(&t, "; %u TCP retransmits", st->retransmits);
	if (st->zero_window)
		add(&t, "; the peer's window was zero");
	if (st->lost)
		add(&t, "; records were dropped in the gap");
}
