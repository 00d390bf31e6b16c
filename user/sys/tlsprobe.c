// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Finding OpenSSL in a process. See tlsprobe.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "elfsym.h"
#include "procmaps.h"
#include "tlsprobe.h"

static const char *const names[TLSF_NR] = { "SSL_write", "SSL_write_ex", "SSL_read",
					    "SSL_read_ex", "SSL_do_handshake" };

/* the system's OpenSSL 3, where Debian, Ubuntu, Fedora and RHEL put it */
static const char *const system_libssl[] = {
	"/usr/lib/x86_64-linux-gnu/libssl.so.3", "/lib/x86_64-linux-gnu/libssl.so.3",
	"/usr/lib64/libssl.so.3", "/lib64/libssl.so.3", "/usr/lib/libssl.so.3",
};

const char *tls_func_name(enum tls_func f)
{
	return (unsigned int)f < TLSF_NR ? names[f] : "?";
}

/* The functions in the file; false when it has neither SSL_write nor SSL_read. */
static bool resolve(const char *path, struct tls_lib *lib)
{
	struct elf_syms *es;
	bool any = false;

	if (elf_syms__open(path, &es))
		return false;
	for (int i = 0; i < TLSF_NR; i++) {
		uint64_t addr, size;

		lib->off[i] = 0;
		if (elf_syms__find(es, names[i], &addr, &size) ||
		    elf_syms__addr_to_off(es, addr, &lib->off[i]))
			lib->off[i] = 0;
	}
	any = lib->off[TLSF_WRITE] || lib->off[TLSF_READ];
	elf_syms__close(es);
	return any;
}

static bool have(const struct tls_lib *libs, int n, const char *path)
{
	struct stat a, b;

	for (int i = 0; i < n; i++)
		if (!stat(libs[i].path, &a) && !stat(path, &b) && a.st_ino == b.st_ino &&
		    a.st_dev == b.st_dev)
			return true;
	return false;
}

int tlsprobe__find(uint32_t pid, struct tls_lib *libs, int max)
{
	struct proc_map *maps;
	char exe[PATH_MAX + 32];
	size_t nmaps;
	int n = 0;

	if (procmaps__load(pid, &maps, &nmaps) == 0) {
		for (size_t i = 0; i < nmaps && n < max; i++) {
			const char *base = strrchr(maps[i].path, '/');
			char path[PATH_MAX + 32];

			base = base ? base + 1 : maps[i].path;
			if (!maps[i].exec || strncmp(base, "libssl.so", 9))
				continue;
			snprintf(path, sizeof(path), "/proc/%u/root%s", pid, maps[i].path);
			if (have(libs, n, path))
				continue;
			snprintf(libs[n].path, sizeof(libs[n].path), "%s", path);
			libs[n].mapped = true;
			if (resolve(path, &libs[n]))
				n++;
		}
		free(maps);
	}
	/* an executable with OpenSSL inside (Node links it statically and exports it) */
	snprintf(exe, sizeof(exe), "/proc/%u/exe", pid);
	if (n < max && !have(libs, n, exe)) {
		snprintf(libs[n].path, sizeof(libs[n].path), "%s", exe);
		libs[n].mapped = true;
		if (resolve(exe, &libs[n]))
			n++;
	}
	/* not loaded yet: the system's, as the process would load it */
	for (size_t i = 0; i < sizeof(system_libssl) / sizeof(*system_libssl) && n < max; i++) {
		char path[PATH_MAX + 32];

		snprintf(path, sizeof(path), "/proc/%u/root%s", pid, system_libssl[i]);
		if (access(path, R_OK))
			continue;
		if (!have(libs, n, path)) {
			snprintf(libs[n].path, sizeof(libs[n].path), "%s", path);
			libs[n].mapped = false;
			if (resolve(path, &libs[n]))
				n++;
		}
		break;
	}
	return n;
}
