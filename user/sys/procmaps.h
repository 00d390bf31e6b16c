/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A process's file mappings, from /proc/PID/maps. */
#ifndef TT_PROCMAPS_H
#define TT_PROCMAPS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

struct proc_map {
	uint64_t start, end;	/* virtual addresses */
	uint64_t off;		/* file offset of start */
	char path[PATH_MAX];	/* as the process sees it; "" for anonymous mappings */
	int exec;		/* mapped executable */
};

/* All file-backed mappings of pid. 0 or -errno; *maps is malloc'ed. */
int procmaps__load(uint32_t pid, struct proc_map **maps, size_t *n);

/*
 * The file pid maps that binary names: a bare name matches a mapped file whose base name is
 * BINARY or starts with "BINARY." (libfoo -> libfoo.so.1); a path (anything with a '/') is
 * taken relative to the current directory, through symlinks, and matches the mapped file
 * that is the same file. 0 with the mapped path, -ENOENT if nothing matches, -EEXIST if
 * several different files match.
 */
int procmaps__find_binary(uint32_t pid, const char *binary, char *path, size_t sz);

/* The mapping of pid containing addr, or NULL. */
const struct proc_map *procmaps__lookup(const struct proc_map *maps, size_t n, uint64_t addr);

#endif /* TT_PROCMAPS_H */
