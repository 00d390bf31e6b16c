// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pysym's decoder of 3.11 location tables against CPython's own: a CPython 3.11 (TT_PY311's
 * first path, default /usr/bin/python3.11) prints, for every code object of a few standard
 * modules, co_firstlineno, co_linetable and what co_lines() says each instruction range's
 * line is; pysym__addr2line() must say the same for every code unit. And garbage tables never
 * read past their end. File names are shortened the way stall lines show them.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "pysym.h"

static const char dump[] =
	"import importlib, sys, types\n"
	"def walk(co):\n"
	"    yield co\n"
	"    for c in co.co_consts:\n"
	"        if isinstance(c, types.CodeType):\n"
	"            yield from walk(c)\n"
	"mods = ('json.decoder', 'asyncio.base_events', 'threading', 'argparse', 'dataclasses')\n"
	"for m in mods:\n"
	"    importlib.import_module(m)\n"
	"    for co in walk(sys.modules[m].__loader__.get_code(m)):\n"
	"        r = ';'.join(f'{s},{e},{-1 if l is None else l}' for s, e, l in co.co_lines())\n"
	"        print(co.co_firstlineno, co.co_linetable.hex() or '-', r)\n";

static size_t unhex(const char *h, uint8_t *out)
{
	size_t n = 0;

	if (!strcmp(h, "-"))
		return 0;
	for (; h[0] && h[1]; h += 2) {
		unsigned int b;

		if (sscanf(h, "%2x", &b) != 1)
			break;
		out[n++] = b;
	}
	return n;
}

static const char *python311(void)
{
	static char first[512];
	const char *env = getenv("TT_PY311");

	snprintf(first, sizeof(first), "%s", env && *env ? env : "/usr/bin/python3.11");
	first[strcspn(first, ":")] = '\0';
	return first;
}

static void test_against_cpython(void **state)
{
	const char *py = python311();
	char cmd[1024], *line = NULL;
	size_t cap = 0, codes = 0, units = 0;
	FILE *f;

	if (access(py, X_OK)) {
		printf("  %s not installed: location tables not compared\n", py);
		skip();
	}
	snprintf(cmd, sizeof(cmd), "%s -S -c \"$TT_DUMP\"", py);
	setenv("TT_DUMP", dump, 1);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (getline(&line, &cap, f) > 0) {
		char *hex = strchr(line, ' '), *ranges, *save = NULL;
		int first = atoi(line), last_end = 0;
		uint8_t *tab;
		size_t len;

		assert_non_null(hex);
		ranges = strchr(++hex, ' ');
		assert_non_null(ranges);
		*ranges++ = '\0';
		tab = malloc(strlen(hex) / 2 + 1);
		assert_non_null(tab);
		len = unhex(hex, tab);
		for (char *r = strtok_r(ranges, ";\n", &save); r;
		     r = strtok_r(NULL, ";\n", &save)) {
			int s, e, l;

			assert_int_equal(sscanf(r, "%d,%d,%d", &s, &e, &l), 3);
			for (int off = s; off < e; off += 2) {
				int got = pysym__addr2line(tab, len, first, off / 2);

				if (got != l)
					printf("  first %d offset %d: %d, CPython says %d\n",
					       first, off, got, l);
				assert_int_equal(got, l);
				units++;
			}
			last_end = e;
		}
		/* before the first instruction and past the last */
		assert_int_equal(pysym__addr2line(tab, len, first, -1), first);
		assert_int_equal(pysym__addr2line(tab, len, first, last_end / 2), -1);
		free(tab);
		codes++;
	}
	free(line);
	assert_int_equal(pclose(f), 0);
	printf("  %zu code objects, %zu code units: same lines as CPython's co_lines()\n", codes,
	       units);
	assert_true(codes > 100);
}

/* Every byte pattern, cut anywhere: bounded reads, no line from before the first. */
static void test_garbage_tables(void **state)
{
	uint8_t tab[64];
	unsigned int seed = 1;

	for (int round = 0; round < 20000; round++) {
		size_t len = rand_r(&seed) % sizeof(tab);
		uint8_t *heap;

		for (size_t i = 0; i < len; i++)
			tab[i] = rand_r(&seed);
		/* a copy exactly as long as the table: valgrind or ASan would see an overread */
		heap = malloc(len ? len : 1);
		memcpy(heap, tab, len);
		for (int lasti = -1; lasti < 300; lasti += 7)
			(void)pysym__addr2line(heap, len, 10, lasti);
		free(heap);
	}
	assert_int_equal(pysym__addr2line(NULL, 0, 7, 0), -1);
	/* one entry: one-line form, line delta 1, two code units (0xd8 | 1) */
	{
		const uint8_t one[] = { 0x80 | (11 << 3) | 1, 0, 0 };

		assert_int_equal(pysym__addr2line(one, sizeof(one), 41, 0), 42);
		assert_int_equal(pysym__addr2line(one, sizeof(one), 41, 1), 42);
		assert_int_equal(pysym__addr2line(one, sizeof(one), 41, 2), -1);
	}
}

static void test_short_file(void **state)
{
	assert_string_equal(pysym__short_file("/usr/lib/python3.11/asyncio/events.py"),
			    "asyncio/events.py");
	assert_string_equal(pysym__short_file("/usr/lib/python3/dist-packages/uvicorn/main.py"),
			    "uvicorn/main.py");
	assert_string_equal(pysym__short_file(
		"/srv/venv/lib/python3.11/site-packages/vllm/engine/llm_engine.py"),
		"vllm/engine/llm_engine.py");
	assert_string_equal(pysym__short_file("/srv/app/server.py"), "server.py");
	assert_string_equal(pysym__short_file("<frozen importlib._bootstrap>"),
			    "<frozen importlib._bootstrap>");
	assert_string_equal(pysym__short_file("/"), "/");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_against_cpython),
		cmocka_unit_test(test_garbage_tables),
		cmocka_unit_test(test_short_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
