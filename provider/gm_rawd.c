/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gamma-rawd client (see gm_rawd.h and rawd/README.md).
 *
 * posix_spawn, not fork: MPI processes are multi-threaded and may have
 * gigabytes mapped.  The child gets the socket as standard input; the
 * socketpair is SOCK_SEQPACKET so the one reply arrives whole, with its
 * descriptors.  A helper that does not answer within RAWD_TIMEOUT_MS is
 * killed, so a broken installation is an error, never a hang.
 */
#define _GNU_SOURCE
#include "gm_rawd.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define RAWD_TIMEOUT_MS 10000

extern char **environ;

static int spawn(const char *path, int child_sock, pid_t *pid, char *err, size_t errlen)
{
	posix_spawn_file_actions_t fa;
	char *argv[] = {(char *)path, NULL};
	int rc;

	if (posix_spawn_file_actions_init(&fa))
		return -1;
	rc = posix_spawn_file_actions_adddup2(&fa, child_sock, 0);
	if (!rc)
		rc = posix_spawn(pid, path, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc) {
		snprintf(err, errlen, "cannot run the helper %s: %s", path, strerror(rc));
		return -1;
	}
	return 0;
}

/* One reply: text, and on "ok" exactly RAWD_NFDS descriptors. */
static int receive(int sock, int fds[RAWD_NFDS], char *err, size_t errlen)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * RAWD_NFDS)];
		struct cmsghdr align;
	} u;
	char text[RAWD_MSG_MAX + 1];
	struct iovec iov = {.iov_base = text, .iov_len = RAWD_MSG_MAX};
	struct msghdr msg = {.msg_iov = &iov,
	                     .msg_iovlen = 1,
	                     .msg_control = u.buf,
	                     .msg_controllen = sizeof(u.buf)};
	struct pollfd pfd = {.fd = sock, .events = POLLIN};
	struct cmsghdr *cm;
	unsigned got = 0;
	ssize_t n;

	if (poll(&pfd, 1, RAWD_TIMEOUT_MS) <= 0) {
		snprintf(err, errlen, "the helper did not answer within %d ms", RAWD_TIMEOUT_MS);
		return -1;
	}
	n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	if (n <= 0) {
		snprintf(err, errlen, "the helper exited without an answer");
		return -1;
	}
	text[n] = 0;
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		unsigned k = (unsigned)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));

		for (unsigned i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (got < RAWD_NFDS)
				fds[got++] = fd;
			else
				close(fd);
		}
	}
	if (!strcmp(text, "ok") && got == RAWD_NFDS && !(msg.msg_flags & MSG_CTRUNC))
		return 0;
	for (unsigned i = 0; i < got; i++)
		close(fds[i]);
	if (!strncmp(text, "error: ", 7))
		snprintf(err, errlen, "%s", text + 7);
	else
		snprintf(err, errlen, "unexpected answer from the helper: %.80s", text);
	return -1;
}

/* The helper must hand over packet sockets, nothing else. */
static int check_fds(const int fds[RAWD_NFDS], char *err, size_t errlen)
{
	for (int i = 0; i < RAWD_NFDS; i++) {
		int dom = -1;
		socklen_t len = sizeof(dom);

		if (getsockopt(fds[i], SOL_SOCKET, SO_DOMAIN, &dom, &len) < 0 || dom != AF_PACKET) {
			snprintf(err, errlen,
			         "the helper passed a descriptor that is not a packet "
			         "socket");
			return -1;
		}
	}
	return 0;
}

int gm_rawd_open(const char *path, const char *ifname, uint16_t ethertype, int fds[RAWD_NFDS],
                 char *err, size_t errlen)
{
	char req[RAWD_MSG_MAX];
	int sv[2], rc = -1;
	pid_t pid = -1;

	if (!path || !*path) {
		snprintf(err, errlen, "the gamma-rawd helper is disabled (FI_GAMMA_RAWD=none)");
		return -1;
	}
	if (access(path, X_OK)) {
		snprintf(err, errlen, "helper %s: %s", path, strerror(errno));
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		return -1;
	}
	if (spawn(path, sv[1], &pid, err, errlen))
		goto out;
	close(sv[1]);
	sv[1] = -1;
	snprintf(req, sizeof(req), RAWD_PROTO_TAG " open %s 0x%04x", ifname, ethertype);
	if (send(sv[0], req, strlen(req), MSG_NOSIGNAL) < 0) {
		snprintf(err, errlen, "helper %s: %s", path, strerror(errno));
		goto out;
	}
	rc = receive(sv[0], fds, err, errlen);
	if (!rc && check_fds(fds, err, errlen)) {
		for (int i = 0; i < RAWD_NFDS; i++)
			close(fds[i]);
		rc = -1;
	}
out:
	close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	if (pid > 0) {
		if (rc && waitpid(pid, NULL, WNOHANG) == 0)
			kill(pid, SIGKILL);
		/* ECHILD when SIGCHLD is ignored: the kernel reaped it already. */
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	return rc;
}
