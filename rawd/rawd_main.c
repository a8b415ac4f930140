/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gamma-rawd: opens AF_PACKET sockets for a process without CAP_NET_RAW.
 * Installed with `setcap cap_net_raw+ep`; the gamma provider runs it as a
 * child with a SOCK_SEQPACKET socket as standard input (rawd_proto.h),
 * and it answers one request and exits.  `gamma-rawd --check IFNAME`
 * tells an administrator whether the configuration allows IFNAME.
 */
#define _GNU_SOURCE
#include "rawd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <syslog.h>
#include <unistd.h>
#include <net/if.h>

#ifndef RAWD_CONF_DEFAULT
#define RAWD_CONF_DEFAULT "/etc/gamma/rawd.conf"
#endif

/*
 * With a file capability the kernel sets AT_SECURE: the caller chose the
 * environment (and argv, which /proc/self/cmdline shows), so the caller
 * must not choose the policy.  Only root may point the helper elsewhere.
 */
static int conf_path(const char **path, char *err, size_t errlen)
{
	const char *p = getenv("GAMMA_RAWD_CONF");

	*path = RAWD_CONF_DEFAULT;
	if (!p || !*p)
		return 0;
	if (getauxval(AT_SECURE) && getuid() != 0) {
		snprintf(err, errlen,
		         "gamma-rawd: refusing GAMMA_RAWD_CONF: only root may choose the "
		         "configuration of this privileged helper (unset it; the configuration "
		         "is %s)",
		         RAWD_CONF_DEFAULT);
		return -1;
	}
	*path = p;
	return 0;
}

/* Requests and paths come from the caller: no control characters or
 * unbounded lines reach the system log. */
static void log_safe(char *dst, size_t n, const char *src)
{
	size_t i = 0;

	for (; *src && i + 4 < n; src++)
		dst[i++] = *src >= ' ' && *src < 0x7f ? *src : '?';
	if (*src)
		dst[i++] = '.', dst[i++] = '.', dst[i++] = '.';
	dst[i] = 0;
}

static bool valid_ifname(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= IF_NAMESIZE)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] == '/' || s[i] == 0x7f)
			return false;
	return true;
}

/* Everything a request must pass before any socket exists. */
static int authorize(const char *ifname, unsigned long ethertype, struct rawd_conf *c, char *err,
                     size_t errlen)
{
	if (!valid_ifname(ifname)) {
		snprintf(err, errlen, "gamma-rawd: bad interface name");
		return -1;
	}
	const char *path;

	if (conf_path(&path, err, errlen) || rawd_conf_load(path, c, err, errlen))
		return -1;
	if (!rawd_conf_user_allowed(c)) {
		snprintf(err, errlen,
		         "gamma-rawd: user %u is not in the group that %s allows; ask the "
		         "administrator to add you to it",
		         (unsigned)getuid(), c->path);
		return -1;
	}
	if (!rawd_conf_iface_allowed(c, ifname)) {
		snprintf(err, errlen,
		         "gamma-rawd: interface %s is not allowed by %s (add a line 'interface %s' "
		         "there, or pick an allowed interface)",
		         ifname, c->path, ifname);
		return -1;
	}
	if (ethertype != c->ethertype) {
		snprintf(err, errlen,
		         "gamma-rawd: EtherType 0x%04lx is not allowed by %s (it allows 0x%04x; "
		         "set FI_GAMMA_ETHERTYPE to that)",
		         ethertype, c->path, c->ethertype);
		return -1;
	}
	return 0;
}

static int reply(int sock, const char *text, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * RAWD_NFDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = (void *)text, .iov_len = strlen(text)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};

	if (nfds) {
		struct cmsghdr *cm;

		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	return sendmsg(sock, &msg, MSG_NOSIGNAL) < 0 ? -1 : 0;
}

static int serve(int sock)
{
	char req[RAWD_MSG_MAX + 1], err[RAWD_MSG_MAX], ifname[IF_NAMESIZE + 1] = "";
	char tag[32] = "", verb[16] = "";
	unsigned long ethertype = 0;
	struct rawd_conf conf;
	int fds[RAWD_NFDS];
	ssize_t n;
	int rc;

	n = recv(sock, req, RAWD_MSG_MAX, 0);
	if (n <= 0)
		return 1;
	req[n] = 0;
	if (sscanf(req, "%31s %15s %16s %lx", tag, verb, ifname, &ethertype) != 4 ||
	    strcmp(tag, RAWD_PROTO_TAG) || strcmp(verb, "open")) {
		reply(sock,
		      "error: gamma-rawd: malformed request (client and helper versions "
		      "differ?)",
		      NULL, 0);
		return 1;
	}
	if (authorize(ifname, ethertype, &conf, err, sizeof(err)) ||
	    rawd_open_sockets(ifname, (uint16_t)ethertype, fds, err, sizeof(err))) {
		char msg[RAWD_MSG_MAX + 8], log_if[24], log_err[256];

		snprintf(msg, sizeof(msg), "error: %s", err);
		log_safe(log_if, sizeof(log_if), ifname);
		log_safe(log_err, sizeof(log_err), err);
		syslog(LOG_NOTICE, "uid %u refused %s: %s", (unsigned)getuid(), log_if, log_err);
		reply(sock, msg, NULL, 0);
		return 1;
	}
	rawd_conf_free(&conf);
	syslog(LOG_INFO, "uid %u: packet sockets on %s, EtherType 0x%04lx", (unsigned)getuid(),
	       ifname, ethertype);
	rc = reply(sock, "ok", fds, RAWD_NFDS);
	for (int i = 0; i < RAWD_NFDS; i++)
		close(fds[i]);
	return rc ? 1 : 0;
}

static int check(const char *ifname, const char *etype)
{
	char err[RAWD_MSG_MAX];
	struct rawd_conf conf;
	unsigned long e = etype ? strtoul(etype, NULL, 0) : 0x88B5;

	if (authorize(ifname, e, &conf, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	printf("gamma-rawd: %s allows interface %s, EtherType 0x%04lx\n", conf.path, ifname, e);
	rawd_conf_free(&conf);
	return 0;
}

int main(int argc, char **argv)
{
	int type;
	socklen_t len = sizeof(type);

	if (argc >= 3 && argc <= 4 && !strcmp(argv[1], "--check"))
		return check(argv[2], argc == 4 ? argv[3] : NULL);
	if (argc != 1 || getsockopt(0, SOL_SOCKET, SO_TYPE, &type, &len) < 0 ||
	    type != SOCK_SEQPACKET) {
		fprintf(
		    stderr,
		    "usage: gamma-rawd --check IFNAME [ETHERTYPE]\n"
		    "  Otherwise gamma-rawd is run by the gamma provider, with a SOCK_SEQPACKET\n"
		    "  socket as standard input; see rawd/README.md.\n"
		    "  Configuration: %s (root may name another with GAMMA_RAWD_CONF).\n",
		    RAWD_CONF_DEFAULT);
		return 2;
	}
	/* Descriptors the client forgot to mark close-on-exec are none of ours. */
	if (close_range(3, ~0u, 0))
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
	openlog("gamma-rawd", LOG_PID, LOG_AUTHPRIV);
	return serve(0);
}
