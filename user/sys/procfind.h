/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Finding the processes to trace without a PID list: by name (--comm), by cgroup (--cgroup,
 * a container or a systemd service) or by the local TCP port they listen on (--port), as
 * they are now; the kernel side finds the ones that come later (bpf/tokentrace.bpf.c).
 */
#ifndef TT_PROCFIND_H
#define TT_PROCFIND_H

#include <stddef.h>
#include <stdint.h>

struct procfind {
	const char (*comms)[16];	/* process names (comm, at most 15 bytes) */
	int ncomms;
	uint64_t cgroup_id;		/* cgroup v2 directory's inode, 0: none */
	const char *cgroup_rel;		/* its path below the cgroup root, "/system.slice/..." */
	uint16_t port;			/* listening TCP port, 0: none */
};

/* The cgroup v2 mount point into buf. 0 or -ENOENT. */
int procfind__cgroup2_root(char *buf, size_t sz);

/*
 * The cgroup v2 id and relative path of PATH (absolute, or below the cgroup v2 root). 0 or -errno
 * with a one-line message on stderr.
 */
int procfind__cgroup(const char *path, uint64_t *id, char *rel, size_t relsz);

/*
 * Live user-space processes matching any criterion, except pid `self`; up to max pids in
 * out, sorted. Returns how many matched (more than max: only max written), or -errno.
 */
int procfind__scan(const struct procfind *q, uint32_t self, uint32_t *out, int max);

/*
 * The processes descended from pids[0..n) (children, their children...), not in the list;
 * up to max in out. Returns how many were written, or -errno.
 */
int procfind__descendants(const uint32_t *pids, int n, uint32_t *out, int max);

/* /proc/PID/stat, what is read of it */
struct proc_stat {
	char state;		/* R, S, D, Z (a zombie), X ... */
	uint32_t ppid;
	unsigned long flags;	/* PF_*: PF_KTHREAD 0x00200000 */
};

/* 0, or -errno (-ENOENT: no such process) */
int procfind__stat(uint32_t pid, struct proc_stat *st);
/* /proc/PID/comm into buf: 0 or -errno */
int procfind__comm(uint32_t pid, char *buf, size_t sz);

#endif /* TT_PROCFIND_H */
