/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Small helpers shared by the benchmark programs in tools/bench/ (header-only: each program
 * is one file plus this). Nothing here is shared with user/: the harness measures tokentrace
 * from the outside and must keep building while user/ changes.
 */
#ifndef TT_BENCH_UTIL_H
#define TT_BENCH_UTIL_H

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline uint64_t bu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* The one checked number parser: whole string, base 10, within [min, max]. */
static inline int bu_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* Pin the calling thread; cpu < 0 leaves it where it is. */
static inline int bu_pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return -errno;
	return 0;
}

/* Sleep until an absolute CLOCK_MONOTONIC time. */
static inline void bu_sleep_until(uint64_t t_ns)
{
	struct timespec ts = { .tv_sec = t_ns / 1000000000ull, .tv_nsec = t_ns % 1000000000ull };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

#define BU_DIE(...)                                                                        \
	do {                                                                               \
		fprintf(stderr, __VA_ARGS__);                                              \
		fputc('\n', stderr);                                                       \
		exit(1);                                                                   \
	} while (0)

#endif /* TT_BENCH_UTIL_H */
