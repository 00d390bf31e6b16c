// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "procmaps.h"

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
		if (cnt == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct proc_map *nv = realloc(v, nc * sizeof(*nv));

			if (!nv) {
				free(v);
				fclose(f);
				return -ENOMEM;
			}
			v = nv;
			cap = nc;
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

static int names(const char *path, const char *binary)
{
	const char *base = strrchr(path, '/');
	size_t n = strlen(binary);

	if (!strcmp(path, binary))
		return 1;
	if (strchr(binary, '/'))
		return 0;	/* a path that is not this one */
	base = base ? base + 1 : path;
	return !strcmp(base, binary) || (!strncmp(base, binary, n) && base[n] == '.');
}

int procmaps__find_binary(uint32_t pid, const char *binary, char *path, size_t sz)
{
	struct proc_map *maps;
	const char *found = NULL;
	size_t n;
	int err;

	err = procmaps__load(pid, &maps, &n);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		if (!names(maps[i].path, binary))
			continue;
		if (found && strcmp(found, maps[i].path)) {
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
