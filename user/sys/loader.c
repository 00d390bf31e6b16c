// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "aggregate.h"
#include "loader.h"
#include "procmaps.h"
#include "procnet.h"
#include "tokentrace.skel.h"
#include "util.h"

#define BTF_PATH	"/sys/kernel/btf/vmlinux"
#define TRACEFS		"/sys/kernel/tracing"

#define LOADER_LINKS_MAX	(TT_MARKERS_MAX * 16)

struct loader {
	struct tokentrace_bpf *skel;
	int nprobes;
	struct bpf_link *links[LOADER_LINKS_MAX];	/* marker probes, beside the skeleton's */
	int nlinks;
};

static bool verbose;

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG && !verbose)
		return 0;
	if (!verbose)
		return 0;	/* failures are explained by our own one-liners */
	return vfprintf(stderr, fmt, args);
}

static bool has_cap(int cap)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {};

	if (syscall(SYS_capget, &hdr, data))
		return false;
	return data[cap / 32].effective & (1u << (cap % 32));
}

static int check_privileges(void)
{
	if (geteuid() == 0 || has_cap(CAP_SYS_ADMIN))
		return 0;
	if (has_cap(CAP_BPF) && has_cap(CAP_PERFMON))
		return 0;
	fprintf(stderr, "tokentrace: need root (or CAP_BPF and CAP_PERFMON) to load BPF programs; "
		"run it with sudo\n");
	return -EPERM;
}

static int check_btf(void)
{
	struct stat st;

	if (stat(BTF_PATH, &st) || !st.st_size) {
		fprintf(stderr, "tokentrace: this kernel exposes no BTF (%s is missing): tokentrace "
			"needs a kernel built with CONFIG_DEBUG_INFO_BTF=y\n", BTF_PATH);
		return -ENOENT;
	}
	return 0;
}

/* The syscall tracepoints attach through tracefs: mount it where the system did not. */
static int ensure_tracefs(void)
{
	if (!access(TRACEFS "/events", F_OK) || !access("/sys/kernel/debug/tracing/events", F_OK))
		return 0;
	if (mount("tracefs", TRACEFS, "tracefs", 0, NULL) && errno != EBUSY) {
		fprintf(stderr, "tokentrace: tracefs is not mounted and mounting it on %s failed: "
			"%s\n", TRACEFS, strerror(errno));
		return -errno;
	}
	return 0;
}

static bool is_marker_prog(const struct loader *l, const struct bpf_program *p)
{
	return p == l->skel->progs.marker_uprobe || p == l->skel->progs.marker_uretprobe ||
	       p == l->skel->progs.marker_usdt;
}

/*
 * New connections of the targets' listening ports are followed from the handshake, so the
 * time a request waited in the accept backlog is known. The ports are constants of the
 * programs: found before load.
 */
static void set_listen_ports(struct loader *l, const struct loader_opts *o)
{
	struct tokentrace_bpf__rodata *ro = l->skel->rodata;
	uint16_t ports[64];
	__u32 n = 0;

	for (int i = 0; i < o->npids; i++) {
		int got = procnet__listen_ports(o->pids[i], ports, 64);

		for (int j = 0; j < got && n < ARRAY_SIZE(ro->lport_list); j++)
			ro->lport_list[n++] = ports[j];
	}
	ro->nlports = n;
}

static int attach_marker(struct loader *l, struct marker *m, int idx, uint32_t pid)
{
	__u64 cookie = TT_COOKIE(idx, m->key_arg, m->key_str);
	struct bpf_link *link;
	int err;

	if (m->probe == MP_USDT) {
		LIBBPF_OPTS(bpf_usdt_opts, uo, .usdt_cookie = cookie);

		link = bpf_program__attach_usdt(l->skel->progs.marker_usdt, pid, m->path,
						m->symbol, m->usdt_name, &uo);
	} else {
		LIBBPF_OPTS(bpf_uprobe_opts, po, .bpf_cookie = cookie,
			    .retprobe = m->probe == MP_URETPROBE);

		link = bpf_program__attach_uprobe_opts(m->probe == MP_URETPROBE ?
						       l->skel->progs.marker_uretprobe :
						       l->skel->progs.marker_uprobe,
						       pid, m->path, m->file_off, &po);
	}
	if (!link) {
		err = -errno;
		fprintf(stderr, "tokentrace: attaching %s in PID %u failed: %s\n", m->arg, pid,
			strerror(-err));
		return err;
	}
	if (l->nlinks == LOADER_LINKS_MAX) {
		bpf_link__destroy(link);
		fprintf(stderr, "tokentrace: too many marker probes\n");
		return -E2BIG;
	}
	l->links[l->nlinks++] = link;
	l->nprobes++;
	return 0;
}

/* Each marker in every target that maps its binary; an error if none does. */
static int attach_markers(struct loader *l, const struct loader_opts *o)
{
	char path[PATH_MAX];
	int err;

	for (int i = 0; i < o->nmarkers; i++) {
		struct marker *m = &o->markers[i];
		int attached = 0;

		for (int j = 0; j < o->npids; j++) {
			/* other targets may not map this binary: only the last one reports */
			if (j + 1 < o->npids &&
			    procmaps__find_binary(o->pids[j], m->binary, path, sizeof(path)))
				continue;
			err = marker__resolve(m, o->pids[j]);
			if (err)
				return err;
			err = attach_marker(l, m, i, o->pids[j]);
			if (err)
				return err;
			attached++;
		}
		if (!attached)
			return -ENOENT;
	}
	return 0;
}

static const char *load_hint(int err)
{
	switch (-err) {
	case EPERM:
	case EACCES:
		return " (refused: missing privileges, kernel lockdown, or "
		       "kernel.unprivileged_bpf_disabled; run as root)";
	case ENOMEM:
		return " (out of locked memory or map space; try a smaller -b)";
	case EINVAL:
	case ENOTSUP:
		return " (this kernel lacks a feature tokentrace needs: ring buffers, "
		       "raw tracepoints or BTF)";
	case ENOENT:
		return " (no such tracepoint in this kernel: sock:sock_send_length and "
		       "sock:sk_data_ready need Linux 6.6 or newer)";
	default:
		return "";
	}
}

int loader__open(const struct loader_opts *o, struct loader **out)
{
	struct loader *l;
	struct bpf_link *link;
	struct bpf_program *prog;
	int err, ncpu;
	__u8 one = 1;

	verbose = o->verbose;
	libbpf_set_print(print_libbpf);
	if ((err = check_privileges()) || (err = check_btf()) || (err = ensure_tracefs()))
		return err;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->skel = tokentrace_bpf__open();
	if (!l->skel) {
		err = -errno;
		fprintf(stderr, "tokentrace: opening the BPF object failed: %s\n", strerror(-err));
		goto fail;
	}
	l->skel->rodata->cap_bytes = o->capture_bytes;
	l->skel->rodata->targ_lport = o->port;
	l->skel->rodata->stalls = o->stalls;
	set_listen_ports(l, o);
	l->skel->rodata->aggregate = o->aggregate;
	if (o->aggregate)
		bpf_map__set_max_entries(l->skel->maps.aggs, 4096);
	/* wake the consumer only when a quarter of the ring is waiting; it polls otherwise */
	l->skel->rodata->wake_bytes = o->ringbuf_bytes / 4;
	ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		ncpu = 1;
	bpf_map__set_max_entries(l->skel->maps.scratch, ncpu);
	bpf_map__set_max_entries(l->skel->maps.events, o->ringbuf_bytes);
	/* stall attribution's hooks only when it is on: untraced processes pay nothing then */
	bpf_program__set_autoload(l->skel->progs.sched_switch, o->stalls);
	bpf_program__set_autoload(l->skel->progs.sched_wakeup, o->stalls);
	bpf_program__set_autoload(l->skel->progs.sched_wakeup_new, o->stalls);
	bpf_program__set_autoload(l->skel->progs.tcp_retransmit_skb, o->stalls);
	if (!o->stalls)
		bpf_map__set_max_entries(l->skel->maps.stacks, 1);
	/* marker programs only when markers are asked for: less to load and verify */
	for (int i = 0; i < 3; i++) {
		static const enum marker_probe kinds[] = { MP_UPROBE, MP_URETPROBE, MP_USDT };
		struct bpf_program *p = i == 0 ? l->skel->progs.marker_uprobe :
					i == 1 ? l->skel->progs.marker_uretprobe :
						 l->skel->progs.marker_usdt;
		bool used = false;

		for (int j = 0; j < o->nmarkers; j++)
			used |= o->markers[j].probe == kinds[i];
		bpf_program__set_autoload(p, used);
	}

	err = tokentrace_bpf__load(l->skel);
	if (err) {
		fprintf(stderr, "tokentrace: loading the BPF programs failed: %s%s\n",
			strerror(-err), load_hint(err));
		goto fail;
	}
	for (int i = 0; i < o->npids; i++) {
		err = bpf_map__update_elem(l->skel->maps.targets, &o->pids[i], sizeof(o->pids[i]),
					   &one, sizeof(one), BPF_ANY);
		if (err) {
			fprintf(stderr, "tokentrace: adding PID %u to the targets failed: %s\n",
				o->pids[i], strerror(-err));
			goto fail;
		}
	}
	/* attach one by one to name the probe that fails */
	bpf_object__for_each_program(prog, l->skel->obj) {
		if (is_marker_prog(l, prog) || !bpf_program__autoload(prog))
			continue;
		link = bpf_program__attach(prog);
		if (!link) {
			err = -errno;
			fprintf(stderr, "tokentrace: attaching %s failed: %s%s\n",
				bpf_program__section_name(prog), strerror(-err), load_hint(err));
			goto fail;
		}
		/* the skeleton owns its links array; keep ours for destroy */
		for (int i = 0; i < l->skel->skeleton->prog_cnt; i++)
			if (*l->skel->skeleton->progs[i].prog == prog)
				*l->skel->skeleton->progs[i].link = link;
		l->nprobes++;
	}
	err = attach_markers(l, o);
	if (err)
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
	for (int i = 0; i < l->nlinks; i++)
		bpf_link__destroy(l->links[i]);
	tokentrace_bpf__destroy(l->skel);	/* detaches every link */
	free(l);
}

int loader__ringbuf_fd(const struct loader *l)
{
	return bpf_map__fd(l->skel->maps.events);
}

int loader__nr_probes(const struct loader *l)
{
	return l->nprobes;
}

int loader__ignore_conn(struct loader *l, uint64_t sk)
{
	struct tt_conn c;
	int err;

	err = bpf_map__lookup_elem(l->skel->maps.conns, &sk, sizeof(sk), &c, sizeof(c), 0);
	if (err)
		return err;	/* closed meanwhile */
	c.mode = TT_MODE_IGNORE;
	return bpf_map__update_elem(l->skel->maps.conns, &sk, sizeof(sk), &c, sizeof(c),
				    BPF_EXIST);
}

int loader__stack(const struct loader *l, int32_t id, uint64_t *ips)
{
	uint64_t buf[TT_STACK_DEPTH] = {};
	int n = 0, err;

	if (id < 0)
		return -ENOENT;
	err = bpf_map__lookup_elem(l->skel->maps.stacks, &id, sizeof(id), buf, sizeof(buf), 0);
	if (err)
		return err;
	while (n < TT_STACK_DEPTH && buf[n])
		ips[n] = buf[n], n++;
	return n;
}

int loader__agg_read(const struct loader *l, struct agg_totals *out)
{
	int ncpu = libbpf_num_possible_cpus(), err;
	struct tt_agg a, *percpu;
	__u64 key, next, *prev = NULL;
	__u32 zero = 0;

	memset(out, 0, sizeof(*out));
	if (ncpu <= 0 || !(percpu = calloc(ncpu, sizeof(*percpu))))
		return -ENOMEM;
	/*
	 * Closed ones first, live ones after: a connection closing in between is then missed
	 * once rather than counted twice, and the totals only ever grow.
	 */
	err = bpf_map__lookup_elem(l->skel->maps.agg_closed, &zero, sizeof(zero), percpu,
				   ncpu * sizeof(*percpu), 0);
	for (int c = 0; !err && c < ncpu; c++)
		agg__add(out, &percpu[c]);
	free(percpu);
	while (!err && !bpf_map__get_next_key(l->skel->maps.aggs, prev, &next, sizeof(next))) {
		key = next;
		prev = &key;
		if (bpf_map__lookup_elem(l->skel->maps.aggs, &key, sizeof(key), &a, sizeof(a), 0))
			continue;	/* closed meanwhile: next time it is among the closed */
		agg__add(out, &a);
		out->conns++;
	}
	return err;
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
	return err;
}
