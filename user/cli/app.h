/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The command line's run, shared by its files: tokentrace.c starts and ends it, loop.c is
 * the main loop and its ticks, procs.c follows the traced set as it changes, wiring.c
 * connects the outputs and the recording, replay.c replays a recording.
 */
#ifndef TT_CLI_APP_H
#define TT_CLI_APP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "aggregate.h"
#include "env.h"

struct hmap;
struct loader;
struct pyctl;
struct recorder;
struct ring_buffer;
struct session;
struct symbolizer;
struct targets;

/* SIGINT/SIGTERM: the signal, once asked to stop; a second one exits at once */
extern volatile sig_atomic_t exiting;

struct app {
	struct env env;
	struct targets *targets;	/* the processes traced from the start */
	struct agg_totals agg_prev;	/* --aggregate: the kernel's totals at the last summary */
	struct symbolizer *sym;
	struct loader *loader;
	struct pyctl *py;		/* CPython processes' stacks, for stalls */
	struct session *sess;
	struct ring_buffer *rb;
	uint64_t arm_at, arm_scan_next;	/* stall_hooks(): the streams' moment, and its scan */
	bool hooks_failure_told;
	struct recorder *rec;		/* -w: the session's inputs, as they were fed */
	bool rec_failed;
	bool out_failed;		/* an output (--perfetto) could not write: exit 1 */
	bool announced;
	int stdout_err;			/* errno of the first failed write to stdout */
	/* processes alive that joined since the start: children, found ones, Unix peers */
	struct hmap *joined;
	uint64_t nprocs_live;		/* traced processes alive that joined since the start */
	bool proc_exited;		/* one did, since the main loop last looked */
};

/* loop.c */
int app__run(struct app *a);
/* A summary of the interval, or the final one. */
void app__summary(struct app *a, bool final);
/* --aggregate: what the kernel's histograms gained since the last summary */
void app__harvest(struct app *a);

/* procs.c: the ring buffer's records, into the session (the traced set followed) */
int app__on_record(void *ctx, void *data, size_t size);
/* Every traced process looked at again for OpenSSL it loaded since. */
void app__rescan_tls(struct app *a);
int app__procs_init(struct app *a);
void app__procs_free(struct app *a);

/* wiring.c */
int app__setup_outputs(struct app *a);
void app__announce(struct app *a);
int app__start_recording(struct app *a, int argc, char **argv);
void app__record_flush(struct app *a);
int app__stop_recording(struct app *a);
/* A record the session made, for the recording (session_opts.aux_record). */
void app__aux_record(void *ud, const void *rec, size_t size);
/* stdout could not be written: said once unless the reader went away. True: stop output. */
bool app__stdout_failed(struct app *a);

/* replay.c: -r, the recording through the outputs; the exit code */
int app__replay(struct app *a);

#endif /* TT_CLI_APP_H */
