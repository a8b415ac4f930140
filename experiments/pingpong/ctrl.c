/* The control channel of gamma-pingpong (TCP, length-prefixed messages). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctrl.h"

struct hdr {
	uint32_t type, len;
};

static int wait_fd(int fd, short events, double deadline)
{
	for (;;) {
		double left = deadline - pp_now();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = {.fd = fd, .events = events};
		int r = poll(&p, 1, left > 1.0 ? 1000 : (int)(left * 1000) + 1);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static void nodelay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* A listening socket for both IPv4 and IPv6 clients, or IPv4 only where IPv6 is off. */
static int listen_on(const char *port)
{
	static const int families[] = {AF_INET6, AF_INET};
	int err = 0;
	for (int i = 0; i < 2; i++) {
		struct addrinfo hints = {
		    .ai_family = families[i], .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
		struct addrinfo *ai;
		int r = getaddrinfo(NULL, port, &hints, &ai);
		if (r) {
			pp_err("control port '%s': %s", port, gai_strerror(r));
			return -1;
		}
		int ls = socket(ai->ai_family, ai->ai_socktype, 0);
		int one = 1, zero = 0;
		if (ls >= 0) {
			setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (families[i] == AF_INET6)
				setsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
			if (bind(ls, ai->ai_addr, ai->ai_addrlen) == 0 && listen(ls, 1) == 0) {
				freeaddrinfo(ai);
				return ls;
			}
		}
		err = errno;
		freeaddrinfo(ai);
		if (ls >= 0)
			close(ls);
		if (err == EADDRINUSE)
			break;
	}
	pp_err("cannot listen on control port %s: %s", port, strerror(err));
	return -1;
}

int pp_ctrl_accept(const char *port, double deadline)
{
	int ls = listen_on(port);
	if (ls < 0)
		return -1;
	int w = wait_fd(ls, POLLIN, deadline);
	if (w) {
		pp_err("no client connected to control port %s: %s", port,
		       w == -ETIMEDOUT ? "timed out (--accept-timeout)" : strerror(-w));
		close(ls);
		return -1;
	}
	int fd = accept(ls, NULL, NULL);
	if (fd < 0)
		pp_err("accept on control port %s: %s", port, strerror(errno));
	else
		nodelay(fd);
	close(ls);
	return fd;
}

int pp_ctrl_connect(const char *host, const char *port, double deadline)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *ai;
	int r = getaddrinfo(host, port, &hints, &ai);
	if (r) {
		pp_err("server '%s' port '%s': %s", host, port, gai_strerror(r));
		return -1;
	}
	/* The server may still be starting: retry refused connections until the deadline. */
	int err = 0;
	for (;;) {
		for (struct addrinfo *a = ai; a; a = a->ai_next) {
			int fd = socket(a->ai_family, a->ai_socktype, 0);
			if (fd < 0) {
				err = errno;
				continue;
			}
			if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
				freeaddrinfo(ai);
				nodelay(fd);
				return fd;
			}
			err = errno;
			close(fd);
		}
		if (pp_now() >= deadline || (err != ECONNREFUSED && err != ETIMEDOUT &&
		                             err != EHOSTUNREACH && err != ENETUNREACH))
			break;
		usleep(100000);
	}
	freeaddrinfo(ai);
	pp_err("cannot connect to server %s port %s: %s%s", host, port, strerror(err),
	       err == ECONNREFUSED ? " (is 'gamma-pingpong --server' running there?)" : "");
	return -1;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t len, double deadline)
{
	char *p = buf;
	while (len) {
		int w = wait_fd(fd, POLLIN, deadline);
		if (w)
			return w;
		ssize_t n = recv(fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= n;
	}
	return 0;
}

int pp_ctrl_send(int fd, uint32_t type, const void *buf, uint32_t len)
{
	struct hdr h = {htonl(type), htonl(len)};
	if (write_all(fd, &h, sizeof(h)) || (len && write_all(fd, buf, len))) {
		pp_err("control channel: send failed: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void report_peer_error(int fd, uint32_t len)
{
	char text[512];
	uint32_t n = len < sizeof(text) - 1 ? len : sizeof(text) - 1;
	if (read_all(fd, text, n, pp_now() + 1.0))
		n = 0;
	text[n] = 0;
	pp_err("peer failed: %s", n ? text : "(no reason given)");
}

int pp_ctrl_recv(int fd, uint32_t type, void *buf, uint32_t *len, double deadline)
{
	struct hdr h;
	int r = read_all(fd, &h, sizeof(h), deadline);
	if (r) {
		pp_err("control channel: %s", r == -ETIMEDOUT ? "peer did not answer (--timeout)"
		                              : r == -EPIPE   ? "peer closed the connection"
		                                              : strerror(-r));
		return -1;
	}
	h.type = ntohl(h.type);
	h.len = ntohl(h.len);
	if (h.type == PP_MSG_ERROR) {
		report_peer_error(fd, h.len);
		return -1;
	}
	if (h.type != type || h.len > *len) {
		pp_err("control channel: protocol error (got message %#x of %u bytes, wanted %#x)",
		       h.type, h.len, type);
		return -1;
	}
	if (h.len && read_all(fd, buf, h.len, deadline)) {
		pp_err("control channel: truncated message");
		return -1;
	}
	*len = h.len;
	return 0;
}

int pp_ctrl_peer_alive(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, 0) <= 0)
		return 0;
	struct hdr h;
	ssize_t n = recv(fd, &h, sizeof(h), MSG_PEEK | MSG_DONTWAIT);
	if (n == 0) {
		pp_err("peer closed the control connection");
		return -1;
	}
	if (n == (ssize_t)sizeof(h) && ntohl(h.type) == PP_MSG_ERROR) {
		recv(fd, &h, sizeof(h), 0);
		report_peer_error(fd, ntohl(h.len));
		return -1;
	}
	return 0;
}

void pp_ctrl_fail(int fd, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (fd >= 0) {
		struct hdr h = {htonl(PP_MSG_ERROR), htonl(strlen(text))};
		if (write_all(fd, &h, sizeof(h)) == 0)
			write_all(fd, text, strlen(text));
	}
}

int pp_ctrl_sync(int fd, double timeout_s)
{
	uint32_t len = 0;
	if (pp_ctrl_send(fd, PP_MSG_SYNC, NULL, 0))
		return -1;
	return pp_ctrl_recv(fd, PP_MSG_SYNC, NULL, &len, pp_now() + timeout_s);
}

#define PLAN_WORDS (offsetof(struct pp_plan, provider) / sizeof(uint32_t))

int pp_plan_send(int fd, const struct pp_plan *p)
{
	struct pp_plan w = *p;
	uint32_t *u = (uint32_t *)&w;
	for (size_t i = 0; i < PLAN_WORDS; i++)
		u[i] = htonl(u[i]);
	return pp_ctrl_send(fd, PP_MSG_HELLO, &w, sizeof(w));
}

int pp_plan_recv(int fd, struct pp_plan *p, double deadline)
{
	uint32_t len = sizeof(*p);
	if (pp_ctrl_recv(fd, PP_MSG_HELLO, p, &len, deadline))
		return -1;
	if (len != sizeof(*p)) {
		pp_err("control channel: client speaks another version of gamma-pingpong");
		return -1;
	}
	uint32_t *u = (uint32_t *)p;
	for (size_t i = 0; i < PLAN_WORDS; i++)
		u[i] = ntohl(u[i]);
	p->provider[PP_PROV_LEN - 1] = 0;
	if (p->n_sizes > PP_MAX_SIZES || p->n_bw_sizes > PP_MAX_SIZES) {
		pp_err("control channel: malformed plan");
		return -1;
	}
	return 0;
}
