/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * For the OTLP sender's tests: a tiny OTLP/HTTP receiver on loopback (libmicrohttpd, a
 * thread per connection) that answers each POST as scripted (a status, a Retry-After, a body;
 * 200 once the script is used up), can hold a request until released, and keeps what
 * arrived: path, headers, the body gunzipped, and when.
 */
#ifndef TT_OTLP_RECEIVER_H
#define TT_OTLP_RECEIVER_H

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "util.h"

#define RX_MAX		64
#define RX_BODY_MAX	(8u << 20)

struct rx_answer {
	unsigned int status;
	int retry_after;	/* seconds; < 0: no header */
	const void *body;
	size_t body_len;
	bool hold;		/* wait for rx_release() before answering */
};

struct rx_got {
	char path[64];
	char encoding[16], type[64], tenant[32];
	uint8_t *body;		/* gunzipped when it came gzipped */
	size_t len;
	bool gunzip_failed;
	uint64_t t_ns;		/* CLOCK_MONOTONIC, when its last byte came */
	unsigned int answered;
};

struct rx {
	struct MHD_Daemon *d;
	uint16_t port;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct rx_answer script[RX_MAX];
	int nscript, next;
	struct rx_got got[RX_MAX];
	int ngot;
	bool released;
	int holding;		/* requests being held now */
};

struct rx_conn {
	uint8_t *buf;
	size_t len;
};

static uint8_t *rx_gunzip(const uint8_t *p, size_t n, size_t *out)
{
	z_stream z = { 0 };
	uint8_t *buf = malloc(RX_BODY_MAX);
	int rc;

	if (!buf || inflateInit2(&z, 15 + 16) != Z_OK) {
		free(buf);
		return NULL;
	}
	z.next_in = (Bytef *)p;
	z.avail_in = n;
	z.next_out = buf;
	z.avail_out = RX_BODY_MAX;
	rc = inflate(&z, Z_FINISH);
	*out = z.total_out;
	inflateEnd(&z);
	if (rc != Z_STREAM_END) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void rx_keep(struct rx *rx, struct MHD_Connection *c, const char *url,
		    struct rx_conn *rc, unsigned int status)
{
	struct rx_got *g;
	const char *v;

	if (rx->ngot == RX_MAX)
		return;
	g = &rx->got[rx->ngot++];
	memset(g, 0, sizeof(*g));
	snprintf(g->path, sizeof(g->path), "%s", url);
	v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");
	snprintf(g->encoding, sizeof(g->encoding), "%s", v ? v : "");
	v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	snprintf(g->type, sizeof(g->type), "%s", v ? v : "");
	v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Tenant");
	snprintf(g->tenant, sizeof(g->tenant), "%s", v ? v : "");
	if (!strcmp(g->encoding, "gzip")) {
		g->body = rx_gunzip(rc->buf, rc->len, &g->len);
		g->gunzip_failed = !g->body;
	} else {
		g->body = malloc(rc->len ? rc->len : 1);
		memcpy(g->body, rc->buf, rc->len);
		g->len = rc->len;
	}
	g->t_ns = now_mono_ns();
	g->answered = status;
}

static enum MHD_Result rx_on(void *cls, struct MHD_Connection *c, const char *url,
			     const char *method, const char *version, const char *data,
			     size_t *size, void **ctx)
{
	struct rx *rx = cls;
	struct rx_conn *rc = *ctx;
	struct rx_answer a = { 200, -1, NULL, 0, false };
	struct MHD_Response *resp;
	enum MHD_Result ret;
	char ra[16];

	(void)version;
	if (!rc) {
		*ctx = rc = calloc(1, sizeof(*rc));
		return rc ? MHD_YES : MHD_NO;
	}
	if (*size) {
		uint8_t *nb = realloc(rc->buf, rc->len + *size);

		if (!nb)
			return MHD_NO;
		memcpy(nb + rc->len, data, *size);
		rc->buf = nb;
		rc->len += *size;
		*size = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&rx->mu);
	if (rx->next < rx->nscript)
		a = rx->script[rx->next++];
	if (strcmp(method, "POST"))
		a.status = 405;
	rx_keep(rx, c, url, rc, a.status);
	pthread_cond_broadcast(&rx->cv);
	if (a.hold) {
		rx->holding++;
		pthread_cond_broadcast(&rx->cv);
		while (!rx->released)
			pthread_cond_wait(&rx->cv, &rx->mu);
		rx->holding--;
	}
	pthread_mutex_unlock(&rx->mu);
	resp = MHD_create_response_from_buffer(a.body_len, (void *)a.body, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", "application/x-protobuf");
	if (a.retry_after >= 0) {
		snprintf(ra, sizeof(ra), "%d", a.retry_after);
		MHD_add_response_header(resp, "Retry-After", ra);
	}
	ret = MHD_queue_response(c, a.status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void rx_done(void *cls, struct MHD_Connection *c, void **ctx,
		    enum MHD_RequestTerminationCode toe)
{
	struct rx_conn *rc = *ctx;

	(void)cls, (void)c, (void)toe;
	if (rc) {
		free(rc->buf);
		free(rc);
	}
	*ctx = NULL;
}

/* port 0: any free one (rx->port says which) */
static bool rx_start(struct rx *rx, uint16_t port)
{
	const union MHD_DaemonInfo *di;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	rx->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD,
				 port, NULL, NULL, rx_on, rx,
				 MHD_OPTION_NOTIFY_COMPLETED, rx_done, rx,
				 MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_END);
	if (!rx->d)
		return false;
	di = MHD_get_daemon_info(rx->d, MHD_DAEMON_INFO_BIND_PORT);
	rx->port = di ? di->port : port;
	return true;
}

static void rx_init(struct rx *rx)
{
	memset(rx, 0, sizeof(*rx));
	pthread_mutex_init(&rx->mu, NULL);
	pthread_cond_init(&rx->cv, NULL);
}

static void rx_release(struct rx *rx)
{
	pthread_mutex_lock(&rx->mu);
	rx->released = true;
	pthread_cond_broadcast(&rx->cv);
	pthread_mutex_unlock(&rx->mu);
}

/* until n requests came (bounded only by the test's own timeout) */
static void rx_wait(struct rx *rx, int n)
{
	pthread_mutex_lock(&rx->mu);
	while (rx->ngot < n)
		pthread_cond_wait(&rx->cv, &rx->mu);
	pthread_mutex_unlock(&rx->mu);
}

static void rx_stop(struct rx *rx)
{
	rx_release(rx);
	if (rx->d)
		MHD_stop_daemon(rx->d);
	rx->d = NULL;
}

static void rx_free(struct rx *rx)
{
	rx_stop(rx);
	for (int i = 0; i < rx->ngot; i++)
		free(rx->got[i].body);
	pthread_cond_destroy(&rx->cv);
	pthread_mutex_destroy(&rx->mu);
}

#endif /* TT_OTLP_RECEIVER_H */
