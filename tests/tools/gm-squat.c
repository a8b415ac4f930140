/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gm-squat ETHERTYPE IFINDEX FIRST LAST [PORT]: what a hostile local user
 * can do to gamma's port reservations, done as whoever runs it:
 *   - bind the abstract UNIX names @gamma:ETHERTYPE:IFINDEX:FIRST..LAST, the
 *     names the provider reserved ports with until aa0bd03 (any user can);
 *   - reserve PORT the way the provider now does (among this user's ports).
 * Prints what it holds and "gm-squat: ready", then holds it all until
 * killed.  Each name takes a descriptor: to hold all 65535
 * under a smaller RLIMIT_NOFILE, run several with disjoint ranges.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "gm_link.h"

int main(int argc, char **argv)
{
	unsigned ethertype, first, last, names = 0;
	uint16_t got = 0;
	int ifindex;

	if (argc < 5 || argc > 6) {
		fprintf(stderr, "usage: gm-squat ETHERTYPE IFINDEX FIRST LAST [PORT]\n");
		return 2;
	}
	ethertype = (unsigned)strtoul(argv[1], NULL, 0);
	ifindex = atoi(argv[2]);
	first = (unsigned)atoi(argv[3]);
	last = (unsigned)atoi(argv[4]);
	for (unsigned p = first; p <= last && p <= 65535; p++) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		int len;

		if (fd < 0) {
			perror("gm-squat: socket");
			return 2;
		}
		len = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "gamma:%04x:%d:%u",
		               ethertype, ifindex, p);
		if (!bind(fd, (struct sockaddr *)&sa,
		          (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len)))
			names++;
		else
			close(fd);
	}
	printf("gm-squat: holding %u abstract names (%u..%u)\n", names, first, last);
	if (argc == 6) {
		int port = atoi(argv[5]);
		int rc = gm_portres_take((uint16_t)ethertype, ifindex, (uint16_t)port, &got,
		                         &(struct gm_log){gm_log_stderr, "gm-squat"});

		printf("gm-squat: reserving port %d: %s\n", port,
		       rc < 0 ? fi_strerror(-rc) : "held");
	}
	printf("gm-squat: ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
