/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The sockets gamma-rawd hands out.  Whoever holds an AF_PACKET socket may
 * re-bind it to any interface and protocol and may replace its filter, and
 * no capability is checked after socket() (see README.md).  So each socket
 * gets a classic BPF filter locked with SO_LOCK_FILTER, which nobody can
 * change or remove afterwards, and which itself checks the interface:
 *
 *   receive:  ifindex, EtherType, and either PACKET_HOST (sent to this
 *             interface's MAC) or PACKET_OUTGOING to this MAC (the
 *             provider's local-communication path); nothing else
 *             (rawd_filter.c);
 *   transmit: drops everything, so a transmit socket bound to ETH_P_ALL
 *             sees nothing.
 *
 * Sending is not restricted: see the README.
 */
#define _GNU_SOURCE
#include "rawd.h"
#include "gm_filter.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static int iface_mac(const char *ifname, uint8_t mac[6], char *err, size_t errlen)
{
	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int rc = -1;

	if (fd < 0) {
		snprintf(err, errlen, "gamma-rawd: socket(AF_INET): %s", strerror(errno));
		return -1;
	}
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0)
		snprintf(err, errlen, "gamma-rawd: interface %s: %s", ifname, strerror(errno));
	else if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER)
		snprintf(err, errlen, "gamma-rawd: interface %s is not Ethernet", ifname);
	else {
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
		rc = 0;
	}
	close(fd);
	return rc;
}

static int lock_filter(int fd, struct sock_filter *f, unsigned short n)
{
	struct sock_fprog prog = {.len = n, .filter = f};
	int one = 1;

	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0)
		return -1;
	return setsockopt(fd, SOL_SOCKET, SO_LOCK_FILTER, &one, sizeof(one));
}

static int rx_filter(int fd, int ifindex, uint16_t ethertype, const uint8_t mac[6])
{
	struct sock_filter f[GM_FILTER_MAX_LEN];

	return lock_filter(fd, f, (unsigned short)rawd_rx_filter(f, ifindex, ethertype, mac));
}

static int drop_all_filter(int fd)
{
	struct sock_filter f[] = {BPF_STMT(BPF_RET | BPF_K, 0)};

	return lock_filter(fd, f, 1);
}

/* Protocol 0: bound to the interface, but no frame is queued until the
 * client has set up its ring and re-binds with a protocol. */
static int packet_socket(int ifindex)
{
	struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_ifindex = ifindex};
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int rawd_open_sockets(const char *ifname, uint16_t ethertype, int fds[RAWD_NFDS], char *err,
                      size_t errlen)
{
	int ifindex = (int)if_nametoindex(ifname);
	uint8_t mac[6];

	for (int i = 0; i < RAWD_NFDS; i++)
		fds[i] = -1;
	if (!ifindex) {
		snprintf(err, errlen, "gamma-rawd: interface %s does not exist", ifname);
		return -1;
	}
	if (iface_mac(ifname, mac, err, errlen))
		return -1;
	for (int i = 0; i < RAWD_NFDS; i++) {
		fds[i] = packet_socket(ifindex);
		if (fds[i] < 0) {
			if (errno == EPERM || errno == EACCES) {
				char self[256] = "<path of gamma-rawd>";
				ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

				if (n > 0)
					self[n] = 0;
				snprintf(err, errlen,
				         "gamma-rawd: no CAP_NET_RAW: install it with `setcap "
				         "cap_net_raw+ep %s` (file capabilities are ignored on "
				         "nosuid mounts and under no_new_privs)",
				         self);
			} else
				snprintf(err, errlen, "gamma-rawd: packet socket on %s: %s", ifname,
				         strerror(errno));
			goto fail;
		}
		if (i == RAWD_FD_RX ? rx_filter(fds[i], ifindex, ethertype, mac)
		                    : drop_all_filter(fds[i])) {
			snprintf(err, errlen, "gamma-rawd: cannot lock the socket filter: %s",
			         strerror(errno));
			goto fail;
		}
	}
	return 0;
fail:
	for (int i = 0; i < RAWD_NFDS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return -1;
}
