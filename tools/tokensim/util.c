// SPDX-License-Identifier: MIT
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

void sleep_until_ns(uint64_t t)
{
	struct timespec ts = {
		.tv_sec = (time_t)(t / NSEC_PER_SEC),
		.tv_nsec = (long)(t % NSEC_PER_SEC),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

bool parse_num(const char *prog, const char *opt, const char *arg, double min, double max,
	       bool integer, double *out)
{
	const char *p = arg;
	char *end;
	double v;

	if (!arg || !*arg) {
		fprintf(stderr, "%s: %s: missing number\n", prog, opt);
		return false;
	}
	/* strtod also takes " 1", "0x1f", "inf" and "nan": accept plain decimals only. */
	if (*p == '-' || *p == '+')
		p++;
	if (!((*p >= '0' && *p <= '9') || *p == '.') || strpbrk(arg, "xXnNiI")) {
		fprintf(stderr, "%s: %s: '%s' is not a number\n", prog, opt, arg);
		return false;
	}
	if (integer && strpbrk(arg, ".eE")) {
		fprintf(stderr, "%s: %s: '%s' is not a whole number\n", prog, opt, arg);
		return false;
	}
	errno = 0;
	v = strtod(arg, &end);
	if (errno || *end || !isfinite(v)) {
		fprintf(stderr, "%s: %s: '%s' is not a number\n", prog, opt, arg);
		return false;
	}
	if (v < min || v > max) {
		fprintf(stderr, "%s: %s: %s is out of range [%.17g, %.17g]\n", prog, opt, arg, min,
			max);
		return false;
	}
	*out = v;
	return true;
}

const char *const utc_wday_names[7] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
const char *const utc_mon_names[12] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
					"Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };

void utc_now(struct utc_time *u)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm); /* no tzset(): UTC needs no zone file */
	*u = (struct utc_time){
		.year = tm.tm_year + 1900, .mon = tm.tm_mon, .mday = tm.tm_mday,
		.wday = tm.tm_wday, .hour = tm.tm_hour, .min = tm.tm_min, .sec = tm.tm_sec,
		.usec = ts.tv_nsec / 1000,
	};
}

void set_thread_name(const char *name)
{
	pthread_setname_np(pthread_self(), name);
}

void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);

	if (!p)
		die("out of memory (%zu x %zu bytes)", n, sz);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}
