// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * util.c's safety pieces: the terminal escaping of untrusted strings, the quoting of user input
 * in errors, query strings out of paths, and safe_create(), the one way tokentrace opens a file
 * to write (no symlink followed, nobody else's file reused, 0600 whatever was there).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util.h"

static void test_esc_term(void **state)
{
	char out[128];
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "/v1/chat/completions", "/v1/chat/completions" },
		{ "\x1b[2J\x1b]0;owned\x07", "\\x1b[2J\\x1b]0;owned\\x07" },	/* 7-bit CSI, OSC */
		{ "a\x9b" "31mb", "a\\x9b31mb" },		/* 8-bit CSI: not UTF-8 */
		{ "a\xc2\x9b" "31mb", "a\\u009b31mb" },	/* U+009B, CSI, as UTF-8 */
		{ "\xc2\x85\xc2\x9d", "\\u0085\\u009d" },	/* NEL, OSC */
		{ "\r\n\t\x7f", "\\x0d\\x0a\\x09\\x7f" },
		{ "back\\slash", "back\\\\slash" },		/* so an escape cannot be faked */
		{ "\xe2\x80\xae" "fdp.exe", "\\u202efdp.exe" },	/* bidi override */
		{ "\xe2\x80\xa8", "\\u2028" },			/* line separator */
		{ "\xc0\xaf\xed\xa0\x80\xf8", "\\xc0\\xaf\\xed\\xa0\\x80\\xf8" },
		{ "\xe2\x82", "\\xe2\\x82" },			/* cut sequence */
		{ "caf\xc3\xa9 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xf0\x9f\x98\x80" },
		/* TAG characters hide ASCII in plain sight: past the BMP, all eight digits */
		{ "ok\xf3\xa0\x81\x81\xf3\xa0\x81\xbf", "ok\\U000e0041\\U000e007f" },
		{ "\xf3\xa0\x80\x80\xf3\xa0\x81\xba", "\\U000e0000\\U000e007a" },
		/* zero-width space, joiner; word joiner, invisible plus; BOM; soft hyphen */
		{ "a\xe2\x80\x8b\xe2\x80\x8d" "b", "a\\u200b\\u200db" },
		{ "\xe2\x81\xa0\xe2\x81\xa4\xef\xbb\xbf\xc2\xad", "\\u2060\\u2064\\ufeff\\u00ad" },
		/* a variation selector, a Hangul filler, an interlinear annotation anchor */
		{ "\xe2\x9d\xa4\xef\xb8\x8f\xe3\x85\xa4\xef\xbf\xb9",
		  "\xe2\x9d\xa4\\ufe0f\\u3164\\ufff9" },
		/* visible neighbours stay: no-break space, ZWSP's neighbours, a CJK character */
		{ "\xc2\xa0\xe2\x80\x8a\xe2\x80\x90\xe4\xb8\x80",
		  "\xc2\xa0\xe2\x80\x8a\xe2\x80\x90\xe4\xb8\x80" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		assert_false(esc_term(out, sizeof(out), cases[i].in, strlen(cases[i].in)));
		if (strcmp(out, cases[i].out))
			fail_msg("case %zu: '%s', expected '%s'", i, out, cases[i].out);
	}
	/* n bounds the input, a NUL ends it early */
	assert_false(esc_term(out, sizeof(out), "/p?key=1", 2));
	assert_string_equal(out, "/p");
	assert_false(esc_term(out, sizeof(out), "ab\0cd", 5));
	assert_string_equal(out, "ab");
	/* a cut never splits an escape or a character, and says so */
	assert_true(esc_term(out, 6, "ab\x01", 3));
	assert_string_equal(out, "ab");
	assert_true(esc_term(out, 4, "a\xc3\xa9\xc3\xa9", 5));
	assert_string_equal(out, "a\xc3\xa9");
	assert_true(esc_term(out, 1, "x", 1));
	assert_string_equal(out, "");
}

/* The invisible set's edges: Default_Ignorable_Code_Point and the annotation marks. */
static void test_invisible(void **state)
{
	static const uint32_t in[] = {
		0xad, 0x34f, 0x61c, 0x115f, 0x1160, 0x17b4, 0x180b, 0x180f, 0x200b, 0x200f, 0x202a,
		0x2060, 0x206f, 0x3164, 0xfe00, 0xfe0f, 0xfeff, 0xffa0, 0xfff0, 0xfffb, 0x1bca0,
		0x1bca3, 0x1d173, 0x1d17a, 0xe0000, 0xe0001, 0xe007f, 0xe0100, 0xe01ef, 0xe0fff,
	};
	static const uint32_t out[] = {
		'a', 0xa0, 0xac, 0xae, 0x34e, 0x350, 0x200a, 0x2010, 0x2027, 0x2030, 0x205f, 0x2070,
		0xfdff, 0xfe10, 0xfefe, 0xff00, 0xfffc, 0xfffd, 0x1f600, 0xdffff, 0xe1000, 0x10ffff,
	};

	for (size_t i = 0; i < ARRAY_SIZE(in); i++)
		if (!cp_is_invisible(in[i]))
			fail_msg("U+%04X is invisible", (unsigned int)in[i]);
	for (size_t i = 0; i < ARRAY_SIZE(out); i++)
		if (cp_is_invisible(out[i]))
			fail_msg("U+%04X is not invisible", (unsigned int)out[i]);
}

static void test_arg_quote(void **state)
{
	char q[ARG_QUOTE_MAX];
	size_t big = 100000;
	char *s = malloc(big + 1);

	assert_non_null(s);
	memset(s, 'a', big);
	s[big] = '\0';
	arg_quote(q, s);
	assert_true(strlen(q) < ARG_QUOTE_MAX);
	assert_string_equal(q + strlen(q) - 3, "...");
	assert_string_equal(arg_quote(q, "run.ttr"), "run.ttr");
	assert_string_equal(arg_quote(q, "x\x1b[2J"), "x\\x1b[2J");
	free(s);
}

static void test_path_shown(void **state)
{
	const char *p = "/v1/chat/completions?api_key=SECRET#frag";

	assert_int_equal(path_shown_len(p, false), strlen("/v1/chat/completions"));
	assert_int_equal(path_shown_len(p, true), strlen(p));
	assert_int_equal(path_shown_len("/x#y?z", false), 2);
	assert_int_equal(path_shown_len("", false), 0);
}

/* ------------------------------------------------------------------ safe_create */

static char dir[64];

static int setup(void **state)
{
	strcpy(dir, "/tmp/tt-util.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) ? -1 : 0;
}

static const char *at(const char *name)
{
	static char buf[4][128];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

static void put(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	fchmod(fd, mode);
	close(fd);
}

static void assert_content(const char *path, const char *text)
{
	char buf[256] = "";
	int fd = open(path, O_RDONLY);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
	assert_string_equal(buf, text);
}

static void assert_ours_0600(int fd, const char *path)
{
	struct stat a, b;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(lstat(path, &b), 0);
	assert_true(S_ISREG(b.st_mode));
	assert_int_equal(a.st_ino, b.st_ino);		/* the path names the file written */
	assert_int_equal(b.st_mode & 07777, 0600);
	assert_int_equal(b.st_uid, geteuid());
	assert_int_equal(b.st_size, 0);
}

static void test_new_file(void **state)
{
	char why[256];
	mode_t old = umask(0);
	int fd = safe_create(at("new"), 0, why, sizeof(why));

	umask(old);
	assert_ours_0600(fd, at("new"));
	close(fd);
	/* a umask that takes the owner's write bit too: still 0600 */
	old = umask(0277);
	fd = safe_create(at("new2"), 0, why, sizeof(why));
	umask(old);
	assert_ours_0600(fd, at("new2"));
	close(fd);
	assert_int_equal(safe_create(at("none/x"), 0, why, sizeof(why)), -ENOENT);
	assert_string_equal(why, "No such file or directory");
}

/* One's own file, world-readable and hard-linked elsewhere: replaced, the other link intact. */
static void test_own_file_replaced(void **state)
{
	char why[256];
	struct stat st;
	int fd;

	put(at("own"), "old secret", 0644);
	assert_int_equal(link(at("own"), at("other-link")), 0);
	fd = safe_create(at("own"), 0, why, sizeof(why));
	assert_ours_0600(fd, at("own"));
	close(fd);
	assert_content(at("other-link"), "old secret");
	assert_int_equal(stat(at("other-link"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(st.st_nlink, 1);
}

/* A planted symlink is never followed: refused, or with force the link itself is replaced. */
static void test_symlink(void **state)
{
	char why[256];
	struct stat st;
	int fd;

	put(at("victim"), "root only", 0600);
	assert_int_equal(symlink(at("victim"), at("link")), 0);
	assert_int_equal(safe_create(at("link"), 0, why, sizeof(why)), -ELOOP);
	assert_non_null(strstr(why, "symbolic link"));
	assert_non_null(strstr(why, "--force"));
	assert_content(at("victim"), "root only");
	assert_int_equal(lstat(at("link"), &st), 0);
	assert_true(S_ISLNK(st.st_mode));

	/* dangling: following it would create a file where the link points */
	assert_int_equal(symlink(at("made-by-link"), at("dangling")), 0);
	assert_int_equal(safe_create(at("dangling"), 0, why, sizeof(why)), -ELOOP);
	assert_int_equal(access(at("made-by-link"), F_OK), -1);

	fd = safe_create(at("link"), SAFE_FORCE, why, sizeof(why));
	assert_ours_0600(fd, at("link"));
	close(fd);
	assert_content(at("victim"), "root only");
}

static void test_not_files(void **state)
{
	char why[256];
	struct stat st;
	int fd, rd;

	assert_int_equal(mkdir(at("d"), 0700), 0);
	assert_int_equal(safe_create(at("d"), 0, why, sizeof(why)), -EISDIR);
	/* a character device is written as it is, its mode left alone */
	fd = safe_create("/dev/null", 0, why, sizeof(why));
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
	assert_int_equal(stat("/dev/null", &st), 0);
	assert_int_equal(st.st_mode & 0666, 0666);
	/* one's own FIFO (with a reader, or the open would wait for one) */
	assert_int_equal(mkfifo(at("fifo"), 0644), 0);
	rd = open(at("fifo"), O_RDONLY | O_NONBLOCK);
	assert_true(rd >= 0);
	fd = safe_create(at("fifo"), 0, why, sizeof(why));
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	close(fd);
	close(rd);
}

/* As root: a file or FIFO planted by another user is neither reused nor followed. */
static void test_others_file(void **state)
{
	const uid_t nobody = 65534;
	char why[256];
	struct stat st;
	int fd, old, rd;

	if (geteuid() != 0)
		skip();
	put(at("theirs"), "", 0644);
	assert_int_equal(chown(at("theirs"), nobody, nobody), 0);
	/* what the planter holds open: it must not see what root writes */
	old = open(at("theirs"), O_RDONLY);
	assert_true(old >= 0);
	assert_int_equal(safe_create(at("theirs"), 0, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "belongs to uid 65534 (mode 0644)"));
	fd = safe_create(at("theirs"), SAFE_FORCE, why, sizeof(why));
	assert_ours_0600(fd, at("theirs"));
	assert_int_equal(write(fd, "prompt", 6), 6);
	close(fd);
	assert_int_equal(fstat(old, &st), 0);
	assert_int_equal(st.st_uid, nobody);
	assert_int_equal(st.st_size, 0);
	close(old);

	assert_int_equal(mkfifo(at("their-fifo"), 0666), 0);
	assert_int_equal(chown(at("their-fifo"), nobody, nobody), 0);
	rd = open(at("their-fifo"), O_RDONLY | O_NONBLOCK);
	assert_true(rd >= 0);
	assert_int_equal(safe_create(at("their-fifo"), 0, why, sizeof(why)), -EPERM);
	close(rd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_esc_term),
		cmocka_unit_test(test_invisible),
		cmocka_unit_test(test_arg_quote),
		cmocka_unit_test(test_path_shown),
		cmocka_unit_test_setup_teardown(test_new_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_file_replaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_others_file, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
