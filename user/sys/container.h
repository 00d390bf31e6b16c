/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which container a process is in, as its runtime and orchestrator name it: the container id
 * and runtime from the cgroup path (/proc/PID/cgroup), the Kubernetes pod uid from a kubepods
 * path, and the process's PID inside its PID namespace (NSpid in /proc/PID/status).
 *
 * Cgroup path shapes read (systemd slices and scopes, and the cgroupfs drivers):
 *   docker       /system.slice/docker-<id>.scope              /docker/<id>
 *   containerd   .../cri-containerd-<id>.scope
 *   cri-o        .../crio-<id>.scope                           .../crio-<id>
 *   podman       .../libpod-<id>.scope                         /libpod_parent/libpod-<id>
 *   kubernetes   /kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid>.slice/<leaf>
 *                (the uid's dashes written as underscores; the leaf one of the above)
 *                /kubepods/<qos>/pod<uid>/<id>                 /kubepods/pod<uid>/<id>
 * An <id> is 64 lowercase hex digits. Conmon's own scopes (libpod-conmon-, crio-conmon-) are
 * not a container. Where several containers nest (a runtime inside a container), the deepest
 * is the process's.
 */
#ifndef TT_CONTAINER_H
#define TT_CONTAINER_H

#include <limits.h>
#include <stdint.h>

#define CONTAINER_ID_LEN	64
#define CONTAINER_POD_UID_LEN	36	/* 8-4-4-4-12, or a static pod's 32 hex digits */

struct container_info {
	char id[CONTAINER_ID_LEN + 1];		/* "" when no container was found */
	char runtime[16];			/* "docker", "containerd", "cri-o", "podman"; ""
						 * when unknown (a cgroupfs kubepods leaf) */
	char pod_uid[CONTAINER_POD_UID_LEN + 1];/* with dashes; "" outside Kubernetes */
	char cgroup[PATH_MAX];			/* the cgroup path these were read from; else the
						 * v2 path, else the first */
	uint32_t ns_pid;	/* the PID in the process's own PID namespace; 0 if unknown */
	uint32_t ns_levels;	/* PID namespaces it is in (NSpid's fields): 1 = the reader's */
};

/*
 * Parse /proc/PID/cgroup text (both forms: "0::/path" and "N:controllers:/path") into ci's
 * id, runtime, pod_uid and cgroup. The v2 line is read first, then the v1 lines in order; the
 * first that names a container (else a pod) is kept. 0, or -EINVAL if no line parses.
 */
int container__parse_cgroup(const char *text, struct container_info *ci);

/* Parse /proc/PID/status text: NSpid into ns_pid and ns_levels. 0, or -ENOENT without NSpid. */
int container__parse_status(const char *text, struct container_info *ci);

/*
 * All of it for pid, from the proc filesystem at proc ("/proc"; a test gives a folder of
 * canned files laid out as PID/cgroup and PID/status). ci is zeroed first. 0, or -errno
 * (-ENOENT: no such process) with ci holding whatever could be read.
 */
int container__read_at(const char *proc, uint32_t pid, struct container_info *ci);

/* container__read_at("/proc", ...) */
int container__read(uint32_t pid, struct container_info *ci);

#endif /* TT_CONTAINER_H */
