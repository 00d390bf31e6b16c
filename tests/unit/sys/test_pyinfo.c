// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The offsets against a running CPython 3.11: a child interpreter parks a thread in a known
 * function at a known line (it says which, from its own frame), and pyinfo's probe, its
 * userspace frame walk (the kernel's walk, by process_vm_readv) and pysym's names must find
 * exactly that: function, file and line of every frame, innermost first.
 *
 * Interpreters: TT_PY311 (colon-separated paths), default /usr/bin/python3.11 (Debian 12's
 * python3). TT_PY_OTHER: interpreters of other versions, which must be refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "pyinfo.h"
#include "pysym.h"
#include "sysnr.h"

/*
 * Two threads parked: a worker in Worker.parked_thread() <- Worker.run <- threading's frames,
 * then the main one in parked_main() <- outer() <- <module>. Each says "tid line function" of
 * the line it sleeps on.
 */
static const char script[] =
	"import os, sys, threading, time\n"
	"def say(w, depth):\n"
	"    f = sys._getframe(depth)\n"
	"    tid, line, fn = threading.get_native_id(), f.f_lineno + 1, f.f_code.co_qualname\n"
	"    os.write(w, f'{tid} {line} {fn}\\n'.encode())\n"
	"class Worker(threading.Thread):\n"
	"    def __init__(self, w):\n"
	"        super().__init__(daemon=True)\n"
	"        self.w = w\n"
	"    def run(self):\n"
	"        self.parked_thread()\n"
	"    def parked_thread(self):\n"
	"        say(self.w, 1)\n"
	"        time.sleep(60)\n"
	"def parked_main(w):\n"
	"    Worker(w).start()\n"
	"    time.sleep(0.2)\n"
	"    say(w, 1)\n"
	"    time.sleep(60)\n"
	"def outer(w):\n"
	"    parked_main(w)  # outer's line\n"
	"outer(int(sys.argv[1]))\n";

struct parked {
	uint32_t tid;
	int line;
	char fn[64];
};

struct child {
	pid_t pid;
	char dir[64], path[128];
	struct parked p[2];
};

static bool sleeping(pid_t pid, uint32_t tid)
{
	char fn[96], buf[64] = "";
	FILE *f;

	snprintf(fn, sizeof(fn), "/proc/%d/task/%u/syscall", pid, tid);
	f = fopen(fn, "r");
	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return atoi(buf) == TT_NR_clock_nanosleep || atoi(buf) == TT_NR_nanosleep;
}

/* Start python with the script; 0, or -1 if it would not run. */
static int start(const char *python, struct child *c)
{
	int fds[2], fd;
	char line[256], arg[16];
	FILE *in;

	snprintf(c->dir, sizeof(c->dir), "/tmp/tt-pyinfo.XXXXXX");
	if (!mkdtemp(c->dir))
		return -1;
	snprintf(c->path, sizeof(c->path), "%s/parked_target.py", c->dir);
	fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, script, sizeof(script) - 1) != (ssize_t)sizeof(script) - 1)
		return -1;
	close(fd);
	if (pipe(fds))
		return -1;
	c->pid = fork();
	if (c->pid == 0) {
		close(fds[0]);
		snprintf(arg, sizeof(arg), "%d", fds[1]);
		execl(python, python, "-S", c->path, arg, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	in = fdopen(fds[0], "r");
	for (int i = 0; i < 2; i++) {
		if (!fgets(line, sizeof(line), in) ||
		    sscanf(line, "%u %d %63s", &c->p[i].tid, &c->p[i].line, c->p[i].fn) != 3) {
			fclose(in);
			return -1;
		}
	}
	fclose(in);
	/* each thread is in its sleep, not on the way there */
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < 500 && !sleeping(c->pid, c->p[i].tid); k++)
			usleep(10000);
	return 0;
}

static void stop(struct child *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
	}
	unlink(c->path);
	rmdir(c->dir);
}

static int script_line(const char *needle)
{
	const char *p = strstr(script, needle);
	int line = 1;

	for (const char *q = script; p && q < p; q++)
		line += *q == '\n';
	return p ? line : -1;
}

static void check_interp(const char *python)
{
	struct tt_py_frame fr[TT_PY_DEPTH];
	struct tt_py_proc proc;
	struct pysym *ps;
	struct py_sym sym;
	struct child c = {};
	uint32_t tids[16];
	char why[256], buf[256];
	int n, err;

	if (access(python, X_OK)) {
		printf("  %s: not installed, skipped\n", python);
		return;
	}
	assert_int_equal(start(python, &c), 0);
	err = pyinfo__probe(c.pid, &proc, why, sizeof(why));
	if (err)
		printf("  %s: %s\n", python, why);
	assert_int_equal(err, 0);
	assert_int_equal(proc.version >> 16, 0x030b);
	assert_true(proc.code_type && proc.str_type && proc.bytes_type);

	n = pyinfo__threads(c.pid, &proc, tids, 16);
	assert_int_equal(n, 2);
	assert_true((tids[0] == c.p[0].tid && tids[1] == c.p[1].tid) ||
		    (tids[1] == c.p[0].tid && tids[0] == c.p[1].tid));

	ps = pysym__new(16);
	assert_non_null(ps);
	assert_int_equal(pysym__add_proc(ps, c.pid, &proc), 0);
	for (int i = 0; i < 2; i++) {
		n = pyinfo__walk(c.pid, &proc, c.p[i].tid, fr, TT_PY_DEPTH);
		assert_true(n >= 2);
		assert_int_equal(pysym__lookup(ps, c.pid, fr[0].code, fr[0].lasti, &sym), 0);
		printf("  %s tid %u: %s (%s:%d), %d frames\n", python, c.p[i].tid, sym.name,
		       sym.file, sym.line, n);
		assert_string_equal(sym.name, c.p[i].fn);
		assert_string_equal(sym.file, c.path);
		assert_int_equal(sym.line, c.p[i].line);
		/* every frame of the thread has a name; the entry one is flagged */
		for (int k = 0; k < n; k++)
			assert_int_equal(pysym__lookup(ps, c.pid, fr[k].code, fr[k].lasti, &sym),
					 0);
		assert_true(fr[n - 1].flags & TT_PYFR_ENTRY);
	}
	/* the worker says first (the main thread waits for it), the main one second */
	assert_string_equal(c.p[0].fn, "Worker.parked_thread");
	assert_string_equal(c.p[1].fn, "parked_main");
	/* the main thread: parked_main <- outer <- <module>, on the lines of the calls */
	n = pyinfo__walk(c.pid, &proc, c.p[1].tid, fr, TT_PY_DEPTH);
	pysym__stack(ps, c.pid, fr, n, buf, sizeof(buf));
	printf("  %s\n", buf);
	assert_int_equal(n, 3);
	assert_int_equal(pysym__lookup(ps, c.pid, fr[1].code, fr[1].lasti, &sym), 0);
	assert_string_equal(sym.name, "outer");
	assert_int_equal(sym.line, script_line("parked_main(w)  # outer's line"));
	assert_int_equal(pysym__lookup(ps, c.pid, fr[2].code, fr[2].lasti, &sym), 0);
	assert_string_equal(sym.name, "<module>");
	assert_int_equal(sym.line, script_line("outer(int("));
	/* the second thread goes through threading's own frames, named by their module */
	n = pyinfo__walk(c.pid, &proc, c.p[0].tid, fr, TT_PY_DEPTH);
	assert_true(n >= 3);
	assert_int_equal(pysym__lookup(ps, c.pid, fr[1].code, fr[1].lasti, &sym), 0);
	assert_string_equal(sym.name, "Worker.run");
	pysym__frame(ps, c.pid, fr[2].code, fr[2].lasti, buf, sizeof(buf));
	assert_non_null(strstr(buf, "Thread._bootstrap_inner (threading.py:"));

	/* garbage in, "?" out: not a code object, unmapped, NULL, and an unknown process */
	pysym__frame(ps, c.pid, proc.runtime, 0, buf, sizeof(buf));
	assert_string_equal(buf, "?");
	pysym__frame(ps, c.pid, proc.str_type, 0, buf, sizeof(buf));
	assert_string_equal(buf, "?");
	pysym__frame(ps, c.pid, 0x10, 0, buf, sizeof(buf));
	assert_string_equal(buf, "?");
	pysym__frame(ps, c.pid, 0, 0, buf, sizeof(buf));
	assert_string_equal(buf, "?");
	assert_int_equal(pysym__lookup(ps, 1, fr[0].code, 0, &sym), -ESRCH);
	/* a thread that is not the process's */
	assert_int_equal(pyinfo__walk(c.pid, &proc, 1, fr, TT_PY_DEPTH), -ESRCH);
	pysym__free(ps);
	stop(&c);

	/* gone: a one-line reason, no crash */
	assert_true(pyinfo__probe(c.pid, &proc, why, sizeof(why)) < 0);
	assert_true(strlen(why) > 0 && !strchr(why, '\n'));
}

static void test_live(void **state)
{
	const char *env = getenv("TT_PY311");
	char list[1024], *save = NULL;

	snprintf(list, sizeof(list), "%s", env && *env ? env : "/usr/bin/python3.11");
	for (char *p = strtok_r(list, ":", &save); p; p = strtok_r(NULL, ":", &save))
		check_interp(p);
}

/* Not Python, or another Python: refused in one line, never guessed at. */
static void test_refused(void **state)
{
	const char *env = getenv("TT_PY_OTHER");
	struct tt_py_proc proc;
	char why[256], list[1024], *save = NULL;

	assert_int_equal(pyinfo__probe(getpid(), &proc, why, sizeof(why)), -ENOENT);
	printf("  self: %s\n", why);
	assert_non_null(strstr(why, "not a CPython process"));
	snprintf(list, sizeof(list), "%s", env ? env : "");
	for (char *py = strtok_r(list, ":", &save); py; py = strtok_r(NULL, ":", &save)) {
		pid_t pid = fork();
		int err = -1;

		if (pid == 0) {
			execl(py, py, "-S", "-c", "import time; time.sleep(30)", (char *)NULL);
			_exit(127);
		}
		/* until its interpreter is up and mapped */
		for (int i = 0; i < 100 && err != -ENOTSUP; i++) {
			usleep(20000);
			err = pyinfo__probe(pid, &proc, why, sizeof(why));
		}
		printf("  %s: %s\n", py, why);
		assert_int_equal(err, -ENOTSUP);
		assert_non_null(strstr(why, "only CPython 3.11 is supported"));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_live),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
