// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* CPython stacks for the main loop. See python.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hmap.h"
#include "loader.h"
#include "pyinfo.h"
#include "pysym.h"
#include "python.h"
#include "util.h"

#define RETRY_EVERY_NS	200000000ull	/* an interpreter starting up: looked at again */
#define RETRY_FOR_NS	30000000000ull	/* ... for this long after it joined */
#define PROCS_MAX	4096		/* processes remembered; past it, not probed (said) */

struct pyproc {
	uint32_t pid;
	bool named;		/* its frames are named */
	uint64_t since_ns;	/* pending: when it was first found not ready; 0 not pending */
	uint64_t next_ns;
};

struct pyctl {
	struct loader *l;
	struct pysym *sym;
	bool verbose;
	bool full_said;
	struct hmap *procs;	/* pid -> struct pyproc */
	int named;
};

struct pyctl *pyctl__new(struct loader *l, bool verbose)
{
	struct pyctl *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->l = l;
	p->verbose = verbose;
	p->sym = pysym__new(0);
	p->procs = hmap__new(0);
	if (!p->sym || !p->procs) {
		pyctl__free(p);
		return NULL;
	}
	return p;
}

void pyctl__free(struct pyctl *p)
{
	void *x;

	if (!p)
		return;
	for (size_t it = 0; hmap__next(p->procs, &it, NULL, &x);)
		free(x);
	hmap__free(p->procs);
	pysym__free(p->sym);
	free(p);
}

static struct pyproc *find(struct pyctl *p, uint32_t pid)
{
	return hmap__get(p->procs, pid);
}

static struct pyproc *add(struct pyctl *p, uint32_t pid)
{
	struct pyproc *x = find(p, pid);

	if (x)
		return x;
	if (hmap__count(p->procs) == PROCS_MAX) {
		if (!p->full_said)
			fprintf(stderr, "tokentrace: %d processes probed for Python: no more are\n",
				PROCS_MAX);
		p->full_said = true;
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x || hmap__put(p->procs, pid, x)) {
		free(x);
		return NULL;
	}
	x->pid = pid;
	return x;
}

/* Probe x now; now_ns 0 is its first look. */
static void probe(struct pyctl *p, struct pyproc *x, uint64_t now_ns)
{
	struct tt_py_proc proc;
	char why[256] = "", ver[32];
	int err = pyinfo__probe(x->pid, &proc, why, sizeof(why));

	if (err == -EAGAIN) {
		if (!x->since_ns)
			x->since_ns = now_ns ? now_ns : now_mono_ns();
		x->next_ns = (now_ns ? now_ns : now_mono_ns()) + RETRY_EVERY_NS;
		return;
	}
	x->since_ns = 0;
	if (err) {
		/* not Python at all is the common case: quiet unless asked */
		if (err == -ENOTSUP || p->verbose)
			fprintf(stderr, "tokentrace: PID %u: no Python stacks: %s\n", x->pid, why);
		return;
	}
	err = loader__py_add(p->l, x->pid, &proc);
	if (!err)
		err = pysym__add_proc(p->sym, x->pid, &proc);
	if (err) {
		fprintf(stderr, "tokentrace: PID %u: no Python stacks: %s\n", x->pid,
			strerror(-err));
		loader__py_del(p->l, x->pid);
		return;
	}
	if (!x->named)
		p->named++;
	x->named = true;
	pyinfo__version_str(proc.version, ver, sizeof(ver));
	fprintf(stderr, "tokentrace: PID %u runs CPython %s: stalls name its Python functions\n",
		x->pid, ver);
}

void pyctl__probe(struct pyctl *p, uint32_t pid)
{
	struct pyproc *x;

	if (!p || !(x = add(p, pid)))
		return;
	if (x->named) {
		/* a new program (exec): what it was is gone */
		pysym__del_proc(p->sym, pid);
		loader__py_del(p->l, pid);
		x->named = false;
		p->named--;
	}
	x->since_ns = 0;
	probe(p, x, 0);
}

void pyctl__gone(struct pyctl *p, uint32_t pid)
{
	struct pyproc *x = p ? find(p, pid) : NULL;

	if (!x)
		return;
	if (x->named) {
		pysym__del_proc(p->sym, pid);
		loader__py_del(p->l, pid);
		p->named--;
	}
	free(hmap__del(p->procs, pid));
}

void pyctl__retry(struct pyctl *p, uint64_t now_ns)
{
	struct pyproc *x;

	if (!p)
		return;
	/* probe() neither adds nor drops a process: the table holds still while walked */
	for (size_t it = 0; hmap__next(p->procs, &it, NULL, (void **)&x);) {
		if (!x->since_ns || now_ns < x->next_ns)
			continue;
		if (now_ns - x->since_ns > RETRY_FOR_NS) {
			x->since_ns = 0;
			fprintf(stderr, "tokentrace: PID %u: no Python stacks: its interpreter did "
				"not start within %llu s\n", x->pid, RETRY_FOR_NS / 1000000000ull);
			continue;
		}
		probe(p, x, now_ns);
	}
}

size_t pyctl__name(struct pyctl *p, uint32_t pid, uint64_t code, int32_t lasti, char *buf,
		   size_t sz)
{
	return p ? pysym__frame(p->sym, pid, code, lasti, buf, sz) : 0;
}

int pyctl__nprocs(const struct pyctl *p)
{
	return p ? p->named : 0;
}
