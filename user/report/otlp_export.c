// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The OTLP/HTTP sender (otlp.h): one per signal, with a thread of its own, so that a slow or
 * absent collector never holds up the main loop (and so never the ring buffer, and so never
 * the traced server's sends: they do not wait for tokentrace in any case).
 *
 * The main loop hands whole Export*ServiceRequest messages to a bounded queue (a mutex held
 * for a few instructions); the thread gzips each one and POSTs it with libcurl, one at a
 * time, keeping its connection. As the OTLP specification says, 429, 502, 503 and 504 and
 * network errors are retried, after the server's Retry-After if it sent one, else after an
 * exponential backoff with jitter; other statuses are not. A partial success's rejected items
 * are counted as rejected. Nothing is lost without a count: every item handed over ends up
 * sent, rejected, dropped (queue full) or failed (given up, or still queued at the end).
 */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#include "otlp.h"
#include "otlp_proto.h"
#include "util.h"

#define RESP_MAX	65536	/* a response body kept for its partial success or message */

struct item {
	struct item *next;
	void *msg;
	size_t len;
	uint32_t items;
};

struct otlp_exporter {
	struct otlp_export_opts o;
	struct otlp_target target;

	pthread_mutex_t mu;
	pthread_cond_t cv;		/* on CLOCK_MONOTONIC: work came, or stop */
	struct item *head, *tail;
	uint32_t nbatches, nitems;	/* queued, not yet taken by the thread */
	bool stop;
	uint64_t drain_until;		/* with stop: no wait past this */
	struct otlp_export_stats st;
	pthread_t th;
	bool started;
	bool curl_global;		/* curl_global_init done: cleaned up once */

	/* the thread's alone */
	CURL *curl;
	struct curl_slist *hdrs;
	uint8_t *resp;
	size_t resp_len;
	unsigned int seed;
};

/* ---------------------------------------------------------------- queue */

bool otlp_exporter__send(struct otlp_exporter *e, void *msg, size_t len, uint32_t items)
{
	struct item *it = malloc(sizeof(*it));
	bool ok;

	pthread_mutex_lock(&e->mu);
	e->st.queued += items;
	ok = it && !e->stop && e->nbatches < e->o.queue_batches &&
	     e->nitems + items <= e->o.queue_items;
	if (ok) {
		it->next = NULL;
		it->msg = msg;
		it->len = len;
		it->items = items;
		if (e->tail)
			e->tail->next = it;
		else
			e->head = it;
		e->tail = it;
		e->nbatches++;
		e->nitems += items;
		pthread_cond_signal(&e->cv);
	} else {
		e->st.dropped += items;
	}
	pthread_mutex_unlock(&e->mu);
	if (!ok) {
		free(it);
		free(msg);
	}
	return ok;
}

void otlp_exporter__stats(struct otlp_exporter *e, struct otlp_export_stats *st)
{
	pthread_mutex_lock(&e->mu);
	*st = e->st;
	pthread_mutex_unlock(&e->mu);
}

/* e->mu held */
static void set_error(struct otlp_exporter *e, int status, const char *fmt, const char *arg)
{
	char raw[256];

	e->st.last_status = status;
	snprintf(raw, sizeof(raw), fmt, arg ? arg : "");
	/* a collector's message is its text: escaped for the terminal that shows it */
	esc_term(e->st.last_error, sizeof(e->st.last_error), raw, strlen(raw));
}

/* ---------------------------------------------------------------- one POST */

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	struct otlp_exporter *e = ud;
	size_t len = size * n, keep = MIN(len, RESP_MAX - e->resp_len);

	memcpy(e->resp + e->resp_len, p, keep);
	e->resp_len += keep;
	return len;
}

/* a hung POST ends when the drain at exit is over */
static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct otlp_exporter *e = ud;
	bool over;

	pthread_mutex_lock(&e->mu);
	over = e->stop && now_mono_ns() >= e->drain_until;
	pthread_mutex_unlock(&e->mu);
	return over;
}

static int curl_setup(struct otlp_exporter *e)
{
	char ua[64];

	e->curl = curl_easy_init();
	e->resp = malloc(RESP_MAX);
	if (!e->curl || !e->resp)
		return -ENOMEM;
	e->hdrs = curl_slist_append(NULL, "Content-Type: application/x-protobuf");
	if (e->o.gzip)
		e->hdrs = curl_slist_append(e->hdrs, "Content-Encoding: gzip");
	e->hdrs = curl_slist_append(e->hdrs, "Expect:");	/* no 100-continue round trip */
	for (int i = 0; i < e->target.nheaders; i++)
		e->hdrs = curl_slist_append(e->hdrs, e->target.headers[i]);
	if (!e->hdrs)
		return -ENOMEM;
	snprintf(ua, sizeof(ua), "tokentrace/%s", TT_VERSION);
	curl_easy_setopt(e->curl, CURLOPT_URL, e->target.url);
	curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, e->hdrs);
	curl_easy_setopt(e->curl, CURLOPT_USERAGENT, ua);
	curl_easy_setopt(e->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e->curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, (long)e->o.timeout_ms);
	curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)MIN(e->o.timeout_ms, 5000));
	curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, e);
	curl_easy_setopt(e->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(e->curl, CURLOPT_XFERINFODATA, e);
	curl_easy_setopt(e->curl, CURLOPT_NOPROGRESS, 0L);
	return 0;
}

/* gzip of a message; NULL when out of memory */
static uint8_t *gzip(const void *p, size_t n, size_t *out)
{
	z_stream z = { 0 };
	uint8_t *buf;
	size_t cap;

	/* windowBits 15 + 16: a gzip wrapper, as Content-Encoding: gzip means */
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return NULL;
	cap = deflateBound(&z, n);
	buf = malloc(cap);
	if (!buf) {
		deflateEnd(&z);
		return NULL;
	}
	z.next_in = (Bytef *)p;
	z.avail_in = n;
	z.next_out = buf;
	z.avail_out = cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&z);
		free(buf);
		return NULL;
	}
	*out = z.total_out;
	deflateEnd(&z);
	return buf;
}

/* the collector's partial_success.rejected_* (0 if none), its message in msg */
static uint64_t partial_rejected(const uint8_t *p, size_t n, char *msg, size_t msgsz)
{
	struct pbuf_reader r, sub;
	struct pbuf_field f, g;
	uint64_t rejected = 0;

	msg[0] = '\0';
	pbuf_reader__init(&r, p, n);
	while (pbuf_reader__next(&r, &f)) {
		if (f.num != RESP_PARTIAL || f.wire != PB_LEN)
			continue;
		pbuf_reader__sub(&sub, &f);
		while (pbuf_reader__next(&sub, &g)) {
			if (g.num == PARTIAL_REJECTED && g.wire == PB_VARINT)
				rejected = g.v;
			else if (g.num == PARTIAL_MESSAGE && g.wire == PB_LEN)
				snprintf(msg, msgsz, "%.*s", (int)MIN(g.len, msgsz - 1), g.data);
		}
	}
	return rejected;
}

/* google.rpc.Status's message (field 2) of a failed export, "" if none */
static void status_message(const uint8_t *p, size_t n, char *msg, size_t msgsz)
{
	struct pbuf_reader r;
	struct pbuf_field f;

	msg[0] = '\0';
	pbuf_reader__init(&r, p, n);
	while (pbuf_reader__next(&r, &f))
		if (f.num == 2 && f.wire == PB_LEN)
			snprintf(msg, msgsz, "%.*s", (int)MIN(f.len, msgsz - 1), f.data);
}

enum outcome { SENT, RETRY, FAIL };

/* One attempt. *wait_ns: the server's Retry-After, 0 if it sent none. */
static enum outcome post(struct otlp_exporter *e, const struct item *it, const uint8_t *body,
			 size_t blen, uint64_t *wait_ns)
{
	char msg[160];
	long status = 0;
	curl_off_t ra = 0;
	CURLcode rc;
	uint64_t rej;

	*wait_ns = 0;
	e->resp_len = 0;
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
	rc = curl_easy_perform(e->curl);
	if (rc == CURLE_OK)
		curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
	pthread_mutex_lock(&e->mu);
	if (rc != CURLE_OK) {
		set_error(e, 0, "%s", curl_easy_strerror(rc));
		pthread_mutex_unlock(&e->mu);
		return RETRY;
	}
	if (status >= 200 && status < 300) {
		rej = MIN(partial_rejected(e->resp, e->resp_len, msg, sizeof(msg)), it->items);
		e->st.sent += it->items - rej;
		e->st.rejected += rej;
		e->st.batches++;
		e->st.bytes += blen;
		e->st.last_status = (int)status;
		if (rej)
			set_error(e, (int)status, "partial success: %s", msg);
		pthread_mutex_unlock(&e->mu);
		return SENT;
	}
	status_message(e->resp, e->resp_len, msg, sizeof(msg));
	{
		char what[200];

		snprintf(what, sizeof(what), "HTTP %ld%s%s", status, msg[0] ? ": " : "", msg);
		set_error(e, (int)status, "%s", what);
	}
	pthread_mutex_unlock(&e->mu);
	if (status == 429 || status == 502 || status == 503 || status == 504) {
		if (curl_easy_getinfo(e->curl, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
			*wait_ns = MIN((uint64_t)ra * 1000000000ull, e->o.retry_after_max_ns);
		return RETRY;
	}
	return FAIL;
}

/* ---------------------------------------------------------------- the thread */

/* Sleeps until t (CLOCK_MONOTONIC ns); false when stopping leaves no time for that. */
static bool wait_until(struct otlp_exporter *e, uint64_t t)
{
	bool ok = true;

	pthread_mutex_lock(&e->mu);
	for (;;) {
		uint64_t now = now_mono_ns(), until = t;
		struct timespec ts;

		if (e->stop && t > e->drain_until) {
			ok = false;
			break;
		}
		if (now >= until)
			break;
		ts.tv_sec = until / 1000000000ull;
		ts.tv_nsec = until % 1000000000ull;
		pthread_cond_timedwait(&e->cv, &e->mu, &ts);
	}
	pthread_mutex_unlock(&e->mu);
	return ok;
}

static void give_up(struct otlp_exporter *e, const struct item *it, const char *why)
{
	pthread_mutex_lock(&e->mu);
	e->st.failed += it->items;
	if (why)
		set_error(e, e->st.last_status, "%s", why);
	pthread_mutex_unlock(&e->mu);
}

static void deliver(struct otlp_exporter *e, const struct item *it)
{
	uint64_t first = now_mono_ns(), backoff = e->o.backoff_first_ns, wait;
	uint8_t *z = NULL;
	const uint8_t *body = it->msg;
	size_t blen = it->len;

	if (e->o.gzip) {
		z = gzip(it->msg, it->len, &blen);
		if (!z) {
			give_up(e, it, "out of memory compressing a batch");
			return;
		}
		body = z;
	}
	for (;;) {
		enum outcome oc = post(e, it, body, blen, &wait);

		if (oc == SENT)
			break;
		if (oc == FAIL) {
			give_up(e, it, NULL);
			break;
		}
		if (!wait) {	/* full jitter over the upper half: retries do not stay in step */
			wait = backoff / 2 + (uint64_t)rand_r(&e->seed) % (backoff / 2 + 1);
			backoff = MIN(backoff * 2, e->o.backoff_max_ns);
		}
		if (now_mono_ns() + wait > first + e->o.retry_for_ns) {
			give_up(e, it, NULL);
			break;
		}
		if (!wait_until(e, now_mono_ns() + wait)) {
			give_up(e, it, NULL);
			break;
		}
		pthread_mutex_lock(&e->mu);
		e->st.retries++;
		pthread_mutex_unlock(&e->mu);
	}
	free(z);
}

static void *run(void *ud)
{
	struct otlp_exporter *e = ud;
	struct item *it;

	pthread_mutex_lock(&e->mu);
	for (;;) {
		while (!e->head && !e->stop)
			pthread_cond_wait(&e->cv, &e->mu);
		if (!e->head || (e->stop && now_mono_ns() >= e->drain_until))
			break;
		it = e->head;
		e->head = it->next;
		if (!e->head)
			e->tail = NULL;
		e->nbatches--;
		e->nitems -= it->items;
		pthread_mutex_unlock(&e->mu);
		deliver(e, it);
		free(it->msg);
		free(it);
		pthread_mutex_lock(&e->mu);
	}
	/* stopped with batches left: the drain's time is over */
	while ((it = e->head)) {
		e->head = it->next;
		e->st.failed += it->items;
		free(it->msg);
		free(it);
	}
	e->tail = NULL;
	e->nbatches = e->nitems = 0;
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

/* ---------------------------------------------------------------- lifetime */

struct otlp_exporter *otlp_exporter__new(const struct otlp_export_opts *o)
{
	struct otlp_exporter *e = calloc(1, sizeof(*e));
	pthread_condattr_t ca;
	sigset_t block, old;
	int err;

	if (!e)
		return NULL;
	e->o = *o;
	e->target = *o->target;
	e->o.target = &e->target;
	if (!e->o.backoff_first_ns)
		e->o.backoff_first_ns = 1000000000ull;
	if (e->o.backoff_max_ns < e->o.backoff_first_ns)
		e->o.backoff_max_ns = 32 * e->o.backoff_first_ns;
	if (!e->o.retry_for_ns)
		e->o.retry_for_ns = 60000000000ull;
	if (!e->o.retry_after_max_ns)
		e->o.retry_after_max_ns = 60000000000ull;
	if (!e->o.queue_batches)
		e->o.queue_batches = 64;
	e->seed = (unsigned int)now_mono_ns();
	pthread_mutex_init(&e->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->cv, &ca);
	pthread_condattr_destroy(&ca);
	/* libcurl's global state, before any thread uses it */
	e->curl_global = !curl_global_init(CURL_GLOBAL_DEFAULT);
	if (!e->curl_global || (err = curl_setup(e))) {
		otlp_exporter__free(e, 0);
		errno = ENOMEM;
		return NULL;
	}
	/* signals are the main loop's; a closed connection is an error here, not a SIGPIPE */
	sigemptyset(&block);
	sigaddset(&block, SIGPIPE);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGWINCH);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	err = pthread_create(&e->th, NULL, run, e);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		otlp_exporter__free(e, 0);
		errno = err;
		return NULL;
	}
	e->started = true;
	return e;
}

void otlp_exporter__stop(struct otlp_exporter *e, uint64_t drain_ns)
{
	if (!e || !e->started)
		return;
	pthread_mutex_lock(&e->mu);
	e->stop = true;
	e->drain_until = now_mono_ns() + drain_ns;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
	pthread_join(e->th, NULL);
	e->started = false;
}

void otlp_exporter__free(struct otlp_exporter *e, uint64_t drain_ns)
{
	if (!e)
		return;
	otlp_exporter__stop(e, drain_ns);
	if (e->curl)
		curl_easy_cleanup(e->curl);
	curl_slist_free_all(e->hdrs);
	if (e->curl_global)
		curl_global_cleanup();
	free(e->resp);
	pthread_cond_destroy(&e->cv);
	pthread_mutex_destroy(&e->mu);
	free(e);
}
