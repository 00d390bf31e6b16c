// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The offset table of user/sys/pyinfo.c against the CPython 3.11 headers: tests/tests.mk
 * builds this file with -DTT_PY_HEADERS -DPy_BUILD_CORE and the headers' include folder
 * when they are installed (Debian: libpython3.11-dev; another tree with
 * `make PY311_INC=/path/include/python3.11`), and offsetof() of every field walked must be
 * what the table says for the headers' own version. Without headers, it says so and checks
 * only what needs none.
 */
#ifdef TT_PY_HEADERS
#define Py_BUILD_CORE 1
#include <Python.h>
#include "internal/pycore_runtime.h"
#include "internal/pycore_interp.h"
#include "internal/pycore_frame.h"
#include "internal/pycore_code.h"
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "pyinfo.h"

static void test_versions(void **state)
{
	char buf[32];

	/* 3.11.0 final through 3.11.x; pre-releases and other minors refused */
	assert_non_null(pyinfo__offsets(0x030b00f0));
	assert_non_null(pyinfo__offsets(0x030b02f0));
	assert_non_null(pyinfo__offsets(0x030b0ef0));
	assert_null(pyinfo__offsets(0x030b00c1));	/* 3.11.0rc1 */
	assert_null(pyinfo__offsets(0x030a0df0));	/* 3.10.13 */
	assert_null(pyinfo__offsets(0x030c01f0));	/* 3.12.1 */
	assert_null(pyinfo__offsets(0x030d00f0));
	pyinfo__version_str(0x030b02f0, buf, sizeof(buf));
	assert_string_equal(buf, "3.11.2");
	pyinfo__version_str(0x030c00c1, buf, sizeof(buf));
	assert_string_equal(buf, "3.12.0rc1");
}

#ifdef TT_PY_HEADERS
#define EQ(field, expr) do { \
	printf("  %-22s %4u  offsetof %4zu\n", #field, o->field, (size_t)(expr)); \
	assert_int_equal(o->field, (expr)); \
} while (0)

static void test_headers(void **state)
{
	const struct tt_py_offsets *o = pyinfo__offsets(PY_VERSION_HEX);

	printf("  headers: CPython %s\n", PY_VERSION);
	assert_non_null(o);
	EQ(rt_interp_head, offsetof(_PyRuntimeState, interpreters.head));
	EQ(rt_tstate_current, offsetof(_PyRuntimeState, gilstate.tstate_current));
	EQ(rt_gil, offsetof(_PyRuntimeState, ceval.gil));
	EQ(gil_last_holder, offsetof(struct _gil_runtime_state, last_holder));
	EQ(gil_locked, offsetof(struct _gil_runtime_state, locked));
	EQ(gil_cond, offsetof(struct _gil_runtime_state, cond));
	EQ(gil_mutex, offsetof(struct _gil_runtime_state, mutex));
	EQ(gil_switch_cond, offsetof(struct _gil_runtime_state, switch_cond));
	EQ(gil_switch_mutex, offsetof(struct _gil_runtime_state, switch_mutex));
	EQ(cond_size, sizeof(PyCOND_T));
	EQ(mutex_size, sizeof(PyMUTEX_T));
	EQ(interp_next, offsetof(PyInterpreterState, next));
	EQ(interp_threads_head, offsetof(PyInterpreterState, threads.head));
	EQ(ts_next, offsetof(PyThreadState, next));
	EQ(ts_interp, offsetof(PyThreadState, interp));
	EQ(ts_cframe, offsetof(PyThreadState, cframe));
	EQ(ts_native_tid, offsetof(PyThreadState, native_thread_id));
	EQ(cframe_current, offsetof(_PyCFrame, current_frame));
	EQ(fr_code, offsetof(_PyInterpreterFrame, f_code));
	EQ(fr_previous, offsetof(_PyInterpreterFrame, previous));
	EQ(fr_prev_instr, offsetof(_PyInterpreterFrame, prev_instr));
	EQ(fr_is_entry, offsetof(_PyInterpreterFrame, is_entry));
	EQ(fr_owner, offsetof(_PyInterpreterFrame, owner));
	EQ(co_firstlineno, offsetof(PyCodeObject, co_firstlineno));
	EQ(co_filename, offsetof(PyCodeObject, co_filename));
	EQ(co_name, offsetof(PyCodeObject, co_name));
	EQ(co_qualname, offsetof(PyCodeObject, co_qualname));
	EQ(co_linetable, offsetof(PyCodeObject, co_linetable));
	EQ(co_code_adaptive, offsetof(PyCodeObject, co_code_adaptive));
	EQ(ob_type, offsetof(PyObject, ob_type));
	EQ(str_length, offsetof(PyASCIIObject, length));
	EQ(str_state, offsetof(PyASCIIObject, state));
	EQ(str_ascii_data, sizeof(PyASCIIObject));
	EQ(str_compact_data, sizeof(PyCompactUnicodeObject));
	EQ(bytes_size, offsetof(PyVarObject, ob_size));
	EQ(bytes_data, offsetof(PyBytesObject, ob_sval));
	/* the frame fields the kernel reads in one chunk from f_code are inside it */
	assert_true(offsetof(_PyInterpreterFrame, owner) < (size_t)o->fr_code + TT_PY_FRAME_CHUNK);
	/* the str state bits pysym reads: compact (5), ascii (6), ready (7), kind (2-4) */
	{
		PyASCIIObject a;
		uint32_t bits;

		memset(&a, 0, sizeof(a));
		a.state.compact = 1;
		memcpy(&bits, &a.state, sizeof(bits));
		assert_int_equal(bits, 1 << 5);
		memset(&a, 0, sizeof(a));
		a.state.ascii = 1;
		memcpy(&bits, &a.state, sizeof(bits));
		assert_int_equal(bits, 1 << 6);
		memset(&a, 0, sizeof(a));
		a.state.ready = 1;
		memcpy(&bits, &a.state, sizeof(bits));
		assert_int_equal(bits, 1 << 7);
		memset(&a, 0, sizeof(a));
		a.state.kind = 4;
		memcpy(&bits, &a.state, sizeof(bits));
		assert_int_equal(bits, 4 << 2);
	}
	/* the location table kinds pysym decodes */
	assert_int_equal(PY_CODE_LOCATION_INFO_ONE_LINE0, 10);
	assert_int_equal(PY_CODE_LOCATION_INFO_NO_COLUMNS, 13);
	assert_int_equal(PY_CODE_LOCATION_INFO_LONG, 14);
	assert_int_equal(PY_CODE_LOCATION_INFO_NONE, 15);
}
#else
static void test_headers(void **state)
{
	printf("  CPython 3.11 headers not installed (libpython3.11-dev): offsets not checked\n");
	skip();
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_headers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
