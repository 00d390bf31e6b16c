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

struct loader_opts {
	const uint32_t *pids;
	int npids;
	uint32_t capture_bytes;
	uint32_t ringbuf_bytes;
	uint16_t port;		/* only connections on this local port; 0 = all */
	bool verbose;		/* libbpf's own log */
	bool stalls;		/* load the sched and TCP hooks of stall attribution */
	bool aggregate;		/* histograms in maps, no records */
	struct marker *markers;	/* --uprobe / --uretprobe / --usdt */
	int nmarkers;
};

struct loader;

/* Checks privileges, BTF and tracefs first (mounting tracefs if it is missing). */
int loader__open(const struct loader_opts *o, struct loader **out);
void loader__close(struct loader *l);

int loader__ringbuf_fd(const struct loader *l);
int loader__nr_probes(const struct loader *l);
/* Stop emitting records for a connection (kernel socket address). */
int loader__ignore_conn(struct loader *l, uint64_t sk);
/* A stack of the stacks map: up to TT_STACK_DEPTH addresses, returns how many or -errno. */
int loader__stack(const struct loader *l, int32_t id, uint64_t *ips);
struct agg_totals;
/* --aggregate: the histograms of every live connection and of the closed ones, summed. */
int loader__agg_read(const struct loader *l, struct agg_totals *out);
/* Sum of the per-CPU counters, enum tt_stat order. */
int loader__read_stats(const struct loader *l, uint64_t out[TT_STAT_NR]);

#endif /* TT_LOADER_H */
