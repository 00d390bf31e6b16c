// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The BPF side's lifecycle (loader.h): the machine checked (features.c), the skeleton loaded
 * by the plan (plan.c), each family of probes attached (attach_*.c, stall_hooks.c), and what
 * the main loop asks of the loaded side: targets, ignored connections, counters.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "aggregate.h"
#include "loader_int.h"
#include "util.h"
#include "vec.h"

static bool verbose;

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list args)
{
	/* failures are explained by our own one-liners; libbpf's log only with -v */
	if (!verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

int linkset__room(struct linkset *s, int n)
{
	int err = VEC_RESERVE(s->v, &s->cap, s->n + n, LOADER_LINKS_MAX);

	if (err == -E2BIG)
		fprintf(stderr, "tokentrace: too many probes (%d)\n", LOADER_LINKS_MAX);
	return err;
}

int linkset__keep(struct linkset *s, struct bpf_link *link)
{
	int err = linkset__room(s, 1);

	if (err) {
		bpf_link__destroy(link);
		return err;
	}
	s->v[s->n++] = link;
	return 0;
}

void linkset__clear(struct linkset *s)
{
	for (int i = 0; i < s->n; i++)
		bpf_link__destroy(s->v[i]);
	s->n = 0;
}

/* The families of probes, after the plan: each says why it fails. */
static int attach_families(struct loader *l, const struct loader_opts *o)
{
	int err;

	if ((err = stall_hooks__attach(l, o, &l->sh)) || (err = markers_attach(l, o)))
		return err;
	if (o->tls && !o->aggregate) {
		if ((err = tls_attach__new(l, &l->tls)))
			return err;
		for (int i = 0; i < o->npids; i++)
			tls_attach__process(l->tls, o->pids[i]);
	}
	if (o->stalls && o->python_hz)
		python_attach(l, o->python_hz);
	return 0;
}

int loader__open(const struct loader_opts *o, struct loader **out)
{
	struct loader *l;
	int err;

	verbose = o->verbose;
	libbpf_set_print(print_libbpf);
	if ((err = features__check_access()))
		return err;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->verbose = o->verbose;
	pthread_mutex_init(&l->attach_mu, NULL);
	if ((err = features__probe(&l->ft)))
		goto fail;
	l->choice.loop = l->ft.loop;
	if ((err = plan__load(l, o)) || (err = attach_families(l, o)))
		goto fail;
	*out = l;
	return 0;
fail:
	loader__close(l);
	return err ? err : -EINVAL;
}

void loader__close(struct loader *l)
{
	if (!l)
		return;
	/* their threads first: they attach and detach with the skeleton's programs */
	stall_hooks__free(l->sh);
	tls_attach__free(l->tls);
	linkset__clear(&l->links);
	free(l->links.v);
	tokentrace_bpf__destroy(l->skel);
	pthread_mutex_destroy(&l->attach_mu);
	free(l);
}

const struct loader_choice *loader__choice(struct loader *l)
{
	l->choice.tls_probes = tls_attach__nlinks(l->tls);
	return &l->choice;
}

int loader__ringbuf_fd(const struct loader *l)
{
	return bpf_map__fd(l->skel->maps.events);
}

int loader__nr_probes(struct loader *l)
{
	return l->nprobes + tls_attach__nlinks(l->tls);
}

int loader__attach_process(struct loader *l, uint32_t pid)
{
	return l->tls ? tls_attach__process(l->tls, pid) : 0;
}

void loader__forget_process(struct loader *l, uint32_t pid)
{
	tls_attach__forget(l->tls, pid);
}

int loader__stall_hooks(struct loader *l, bool on)
{
	return stall_hooks__want(l->sh, on);
}

void loader__stall_hook_stats(struct loader *l, struct stall_hook_stats *out)
{
	stall_hooks__stats(l->sh, out);
}

/*
 * The bits live in the kernel side's mapped .bss, which the kernel side changes too (a fork,
 * an exit): atomic, so neither loses the other's update of a neighbour in the same word.
 */
int loader__add_target(struct loader *l, uint32_t pid, uint8_t flags)
{
	uint64_t old;

	if (pid >= TT_TGT_PID_LIMIT)
		return -ERANGE;
	old = __atomic_fetch_or(&l->skel->bss->target_bits[TT_TGT_WORD(pid)],
				(uint64_t)flags << TT_TGT_SHIFT(pid), __ATOMIC_SEQ_CST);
	return (old >> TT_TGT_SHIFT(pid)) & 3 ? -EEXIST : 0;
}

int loader__ignore_conn(struct loader *l, uint64_t conn_id)
{
	__u8 one = 1;

	/* the kernel deletes it when the connection closes */
	int err = bpf_map__update_elem(l->skel->maps.ignored, &conn_id, sizeof(conn_id), &one,
				       sizeof(one), BPF_ANY);

	/* sends look at the map again from now on (a few sent before this are kept, as before) */
	if (!err)
		__atomic_fetch_add(&l->skel->bss->ignored_gen, 1, __ATOMIC_SEQ_CST);
	return err;
}

int loader__agg_read(const struct loader *l, struct agg_totals *out)
{
	int ncpu = libbpf_num_possible_cpus(), err;
	struct tt_agg *percpu;
	__u32 zero = 0;

	memset(out, 0, sizeof(*out));
	if (ncpu <= 0 || !(percpu = calloc(ncpu, sizeof(*percpu))))
		return -ENOMEM;
	/* global per-CPU histograms: nothing to race, every count read exactly once */
	err = bpf_map__lookup_elem(l->skel->maps.agg_hist, &zero, sizeof(zero), percpu,
				   ncpu * sizeof(*percpu), 0);
	for (int c = 0; !err && c < ncpu; c++)
		agg__add(out, &percpu[c]);
	free(percpu);
	return err;
}

/*
 * A program the kernel did not run because one was already running on that CPU (an
 * interrupt inside a probe): a record never made, counted by the kernel itself. The timer
 * hooks' skips apart (*timer): they make no record, only mark an expiry (wake.bpf.h).
 */
static uint64_t prog_misses(const struct loader *l, uint64_t *timer)
{
	struct bpf_program *prog;
	uint64_t n = 0;

	*timer = 0;
	bpf_object__for_each_program(prog, l->skel->obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		if (prog == l->skel->progs.irq_hrtimer_in || prog == l->skel->progs.irq_hrtimer_out)
			*timer += info.recursion_misses;
		else
			n += info.recursion_misses;
	}
	return n;
}

int loader__read_stats(const struct loader *l, uint64_t out[TT_STAT_NR])
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals;
	int err = 0;

	if (ncpu <= 0)
		return -EINVAL;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (__u32 k = 0; k < TT_STAT_NR; k++) {
		out[k] = 0;
		err = bpf_map__lookup_elem(l->skel->maps.stats, &k, sizeof(k), vals,
					   ncpu * sizeof(*vals), 0);
		if (err)
			break;
		for (int c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	free(vals);
	out[TT_STAT_PROG_MISS] = prog_misses(l, &out[TT_STAT_TIMER_SKIP]);
	return err;
}
