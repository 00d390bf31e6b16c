/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The kernel side of Python sampling: one software cpu-clock perf event per CPU at a low
 * rate, each running the py_sample program (bpf/python.bpf.h), and the py_procs map that
 * says which processes it names frames for. Only while tracing: the links the caller gets
 * close the events with them.
 */
#ifndef TT_PYSAMPLER_H
#define TT_PYSAMPLER_H

#include <stddef.h>
#include <stdint.h>
#include "pystack.h"

struct bpf_program;
struct bpf_link;
struct bpf_map;

#define PYSAMPLER_HZ_DEFAULT	99	/* off the kernel's 100/250 Hz ticks, like perf's default */
#define PYSAMPLER_HZ_MAX	1000

/*
 * Attach prog (a loaded SEC("perf_event") program) to a cpu-clock event on every online CPU,
 * firing hz times a second of CPU time. links[0..ret) are the caller's to bpf_link__destroy()
 * (that closes the events). Returns how many, or -errno with why set.
 */
int pysampler__attach(struct bpf_program *prog, unsigned int hz, struct bpf_link **links,
		      int max, char *why, size_t whysz);

/*
 * Name Python frames of pid from now on (py_procs map), or stop. 0 or -errno. any is the
 * kernel side's py_any in its mapped .bss: set once py_procs has an entry, it lets the
 * scheduler hook look there (bpf/python.bpf.h).
 */
int pysampler__add_proc(struct bpf_map *py_procs, volatile uint32_t *any, uint32_t pid,
			const struct tt_py_proc *p);
int pysampler__del_proc(struct bpf_map *py_procs, uint32_t pid);

/* The py_stats map summed over CPUs, enum tt_py_stat order. 0 or -errno. */
int pysampler__read_stats(struct bpf_map *py_stats, uint64_t out[TT_PY_STAT_NR]);

#endif /* TT_PYSAMPLER_H */
