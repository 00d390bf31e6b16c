/* SPDX-License-Identifier: MIT */
/*
 * Small helpers shared by tokensim and tokenload: the one clock both tools
 * (and tokentrace) time with, absolute sleeps, the one checked number parser.
 */
#ifndef TS_UTIL_H
#define TS_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#define NSEC_PER_USEC 1000ULL
#define NSEC_PER_MSEC 1000000ULL
#define NSEC_PER_SEC 1000000000ULL

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* CLOCK_MONOTONIC in ns: the time base of the truth file and of tokentrace. */
uint64_t now_ns(void);

/* clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) until t, restarted on EINTR. */
void sleep_until_ns(uint64_t t);

/* ms (fractional allowed) to ns, for config values already range-checked. */
static inline uint64_t ms_to_ns(double ms)
{
	return (uint64_t)(ms * 1e6 + 0.5);
}

/*
 * The one number parser of both command lines: the whole of arg must be a
 * number in [min, max]; integer=true refuses fractions and exponents.  On
 * failure prints "PROG: OPT: why" on stderr and returns false.
 */
bool parse_num(const char *prog, const char *opt, const char *arg, double min, double max,
	       bool integer, double *out);

/*
 * UTC calendar fields of the wall clock, without strftime(): glibc's
 * strftime calls tzset(), which re-reads /etc/localtime on every call, and
 * that file I/O does not belong on a server's send path.
 */
struct utc_time {
	int year, mon, mday, wday, hour, min, sec;
	long usec;
};
void utc_now(struct utc_time *u);
extern const char *const utc_wday_names[7];
extern const char *const utc_mon_names[12];

/* pthread_setname_np on the calling thread (names show in /proc and traces). */
void set_thread_name(const char *name);

/* Print "PROG: message" on stderr and exit(1): for impossible situations (OOM). */
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t sz);
void *xrealloc(void *p, size_t n);

extern const char *prog_name;

#endif
