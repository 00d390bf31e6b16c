// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --metrics [ADDR:]PORT: a Prometheus / OpenMetrics endpoint, served by libmicrohttpd on a
 * thread of its own; the main loop updates the metrics under a mutex, a scrape renders them
 * under the same mutex.
 *
 * Names follow the OpenTelemetry GenAI semantic conventions, translated the Prometheus way
 * (dots to underscores, the unit as a suffix), with their bucket boundaries:
 *   gen_ai.server.time_to_first_token   -> gen_ai_server_time_to_first_token_seconds
 *   gen_ai.server.time_per_output_token -> gen_ai_server_time_per_output_token_seconds
 *   gen_ai.server.request.duration      -> gen_ai_server_request_duration_seconds
 * outbound calls of the traced processes (direction client: an app or a gateway calling an
 * LLM API), with the API's Host as server_address:
 *   gen_ai.client.operation.duration              -> gen_ai_client_operation_duration_seconds
 *   gen_ai.client.operation.time_to_first_chunk   -> ..._time_to_first_chunk_seconds
 *   gen_ai.client.operation.time_per_output_chunk -> ..._time_per_output_chunk_seconds
 * (each gap between two chunks, as the client received them)
 * and tokentrace's own: inter-token latency (buckets from 0.5 ms: fast models stream faster
 * than the 10 ms OTel's TPOT buckets start at), stalls by cause, requests by status, output
 * tokens, events lost. As in the summaries (stats.c), error responses (status >= 400) count in
 * requests_total only, never in a latency.
 *
 * Labels are bounded: pid and comm (the traced processes), model and path (the query string
 * cut off, at most SERIES_MAX combinations; later ones count under model="other",
 * path="other" and in tokentrace_label_overflow_total), status (at most STATUS_MAX values a
 * series, then "other").
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <threads.h>
#include <unistd.h>
#include "buckets.h"
#include "counts.h"
#include "outputs.h"
#include "util.h"

#define SERIES_MAX	64
#define SERIES_HARD_MAX	(SERIES_MAX + READY_PIDS_MAX)	/* + an "other" series per PID */
#define LABEL_MAX	96
/*
 * Clients that connect and never finish a request must not starve scrapes: at most CONN_MAX
 * connections are kept, a new one evicts the oldest (a scraper sends its request at once, so
 * it is never the oldest for long), and an idle one is closed after CONN_TIMEOUT_S.
 */
#define CONN_MAX	32
#define CONN_TIMEOUT_S	10

struct fhist {
	uint64_t n[BUCKETS_MAX + 1];	/* per bucket, the last one past every bound (+Inf) */
	uint64_t count;
	uint64_t sum_ns;
};

struct series {
	uint32_t pid;
	bool client;			/* the traced process made the call */
	char comm[LABEL_MAX];
	char model[LABEL_MAX];
	char path[LABEL_MAX];
	char server[LABEL_MAX];		/* client: the Host it called */
	struct fhist ttft, tpot, e2e, itl;
	struct status_counts status;
	uint64_t stalls[STALL_NR];
	uint64_t tokens;
};

struct out_metrics {
	mtx_t mu;	/* C11 threads: <pthread.h> would meet user/sched.h first */
	struct series *series[SERIES_HARD_MAX];
	int nseries;
	uint64_t overflow;
	struct lost_totals lt;
	struct MHD_Daemon *d;
	/* the server thread's alone (one polling thread): the connections, oldest first */
	struct MHD_Connection *conns[CONN_MAX];
	int nconns;
	uint64_t evicted;
};

/* ------------------------------------------------------------------ address */

int metrics__parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[64] = "127.0.0.1";
	const char *port = s, *colon;
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	bool bracketed = s && s[0] == '[';
	uint64_t p;

	memset(ss, 0, sizeof(*ss));
	if (!s || !*s)
		return -EINVAL;
	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end || end[1] != ':' || (size_t)(end - s - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, end - s - 1);
		host[end - s - 1] = '\0';
		port = end + 2;
	} else if ((colon = strrchr(s, ':'))) {
		if ((size_t)(colon - s) >= sizeof(host) || colon == s)
			return -EINVAL;
		memcpy(host, s, colon - s);
		host[colon - s] = '\0';
		port = colon + 1;
	}
	if (parse_uint(port, 0, 65535, &p))
		return -EINVAL;
	if (!strcmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	if (!bracketed && inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons(p);
		*len = sizeof(*in4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(p);
		*len = sizeof(*in6);
		return 0;
	}
	return -EINVAL;
}

bool metrics__addr_is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

/* ------------------------------------------------------------------ the metrics */

static void fhist_add(struct fhist *h, const struct family_buckets *b, uint64_t ns)
{
	h->n[buckets__index(b, ns)]++;
	h->count++;
	h->sum_ns += ns;
}

/*
 * The Prometheus escaping of every label value from the wire or a traced process (comm, model,
 * path). The text format escapes only quote, backslash and newline and wants UTF-8 for the
 * rest: C0, DEL and invalid bytes become the text \xNN, other controls (C1, bidi) and invisible
 * code points (util.h cp_is_invisible) \uNNNN, \UNNNNNNNN past U+FFFF, with their backslash
 * escaped, so a scrape shows them without carrying them. Cut at an escape boundary.
 */
void metrics__label_escape(char *dst, size_t sz, const char *src, size_t n)
{
	const unsigned char *p = (const unsigned char *)src;
	size_t i = 0, o = 0, l, outn;
	char esc[12];
	uint32_t cp;

	if (!sz)
		return;
	while (i < n && p[i]) {
		const char *out = esc;

		l = utf8_seq(p + i, n - i, &cp);
		if (l && cp == '"') {
			out = "\\\"", outn = 2;
		} else if (l && cp == '\\') {
			out = "\\\\", outn = 2;
		} else if (l && cp == '\n') {
			out = "\\n", outn = 2;
		} else if (!l || cp < 0x20 || cp == 0x7f) {
			outn = snprintf(esc, sizeof(esc), "\\\\x%02x", p[i]);
			l = 1;
		} else if (cp_is_control(cp) || cp_is_invisible(cp)) {
			outn = snprintf(esc, sizeof(esc), cp > 0xffff ? "\\\\U%08x" : "\\\\u%04x",
					(unsigned int)cp);
		} else {
			out = (const char *)p + i, outn = l;
		}
		if (o + outn >= sz)
			break;
		memcpy(dst + o, out, outn);
		o += outn;
		i += l;
	}
	dst[o] = '\0';
}

static struct series *series_of(struct out_metrics *m, const struct tt_request *r)
{
	char comm[LABEL_MAX], model[LABEL_MAX], path[LABEL_MAX], server[LABEL_MAX] = "";
	struct series *s;
	bool other = false;

	metrics__label_escape(comm, sizeof(comm), r->comm, strnlen(r->comm, sizeof(r->comm)));
	if (r->model[0])
		metrics__label_escape(model, sizeof(model), r->model,
				      strnlen(r->model, sizeof(r->model)));
	else
		strcpy(model, "unknown");
	/* never the query string: it carries keys, and would make a series per request */
	metrics__label_escape(path, sizeof(path), r->path, path_shown_len(r->path, false));
	if (r->client)
		metrics__label_escape(server, sizeof(server), r->host[0] ? r->host : "unknown",
				      r->host[0] ? strnlen(r->host, sizeof(r->host)) : 7);
again:
	for (int i = 0; i < m->nseries; i++) {
		s = m->series[i];
		if (s->pid == r->pid && s->client == r->client && !strcmp(s->model, model) &&
		    !strcmp(s->path, path) && !strcmp(s->comm, comm) && !strcmp(s->server, server))
			return s;
	}
	if ((m->nseries >= SERIES_MAX && !other) || m->nseries >= SERIES_HARD_MAX) {
		if (!other) {
			m->overflow++;
			other = true;
			strcpy(model, "other");
			strcpy(path, "other");
			if (r->client)
				strcpy(server, "other");
			goto again;
		}
		return m->series[m->nseries - 1];
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->pid = r->pid;
	s->client = r->client;
	strcpy(s->server, server);
	strcpy(s->comm, comm);
	strcpy(s->model, model);
	strcpy(s->path, path);
	m->series[m->nseries++] = s;
	return s;
}

static void metrics_request(void *priv, const struct tt_request *r)
{
	struct out_metrics *m = priv;
	struct series *s;

	mtx_lock(&m->mu);
	s = series_of(m, r);
	if (!s)
		goto out;
	status_counts__add(&s->status, r->status);
	for (uint32_t i = 0; r->stalls && i < r->nstalls; i++)
		if ((unsigned int)r->stalls[i].cause < STALL_NR)
			s->stalls[r->stalls[i].cause]++;
	if (request__is_error(r))
		goto out;
	s->tokens += r->tokens;
	if (!r->chunks)
		goto out;
	if (r->client) {
		/* as the traced client received them: OTel's client durations */
		if (r->t_start_ns)
			fhist_add(&s->ttft, &bucket_client, r->ttft_ns);
		for (uint32_t i = 0; i + 1 < r->chunks; i++)
			fhist_add(&s->itl, &bucket_client, request__itl(r, i));
		if (r->complete && r->t_start_ns)
			fhist_add(&s->e2e, &bucket_client, r->e2e_ns);
		goto out;
	}
	if (r->t_start_ns)
		fhist_add(&s->ttft, &bucket_ttft, r->ttft_ns);
	for (uint32_t i = 0; i + 1 < r->chunks; i++)
		fhist_add(&s->itl, &bucket_itl, request__itl(r, i));
	if (r->chunks > 1)
		fhist_add(&s->tpot, &bucket_tpot, r->tpot_ns);
	if (r->complete && r->t_start_ns)
		fhist_add(&s->e2e, &bucket_e2e, r->e2e_ns);
out:
	mtx_unlock(&m->mu);
}

static void metrics_summary(void *priv, const struct summary *sum)
{
	struct out_metrics *m = priv;

	mtx_lock(&m->mu);
	lost_totals__add(&m->lt, sum);
	mtx_unlock(&m->mu);
}

static void metrics_ready(void *priv, const struct ready_info *ri)
{
}

static bool metrics_flush(void *priv)
{
	return false;
}

/* ------------------------------------------------------------------ exposition */

static void labels(FILE *f, const struct series *s)
{
	/* the values were escaped when the series was made (metrics__label_escape) */
	fprintf(f, "pid=\"%u\",comm=\"%s\",model=\"%s\",path=\"%s\"", s->pid, s->comm, s->model,
		s->path);
	if (s->client)
		fprintf(f, ",direction=\"client\",server_address=\"%s\"", s->server);
}

static void family(FILE *f, bool om, const char *name, const char *type, const char *unit,
		   const char *help)
{
	size_t n = strlen(name);

	/* OpenMetrics names a counter's family without its _total */
	if (om && !strcmp(type, "counter") && n > 6 && !strcmp(name + n - 6, "_total"))
		n -= 6;
	fprintf(f, "# HELP %.*s %s\n# TYPE %.*s %s\n", (int)n, name, help, (int)n, name, type);
	if (om && unit)
		fprintf(f, "# UNIT %.*s %s\n", (int)n, name, unit);
}

/* A family of the server's series (client false) or of the outbound calls' (client true). */
static void histogram(FILE *f, const struct out_metrics *m, bool om, bool client,
		      const char *name, const char *help, const struct family_buckets *b,
		      size_t off)
{
	family(f, om, name, "histogram", "seconds", help);
	for (int i = 0; i < m->nseries; i++) {
		const struct series *s = m->series[i];
		const struct fhist *h = (const struct fhist *)((const char *)s + off);
		uint64_t cum = 0;

		if (s->client != client)
			continue;
		for (int j = 0; j <= b->n; j++) {
			cum += h->n[j];
			fprintf(f, "%s_bucket{", name);
			labels(f, s);
			fprintf(f, ",le=\"%s\"} %llu\n", j < b->n ? b->le[j] : "+Inf",
				(unsigned long long)cum);
		}
		fprintf(f, "%s_sum{", name);
		labels(f, s);
		fprintf(f, "} %llu.%09llu\n", (unsigned long long)(h->sum_ns / 1000000000),
			(unsigned long long)(h->sum_ns % 1000000000));
		fprintf(f, "%s_count{", name);
		labels(f, s);
		fprintf(f, "} %llu\n", (unsigned long long)h->count);
	}
}

/* The latency families: OpenTelemetry's server and client histograms, and the gaps. */
static void render_histograms(FILE *f, struct out_metrics *m, bool om)
{
	histogram(f, m, om, false, "gen_ai_server_time_to_first_token_seconds",
		  "Time to first token of successful responses: from the read of the request's "
		  "last byte to the send of the first token (OpenTelemetry "
		  "gen_ai.server.time_to_first_token).", &bucket_ttft, offsetof(struct series, ttft));
	histogram(f, m, om, false, "gen_ai_server_time_per_output_token_seconds",
		  "Time per output token after the first, of successful responses (OpenTelemetry "
		  "gen_ai.server.time_per_output_token).", &bucket_tpot, offsetof(struct series, tpot));
	histogram(f, m, om, false, "gen_ai_server_request_duration_seconds",
		  "Duration of successful, complete requests: request read to last byte sent "
		  "(OpenTelemetry gen_ai.server.request.duration).", &bucket_e2e,
		  offsetof(struct series, e2e));
	histogram(f, m, om, false, "tokentrace_inter_token_latency_seconds",
		  "Gaps between consecutive streamed tokens (chunks) of successful responses.",
		  &bucket_itl, offsetof(struct series, itl));
	histogram(f, m, om, true, "gen_ai_client_operation_duration_seconds",
		  "Outbound calls of the traced processes, successful and complete: the request's "
		  "send to the last byte received (OpenTelemetry gen_ai.client.operation.duration).",
		  &bucket_client, offsetof(struct series, e2e));
	histogram(f, m, om, true, "gen_ai_client_operation_time_to_first_chunk_seconds",
		  "Outbound streaming calls: the request's send to the first chunk received "
		  "(OpenTelemetry gen_ai.client.operation.time_to_first_chunk).", &bucket_client,
		  offsetof(struct series, ttft));
	histogram(f, m, om, true, "gen_ai_client_operation_time_per_output_chunk_seconds",
		  "Outbound streaming calls: each gap between two chunks received (OpenTelemetry "
		  "gen_ai.client.operation.time_per_output_chunk).", &bucket_client,
		  offsetof(struct series, itl));
}

/* The counters per series: requests by status, tokens, stalls by cause. */
static void render_series(FILE *f, struct out_metrics *m, bool om)
{
	family(f, om, "tokentrace_requests_total", "counter", NULL,
	       "Finished requests by HTTP status (\"none\": no status was sent).");
	for (int i = 0; i < m->nseries; i++) {
		const struct series *s = m->series[i];

		for (int j = 0; j < s->status.nstatus; j++) {
			fputs("tokentrace_requests_total{", f);
			labels(f, s);
			if (s->status.status[j] > 0)
				fprintf(f, ",status=\"%d\"} ", s->status.status[j]);
			else
				fprintf(f, ",status=\"%s\"} ", s->status.status[j] ? "other" :
					"none");
			fprintf(f, "%llu\n", (unsigned long long)s->status.n[j]);
		}
	}
	family(f, om, "tokentrace_output_tokens_total", "counter", NULL,
	       "Tokens streamed by successful responses (the stream's own count where it gives "
	       "one, else chunks).");
	for (int i = 0; i < m->nseries; i++) {
		fputs("tokentrace_output_tokens_total{", f);
		labels(f, m->series[i]);
		fprintf(f, "} %llu\n", (unsigned long long)m->series[i]->tokens);
	}
	family(f, om, "tokentrace_stalls_total", "counter", NULL,
	       "Stalls in streams, by the cause that took most of the gap.");
	for (int i = 0; i < m->nseries; i++) {
		for (int c = 0; c < STALL_NR; c++) {
			fputs("tokentrace_stalls_total{", f);
			labels(f, m->series[i]);
			fprintf(f, ",cause=\"%s\"} %llu\n", stall_cause_name(c),
				(unsigned long long)m->series[i]->stalls[c]);
		}
	}
}

/* The run's own counters: what was lost or left out, labels overflowed, the build. */
static void render_totals(FILE *f, struct out_metrics *m, bool om)
{
	family(f, om, "tokentrace_events_lost_total", "counter", NULL,
	       "Kernel records lost (ring buffer full, connection table full): affected requests "
	       "say so.");
	fprintf(f, "tokentrace_events_lost_total %llu\n", (unsigned long long)m->lt.lost);
	family(f, om, "tokentrace_lost_total", "counter", NULL,
	       "What was lost or left out, by where: each drop and each bound reached.");
	for (int i = 0; i < LOST_NR; i++)
		fprintf(f, "tokentrace_lost_total{what=\"%s\"} %llu\n", lost_kind_name(i),
			(unsigned long long)m->lt.by[i]);
	family(f, om, "tokentrace_lost_between_requests_total", "counter", NULL,
	       "Losses with no request in flight, or crossing a request and its answer: whole "
	       "requests may be among them, with nothing to flag.");
	fprintf(f, "tokentrace_lost_between_requests_total %llu\n", (unsigned long long)m->lt.between);
	family(f, om, "tokentrace_left_out_by_budget_total", "counter", NULL,
	       "Requests (exchanges) not traced, whole, to keep to --budget's records a second.");
	fprintf(f, "tokentrace_left_out_by_budget_total %llu\n", (unsigned long long)m->lt.left_out);
	family(f, om, "tokentrace_label_overflow_total", "counter", NULL,
	       "Requests counted under model=\"other\",path=\"other\": more label combinations "
	       "than tokentrace keeps.");
	fprintf(f, "tokentrace_label_overflow_total %llu\n", (unsigned long long)m->overflow);
	family(f, om, "tokentrace_metrics_connections_evicted_total", "counter", NULL,
	       "Connections to this endpoint closed to make room for a new one (clients that "
	       "connect and do not send a request).");
	/* render runs on the server thread, the one that counts them */
	fprintf(f, "tokentrace_metrics_connections_evicted_total %llu\n",
		(unsigned long long)m->evicted);
	family(f, om, "tokentrace_build_info", "gauge", NULL, "tokentrace's version.");
	fprintf(f, "tokentrace_build_info{version=\"%s\"} 1\n", TT_VERSION);
}

static char *render(struct out_metrics *m, bool om, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		return NULL;
	mtx_lock(&m->mu);
	render_histograms(f, m, om);
	render_series(f, m, om);
	render_totals(f, m, om);
	mtx_unlock(&m->mu);
	if (om)
		fputs("# EOF\n", f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int code, char *body,
			     size_t len, const char *type)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(conn, code, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result on_http(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *upload,
			       size_t *upload_size, void **con_cls)
{
	struct out_metrics *m = cls;
	const char *accept;
	bool om;
	char *body;
	size_t len;

	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		body = strdup("only GET\n");
		return body ? reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, body, strlen(body),
				    "text/plain; charset=utf-8") : MHD_NO;
	}
	if (!strcmp(url, "/")) {
		body = strdup("tokentrace: metrics at /metrics\n");
		return body ? reply(conn, MHD_HTTP_OK, body, strlen(body),
				    "text/plain; charset=utf-8") : MHD_NO;
	}
	if (strcmp(url, "/metrics")) {
		body = strdup("not found: metrics at /metrics\n");
		return body ? reply(conn, MHD_HTTP_NOT_FOUND, body, strlen(body),
				    "text/plain; charset=utf-8") : MHD_NO;
	}
	accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	om = accept && strstr(accept, "application/openmetrics-text");
	body = render(m, om, &len);
	if (!body)
		return MHD_NO;
	return reply(conn, MHD_HTTP_OK, body, len,
		     om ? "application/openmetrics-text; version=1.0.0; charset=utf-8" :
			  "text/plain; version=0.0.4; charset=utf-8");
}

/* Connections come and go on the server's one thread: the oldest makes room for a new one. */
static void on_conn(void *cls, struct MHD_Connection *conn, void **socket_ctx,
		    enum MHD_ConnectionNotificationCode what)
{
	struct out_metrics *m = cls;
	int i;

	for (i = 0; i < m->nconns && m->conns[i] != conn; i++)
		;
	if (what == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (i < m->nconns) {
			memmove(m->conns + i, m->conns + i + 1,
				(m->nconns - i - 1) * sizeof(*m->conns));
			m->nconns--;
		}
		return;
	}
	if (what != MHD_CONNECTION_NOTIFY_STARTED || i < m->nconns)
		return;
	if (m->nconns == CONN_MAX) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(m->conns[0], MHD_CONNECTION_INFO_CONNECTION_FD);

		/* no call closes a connection from outside: its socket's end makes MHD close it */
		if (ci)
			shutdown(ci->connect_fd, SHUT_RDWR);
		memmove(m->conns, m->conns + 1, (CONN_MAX - 1) * sizeof(*m->conns));
		m->nconns--;
		m->evicted++;
	}
	m->conns[m->nconns++] = conn;
}

/* ------------------------------------------------------------------ lifetime */

static void metrics_free(void *priv)
{
	struct out_metrics *m = priv;

	if (m->d)
		MHD_stop_daemon(m->d);	/* joins its thread, closes the socket */
	for (int i = 0; i < m->nseries; i++)
		free(m->series[i]);
	mtx_destroy(&m->mu);
	free(m);
}

static const struct output_ops metrics_ops = {
	.ready = metrics_ready,
	.request = metrics_request,
	.summary = metrics_summary,
	.flush = metrics_flush,
	.free = metrics_free,
};

static void addr_str(const struct sockaddr_storage *ss, char *buf, size_t sz)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		snprintf(buf, sz, "[%s]:%u", host, ntohs(a->sin6_port));
	} else {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		snprintf(buf, sz, "%s:%u", host, ntohs(a->sin_port));
	}
}

/*
 * The listening socket is ours: bind errors come out precise (address in use, no such
 * address), and port 0 picks a free port that we can announce.
 */
static int listen_on(const char *arg, struct sockaddr_storage *ss, socklen_t len)
{
	int fd, one = 1, err;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto fail;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)ss, len) || listen(fd, 128))
		goto fail;
	len = sizeof(*ss);
	getsockname(fd, (struct sockaddr *)ss, &len);
	return fd;
fail:
	err = -errno;
	fprintf(stderr, "tokentrace: --metrics %s: cannot listen: %s\n", arg, strerror(-err));
	if (fd >= 0)
		close(fd);
	return err;
}

int output_metrics__new(struct output *o, const struct output_opts *opts)
{
	struct out_metrics *m;
	struct sockaddr_storage ss;
	sigset_t block, old;
	socklen_t len;
	char where[INET6_ADDRSTRLEN + 16];
	int fd;

	if (metrics__parse_addr(opts->addr, &ss, &len)) {
		char q[ARG_QUOTE_MAX];

		fprintf(stderr, "tokentrace: --metrics %s: not [ADDR:]PORT\n",
			arg_quote(q, opts->addr));
		return -EINVAL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	if (mtx_init(&m->mu, mtx_plain) != thrd_success) {
		free(m);
		return -ENOMEM;
	}
	/* before listening: said even when the bind then fails */
	if (!metrics__addr_is_loopback(&ss)) {
		addr_str(&ss, where, sizeof(where));
		fprintf(stderr, "tokentrace: warning: --metrics %s is reachable from other "
			"hosts, with no authentication: anyone who can connect reads the traced "
			"processes' PIDs and names, the model names and request paths they serve "
			"(without query strings) and their request counts and latencies; bind "
			"127.0.0.1 unless that is meant\n", where);
	}
	fd = listen_on(opts->addr, &ss, len);
	if (fd < 0) {
		metrics_free(m);
		return fd;
	}
	/* signals are the main loop's: the server thread starts with them blocked */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGWINCH);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	/* one polling thread (epoll): on_conn runs there, with no lock. MHD's own limit is above
	 * ours, so that evicted connections, until MHD has closed them, never block an accept. */
	m->d = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD, 0, NULL, NULL, on_http, m,
				MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned int)(4 * CONN_MAX),
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)CONN_TIMEOUT_S,
				MHD_OPTION_NOTIFY_CONNECTION, on_conn, m,
				MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!m->d) {
		fprintf(stderr, "tokentrace: --metrics %s: the HTTP server did not start\n",
			opts->addr);
		close(fd);
		metrics_free(m);
		return -EIO;
	}
	addr_str(&ss, where, sizeof(where));
	fprintf(stderr, "tokentrace: metrics on http://%s/metrics\n", where);

	o->ops = &metrics_ops;
	o->priv = m;
	return 0;
}
