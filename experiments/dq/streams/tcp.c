/* The local stream over TCP/IP: one connection, messages back to back. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sn.h"

static double end_of(const struct sn_opts *o)
{
	return o->duration ? o->start + o->warm + o->duration : 1e300;
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
		len -= (size_t)n;
	}
	return 0;
}

/* 1: all read, 0: clean end of stream before the first byte, -1: error or timeout. */
static int read_all(int fd, void *buf, size_t len, double deadline)
{
	char *p = buf;
	size_t got = 0;

	while (got < len) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int ms = (int)((deadline - sn_now()) * 1000);
		if (ms <= 0 || poll(&pfd, 1, ms) == 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		ssize_t n = recv(fd, p + got, len - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EPIPE;
			return got ? -1 : 0;
		}
		got += (size_t)n;
	}
	return 1;
}

int sn_tcp_send(const struct sn_opts *o)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->port)};
	double end, deadline = sn_now() + o->timeout;
	char *buf;
	int fd = -1;
	uint64_t seq = 0;

	if (inet_pton(AF_INET, o->addr, &sa.sin_addr) != 1) {
		sn_err("--addr '%s' is not an IPv4 address", o->addr);
		return 1;
	}
	buf = malloc(o->size);
	if (!buf)
		return 1;
	/* The receiver may not listen yet: retry until the start plus the timeout. */
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0) {
			sn_err("socket: %s", strerror(errno));
			return 1;
		}
		if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, o->cc, (socklen_t)strlen(o->cc))) {
			sn_err("TCP congestion control '%s': %s (see "
			       "/proc/sys/net/ipv4/tcp_available_congestion_control)",
			       o->cc, strerror(errno));
			return 1;
		}
		if (o->sndbuf && setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &o->sndbuf, sizeof(int))) {
			sn_err("SO_SNDBUF: %s", strerror(errno));
			return 1;
		}
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			break;
		int e = errno;
		close(fd);
		if (sn_now() > deadline) {
			sn_err("cannot connect to %s:%d: %s", o->addr, o->port, strerror(e));
			return 1;
		}
		usleep(20000);
	}
	printf("ready tcp-send node %d\n", o->node);
	if (sn_await_start(o))
		return 1;
	end = end_of(o);
	while (o->count ? seq < o->count : sn_now() < end) {
		sn_fill(buf, SN_DATA, o->node, (uint32_t)seq, o->size);
		if (write_all(fd, buf, o->size)) {
			sn_err("send to %s:%d: %s", o->addr, o->port, strerror(errno));
			return 1;
		}
		seq++;
	}
	/* Finish: the receiver answers our end of stream with its own. */
	shutdown(fd, SHUT_WR);
	char c;
	int r = read_all(fd, &c, 1, sn_now() + o->timeout);
	close(fd);
	free(buf);
	if (r != 0) {
		sn_err("receiver did not close cleanly: %s",
		       r < 0 ? strerror(errno) : "extra data");
		return 1;
	}
	printf("result role=tcp-send node=%d to=%s:%d sent=%llu\n", o->node, o->addr, o->port,
	       (unsigned long long)seq);
	return 0;
}

static int listen_on(int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
	                         .sin_port = htons((uint16_t)port),
	                         .sin_addr.s_addr = htonl(INADDR_ANY)};
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 1)) {
		sn_err("listen on TCP port %d: %s", port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

int sn_tcp_recv(const struct sn_opts *o)
{
	double win0, win1, deadline;
	struct sn_stats st = {0};
	struct sn_hdr h;
	char why[160], *buf = NULL;
	uint64_t got = 0, bad = 0;
	size_t cap = 0;
	int lfd, fd, r;

	lfd = listen_on(o->port);
	if (lfd < 0)
		return 1;
	printf("ready tcp-recv port %d\n", o->port);
	if (sn_await_start(o))
		return 1;
	win0 = o->start + o->warm;
	win1 = end_of(o);
	deadline = (o->duration ? win1 : o->start) + o->timeout;
	struct pollfd pfd = {.fd = lfd, .events = POLLIN};
	int ms = (int)((deadline - sn_now()) * 1000);
	if (ms <= 0 || poll(&pfd, 1, ms) != 1 || (fd = accept(lfd, NULL, NULL)) < 0) {
		sn_err("no sender connected to port %d before the deadline", o->port);
		return 1;
	}
	close(lfd);
	while ((r = read_all(fd, &h, sizeof(h), deadline)) == 1) {
		if (h.magic != SN_MAGIC || h.size < sizeof(h) || h.size > SN_MAX_SIZE) {
			sn_err("stream out of step at message %llu (magic %#x, size %u)",
			       (unsigned long long)got, h.magic, h.size);
			return 3;
		}
		if (h.size > cap) {
			cap = h.size;
			buf = realloc(buf, cap);
			if (!buf)
				return 1;
		}
		memcpy(buf, &h, sizeof(h));
		if (read_all(fd, buf + sizeof(h), h.size - sizeof(h), deadline) != 1)
			break;
		uint64_t now = sn_now_ns();
		if (sn_verify(buf, h.size, why, sizeof(why)) || h.seq != (uint32_t)got) {
			if (!bad++)
				sn_err("message %llu: %s", (unsigned long long)got,
				       h.seq != (uint32_t)got ? "out of sequence" : why);
		}
		double sent = (double)h.send_ns / 1e9;
		if (sent >= win0 && sent < win1)
			sn_stats_add(&st, (double)(now - h.send_ns) / 1e3, h.size);
		got++;
	}
	if (r < 0) {
		sn_err("receive after %llu messages: %s", (unsigned long long)got, strerror(errno));
		return 1;
	}
	close(fd); /* our end of stream tells the sender we have everything */
	char prefix[160];
	snprintf(prefix, sizeof(prefix),
	         "result role=tcp-recv node=%d port=%d received=%llu bad=%llu", o->node, o->port,
	         (unsigned long long)got, (unsigned long long)bad);
	sn_stats_print(&st, prefix);
	sn_stats_free(&st);
	free(buf);
	return bad ? 3 : 0;
}
