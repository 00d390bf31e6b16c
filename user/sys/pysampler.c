// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "pysampler.h"

static int open_clock(int cpu, unsigned int hz)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(a),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		/* a period in ns of CPU time: exactly hz samples a second of running, no drift */
		.sample_period = 1000000000ull / hz,
	};
	int fd = syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int pysampler__attach(struct bpf_program *prog, unsigned int hz, struct bpf_link **links,
		      int max, char *why, size_t whysz)
{
	int ncpu = libbpf_num_possible_cpus(), n = 0, err = 0;

	if (!hz || hz > PYSAMPLER_HZ_MAX) {
		snprintf(why, whysz, "Python sampling rate %u Hz is out of range (1-%d)", hz,
			 PYSAMPLER_HZ_MAX);
		return -EINVAL;
	}
	if (ncpu < 0) {
		snprintf(why, whysz, "counting CPUs failed: %s", strerror(-ncpu));
		return ncpu;
	}
	for (int cpu = 0; cpu < ncpu; cpu++) {
		struct bpf_link *link;
		int fd = open_clock(cpu, hz);

		if (fd == -ENODEV)
			continue;	/* a possible CPU that is offline */
		if (fd < 0) {
			err = fd;
			snprintf(why, whysz, "opening a cpu-clock perf event on CPU %d failed: "
				 "%s%s", cpu, strerror(-err), err == -EACCES || err == -EPERM ?
				 " (needs CAP_PERFMON, or kernel.perf_event_paranoid <= 0)" : "");
			goto fail;
		}
		if (n == max) {
			close(fd);
			err = -E2BIG;
			snprintf(why, whysz, "more CPUs than link slots (%d)", max);
			goto fail;
		}
		link = bpf_program__attach_perf_event(prog, fd);
		if (!link) {
			err = -errno;
			close(fd);
			snprintf(why, whysz, "attaching %s to CPU %d's cpu-clock failed: %s",
				 bpf_program__name(prog), cpu, strerror(-err));
			goto fail;
		}
		links[n++] = link;
	}
	if (!n) {
		snprintf(why, whysz, "no online CPU to sample on");
		return -ENODEV;
	}
	return n;
fail:
	while (n)
		bpf_link__destroy(links[--n]);
	return err;
}

int pysampler__add_proc(struct bpf_map *py_procs, volatile uint32_t *any, uint32_t pid,
			const struct tt_py_proc *p)
{
	int err = bpf_map__update_elem(py_procs, &pid, sizeof(pid), p, sizeof(*p), BPF_ANY);

	if (!err)
		*any = 1;
	return err;
}

int pysampler__del_proc(struct bpf_map *py_procs, uint32_t pid)
{
	int err = bpf_map__delete_elem(py_procs, &pid, sizeof(pid), 0);

	return err == -ENOENT ? 0 : err;
}

int pysampler__read_stats(struct bpf_map *py_stats, uint64_t out[TT_PY_STAT_NR])
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *v;

	if (ncpu < 0)
		return ncpu;
	v = calloc(ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < TT_PY_STAT_NR; i++) {
		int err = bpf_map__lookup_elem(py_stats, &i, sizeof(i), v, ncpu * sizeof(*v), 0);

		if (err) {
			free(v);
			return err;
		}
		out[i] = 0;
		for (int c = 0; c < ncpu; c++)
			out[i] += v[c];
	}
	free(v);
	return 0;
}
