// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What --otlp and --report take from the wire or the environment, fuzzed: a traceparent
 * (accepted only in its exact form, and then read back as it was written), strings for
 * protobuf (always valid UTF-8 without a control character, as a Collector needs) and for
 * HTML (never markup), the OTEL_* variables (a header never carries CR, LF or another
 * control), and a request made of the input encoded as a span (a whole message, whatever
 * its strings and times).
 *
 * The input: 1 byte that says how to cut the rest into up to 8 pieces, then the pieces.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html.h"
#include "otlp.h"
#include "util.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)
#define PIECES	8

struct piece {
	const uint8_t *p;
	size_t n;
};

static void cut(const uint8_t *d, size_t n, struct piece *pc)
{
	uint8_t k = n ? d[0] : 0;
	size_t at = n ? 1 : 0, left = n - at;

	for (int i = 0; i < PIECES; i++) {
		size_t len = i == PIECES - 1 ? left : MIN(left, (size_t)(((k >> (i % 8)) & 1) * 7 +
							(left / (PIECES - i))));

		pc[i].p = d + at;
		pc[i].n = len;
		at += len;
		left -= len;
	}
}

static void cstr(char *dst, size_t sz, const struct piece *pc)
{
	size_t n = MIN(pc->n, sz - 1);

	memcpy(dst, pc->p, n);
	dst[n] = '\0';
}

/* valid UTF-8 with no control character (C0, DEL, C1, bidi) */
static void clean(const uint8_t *s, size_t n)
{
	uint32_t cp;

	for (size_t i = 0, l; i < n; i += l) {
		l = utf8_seq(s + i, n - i, &cp);
		CHECK(l);
		CHECK(cp >= 0x20 && cp != 0x7f && !cp_is_control(cp));
	}
}

static void traceparent(const struct piece *pc)
{
	char s[80], again[56];
	uint8_t t[16], p[8], fl;

	cstr(s, sizeof(s), pc);
	if (otlp__traceparent(s, t, p, &fl))
		return;
	snprintf(again, sizeof(again), "%.2s-", s);
	for (int i = 0; i < 16; i++)
		snprintf(again + 3 + 2 * i, 3, "%02x", t[i]);
	again[35] = '-';
	for (int i = 0; i < 8; i++)
		snprintf(again + 36 + 2 * i, 3, "%02x", p[i]);
	snprintf(again + 52, 4, "-%02x", fl);
	CHECK(!strncmp(s, again, 55));
}

static void strings(const struct piece *pc)
{
	struct pbuf b;
	struct pbuf_reader r;
	struct pbuf_field f;
	char *h = NULL;
	size_t hn = 0;
	FILE *m;

	pbuf__init(&b, 1 << 20);
	pbuf__str(&b, 1, (const char *)pc->p, pc->n);
	CHECK(pbuf__ok(&b));
	pbuf_reader__init(&r, b.buf, b.len);
	CHECK(pbuf_reader__next(&r, &f) && f.num == 1 && f.wire == PB_LEN);
	clean(f.data, f.len);
	pbuf__free(&b);

	m = open_memstream(&h, &hn);
	CHECK(m);
	html__esc(m, (const char *)pc->p, pc->n);
	CHECK(!fclose(m));
	clean((const uint8_t *)h, hn);
	CHECK(!memchr(h, '<', hn) && !memchr(h, '>', hn) && !memchr(h, '"', hn) &&
	      !memchr(h, '\'', hn));
	free(h);
}

static char env_v[3][512];

static const char *get(const char *name)
{
	if (!strcmp(name, "OTEL_EXPORTER_OTLP_HEADERS"))
		return env_v[0];
	if (!strcmp(name, "OTEL_RESOURCE_ATTRIBUTES"))
		return env_v[1];
	if (!strcmp(name, "OTEL_EXPORTER_OTLP_ENDPOINT"))
		return env_v[2];
	return NULL;
}

static void config(const struct piece *pc)
{
	struct otlp_config c;
	char why[256];

	for (int i = 0; i < 3; i++)
		cstr(env_v[i], sizeof(env_v[i]), &pc[i]);
	if (otlp_config__load(&c, NULL, get, why, sizeof(why))) {
		CHECK(why[0]);
		return;
	}
	for (int i = 0; i < c.traces.nheaders; i++)
		for (const char *h = c.traces.headers[i]; *h; h++)
			CHECK((unsigned char)*h >= 0x20 && *h != 0x7f);
	CHECK(!strncmp(c.traces.url, "http://", 7) || !strncmp(c.traces.url, "https://", 8));
}

static void span(const struct piece *pc)
{
	struct tt_request *r = request__new();
	struct otlp_ids ids = { .trace_flags = 1, .span_id = { 1 }, .trace_id = { 1 } };
	struct otlp_span_opts o = { .token_events = 16 };
	struct tt_stall st = { .engine_late = -1, .nhops = 1 };
	struct pbuf b;
	uint64_t t = 1000;

	if (!r)
		return;
	cstr(r->model, sizeof(r->model), &pc[0]);
	cstr(r->path, sizeof(r->path), &pc[1]);
	cstr(r->host, sizeof(r->host), &pc[2]);
	cstr(r->conn, sizeof(r->conn), &pc[3]);
	cstr(r->method, sizeof(r->method), &pc[4]);
	cstr(r->traceparent, sizeof(r->traceparent), &pc[5]);
	cstr(st.hop[0].comm, sizeof(st.hop[0].comm), &pc[6]);
	cstr(st.stack, sizeof(st.stack), &pc[6]);
	for (size_t i = 0; i < pc[7].n && i < 64; i++) {
		t += pc[7].p[i] * 1000000ull;
		request__add_chunk(r, t);
	}
	r->t_start_ns = 500;
	r->t_end_ns = t;
	r->status = pc[7].n ? pc[7].p[0] * 3 : 0;
	if (r->chunks > 2) {
		st.t_begin_ns = r->tok_ns[0];
		st.t_end_ns = r->tok_ns[1];
		r->stalls = malloc(sizeof(st));
		if (r->stalls) {
			*r->stalls = st;
			r->nstalls = r->stalls_cap = 1;
		}
	}
	request__finish(r);
	pbuf__init(&b, 1 << 20);
	otlp__span(&b, r, &ids, &o);
	CHECK(pbuf__ok(&b));
	pbuf__free(&b);
	request__free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct piece pc[PIECES];

	cut(data, size, pc);
	traceparent(&pc[0]);
	strings(&pc[1]);
	config(pc + 2);
	span(pc);
	return 0;
}
