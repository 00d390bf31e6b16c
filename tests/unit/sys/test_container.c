// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Container identity from canned /proc files: every cgroup path shape of container.h, in both
 * /proc/PID/cgroup forms (a v2-only host's "0::/path" and a hybrid host's v1 lines beside it),
 * NSpid, and input that names nothing (or is not a cgroup file at all). No root needed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "container.h"

#define ID "4f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8"
#define ID2 "0000000000000000000000000000000000000000000000000000000000abcdef"
#define UID "0a1b2c3d-4e5f-6789-abcd-ef0123456789"
#define UID_ "0a1b2c3d_4e5f_6789_abcd_ef0123456789"

/* a hybrid host's v1 lines around PATH (as this machine's /proc/PID/cgroup reads) */
#define HYBRID(path) \
	"12:pids:" path "\n11:memory:" path "\n4:cpu,cpuacct:" path "\n" \
	"1:name=systemd:" path "\n0::/\n"

static char proc[64];

static int setup(void **state)
{
	snprintf(proc, sizeof(proc), "/tmp/tt-test-container.XXXXXX");
	return mkdtemp(proc) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", proc);
	return system(cmd);
}

static void put(uint32_t pid, const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u", proc, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%u/%s", proc, pid, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static const char status_ns[] = "Name:\tllama-server\nTgid:\t4242\nPid:\t4242\nPPid:\t4200\n"
				 "NSpid:\t4242\t7\nNSpgid:\t4242\t7\n";

/* the canned cgroup text of pid, read back as the process's identity */
static void check(uint32_t pid, const char *cgroup, const char *id, const char *runtime,
		  const char *pod, const char *path)
{
	struct container_info ci;

	put(pid, "cgroup", cgroup);
	put(pid, "status", status_ns);
	assert_int_equal(container__read_at(proc, pid, &ci), 0);
	assert_string_equal(ci.id, id);
	assert_string_equal(ci.runtime, runtime);
	assert_string_equal(ci.pod_uid, pod);
	assert_string_equal(ci.cgroup, path);
	assert_int_equal(ci.ns_pid, 7);
	assert_int_equal(ci.ns_levels, 2);
}

static void test_docker(void **state)
{
	/* systemd driver, v2 only */
	check(100, "0::/system.slice/docker-" ID ".scope\n", ID, "docker", "",
	      "/system.slice/docker-" ID ".scope");
	/* cgroupfs driver on a hybrid host: the v2 line says "/", the v1 lines name it */
	check(101, HYBRID("/docker/" ID), ID, "docker", "", "/docker/" ID);
	/* docker in docker: the process is the inner one's */
	check(102, "0::/docker/" ID "/docker/" ID2 "\n", ID2, "docker", "",
	      "/docker/" ID "/docker/" ID2);
	/* the systemd driver on a hybrid host */
	check(103, HYBRID("/system.slice/docker-" ID ".scope"), ID, "docker", "",
	      "/system.slice/docker-" ID ".scope");
}

static void test_containerd_crio(void **state)
{
	check(110, "0::/system.slice/cri-containerd-" ID ".scope\n", ID, "containerd", "",
	      "/system.slice/cri-containerd-" ID ".scope");
	check(111, "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
	      ".slice/crio-" ID ".scope\n", ID, "cri-o", UID,
	      "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
	      ".slice/crio-" ID ".scope");
	/* CRI-O's cgroupfs manager: no .scope */
	check(112, "0::/kubepods/burstable/pod" UID "/crio-" ID "\n", ID, "cri-o", UID,
	      "/kubepods/burstable/pod" UID "/crio-" ID);
	/* containerd's "slice:prefix:name" form, as kind and k3s show it */
	check(113, "0::/system.slice/containerd.service/kubepods-burstable-pod" UID_
	      ".slice:cri-containerd:" ID "\n", ID, "containerd", UID,
	      "/system.slice/containerd.service/kubepods-burstable-pod" UID_
	      ".slice:cri-containerd:" ID);
	/* conmon's scope is not the container's */
	check(114, "0::/kubepods.slice/kubepods-pod" UID_ ".slice/crio-conmon-" ID ".scope\n", "",
	      "", UID, "/kubepods.slice/kubepods-pod" UID_ ".slice/crio-conmon-" ID ".scope");
}

static void test_kubernetes(void **state)
{
	const char *bu = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
			 ".slice/cri-containerd-" ID ".scope";
	char text[1024];

	/* systemd slices, each QoS class: the uid's underscores back to dashes */
	snprintf(text, sizeof(text), "0::%s\n", bu);
	check(120, text, ID, "containerd", UID, bu);
	snprintf(text, sizeof(text), HYBRID("%s"), bu, bu, bu, bu);
	check(121, text, ID, "containerd", UID, bu);
	check(122, "0::/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID ".scope\n",
	      ID, "containerd", UID,
	      "/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID ".scope");
	/* cgroupfs: the leaf is a bare id, the runtime not said */
	check(123, HYBRID("/kubepods/besteffort/pod" UID "/" ID), ID, "", UID,
	      "/kubepods/besteffort/pod" UID "/" ID);
	check(124, "0::/kubepods/pod" UID "/" ID "\n", ID, "", UID, "/kubepods/pod" UID "/" ID);
	/* a static pod's uid is a hash without dashes */
	check(125, "0::/kubepods/burstable/pod0123456789abcdef0123456789abcdef/" ID "\n", ID, "",
	      "0123456789abcdef0123456789abcdef",
	      "/kubepods/burstable/pod0123456789abcdef0123456789abcdef/" ID);
	/* the pod's own cgroup (its pause process's parent): a pod, no container */
	check(126, "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
	      ".slice\n", "", "", UID,
	      "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice");
}

static void test_podman(void **state)
{
	/* podman 4.3 here: cgroupfs manager, on the hybrid host's v1 lines and on v2 */
	check(130, HYBRID("/libpod_parent/libpod-" ID), ID, "podman", "",
	      "/libpod_parent/libpod-" ID);
	check(131, "0::/libpod_parent/libpod-" ID "\n", ID, "podman", "",
	      "/libpod_parent/libpod-" ID);
	/* the systemd manager puts the processes in a child "container" cgroup */
	check(132, "0::/machine.slice/libpod-" ID ".scope/container\n", ID, "podman", "",
	      "/machine.slice/libpod-" ID ".scope/container");
	check(133, "0::/machine.slice/libpod-conmon-" ID ".scope\n", "", "", "",
	      "/machine.slice/libpod-conmon-" ID ".scope");
}

static void test_host_and_bad(void **state)
{
	struct container_info ci;

	/* a host process: nothing named, the v2 path kept */
	check(140, "0::/user.slice/user-0.slice/session-1.scope\n", "", "", "",
	      "/user.slice/user-0.slice/session-1.scope");
	/* v1 only (an old host): the first line's path */
	check(141, "3:memory:/system.slice/ssh.service\n1:name=systemd:/system.slice/ssh.service\n",
	      "", "", "", "/system.slice/ssh.service");
	/* not ids: one digit short, upper case, a word where hex must be */
	check(142, "0::/docker/" "4f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f\n",
	      "", "", "", "/docker/4f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f");
	check(143, "0::/system.slice/docker-4F1A2B3C4D5E6F708192A3B4C5D6E7F8091A2B3C4D5E6F708192A3B4"
	      "C5D6E7F8.scope\n", "", "", "",
	      "/system.slice/docker-4F1A2B3C4D5E6F708192A3B4C5D6E7F8091A2B3C4D5E6F708192A3B4C5D6E7F8"
	      ".scope");
	check(144, "0::/kubepods/burstable/podnot-a-uid/" ID "\n", "", "", "",
	      "/kubepods/burstable/podnot-a-uid/" ID);
	/* a bare id outside docker and kubepods is nobody's */
	check(145, "0::/system.slice/" ID "\n", "", "", "", "/system.slice/" ID);

	/* not a cgroup file: -EINVAL, and the NSpid still read */
	put(150, "cgroup", "garbage\n:::\nx:y:z\n");
	put(150, "status", status_ns);
	assert_int_equal(container__read_at(proc, 150, &ci), -EINVAL);
	assert_int_equal(ci.ns_pid, 7);
	put(151, "cgroup", "");
	put(151, "status", status_ns);
	assert_int_equal(container__read_at(proc, 151, &ci), -EINVAL);
	/* no such process */
	assert_int_equal(container__read_at(proc, 152, &ci), -ENOENT);
	assert_string_equal(ci.id, "");
	/* a very long line is cut, not overrun */
	{
		static char big[8192];
		size_t n = snprintf(big, sizeof(big), "0::");

		while (n < sizeof(big) - 80)
			n += snprintf(big + n, sizeof(big) - n, "/aaaaaaaa");
		snprintf(big + n, sizeof(big) - n, "/docker-" ID ".scope\n");
		put(153, "cgroup", big);
		put(153, "status", status_ns);
		assert_int_equal(container__read_at(proc, 153, &ci), 0);
		assert_string_equal(ci.id, ID);
		assert_int_equal(strlen(ci.cgroup), sizeof(ci.cgroup) - 1);
	}
}

static void test_nspid(void **state)
{
	struct container_info ci;

	/* the host's own PID namespace: one field */
	assert_int_equal(container__parse_status("Name:\tx\nNSpid:\t812\nNSpgid:\t812\n", &ci), 0);
	assert_int_equal(ci.ns_pid, 812);
	assert_int_equal(ci.ns_levels, 1);
	/* nested twice: the innermost is last */
	assert_int_equal(container__parse_status("NSpid:\t9000\t45\t1\n", &ci), 0);
	assert_int_equal(ci.ns_pid, 1);
	assert_int_equal(ci.ns_levels, 3);
	/* "NSpid" only at a line's start; a kernel before 4.1 has none */
	assert_int_equal(container__parse_status("Name:\tNSpid:\t5\nPid:\t5\n", &ci), -ENOENT);
	assert_int_equal(ci.ns_pid, 0);
	assert_int_equal(container__parse_status("NSpid:\tx\n", &ci), -EINVAL);
	assert_int_equal(container__parse_status("NSpid:\t99999999999\n", &ci), -EINVAL);
	/* without NSpid, read_at is not failed for it */
	put(160, "cgroup", "0::/\n");
	put(160, "status", "Name:\told\nPid:\t160\n");
	assert_int_equal(container__read_at(proc, 160, &ci), 0);
	assert_int_equal(ci.ns_pid, 0);
	assert_string_equal(ci.cgroup, "/");
}

static void test_self(void **state)
{
	struct container_info ci;

	/* this process, from the real /proc: whatever its cgroup, it parses */
	assert_int_equal(container__read(getpid(), &ci), 0);
	assert_true(ci.ns_levels >= 1);
	assert_true(ci.cgroup[0] == '/');
	if (ci.ns_levels == 1)
		assert_int_equal(ci.ns_pid, getpid());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_docker),
		cmocka_unit_test(test_containerd_crio),
		cmocka_unit_test(test_kubernetes),
		cmocka_unit_test(test_podman),
		cmocka_unit_test(test_host_and_bad),
		cmocka_unit_test(test_nspid),
		cmocka_unit_test(test_self),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
