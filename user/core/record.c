// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Recordings: writer and reader (format in record.h). The reader trusts nothing: every length
 * is checked before it is used, every entry's checksum before its payload is handed out, and
 * every failure is one line naming the byte where the file went wrong.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>
#include "pystack.h"
#include "record.h"
#include "util.h"
#include "vec.h"

static const uint8_t rec_magic[8] = { 0x89, 'T', 'T', 'R', 'E', 'C', '\r', '\n' };

#define HDR_FIXED	(8 + 2 + 2 + 4 + 8 + 8 + 4 + 4 + 2 + 2 + 4 * READY_PIDS_MAX + 4 + 4 + 8)
#define HDR_MAX		8192
#define ENT_HDR		12
#define HF_LE		0x1	/* records are in little-endian byte order */
#define SF_STALLS	0x1	/* session flag: stalls explained */
#define EF_SKIPPABLE	0x1	/* entry flag: a reader that does not know the type may skip it */

#define READY_LEN	(4 + sizeof(struct ready_info))
#define TICK_FIXED	12
#define END_LEN		16

static bool host_le(void)
{
	const uint16_t one = 1;

	return *(const uint8_t *)&one == 1;
}

uint32_t rec__layout(void)
{
	/* FNV-1a over the sizes of what crosses into a recording */
	const uint32_t parts[] = {
		sizeof(struct tt_hdr), sizeof(struct tt_conn_ev), sizeof(struct tt_data_ev),
		sizeof(struct tt_state_ev), sizeof(struct tt_marker_ev), sizeof(struct tt_sched_ev),
		sizeof(struct tt_tcp_ev), sizeof(struct tt_stack_ev), sizeof(struct ready_info),
		sizeof(struct tt_proc_ev), sizeof(struct tt_pystack_ev), sizeof(struct tt_pyname_ev),
		sizeof(struct tt_py_frame),
		TT_EV_NR, TT_STAT_NR,
	};
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
		for (int b = 0; b < 4; b++) {
			h ^= (parts[i] >> (8 * b)) & 0xff;
			h *= 16777619u;
		}
	}
	return h;
}

/* ------------------------------------------------------------------ little-endian bytes */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = v >> (8 * i);
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = v >> (8 * i);
}

static uint16_t get16(const uint8_t *p)
{
	return p[0] | (uint16_t)p[1] << 8;
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t crc(uint32_t c, const void *buf, size_t len)
{
	/* zlib takes uInt lengths: feed in pieces */
	const uint8_t *p = buf;

	while (len) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;

		c = crc32(c, p, n);
		p += n;
		len -= n;
	}
	return c;
}

/* ------------------------------------------------------------------ writer */

struct recorder {
	FILE *f;
	char *path;
	struct stat st;		/* the file created: what discard may delete */
	int err;		/* first failed write, -errno */
	uint64_t entries;
	uint64_t records;
};

static void w_bytes(struct recorder *w, const void *p, size_t n)
{
	if (w->err || !n)
		return;
	if (fwrite(p, 1, n, w->f) != n)
		w->err = errno ? -errno : -EIO;
}

static void w_entry(struct recorder *w, uint8_t type, const void *p1, size_t n1,
		    const void *p2, size_t n2)
{
	uint8_t h[ENT_HDR] = { type, 0, 0, 0 };
	uint32_t c;

	if (w->err)
		return;
	put32(h + 4, n1 + n2);
	c = crc(crc32(0, Z_NULL, 0), h, 8);
	c = crc(c, p1, n1);
	c = crc(c, p2, n2);
	put32(h + 8, c);
	w_bytes(w, h, sizeof(h));
	w_bytes(w, p1, n1);
	w_bytes(w, p2, n2);
	w->entries++;
}

static size_t put_str(uint8_t *p, const char *s, size_t max)
{
	size_t n = strnlen(s, max);

	put16(p, n);
	memcpy(p + 2, s, n);
	return 2 + n;
}

int recorder__open(const char *path, unsigned int flags, struct rec_header *h,
		   struct recorder **out, char *why, size_t whysz)
{
	uint8_t buf[HDR_FIXED + 4 * 2 + 64 + 64 + 32 + REC_CMDLINE_MAX + 4], *p = buf;
	struct recorder *w;
	struct utsname u;
	int fd, err;

	*out = NULL;
	snprintf(why, whysz, "%s", strerror(EINVAL));
	h->version = REC_VERSION;
	h->layout = rec__layout();
	h->wall_offset_ns = wall_offset();
	if (uname(&u) == 0) {
		strlcpy_cut(h->kernel, sizeof(h->kernel), u.release);
		strlcpy_cut(h->machine, sizeof(h->machine), u.machine);
	}
	strlcpy_cut(h->tt_version, sizeof(h->tt_version), TT_VERSION);
	if (h->npids < 0 || h->npids > READY_PIDS_MAX)
		return -EINVAL;

	w = calloc(1, sizeof(*w));
	if (!w || !(w->path = strdup(path))) {
		free(w);
		snprintf(why, whysz, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	/* records hold payload bytes: never into a file that someone else can read */
	fd = safe_create(path, flags & REC_FORCE ? SAFE_FORCE : 0, why, whysz);
	if (fd < 0) {
		free(w->path);
		free(w);
		return fd;
	}
	if (fstat(fd, &w->st))
		memset(&w->st, 0, sizeof(w->st));
	w->f = fdopen(fd, "w");
	if (!w->f) {
		err = -errno;
		snprintf(why, whysz, "%s", strerror(-err));
		close(fd);
		free(w->path);
		free(w);
		return err;
	}
	setvbuf(w->f, NULL, _IOFBF, 256 << 10);

	memcpy(p, rec_magic, 8);
	put16(p + 8, REC_VERSION);
	/* header length at p + 10, once known */
	put32(p + 12, host_le() ? HF_LE : 0);
	put64(p + 16, (uint64_t)h->wall_offset_ns);
	put64(p + 24, h->t_begin_ns);
	put32(p + 32, h->capture_bytes);
	put32(p + 36, h->ringbuf_bytes);
	put16(p + 40, h->port);
	put16(p + 42, h->npids);
	for (int i = 0; i < READY_PIDS_MAX; i++)
		put32(p + 44 + 4 * i, i < h->npids ? h->pids[i] : 0);
	put32(p + 44 + 4 * READY_PIDS_MAX, h->layout);
	put32(p + 48 + 4 * READY_PIDS_MAX, h->stalls ? SF_STALLS : 0);
	put64(p + 52 + 4 * READY_PIDS_MAX, h->stall_ns);
	p += HDR_FIXED;
	p += put_str(p, h->kernel, 64);
	p += put_str(p, h->machine, 64);
	p += put_str(p, h->tt_version, 32);
	p += put_str(p, h->cmdline, REC_CMDLINE_MAX);
	put16(buf + 10, p - buf + 4);
	put32(p, crc(crc32(0, Z_NULL, 0), buf, p - buf));
	p += 4;
	w_bytes(w, buf, p - buf);
	if (w->err) {
		err = w->err;
		snprintf(why, whysz, "%s", strerror(-err));
		recorder__discard(w);
		return err;
	}
	*out = w;
	return 0;
}

void recorder__ready(struct recorder *w, const struct ready_info *ri)
{
	uint8_t sz[4];

	put32(sz, sizeof(*ri));
	w_entry(w, REC_READY, sz, sizeof(sz), ri, sizeof(*ri));
}

void recorder__record(struct recorder *w, const void *data, size_t size)
{
	const struct tt_hdr *h = data;

	/* a ring-buffer record can be reserved larger than what it holds: keep what it holds */
	if (size >= sizeof(*h) && h->size >= sizeof(*h) && h->size <= size)
		size = h->size;
	if (size > REC_RECORD_MAX)	/* the ring buffer cannot hold one; be sure anyway */
		size = REC_RECORD_MAX;
	w_entry(w, REC_RECORD, data, size, NULL, 0);
	w->records++;
}

void recorder__tick(struct recorder *w, uint64_t now_ns, const uint64_t kstats[TT_STAT_NR],
		    const struct stall_hook_stats *hooks, bool final)
{
	uint8_t buf[TICK_FIXED + 8 * (TT_STAT_NR + REC_TICK_HOOKS)] = {};
	uint8_t *x = buf + TICK_FIXED + 8 * TT_STAT_NR;

	put64(buf, now_ns);
	buf[8] = final;
	buf[9] = TT_STAT_NR + REC_TICK_HOOKS;
	for (int i = 0; i < TT_STAT_NR; i++)
		put64(buf + TICK_FIXED + 8 * i, kstats[i]);
	put64(x, hooks->lazy);
	put64(x + 8, hooks->attaches);
	put64(x + 16, hooks->failed);
	put64(x + 24, hooks->armed_ns);
	w_entry(w, REC_TICK, buf, sizeof(buf), NULL, 0);
}

int recorder__flush(struct recorder *w)
{
	if (!w->err && fflush(w->f))
		w->err = -errno;
	return w->err;
}

int recorder__close(struct recorder *w)
{
	uint8_t buf[END_LEN];
	int err;

	if (!w)
		return 0;
	put64(buf, w->entries);
	put64(buf + 8, w->records);
	w_entry(w, REC_END, buf, sizeof(buf), NULL, 0);
	recorder__flush(w);
	if (!w->err && fsync(fileno(w->f)) && errno != EINVAL)
		w->err = -errno;
	if (fclose(w->f) && !w->err)
		w->err = -errno;
	err = w->err;
	free(w->path);
	free(w);
	return err;
}

void recorder__discard(struct recorder *w)
{
	struct stat st;

	if (!w)
		return;
	/* only the file this run created, if the path still names it: never a device or a pipe
	 * given as FILE, nor what another user put there meanwhile */
	if (S_ISREG(w->st.st_mode) && lstat(w->path, &st) == 0 && st.st_dev == w->st.st_dev &&
	    st.st_ino == w->st.st_ino)
		unlink(w->path);
	fclose(w->f);
	free(w->path);
	free(w);
}

/* ------------------------------------------------------------------ reader */

struct rec_reader {
	FILE *f;		/* or a buffer: */
	const uint8_t *mem;
	size_t mem_len, mem_pos;
	unsigned int flags;
	uint64_t off;		/* bytes consumed */
	struct rec_header h;
	uint8_t *buf;
	size_t cap;
	bool ready_seen, ended;
	uint64_t entries, records;
	char err[192];
};

static size_t r_read(struct rec_reader *r, void *buf, size_t n)
{
	size_t got;

	if (r->f) {
		got = fread(buf, 1, n, r->f);
	} else {
		got = MIN(n, r->mem_len - r->mem_pos);
		memcpy(buf, r->mem + r->mem_pos, got);
		r->mem_pos += got;
	}
	r->off += got;
	return got;
}

static int fail(struct rec_reader *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int read_failed(struct rec_reader *r)
{
	if (r->f && ferror(r->f))
		return fail(r, "read failed at byte %llu: %s", (unsigned long long)r->off,
			    strerror(errno ? errno : EIO));
	return fail(r, "truncated recording at byte %llu", (unsigned long long)r->off);
}

static int grow(struct rec_reader *r, size_t n)
{
	if (VEC_RESERVE(r->buf, &r->cap, n, SIZE_MAX))
		return fail(r, "out of memory");
	return 0;
}

/* A length-prefixed string at *p of at most max bytes, within end. */
static int get_str(struct rec_reader *r, const uint8_t **p, const uint8_t *end, char *dst,
		   size_t max, const char *what)
{
	size_t n;

	if (end - *p < 2 || (n = get16(*p)) > max || (size_t)(end - *p - 2) < n)
		return fail(r, "corrupt recording header: bad %s", what);
	memcpy(dst, *p + 2, n);
	dst[n] = '\0';
	if (strlen(dst) != n)
		return fail(r, "corrupt recording header: bad %s", what);
	*p += 2 + n;
	return 0;
}

static int read_header(struct rec_reader *r)
{
	uint8_t fixed[12];
	const uint8_t *p, *end;
	struct rec_header *h = &r->h;
	size_t got, hlen;
	uint32_t flags;
	int err;

	got = r_read(r, fixed, 8);
	if (got < 8 && got > 0 && !memcmp(fixed, rec_magic, got))
		return read_failed(r);
	if (got < 8 || memcmp(fixed, rec_magic, 8))
		return fail(r, "not a tokentrace recording");
	if (r_read(r, fixed + 8, 4) < 4)
		return read_failed(r);
	h->version = get16(fixed + 8);
	if (h->version != REC_VERSION)
		return fail(r, "recording format version %u; this tokentrace reads version %u",
			    h->version, REC_VERSION);
	hlen = get16(fixed + 10);
	if (hlen < HDR_FIXED + 4 * 2 + 4 || hlen > HDR_MAX)
		return fail(r, "corrupt recording header: length %zu", hlen);
	err = grow(r, hlen);
	if (err)
		return err;
	memcpy(r->buf, fixed, 12);
	if (r_read(r, r->buf + 12, hlen - 12) < hlen - 12)
		return read_failed(r);
	if (!(r->flags & REC_NO_CRC) &&
	    crc(crc32(0, Z_NULL, 0), r->buf, hlen - 4) != get32(r->buf + hlen - 4))
		return fail(r, "corrupt recording header: checksum mismatch");

	p = r->buf;
	flags = get32(p + 12);
	if (!!(flags & HF_LE) != host_le())
		return fail(r, "recorded on a machine of another byte order");
	h->wall_offset_ns = (int64_t)get64(p + 16);
	h->t_begin_ns = get64(p + 24);
	h->capture_bytes = get32(p + 32);
	h->ringbuf_bytes = get32(p + 36);
	h->port = get16(p + 40);
	h->npids = get16(p + 42);
	if (h->npids > READY_PIDS_MAX)
		return fail(r, "corrupt recording header: %d PIDs", h->npids);
	for (int i = 0; i < READY_PIDS_MAX; i++)
		h->pids[i] = get32(p + 44 + 4 * i);
	h->layout = get32(p + 44 + 4 * READY_PIDS_MAX);
	h->stalls = get32(p + 48 + 4 * READY_PIDS_MAX) & SF_STALLS;
	h->stall_ns = get64(p + 52 + 4 * READY_PIDS_MAX);
	p += HDR_FIXED;
	end = r->buf + hlen - 4;
	if ((err = get_str(r, &p, end, h->kernel, 64, "kernel release")) ||
	    (err = get_str(r, &p, end, h->machine, 64, "machine")) ||
	    (err = get_str(r, &p, end, h->tt_version, 32, "version")) ||
	    (err = get_str(r, &p, end, h->cmdline, REC_CMDLINE_MAX, "command line")))
		return err;
	/* bytes left before the CRC: header fields of a later minor revision */
	if (h->layout != rec__layout() && !(r->flags & REC_ANY_LAYOUT))
		return fail(r, "recorded by tokentrace %s with another event layout; replay it "
			    "with that version", h->tt_version);
	return 0;
}

static int open_common(struct rec_reader *r, struct rec_reader **out, char *err, size_t errsz)
{
	int e = read_header(r);

	if (e) {
		snprintf(err, errsz, "%s", r->err);
		rec_reader__free(r);
		return e;
	}
	*out = r;
	return 0;
}

int rec_reader__open(const char *path, struct rec_reader **out, char *err, size_t errsz)
{
	struct rec_reader *r;
	int e;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	r->f = strcmp(path, "-") ? fopen(path, "re") : stdin;
	if (!r->f) {
		e = -errno;
		snprintf(err, errsz, "%s", strerror(-e));
		free(r);
		return e;
	}
	return open_common(r, out, err, errsz);
}

int rec_reader__open_mem(const void *buf, size_t len, unsigned int flags,
			 struct rec_reader **out, char *err, size_t errsz)
{
	struct rec_reader *r;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	r->mem = buf;
	r->mem_len = len;
	r->flags = flags;
	return open_common(r, out, err, errsz);
}

const struct rec_header *rec_reader__header(const struct rec_reader *r)
{
	return &r->h;
}

const char *rec_reader__error(const struct rec_reader *r)
{
	return r->err;
}

/* What a READY entry holds may feed loops and indexes: bring it within bounds. */
static void sanitize_ready(struct ready_info *ri)
{
	if (ri->npids < 0 || ri->npids > READY_PIDS_MAX)
		ri->npids = ri->npids < 0 ? 0 : READY_PIDS_MAX;
	for (int i = 0; i < READY_PIDS_MAX; i++)
		ri->comms[i][sizeof(ri->comms[i]) - 1] = '\0';
	if (ri->probes < 0)
		ri->probes = 0;
	if (ri->nmarkers < 0 || ri->nmarkers > TT_MARKERS_MAX)
		ri->nmarkers = ri->nmarkers < 0 ? 0 : TT_MARKERS_MAX;
	ri->replay = true;
}

static int check_len(struct rec_reader *r, uint64_t at, uint8_t type, uint32_t len)
{
	bool ok;

	switch (type) {
	case REC_READY:
		ok = len == READY_LEN;
		break;
	case REC_RECORD:
		ok = len <= REC_RECORD_MAX;
		break;
	case REC_TICK:
		ok = len >= TICK_FIXED && len <= TICK_FIXED + 8 * REC_KSTATS_MAX;
		break;
	case REC_END:
		ok = len == END_LEN;
		break;
	default:
		ok = len <= REC_RECORD_MAX;	/* a skippable entry of a later revision */
		break;
	}
	if (!ok)
		return fail(r, "corrupt recording at byte %llu: entry of type %u with length %u",
			    (unsigned long long)at, type, len);
	return 0;
}

/* After the end mark, the file must end too. */
static int check_eof(struct rec_reader *r)
{
	uint8_t b;

	if (r_read(r, &b, 1))
		return fail(r, "corrupt recording at byte %llu: data after the end mark",
			    (unsigned long long)(r->off - 1));
	return 0;
}

/* The next entry of a type this version knows, its bytes in r->buf: 0, or an error. */
static int read_entry(struct rec_reader *r, uint64_t *at, uint8_t *type, uint32_t *len)
{
	uint8_t h[ENT_HDR], flags;
	size_t got;
	int err;

	for (;;) {
		*at = r->off;
		got = r_read(r, h, ENT_HDR);
		if (got == 0 && !(r->f && ferror(r->f)))
			return fail(r, "truncated recording at byte %llu: no end mark (the "
				    "recording was cut short)", (unsigned long long)r->off);
		if (got < ENT_HDR)
			return read_failed(r);
		*type = h[0];
		flags = h[1];
		*len = get32(h + 4);
		if (get16(h + 2))
			return fail(r, "corrupt recording at byte %llu: bad entry header",
				    (unsigned long long)*at);
		if ((*type < REC_READY || *type > REC_END) && !(flags & EF_SKIPPABLE))
			return fail(r, "corrupt recording at byte %llu: unknown entry type %u",
				    (unsigned long long)*at, *type);
		err = check_len(r, *at, *type, *len);
		if (err)
			return err;
		err = grow(r, *len ? *len : 1);
		if (err)
			return err;
		if (r_read(r, r->buf, *len) < *len)
			return read_failed(r);
		if (!(r->flags & REC_NO_CRC)) {
			uint32_t c = crc(crc(crc32(0, Z_NULL, 0), h, 8), r->buf, *len);

			if (c != get32(h + 8))
				return fail(r, "corrupt recording at byte %llu: checksum mismatch",
					    (unsigned long long)*at);
		}
		if (*type >= REC_READY && *type <= REC_END)
			return 0;
		/* skippable, unknown to this version */
	}
}

static int decode_tick(struct rec_reader *r, struct rec_entry *e, uint64_t at, uint32_t len)
{
	unsigned int n = r->buf[9];

	if (r->buf[8] > 1 || len != TICK_FIXED + 8 * n || get16(r->buf + 10))
		return fail(r, "corrupt recording at byte %llu: bad tick entry",
			    (unsigned long long)at);
	e->now_ns = get64(r->buf);
	e->final = r->buf[8];
	for (unsigned int i = 0; i < n && i < TT_STAT_NR; i++)
		e->kstats[i] = get64(r->buf + TICK_FIXED + 8 * i);
	memset(&e->hooks, 0, sizeof(e->hooks));
	if (n >= TT_STAT_NR + REC_TICK_HOOKS) {
		const uint8_t *x = r->buf + TICK_FIXED + 8 * TT_STAT_NR;

		e->hooks.lazy = get64(x) != 0;
		e->hooks.attaches = get64(x + 8);
		e->hooks.failed = get64(x + 16);
		e->hooks.armed_ns = get64(x + 24);
	}
	return 0;
}

int rec_reader__next(struct rec_reader *r, struct rec_entry *e)
{
	uint64_t at = 0;
	uint32_t len = 0;
	uint8_t type = 0;
	int err;

	if (r->err[0])
		return -EINVAL;
	if (r->ended)
		return 0;
	err = read_entry(r, &at, &type, &len);
	if (err)
		return err;
	if (type != REC_READY && !r->ready_seen)
		return fail(r, "corrupt recording at byte %llu: entry before the ready entry",
			    (unsigned long long)at);
	memset(e, 0, sizeof(*e));
	e->type = type;
	e->offset = at;
	switch (type) {
	case REC_READY:
		if (r->ready_seen)
			return fail(r, "corrupt recording at byte %llu: a second ready entry",
				    (unsigned long long)at);
		if (get32(r->buf) != sizeof(e->ready))
			return fail(r, "corrupt recording at byte %llu: ready entry of %u bytes",
				    (unsigned long long)at, get32(r->buf));
		memcpy(&e->ready, r->buf + 4, sizeof(e->ready));
		sanitize_ready(&e->ready);
		r->ready_seen = true;
		break;
	case REC_RECORD:
		e->data = r->buf;
		e->size = len;
		r->records++;
		break;
	case REC_TICK:
		err = decode_tick(r, e, at, len);
		if (err)
			return err;
		break;
	case REC_END:
		if (get64(r->buf) != r->entries || get64(r->buf + 8) != r->records)
			return fail(r, "corrupt recording at byte %llu: the end mark counts %llu "
				    "entries, the file holds %llu", (unsigned long long)at,
				    (unsigned long long)get64(r->buf),
				    (unsigned long long)r->entries);
		r->ended = true;
		err = check_eof(r);
		return err ? err : 0;
	}
	r->entries++;
	return 1;
}

void rec_reader__free(struct rec_reader *r)
{
	if (!r)
		return;
	if (r->f && r->f != stdin)
		fclose(r->f);
	free(r->buf);
	free(r);
}
