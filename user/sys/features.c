// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What this machine lets tokentrace do, asked before anything is loaded: privileges, BTF,
 * tracefs, and the kernel's BPF features, each missing one said in a line of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "loader_int.h"
#include "util.h"

#define BTF_PATH	"/sys/kernel/btf/vmlinux"
#define TRACEFS		"/sys/kernel/tracing"
#define DEBUGFS_TRACING	"/sys/kernel/debug/tracing"

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
	/* effective ids: with capabilities instead of root, access() would ask the real uid */
	if (!faccessat(AT_FDCWD, TRACEFS "/events", F_OK, AT_EACCESS) ||
	    !faccessat(AT_FDCWD, DEBUGFS_TRACING "/events", F_OK, AT_EACCESS))
		return 0;
	if (mount("tracefs", TRACEFS, "tracefs", 0, NULL) && errno != EBUSY) {
		fprintf(stderr, "tokentrace: tracefs is not mounted and mounting it on %s failed: "
			"%s\n", TRACEFS, strerror(errno));
		return -errno;
	}
	return 0;
}

int features__check_access(void)
{
	int err;

	if ((err = check_privileges()) || (err = check_btf()) || (err = ensure_tracefs()))
		return err;
	return 0;
}

bool features__tracefs_has(const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), TRACEFS "/%s", rel);
	if (!faccessat(AT_FDCWD, path, F_OK, AT_EACCESS))
		return true;
	snprintf(path, sizeof(path), DEBUGFS_TRACING "/%s", rel);
	return !faccessat(AT_FDCWD, path, F_OK, AT_EACCESS);
}

/*
 * Can the syscall hooks be trampolines (fx_exit_accept4 in tokentrace.bpf.c) rather than
 * syscall tracepoints, which slow every syscall of the machine down while attached? An
 * empty fexit program on the last of the syscalls' functions, loaded and attached, then
 * dropped (x86-64 only, as bpf/sysnr.h is):
 * kernels without trampolines (or that refuse them, as some hardened ones do with EPERM)
 * say so here, before the real load. TOKENTRACE_SYSCALL_TP=1 keeps the tracepoints (tests).
 */
static bool syscall_trampolines(void)
{
	static const char *const funcs[] = {
		"__x64_sys_accept4", "__x64_sys_accept", "__x64_sys_close", "__x64_sys_futex",
		"__x64_sys_nanosleep", "__x64_sys_clock_nanosleep",
	};
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	struct btf *vmlinux;
	int id = -1, fd, link;

	if (getenv("TOKENTRACE_SYSCALL_TP"))
		return false;
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		return false;
	/* every function the programs name must be there, or the real load fails */
	for (size_t i = 0; i < ARRAY_SIZE(funcs); i++) {
		id = btf__find_by_name_kind(vmlinux, funcs[i], BTF_KIND_FUNC);
		if (id < 0)
			break;
	}
	btf__free(vmlinux);
	if (id < 0)
		return false;
	LIBBPF_OPTS(bpf_prog_load_opts, po, .expected_attach_type = BPF_TRACE_FEXIT,
		    .attach_btf_id = id);
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "tt_probe_fx", "GPL", insns,
			   ARRAY_SIZE(insns), &po);
	if (fd < 0)
		return false;
	link = bpf_link_create(fd, 0, BPF_TRACE_FEXIT, NULL);
	if (link >= 0)
		close(link);
	close(fd);
	return link >= 0;
}

int features__probe(struct features *f)
{
	if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) != 1) {
		fprintf(stderr, "tokentrace: this kernel has no BPF ring buffer (Linux 5.8+ "
			"needed)\n");
		return -ENOTSUP;
	}
	if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACEPOINT, BPF_FUNC_task_pt_regs, NULL) != 1) {
		fprintf(stderr, "tokentrace: this kernel lacks the bpf_task_pt_regs() helper "
			"(Linux 5.15+ needed): the user buffers of a send cannot be found\n");
		return -ENOTSUP;
	}
	f->loop = libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACEPOINT, BPF_FUNC_loop, NULL) == 1;
	/* tests: the bounded walk of kernels without bpf_loop (5.15, 5.16), on any kernel */
	if (getenv("TOKENTRACE_NO_BPF_LOOP"))
		f->loop = false;
	/* without it (before 5.19) a send keeps its counters in the thread's state, not in
	 * per-CPU slots (dlast) */
	f->percpu_lookup = libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACEPOINT,
						   BPF_FUNC_map_lookup_percpu_elem, NULL) == 1 &&
			   !getenv("TOKENTRACE_NO_PERCPU_LOOKUP");
	f->sysfx = syscall_trampolines();
	return 0;
}
