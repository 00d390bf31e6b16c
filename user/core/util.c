// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util.h"

int parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_double(const char *s, double min, double max, double *out)
{
	double v;
	char *end;

	if (!s || !*s || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v >= min && v <= max))
		return -EINVAL;
	*out = v;
	return 0;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

uint64_t now_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static int64_t wall_off;

int64_t wall_offset(void)
{
	if (!wall_off)
		wall_off = (int64_t)clock_ns(CLOCK_REALTIME) - (int64_t)clock_ns(CLOCK_MONOTONIC);
	return wall_off;
}

void set_wall_offset(int64_t off)
{
	wall_off = off;
}

uint64_t mono_to_wall_ns(uint64_t mono_ns)
{
	return (uint64_t)((int64_t)mono_ns + wall_offset());
}

void fmt_clock(char *buf, size_t sz, uint64_t mono_ns)
{
	uint64_t wall = mono_to_wall_ns(mono_ns);
	time_t secs = wall / 1000000000ull;
	struct tm tm;

	localtime_r(&secs, &tm);
	snprintf(buf, sz, "%02d:%02d:%02d.%03u", tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned int)(wall % 1000000000ull / 1000000));
}

void fmt_dur(char *buf, size_t sz, uint64_t ns)
{
	if (ns < 10000)
		snprintf(buf, sz, "%.1fus", ns / 1e3);
	else if (ns < 1000000)
		snprintf(buf, sz, "%.0fus", ns / 1e3);
	else if (ns < 100000000)
		snprintf(buf, sz, "%.1fms", ns / 1e6);
	else if (ns < 1000000000)
		snprintf(buf, sz, "%.0fms", ns / 1e6);
	else
		snprintf(buf, sz, "%.2fs", ns / 1e9);
}

int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

bool strncpy_cut(char *dst, size_t sz, const char *src, size_t n)
{
	bool cut = false;

	if (!sz)
		return n > 0;
	if (n >= sz) {
		n = sz - 1;
		cut = true;
	}
	memcpy(dst, src, n);
	dst[n] = '\0';
	return cut;
}

bool strlcpy_cut(char *dst, const char *src, size_t sz)
{
	return strncpy_cut(dst, sz, src, strlen(src));
}
