// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --otlp [URL]: every finished request as a span, and the --metrics series as OTLP metrics,
 * sent to an OpenTelemetry Collector over OTLP/HTTP with protobuf (otlp.h).
 *
 * Ids. A request that came with a valid W3C traceparent joins the caller's trace, its span a
 * child of the caller's; else it starts a trace of its own, with random ids (getrandom). A
 * proxy's upstream call (a client-direction request that core/proxy.h pairs with the
 * downstream request it served) is the child of the downstream's span. The call finishes
 * first, so calls wait here (a bounded number, HOLD_NS at most) for the downstream request
 * that may claim them; a call nobody claims goes out on its own.
 *
 * Batching. Spans are encoded as they come, and sent as one ExportTraceServiceRequest (a
 * ResourceSpans per traced process) when a batch is full (OTEL_BSP_MAX_EXPORT_BATCH_SIZE, or
 * BATCH_BYTES) or its first span has waited OTEL_BSP_SCHEDULE_DELAY; metrics every
 * OTEL_METRIC_EXPORT_INTERVAL and at the end. All of it on the main loop's thread, with no
 * lock: only the sending (otlp_export.c) has a thread, and handing it a batch never waits.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include "otlp.h"
#include "otlp_proto.h"
#include "outputs.h"
#include "util.h"

#define RES_MAX		64		/* processes with a Resource of their own; later ones
					 * share one that names no process */
#define HOLD_MAX	64		/* upstream calls waiting for their downstream request */
#define HOLD_NS		2000000000ull	/* ... at most this long */
#define SPAN_BYTES_MAX	(1u << 20)	/* one span, token events included */
#define BATCH_BYTES	(4u << 20)	/* one request: well under a Collector's 20 MiB default */
#define METRICS_BYTES	(16u << 20)
#define DRAIN_NS	5000000000ull	/* at exit, the time left for the last batches */

struct res {
	uint32_t pid;
	char comm[16];		/* its requests' comm: the executable's name when /proc has none */
	uint8_t *bytes;		/* the encoded Resource, made at its first use */
	size_t len;
};

struct pend {
	uint32_t pid;
	uint8_t *span;		/* a Span message's body */
	size_t len;
};

struct held {
	struct tt_request *r;
	uint64_t at_ns;		/* CLOCK_MONOTONIC, when it came */
};

struct out_otlp {
	struct otlp_config cfg;
	struct otlp_span_opts so;
	struct otlp_exporter *tx, *mx;
	struct otlp_metrics *metrics;
	otlp_proc_fn proc_fn;
	void *proc_ud;
	char host[256];
	bool replay;
	bool finished;

	/* then: the processes past RES_MAX, and tokentrace itself (pid 0) */
	struct res res[RES_MAX + 2];
	int nres;
	struct pend *pend;
	uint32_t npend;
	size_t pend_bytes;
	uint64_t pend_since_ns;
	struct held held[HOLD_MAX];
	int nheld;

	uint8_t rnd[512];
	size_t rnd_used;
	uint64_t t_start_ns, next_metrics_ns;
	struct pbuf pb;
	uint64_t unencoded;	/* spans too large (SPAN_BYTES_MAX), no memory, or too late */
	struct otlp_stats final;	/* once finished: the senders are gone */
	bool *failed;
};

/* ---------------------------------------------------------------- ids */

static void random_bytes(struct out_otlp *o, uint8_t *dst, size_t n)
{
	bool zero = true;

	while (zero) {
		if (o->rnd_used + n > sizeof(o->rnd)) {
			ssize_t got = getrandom(o->rnd, sizeof(o->rnd), 0);

			/* no entropy source at all: the clock, mixed, still unique enough */
			for (size_t i = got > 0 ? (size_t)got : 0; i < sizeof(o->rnd); i++)
				o->rnd[i] = (uint8_t)((now_mono_ns() * 0x9e3779b97f4a7c15ull) >>
						      (8 * (i % 8)));
			o->rnd_used = 0;
		}
		memcpy(dst, o->rnd + o->rnd_used, n);
		o->rnd_used += n;
		for (size_t i = 0; i < n; i++)
			zero &= !dst[i];	/* an all-zero id is invalid */
	}
}

static void ids_for(struct out_otlp *o, const struct tt_request *r, struct otlp_ids *ids)
{
	memset(ids, 0, sizeof(*ids));
	random_bytes(o, ids->span_id, sizeof(ids->span_id));
	if (!otlp__traceparent(r->traceparent, ids->trace_id, ids->parent_id, &ids->trace_flags)) {
		ids->has_parent = ids->parent_remote = true;
		return;
	}
	random_bytes(o, ids->trace_id, sizeof(ids->trace_id));
	ids->trace_flags = 1;	/* sampled: tokentrace keeps every request */
}

/* ---------------------------------------------------------------- resources */

static void proc_default(struct out_otlp *o, uint32_t pid, const char *comm, struct otlp_proc *p)
{
	char link[64], exe[4096];
	ssize_t n = -1;

	/* a live process's executable; a replay's processes are not this host's */
	if (!o->replay) {
		snprintf(link, sizeof(link), "/proc/%u/exe", pid);
		n = readlink(link, exe, sizeof(exe) - 1);
	}
	if (n > 0) {
		exe[n] = '\0';
		strlcpy_cut(p->exe, sizeof(p->exe), basename(exe));
	} else if (comm) {
		strncpy_cut(p->exe, sizeof(p->exe), comm, strnlen(comm, 16));
	}
}

#define RES_OTHER	RES_MAX
#define RES_SELF	(RES_MAX + 1)

/* The cache entry of a process: found, or new, or past RES_MAX the shared one. */
static struct res *res_entry(struct out_otlp *o, uint32_t pid)
{
	if (!pid)
		return &o->res[RES_SELF];
	for (int i = 0; i < o->nres; i++)
		if (o->res[i].pid == pid)
			return &o->res[i];
	if (o->nres == RES_MAX)
		return &o->res[RES_OTHER];
	o->res[o->nres].pid = pid;
	return &o->res[o->nres++];
}

static void res_note(struct out_otlp *o, const struct tt_request *r)
{
	struct res *e = res_entry(o, r->pid);

	if (e->pid == r->pid && !e->comm[0])
		memcpy(e->comm, r->comm, sizeof(e->comm));
}

/* The encoded Resource of a process (otlp_resource_fn), made at its first use. */
static const uint8_t *resource_of(void *ud, uint32_t pid, size_t *len)
{
	struct out_otlp *o = ud;
	struct res *r = res_entry(o, pid);
	struct otlp_proc p = { .pid = pid };
	struct pbuf_reader rd;
	struct pbuf_field f;
	struct pbuf b;

	if (!r->bytes) {
		if (r == &o->res[RES_SELF]) {
			p.pid = (uint32_t)getpid();
			strcpy(p.exe, "tokentrace");
		} else if (r == &o->res[RES_OTHER]) {
			p.pid = 0;	/* which process: the spans' tokentrace.comm says */
		} else {
			proc_default(o, r->pid, r->comm, &p);
			if (o->proc_fn)
				o->proc_fn(o->proc_ud, r->pid, &p);
			p.pid = r->pid;
		}
		pbuf__init(&b, 1 << 16);
		/* a Resource field, whose body is what pbuf__msg takes */
		otlp__resource(&b, 1, &o->cfg, o->host, &p);
		pbuf_reader__init(&rd, b.buf, b.len);
		if (pbuf__ok(&b) && pbuf_reader__next(&rd, &f) &&
		    (r->bytes = malloc(f.len ? f.len : 1))) {
			memcpy(r->bytes, f.data, f.len);
			r->len = f.len;
		}
		pbuf__free(&b);
		if (!r->bytes)
			return NULL;
	}
	*len = r->len;
	return r->bytes;
}

/* ---------------------------------------------------------------- spans */

static void ship_spans(struct out_otlp *o)
{
	struct pbuf b;
	const uint8_t *rb;
	size_t rl;

	if (!o->npend)
		return;
	pbuf__init(&b, BATCH_BYTES + (64u << 10) * (RES_MAX + 1));
	for (uint32_t i = 0; i < o->npend; i++) {
		bool seen = false;

		for (uint32_t j = 0; j < i && !seen; j++)
			seen = o->pend[j].pid == o->pend[i].pid;
		if (seen)
			continue;
		pbuf__open(&b, EXPORT_RESOURCE);
		if ((rb = resource_of(o, o->pend[i].pid, &rl)))
			pbuf__msg(&b, RES_RESOURCE, rb, rl);
		pbuf__open(&b, RES_SCOPE);
		otlp__scope(&b, SCOPE_SCOPE);
		for (uint32_t j = i; j < o->npend; j++)
			if (o->pend[j].pid == o->pend[i].pid)
				pbuf__msg(&b, SCOPE_ITEMS, o->pend[j].span, o->pend[j].len);
		pbuf__close(&b);
		pbuf__close(&b);
	}
	if (pbuf__ok(&b)) {
		otlp_exporter__send(o->tx, b.buf, b.len, o->npend);	/* owns b.buf now */
		b.buf = NULL;
	} else {
		o->unencoded += o->npend;
	}
	pbuf__free(&b);
	for (uint32_t i = 0; i < o->npend; i++)
		free(o->pend[i].span);
	o->npend = 0;
	o->pend_bytes = 0;
}

static void add_span(struct out_otlp *o, const struct tt_request *r, const struct otlp_ids *ids)
{
	struct pend *p;

	otlp_metrics__request(o->metrics, r, ids);
	pbuf__reset(&o->pb);
	otlp__span(&o->pb, r, ids, &o->so);
	if (!pbuf__ok(&o->pb)) {
		o->unencoded++;
		return;
	}
	if (o->pend_bytes + o->pb.len > BATCH_BYTES)
		ship_spans(o);
	p = &o->pend[o->npend];
	p->span = malloc(o->pb.len);
	if (!p->span) {
		o->unencoded++;
		return;
	}
	memcpy(p->span, o->pb.buf, o->pb.len);
	p->len = o->pb.len;
	p->pid = r->pid;
	if (!o->npend++)
		o->pend_since_ns = now_mono_ns();
	o->pend_bytes += p->len;
	if (o->npend >= o->cfg.batch_max)
		ship_spans(o);
}

/* ---------------------------------------------------------------- upstream calls */

static void release(struct out_otlp *o, int i, const struct otlp_ids *parent)
{
	struct tt_request *r = o->held[i].r;
	struct otlp_ids ids;

	memmove(o->held + i, o->held + i + 1, (o->nheld - i - 1) * sizeof(*o->held));
	o->nheld--;
	if (parent) {
		memset(&ids, 0, sizeof(ids));
		memcpy(ids.trace_id, parent->trace_id, sizeof(ids.trace_id));
		memcpy(ids.parent_id, parent->span_id, sizeof(ids.parent_id));
		ids.has_parent = true;
		ids.trace_flags = parent->trace_flags;
		random_bytes(o, ids.span_id, sizeof(ids.span_id));
	} else {
		ids_for(o, r, &ids);
	}
	add_span(o, r, &ids);
	request__free(r);
}

/* Calls nobody claimed: by the records' time (t_end_ns, any process), or the clock. */
static void release_old(struct out_otlp *o, uint64_t data_ns, uint64_t now_ns)
{
	for (int i = 0; i < o->nheld;) {
		const struct held *h = &o->held[i];

		if ((data_ns && h->r->t_end_ns + HOLD_NS < data_ns) || h->at_ns + HOLD_NS < now_ns)
			release(o, i, NULL);
		else
			i++;
	}
}

static void hold(struct out_otlp *o, const struct tt_request *r)
{
	struct tt_request *d;

	if (o->nheld == HOLD_MAX)
		release(o, 0, NULL);
	d = request__dup(r);
	if (!d) {
		struct otlp_ids ids;

		ids_for(o, r, &ids);
		add_span(o, r, &ids);
		return;
	}
	o->held[o->nheld].r = d;
	o->held[o->nheld++].at_ns = now_mono_ns();
}

/* the upstream call the proxy made for r (proxy.c keeps the call's start as r's + delay) */
static void claim(struct out_otlp *o, const struct tt_request *r, const struct otlp_ids *ids)
{
	uint64_t t_up = r->t_start_ns + (uint64_t)r->up.request_delay_ns;

	for (int i = 0; i < o->nheld; i++) {
		const struct tt_request *u = o->held[i].r;

		if (u->pid == r->pid && u->t_start_ns == t_up &&
		    !strncmp(u->conn, r->up.conn, sizeof(u->conn))) {
			release(o, i, ids);
			return;
		}
	}
}

/* ---------------------------------------------------------------- output ops */

static void ship_metrics(struct out_otlp *o)
{
	struct otlp_export_stats ts;
	struct otlp_counter extra[3];
	struct pbuf b;
	uint32_t points = 0;

	otlp_exporter__stats(o->tx, &ts);
	extra[0] = (struct otlp_counter){ "tokentrace.otlp.spans_sent", "Spans the collector "
		    "accepted.", ts.sent };
	extra[1] = (struct otlp_counter){ "tokentrace.otlp.spans_not_sent", "Spans dropped "
		    "(queue full), rejected or given up after retries.",
		    ts.dropped + ts.rejected + ts.failed };
	extra[2] = (struct otlp_counter){ "tokentrace.otlp.spans_unencoded", "Spans too large "
		    "to encode, or no memory.", o->unencoded };
	pbuf__init(&b, METRICS_BYTES);
	otlp_metrics__encode(o->metrics, &b, o->t_start_ns, now_mono_ns(), resource_of, o, extra,
			     ARRAY_SIZE(extra), &points);
	if (pbuf__ok(&b) && points) {
		otlp_exporter__send(o->mx, b.buf, b.len, points);
		b.buf = NULL;
	}
	pbuf__free(&b);
	o->next_metrics_ns = now_mono_ns() + o->cfg.metric_interval_ms * 1000000ull;
}

static void otlp_ready(void *priv, const struct ready_info *ri)
{
	struct out_otlp *o = priv;

	o->replay = ri->replay;
}

static void otlp_request(void *priv, const struct tt_request *r)
{
	struct out_otlp *o = priv;
	struct otlp_ids ids;

	if (o->finished) {
		o->unencoded++;	/* after the end: not sent, and said */
		return;
	}
	res_note(o, r);
	if (r->client) {
		release_old(o, r->t_end_ns, now_mono_ns());
		hold(o, r);
		return;
	}
	ids_for(o, r, &ids);
	add_span(o, r, &ids);
	/* its call first: a downstream that ended long after its upstream still claims it */
	if (r->up.paired)
		claim(o, r, &ids);
	release_old(o, r->t_end_ns, now_mono_ns());
}

static void otlp_summary(void *priv, const struct summary *s)
{
	otlp_metrics__summary(((struct out_otlp *)priv)->metrics, s);
}

static bool otlp_flush(void *priv)
{
	struct out_otlp *o = priv;
	uint64_t now = now_mono_ns();

	if (o->finished)
		return false;
	release_old(o, 0, now);
	if (o->npend && now - o->pend_since_ns >= o->cfg.batch_delay_ms * 1000000ull)
		ship_spans(o);
	if (now >= o->next_metrics_ns)
		ship_metrics(o);
	return false;
}

void output_otlp__stats(const struct output *out, struct otlp_stats *st)
{
	struct out_otlp *o = out->priv;

	if (o->finished) {
		*st = o->final;
		st->spans_unencoded = o->unencoded;
		return;
	}
	memset(st, 0, sizeof(*st));
	if (o->tx)
		otlp_exporter__stats(o->tx, &st->traces);
	if (o->mx)
		otlp_exporter__stats(o->mx, &st->metrics);
	st->spans_unencoded = o->unencoded;
}

/* one line on stderr: where the spans and points went; a failure's last reason */
static void say_stats(const struct otlp_stats *st)
{
	const struct otlp_export_stats *t = &st->traces, *m = &st->metrics;
	const char *err = t->last_error[0] && t->sent + t->rejected < t->queued ? t->last_error :
			  m->last_error[0] && m->sent + m->rejected < m->queued ? m->last_error : "";

	fprintf(stderr, "tokentrace: OTLP: %llu spans sent, %llu rejected, %llu dropped (queue "
		"full), %llu failed, %llu not encoded; %llu metric points sent, %llu not%s%s\n",
		(unsigned long long)t->sent, (unsigned long long)t->rejected,
		(unsigned long long)t->dropped, (unsigned long long)t->failed,
		(unsigned long long)st->spans_unencoded, (unsigned long long)m->sent,
		(unsigned long long)(m->rejected + m->dropped + m->failed),
		err[0] ? "; last error: " : "", err);
}

void output_otlp__finish(struct output *out)
{
	struct out_otlp *o = out->priv;
	struct otlp_stats st;

	if (o->finished)
		return;
	while (o->nheld)
		release(o, 0, NULL);
	ship_spans(o);
	ship_metrics(o);
	/* the senders stop together: metrics' drain runs while traces' does */
	otlp_exporter__stop(o->tx, DRAIN_NS);
	otlp_exporter__stop(o->mx, DRAIN_NS);
	output_otlp__stats(out, &st);
	o->final = st;
	otlp_exporter__free(o->tx, 0);
	otlp_exporter__free(o->mx, 0);
	o->tx = o->mx = NULL;
	o->finished = true;
	say_stats(&st);
}

static void otlp_free(void *priv)
{
	struct out_otlp *o = priv;
	struct output out = { NULL, o };

	output_otlp__finish(&out);
	for (size_t i = 0; i < ARRAY_SIZE(o->res); i++)
		free(o->res[i].bytes);
	free(o->pend);
	pbuf__free(&o->pb);
	otlp_metrics__free(o->metrics);
	free(o);
}

static const struct output_ops otlp_ops = {
	.ready = otlp_ready,
	.request = otlp_request,
	.summary = otlp_summary,
	.flush = otlp_flush,
	.free = otlp_free,
};

int output_otlp__new(struct output *out, const struct output_opts *opts)
{
	struct out_otlp *o = calloc(1, sizeof(*o));
	struct otlp_export_opts eo = { 0 };
	char why[256], shown[OTLP_URL_MAX];

	if (!o)
		return -ENOMEM;
	if (otlp_config__load(&o->cfg, opts->otlp_url, NULL, why, sizeof(why))) {
		fprintf(stderr, "tokentrace: --otlp: %s\n", why);
		free(o);
		return -EINVAL;
	}
	o->so.token_events = opts->otlp_token_events;
	o->proc_fn = opts->otlp_proc;
	o->proc_ud = opts->otlp_proc_ud;
	o->failed = opts->failed;
	if (gethostname(o->host, sizeof(o->host) - 1))
		o->host[0] = '\0';
	o->pend = calloc(o->cfg.batch_max, sizeof(*o->pend));
	o->metrics = otlp_metrics__new();
	pbuf__init(&o->pb, SPAN_BYTES_MAX);
	o->t_start_ns = now_mono_ns();
	o->next_metrics_ns = o->t_start_ns + o->cfg.metric_interval_ms * 1000000ull;
	eo.gzip = o->cfg.gzip;
	eo.timeout_ms = o->cfg.timeout_ms;
	eo.queue_items = o->cfg.queue_max;
	eo.target = &o->cfg.traces;
	if (o->pend && o->metrics)
		o->tx = otlp_exporter__new(&eo);
	eo.target = &o->cfg.metrics;
	eo.queue_items = UINT32_MAX;	/* cumulative: a lost batch is carried by the next */
	eo.queue_batches = 4;
	if (o->tx)
		o->mx = otlp_exporter__new(&eo);
	if (!o->mx) {
		fprintf(stderr, "tokentrace: --otlp: cannot start the sender: %s\n",
			strerror(errno ? errno : ENOMEM));
		otlp_exporter__free(o->tx, 0);
		o->tx = NULL;
		o->finished = true;
		otlp_free(o);
		return -ENOMEM;
	}
	otlp_config__url_shown(o->cfg.traces.url, shown, sizeof(shown));
	fprintf(stderr, "tokentrace: OTLP to %s", shown);
	otlp_config__url_shown(o->cfg.metrics.url, shown, sizeof(shown));
	esc_term(why, sizeof(why), o->cfg.service_name, strlen(o->cfg.service_name));
	fprintf(stderr, " and %s, as service %s\n", shown, why);
	out->ops = &otlp_ops;
	out->priv = o;
	return 0;
}
