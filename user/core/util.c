// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
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

bool strlcpy_cut(char *dst, size_t sz, const char *src)
{
	return strncpy_cut(dst, sz, src, strlen(src));
}

/* ------------------------------------------------------------------ untrusted strings */

size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len;
	uint32_t c;

	if (!n)
		return 0;
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, c = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates, past U+10FFFF */
	if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

bool cp_is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ||
	       cp == 0x200e || cp == 0x200f ||		/* LRM, RLM */
	       (cp >= 0x2028 && cp <= 0x202e) ||	/* LS, PS, LRE..RLO */
	       (cp >= 0x2066 && cp <= 0x2069);		/* LRI..PDI */
}

bool cp_is_invisible(uint32_t cp)
{
	/*
	 * Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt: what a
	 * renderer shows as nothing unless it supports it), and the interlinear annotation
	 * marks, whose annotation text a renderer may hide
	 */
	static const uint32_t ranges[][2] = {
		{ 0x00ad, 0x00ad }, { 0x034f, 0x034f }, { 0x061c, 0x061c }, { 0x115f, 0x1160 },
		{ 0x17b4, 0x17b5 }, { 0x180b, 0x180f }, { 0x200b, 0x200f }, { 0x202a, 0x202e },
		{ 0x2060, 0x206f }, { 0x3164, 0x3164 }, { 0xfe00, 0xfe0f }, { 0xfeff, 0xfeff },
		{ 0xffa0, 0xffa0 }, { 0xfff0, 0xfffb }, { 0x1bca0, 0x1bca3 }, { 0x1d173, 0x1d17a },
		{ 0xe0000, 0xe0fff },
	};

	if (cp < 0xad)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(ranges); i++)
		if (cp >= ranges[i][0] && cp <= ranges[i][1])
			return true;
	return false;
}

bool esc_term(char *dst, size_t sz, const char *src, size_t n)
{
	const unsigned char *p = (const unsigned char *)src;
	size_t i = 0, o = 0, l;
	char esc[12];
	uint32_t cp;

	if (!sz)
		return n > 0;
	while (i < n && p[i]) {
		const char *out = (const char *)p + i;
		size_t outn;

		l = utf8_seq(p + i, n - i, &cp);
		if (!l || cp < 0x20 || cp == 0x7f) {
			/* a C0 byte, DEL, or a byte that starts no valid sequence */
			snprintf(esc, sizeof(esc), "\\x%02x", p[i]);
			out = esc;
			outn = 4;
			l = 1;
		} else if (cp_is_control(cp) || cp_is_invisible(cp)) {
			/* past the BMP (the TAG characters), all eight digits: \U000e0041 */
			outn = snprintf(esc, sizeof(esc), cp > 0xffff ? "\\U%08x" : "\\u%04x",
					(unsigned int)cp);
			out = esc;
		} else if (cp == '\\') {
			out = "\\\\";
			outn = 2;
		} else {
			outn = l;
		}
		if (o + outn >= sz)
			break;
		memcpy(dst + o, out, outn);
		o += outn;
		i += l;
	}
	dst[o] = '\0';
	return i < n && p[i];
}

const char *arg_quote(char dst[ARG_QUOTE_MAX], const char *s)
{
	if (esc_term(dst, ARG_QUOTE_MAX - 3, s, strlen(s)))
		strcat(dst, "...");
	return dst;
}

size_t path_shown_len(const char *path, bool show_query)
{
	return show_query ? strlen(path) : strcspn(path, "?#");
}

/* ------------------------------------------------------------------ output files */

static int why_err(char *why, size_t whysz, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int why_err(char *why, size_t whysz, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whysz, fmt, ap);
	va_end(ap);
	return err;
}

/* A new 0600 file next to path, renamed over it: the old entry (a file, a link) is replaced,
 * never written through. */
static int replace(const char *path, char *why, size_t whysz)
{
	char tmp[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd, n, err;

	if (slash)
		n = snprintf(tmp, sizeof(tmp), "%.*s/.%s.XXXXXX", (int)(slash - path), path,
			     slash + 1);
	else
		n = snprintf(tmp, sizeof(tmp), ".%s.XXXXXX", path);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return why_err(why, whysz, -ENAMETOOLONG, "%s", strerror(ENAMETOOLONG));
	fd = mkostemp(tmp, O_CLOEXEC);	/* O_CREAT | O_EXCL, 0600 */
	if (fd < 0) {
		err = -errno;
		return why_err(why, whysz, err, "cannot create a file in its directory: %s",
			       strerror(-err));
	}
	if (fchmod(fd, 0600) || rename(tmp, path)) {
		err = -errno;
		unlink(tmp);
		close(fd);
		return why_err(why, whysz, err, "cannot replace it: %s", strerror(-err));
	}
	return fd;
}

int safe_create(const char *path, unsigned int flags, char *why, size_t whysz)
{
	const int wr = O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC;
	bool force = flags & SAFE_FORCE;
	struct stat st, fst;
	int fd, err;

	snprintf(why, whysz, "failed");
	if (!*path)
		return why_err(why, whysz, -ENOENT, "%s", strerror(ENOENT));
	/* the path may change under us (another user's directory): look again a few times */
	for (int tries = 0; tries < 8; tries++) {
		fd = open(path, wr | O_CREAT | O_EXCL, 0600);
		if (fd >= 0) {
			fchmod(fd, 0600);	/* the umask may have taken more */
			return fd;
		}
		if (errno != EEXIST)
			return why_err(why, whysz, -errno, "%s", strerror(errno));
		if (lstat(path, &st)) {
			if (errno == ENOENT)
				continue;	/* gone meanwhile: create it */
			return why_err(why, whysz, -errno, "%s", strerror(errno));
		}
		if (S_ISLNK(st.st_mode)) {
			if (!force)
				return why_err(why, whysz, -ELOOP, "is a symbolic link: not "
					       "followed (remove it, or --force to replace the "
					       "link itself)");
			return replace(path, why, whysz);
		}
		if (S_ISDIR(st.st_mode))
			return why_err(why, whysz, -EISDIR, "%s", strerror(EISDIR));
		if (st.st_uid != geteuid() && !force && !S_ISCHR(st.st_mode))
			return why_err(why, whysz, -EPERM, "exists and belongs to uid %u "
				       "(mode %04o): not replaced (remove it, or --force)",
				       (unsigned int)st.st_uid, (unsigned int)(st.st_mode & 07777));
		if (S_ISREG(st.st_mode))
			return replace(path, why, whysz);
		if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
			return why_err(why, whysz, -EINVAL, "is not a regular file, a character "
				       "device or a FIFO");
		/* a device or a FIFO is written as it is, if it is still the one looked at */
		fd = open(path, wr);
		if (fd < 0) {
			if (errno == ELOOP || errno == ENOENT)
				continue;
			return why_err(why, whysz, -errno, "%s", strerror(errno));
		}
		if (fstat(fd, &fst) == 0 && fst.st_dev == st.st_dev && fst.st_ino == st.st_ino)
			return fd;
		close(fd);
	}
	err = -EAGAIN;
	return why_err(why, whysz, err, "keeps changing while it is opened");
}
