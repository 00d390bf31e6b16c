// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The outputs and the recording, connected to the session: which outputs the command line
 * asked for, the ready announcement (stderr and every output), -w's file, stdout's health.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "app.h"
#include "loader.h"
#include "outputs.h"
#include "python.h"
#include "record.h"
#include "session.h"
#include "targets.h"
#include "util.h"

void app__announce(struct app *a)
{
	struct ready_info ri = {
		.t_ns = now_mono_ns(),
		.npids = MIN(targets__count(a->targets), READY_PIDS_MAX),
		.npids_total = targets__count(a->targets),
		.probes = loader__nr_probes(a->loader),
		.capture_bytes = a->env.capture_bytes,
		.ringbuf_bytes = a->env.ringbuf_bytes,
	};
	const struct loader_choice *ch = loader__choice(a->loader);
	const uint32_t *pids = targets__pids(a->targets);
	char comm[4 * 16];

	for (int i = 0; i < ri.npids; i++) {
		ri.pids[i] = pids[i];
		strncpy_cut(ri.comms[i], sizeof(ri.comms[i]), targets__comm(a->targets, i), 16);
	}

	snprintf(ri.hooks, sizeof(ri.hooks),
		 "data=%s ready=%s sched=%s sys=%s loop=%s tls=%d python=%d",
		 hook_family_name(ch->data), ch->ready, ch->sched, ch->sys, ch->loop ? "yes" : "no",
		 ch->tls_probes, pyctl__nprocs(a->py));
	for (int i = 0; i < a->env.nmarkers; i++)
		ri.marker_kind[i] = a->env.markers[i].kind;
	ri.nmarkers = a->env.nmarkers;
	session__ready(a->sess, &ri);
	if (a->rec)
		recorder__ready(a->rec, &ri);
	a->announced = true;
	esc_term(comm, sizeof(comm), targets__comm(a->targets, 0),
		 strnlen(targets__comm(a->targets, 0), 16));
	fprintf(stderr, "tokentrace: attached to PID %u (%s)%s: %d probes (%s), capture %u KiB, "
		"ring buffer %u MiB. Ctrl-C to stop.\n", ri.npids ? pids[0] : 0, comm,
		ri.npids_total > 1 ? " and others" : "", ri.probes, ri.hooks,
		a->env.capture_bytes >> 10, a->env.ringbuf_bytes >> 20);
}

static int add_output(struct app *a, int (*make)(struct output *, const struct output_opts *),
		      const struct output_opts *oo)
{
	struct output o;
	int err = make(&o, oo);

	if (err)
		return err;	/* the output said why */
	if (session__add_output(a->sess, &o)) {
		o.ops->free(o.priv);
		fprintf(stderr, "tokentrace: too many outputs\n");
		return -E2BIG;
	}
	return 0;
}

int app__setup_outputs(struct app *a)
{
	struct output_opts oo = {
		.f = stdout,
		.quiet = a->env.quiet,
		.color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR"),
		.live = session__live_view(a->sess),
		.addr = a->env.metrics_addr,
		.path = a->env.perfetto_path,
		.stall_ns = a->env.stall_ns,
		.show_query = a->env.show_query,
		.force = a->env.force,
		.failed = &a->out_failed,
	};
	int err;

	if (a->env.metrics_addr && (err = add_output(a, output_metrics__new, &oo)))
		return err;
	if (a->env.perfetto_path && (err = add_output(a, output_perfetto__new, &oo)))
		return err;
	/* stdout's: --top last, its screen comes up once the rest is in place */
	if (a->env.top)
		return add_output(a, output_top__new, &oo);
	return add_output(a, a->env.json ? output_json__new : output_text__new, &oo);
}

/* -w: the header says what was traced, where, and how */
int app__start_recording(struct app *a, int argc, char **argv)
{
	struct rec_header h = {
		.t_begin_ns = now_mono_ns(),
		.capture_bytes = a->env.capture_bytes,
		.ringbuf_bytes = a->env.ringbuf_bytes,
		.port = a->env.port,
		.npids = MIN(targets__count(a->targets), READY_PIDS_MAX),
		.stalls = !a->env.no_stalls,
		.stall_ns = a->env.stall_ns,
	};
	char why[256], q[ARG_QUOTE_MAX];
	size_t n = 0;
	int err;

	for (int i = 0; i < h.npids; i++)
		h.pids[i] = targets__pids(a->targets)[i];
	for (int i = 0; i < argc && n < sizeof(h.cmdline) - 1; i++)
		n += snprintf(h.cmdline + n, sizeof(h.cmdline) - n, "%s%s", i ? " " : "", argv[i]);
	err = recorder__open(a->env.record_path, a->env.force ? REC_FORCE : 0, &h, &a->rec, why,
			     sizeof(why));
	if (err)
		fprintf(stderr, "tokentrace: -w %s: %s\n", arg_quote(q, a->env.record_path), why);
	return err;
}

void app__record_flush(struct app *a)
{
	char q[ARG_QUOTE_MAX];
	int err;

	if (!a->rec || a->rec_failed || !(err = recorder__flush(a->rec)))
		return;
	fprintf(stderr, "tokentrace: -w %s: write failed: %s; the recording stops here\n",
		arg_quote(q, a->env.record_path), strerror(-err));
	a->rec_failed = true;
}

int app__stop_recording(struct app *a)
{
	char q[ARG_QUOTE_MAX];
	int err;

	if (!a->rec)
		return 0;
	if (!a->announced) {	/* nothing was traced: leave no empty recording behind */
		recorder__discard(a->rec);
		a->rec = NULL;
		return 0;
	}
	err = recorder__close(a->rec);
	a->rec = NULL;
	if (err && !a->rec_failed)
		fprintf(stderr, "tokentrace: -w %s: write failed: %s\n",
			arg_quote(q, a->env.record_path), strerror(-err));
	return err;
}

/*
 * stdout could not be written: the reader went away (a closed pipe, SIGPIPE is ignored: stop
 * quietly) or a real failure (said once). True when output should stop.
 */
bool app__stdout_failed(struct app *a)
{
	if (!ferror(stdout))
		return false;
	if (!a->stdout_err) {
		a->stdout_err = errno ? errno : EIO;
		if (a->stdout_err != EPIPE)
			fprintf(stderr, "tokentrace: writing stdout failed: %s\n",
				strerror(a->stdout_err));
	}
	return true;
}

/* A record the session made (a stack's text), for the recording: before the one needing it */
void app__aux_record(void *ud, const void *rec, size_t size)
{
	struct app *a = ud;

	if (a->rec)
		recorder__record(a->rec, rec, size);
}
