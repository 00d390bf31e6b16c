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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "env.h"
#include "loader.h"
#include "output.h"
#include "session.h"
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
	struct loader *loader;
	struct session *sess;
	struct ring_buffer *rb;
	int pidfd[ENV_PIDS_MAX];
	bool pid_alive[ENV_PIDS_MAX];
	char comm[ENV_PIDS_MAX][16];
};

static void ignore_conn(void *ud, uint64_t sk)
{
	struct app *a = ud;

	loader__ignore_conn(a->loader, sk);
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct app *a = ctx;

	session__record(a->sess, data, size);
	return 0;
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

/* Every target must exist before anything is loaded: a typo should not attach anything. */
static int check_targets(struct app *a)
{
	for (int i = 0; i < a->env.npids; i++) {
		uint32_t pid = a->env.pids[i];

		if (kill(pid, 0) && errno == ESRCH) {
			fprintf(stderr, "tokentrace: no process with PID %u\n", pid);
			return -ESRCH;
		}
		read_comm(pid, a->comm[i], sizeof(a->comm[i]));
		a->pidfd[i] = syscall(SYS_pidfd_open, pid, 0);
		if (a->pidfd[i] < 0) {
			fprintf(stderr, "tokentrace: cannot watch PID %u: %s\n", pid, strerror(errno));
			return -errno;
		}
		a->pid_alive[i] = true;
	}
	return 0;
}

static void summary(struct app *a, bool final)
{
	uint64_t k[TT_STAT_NR] = {};

	loader__read_stats(a->loader, k);
	session__tick(a->sess, now_mono_ns(), k, final);
}

static void announce(struct app *a)
{
	struct ready_info ri = {
		.t_ns = now_mono_ns(),
		.npids = a->env.npids,
		.probes = loader__nr_probes(a->loader),
		.capture_bytes = a->env.capture_bytes,
		.ringbuf_bytes = a->env.ringbuf_bytes,
	};

	for (int i = 0; i < a->env.npids && i < READY_PIDS_MAX; i++) {
		ri.pids[i] = a->env.pids[i];
		memcpy(ri.comms[i], a->comm[i], sizeof(ri.comms[i]));
	}
	for (int i = 0; i < a->env.nmarkers; i++)
		ri.marker_kind[i] = a->env.markers[i].kind;
	ri.nmarkers = a->env.nmarkers;
	session__ready(a->sess, &ri);
	fprintf(stderr, "tokentrace: attached to PID %u (%s)%s: %d probes, capture %u B, "
		"ring buffer %u MiB. Ctrl-C to stop.\n", a->env.pids[0], a->comm[0],
		a->env.npids > 1 ? " and others" : "", ri.probes, a->env.capture_bytes,
		a->env.ringbuf_bytes >> 20);
}

static int setup_outputs(struct app *a)
{
	struct output_opts oo = {
		.f = stdout,
		.quiet = a->env.quiet,
		.color = isatty(STDOUT_FILENO),
	};
	struct output o;
	int err;

	if (a->env.json)
		err = output_json__new(&o, &oo);
	else
		err = output_text__new(&o, &oo);
	if (err || session__add_output(a->sess, &o))
		return -ENOMEM;
	return 0;
}

/* Returns true when every target has exited. */
static bool reap_targets(struct app *a, int epfd)
{
	bool any = false;

	for (int i = 0; i < a->env.npids; i++) {
		if (!a->pid_alive[i])
			continue;
		if (kill(a->env.pids[i], 0) && errno == ESRCH) {
			a->pid_alive[i] = false;
			epoll_ctl(epfd, EPOLL_CTL_DEL, a->pidfd[i], NULL);
			fprintf(stderr, "tokentrace: PID %u exited\n", a->env.pids[i]);
			continue;
		}
		any = true;
	}
	return !any;
}

static int run(struct app *a)
{
	struct epoll_event ev = { .events = EPOLLIN }, evs[ENV_PIDS_MAX + 1];
	uint64_t interval_ns = a->env.interval_s * 1e9, next, summaries = 0;
	bool targets_gone = false;
	int epfd, n, err = 0;

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
	while (!exiting) {
		bool pid_event = false;

		n = epoll_wait(epfd, evs, ARRAY_SIZE(evs), POLL_MS);
		if (n < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		for (int i = 0; i < n; i++)
			if (evs[i].data.fd != ring_buffer__epoll_fd(a->rb))
				pid_event = true;
		/* the ring's epoll fd only says "woken"; records are read here either way */
		ring_buffer__consume(a->rb);
		if (pid_event && reap_targets(a, epfd)) {
			targets_gone = true;
			break;
		}
		session__flush(a->sess);
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

	err = check_targets(&a);
	if (err)
		goto cleanup;
	lo.pids = a.env.pids;
	lo.npids = a.env.npids;
	lo.capture_bytes = a.env.capture_bytes;
	lo.ringbuf_bytes = a.env.ringbuf_bytes;
	lo.port = a.env.port;
	lo.verbose = a.env.verbose;
	lo.markers = a.env.markers;
	lo.nmarkers = a.env.nmarkers;
	err = loader__open(&lo, &a.loader);
	if (err)
		goto cleanup;

	so.ignore_conn = ignore_conn;
	so.ud = &a;
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
	err = setup_outputs(&a);
	if (err)
		goto cleanup;
	announce(&a);

	err = run(&a);
	if (err)
		fprintf(stderr, "tokentrace: polling failed: %s\n", strerror(-err));
	summary(&a, true);

cleanup:
	ring_buffer__free(a.rb);
	session__free(a.sess);
	loader__close(a.loader);
	for (int i = 0; i < ENV_PIDS_MAX; i++)
		if (a.pidfd[i] >= 0)
			close(a.pidfd[i]);
	return err ? 1 : 0;
}
