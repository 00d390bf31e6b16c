// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "elfsym.h"
#include "events.h"
#include "markers.h"
#include "procmaps.h"
#include "util.h"

static const char *const probe_opt[] = {
	[MP_UPROBE] = "--uprobe", [MP_URETPROBE] = "--uretprobe", [MP_USDT] = "--usdt",
};

const char *marker_probe_name(enum marker_probe p)
{
	return p == MP_USDT ? "usdt" : p == MP_URETPROBE ? "uretprobe" : "uprobe";
}

/* One line on stderr: the option as given (quoted, cut), then what is wrong with it. */
static int __attribute__((format(printf, 3, 4))) rerr(const struct marker *m, int err,
						      const char *fmt, ...)
{
	char q[ARG_QUOTE_MAX];
	va_list ap;

	fprintf(stderr, "tokentrace: %s %s: ", probe_opt[m->probe], arg_quote(q, m->arg));
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return err;
}

#define perr(m, ...) rerr(m, -EINVAL, __VA_ARGS__)

static int parse_key(struct marker *m, const char *k)
{
	uint64_t n;

	if (strncmp(k, "key=", 4))
		return perr(m, "unknown setting '%s' (expected key=argN or key=argN:str)", k);
	k += 4;
	if (!strncmp(k, "ret", 3) && (k[3] == '\0' || k[3] == ':')) {
		if (m->probe != MP_URETPROBE)
			return perr(m, "key=ret is only for --uretprobe");
		m->key_arg = TT_KEYARG_RET;
		k += 3;
	} else if (!strncmp(k, "arg", 3) && k[3] >= '1' && k[3] <= '6' &&
		   (k[4] == '\0' || k[4] == ':')) {
		if (m->probe == MP_URETPROBE)
			return perr(m, "arguments are gone at return: use key=ret");
		parse_uint((char[]){ k[3], 0 }, 1, 6, &n);
		m->key_arg = n;
		k += 4;
	} else {
		return perr(m, "bad key '%s' (expected arg1..arg6, or ret for --uretprobe)", k);
	}
	if (!*k)
		return 0;
	if (!strcmp(k, ":str")) {
		m->key_str = true;
		return 0;
	}
	return perr(m, "bad key type '%s' (only :str)", k);
}

int marker__parse(const char *arg, enum marker_probe probe, struct marker *m)
{
	char buf[512], *eq, *comma, *spec, *colon, *plus;
	int k;

	memset(m, 0, sizeof(*m));
	m->probe = probe;
	snprintf(m->arg, sizeof(m->arg), "%s", arg);
	if (strlen(arg) >= sizeof(buf))
		return perr(m, "too long");
	strcpy(buf, arg);
	eq = strchr(buf, '=');
	if (!eq)
		return perr(m, "expected NAME=%s (NAME: admit, first, token or done)",
			    probe == MP_USDT ? "BINARY:PROVIDER:PROBE" : "BINARY:SYMBOL");
	*eq = '\0';
	for (k = 0; k < MK_NR; k++)
		if (!strcmp(buf, marker_kind_name(k)))
			break;
	if (k == MK_NR)
		return perr(m, "unknown marker '%s' (admit, first, token or done)", buf);
	m->kind = k;
	spec = eq + 1;
	comma = strchr(spec, ',');
	if (comma) {
		*comma = '\0';
		if (parse_key(m, comma + 1))
			return -EINVAL;
	}
	/* the last ':' ends BINARY (or PROVIDER); paths with ':' still work */
	colon = strrchr(spec, ':');
	if (!colon || colon == spec || !colon[1])
		return perr(m, "expected %s after NAME=",
			    probe == MP_USDT ? "BINARY:PROVIDER:PROBE" : "BINARY:SYMBOL");
	*colon = '\0';
	if (probe == MP_USDT) {
		char *c2 = strrchr(spec, ':');

		if (!c2 || c2 == spec || !c2[1])
			return perr(m, "expected BINARY:PROVIDER:PROBE");
		*c2 = '\0';
		snprintf(m->usdt_name, sizeof(m->usdt_name), "%s", colon + 1);
		snprintf(m->symbol, sizeof(m->symbol), "%s", c2 + 1);
	} else {
		plus = strchr(colon + 1, '+');
		if (plus) {
			char *end;

			*plus = '\0';
			errno = 0;
			m->sym_off = strtoull(plus + 1, &end, 0);
			if (errno || *end || end == plus + 1)
				return perr(m, "bad offset '%s'", plus + 1);
		}
		snprintf(m->symbol, sizeof(m->symbol), "%s", colon + 1);
	}
	snprintf(m->binary, sizeof(m->binary), "%s", spec);
	return 0;
}

int marker__resolve(struct marker *m, uint32_t pid)
{
	char mapped[PATH_MAX], pidbuf[16];
	struct elf_syms *es;
	uint64_t addr, size;
	int err;

	snprintf(pidbuf, sizeof(pidbuf), "%u", pid);
	err = procmaps__find_binary(pid, m->binary, mapped, sizeof(mapped));
	if (err == -ENOENT)
		return rerr(m, err, "'%s' is not mapped in PID %s (neither its executable nor a "
			    "loaded library)", m->binary, pidbuf);
	if (err == -EEXIST)
		return rerr(m, err, "'%s' names several files mapped in PID %s: give the full path",
			    m->binary, pidbuf);
	if (err)
		return rerr(m, err, "cannot read the mappings of PID %s: %s", pidbuf, strerror(-err));
	if (strstr(mapped, " (deleted)"))
		return rerr(m, -ENOENT, "%s was replaced on disk after PID %s started",
			    mapped, pidbuf);
	/* through the process's root: right even when it runs in another mount namespace */
	snprintf(m->path, sizeof(m->path), "/proc/%u/root%s", pid, mapped);
	err = elf_syms__open(m->path, &es);
	if (err)
		return rerr(m, err, "cannot read %s as ELF: %s", mapped, strerror(-err));
	if (m->probe == MP_USDT) {
		if (!elf_syms__has_usdt(es, m->symbol, m->usdt_name)) {
			char probe[300];

			snprintf(probe, sizeof(probe), "%s:%s", m->symbol, m->usdt_name);
			elf_syms__close(es);
			return rerr(m, -ENOENT, "no USDT probe %s in %s", probe, mapped);
		}
		elf_syms__close(es);
		return 0;
	}
	err = elf_syms__find(es, m->symbol, &addr, &size);
	if (err) {
		bool stripped = elf_syms__stripped(es);

		elf_syms__close(es);
		if (stripped)
			return rerr(m, err, "%s is stripped (no .symtab) and '%s' is not among its "
				    "dynamic symbols: give a binary with symbols, or a USDT probe",
				    mapped, m->symbol);
		return rerr(m, err, "no function '%s' in %s", m->symbol, mapped);
	}
	addr += m->sym_off;
	if (m->sym_off && !elf_syms__is_func_start(es, addr)) {
		char at[160];

		snprintf(at, sizeof(at), "%s+0x%llx", m->symbol, (unsigned long long)m->sym_off);
		elf_syms__close(es);
		return rerr(m, -EINVAL, "%s is not the start of a function: a uprobe there could "
			    "land mid-instruction and corrupt the process (probe %s itself)",
			    at, m->symbol);
	}
	err = elf_syms__addr_to_off(es, addr, &m->file_off);
	elf_syms__close(es);
	if (err)
		return rerr(m, err, "'%s' is not in a loadable segment of %s", m->symbol, mapped);
	return 0;
}
