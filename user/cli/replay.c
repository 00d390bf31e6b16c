// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* -r: a recording replayed through the outputs. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "app.h"
#include "record.h"
#include "session.h"
#include "util.h"

/* What is replayed, from where: a recording may come from anywhere, its strings are escaped */
static void say_replaying(const char *path, const struct rec_header *h,
			  const struct ready_info *ri)
{
	char comm[4 * 16], kern[4 * 65], mach[4 * 65], ver[4 * 33], when[32];
	char q[ARG_QUOTE_MAX];

	fmt_clock(when, sizeof(when), h->t_begin_ns);
	esc_term(comm, sizeof(comm), ri->comms[0], strnlen(ri->comms[0], sizeof(ri->comms[0])));
	esc_term(kern, sizeof(kern), h->kernel, strlen(h->kernel));
	esc_term(mach, sizeof(mach), h->machine, strlen(h->machine));
	esc_term(ver, sizeof(ver), h->tt_version, strlen(h->tt_version));
	fprintf(stderr, "tokentrace: replaying %s: PID %u (%s)%s, recorded at %s on Linux %s %s "
		"by tokentrace %s\n", arg_quote(q, path), ri->pids[0], comm,
		ri->npids > 1 ? " and others" : "", when, kern, mach, ver);
}

/*
 * -r: the recording's inputs into a session, in order, with no BPF and no clock: the outputs
 * print what they printed live.
 */
int app__replay(struct app *a)
{
	struct session_opts so = {};
	const struct rec_header *h;
	struct rec_reader *r;
	struct rec_entry e;
	char msg[256], q[ARG_QUOTE_MAX];
	const char *path = a->env.replay_path;
	int rc;

	rc = rec_reader__open(path, &r, msg, sizeof(msg));
	if (rc) {
		fprintf(stderr, "tokentrace: %s: %s\n", arg_quote(q, path), msg);
		return 1;
	}
	h = rec_reader__header(r);
	/* wall-clock times print as they did live; the session runs as it did live */
	set_wall_offset(h->wall_offset_ns);
	so.stalls = h->stalls;
	so.stall_ns = h->stall_ns;
	a->sess = session__new(&so);
	if (!a->sess) {
		fprintf(stderr, "tokentrace: out of memory\n");
		rec_reader__free(r);
		return 1;
	}
	if (app__setup_outputs(a)) {
		rec_reader__free(r);
		return 1;
	}
	while (!exiting && (rc = rec_reader__next(r, &e)) > 0) {
		switch (e.type) {
		case REC_READY:
			say_replaying(path, h, &e.ready);
			session__ready(a->sess, &e.ready);
			break;
		case REC_RECORD:
			session__record(a->sess, e.data, e.size);
			break;
		case REC_TICK:
			session__stall_hooks(a->sess, &e.hooks);
			session__tick(a->sess, e.now_ns, e.kstats, e.final);
			session__flush(a->sess);
			break;
		default:
			break;
		}
		if (app__stdout_failed(a))
			break;
	}
	session__drain(a->sess, true);
	session__flush(a->sess);
	app__stdout_failed(a);
	if (rc < 0 && !a->stdout_err)
		fprintf(stderr, "tokentrace: %s: %s\n", arg_quote(q, path), rec_reader__error(r));
	rc = (rc < 0 && !a->stdout_err) || exiting || (a->stdout_err && a->stdout_err != EPIPE);
	rec_reader__free(r);
	return rc;
}
