// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Marker options: parsing, and resolution against a live process (this test itself): a probe
 * goes on a function start found in the symbols, nowhere else.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "elfsym.h"
#include "events.h"
#include "markers.h"

__attribute__((noinline, used)) int probe_me(int x)
{
	asm volatile("" ::: "memory");
	return x + 1;
}

static void test_parse(void **state)
{
	struct marker m;

	assert_int_equal(marker__parse("admit=/usr/bin/x:fn+0x10,key=arg2:str", MP_UPROBE, &m), 0);
	assert_int_equal(m.kind, MK_ADMIT);
	assert_string_equal(m.binary, "/usr/bin/x");
	assert_string_equal(m.symbol, "fn");
	assert_int_equal(m.sym_off, 16);
	assert_int_equal(m.key_arg, 2);
	assert_true(m.key_str);

	assert_int_equal(marker__parse("token=libengine.so:prov:tok,key=arg1", MP_USDT, &m), 0);
	assert_string_equal(m.binary, "libengine.so");
	assert_string_equal(m.symbol, "prov");
	assert_string_equal(m.usdt_name, "tok");
	assert_false(m.key_str);

	assert_int_equal(marker__parse("done=bin:f,key=ret", MP_URETPROBE, &m), 0);
	assert_int_equal(m.key_arg, TT_KEYARG_RET);

	/* each of these prints its one-line reason */
	assert_int_equal(marker__parse("admit", MP_UPROBE, &m), -EINVAL);
	assert_int_equal(marker__parse("later=bin:f", MP_UPROBE, &m), -EINVAL);
	assert_int_equal(marker__parse("admit=bin:", MP_UPROBE, &m), -EINVAL);
	assert_int_equal(marker__parse("admit=bin:f+zz", MP_UPROBE, &m), -EINVAL);
	assert_int_equal(marker__parse("admit=bin:f,key=arg7", MP_UPROBE, &m), -EINVAL);
	assert_int_equal(marker__parse("admit=bin:f,key=arg1:int", MP_UPROBE, &m), -EINVAL);
	assert_int_equal(marker__parse("admit=bin:f,key=arg1", MP_URETPROBE, &m), -EINVAL);
	assert_int_equal(marker__parse("admit=bin:prov", MP_USDT, &m), -EINVAL);
}

static void test_resolve_self(void **state)
{
	char exe[4096];
	struct marker m;
	char spec[4200];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	assert_true(n > 0);
	exe[n] = '\0';
	snprintf(spec, sizeof(spec), "token=%s:probe_me", exe);
	assert_int_equal(marker__parse(spec, MP_UPROBE, &m), 0);
	assert_int_equal(marker__resolve(&m, getpid()), 0);
	assert_true(m.file_off > 0);

	/* by base name, as mapped */
	snprintf(spec, sizeof(spec), "token=%s:probe_me+1", strrchr(exe, '/') + 1);
	assert_int_equal(marker__parse(spec, MP_UPROBE, &m), 0);
	assert_int_equal(marker__resolve(&m, getpid()), -EINVAL);	/* mid-function */

	snprintf(spec, sizeof(spec), "token=%s:no_such_function", exe);
	assert_int_equal(marker__parse(spec, MP_UPROBE, &m), 0);
	assert_int_equal(marker__resolve(&m, getpid()), -ENOENT);

	assert_int_equal(marker__parse("token=libnothere.so:f", MP_UPROBE, &m), 0);
	assert_int_equal(marker__resolve(&m, getpid()), -ENOENT);
	assert_int_equal(probe_me(1), 2);
}

static void test_elfsym_lookup(void **state)
{
	struct elf_syms *s;
	uint64_t addr, size, off;

	assert_int_equal(elf_syms__open("/proc/self/exe", &s), 0);
	assert_int_equal(elf_syms__find(s, "probe_me", &addr, &size), 0);
	assert_true(elf_syms__is_func_start(s, addr));
	assert_false(elf_syms__is_func_start(s, addr + 1));
	assert_string_equal(elf_syms__lookup(s, addr + 2, &off), "probe_me");
	assert_int_equal(off, 2);
	elf_syms__close(s);
	assert_int_equal(elf_syms__open("/nonexistent", &s), -ENOENT);
	assert_int_equal(elf_syms__open("/proc/self/status", &s), -ENOEXEC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_resolve_self),
		cmocka_unit_test(test_elfsym_lookup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
