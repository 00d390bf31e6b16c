// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Recordings: what is written reads back the same, a replay through a session prints the same
 * bytes as the run it recorded, and a damaged file (cut anywhere, any byte changed, not a
 * recording, another version) is a one-line error, never a crash or a silent success.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "record.h"
#include "session.h"
#include "outputs.h"
#include "util.h"

/* ------------------------------------------------------------------ a canned exchange */

static uint8_t recs[64][1024];
static size_t rec_len[64];
static int nrecs;

static void add_rec(const void *p, size_t n)
{
	assert_true(nrecs < 64 && n <= sizeof(recs[0]));
	memcpy(recs[nrecs], p, n);
	rec_len[nrecs++] = n;
}

static void add_data(uint64_t ts, int dir, const char *s)
{
	uint8_t buf[1024] = {};
	struct tt_data_ev *e = (struct tt_data_ev *)buf;
	size_t n = strlen(s);

	e->h.ts = ts;
	e->h.tgid = 4242;
	e->h.tid = 4243;
	e->h.type = TT_EV_DATA;
	e->h.size = sizeof(*e) + n;
	e->conn_id = 1;
	e->ret = n;
	e->cap = n;
	e->dir = dir;
	memcpy(e->data, s, n);
	add_rec(buf, sizeof(*e) + n);
}

static void add_chunk(uint64_t ts, const char *text)
{
	char ev[256], chunk[300];

	snprintf(ev, sizeof(ev), "data: {\"choices\":[{\"delta\":{\"content\":\"%s\"}}]}\n\n",
		 text);
	snprintf(chunk, sizeof(chunk), "%zx\r\n%s\r\n", strlen(ev), ev);
	add_data(ts, TT_DIR_SEND, chunk);
}

/* One streamed chat completion of 6 chunks, and a malformed record the correlator counts. */
static void build_exchange(void)
{
	struct tt_conn_ev c = {
		.h = { .ts = 1000, .tgid = 4242, .tid = 4242, .type = TT_EV_CONN,
		       .size = sizeof(c) },
		.conn_id = 1,
		.sk = 0xffff888000000040ull,
		.family = 2,
		.lport = 8000,
		.rport = 50001,
		.flags = TT_CF_ACCEPTED,
		.laddr = { 127, 0, 0, 1 },
		.raddr = { 127, 0, 0, 1 },
		.comm = "server",
	};
	struct tt_state_ev st = {
		.h = { .ts = 90000000, .type = TT_EV_STATE, .size = sizeof(st) },
		.conn_id = 1,
		.oldstate = 1,
		.newstate = 7,
	};
	static const uint8_t junk[5] = { 1, 2, 3, 4, 5 };

	nrecs = 0;
	add_rec(&c, sizeof(c));
	add_data(2000000, TT_DIR_RECV,
		 "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Request-Id: r-1\r\n"
		 "Content-Type: application/json\r\nContent-Length: 31\r\n\r\n"
		 "{\"model\":\"m-7b\",\"stream\":true} ");
	add_data(3000000, TT_DIR_SEND,
		 "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
		 "Transfer-Encoding: chunked\r\n\r\n");
	for (int i = 0; i < 6; i++)
		add_chunk(40000000 + i * 5000000ull + (i == 3 ? 20000000 : 0), "tok");
	add_rec(junk, sizeof(junk));
	add_data(80000000, TT_DIR_SEND, "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n");
	add_rec(&st, sizeof(st));
}

static struct ready_info ready_of(void)
{
	struct ready_info ri = {
		.t_ns = 500,
		.npids = 1,
		.pids = { 4242 },
		.comms = { "server" },
		.probes = 9,
		.capture_bytes = 4096,
		.ringbuf_bytes = 4 << 20,
	};

	return ri;
}

/* The session's inputs, through a recorder (when w) and a session printing JSON to *out. */
static void run_live(struct recorder *w, char **out, size_t *outlen)
{
	struct session_opts so = {};
	struct session *s = session__new(&so);
	FILE *f = open_memstream(out, outlen);
	struct output_opts oo = { .f = f };
	struct output o;
	struct ready_info ri = ready_of();
	uint64_t k[TT_STAT_NR] = { 10, 0, 0, 0, 0 };
	/* the lazy scheduler hooks' counts ride in the ticks: the replay says them too */
	struct stall_hook_stats sh = { .lazy = true, .attaches = 3, .armed_ns = 12345678 };

	assert_non_null(s);
	assert_int_equal(output_json__new(&o, &oo), 0);
	assert_int_equal(session__add_output(s, &o), 0);
	if (w)
		recorder__ready(w, &ri);
	session__ready(s, &ri);
	for (int i = 0; i < nrecs; i++) {
		if (w)
			recorder__record(w, recs[i], rec_len[i]);
		session__record(s, recs[i], rec_len[i]);
		if (i == 5) {
			if (w)
				recorder__tick(w, 50000000, k, &sh, false);
			session__stall_hooks(s, &sh);
			session__tick(s, 50000000, k, false);
		}
	}
	k[0] = 20;
	k[1] = 2;	/* two records dropped: shows in the summary */
	if (w)
		recorder__tick(w, 95000000, k, &sh, true);
	session__stall_hooks(s, &sh);
	session__tick(s, 95000000, k, true);
	session__free(s);
	fclose(f);
}

static char tmpdir[64];
static char path[128];

static int setup(void **state)
{
	strcpy(tmpdir, "/tmp/tt-test-record.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(path, sizeof(path), "%s/rec.ttr", tmpdir);
	build_exchange();
	return 0;
}

static int teardown(void **state)
{
	unlink(path);
	rmdir(tmpdir);
	return 0;
}

static void write_recording(char **live, size_t *livelen)
{
	struct rec_header h = {
		.t_begin_ns = 400,
		.capture_bytes = 4096,
		.ringbuf_bytes = 4 << 20,
		.port = 8000,
		.npids = 1,
		.pids = { 4242 },
		.cmdline = "tokentrace -p 4242 -w rec.ttr",
	};
	struct recorder *w;
	char why[256];

	assert_int_equal(recorder__open(path, 0, &h, &w, why, sizeof(why)), 0);
	run_live(w, live, livelen);
	assert_int_equal(recorder__close(w), 0);
}

static uint8_t *slurp(const char *p, size_t *len)
{
	FILE *f = fopen(p, "rb");
	uint8_t *buf;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc(n + 1);
	assert_int_equal(fread(buf, 1, n, f), (size_t)n);
	fclose(f);
	*len = n;
	return buf;
}

/* Read every entry; 0 if the recording read to its end mark, else -EINVAL with err set. */
static int read_all(const uint8_t *buf, size_t len, unsigned int flags, char *err, size_t errsz)
{
	struct rec_reader *r;
	struct rec_entry e;
	int rc;

	rc = rec_reader__open_mem(buf, len, flags, &r, err, errsz);
	if (rc)
		return rc;
	while ((rc = rec_reader__next(r, &e)) > 0)
		;
	if (rc < 0)
		snprintf(err, errsz, "%s", rec_reader__error(r));
	rec_reader__free(r);
	return rc;
}

/* ------------------------------------------------------------------ tests */

static void test_roundtrip(void **state)
{
	struct rec_reader *r;
	struct rec_entry e;
	char *live = NULL, err[256];
	size_t livelen, n = 0, ticks = 0;
	const struct rec_header *h;

	write_recording(&live, &livelen);
	free(live);
	assert_int_equal(rec_reader__open(path, &r, err, sizeof(err)), 0);
	h = rec_reader__header(r);
	assert_int_equal(h->version, REC_VERSION);
	assert_int_equal(h->npids, 1);
	assert_int_equal(h->pids[0], 4242);
	assert_int_equal(h->port, 8000);
	assert_int_equal(h->capture_bytes, 4096);
	assert_int_equal(h->wall_offset_ns, wall_offset());
	assert_string_equal(h->tt_version, TT_VERSION);
	assert_string_equal(h->cmdline, "tokentrace -p 4242 -w rec.ttr");
	assert_true(h->kernel[0]);

	assert_int_equal(rec_reader__next(r, &e), 1);
	assert_int_equal(e.type, REC_READY);
	assert_true(e.ready.replay);
	assert_int_equal(e.ready.pids[0], 4242);
	assert_string_equal(e.ready.comms[0], "server");
	assert_int_equal(e.ready.probes, 9);
	while (rec_reader__next(r, &e) == 1) {
		if (e.type == REC_TICK) {
			ticks++;
			assert_int_equal(e.kstats[0], ticks == 1 ? 10 : 20);
			assert_int_equal(e.final, ticks == 2);
			assert_true(e.hooks.lazy);
			assert_int_equal(e.hooks.attaches, 3);
			assert_int_equal(e.hooks.armed_ns, 12345678);
			continue;
		}
		assert_int_equal(e.type, REC_RECORD);
		assert_true(n < (size_t)nrecs);
		assert_int_equal(e.size, rec_len[n]);
		assert_memory_equal(e.data, recs[n], e.size);
		n++;
	}
	assert_int_equal(n, nrecs);
	assert_int_equal(ticks, 2);
	assert_int_equal(rec_reader__next(r, &e), 0);	/* stays at the end */
	rec_reader__free(r);
}

/* The point of it all: the replay prints what the run printed, byte for byte. */
static void test_replay_identical(void **state)
{
	struct session_opts so = {};
	struct session *s = session__new(&so);
	struct rec_reader *r;
	struct rec_entry e;
	struct output o;
	char *live = NULL, *replay = NULL, err[256];
	size_t livelen, replaylen;
	FILE *f;
	struct output_opts oo;
	int rc;

	write_recording(&live, &livelen);
	assert_non_null(strstr(live, "\"request_id\":\"r-1\""));
	assert_non_null(strstr(live, "\"chunks\":6"));
	assert_non_null(strstr(live, "\"ringbuf\":2"));

	f = open_memstream(&replay, &replaylen);
	oo = (struct output_opts){ .f = f };
	assert_int_equal(output_json__new(&o, &oo), 0);
	session__add_output(s, &o);
	assert_int_equal(rec_reader__open(path, &r, err, sizeof(err)), 0);
	while ((rc = rec_reader__next(r, &e)) > 0) {
		switch (e.type) {
		case REC_READY:
			session__ready(s, &e.ready);
			break;
		case REC_RECORD:
			session__record(s, e.data, e.size);
			break;
		case REC_TICK:
			session__stall_hooks(s, &e.hooks);
			session__tick(s, e.now_ns, e.kstats, e.final);
			break;
		default:
			fail();
		}
	}
	assert_int_equal(rc, 0);
	rec_reader__free(r);
	session__free(s);
	fclose(f);
	assert_int_equal(replaylen, livelen);
	assert_string_equal(replay, live);
	free(live);
	free(replay);
}

static void test_truncated_anywhere(void **state)
{
	char *live = NULL, err[256];
	size_t livelen, len;
	uint8_t *buf;

	write_recording(&live, &livelen);
	free(live);
	buf = slurp(path, &len);
	assert_int_equal(read_all(buf, len, 0, err, sizeof(err)), 0);
	for (size_t cut = 0; cut < len; cut++) {
		char want[64];

		assert_int_equal(read_all(buf, cut, 0, err, sizeof(err)), -EINVAL);
		if (cut == 0) {
			assert_string_equal(err, "not a tokentrace recording");
			continue;
		}
		snprintf(want, sizeof(want), "truncated recording at byte %zu", cut);
		if (strncmp(err, want, strlen(want)))
			fail_msg("cut at %zu: '%s'", cut, err);
	}
	free(buf);
}

static void test_any_byte_changed(void **state)
{
	char *live = NULL, err[256];
	size_t livelen, len;
	uint8_t *buf;

	write_recording(&live, &livelen);
	free(live);
	buf = slurp(path, &len);
	for (size_t i = 0; i < len; i++) {
		for (int bit = 0; bit < 8; bit += 3) {
			int rc;

			buf[i] ^= 1 << bit;
			rc = read_all(buf, len, 0, err, sizeof(err));
			if (rc != -EINVAL)
				fail_msg("byte %zu bit %d changed: read without error", i, bit);
			buf[i] ^= 1 << bit;
		}
	}
	/* without checksums (as the fuzzer reads), still never a crash; errors are allowed */
	for (size_t i = 0; i < len; i++) {
		buf[i] ^= 0x80;
		read_all(buf, len, REC_NO_CRC, err, sizeof(err));
		buf[i] ^= 0x80;
	}
	free(buf);
}

static void test_bad_files(void **state)
{
	char *live = NULL, err[256];
	size_t livelen, len;
	uint8_t *buf, *more;
	struct rec_reader *r;

	assert_int_equal(read_all((const uint8_t *)"hello, world\n", 13, 0, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "not a tokentrace recording");
	assert_int_equal(rec_reader__open("/nonexistent/x.ttr", &r, err, sizeof(err)), -ENOENT);
	assert_null(r);
	assert_string_equal(err, "No such file or directory");

	write_recording(&live, &livelen);
	free(live);
	buf = slurp(path, &len);

	/* another format version */
	buf[8] = 2;
	assert_int_equal(read_all(buf, len, 0, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "recording format version 2; this tokentrace reads version 1");
	buf[8] = 1;

	/* another event layout (checksums off: as if written so) */
	buf[108] ^= 0xff;
	assert_int_equal(read_all(buf, len, REC_NO_CRC, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "another event layout"));
	buf[108] ^= 0xff;

	/* something after the end mark */
	more = malloc(len + 1);
	memcpy(more, buf, len);
	more[len] = 0;
	assert_int_equal(read_all(more, len + 1, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "data after the end mark"));
	free(more);
	free(buf);
}

static void test_writer_errors(void **state)
{
	struct rec_header h = { .npids = 1, .pids = { 1 } };
	struct recorder *w;
	char why[256];

	assert_int_equal(recorder__open("/nonexistent/dir/x.ttr", 0, &h, &w, why, sizeof(why)),
			 -ENOENT);
	assert_null(w);
	assert_string_equal(why, "No such file or directory");
	/* a full disk: every later write fails, the first error is kept */
	if (access("/dev/full", W_OK) == 0) {
		uint8_t rec[64] = {};

		assert_int_equal(recorder__open("/dev/full", 0, &h, &w, why, sizeof(why)), 0);
		for (int i = 0; i < 10000; i++)
			recorder__record(w, rec, sizeof(rec));
		assert_int_equal(recorder__flush(w), -ENOSPC);
		assert_int_equal(recorder__close(w), -ENOSPC);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_replay_identical, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated_anywhere, setup, teardown),
		cmocka_unit_test_setup_teardown(test_any_byte_changed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
