// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The HTTP/2 wire corpus's runner (README.md): a capture's records in, one JSON line per
 * HTTP/2 stream out, through the parsers alone (user/proto: h2, hpack, grpc, sse, http).
 *
 *   h2wire [--joined] < RECORDS
 *
 * RECORDS (check.py writes them from a .wire file): "C id" a connection; "D id c|s t len cap"
 * and then cap bytes: bytes the client (c) or the server (s) sent at t, of which the first
 * cap were captured; "E id t" the connection closed. A connection is HTTP/2 with prior
 * knowledge when the client's first bytes are the preface (or the server's first bytes a
 * SETTINGS frame: servers that speak first), HTTP/1.1 until a 101 to h2c otherwise;
 * --joined takes every connection as joined mid-way (the records are a capture's tail).
 *
 * Per stream, at its close: {"conn","stream","method","path","status","content_type",
 * "request_id","grpc_status","grpc_message","messages" (gRPC messages the server sent),
 * "req_messages","t_message_ns" (the record that completed each), "events" (SSE events),
 * "data_bytes" (the server's), "end" (done, reset, goaway, eof), "by", "code",
 * "server_ended" (its END_STREAM came), "joined",
 * "unknown" (fields the headers may have held), "blocked" (times a window ran out)}; per
 * connection at its end: {"type":"conn","conn","mode","streams","errors","dropped",
 * "resyncs","stray"}.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc.h"
#include "h2.h"
#include "http.h"
#include "sse.h"

#define CONNS_MAX	64
#define PAYLOAD_MAX	(4 << 20)
#define MSG_MAX		4096

struct conn;

struct srec {
	struct conn *c;
	uint32_t id;
	char method[HTTP_METHOD_MAX], path[HTTP_PATH_MAX], ctype[HTTP_CTYPE_MAX];
	char rid[HTTP_REQID_MAX], grpc_msg[HPACK_GRPC_MSG_MAX], req_ctype[HTTP_CTYPE_MAX];
	int status, grpc_status;
	enum { F_NONE, F_GRPC, F_SSE } fmt[2];	/* by content-type, or sniffed when unknown */
	bool server_ended;
	bool have_status, have_grpc, joined;
	unsigned unknown;		/* bit per enum hpack_key */
	struct grpc_parser *grpc[2];
	struct sse_parser *sse;
	uint64_t messages[2], events, data_bytes;
	uint64_t t_msg[MSG_MAX];
	unsigned blocked;
};

struct conn {
	int id;
	const char *mode;
	struct http_parser *req, *resp;
	char settings[HTTP_H2_SETTINGS_MAX];
	bool asked_h2c;
	char up_method[HTTP_METHOD_MAX], up_path[HTTP_PATH_MAX], up_rid[HTTP_REQID_MAX];
	struct h2_parser *h2;
	uint64_t t;
	unsigned errors;
};

static struct conn *conns[CONNS_MAX + 1];
static bool joined_all;

static void json_str(const char *k, const char *s)
{
	printf(",\"%s\":\"", k);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static const char *const key_name[HPACK_NKEYS] = {
	"method", "path", "status", "authority", "content_type", "te", "grpc_status",
	"grpc_message", "request_id", "traceparent",
};

/* ------------------------------------------------------------------ per stream */

static void on_message(void *ud, const struct grpc_message *m)
{
	struct srec *r = ud;

	(void)m;
	if (r->messages[H2_FROM_SERVER] < MSG_MAX)
		r->t_msg[r->messages[H2_FROM_SERVER]] = r->c->t;
	r->messages[H2_FROM_SERVER]++;
}

static void on_req_message(void *ud, const struct grpc_message *m)
{
	struct srec *r = ud;

	(void)m;
	r->messages[H2_FROM_CLIENT]++;
}

static void on_event(void *ud, const struct sse_event *ev)
{
	struct srec *r = ud;

	(void)ev;
	r->events++;
}

static void on_grpc_error(void *ud, const char *why)
{
	struct srec *r = ud;

	(void)why;
	r->c->errors++;
}

static struct srec *rec_of(struct conn *c, void **sud, uint32_t id)
{
	struct srec *r = *sud;

	if (r)
		return r;
	r = calloc(1, sizeof(*r));
	if (!r)
		abort();
	r->c = c;
	r->id = id;
	r->grpc_status = -1;
	if (id == 1 && c->up_method[0]) {
		/* the upgraded request: its head was HTTP/1.1 */
		memcpy(r->method, c->up_method, sizeof(r->method));
		memcpy(r->path, c->up_path, sizeof(r->path));
		memcpy(r->rid, c->up_rid, sizeof(r->rid));
	}
	*sud = r;
	return r;
}

static void take(char *dst, size_t size, const struct hpack_fields *f, enum hpack_key k,
		 const char *v, struct srec *r)
{
	if (f->state[k] == HPACK_KNOWN && !dst[0])
		snprintf(dst, size, "%s", v);
	else if (f->state[k] == HPACK_UNKNOWN)
		r->unknown |= 1u << k;
}

static void on_headers(void *ud, void **sud, const struct h2_headers *h)
{
	struct srec *r = rec_of(ud, sud, h->stream);
	const struct hpack_fields *f = h->f;

	r->joined |= h->joined;
	if (h->kind == H2_HDR_REQUEST || h->kind == H2_HDR_PUSH) {
		take(r->method, sizeof(r->method), f, HPACK_METHOD, f->method, r);
		take(r->path, sizeof(r->path), f, HPACK_PATH, f->path, r);
		take(r->rid, sizeof(r->rid), f, HPACK_REQUEST_ID, f->request_id, r);
		take(r->req_ctype, sizeof(r->req_ctype), f, HPACK_CONTENT_TYPE, f->content_type, r);
		return;
	}
	if (h->dir != H2_FROM_SERVER)
		return;
	if (h->kind == H2_HDR_RESPONSE) {
		if (f->state[HPACK_STATUS] == HPACK_KNOWN) {
			r->status = f->status;
			r->have_status = true;
		} else {
			r->unknown |= 1u << HPACK_STATUS;
		}
		take(r->ctype, sizeof(r->ctype), f, HPACK_CONTENT_TYPE, f->content_type, r);
	}
	/* trailers, or a trailers-only response */
	if (f->state[HPACK_GRPC_STATUS] == HPACK_KNOWN && !r->have_grpc) {
		r->grpc_status = f->grpc_status;
		r->have_grpc = true;
		if (f->state[HPACK_GRPC_MESSAGE] == HPACK_KNOWN)
			snprintf(r->grpc_msg, sizeof(r->grpc_msg), "%s", f->grpc_message);
	} else if (f->state[HPACK_GRPC_STATUS] == HPACK_UNKNOWN) {
		r->unknown |= 1u << HPACK_GRPC_STATUS | 1u << HPACK_GRPC_MESSAGE;
	}
}

static const struct grpc_cb grpc_resp_cb = { .on_message = on_message, .on_error = on_grpc_error };
static const struct grpc_cb grpc_req_cb = { .on_message = on_req_message,
					    .on_error = on_grpc_error };
static const struct sse_cb sse_cb = { .on_event = on_event };

/*
 * Bytes whose content-type could not be decoded (joined): their first bytes tell, as the
 * correlator will have to: a gRPC prefix (flag 0 or 1, then a length), or SSE.
 */
static void sniff(struct srec *r, const struct h2_data *d)
{
	const char *ct = d->dir == H2_FROM_SERVER ? r->ctype : r->req_ctype;

	if (r->fmt[d->dir] || !d->frame_start || !d->bytes)
		return;
	if (!strncmp(ct, "application/grpc", 16))
		r->fmt[d->dir] = F_GRPC;
	else if (!strncmp(ct, "text/event-stream", 17))
		r->fmt[d->dir] = F_SSE;
	else if (ct[0] || !(r->unknown & 1u << HPACK_CONTENT_TYPE))
		return;
	else if (d->len >= GRPC_PREFIX_LEN && d->bytes[0] <= 1 && !d->bytes[1])
		r->fmt[d->dir] = F_GRPC;
	else if ((d->len >= 5 && !memcmp(d->bytes, "data:", 5)) ||
		 (d->len >= 6 && !memcmp(d->bytes, "event:", 6)))
		r->fmt[d->dir] = F_SSE;
}

static void on_data(void *ud, void **sud, const struct h2_data *d)
{
	struct srec *r = rec_of(ud, sud, d->stream);
	bool grpc;

	sniff(r, d);
	grpc = r->fmt[d->dir] == F_GRPC;
	if (d->dir == H2_FROM_SERVER)
		r->data_bytes += d->len;
	if (grpc) {
		if (!r->grpc[d->dir])
			r->grpc[d->dir] = grpc_parser__new(d->dir ? &grpc_resp_cb : &grpc_req_cb, r,
							   d->joined);
		if (d->bytes)
			grpc_parser__feed(r->grpc[d->dir], d->bytes, d->len, d->frame_start);
		else
			grpc_parser__gap(r->grpc[d->dir], d->len);
	} else if (d->dir == H2_FROM_SERVER && r->fmt[d->dir] == F_SSE) {
		if (!r->sse)
			r->sse = sse_parser__new(&sse_cb, r);
		if (d->bytes)
			sse_parser__feed(r->sse, d->bytes, d->len);
		else
			sse_parser__gap(r->sse, d->len);
	}
}

static void on_end_stream(void *ud, void **sud, enum h2_dir dir, uint32_t stream)
{
	struct srec *r = rec_of(ud, sud, stream);

	if (r->grpc[dir] && !grpc_parser__end(r->grpc[dir]))
		r->c->errors++;
	if (dir == H2_FROM_SERVER && r->sse)
		sse_parser__end(r->sse);
	if (dir == H2_FROM_SERVER)
		r->server_ended = true;
}

static const char *const end_name[] = { "done", "reset", "goaway", "eof" };

static void on_close(void *ud, void **sud, const struct h2_close *c)
{
	struct conn *cn = ud;
	struct srec *r = rec_of(cn, sud, c->stream);
	uint64_t n = r->messages[H2_FROM_SERVER];

	printf("{\"conn\":%d,\"stream\":%u", cn->id, c->stream);
	json_str("method", r->method);
	json_str("path", r->path);
	if (r->have_status)
		printf(",\"status\":%d", r->status);
	else
		printf(",\"status\":null");
	json_str("content_type", r->ctype);
	json_str("request_id", r->rid);
	if (r->have_grpc) {
		printf(",\"grpc_status\":%d", r->grpc_status);
		json_str("grpc_message", r->grpc_msg);
	} else {
		printf(",\"grpc_status\":null,\"grpc_message\":null");
	}
	printf(",\"messages\":%llu,\"req_messages\":%llu,\"t_message_ns\":[",
	       (unsigned long long)n, (unsigned long long)r->messages[H2_FROM_CLIENT]);
	for (uint64_t i = 0; i < n && i < MSG_MAX; i++)
		printf("%s%llu", i ? "," : "", (unsigned long long)r->t_msg[i]);
	printf("],\"events\":%llu,\"data_bytes\":%llu", (unsigned long long)r->events,
	       (unsigned long long)r->data_bytes);
	json_str("end", end_name[c->reason]);
	if (c->reason == H2_CLOSE_RESET || c->reason == H2_CLOSE_GOAWAY)
		printf(",\"by\":\"%s\",\"code\":%u", c->by ? "server" : "client", c->error_code);
	printf(",\"server_ended\":%s,\"joined\":%s,\"unknown\":[",
	       r->server_ended ? "true" : "false", c->joined || r->joined ? "true" : "false");
	for (int k = 0, first = 1; k < HPACK_NKEYS; k++)
		if (r->unknown & 1u << k) {
			printf("%s\"%s\"", first ? "" : ",", key_name[k]);
			first = 0;
		}
	printf("],\"blocked\":%u}\n", r->blocked);
	for (int d = 0; d < 2; d++)
		grpc_parser__free(r->grpc[d]);
	sse_parser__free(r->sse);
	free(r);
	*sud = NULL;
}

static void on_flow(void *ud, void **sud, const struct h2_flow *f)
{
	if (sud && f->kind == H2_FLOW_BLOCKED)
		rec_of(ud, sud, f->stream)->blocked++;
}

static void on_error(void *ud, enum h2_dir dir, const char *why)
{
	struct conn *c = ud;

	(void)dir;
	c->errors++;
	fprintf(stderr, "conn %d: %s\n", c->id, why);
}

static const struct h2_cb h2_cbs = {
	.on_headers = on_headers, .on_data = on_data, .on_end_stream = on_end_stream,
	.on_close = on_close, .on_flow = on_flow, .on_error = on_error,
};

/* ------------------------------------------------------------------ HTTP/1.1 until h2c */

static void start_h2(struct conn *c, enum h2_start start, const char *mode)
{
	c->h2 = h2_parser__new(start, &h2_cbs, c);
	if (!c->h2)
		abort();
	c->mode = mode;
}

static void h1_req_head(void *ud, const struct http_head *h)
{
	struct conn *c = ud;

	c->asked_h2c = h->upgrade_h2c;
	memcpy(c->settings, h->http2_settings, sizeof(c->settings));
	memcpy(c->up_method, h->method, sizeof(c->up_method));
	memcpy(c->up_path, h->path, sizeof(c->up_path));
	memcpy(c->up_rid, h->request_id, sizeof(c->up_rid));
}

static void h1_resp_head(void *ud, const struct http_head *h)
{
	struct conn *c = ud;

	if (h->status == 101 && h->upgrade_h2c && c->asked_h2c && !c->h2) {
		start_h2(c, H2_START_UPGRADE, "upgrade");
		if (h2_parser__upgraded(c->h2, c->settings))
			c->errors++;
	}
}

static void h1_tunnel(void *ud, const uint8_t *d, size_t len)
{
	struct conn *c = ud;

	if (c->h2)
		h2_parser__feed(c->h2, H2_FROM_SERVER, d, len);
}

static const struct http_cb req_cbs = { .on_head = h1_req_head };
static const struct http_cb resp_cbs = { .on_head = h1_resp_head, .on_tunnel = h1_tunnel };

/* ------------------------------------------------------------------ records */

static void first_bytes(struct conn *c, enum h2_dir dir, const uint8_t *d, size_t len)
{
	if (joined_all) {
		start_h2(c, H2_START_JOINED, "joined");
	} else if ((dir == H2_FROM_CLIENT && h2__is_preface(d, len)) ||
		   (dir == H2_FROM_SERVER && len >= 9 && d[3] == H2_SETTINGS && !d[5] && !d[6] &&
		    !d[7] && !d[8])) {
		start_h2(c, H2_START_PREFACE, "preface");
	} else {
		c->mode = "http1";
		c->req = http_parser__new(HTTP_REQUEST, &req_cbs, c);
		c->resp = http_parser__new(HTTP_RESPONSE, &resp_cbs, c);
	}
}

static void data(struct conn *c, enum h2_dir dir, const uint8_t *d, size_t cap, uint64_t len)
{
	if (!c->mode)
		first_bytes(c, dir, d, cap);
	if (c->h2 && (dir == H2_FROM_CLIENT || !c->resp)) {
		h2_parser__feed(c->h2, dir, d, cap);
		h2_parser__gap(c->h2, dir, len - cap);
		return;
	}
	if (dir == H2_FROM_SERVER) {
		/* after the 101, on_tunnel hands the rest to h2 */
		http_parser__feed(c->resp, d, cap);
		if (c->h2) {
			h2_parser__gap(c->h2, dir, len - cap);
			http_parser__free(c->resp);
			c->resp = NULL;
		} else {
			http_parser__gap(c->resp, len - cap);
		}
	} else if (c->req) {
		http_parser__feed(c->req, d, cap);
		http_parser__gap(c->req, len - cap);
	}
}

static void conn_end(struct conn *c)
{
	struct h2_stats st;

	if (c->h2) {
		h2_parser__eof(c->h2);
		h2_parser__stats(c->h2, &st);
		printf("{\"type\":\"conn\",\"conn\":%d,\"mode\":\"%s\",\"streams\":%llu,"
		       "\"errors\":%u,\"dropped\":%llu,\"resyncs\":%llu,\"stray\":%llu}\n", c->id,
		       c->mode, (unsigned long long)st.streams, c->errors,
		       (unsigned long long)st.dropped, (unsigned long long)st.resyncs,
		       (unsigned long long)st.stray);
		h2_parser__free(c->h2);
	}
	http_parser__free(c->req);
	http_parser__free(c->resp);
	free(c);
}

static struct conn *conn_get(int id)
{
	if (id < 1 || id > CONNS_MAX || !conns[id]) {
		fprintf(stderr, "h2wire: no connection %d\n", id);
		exit(2);
	}
	return conns[id];
}

int main(int argc, char **argv)
{
	static uint8_t buf[PAYLOAD_MAX];
	char line[256];

	joined_all = argc > 1 && !strcmp(argv[1], "--joined");
	while (fgets(line, sizeof(line), stdin)) {
		int id;
		char dir;
		unsigned long long t, len, cap;

		if (sscanf(line, "C %d", &id) == 1 && id >= 1 && id <= CONNS_MAX) {
			conns[id] = calloc(1, sizeof(struct conn));
			conns[id]->id = id;
		} else if (sscanf(line, "D %d %c %llu %llu %llu", &id, &dir, &t, &len, &cap) == 5) {
			struct conn *c = conn_get(id);

			if (cap > len || cap > PAYLOAD_MAX || fread(buf, 1, cap, stdin) != cap) {
				fprintf(stderr, "h2wire: bad record\n");
				return 2;
			}
			c->t = t;
			data(c, dir == 's' ? H2_FROM_SERVER : H2_FROM_CLIENT, buf, cap, len);
		} else if (sscanf(line, "E %d %llu", &id, &t) == 2) {
			struct conn *c = conn_get(id);

			c->t = t;
			conn_end(c);
			conns[id] = NULL;
		} else {
			fprintf(stderr, "h2wire: bad line: %s", line);
			return 2;
		}
	}
	for (int i = 1; i <= CONNS_MAX; i++)
		if (conns[i])
			conn_end(conns[i]);
	return 0;
}
