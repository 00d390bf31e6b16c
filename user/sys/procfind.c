// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Finding processes by name, cgroup or listening port. See procfind.h. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "procfind.h"
#include "vec.h"

#define INODES_MAX	4096
#define TCP_LISTEN	0x0a

/*
 * Where the cgroup v2 hierarchy is mounted: /sys/fs/cgroup on unified hosts, often
 * /sys/fs/cgroup/unified on hybrid ones.
 */
int procfind__cgroup2_root(char *buf, size_t sz)
{
	char line[1024], dev[256], dir[PATH_MAX], type[64];
	FILE *f = fopen("/proc/self/mounts", "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%255s %4095s %63s", dev, dir, type) == 3 &&
		    !strcmp(type, "cgroup2")) {
			snprintf(buf, sz, "%s", dir);
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

int procfind__cgroup(const char *path, uint64_t *id, char *rel, size_t relsz)
{
	char root[PATH_MAX], full[PATH_MAX + 8], real[PATH_MAX];
	struct stat st;
	size_t n;

	if (procfind__cgroup2_root(root, sizeof(root))) {
		fprintf(stderr, "tokentrace: --cgroup: no cgroup v2 hierarchy is mounted\n");
		return -ENOENT;
	}
	if (path[0] == '/')
		snprintf(full, sizeof(full), "%s", path);
	else
		snprintf(full, sizeof(full), "%s/%s", root, path);
	if (!realpath(full, real) || stat(real, &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "tokentrace: --cgroup %.100s: no such cgroup directory (%s)\n", path,
			strerror(errno ? errno : ENOTDIR));
		return -ENOENT;
	}
	n = strlen(root);
	if (strncmp(real, root, n) || (real[n] && real[n] != '/')) {
		fprintf(stderr, "tokentrace: --cgroup %.100s: not under %s (the cgroup v2 "
			"hierarchy)\n", path, root);
		return -EINVAL;
	}
	/* cgroup v2: the id bpf_get_current_cgroup_id() gives is the directory's inode */
	*id = st.st_ino;
	snprintf(rel, relsz, "%s", real[n] ? real + n : "/");
	return 0;
}

static bool read_small(const char *path, char *buf, size_t sz)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, sz - 1, f);
	fclose(f);
	buf[n] = '\0';
	return true;
}

int procfind__comm(uint32_t pid, char *buf, size_t sz)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	if (!read_small(path, buf, sz))
		return -errno;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int procfind__stat(uint32_t pid, struct proc_stat *st)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	if (!read_small(path, buf, sizeof(buf)))
		return -errno;
	/* comm may hold spaces and parentheses: the fields start after the last ')' */
	p = strrchr(buf, ')');
	memset(st, 0, sizeof(*st));
	if (!p || sscanf(p + 1, " %c %u %*d %*d %*d %*d %lu", &st->state, &st->ppid,
			 &st->flags) != 3)
		return -EINVAL;
	return 0;
}

static bool comm_is(uint32_t pid, const struct procfind *q)
{
	char comm[64];

	if (procfind__comm(pid, comm, sizeof(comm)))
		return false;
	for (int i = 0; i < q->ncomms; i++)
		if (!strncmp(comm, q->comms[i], 15))
			return true;
	return false;
}

static bool in_cgroup(uint32_t pid, const struct procfind *q)
{
	char path[64], buf[4096], *line;

	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	if (!read_small(path, buf, sizeof(buf)))
		return false;
	/* the v2 line: "0::/system.slice/x.service"; the cgroup or one below it */
	for (line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		size_t n = strlen(q->cgroup_rel);

		if (strncmp(line, "0::", 3))
			continue;
		line += 3;
		if (!strcmp(q->cgroup_rel, "/") ||
		    (!strncmp(line, q->cgroup_rel, n) && (line[n] == '\0' || line[n] == '/')))
			return true;
	}
	return false;
}

/* the inodes of the listening sockets on port, from the system-wide tables */
static int listen_inodes(uint16_t port, unsigned long *ino, int max)
{
	static const char *const files[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	int n = 0;

	for (size_t i = 0; i < 2; i++) {
		char line[512];
		FILE *f = fopen(files[i], "re");

		if (!f)
			continue;
		if (!fgets(line, sizeof(line), f)) {
			fclose(f);
			continue;
		}
		while (n < max && fgets(line, sizeof(line), f)) {
			unsigned int p, st;
			unsigned long inode;
			char local[64], *colon;

			if (sscanf(line, "%*d: %63s %*s %x %*s %*s %*s %*d %*d %lu", local, &st,
				   &inode) != 3 || st != TCP_LISTEN)
				continue;
			colon = strrchr(local, ':');
			if (colon && sscanf(colon + 1, "%x", &p) == 1 && p == port && inode)
				ino[n++] = inode;
		}
		fclose(f);
	}
	return n;
}

static bool has_socket(uint32_t pid, const unsigned long *ino, int nino)
{
	char dir[32], link[64], target[64];
	struct dirent *d;
	bool found = false;
	DIR *dp;

	snprintf(dir, sizeof(dir), "/proc/%u/fd", pid);
	dp = opendir(dir);
	if (!dp)
		return false;
	while (!found && (d = readdir(dp))) {
		unsigned long v;
		ssize_t len;

		if (d->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%.20s", dir, d->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (sscanf(target, "socket:[%lu]", &v) != 1)
			continue;
		for (int i = 0; i < nino && !found; i++)
			found = ino[i] == v;
	}
	closedir(dp);
	return found;
}

/* a kernel thread has no user-space memory: its /proc/PID/exe cannot be read */
static bool is_user_process(uint32_t pid)
{
	char path[64], buf[16];

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	return readlink(path, buf, sizeof(buf)) > 0;
}

static uint32_t ppid_of(uint32_t pid)
{
	struct proc_stat st;

	return procfind__stat(pid, &st) ? 0 : st.ppid;
}

int procfind__descendants(const uint32_t *pids, int n, uint32_t *out, int max)
{
	struct { uint32_t pid, ppid; } *all = NULL;
	size_t nall = 0, cap = 0;
	int nout = 0;
	bool grew = true;
	struct dirent *d;
	DIR *dp = opendir("/proc");

	if (!dp)
		return -errno;
	while ((d = readdir(dp))) {
		char *end;
		unsigned long pid = strtoul(d->d_name, &end, 10);

		if (!isdigit((unsigned char)d->d_name[0]) || *end)
			continue;
		if (VEC_RESERVE(all, &cap, nall + 1, SIZE_MAX)) {
			closedir(dp);
			free(all);
			return -ENOMEM;
		}
		all[nall].pid = pid;
		all[nall++].ppid = ppid_of(pid);
	}
	closedir(dp);
	/* the tree, level by level: a child whose parent is in the set joins it */
	while (grew && nout < max) {
		grew = false;
		for (size_t i = 0; i < nall && nout < max; i++) {
			bool in = false, parent = false;

			for (int j = 0; j < n && !in; j++)
				in = all[i].pid == pids[j];
			for (int j = 0; j < nout && !in; j++)
				in = all[i].pid == out[j];
			if (in)
				continue;
			for (int j = 0; j < n && !parent; j++)
				parent = all[i].ppid == pids[j];
			for (int j = 0; j < nout && !parent; j++)
				parent = all[i].ppid == out[j];
			if (parent && is_user_process(all[i].pid)) {
				out[nout++] = all[i].pid;
				grew = true;
			}
		}
	}
	free(all);
	return nout;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int procfind__scan(const struct procfind *q, uint32_t self, uint32_t *out, int max)
{
	unsigned long *ino = NULL;
	int nino = 0, n = 0;
	struct dirent *d;
	DIR *dp;

	if (q->port) {
		ino = calloc(INODES_MAX, sizeof(*ino));
		if (!ino)
			return -ENOMEM;
		nino = listen_inodes(q->port, ino, INODES_MAX);
	}
	dp = opendir("/proc");
	if (!dp) {
		free(ino);
		return -errno;
	}
	while ((d = readdir(dp))) {
		char *end;
		unsigned long pid = strtoul(d->d_name, &end, 10);

		if (!isdigit((unsigned char)d->d_name[0]) || *end || pid == self || pid == 1)
			continue;
		if (!((q->ncomms && comm_is(pid, q)) || (q->cgroup_id && in_cgroup(pid, q)) ||
		      (nino && has_socket(pid, ino, nino))))
			continue;
		if (!is_user_process(pid))
			continue;
		if (n < max)
			out[n] = pid;
		n++;
	}
	closedir(dp);
	free(ino);
	qsort(out, n < max ? n : max, sizeof(*out), cmp_u32);
	return n;
}
