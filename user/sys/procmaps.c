// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <sys/stat.h>
#include "procmaps.h"
#include "vec.h"

int procmaps__load(uint32_t pid, struct proc_map **maps, size_t *n)
{
	char fn[64], line[PATH_MAX + 128];
	struct proc_map *v = NULL;
	size_t cnt = 0, cap = 0;
	FILE *f;

	snprintf(fn, sizeof(fn), "/proc/%u/maps", pid);
	f = fopen(fn, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off, inode;
		char perms[8];
		int pos = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %llu %n", &start, &end, perms, &off,
			   &inode, &pos) < 5 || !pos)
			continue;
		if (!inode || line[pos] != '/')
			continue;	/* anonymous, [heap], [stack], [vdso]... */
		if (VEC_RESERVE(v, &cap, cnt + 1, SIZE_MAX)) {
			free(v);
			fclose(f);
			return -ENOMEM;
		}
		line[strcspn(line, "\n")] = '\0';
		v[cnt].start = start;
		v[cnt].end = end;
		v[cnt].off = off;
		v[cnt].exec = perms[2] == 'x';
		snprintf(v[cnt].path, sizeof(v[cnt].path), "%s", line + pos);
		cnt++;
	}
	fclose(f);
	*maps = v;
	*n = cnt;
	return 0;
}

/*
 * Does the mapped file at path name the binary the user gave? A bare name matches the file's
 * base name ("libssl.so" also matches "libssl.so.3"); anything with a '/' is a file on this
 * machine, relative to the current directory, through symlinks, as perf and bpftrace take
 * it: the same file (device and inode) as the mapped one, seen through the process's root.
 */
static int names(uint32_t pid, const char *path, const char *binary, const struct stat *want)
{
	const char *base = strrchr(path, '/');
	size_t n = strlen(binary);
	char inproc[PATH_MAX + 32];
	struct stat st;

	if (want) {
		snprintf(inproc, sizeof(inproc), "/proc/%u/root%s", pid, path);
		return !stat(inproc, &st) && st.st_dev == want->st_dev && st.st_ino == want->st_ino;
	}
	base = base ? base + 1 : path;
	return !strcmp(base, binary) || (!strncmp(base, binary, n) && base[n] == '.');
}

int procmaps__find_binary(uint32_t pid, const char *binary, char *path, size_t sz)
{
	struct proc_map *maps;
	const char *found = NULL;
	struct stat want;
	bool by_file = strchr(binary, '/') != NULL;
	size_t n;
	int err;

	if (by_file && stat(binary, &want))
		return -errno == -ENOENT ? -ENOENT : -errno;
	err = procmaps__load(pid, &maps, &n);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		/* the same file mapped several times (text, data) is one */
		if (found && !strcmp(found, maps[i].path))
			continue;
		if (!names(pid, maps[i].path, binary, by_file ? &want : NULL))
			continue;
		if (found) {
			free(maps);
			return -EEXIST;
		}
		found = maps[i].path;
	}
	if (found)
		snprintf(path, sz, "%s", found);
	free(maps);
	return found ? 0 : -ENOENT;
}

const struct proc_map *procmaps__lookup(const struct proc_map *maps, size_t n, uint64_t addr)
{
	for (size_t i = 0; i < n; i++)
		if (addr >= maps[i].start && addr < maps[i].end)
			return &maps[i];
	return NULL;
}
