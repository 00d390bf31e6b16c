// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "procnet.h"

#define INODES_MAX	4096
#define TCP_LISTEN	0x0a

/* socket inodes among the process's descriptors */
static int socket_inodes(uint32_t pid, unsigned long *ino, int max)
{
	char dir[32], link[64], target[64];
	struct dirent *d;
	DIR *dp;
	int n = 0;

	snprintf(dir, sizeof(dir), "/proc/%u/fd", pid);
	dp = opendir(dir);
	if (!dp)
		return -errno;
	while ((d = readdir(dp)) && n < max) {
		ssize_t len;

		if (d->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%.20s", dir, d->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (sscanf(target, "socket:[%lu]", &ino[n]) == 1)
			n++;
	}
	closedir(dp);
	return n;
}

static int scan(const char *file, const unsigned long *ino, int nino, uint16_t *ports, int n,
		int max)
{
	char line[512];
	FILE *f = fopen(file, "re");

	if (!f)
		return n;
	if (!fgets(line, sizeof(line), f)) {	/* header */
		fclose(f);
		return n;
	}
	while (n < max && fgets(line, sizeof(line), f)) {
		unsigned int port, st;
		unsigned long inode;
		char local[64];

		if (sscanf(line, "%*d: %63s %*s %x %*s %*s %*s %*d %*d %lu", local, &st,
			   &inode) != 3 || st != TCP_LISTEN)
			continue;
		if (sscanf(strrchr(local, ':') + 1, "%x", &port) != 1)
			continue;
		for (int i = 0; i < nino; i++) {
			if (ino[i] != inode)
				continue;
			for (int j = 0; j < n; j++)
				if (ports[j] == port)
					goto next;
			ports[n++] = port;
			break;
		}
next:;
	}
	fclose(f);
	return n;
}

int procnet__listen_ports(uint32_t pid, uint16_t *ports, int max)
{
	unsigned long *ino = malloc(INODES_MAX * sizeof(*ino));
	char file[64];
	int nino, n = 0;

	if (!ino)
		return -ENOMEM;
	nino = socket_inodes(pid, ino, INODES_MAX);
	if (nino < 0) {
		free(ino);
		return nino;
	}
	/* the process's own network namespace */
	snprintf(file, sizeof(file), "/proc/%u/net/tcp", pid);
	n = scan(file, ino, nino, ports, n, max);
	snprintf(file, sizeof(file), "/proc/%u/net/tcp6", pid);
	n = scan(file, ino, nino, ports, n, max);
	free(ino);
	return n;
}
