/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The command line. */
#ifndef TT_ENV_H
#define TT_ENV_H

#include <stdbool.h>
#include <stdint.h>
#include "events.h"
#include "markers.h"

#define ENV_PIDS_MAX	TT_MAX_TARGETS
#define ENV_COMMS_MAX	8

/* --budget's default: what the 10k tokens/s benchmark needs twice over (BENCHMARKS.md) */
#define ENV_BUDGET_DEFAULT	20000

struct env {
	uint32_t pids[ENV_PIDS_MAX];
	int npids;
	bool json;
	bool quiet;
	bool verbose;
	uint32_t capture_bytes;
	uint32_t ringbuf_bytes;
	uint32_t budget;	/* --budget: data records a second, on average; 0: no bound */
	uint16_t port;
	double interval_s;	/* between summaries; 0: only the final one */
	uint64_t count;		/* summaries before exiting; 0: until stopped */
	bool top;		/* --top */
	const char *metrics_addr;	/* --metrics [ADDR:]PORT */
	const char *perfetto_path;	/* --perfetto FILE */
	const char *record_path;	/* -w FILE */
	const char *replay_path;	/* -r FILE: no tracing, replay a recording */
	bool no_stalls;		/* no stall attribution: no sched hooks */
	bool stall_hooks_always;	/* --stall-hooks always: not only while a stream is quiet */
	bool stall_hooks_set;		/* --stall-hooks given */
	bool aggregate;		/* --aggregate: histograms in the kernel, no records */
	uint64_t stall_ns;	/* --stall-ms; 0: the adaptive rule */
	int hooks;		/* --hooks: enum hook_family (sys/loader.h), 0 auto */
	struct marker markers[TT_MARKERS_MAX];
	int nmarkers;
	bool show_query;	/* --show-query: paths keep their query strings */
	bool force;		/* --force: PID 1, kernel threads; replace others' files, links */
	/* finding the processes: --comm NAME..., --cgroup PATH, --port alone; -p follows forks */
	char comms[ENV_COMMS_MAX][16];
	int ncomms;
	const char *cgroup;
	bool no_follow;		/* --no-follow: children forked after attach are not traced */
	bool no_tls;		/* --no-tls: OpenSSL is not probed */
	unsigned int python_hz;	/* --python-hz: 0 no Python stacks */
	bool find;		/* processes are found (by name, cgroup or port), not only listed */
};

enum env_result {
	ENV_OK = 0,
	ENV_EXIT_OK = 1,	/* --help / --version printed */
	ENV_USAGE = 2,		/* bad command line: exit 2 */
};

enum env_result env__parse(struct env *e, int argc, char **argv);

#endif /* TT_ENV_H */
