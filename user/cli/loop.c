// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The main loop: drain the ring buffer into the session on a short timer (the kernel side
 * wakes us only when the ring fills up: a wakeup per record would cost more than the
 * record), ask for the lazy stall hooks as the streams need them, and on their clocks
 * enforce the memory bounds, rescan for OpenSSL and print summaries; stop on a signal, on
 * COUNT, or when every target has exited.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "app.h"
#include "hmap.h"
#include "loader.h"
#include "python.h"
#include "record.h"
#include "session.h"
#include "targets.h"
#include "util.h"

#define POLL_MS		20	/* bounds how late a finished request is printed */
#define EXPIRE_NS	1000000000ull	/* how often the memory bounds are enforced */
#define TLS_RESCAN_EVERY	2	/* expiries: the traced processes' maps read every 2 s */

/* The loop's clocks and state. */
struct ticks {
	uint64_t interval_ns, next_summary, next_expire, summaries, rescans;
	uint64_t hooks_until;	/* the lazy stall hooks wanted until then */
	int wait_ms;		/* the next wait for records */
	int err;		/* polling failed: -errno */
	bool gone;		/* every target has exited */
};

void app__harvest(struct app *a)
{
	struct agg_totals now, d;

	if (!a->env.aggregate || loader__agg_read(a->loader, &now))
		return;
	agg__delta(&now, &a->agg_prev, &d);
	session__aggregate(a->sess, &d);
	a->agg_prev = now;
}

void app__summary(struct app *a, bool final)
{
	uint64_t k[TT_STAT_NR] = {}, now;
	struct stall_hook_stats sh;

	if (!final)
		app__harvest(a);
	loader__read_stats(a->loader, k);
	now = now_mono_ns();
	loader__stall_hook_stats(a->loader, &sh);
	session__stall_hooks(a->sess, &sh);
	session__tick(a->sess, now, k, final);
	if (a->rec)
		recorder__tick(a->rec, now, k, &sh, final);
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

/* What is due on the clocks: false when COUNT summaries are done. */
static bool tick(struct app *a, struct ticks *t)
{
	/* bounds hold without summaries too (INTERVAL 0, --top) */
	if (now_mono_ns() >= t->next_expire) {
		session__expire(a->sess, now_mono_ns());
		t->next_expire += EXPIRE_NS;
		/* an OpenSSL loaded since (dlopen, a lazy import): probed */
		if (++t->rescans % TLS_RESCAN_EVERY == 0)
			app__rescan_tls(a);
	}
	if (t->interval_ns && now_mono_ns() >= t->next_summary) {
		app__summary(a, false);
		t->next_summary += t->interval_ns;
		if (a->env.count && ++t->summaries >= a->env.count)
			return false;
	}
	return true;
}

/*
 * Every traced process gone: the ones traced from the start (their pidfds) and the ones
 * that joined. Processes that are found by name, cgroup or port may still come.
 */
static bool all_gone(struct app *a, int epfd, bool pid_event)
{
	bool gone = (pid_event || hmap__count(a->joined) || a->proc_exited) &&
		    targets__reap(a->targets, epfd) && !a->nprocs_live && !a->env.find;

	a->proc_exited = false;
	return gone;
}

/* One wait for records (or a target's exit) and what follows: false to stop. */
static bool round_of(struct app *a, int epfd, struct ticks *t)
{
	struct epoll_event evs[TARGETS_MAX + 1];
	bool pid_event = false;
	int n = epoll_wait(epfd, evs, ARRAY_SIZE(evs), t->wait_ms);

	if (n < 0 && errno != EINTR) {
		t->err = -errno;
		return false;
	}
	for (int i = 0; i < n; i++)
		if (evs[i].data.fd != ring_buffer__epoll_fd(a->rb))
			pid_event = true;
	/* the ring's epoll fd only says "woken"; records are read here either way */
	ring_buffer__consume(a->rb);
	/* stall stacks are symbolized here, out of the ring's callback */
	session__drain(a->sess, false);
	t->wait_ms = stall_hooks(a, &t->hooks_until);
	pyctl__retry(a->py, now_mono_ns());
	if ((t->gone = all_gone(a, epfd, pid_event)))
		return false;
	if (session__flush(a->sess))
		exiting = 1;	/* --top: the user pressed q */
	app__record_flush(a);
	if (app__stdout_failed(a))
		return false;
	return tick(a, t);
}

int app__run(struct app *a)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct ticks t = { .interval_ns = a->env.interval_s * 1e9, .wait_ms = POLL_MS };
	int epfd;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return -errno;
	ev.data.fd = ring_buffer__epoll_fd(a->rb);
	epoll_ctl(epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	targets__watch(a->targets, epfd);
	t.next_summary = now_mono_ns() + t.interval_ns;
	t.next_expire = now_mono_ns() + EXPIRE_NS;
	while (!exiting && round_of(a, epfd, &t))
		;
	/* what the kernel already wrote still counts, also the closes of an exiting target */
	if (t.gone)
		usleep(POLL_MS * 1000);
	ring_buffer__consume(a->rb);
	close(epfd);
	return t.err;
}
