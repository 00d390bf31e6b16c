/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The BPF side's lifecycle: check the machine, open the skeleton, set its read-only
 * configuration and map sizes, load, attach, and detach. Every failure is explained in one
 * line on stderr; nothing stays attached after loader__close() or the process's death (links
 * are file descriptors, never pinned).
 */
#ifndef TT_LOADER_H
#define TT_LOADER_H

#include <stdbool.h>
#include <stdint.h>
#include "events.h"
#include "markers.h"
#include "stats.h"

/*
 * Which kernel hooks carry the socket data (bpf/tokentrace.bpf.c). AUTO takes the first the
 * kernel has, in this order: the socket tracepoints, fexit, kprobes, syscall tracepoints.
 */
enum hook_family {
	HOOKS_AUTO,
	HOOKS_TP,
	HOOKS_FEXIT,
	HOOKS_KPROBE,
	HOOKS_SYSCALL,
	HOOKS_NR,
};

const char *hook_family_name(enum hook_family f);
/* "tp", "fexit", "kprobe", "syscall", "auto": 0 or -EINVAL */
int hook_family_parse(const char *s, enum hook_family *f);

/* What the loader chose, for the ready announcement and -v. */
struct loader_choice {
	enum hook_family data;
	const char *ready;	/* how data-ready is seen: "tp", "fentry", "kprobe" or "none" */
	const char *sched;	/* "tp", "tp-nostate" (before 5.18), or "off" */
	const char *sys;	/* accept, close, the late exits: "fexit" (trampolines) or "tp" */
	bool loop;		/* bpf_loop() present: iovecs and segments walked in full */
	int tls_probes;		/* OpenSSL probes attached now (entry and return, per function
				 * and library file) */
	int py_cpus;		/* CPUs Python is sampled on (0: no sampling) */
	char why[256];		/* families tried before the chosen one, and why they failed */
};

struct loader_opts {
	const uint32_t *pids;
	int npids;
	uint32_t capture_bytes;
	uint32_t ringbuf_bytes;
	uint16_t port;		/* only connections on this local port; 0 = all */
	bool verbose;		/* libbpf's own log */
	bool stalls;		/* load the sched and TCP hooks of stall attribution */
	bool aggregate;		/* histograms in maps, no records */
	uint32_t budget;	/* data records a second, on average, in whole exchanges; 0: all */
	struct marker *markers;	/* --uprobe / --uretprobe / --usdt */
	int nmarkers;
	enum hook_family hooks;	/* --hooks */
	uint64_t span_floor_ns;	/* off-CPU spans sent with details from this long; 0: 10 ms */
	/* finding processes in the kernel: children, and new ones by name, cgroup, port */
	bool follow_forks;
	const char (*find_comms)[16];
	int nfind_comms;
	uint64_t find_cgroup;	/* cgroup v2 id */
	uint16_t find_port;	/* processes that accept on this port */
	bool tls;		/* probe OpenSSL: the plaintext of TLS connections */
	/* CPython's stacks, for stalls (needs stalls): sampled this often a second of CPU
	 * time, and walked where a thread blocks; 0: off */
	unsigned int python_hz;
	/* --stall-hooks lazy: the scheduler hooks attached only while loader__stall_hooks()
	 * says (a stream has been quiet); needs stalls */
	bool lazy_stalls;
};


struct loader;

/* Checks privileges, BTF and tracefs first (mounting tracefs if it is missing). */
int loader__open(const struct loader_opts *o, struct loader **out);
void loader__close(struct loader *l);

int loader__ringbuf_fd(const struct loader *l);
/* Probes attached now. */
int loader__nr_probes(struct loader *l);
const struct loader_choice *loader__choice(struct loader *l);
/*
 * A process joined the traced set (a fork, one found), or is looked at again: the OpenSSL
 * copies it maps, or will load, are probed unless they are already (probes are per library
 * file, for every process using it, the kernel side keeping the targets' calls). Probes
 * added.
 */
int loader__attach_process(struct loader *l, uint32_t pid);
/*
 * The process is gone (or runs another program: looked at again after): the OpenSSL copies
 * no live target uses any more are let go, after a short linger, by a thread of the loader.
 */
void loader__forget_process(struct loader *l, uint32_t pid);
/* Add a process to the targets: TT_TGT_* flags (a peer: its time only). 0 or -errno. */
int loader__add_target(struct loader *l, uint32_t pid, uint8_t flags);
struct tt_py_proc;
/* Name CPython frames of pid from now on (pyinfo.h says where its runtime is), or stop. */
int loader__py_add(struct loader *l, uint32_t pid, const struct tt_py_proc *p);
void loader__py_del(struct loader *l, uint32_t pid);
/* The kernel side's Python counters, enum tt_py_stat order: 0 or -errno. */
int loader__py_stats(const struct loader *l, uint64_t *out);

/* Stop emitting records for a connection (its id). */
int loader__ignore_conn(struct loader *l, uint64_t conn_id);
struct agg_totals;
/* --aggregate: the kernel's histograms, summed over the CPUs (they only grow). */
int loader__agg_read(const struct loader *l, struct agg_totals *out);
/* Sum of the per-CPU counters, enum tt_stat order. */
int loader__read_stats(const struct loader *l, uint64_t out[TT_STAT_NR]);

/*
 * --stall-hooks lazy: have the scheduler hooks attached (on) or detached, by the loader's
 * thread for them (a detach can take a few hundred ms); returns at once: 0, or the -errno of
 * an attach that failed since the last call. A no-op without lazy hooks.
 */
int loader__stall_hooks(struct loader *l, bool on);
void loader__stall_hook_stats(struct loader *l, struct stall_hook_stats *out);

#endif /* TT_LOADER_H */
