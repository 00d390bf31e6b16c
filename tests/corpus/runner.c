// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Corpus runner: a canned wire capture (README.md) in, tokentrace's JSON request lines out,
 * through the same correlator and JSON output as a live run.
 *
 *   runner [--from N] [--record OUT.ttr] FILE.wire
 *
 * prints the request lines on stdout, errors in the file on stderr. --from N: a tracer that
 * attached before the N-th send or recv record (counting from 1): the records before it are
 * not seen, and the connections are found open (a target's listening port, not an accept).
 * --record: the records also go to a recording, as -w writes it (fuzz_record's seeds).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "correlate.h"
#include "events.h"
#include "outputs.h"
#include "record.h"
#include "util.h"

#define LINE_MAX_ 65536
#define PAYLOAD_MAX (1 << 20)

static const char *path;
static int lineno;
static struct output out;
static long from = 1;	/* --from: the first data record seen */
static long ndata;	/* data records read so far */
static struct recorder *rec;	/* --record */

/* One ring-buffer record, to the correlator (and the recording). */
static int put(struct correlator *c, const void *data, size_t size)
{
	if (rec)
		recorder__record(rec, data, size);
	return correlator__record(c, data, size);
}

static void record_open(const char *out)
{
	struct rec_header h = { .t_begin_ns = 1, .capture_bytes = 65535,
				.ringbuf_bytes = 1 << 22, .pids = { 4242 }, .npids = 1 };
	struct ready_info ri = { .t_ns = 1, .pids = { 4242 }, .comms = { "server" }, .npids = 1,
				 .npids_total = 1, .capture_bytes = 65535,
				 .ringbuf_bytes = 1 << 22 };
	char why[256];

	if (recorder__open(out, REC_FORCE, &h, &rec, why, sizeof(why))) {
		fprintf(stderr, "%s: %s\n", out, why);
		exit(2);
	}
	recorder__ready(rec, &ri);
}

static void fail(const char *msg)
{
	fprintf(stderr, "%s:%d: %s\n", path, lineno, msg);
	exit(2);
}

static void on_request(void *ud, const struct tt_request *r)
{
	out.ops->request(out.priv, r);
}

/* Append the C-escaped strings of s to buf; returns the new length. */
static size_t unquote_all(const char *s, uint8_t *buf, size_t len)
{
	while ((s = strchr(s, '"'))) {
		s++;
		while (*s && *s != '"') {
			int c = (unsigned char)*s++;

			if (c == '\\') {
				c = *s++;
				switch (c) {
				case 'r': c = '\r'; break;
				case 'n': c = '\n'; break;
				case 't': c = '\t'; break;
				case '0': c = 0; break;
				case '\\': case '"': break;
				case 'x': {
					char hex[3] = { s[0], s[0] ? s[1] : 0, 0 };
					char *end;

					c = strtol(hex, &end, 16);
					if (end != hex + 2)
						fail("bad \\x escape");
					s += 2;
					break;
				}
				default:
					fail("bad escape");
				}
			}
			if (len >= PAYLOAD_MAX)
				fail("payload too long");
			buf[len++] = c;
		}
		if (*s != '"')
			fail("unterminated string");
		s++;
	}
	return len;
}

static int state_of(const char *w)
{
	if (!strcmp(w, "close_wait"))
		return 8;
	if (!strcmp(w, "fin_wait1"))
		return 4;
	if (!strcmp(w, "close"))
		return 7;
	fail("unknown state");
	return 0;
}

static void emit_conn(struct correlator *c, uint64_t id, const char *l, const char *r)
{
	struct tt_conn_ev e = {
		.h = { .tgid = 4242, .tid = 4242, .type = TT_EV_CONN, .size = sizeof(e) },
		.conn_id = id,
		.sk = 0xffff888000000000ull + id * 64,
		.family = 2,
		.lport = 8000,
		.rport = 50000 + id,
		.flags = from > 1 ? TT_CF_LISTENER : TT_CF_ACCEPTED,
		.laddr = { 127, 0, 0, 1 },
		.raddr = { 127, 0, 0, 1 },
		.comm = "server",
	};
	unsigned int a, b, cc, d, p;

	if (l && sscanf(l, "%u.%u.%u.%u:%u", &a, &b, &cc, &d, &p) == 5) {
		e.laddr[0] = a, e.laddr[1] = b, e.laddr[2] = cc, e.laddr[3] = d, e.lport = p;
	}
	if (r && sscanf(r, "%u.%u.%u.%u:%u", &a, &b, &cc, &d, &p) == 5) {
		e.raddr[0] = a, e.raddr[1] = b, e.raddr[2] = cc, e.raddr[3] = d, e.rport = p;
	}
	put(c, &e, sizeof(e));
}

struct pending {
	bool active;
	int dir;
	uint64_t id, ts;
	long cap;	/* -1: all */
	int err;
	uint32_t lost;
	size_t len;
};

static uint8_t payload[PAYLOAD_MAX];
static uint8_t recbuf[sizeof(struct tt_data_ev) + PAYLOAD_MAX];

static void flush(struct correlator *c, struct pending *p)
{
	struct tt_data_ev *e = (struct tt_data_ev *)recbuf;
	size_t cap;

	if (!p->active)
		return;
	p->active = false;
	if (++ndata < from)
		return;
	cap = p->cap < 0 || (size_t)p->cap > p->len ? p->len : (size_t)p->cap;
	if (cap > 0xffff)
		fail("a record captures at most 65535 bytes");
	memset(e, 0, sizeof(*e));
	e->h.ts = p->ts;
	e->h.tgid = 4242;
	e->h.tid = 4243;
	e->h.type = TT_EV_DATA;
	e->h.size = sizeof(*e) + cap;
	e->conn_id = p->id;
	e->ret = p->err ? p->err : (int)p->len;
	e->cap = cap;
	e->dir = p->dir;
	e->flags = (cap < p->len ? TT_DF_TRUNC : 0) | (p->lost ? TT_DF_LOST : 0);
	e->lost = p->lost;
	memcpy(e->data, payload, cap);
	put(c, e, sizeof(*e) + cap);
}

int main(int argc, char **argv)
{
	struct output_opts oo = { .f = stdout };
	struct corr_opts co = { .on_request = on_request };
	static char line[LINE_MAX_];
	struct pending p = {};
	struct correlator *c;
	FILE *f;

	while (argc >= 4 && argv[1][0] == '-') {
		if (!strcmp(argv[1], "--from"))
			from = strtol(argv[2], NULL, 10);
		else if (!strcmp(argv[1], "--record"))
			record_open(argv[2]);
		else
			break;
		argv += 2;
		argc -= 2;
	}
	if (argc != 2 || from < 1) {
		fprintf(stderr, "usage: %s [--from N] [--record OUT] FILE.wire\n", argv[0]);
		return 2;
	}
	path = argv[1];
	f = fopen(path, "r");
	if (!f) {
		perror(path);
		return 2;
	}
	output_json__new(&out, &oo);
	c = correlator__new(&co);
	while (fgets(line, sizeof(line), f)) {
		char w[5][64] = {};
		int n;

		lineno++;
		if (line[0] == ' ' || line[0] == '\t') {
			/* continuation of the previous record's payload */
			if (!p.active)
				fail("continuation without a record");
			p.len = unquote_all(line, payload, p.len);
			continue;
		}
		flush(c, &p);
		if (line[0] == '#' || line[0] == '\n')
			continue;
		n = sscanf(line, "%63s %63s %63s %63s %63s", w[0], w[1], w[2], w[3], w[4]);
		if (!strcmp(w[0], "conn")) {
			emit_conn(c, strtoull(w[1], NULL, 10), n > 2 ? w[2] : NULL,
				  n > 3 ? w[3] : NULL);
		} else if (!strcmp(w[0], "recv") || !strcmp(w[0], "send")) {
			const char *opt;

			if (n < 3)
				fail("recv/send ID T ...");
			p = (struct pending){
				.active = true,
				.dir = w[0][0] == 's' ? TT_DIR_SEND : TT_DIR_RECV,
				.id = strtoull(w[1], NULL, 10),
				.ts = strtoull(w[2], NULL, 10),
				.cap = -1,
			};
			if ((opt = strstr(line, " cap=")))
				p.cap = strtol(opt + 5, NULL, 10);
			if ((opt = strstr(line, " err=")))
				p.err = strtol(opt + 5, NULL, 10);
			if ((opt = strstr(line, " lost=")))
				p.lost = strtoul(opt + 6, NULL, 10);
			p.len = unquote_all(line, payload, 0);
		} else if (!strcmp(w[0], "state") && ndata + 1 < from) {
			continue;	/* before the tracer came */
		} else if (!strcmp(w[0], "state")) {
			struct tt_state_ev e = {
				.h = { .ts = strtoull(w[2], NULL, 10), .type = TT_EV_STATE,
				       .size = sizeof(e) },
				.conn_id = strtoull(w[1], NULL, 10),
				.oldstate = 1,
				.newstate = state_of(w[3]),
			};

			put(c, &e, sizeof(e));
		} else {
			fail("unknown record");
		}
	}
	flush(c, &p);
	fclose(f);
	if (rec) {
		static const uint64_t kstats[TT_STAT_NR];

		recorder__tick(rec, 1, kstats, &(struct stall_hook_stats){ 0 }, true);
		if (recorder__close(rec))
			fail("the recording could not be written");
	}
	correlator__free(c);
	out.ops->free(out.priv);
	return 0;
}
