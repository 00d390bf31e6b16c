// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "container.h"

/* /proc/PID/cgroup has a line per v1 hierarchy (a dozen) and the v2 one; status ~1.5 KiB */
#define PROC_FILE_MAX	65536

/* what one cgroup path says */
struct found {
	char id[CONTAINER_ID_LEN + 1];
	const char *runtime;
	char pod_uid[CONTAINER_POD_UID_LEN + 1];
};

/* a runtime's scope prefix: "<prefix><id>[.scope]", or "<word>" then "<id>" as the next
 * component (cgroupfs: /docker/<id>; containerd's "slice:cri-containerd:<id>" form) */
static const struct {
	const char *prefix;
	const char *word;
	const char *runtime;
} runtimes[] = {
	{ "docker-", "docker", "docker" },
	{ "cri-containerd-", "cri-containerd", "containerd" },
	{ "crio-", "crio", "cri-o" },
	{ "libpod-", "libpod", "podman" },
};

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* c[0..n) is exactly an id */
static bool is_id(const char *c, size_t n)
{
	return n == CONTAINER_ID_LEN && is_hex(c, n);
}

static size_t strip_suffix(const char *c, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n > k && !memcmp(c + n - k, suffix, k) ? n - k : n;
}

/*
 * A pod uid as the path writes it: 8-4-4-4-12 hex with '-' (cgroupfs) or '_' (systemd, whose
 * unit names reserve '-' for nesting), or a static pod's 32 hex digits. Into out with dashes.
 */
static bool pod_uid(const char *c, size_t n, char *out)
{
	if (n == 32 && is_hex(c, n)) {
		memcpy(out, c, n);
		out[n] = '\0';
		return true;
	}
	if (n != 36)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool sep = i == 8 || i == 13 || i == 18 || i == 23;

		if (sep ? (c[i] != '-' && c[i] != '_') : !is_hex(c + i, 1))
			return false;
		out[i] = sep ? '-' : c[i];
	}
	out[n] = '\0';
	return true;
}

static void set_id(struct found *f, const char *c, const char *runtime)
{
	memcpy(f->id, c, CONTAINER_ID_LEN);
	f->id[CONTAINER_ID_LEN] = '\0';
	f->runtime = runtime;
}

/* one path component c[0..n); prev is the one before it ("" at the top) */
static void component(const char *c, size_t n, const char *prev, size_t pn, bool in_kubepods,
		      struct found *f)
{
	size_t m = strip_suffix(c, n, ".scope");

	/* conmon, the runtime's monitor, has a scope of its own beside the container's */
	if ((m > 14 && !memcmp(c, "libpod-conmon-", 14)) ||
	    (m > 12 && !memcmp(c, "crio-conmon-", 12)))
		return;
	for (size_t i = 0; i < sizeof(runtimes) / sizeof(runtimes[0]); i++) {
		size_t k = strlen(runtimes[i].prefix);

		if (m == k + CONTAINER_ID_LEN && !memcmp(c, runtimes[i].prefix, k) &&
		    is_id(c + k, m - k)) {
			set_id(f, c + k, runtimes[i].runtime);
			return;
		}
		if (is_id(c, n) && pn == strlen(runtimes[i].word) &&
		    !memcmp(prev, runtimes[i].word, pn)) {
			set_id(f, c, runtimes[i].runtime);
			return;
		}
	}
	/* systemd: kubepods-pod<uid>.slice, kubepods-<qos>-pod<uid>.slice */
	m = strip_suffix(c, n, ".slice");
	if (m < n && m > 9 && !memcmp(c, "kubepods-", 9)) {
		const char *p = c + m;

		while (p > c && p[-1] != '-')
			p--;
		if (c + m - p > 3 && !memcmp(p, "pod", 3))
			pod_uid(p + 3, c + m - p - 3, f->pod_uid);
		return;
	}
	/* cgroupfs: /kubepods[/<qos>]/pod<uid>/<id>, the runtime not said */
	if (in_kubepods && n > 3 && !memcmp(c, "pod", 3)) {
		pod_uid(c + 3, n - 3, f->pod_uid);
		return;
	}
	if (in_kubepods && f->pod_uid[0] && is_id(c, n))
		set_id(f, c, "");
}

/* every component of path[0..len), top down, split at '/' and ':' */
static void parse_path(const char *path, size_t len, struct found *f)
{
	const char *end = path + len, *prev = "", *c = path;
	size_t pn = 0;
	bool in_kubepods = false;

	memset(f, 0, sizeof(*f));
	while (c < end) {
		const char *e = c;

		while (e < end && *e != '/' && *e != ':')
			e++;
		if (e > c) {
			size_t n = e - c;

			if ((n == 8 || (n > 8 && c[8] == '.')) && !memcmp(c, "kubepods", 8))
				in_kubepods = true;
			component(c, n, prev, pn, in_kubepods, f);
			prev = c;
			pn = n;
		}
		c = e + 1;
	}
}

/* a line "N:controllers:/path" into its path; v2 says whether it is the v2 line ("0::") */
static bool cgroup_line(const char *line, size_t len, const char **path, size_t *plen, bool *v2)
{
	const char *end = line + len, *c1, *c2;

	c1 = memchr(line, ':', len);
	if (!c1 || c1 == line)
		return false;
	for (const char *p = line; p < c1; p++)
		if (*p < '0' || *p > '9')
			return false;
	c2 = memchr(c1 + 1, ':', end - c1 - 1);
	if (!c2 || c2 + 1 >= end || c2[1] != '/')
		return false;
	*v2 = c1 - line == 1 && line[0] == '0' && c2 == c1 + 1;
	*path = c2 + 1;
	*plen = end - *path;
	return true;
}

static void set_cgroup(struct container_info *ci, const char *path, size_t len)
{
	if (len >= sizeof(ci->cgroup))
		len = sizeof(ci->cgroup) - 1;
	memcpy(ci->cgroup, path, len);
	ci->cgroup[len] = '\0';
}

/* the kept line's findings into ci */
static void take(struct container_info *ci, const struct found *f, const char *path, size_t len)
{
	snprintf(ci->id, sizeof(ci->id), "%s", f->id);
	snprintf(ci->runtime, sizeof(ci->runtime), "%s", f->runtime ? f->runtime : "");
	snprintf(ci->pod_uid, sizeof(ci->pod_uid), "%s", f->pod_uid);
	set_cgroup(ci, path, len);
}

int container__parse_cgroup(const char *text, struct container_info *ci)
{
	const char *first = NULL, *pod = NULL;
	size_t first_len = 0, pod_len = 0;
	bool any = false;

	ci->id[0] = ci->runtime[0] = ci->pod_uid[0] = ci->cgroup[0] = '\0';
	/* pass 0: the v2 line; pass 1: the v1 lines in their order */
	for (int pass = 0; pass < 2; pass++) {
		for (const char *line = text; *line;) {
			const char *nl = strchr(line, '\n'), *path;
			size_t len = nl ? (size_t)(nl - line) : strlen(line), plen;
			struct found f;
			bool v2;

			if (cgroup_line(line, len, &path, &plen, &v2) && v2 == !pass) {
				any = true;
				if (!first) {
					first = path;
					first_len = plen;
				}
				parse_path(path, plen, &f);
				if (f.id[0]) {
					take(ci, &f, path, plen);
					return 0;
				}
				if (f.pod_uid[0] && !pod) {
					take(ci, &f, path, plen);
					pod = path;
					pod_len = plen;
				}
			}
			line = nl ? nl + 1 : line + len;
		}
	}
	if (pod)
		set_cgroup(ci, pod, pod_len);
	else if (first)
		set_cgroup(ci, first, first_len);
	return any ? 0 : -EINVAL;
}

int container__parse_status(const char *text, struct container_info *ci)
{
	const char *p = text;

	ci->ns_pid = ci->ns_levels = 0;
	while (p && *p) {
		if (!strncmp(p, "NSpid:", 6)) {
			const char *q = p + 6;

			for (;;) {
				char *end;
				unsigned long v;

				while (*q == ' ' || *q == '\t')
					q++;
				if (*q < '0' || *q > '9')
					break;
				v = strtoul(q, &end, 10);
				if (v > UINT32_MAX)
					break;
				ci->ns_pid = v;
				ci->ns_levels++;
				q = end;
			}
			return ci->ns_levels ? 0 : -EINVAL;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -ENOENT;
}

/* the file into a malloc'ed, NUL-terminated buffer of at most PROC_FILE_MAX bytes */
static int slurp(const char *path, char **out)
{
	size_t len = 0;
	char *buf;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(PROC_FILE_MAX);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (len < PROC_FILE_MAX - 1) {
		ssize_t n = read(fd, buf + len, PROC_FILE_MAX - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = -errno;
		if (n <= 0)
			break;
		len += n;
	}
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	buf[len] = '\0';
	*out = buf;
	return 0;
}

int container__read_at(const char *proc, uint32_t pid, struct container_info *ci)
{
	char path[PATH_MAX], *text;
	int err, err2;

	memset(ci, 0, sizeof(*ci));
	snprintf(path, sizeof(path), "%s/%u/cgroup", proc, pid);
	err = slurp(path, &text);
	if (!err) {
		err = container__parse_cgroup(text, ci);
		free(text);
	}
	snprintf(path, sizeof(path), "%s/%u/status", proc, pid);
	err2 = slurp(path, &text);
	if (!err2) {
		/* no NSpid (before Linux 4.1): the in-namespace PID is not known, not an error */
		err2 = container__parse_status(text, ci);
		if (err2 == -ENOENT)
			err2 = 0;
		free(text);
	}
	return err ? err : err2;
}

int container__read(uint32_t pid, struct container_info *ci)
{
	return container__read_at("/proc", pid, ci);
}
