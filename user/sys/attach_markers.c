// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --uprobe, --uretprobe, --usdt: each marker attached in every target that maps its binary
 * (markers.h resolves them), its index and key in the BPF cookie.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "loader_int.h"
#include "procmaps.h"
#include "util.h"

static const enum marker_probe kinds[] = { MP_UPROBE, MP_URETPROBE, MP_USDT };

static struct bpf_program *prog_of(const struct tokentrace_bpf *sk, enum marker_probe k)
{
	return k == MP_USDT ? sk->progs.marker_usdt :
	       k == MP_URETPROBE ? sk->progs.marker_uretprobe : sk->progs.marker_uprobe;
}

/* marker programs only when markers are asked for: less to load and verify */
void markers_attach__configure(struct tokentrace_bpf *sk, const struct loader_opts *o)
{
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		bool used = false;

		for (int j = 0; j < o->nmarkers; j++)
			used |= o->markers[j].probe == kinds[i];
		bpf_program__set_autoload(prog_of(sk, kinds[i]), used);
	}
}

bool markers_attach__owns(const struct tokentrace_bpf *sk, const struct bpf_program *p)
{
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (p == prog_of(sk, kinds[i]))
			return true;
	return false;
}

static int attach_one(struct loader *l, struct marker *m, int idx, uint32_t pid)
{
	__u64 cookie = TT_COOKIE(idx, m->key_arg, m->key_str);
	struct bpf_program *prog = prog_of(l->skel, m->probe);
	struct bpf_link *link;
	int err;

	if (m->probe == MP_USDT) {
		LIBBPF_OPTS(bpf_usdt_opts, uo, .usdt_cookie = cookie);

		link = bpf_program__attach_usdt(prog, pid, m->path, m->symbol, m->usdt_name, &uo);
	} else {
		LIBBPF_OPTS(bpf_uprobe_opts, po, .bpf_cookie = cookie,
			    .retprobe = m->probe == MP_URETPROBE);

		link = bpf_program__attach_uprobe_opts(prog, pid, m->path, m->file_off, &po);
	}
	if (!link) {
		err = -errno;
		fprintf(stderr, "tokentrace: attaching %s in PID %u failed: %s\n", m->arg, pid,
			strerror(-err));
		return err;
	}
	err = linkset__keep(&l->links, link);
	if (!err)
		l->nprobes++;
	return err;
}

/*
 * Each marker in every target that maps its binary, whatever the order of the targets; an
 * error if none does, or if one that maps it lacks the probe.
 */
int markers_attach(struct loader *l, const struct loader_opts *o)
{
	char path[PATH_MAX];
	int err;

	for (int i = 0; i < o->nmarkers; i++) {
		struct marker *m = &o->markers[i];
		int mapped = 0;

		for (int j = 0; j < o->npids; j++) {
			if (procmaps__find_binary(o->pids[j], m->binary, path, sizeof(path)) ==
			    -ENOENT)
				continue;
			mapped++;
			err = marker__resolve(m, o->pids[j]);
			if (err)
				return err;
			err = attach_one(l, m, i, o->pids[j]);
			if (err)
				return err;
		}
		if (!mapped)	/* resolve says why, in the user's words */
			return marker__resolve(m, o->pids[0]) ?: -ENOENT;
	}
	return 0;
}
