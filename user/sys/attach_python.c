// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CPython's stacks (bpf/python.bpf.h): the sampler, a cpu-clock event per CPU, and the
 * processes whose frames are named (pysampler.h does the perf events and the maps).
 */
#include <stdio.h>
#include <bpf/libbpf.h>
#include "loader_int.h"
#include "pysampler.h"

/* the sampler, and its per-thread cache only then */
void python_attach__configure(struct tokentrace_bpf *sk, const struct loader_opts *o)
{
	bpf_program__set_autoload(sk->progs.py_sample, o->stalls && o->python_hz);
	if (!o->stalls || !o->python_hz)
		bpf_map__set_max_entries(sk->maps.py_tstates, 1);
}

bool python_attach__owns(const struct tokentrace_bpf *sk, const struct bpf_program *p)
{
	return p == sk->progs.py_sample;
}

/*
 * Without the sampler (no perf events for us) stalls still name the Python frame a thread
 * blocked in, only not what ran: said, not fatal.
 */
void python_attach(struct loader *l, unsigned int hz)
{
	int ncpu = libbpf_num_possible_cpus(), n;
	char why[256];

	if (ncpu <= 0 || linkset__room(&l->links, ncpu))
		return;
	n = pysampler__attach(l->skel->progs.py_sample, hz, &l->links.v[l->links.n], ncpu, why,
			      sizeof(why));
	if (n < 0) {
		fprintf(stderr, "tokentrace: Python sampling is off: %s\n", why);
		return;
	}
	l->links.n += n;
	l->choice.py_cpus = n;
}

int loader__py_add(struct loader *l, uint32_t pid, const struct tt_py_proc *p)
{
	return pysampler__add_proc(l->skel->maps.py_procs, &l->skel->bss->py_any, pid, p);
}

void loader__py_del(struct loader *l, uint32_t pid)
{
	pysampler__del_proc(l->skel->maps.py_procs, pid);
}

int loader__py_stats(const struct loader *l, uint64_t *out)
{
	return pysampler__read_stats(l->skel->maps.py_stats, out);
}
