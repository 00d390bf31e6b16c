// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --perfetto FILE: the requests on a timeline, as Chrome Trace Event JSON (the array form,
 * which the Perfetto UI and chrome://tracing open; a file cut short by a crash still opens).
 *
 * A process per traced PID; a track (tid) per connection, named like its address pair; a
 * slice per request with its numbers in args, and inside it "prefill/TTFT" (start to first
 * token) and "generation" (first to last token); an instant per token; a slice per stall,
 * named by its cause; instants for the server's own markers (admitted, first token made,
 * generation done). Pipelined requests that overlap on one connection get a second track;
 * an HTTP/2 stream gets a track of its own ("ADDR#STREAM"), its streams overlapping freely.
 * Times are CLOCK_MONOTONIC in microseconds with ns decimals.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "hmap.h"
#include "json_writer.h"
#include "outputs.h"
#include "util.h"

#define LANES_MAX	4	/* tracks per connection for overlapping (pipelined) requests */

/* A connection's tracks, by conn_id; one struct per process sharing the socket. */
struct pconn {
	struct pconn *next;	/* another process with the same conn_id */
	uint64_t conn_id;
	uint32_t pid;
	int tid[LANES_MAX];
	uint64_t busy_until[LANES_MAX];
	int nlanes;
};

struct out_perfetto {
	struct output_opts o;
	FILE *f;
	char *path;
	struct jw w;
	bool any;		/* an event is written: the next one needs a comma */
	bool failed;
	int next_tid;
	struct hmap *tracks;	/* conn_id -> struct pconn chain */
	uint32_t procs[64];	/* PIDs with a process_name */
	int nprocs;
};

/*
 * A time in µs with its ns as three decimals. The writer has no fixed-point numbers and its
 * %g would round 16 digits away: the integer part goes through it, the decimals after it.
 */
static void ts_us(struct jw *w, const char *key, uint64_t ns)
{
	char frac[8];

	jw__ku64(w, key, ns / 1000);
	jw__raw(w, frac, snprintf(frac, sizeof(frac), ".%03u", (unsigned int)(ns % 1000)));
}

/* The first failed write: said once, no more writes, and the run exits 1. */
static void write_failed(struct out_perfetto *op, int err)
{
	char q[ARG_QUOTE_MAX];

	if (op->failed)
		return;
	fprintf(stderr, "tokentrace: --perfetto %s: write failed: %s\n", arg_quote(q, op->path),
		strerror(err ? err : EIO));
	op->failed = true;
	if (op->o.failed)
		*op->o.failed = true;
}

static void emit(struct out_perfetto *op)
{
	struct jw *w = &op->w;

	if (op->failed || w->oom) {
		jw__reset(w);
		return;
	}
	if (op->any)
		fputc(',', op->f);
	op->any = true;
	jw__flush_line(w, op->f);
	if (ferror(op->f))
		write_failed(op, errno);
}

/* {"ph":ph,"pid":pid,"tid":tid,"name":name, ... (the caller adds and closes) */
static void ev_open(struct jw *w, const char *ph, uint32_t pid, int tid, const char *name)
{
	jw__obj_open(w);
	jw__kstr(w, "ph", ph);
	jw__ku64(w, "pid", pid);
	jw__ku64(w, "tid", tid);
	jw__kstr(w, "name", name);
}

static void meta(struct out_perfetto *op, uint32_t pid, int tid, const char *what,
		 const char *name, int64_t sort)
{
	struct jw *w = &op->w;

	ev_open(w, "M", pid, tid, what);
	jw__key(w, "args");
	jw__obj_open(w);
	if (name)
		jw__kstr(w, "name", name);
	else
		jw__ki64(w, "sort_index", sort);
	jw__obj_close(w);
	jw__obj_close(w);
	emit(op);
}

static void process(struct out_perfetto *op, uint32_t pid, const char *comm)
{
	for (int i = 0; i < op->nprocs; i++)
		if (op->procs[i] == pid)
			return;
	if (op->nprocs < (int)ARRAY_SIZE(op->procs))
		op->procs[op->nprocs++] = pid;
	meta(op, pid, 0, "process_name", comm && comm[0] ? comm : "?", 0);
}

static void slice(struct out_perfetto *op, uint32_t pid, int tid, const char *cat,
		  const char *name, uint64_t b, uint64_t e)
{
	struct jw *w = &op->w;

	ev_open(w, "X", pid, tid, name);
	jw__kstr(w, "cat", cat);
	ts_us(w, "ts", b);
	ts_us(w, "dur", e > b ? e - b : 0);
}

static void instant(struct out_perfetto *op, uint32_t pid, int tid, const char *cat,
		    const char *name, uint64_t t)
{
	struct jw *w = &op->w;

	ev_open(w, "i", pid, tid, name);
	jw__kstr(w, "cat", cat);
	jw__kstr(w, "s", "t");
	ts_us(w, "ts", t);
}

/* A track's key: the connection, or an HTTP/2 connection's stream (ids are far below 2^40) */
static uint64_t track_key(const struct tt_request *r)
{
	return r->h2 ? r->conn_id ^ (uint64_t)r->h2_stream << 40 ^ 1ull << 62 : r->conn_id;
}

static int lane_of(struct out_perfetto *op, const struct tt_request *r, uint64_t b, uint64_t e)
{
	uint64_t key = track_key(r);
	struct pconn *head = hmap__get(op->tracks, key), *k;
	int i;

	for (k = head; k; k = k->next)
		if (k->pid == r->pid)
			break;
	if (!k) {
		k = calloc(1, sizeof(*k));
		if (!k)
			return 0;
		k->conn_id = key;
		k->pid = r->pid;
		k->next = head;
		if (hmap__put(op->tracks, key, k)) {
			free(k);
			return 0;
		}
	}
	for (i = 0; i < k->nlanes; i++)
		if (k->busy_until[i] <= b)
			break;
	if (i == k->nlanes) {
		char name[REQ_ADDR_MAX + 16];

		if (k->nlanes == LANES_MAX) {
			i = LANES_MAX - 1;	/* deeper pipelines overlap on the last track */
			goto found;
		}
		k->tid[i] = ++op->next_tid;
		k->nlanes++;
		if (r->h2)
			snprintf(name, sizeof(name), "%s#%u", r->conn, r->h2_stream);
		else if (i)
			snprintf(name, sizeof(name), "%s (%d)", r->conn, i + 1);
		else
			snprintf(name, sizeof(name), "%s", r->conn[0] ? r->conn : "connection");
		meta(op, r->pid, k->tid[i], "thread_name", name, 0);
		meta(op, r->pid, k->tid[i], "thread_sort_index", NULL, k->tid[i]);
	}
found:
	if (e > k->busy_until[i])
		k->busy_until[i] = e;
	return k->tid[i];
}

static void kstr_opt(struct jw *w, const char *key, const char *s)
{
	if (s && s[0])
		jw__kstr(w, key, s);
}

static void request_args(struct jw *w, const struct tt_request *r, bool show_query)
{
	bool gaps = r->chunks > 1;

	jw__key(w, "args");
	jw__obj_open(w);
	kstr_opt(w, "request_id", r->request_id);
	jw__kstr(w, "method", r->method);
	jw__key(w, "path");
	jw__strn(w, r->path, path_shown_len(r->path, show_query));
	if (r->status)
		jw__ku64(w, "status", r->status);
	kstr_opt(w, "model", r->model);
	kstr_opt(w, "response_id", r->resp_id);
	jw__kstr(w, "format", body_format_name(r->format));
	jw__kstr(w, "conn", r->conn);
	jw__ku64(w, "seq", r->seq);
	if (r->h2)
		jw__ku64(w, "stream_id", r->h2_stream);
	if (r->joined)
		jw__kbool(w, "joined", true);
	if (r->grpc_status >= 0)
		jw__ku64(w, "grpc_status", r->grpc_status);
	jw__ku64(w, "chunks", r->chunks);
	jw__ku64(w, "tokens", r->tokens);
	if (r->chunks && r->t_start_ns)
		jw__ku64(w, "ttft_ns", r->ttft_ns);
	if (gaps) {
		jw__ku64(w, "itl_p50_ns", r->itl_p50_ns);
		jw__ku64(w, "itl_p99_ns", r->itl_p99_ns);
		jw__ku64(w, "itl_max_ns", r->itl_max_ns);
		if (r->tokens > 1)
			jw__ku64(w, "tpot_ns", r->tpot_ns);
	}
	if (r->t_start_ns && r->t_end_ns)
		jw__ku64(w, "e2e_ns", r->e2e_ns);
	if (r->queue_known)
		jw__ku64(w, "queue_ns", r->queue_ns);
	if (r->nstalls)
		jw__ku64(w, "stalls", r->nstalls);
	if (r->abort)
		jw__kstr(w, "aborted", abort_reason_name(r->abort));
	if (r->truncated)
		jw__kbool(w, "truncated", true);
	if (r->lost)
		jw__kbool(w, "events_lost", true);
	jw__obj_close(w);
}

static void stall_slice(struct out_perfetto *op, const struct tt_request *r, int tid,
			const struct tt_stall *st)
{
	struct jw *w = &op->w;
	char name[48];

	snprintf(name, sizeof(name), "stall: %s", stall_cause_name(st->cause));
	slice(op, r->pid, tid, "stall", name, st->t_begin_ns, st->t_end_ns);
	jw__key(w, "args");
	jw__obj_open(w);
	jw__kstr(w, "cause", stall_cause_name(st->cause));
	jw__ku64(w, "after_chunk", st->after_chunk);
	jw__ku64(w, "gap_ns", st->t_end_ns - st->t_begin_ns);
	jw__key(w, "parts_ns");
	jw__obj_open(w);
	for (int c = 0; c < STALL_NR; c++)
		if (st->part_ns[c])
			jw__ku64(w, stall_cause_name(c), st->part_ns[c]);
	jw__obj_close(w);
	if (st->retransmits)
		jw__ku64(w, "retransmits", st->retransmits);
	if (st->zero_window)
		jw__kbool(w, "zero_window", true);
	if (st->engine_late >= 0)
		jw__kbool(w, "engine_late", st->engine_late);
	kstr_opt(w, "stack", st->stack);
	jw__obj_close(w);
	jw__obj_close(w);
	emit(op);
}

static void marker(struct out_perfetto *op, const struct tt_request *r, int tid,
		   const char *name, uint64_t t)
{
	if (!t)
		return;
	instant(op, r->pid, tid, "marker", name, t);
	jw__obj_close(&op->w);
	emit(op);
}

static void perfetto_request(void *priv, const struct tt_request *r)
{
	struct out_perfetto *op = priv;
	struct jw *w = &op->w;
	uint64_t b, e, qb;
	int tid;

	if (op->failed)
		return;
	b = r->t_start_ns ? r->t_start_ns : r->t_head_ns ? r->t_head_ns :
	    r->chunks ? r->tok_ns[0] : r->t_end_ns;
	if (!b)
		return;		/* nothing to place on a timeline */
	e = MAX(b, r->t_end_ns);
	if (r->chunks)
		e = MAX(e, r->tok_ns[r->chunks - 1]);
	qb = r->queue_known && r->queue_ns && r->t_start_ns > r->queue_ns ?
	     r->t_start_ns - r->queue_ns : b;

	process(op, r->pid, r->comm);
	tid = lane_of(op, r, qb, e);

	if (qb < b) {
		slice(op, r->pid, tid, "request", "kernel queue", qb, b);
		jw__obj_close(w);
		emit(op);
	}
	{
		char name[HTTP_METHOD_MAX + 80];

		snprintf(name, sizeof(name), "%s %.*s", r->method[0] ? r->method : "?",
			 (int)MIN(path_shown_len(r->path, op->o.show_query), 64), r->path);
		slice(op, r->pid, tid, "request", name, b, e);
		request_args(w, r, op->o.show_query);
		jw__obj_close(w);
		emit(op);
	}
	if (r->chunks && r->t_start_ns && r->tok_ns[0] >= r->t_start_ns) {
		slice(op, r->pid, tid, "phase", "prefill/TTFT", r->t_start_ns, r->tok_ns[0]);
		jw__key(w, "args");
		jw__obj_open(w);
		jw__ku64(w, "ttft_ns", r->ttft_ns);
		jw__obj_close(w);
		jw__obj_close(w);
		emit(op);
	}
	if (r->chunks > 1) {
		slice(op, r->pid, tid, "phase", "generation", r->tok_ns[0],
		      r->tok_ns[r->chunks - 1]);
		jw__key(w, "args");
		jw__obj_open(w);
		jw__ku64(w, "chunks", r->chunks);
		if (r->tokens > 1)
			jw__ku64(w, "tpot_ns", r->tpot_ns);
		jw__obj_close(w);
		jw__obj_close(w);
		emit(op);
	}
	for (uint32_t i = 0; i < r->chunks; i++) {
		instant(op, r->pid, tid, "token", "token", r->tok_ns[i]);
		jw__key(w, "args");
		jw__obj_open(w);
		jw__ku64(w, "n", i + 1);
		if (i)
			jw__ku64(w, "itl_ns", request__itl(r, i - 1));
		if (r->made_ns && i < r->nmade && r->tok_ns[i] >= r->made_ns[i])
			jw__ku64(w, "made_to_sent_ns", r->tok_ns[i] - r->made_ns[i]);
		jw__obj_close(w);
		jw__obj_close(w);
		emit(op);
	}
	for (uint32_t i = 0; r->stalls && i < r->nstalls; i++)
		stall_slice(op, r, tid, &r->stalls[i]);
	marker(op, r, tid, "admitted", r->t_admit_ns);
	marker(op, r, tid, "first token made", r->t_made_first_ns);
	marker(op, r, tid, "generation done", r->t_made_done_ns);
}

static void perfetto_ready(void *priv, const struct ready_info *ri)
{
	struct out_perfetto *op = priv;

	for (int i = 0; i < ri->npids && i < READY_PIDS_MAX; i++)
		process(op, ri->pids[i], ri->comms[i]);
}

static void perfetto_summary(void *priv, const struct summary *s)
{
}

static bool perfetto_flush(void *priv)
{
	struct out_perfetto *op = priv;

	if (!op->failed && fflush(op->f))
		write_failed(op, errno);
	return false;
}

static void perfetto_free(void *priv)
{
	struct out_perfetto *op = priv;
	void *v;

	if (!op->failed) {
		fputs("]\n", op->f);
		perfetto_flush(op);
	}
	if (fclose(op->f))
		write_failed(op, errno);
	for (size_t it = 0; hmap__next(op->tracks, &it, NULL, &v);) {
		for (struct pconn *k = v, *n; k; k = n) {
			n = k->next;
			free(k);
		}
	}
	hmap__free(op->tracks);
	jw__free(&op->w);
	free(op->path);
	free(op);
}

static const struct output_ops perfetto_ops = {
	.ready = perfetto_ready,
	.request = perfetto_request,
	.summary = perfetto_summary,
	.flush = perfetto_flush,
	.free = perfetto_free,
};

int output_perfetto__new(struct output *o, const struct output_opts *opts)
{
	struct out_perfetto *op = calloc(1, sizeof(*op));
	char why[256], q[ARG_QUOTE_MAX];
	int fd;

	if (!op || !(op->path = strdup(opts->path)) || !(op->tracks = hmap__new(0))) {
		if (op)
			free(op->path);
		free(op);
		fprintf(stderr, "tokentrace: out of memory\n");
		return -ENOMEM;
	}
	op->o = *opts;
	/* prompts are not in it, but paths, models and timings are: the same rules as -w */
	fd = safe_create(opts->path, opts->force ? SAFE_FORCE : 0, why, sizeof(why));
	if (fd < 0 || !(op->f = fdopen(fd, "w"))) {
		int err = fd < 0 ? fd : -errno;

		fprintf(stderr, "tokentrace: --perfetto %s: %s\n", arg_quote(q, opts->path),
			fd < 0 ? why : strerror(-err));
		if (fd >= 0)
			close(fd);
		hmap__free(op->tracks);
		free(op->path);
		free(op);
		return err;
	}
	jw__init(&op->w);
	fputs("[\n", op->f);
	o->ops = &perfetto_ops;
	o->priv = op;
	return 0;
}
