// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "elfsym.h"
#include "procmaps.h"
#include "symbolize.h"
#include "util.h"
#include "vec.h"

#define ELF_CACHE	16
#define USER_FRAMES	4
#define KERNEL_FRAMES	2

struct ksym {
	uint64_t addr;
	char *name;
};

struct elf_cache {
	char path[PATH_MAX + 32];
	struct elf_syms *es;	/* NULL: could not be read */
	uint64_t used;
};

struct symbolizer {
	struct ksym *ksyms;
	size_t nksyms;
	int ksyms_err;		/* kallsyms unreadable (or all zero: kptr_restrict) */
	uint32_t maps_pid;
	struct proc_map *maps;
	size_t nmaps;
	struct elf_cache elf[ELF_CACHE];
	uint64_t clock;
};

struct symbolizer *symbolizer__new(void)
{
	return calloc(1, sizeof(struct symbolizer));
}

void symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nksyms; i++)
		free(s->ksyms[i].name);
	free(s->ksyms);
	free(s->maps);
	for (int i = 0; i < ELF_CACHE; i++)
		elf_syms__close(s->elf[i].es);
	free(s);
}

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int load_kallsyms(struct symbolizer *s)
{
	char line[512], name[256], type;
	unsigned long long addr;
	size_t cap = 0;
	FILE *f;

	if (s->nksyms || s->ksyms_err)
		return s->ksyms_err;
	f = fopen("/proc/kallsyms", "re");
	if (!f)
		return s->ksyms_err = -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 || !addr)
			continue;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (VEC_RESERVE(s->ksyms, &cap, s->nksyms + 1, SIZE_MAX))
			break;
		s->ksyms[s->nksyms].addr = addr;
		s->ksyms[s->nksyms].name = strdup(name);
		if (s->ksyms[s->nksyms].name)
			s->nksyms++;
	}
	fclose(f);
	if (!s->nksyms)
		return s->ksyms_err = -EPERM;	/* addresses hidden (kptr_restrict) */
	qsort(s->ksyms, s->nksyms, sizeof(*s->ksyms), cmp_ksym);
	return 0;
}

static const char *ksym_name(const struct symbolizer *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nksyms;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->ksyms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? s->ksyms[lo - 1].name : NULL;
}

/* Frames of the scheduler and of the tracing itself: how a thread leaves the CPU, not why. */
static bool boring_kframe(const char *name)
{
	static const char *const prefixes[] = {
		"__traceiter_", "bpf_", "__bpf", "__schedule", "schedule", "__sched_text",
		"preempt_schedule", "perf_", "__perf", "trace_call_bpf", "stack_trace",
	};

	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

static struct elf_syms *elf_for(struct symbolizer *s, const char *path)
{
	struct elf_cache *slot = &s->elf[0];

	s->clock++;
	for (int i = 0; i < ELF_CACHE; i++) {
		if (s->elf[i].path[0] && !strcmp(s->elf[i].path, path)) {
			s->elf[i].used = s->clock;
			return s->elf[i].es;
		}
		if (s->elf[i].used < slot->used)
			slot = &s->elf[i];
	}
	elf_syms__close(slot->es);
	slot->es = NULL;
	snprintf(slot->path, sizeof(slot->path), "%s", path);
	slot->used = s->clock;
	elf_syms__open(path, &slot->es);
	return slot->es;
}

static const struct proc_map *map_of(struct symbolizer *s, uint32_t pid, uint64_t ip)
{
	const struct proc_map *m;

	if (s->maps_pid == pid && s->maps && (m = procmaps__lookup(s->maps, s->nmaps, ip)))
		return m;
	/* a library loaded since: read the mappings again */
	free(s->maps);
	s->maps = NULL;
	s->nmaps = 0;
	s->maps_pid = pid;
	if (procmaps__load(pid, &s->maps, &s->nmaps))
		return NULL;
	return procmaps__lookup(s->maps, s->nmaps, ip);
}

/* One user frame; 0 (nothing written) for an unnamed one when only_named. */
static size_t user_frame(struct symbolizer *s, uint32_t pid, uint64_t ip, char *out, size_t sz,
			 bool only_named)
{
	const struct proc_map *m = map_of(s, pid, ip);
	char path[PATH_MAX + 32];
	const char *base, *fn = NULL;
	struct elf_syms *es;
	uint64_t addr, off;

	if (!m)
		return only_named ? 0 : snprintf(out, sz, "0x%llx", (unsigned long long)ip);
	base = strrchr(m->path, '/');
	base = base ? base + 1 : m->path;
	snprintf(path, sizeof(path), "/proc/%u/root%s", pid, m->path);
	es = elf_for(s, path);
	if (es && !elf_syms__off_to_addr(es, ip - m->start + m->off, &addr))
		fn = elf_syms__lookup(es, addr, &off);
	if (fn)
		return snprintf(out, sz, "%s`%s", base, fn);
	if (only_named)
		return 0;
	return snprintf(out, sz, "%s+0x%llx", base, (unsigned long long)(ip - m->start + m->off));
}

size_t symbolizer__format_kernel(struct symbolizer *s, const uint64_t *kips, int nk, int frames,
				 char *out, size_t sz)
{
	size_t len = 0;

	if (!sz)
		return 0;
	out[0] = '\0';
	if (load_kallsyms(s))
		return 0;
	for (int i = 0, k = 0; i < nk && k < frames && len + 1 < sz; i++) {
		static const char *const plumbing[] = {
			"try_to_wake_up", "wake_up_q", "wake_up_process", "__wake_up",
			"autoremove_wake_function", "default_wake_function", "woken_wake_function",
			"ep_autoremove_wake_function", "pollwake", "bpf_trace_run", "__bpf_trace",
			"bpf_prog_", "__traceiter_",
		};
		const char *name = ksym_name(s, kips[i]);
		bool skip = false;

		if (!name)
			continue;
		/* the wakeup's own plumbing says nothing of who woke and why */
		for (size_t j = 0; j < sizeof(plumbing) / sizeof(plumbing[0]); j++)
			skip |= !strncmp(name, plumbing[j], strlen(plumbing[j]));
		if (skip)
			continue;
		len += snprintf(out + len, sz - len, "%s%s", k ? " <- " : "[k] ", name);
		k++;
	}
	return len < sz ? len : sz - 1;
}

size_t symbolizer__format(struct symbolizer *s, uint32_t pid, const uint64_t *uips, int nu,
			  const uint64_t *kips, int nk, char *out, size_t sz)
{
	size_t len = 0;
	int shown = 0;

	if (!sz)
		return 0;
	out[0] = '\0';
	/*
	 * The innermost frame is shown whatever it is; past it, unnamed frames (a stripped
	 * libc's internals, thread start) say nothing and are left out.
	 */
	for (int i = 0; i < nu && shown < USER_FRAMES && len + 5 < sz; i++) {
		char frame[256];
		size_t n = user_frame(s, pid, uips[i], frame, sizeof(frame), shown > 0);

		if (!n)
			continue;
		len += snprintf(out + len, sz - len, "%s%s", shown ? " <- " : "", frame);
		shown++;
	}
	if (nk && !load_kallsyms(s) && len + 1 < sz) {
		int k = 0;

		for (int i = 0; i < nk && k < KERNEL_FRAMES && len + 1 < sz; i++) {
			const char *name = ksym_name(s, kips[i]);

			if (!name || (!k && boring_kframe(name)))
				continue;
			len += snprintf(out + len, sz - len, "%s%s", k ? " <- " : len ? " [k] " : "[k] ",
					name);
			k++;
		}
	}
	return len < sz ? len : sz - 1;
}
