// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hmap.h"
#include "pyinfo.h"
#include "pysym.h"

#define WAYS		4		/* entries per bucket; the least used one is replaced */
#define CODE_HEAD	256		/* bytes of a code object read: every field used is below */
#define LINETABLE_MAX	(64 << 10)	/* a bigger table is a function we do not name by line */

struct code_ent {
	uint32_t pid;
	uint64_t code;			/* 0: free slot */
	/* what the object held when read: checked again at every use */
	uint64_t name_p, qual_p, file_p, table_p;
	int32_t firstlineno;
	uint64_t used;			/* use clock, for replacement */
	char name[PYSYM_NAME_MAX];
	char file[PYSYM_FILE_MAX];
	uint8_t *table;
	uint32_t table_len;
};

struct proc_ent {
	uint32_t pid;
	struct tt_py_proc p;
};

struct pysym {
	struct code_ent *ents;
	size_t nbuckets;
	uint64_t clock;
	struct hmap *procs;	/* pid -> struct proc_ent */
};

struct pysym *pysym__new(size_t max_codes)
{
	struct pysym *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (!max_codes)
		max_codes = 4096;
	s->nbuckets = (max_codes + WAYS - 1) / WAYS;
	s->ents = calloc(s->nbuckets * WAYS, sizeof(*s->ents));
	s->procs = hmap__new(0);
	if (!s->ents || !s->procs) {
		hmap__free(s->procs);
		free(s->ents);
		free(s);
		return NULL;
	}
	return s;
}

static void ent_clear(struct code_ent *e)
{
	free(e->table);
	memset(e, 0, sizeof(*e));
}

void pysym__free(struct pysym *s)
{
	void *pe;

	if (!s)
		return;
	for (size_t i = 0; i < s->nbuckets * WAYS; i++)
		free(s->ents[i].table);
	free(s->ents);
	for (size_t it = 0; hmap__next(s->procs, &it, NULL, &pe);)
		free(pe);
	hmap__free(s->procs);
	free(s);
}

static struct proc_ent *proc_of(struct pysym *s, uint32_t pid)
{
	return hmap__get(s->procs, pid);
}

int pysym__add_proc(struct pysym *s, uint32_t pid, const struct tt_py_proc *p)
{
	struct proc_ent *pe = proc_of(s, pid);
	bool same = pe && !memcmp(&pe->p, p, sizeof(*p));

	if (same)
		return 0;
	if (!pe) {
		pe = malloc(sizeof(*pe));
		if (!pe || hmap__put(s->procs, pid, pe)) {
			free(pe);
			return -ENOMEM;
		}
	}
	pe->pid = pid;
	pe->p = *p;
	/* another image under the same pid (exec) has other code objects */
	for (size_t i = 0; i < s->nbuckets * WAYS; i++)
		if (s->ents[i].code && s->ents[i].pid == pid)
			ent_clear(&s->ents[i]);
	return 0;
}

void pysym__del_proc(struct pysym *s, uint32_t pid)
{
	for (size_t i = 0; i < s->nbuckets * WAYS; i++)
		if (s->ents[i].code && s->ents[i].pid == pid)
			ent_clear(&s->ents[i]);
	free(hmap__del(s->procs, pid));
}

static uint64_t get_u64(const uint8_t *head, uint16_t off)
{
	uint64_t v;

	memcpy(&v, head + off, sizeof(v));
	return v;
}

static void put_utf8(char *out, size_t sz, size_t *n, uint32_t c)
{
	char b[4];
	size_t k;

	if (c < 0x80) {
		b[0] = c;
		k = 1;
	} else if (c < 0x800) {
		b[0] = 0xc0 | c >> 6;
		b[1] = 0x80 | (c & 0x3f);
		k = 2;
	} else if (c < 0x10000) {
		b[0] = 0xe0 | c >> 12;
		b[1] = 0x80 | ((c >> 6) & 0x3f);
		b[2] = 0x80 | (c & 0x3f);
		k = 3;
	} else {
		b[0] = 0xf0 | c >> 18;
		b[1] = 0x80 | ((c >> 12) & 0x3f);
		b[2] = 0x80 | ((c >> 6) & 0x3f);
		b[3] = 0x80 | (c & 0x3f);
		k = 4;
	}
	if (*n + k >= sz)
		return;
	memcpy(out + *n, b, k);
	*n += k;
}

/*
 * A str of the process as UTF-8, cut to fit sz. Compact strings only (every name and file
 * name of a code object is one): ASCII data right after PyASCIIObject, other kinds (1, 2 or 4
 * bytes a character) after PyCompactUnicodeObject. 0 or -errno.
 */
static int read_str(uint32_t pid, const struct tt_py_proc *p, uint64_t addr, char *out,
		    size_t sz)
{
	const struct tt_py_offsets *o = &p->off;
	uint8_t head[128], data[4 * PYSYM_FILE_MAX];
	uint32_t state, kind;
	int64_t len;
	size_t want, n = 0;

	out[0] = '\0';
	if (o->str_compact_data > sizeof(head) ||
	    pyinfo__read(pid, addr, head, o->str_compact_data))
		return -EFAULT;
	if (p->str_type && get_u64(head, o->ob_type) != p->str_type)
		return -EINVAL;
	memcpy(&len, head + o->str_length, sizeof(len));
	memcpy(&state, head + o->str_state, sizeof(state));
	kind = (state >> 2) & 7;
	/* compact (bit 5), ready (bit 7); kind 1, 2 or 4 */
	if (len < 0 || !(state & (1 << 5)) || !(state & (1 << 7)) || (kind != 1 && kind != 2 &&
								    kind != 4))
		return -EINVAL;
	if ((size_t)len > sz - 1)
		len = sz - 1;
	want = len * kind;
	if (want > sizeof(data))
		want = sizeof(data) - sizeof(data) % kind;
	if (want && pyinfo__read(pid, addr + (state & (1 << 6) ? o->str_ascii_data :
					      o->str_compact_data), data, want))
		return -EFAULT;
	for (size_t i = 0; i < want / kind; i++) {
		uint32_t c;

		if (kind == 1) {
			c = data[i];
		} else if (kind == 2) {
			uint16_t c2;

			memcpy(&c2, data + 2 * i, 2);
			c = c2;
		} else {
			memcpy(&c, data + 4 * i, 4);
		}
		if (c > 0x10ffff || c < 0x20)
			c = '?';	/* nothing a terminal or a JSON string could choke on */
		put_utf8(out, sz, &n, c);
	}
	out[n] = '\0';
	return 0;
}

static int read_table(uint32_t pid, const struct tt_py_proc *p, uint64_t addr, uint8_t **out,
		      uint32_t *len)
{
	const struct tt_py_offsets *o = &p->off;
	uint8_t head[64];
	int64_t size;
	uint8_t *t;

	*out = NULL;
	*len = 0;
	if (o->bytes_data > sizeof(head) || pyinfo__read(pid, addr, head, o->bytes_data))
		return -EFAULT;
	if (p->bytes_type && get_u64(head, o->ob_type) != p->bytes_type)
		return -EINVAL;
	memcpy(&size, head + o->bytes_size, sizeof(size));
	if (size < 0 || size > LINETABLE_MAX)
		return -E2BIG;
	if (!size)
		return 0;
	t = malloc(size);
	if (!t)
		return -ENOMEM;
	if (pyinfo__read(pid, addr + o->bytes_data, t, size)) {
		free(t);
		return -EFAULT;
	}
	*out = t;
	*len = size;
	return 0;
}

static size_t bucket_of(const struct pysym *s, uint32_t pid, uint64_t code)
{
	uint64_t h = (code >> 4) * 0x9e3779b97f4a7c15ull ^ pid;

	return (h >> 17) % s->nbuckets;
}

/* The cached entry of code if it still describes the object, else a fresh read; NULL if bad. */
static struct code_ent *code_get(struct pysym *s, const struct proc_ent *pe, uint64_t code)
{
	const struct tt_py_offsets *o = &pe->p.off;
	struct code_ent *b = &s->ents[bucket_of(s, pe->pid, code) * WAYS], *e = NULL;
	uint64_t name_p, qual_p, file_p, table_p;
	uint8_t head[CODE_HEAD];
	int32_t first;

	if (o->co_code_adaptive > sizeof(head) || pyinfo__read(pe->pid, code, head,
							       o->co_code_adaptive))
		return NULL;
	if (pe->p.code_type && get_u64(head, o->ob_type) != pe->p.code_type)
		return NULL;
	name_p = get_u64(head, o->co_name);
	qual_p = get_u64(head, o->co_qualname);
	file_p = get_u64(head, o->co_filename);
	table_p = get_u64(head, o->co_linetable);
	memcpy(&first, head + o->co_firstlineno, sizeof(first));
	for (int i = 0; i < WAYS; i++) {
		struct code_ent *c = &b[i];

		if (c->code == code && c->pid == pe->pid) {
			if (c->name_p == name_p && c->qual_p == qual_p && c->file_p == file_p &&
			    c->table_p == table_p && c->firstlineno == first) {
				c->used = ++s->clock;
				return c;
			}
			e = c;	/* another object at the same address now */
			break;
		}
	}
	if (!e) {
		e = &b[0];
		for (int i = 0; i < WAYS && e->code; i++)
			if (!b[i].code || b[i].used < e->used)
				e = &b[i];
	}
	ent_clear(e);
	if ((read_str(pe->pid, &pe->p, qual_p, e->name, sizeof(e->name)) || !e->name[0]) &&
	    read_str(pe->pid, &pe->p, name_p, e->name, sizeof(e->name)))
		return NULL;
	if (read_str(pe->pid, &pe->p, file_p, e->file, sizeof(e->file)))
		snprintf(e->file, sizeof(e->file), "?");
	/* no table: the name alone is still worth having */
	read_table(pe->pid, &pe->p, table_p, &e->table, &e->table_len);
	e->pid = pe->pid;
	e->code = code;
	e->name_p = name_p;
	e->qual_p = qual_p;
	e->file_p = file_p;
	e->table_p = table_p;
	e->firstlineno = first;
	e->used = ++s->clock;
	return e;
}

int pysym__lookup(struct pysym *s, uint32_t pid, uint64_t code, int32_t lasti, struct py_sym *out)
{
	struct proc_ent *pe = proc_of(s, pid);
	struct code_ent *e;

	if (!pe)
		return -ESRCH;
	if (!code)
		return -EINVAL;
	e = code_get(s, pe, code);
	if (!e)
		return -EFAULT;
	snprintf(out->name, sizeof(out->name), "%s", e->name);
	snprintf(out->file, sizeof(out->file), "%s", e->file);
	out->firstlineno = e->firstlineno;
	out->line = e->table ? pysym__addr2line(e->table, e->table_len, e->firstlineno, lasti) :
			       -1;
	return 0;
}

const char *pysym__short_file(const char *file)
{
	static const char *const roots[] = { "/site-packages/", "/dist-packages/", "/lib/python3" };
	const char *b;

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		const char *r = strstr(file, roots[i]);

		if (!r)
			continue;
		if (i < 2)
			return r + strlen(roots[i]);
		/* /usr/lib/python3.11/asyncio/events.py -> asyncio/events.py */
		r = strchr(r + 1 + strlen("lib/python3"), '/');
		if (r && r[1])
			return r + 1;
	}
	b = strrchr(file, '/');
	return b && b[1] ? b + 1 : file;
}

size_t pysym__frame(struct pysym *s, uint32_t pid, uint64_t code, int32_t lasti, char *out,
		    size_t sz)
{
	struct py_sym sym;
	int n;

	if (!sz)
		return 0;
	if (pysym__lookup(s, pid, code, lasti, &sym))
		n = snprintf(out, sz, "?");
	else if (sym.line < 0)
		n = snprintf(out, sz, "%s (%s)", sym.name, pysym__short_file(sym.file));
	else
		n = snprintf(out, sz, "%s (%s:%d)", sym.name, pysym__short_file(sym.file),
			     sym.line);
	return n < 0 ? 0 : (size_t)n >= sz ? sz - 1 : (size_t)n;
}

size_t pysym__stack(struct pysym *s, uint32_t pid, const struct tt_py_frame *frames, int n,
		    char *out, size_t sz)
{
	size_t len = 0;

	if (!sz)
		return 0;
	out[0] = '\0';
	for (int i = 0; i < n && len + 1 < sz; i++) {
		if (i) {
			int k = snprintf(out + len, sz - len, " <- ");

			len += k < 0 ? 0 : (size_t)k >= sz - len ? sz - len - 1 : (size_t)k;
		}
		len += pysym__frame(s, pid, frames[i].code, frames[i].lasti, out + len, sz - len);
	}
	return len;
}

/* ------------------------------------------------------------------ 3.11 location table */

/* Entry codes (Include/cpython/code.h, _PyCodeLocationInfoKind) */
#define LOC_ONE_LINE0		10
#define LOC_ONE_LINE1		11
#define LOC_ONE_LINE2		12
#define LOC_NO_COLUMNS		13
#define LOC_LONG		14
#define LOC_NONE		15

/* 6-bit chunks, little end first, bit 6 set on all but the last; bounded by the table */
static uint32_t scan_varint(const uint8_t *p, const uint8_t *end)
{
	uint32_t val, shift = 0;
	uint8_t b;

	if (p >= end)
		return 0;
	b = *p++;
	val = b & 63;
	while ((b & 64) && p < end && shift < 24) {
		b = *p++;
		shift += 6;
		val |= (uint32_t)(b & 63) << shift;
	}
	return val;
}

static int scan_svarint(const uint8_t *p, const uint8_t *end)
{
	uint32_t u = scan_varint(p, end);

	return u & 1 ? -(int)(u >> 1) : (int)(u >> 1);
}

int pysym__addr2line(const uint8_t *tab, size_t len, int firstlineno, int32_t lasti)
{
	const uint8_t *p = tab, *end = tab + len;
	int64_t addr = 0, want = (int64_t)lasti * 2;	/* the table counts bytes */
	int line = firstlineno;

	if (lasti < 0)
		return firstlineno;
	/* every entry starts with its top bit set: code in bits 3-6, units - 1 in bits 0-2 */
	while (p < end) {
		uint8_t b = *p;
		int code = (b >> 3) & 15, delta = 0;

		if (!(b & 0x80))
			return -1;	/* not an entry's start: a table we do not understand */
		if (code == LOC_NO_COLUMNS || code == LOC_LONG)
			delta = scan_svarint(p + 1, end);
		else if (code == LOC_ONE_LINE1)
			delta = 1;
		else if (code == LOC_ONE_LINE2)
			delta = 2;
		line += delta;
		addr += ((b & 7) + 1) * 2;
		if (want < addr)
			return code == LOC_NONE ? -1 : line;
		do
			p++;
		while (p < end && !(*p & 0x80));
	}
	return -1;
}
