// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include "elfsym.h"
#include "procfind.h"
#include "procmaps.h"
#include "pyinfo.h"

/*
 * Offsets by version. 3.11.0 final to 3.11.x: derived from the 3.11 headers with an offsetof()
 * probe (-DPy_BUILD_CORE; tests/unit/sys/test_pyoffsets.c recompiles it against whatever
 * headers are installed and compares), the same for 3.11.2 (Debian 12) and 3.11.7. Pre-releases
 * of 3.11.0 moved fields around and are refused.
 */
struct py_layout {
	uint32_t from, to;	/* Py_Version range, to exclusive */
	struct tt_py_offsets off;
};

static const struct py_layout layouts[] = {
	{ 0x030b00f0, 0x030c0000, {
		.rt_interp_head = 40,
		.rt_tstate_current = 576,
		.rt_gil = 360,
		.gil_last_holder = 8,
		.gil_locked = 16,
		.gil_cond = 32,
		.gil_mutex = 80,
		.gil_switch_cond = 120,
		.gil_switch_mutex = 168,
		.cond_size = 48,
		.mutex_size = 40,
		.interp_next = 0,
		.interp_threads_head = 16,
		.ts_next = 8,
		.ts_interp = 16,
		.ts_cframe = 56,
		.ts_native_tid = 160,
		.cframe_current = 8,
		.fr_code = 32,
		.fr_previous = 48,
		.fr_prev_instr = 56,
		.fr_is_entry = 68,
		.fr_owner = 69,
		.co_firstlineno = 72,
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_code_adaptive = 184,
		.ob_type = 8,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_data = 48,
		.str_compact_data = 72,
		.bytes_size = 16,
		.bytes_data = 32,
	} },
};

/*
 * The fields the kernel reads in one go must lie in its chunks (python.bpf.h, and the masks
 * it indexes them with).
 */
static bool chunk_ok(const struct tt_py_offsets *o)
{
	return o->ts_native_tid > o->ts_cframe &&
	       o->ts_native_tid - o->ts_cframe + 8 <= TT_PY_TS_CHUNK &&
	       o->gil_locked > o->gil_last_holder &&
	       o->gil_locked - o->gil_last_holder + 4 <= TT_PY_GIL_CHUNK &&
	       o->fr_previous > o->fr_code && o->fr_previous - o->fr_code + 8 <= 32 &&
	       o->fr_prev_instr > o->fr_code && o->fr_prev_instr - o->fr_code + 8 <= 32 &&
	       o->fr_is_entry > o->fr_code && o->fr_is_entry - o->fr_code < TT_PY_FRAME_CHUNK &&
	       o->fr_owner > o->fr_code && o->fr_owner - o->fr_code < TT_PY_FRAME_CHUNK;
}

const struct tt_py_offsets *pyinfo__offsets(uint32_t version)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (version >= layouts[i].from && version < layouts[i].to &&
		    chunk_ok(&layouts[i].off))
			return &layouts[i].off;
	return NULL;
}

void pyinfo__version_str(uint32_t v, char *buf, size_t sz)
{
	static const char *lvl[16] = { [0xa] = "a", [0xb] = "b", [0xc] = "rc" };
	unsigned int level = (v >> 4) & 0xf;

	if (level == 0xf || !lvl[level])
		snprintf(buf, sz, "%u.%u.%u", v >> 24, (v >> 16) & 0xff, (v >> 8) & 0xff);
	else
		snprintf(buf, sz, "%u.%u.%u%s%u", v >> 24, (v >> 16) & 0xff, (v >> 8) & 0xff,
			 lvl[level], v & 0xf);
}

int pyinfo__read(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n;

	if (!addr)
		return -EFAULT;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

static uint64_t rd_ptr(uint32_t pid, uint64_t addr)
{
	uint64_t v;

	return pyinfo__read(pid, addr, &v, sizeof(v)) ? 0 : v;
}

/*
 * Data symbols (STT_OBJECT) by name, from .symtab and .dynsym: elfsym.h keeps functions
 * only. addrs[i] stays 0 for a name not found. 0 or -errno.
 */
static int find_data_syms(const char *path, const char *const *names, uint64_t *addrs, int n)
{
	Elf_Scn *scn = NULL;
	Elf *elf;
	int fd;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		close(fd);
		return -ENOEXEC;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !sh.sh_entsize)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			const char *name;
			GElf_Sym sym;

			if (!gelf_getsym(data, i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_OBJECT || !sym.st_value ||
			    sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name)
				continue;
			for (int j = 0; j < n; j++)
				if (!addrs[j] && !strcmp(name, names[j]))
					addrs[j] = sym.st_value;
		}
	}
	elf_end(elf);
	close(fd);
	return 0;
}

/* "python3.11", "libpython3.11.so.1.0", "python3" ... : a file that may hold an interpreter */
static bool looks_python(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	if (!strncmp(b, "lib", 3))
		b += 3;
	return !strncmp(b, "python", 6);
}

/* "3.10" out of ".../libpython3.10.so.1.0" or ".../python3.10", for the refusal's words */
static void version_of_name(const char *path, char *buf, size_t sz)
{
	const char *b = strrchr(path, '/'), *p;
	size_t n;

	b = b ? b + 1 : path;
	p = strstr(b, "python");
	buf[0] = '\0';
	if (!p)
		return;
	p += 6;
	n = strspn(p, "0123456789.");
	while (n && p[n - 1] == '.')
		n--;
	if (n && n < sz)
		snprintf(buf, sz, "%.*s", (int)n, p);
}

/* The process's view of a mapped file: through its root, for processes in containers. */
static void file_in(uint32_t pid, const char *path, char *out, size_t sz)
{
	snprintf(out, sz, "/proc/%u/root%s", pid, path);
	if (access(out, R_OK))
		snprintf(out, sz, "%s", path);
}

/* Where the file's link-time addresses are in the process: start - vaddr of its offset. */
static int load_bias(const char *file, const struct proc_map *maps, size_t n, const char *path,
		     uint64_t *bias)
{
	struct elf_syms *es;
	int err = elf_syms__open(file, &es);

	if (err)
		return err;
	err = -ENOENT;
	if (!elf_syms__relocatable(es)) {
		*bias = 0;
		err = 0;
	}
	for (size_t i = 0; i < n && err; i++) {
		uint64_t vaddr;

		if (strcmp(maps[i].path, path) || elf_syms__off_to_addr(es, maps[i].off, &vaddr))
			continue;
		*bias = maps[i].start - (vaddr & ~0xfffull);
		err = 0;
	}
	elf_syms__close(es);
	return err;
}

enum { SYM_RUNTIME, SYM_VERSION, SYM_CODE, SYM_STR, SYM_BYTES, SYM_NR };
static const char *const sym_names[SYM_NR] = {
	"_PyRuntime", "Py_Version", "PyCode_Type", "PyUnicode_Type", "PyBytes_Type",
};

/* Is pid gone (or a zombie, whose memory is gone)? */
static bool exited(uint32_t pid)
{
	struct proc_stat st;

	return procfind__stat(pid, &st) || st.state == 'Z' || st.state == 'X';
}

/* pid's parent, 0 if it cannot be told */
static uint32_t parent_of(uint32_t pid)
{
	struct proc_stat st;

	return procfind__stat(pid, &st) ? 0 : st.ppid;
}

static bool has_task(uint32_t pid, uint64_t tid)
{
	char task[64];

	snprintf(task, sizeof(task), "/proc/%u/task/%llu", pid, (unsigned long long)tid);
	return !access(task, F_OK);
}

/*
 * The live process agrees with the offsets: the first interpreter's first thread state
 * points back at the interpreter, and its native id is one of the process's threads. A
 * process that exits while it is read fails the same checks (its memory and its threads go):
 * -ESRCH then, not a layout refused. So does a child just forked, before CPython's after-fork
 * hook gave its thread state the child's thread id (it still holds the parent's): -EAGAIN.
 */
static int check_layout(uint32_t pid, const struct tt_py_proc *p, const char *ver, char *why,
			size_t whysz)
{
	const struct tt_py_offsets *o = &p->off;
	uint64_t interp = 0, ts = 0, back = 0, ntid = 0;
	int err;

	err = pyinfo__read(pid, p->runtime + o->rt_interp_head, &interp, sizeof(interp));
	if (!err && interp)
		err = pyinfo__read(pid, interp + o->interp_threads_head, &ts, sizeof(ts));
	if (!err && (!interp || !ts)) {
		snprintf(why, whysz, "CPython %s in PID %u has no thread state yet (starting up)",
			 ver, pid);
		return -EAGAIN;
	}
	if (!err)
		err = pyinfo__read(pid, ts + o->ts_interp, &back, sizeof(back));
	if (!err)
		err = pyinfo__read(pid, ts + o->ts_native_tid, &ntid, sizeof(ntid));
	if (!err && back == interp && ntid && ntid <= UINT32_MAX && has_task(pid, ntid))
		return 0;
	if (err == -ESRCH || exited(pid)) {
		snprintf(why, whysz, "PID %u exited while it was looked at", pid);
		return -ESRCH;
	}
	if (!err && back == interp && ntid && has_task(parent_of(pid), ntid)) {
		snprintf(why, whysz, "PID %u was just forked: its interpreter is not ready yet",
			 pid);
		return -EAGAIN;
	}
	snprintf(why, whysz, "CPython %s in PID %u does not have the 3.11 layout tokentrace knows "
		 "(a custom build?): Python frames not read", ver, pid);
	return -ENOTSUP;
}

/* The interpreter in path, mapped in pid: fill p. -ENOENT if path holds none. */
static int probe_file(uint32_t pid, const char *path, const struct proc_map *maps, size_t n,
		      struct tt_py_proc *p, char *why, size_t whysz)
{
	uint64_t addrs[SYM_NR] = {}, bias, version = 0;
	const struct tt_py_offsets *off;
	char file[PATH_MAX + 32], ver[32];
	int err;

	file_in(pid, path, file, sizeof(file));
	err = find_data_syms(file, sym_names, addrs, SYM_NR);
	if (err || !addrs[SYM_RUNTIME])
		return -ENOENT;
	if (!addrs[SYM_VERSION]) {
		/* Py_Version is new in 3.11: this is an older one */
		version_of_name(path, ver, sizeof(ver));
		snprintf(why, whysz, "PID %u runs CPython %s (%s): only CPython 3.11 is supported",
			 pid, ver[0] ? ver : "older than 3.11", path);
		return -ENOTSUP;
	}
	err = load_bias(file, maps, n, path, &bias);
	if (err) {
		snprintf(why, whysz, "PID %u: where %s is loaded could not be told", pid, path);
		return -ENOENT;
	}
	err = pyinfo__read(pid, addrs[SYM_VERSION] + bias, &version, sizeof(version));
	if (err) {
		snprintf(why, whysz, "reading PID %u's memory failed: %s", pid, strerror(-err));
		return err;
	}
	pyinfo__version_str(version, ver, sizeof(ver));
	off = pyinfo__offsets(version);
	if (!off || version > UINT32_MAX) {
		snprintf(why, whysz, "PID %u runs CPython %s (%s): only CPython 3.11 is supported",
			 pid, ver, path);
		return -ENOTSUP;
	}
	memset(p, 0, sizeof(*p));
	p->runtime = addrs[SYM_RUNTIME] + bias;
	p->version = version;
	p->code_type = addrs[SYM_CODE] ? addrs[SYM_CODE] + bias : 0;
	p->str_type = addrs[SYM_STR] ? addrs[SYM_STR] + bias : 0;
	p->bytes_type = addrs[SYM_BYTES] ? addrs[SYM_BYTES] + bias : 0;
	p->off = *off;
	return check_layout(pid, p, ver, why, whysz);
}

int pyinfo__probe(uint32_t pid, struct tt_py_proc *out, char *why, size_t whysz)
{
	char exe[PATH_MAX], fn[64], tried[PATH_MAX] = "";
	struct proc_map *maps;
	ssize_t len;
	size_t n;
	int err;

	why[0] = '\0';
	err = procmaps__load(pid, &maps, &n);
	if (err) {
		snprintf(why, whysz, "reading /proc/%u/maps failed: %s", pid, strerror(-err));
		return err;
	}
	/* the executable first (Debian's python3.11 is static), then libpython of an embedder */
	snprintf(fn, sizeof(fn), "/proc/%u/exe", pid);
	len = readlink(fn, exe, sizeof(exe) - 1);
	exe[len > 0 ? len : 0] = '\0';
	err = -ENOENT;
	if (exe[0]) {
		err = probe_file(pid, exe, maps, n, out, why, whysz);
		snprintf(tried, sizeof(tried), "%s", exe);
	}
	for (size_t i = 0; i < n && err == -ENOENT; i++) {
		if (!maps[i].exec || !looks_python(maps[i].path) || !strcmp(maps[i].path, tried))
			continue;
		err = probe_file(pid, maps[i].path, maps, n, out, why, whysz);
		snprintf(tried, sizeof(tried), "%s", maps[i].path);
	}
	free(maps);
	if (err == -ENOENT && !why[0])
		snprintf(why, whysz, "PID %u is not a CPython process (no _PyRuntime in %s or its "
			 "libraries)", pid, exe[0] ? exe : "its executable");
	return err;
}

/* The thread state whose native id is tid, walking as py_find_tstate() does. */
static uint64_t find_tstate(uint32_t pid, const struct tt_py_proc *p, uint32_t tid)
{
	const struct tt_py_offsets *o = &p->off;
	uint64_t interp = rd_ptr(pid, p->runtime + o->rt_interp_head);

	for (int i = 0; i < TT_PY_INTERPS && interp; i++) {
		uint64_t t = rd_ptr(pid, interp + o->interp_threads_head);

		for (int j = 0; j < TT_PY_THREADS && t; j++) {
			if (rd_ptr(pid, t + o->ts_native_tid) == tid)
				return t;
			t = rd_ptr(pid, t + o->ts_next);
		}
		interp = rd_ptr(pid, interp + o->interp_next);
	}
	return 0;
}

int pyinfo__threads(uint32_t pid, const struct tt_py_proc *p, uint32_t *tids, int max)
{
	const struct tt_py_offsets *o = &p->off;
	uint64_t interp = rd_ptr(pid, p->runtime + o->rt_interp_head);
	int cnt = 0;

	for (int i = 0; i < TT_PY_INTERPS && interp; i++) {
		uint64_t t = rd_ptr(pid, interp + o->interp_threads_head);

		for (int j = 0; j < TT_PY_THREADS && t && cnt < max; j++) {
			tids[cnt++] = rd_ptr(pid, t + o->ts_native_tid);
			t = rd_ptr(pid, t + o->ts_next);
		}
		interp = rd_ptr(pid, interp + o->interp_next);
	}
	return cnt;
}

int pyinfo__walk(uint32_t pid, const struct tt_py_proc *p, uint32_t tid,
		 struct tt_py_frame *frames, int max)
{
	const struct tt_py_offsets *o = &p->off;
	uint64_t ts = find_tstate(pid, p, tid), frame;
	uint8_t chunk[TT_PY_FRAME_CHUNK];
	int n = 0;

	if (!ts)
		return -ESRCH;
	frame = rd_ptr(pid, rd_ptr(pid, ts + o->ts_cframe) + o->cframe_current);
	while (frame && n < max) {
		uint64_t code, instr, prev;

		if (pyinfo__read(pid, frame + o->fr_code, chunk, sizeof(chunk)))
			return n ? n : -EFAULT;
		memcpy(&code, chunk, 8);
		memcpy(&prev, chunk + (o->fr_previous - o->fr_code), 8);
		memcpy(&instr, chunk + (o->fr_prev_instr - o->fr_code), 8);
		frames[n].code = code;
		frames[n].lasti = (int64_t)(instr - (code + o->co_code_adaptive)) / 2;
		frames[n].flags = (chunk[o->fr_is_entry - o->fr_code] ? TT_PYFR_ENTRY : 0) |
				  ((chunk[o->fr_owner - o->fr_code] << 1) & TT_PYFR_OWNER_MASK);
		n++;
		frame = prev;
	}
	return n;
}
