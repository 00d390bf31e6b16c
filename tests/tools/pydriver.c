// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pydriver: the Python-stack programs of tokentrace's BPF object, loaded alone against one
 * process, for tests/e2e/pystack.sh. Every TT_EV_PYSTACK record comes out as a JSON line with
 * its frames named; at the end, per thread, what pysamples says ran there, and the kernel
 * side's counters.
 *
 *   pydriver -p PID [-d SECONDS] [-f HZ] [--no-blocked] [--bpf-stats]
 *
 * --bpf-stats turns the kernel's BPF run-time accounting on for the run (BPF_ENABLE_STATS:
 * until pydriver exits, never left on) and reports the programs' run counts and time.
 * Exit 2 when the process is not CPython 3.11 (the reason on stderr).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "pyinfo.h"
#include "pysampler.h"
#include "pysamples.h"
#include "pysym.h"
#include "tokentrace.skel.h"

#define LINKS_MAX	1024

static volatile sig_atomic_t exiting;

static void on_signal(int sig)
{
	exiting = sig;
}

struct drv {
	uint32_t pid;
	struct pysym *sym;
	struct pysamples *ps;
	uint32_t tids[256];
	int ntids;
	uint64_t records;
};

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static const char *gil_name(unsigned int g)
{
	static const char *const names[] = {
		[TT_PY_GIL_NONE] = "none",
		[TT_PY_GIL_WAIT] = "wait",
		[TT_PY_GIL_MUTEX] = "mutex",
		[TT_PY_GIL_SWITCH] = "switch",
	};

	return g < sizeof(names) / sizeof(names[0]) ? names[g] : "?";
}

static size_t name_frame(void *ud, uint32_t pid, uint64_t code, int32_t lasti, char *buf,
			 size_t sz)
{
	return pysym__frame(ud, pid, code, lasti, buf, sz);
}

static int on_record(void *ctx, void *data, size_t size)
{
	const struct tt_pystack_ev *e = data;
	struct drv *d = ctx;
	bool known = false;

	if (size < sizeof(struct tt_hdr) || e->h.type != TT_EV_PYSTACK)
		return 0;
	if (size < TT_PYSTACK_HDR_SIZE || e->nframes > TT_PY_DEPTH)
		return 0;
	d->records++;
	pysamples__record(d->ps, e, size);
	for (int i = 0; i < d->ntids && !known; i++)
		known = d->tids[i] == e->h.tid;
	if (!known && d->ntids < (int)(sizeof(d->tids) / sizeof(d->tids[0])))
		d->tids[d->ntids++] = e->h.tid;
	printf("{\"type\":\"%s\",\"ts\":%llu,\"pid\":%u,\"tid\":%u,\"cpu\":%u,\"flags\":%u,"
	       "\"sysnr\":%d,\"futex\":%llu,\"gil\":\"%s\",\"gil_holder\":%u,\"depth\":%u,"
	       "\"frames\":[", e->kind == TT_PY_SAMPLE ? "sample" : "blocked",
	       (unsigned long long)e->h.ts, e->h.tgid, e->h.tid, e->h.cpu, e->flags,
	       (int)e->sysnr, (unsigned long long)e->futex, gil_name(e->gil), e->gil_holder,
	       e->nframes);
	for (int i = 0; i < e->nframes; i++) {
		struct py_sym s;

		if (i)
			putchar(',');
		if (pysym__lookup(d->sym, e->h.tgid, e->frames[i].code, e->frames[i].lasti, &s)) {
			printf("[\"?\",\"?\",-1]");
			continue;
		}
		putchar('[');
		json_str(s.name);
		putchar(',');
		json_str(s.file);
		printf(",%d]", s.line);
	}
	printf("]}\n");
	return 0;
}

static void print_tops(struct drv *d, uint64_t t0, uint64_t t1)
{
	struct py_top top[5];

	for (int i = 0; i < d->ntids; i++) {
		uint32_t total;
		int n = pysamples__top(d->ps, &d->tids[i], 1, t0, t1, top, 5, &total, name_frame,
				       d->sym);

		printf("{\"type\":\"top\",\"tid\":%u,\"total\":%u,\"entries\":[", d->tids[i],
		       total);
		for (int k = 0; k < n; k++) {
			printf("%s{\"name\":", k ? "," : "");
			json_str(top[k].name);
			printf(",\"samples\":%u,\"share\":%.4f,\"kernel\":%u,\"no_gil\":%u,"
			       "\"stack\":", top[k].samples, top[k].share, top[k].kernel,
			       top[k].no_gil);
			json_str(top[k].stack);
			putchar('}');
		}
		printf("]}\n");
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void usage(void)
{
	fprintf(stderr, "usage: pydriver -p PID [-d SECONDS] [-f HZ] [--no-blocked] "
		"[--bpf-stats]\n");
}

/* "name":{"runs":N,"ns":N} of a loaded program, from the kernel's accounting */
static void print_prog_stats(const char *key, const struct bpf_program *prog, bool more)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (bpf_program__fd(prog) < 0 ||
	    bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
		return;
	printf("\"%s\":{\"runs\":%llu,\"ns\":%llu}%s", key, (unsigned long long)info.run_cnt,
	       (unsigned long long)info.run_time_ns, more ? "," : "");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "freq", required_argument, NULL, 'f' },
		{ "no-blocked", no_argument, NULL, 'B' },
		{ "bpf-stats", no_argument, NULL, 'S' },
		{}
	};
	struct bpf_link *links[LINKS_MAX], *sw = NULL;
	struct tokentrace_bpf *skel = NULL;
	struct ring_buffer *rb = NULL;
	struct bpf_program *prog;
	struct tt_py_proc proc;
	struct drv d = {};
	uint64_t stats[TT_PY_STAT_NR], t_start, t_end;
	struct pysamples_counts c;
	double secs = 3;
	bool blocked = true, bpf_stats = false;
	unsigned int hz = PYSAMPLER_HZ_DEFAULT;
	char why[256];
	int opt, nlinks = 0, err = 1, stats_fd = -1;

	while ((opt = getopt_long(argc, argv, "p:d:f:", opts, NULL)) != -1) {
		switch (opt) {
		case 'p': d.pid = strtoul(optarg, NULL, 10); break;
		case 'd': secs = strtod(optarg, NULL); break;
		case 'f': hz = strtoul(optarg, NULL, 10); break;
		case 'B': blocked = false; break;
		case 'S': bpf_stats = true; break;
		default: usage(); return 1;
		}
	}
	if (!d.pid || secs <= 0 || secs > 600) {
		usage();
		return 1;
	}
	err = pyinfo__probe(d.pid, &proc, why, sizeof(why));
	if (err) {
		fprintf(stderr, "pydriver: %s\n", why);
		return 2;
	}
	d.sym = pysym__new(0);
	d.ps = pysamples__new(0, 4096, 4096);
	if (!d.sym || !d.ps || pysym__add_proc(d.sym, d.pid, &proc)) {
		fprintf(stderr, "pydriver: out of memory\n");
		goto out;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	skel = tokentrace_bpf__open();
	if (!skel) {
		fprintf(stderr, "pydriver: opening the BPF object failed: %s\n", strerror(errno));
		goto out;
	}
	/* as the loader does: wake the consumer once a quarter of the ring is waiting */
	skel->rodata->wake_bytes = bpf_map__max_entries(skel->maps.events) / 4;
	/* only the Python programs: the rest of the object stays unloaded */
	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog, prog == skel->progs.py_sample ||
					  (blocked && prog == skel->progs.py_switch));
	err = tokentrace_bpf__load(skel);
	if (err) {
		fprintf(stderr, "pydriver: loading the BPF object failed: %s\n", strerror(-err));
		goto out;
	}
	err = pysampler__add_proc(skel->maps.py_procs, &skel->bss->py_any, d.pid, &proc);
	if (err) {
		fprintf(stderr, "pydriver: adding PID %u to py_procs failed: %s\n", d.pid,
			strerror(-err));
		goto out;
	}
	rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_record, &d, NULL);
	if (!rb) {
		err = -errno;
		fprintf(stderr, "pydriver: ring buffer: %s\n", strerror(errno));
		goto out;
	}
	if (blocked) {
		sw = bpf_program__attach(skel->progs.py_switch);
		if (!sw) {
			err = -errno;
			fprintf(stderr, "pydriver: attaching py_switch failed: %s\n",
				strerror(errno));
			goto out;
		}
	}
	nlinks = pysampler__attach(skel->progs.py_sample, hz, links, LINKS_MAX, why, sizeof(why));
	if (nlinks < 0) {
		err = nlinks;
		nlinks = 0;
		fprintf(stderr, "pydriver: %s\n", why);
		goto out;
	}
	if (bpf_stats) {
		stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (stats_fd < 0)
			fprintf(stderr, "pydriver: BPF run-time stats: %s\n", strerror(-stats_fd));
	}
	t_start = now_ns();
	t_end = t_start + (uint64_t)(secs * 1e9);
	printf("{\"type\":\"ready\",\"pid\":%u,\"version\":\"%x\",\"cpus\":%d,\"hz\":%u,"
	       "\"t_ns\":%llu}\n", d.pid, proc.version, nlinks, hz, (unsigned long long)t_start);
	fflush(stdout);
	while (!exiting && now_ns() < t_end) {
		err = ring_buffer__poll(rb, 20);
		if (err < 0 && err != -EINTR) {
			fprintf(stderr, "pydriver: polling the ring buffer failed: %s\n",
				strerror(-err));
			goto out;
		}
	}
	/* stop producing, then take what is left */
	for (int i = 0; i < nlinks; i++)
		bpf_link__destroy(links[i]);
	nlinks = 0;
	bpf_link__destroy(sw);
	sw = NULL;
	ring_buffer__consume(rb);
	print_tops(&d, t_start, now_ns());
	pysamples__counts(d.ps, &c);
	err = pysampler__read_stats(skel->maps.py_stats, stats);
	if (err) {
		fprintf(stderr, "pydriver: reading py_stats failed: %s\n", strerror(-err));
		goto out;
	}
	printf("{\"type\":\"stats\",\"records\":%llu,\"samples\":%llu,\"blocked\":%llu,"
	       "\"no_tstate\":%llu,\"fault\":%llu,\"trunc\":%llu,\"core_dropped\":%llu,"
	       "\"core_bad\":%llu}\n", (unsigned long long)d.records,
	       (unsigned long long)stats[TT_PY_STAT_SAMPLES],
	       (unsigned long long)stats[TT_PY_STAT_BLOCKED],
	       (unsigned long long)stats[TT_PY_STAT_NO_TSTATE],
	       (unsigned long long)stats[TT_PY_STAT_FAULT],
	       (unsigned long long)stats[TT_PY_STAT_TRUNC], (unsigned long long)c.dropped,
	       (unsigned long long)c.bad);
	if (stats_fd >= 0) {
		printf("{\"type\":\"bpf_stats\",");
		print_prog_stats("py_sample", skel->progs.py_sample, blocked);
		if (blocked)
			print_prog_stats("py_switch", skel->progs.py_switch, false);
		printf("}\n");
	}
	err = 0;
out:
	for (int i = 0; i < nlinks; i++)
		bpf_link__destroy(links[i]);
	bpf_link__destroy(sw);
	ring_buffer__free(rb);
	tokentrace_bpf__destroy(skel);
	if (stats_fd >= 0)
		close(stats_fd);
	pysamples__free(d.ps);
	pysym__free(d.sym);
	return err ? 1 : 0;
}
