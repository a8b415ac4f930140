/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gm-rawd-ask HELPER ARGV0 IFNAME ETHERTYPE: ask gamma-rawd for sockets the
 * way an attacker can, with any argv[0] (the helper is run with exactly
 * that argv[0] and no other argument) and whatever environment this
 * process has.  Prints the helper's reply; on "ok" also checks that a
 * packet socket came back.  Exit 0: sockets granted; 1: refused; 2: error.
 */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rawd_proto.h"

extern char **environ;

int main(int argc, char **argv)
{
	char reply[RAWD_MSG_MAX + 1], req[RAWD_MSG_MAX];
	union {
		char buf[CMSG_SPACE(sizeof(int) * RAWD_NFDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = reply, .iov_len = RAWD_MSG_MAX};
	struct msghdr msg = {.msg_iov = &iov,
	                     .msg_iovlen = 1,
	                     .msg_control = u.buf,
	                     .msg_controllen = sizeof(u.buf)};
	posix_spawn_file_actions_t fa;
	char *hargv[2];
	int sv[2], dom = -1, fd;
	socklen_t len = sizeof(dom);
	struct cmsghdr *cm;
	pid_t pid;
	ssize_t n;

	if (argc != 5) {
		fprintf(stderr, "usage: gm-rawd-ask HELPER ARGV0 IFNAME ETHERTYPE\n");
		return 2;
	}
	hargv[0] = argv[2];
	hargv[1] = NULL;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) ||
	    posix_spawn_file_actions_init(&fa) || posix_spawn_file_actions_adddup2(&fa, sv[1], 0) ||
	    posix_spawn(&pid, argv[1], &fa, NULL, hargv, environ)) {
		perror("gm-rawd-ask: cannot run the helper");
		return 2;
	}
	close(sv[1]);
	snprintf(req, sizeof(req), RAWD_PROTO_TAG " open %s %s", argv[3], argv[4]);
	if (send(sv[0], req, strlen(req), MSG_NOSIGNAL) < 0) {
		perror("gm-rawd-ask: send");
		return 2;
	}
	/* The helper answers once and exits: no answer means EOF, not a hang. */
	n = recvmsg(sv[0], &msg, MSG_CMSG_CLOEXEC);
	waitpid(pid, NULL, 0);
	if (n <= 0) {
		fprintf(stderr, "gm-rawd-ask: the helper exited without an answer\n");
		return 2;
	}
	reply[n] = 0;
	printf("gm-rawd-ask: %s\n", reply);
	if (strcmp(reply, "ok"))
		return 1;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_type != SCM_RIGHTS) {
		fprintf(stderr, "gm-rawd-ask: 'ok' without descriptors\n");
		return 2;
	}
	memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &len) || dom != AF_PACKET) {
		fprintf(stderr, "gm-rawd-ask: 'ok', but no packet socket\n");
		return 2;
	}
	printf("gm-rawd-ask: granted a packet socket\n");
	return 0;
}
