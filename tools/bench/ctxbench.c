// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ctxbench: what a context switch costs, for processes a tracer does not trace.
 *
 * Two processes pinned to one CPU pass a byte back and forth over two pipes: every round trip
 * is two wakeups and two context switches, and nothing else of note. A tracer hooked on the
 * scheduler (sched_switch, sched_wakeup) makes every one of them pay its filter.
 *
 * --syscall: what a syscall costs instead. One process calls getppid(2) in a loop, through
 * syscall(2): the cheapest round trip into the kernel. A syscall tracepoint attached anywhere
 * on the machine, for any one syscall, sends every syscall of every process through the
 * kernel's tracing slow path.
 *
 * Output, one JSON line: ns per round trip or call (mean, and median of blocks of 1000).
 */
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "bench_util.h"

static const char usage[] =
"Usage: ctxbench [--rounds N] [--cpu C] [--wait] [--syscall]\n"
"Time pipe ping-pong round trips between two processes on one CPU (one JSON line).\n"
"\n"
"  --rounds N  round trips (default 100000)\n"
"  --syscall   time getppid(2) calls instead (N of them), one process\n"
"  --cpu C     the CPU both run on (default 1)\n"
"  --wait      print 'pid PID' and wait for a line on stdin first\n";

#define BATCH 1000

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rounds", required_argument, NULL, 'n' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "wait", no_argument, NULL, 'W' },
		{ "syscall", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t rounds = 100000, cpu = 1, nb, total = 0;
	int ab[2], ba[2], c, status;
	bool wait = false, sc = false;
	char b = 0, line[64];
	double *per;
	pid_t child;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (bu_parse_u64(optarg, BATCH, 1ull << 32, &rounds))
				BU_DIE("ctxbench: bad --rounds '%s' (>= %d)", optarg, BATCH);
			break;
		case 'c':
			if (bu_parse_u64(optarg, 0, CPU_SETSIZE - 1, &cpu))
				BU_DIE("ctxbench: bad --cpu '%s'", optarg);
			break;
		case 'W':
			wait = true;
			break;
		case 'S':
			sc = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	nb = rounds / BATCH;
	per = calloc(nb, sizeof(*per));
	if (!per || (!sc && (pipe(ab) || pipe(ba))))
		BU_DIE("ctxbench: setup: %s", strerror(errno));
	if (bu_pin(cpu))
		BU_DIE("ctxbench: cannot pin to CPU %llu", (unsigned long long)cpu);
	child = sc ? 0 : fork();
	if (child < 0)
		BU_DIE("ctxbench: fork: %s", strerror(errno));
	if (!sc && !child) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(ab[1]);	/* or the read below never sees EOF */
		close(ba[0]);
		while (read(ab[0], &b, 1) == 1)
			if (write(ba[1], &b, 1) != 1)
				break;
		_exit(0);
	}
	if (!sc) {
		close(ab[0]);
		close(ba[1]);
	}
	if (wait) {
		printf("pid %d\n", getpid());
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			BU_DIE("ctxbench: no go line on stdin");
	}
	for (uint64_t i = 0; i < nb; i++) {
		uint64_t t0 = bu_now_ns(), t1;

		for (int j = 0; j < BATCH; j++)
			if (sc)
				syscall(SYS_getppid);
			else if (write(ab[1], &b, 1) != 1 || read(ba[0], &b, 1) != 1)
				BU_DIE("ctxbench: pipe: %s", strerror(errno));
		t1 = bu_now_ns();
		total += t1 - t0;
		per[i] = (double)(t1 - t0) / BATCH;
	}
	if (!sc) {
		close(ab[1]);
		waitpid(child, &status, 0);
	}
	qsort(per, nb, sizeof(*per), cmp_double);
	printf("{\"rounds\":%llu,\"ns_per_round\":%.1f,\"ns_per_round_med\":%.1f}\n",
	       (unsigned long long)(nb * BATCH), (double)total / (nb * BATCH), per[nb / 2]);
	free(per);
	return 0;
}
