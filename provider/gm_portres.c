/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Port reservations (gm_link.h): one lock file per port, held with flock()
 * for as long as the port is open, so the kernel releases it when the
 * process dies.
 *
 * Earlier reservations were abstract UNIX socket names: every user can
 * read those in /proc/net/unix and bind them first, and an unprivileged
 * user holding all 65535 made every fi_endpoint fail with EADDRINUSE.  So
 * each user reserves in a directory of their own that only they (and
 * root) can list or write: nobody can see another user's ports there, or
 * take them.  Root's is /run/gamma, where no one else can create anything.
 * Another user's is /run/user/UID/gamma while the login manager keeps
 * /run/user/UID, else /tmp/gamma-UID (checked to be theirs, 0700: a
 * directory someone else created there first is refused, by name).
 *
 * The price: two users can get the same port number on one interface
 * (drawn at random from 65535); their frames are then told apart by the
 * job key alone.  That is what makes squatting impossible: a reservation
 * that binds across users lets one user exhaust it, and tells every user
 * which ports are live.
 *
 * A file is named NETNS-ETHERTYPE-IFINDEX-PORT (NETNS: the inode of the
 * network namespace, because interface indices are per namespace) and
 * unlinked, under the lock, when the port closes.  Taking one is checked
 * against that: whoever locks a file must still find it under its name.
 */
#define _GNU_SOURCE
#include "gm_link.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

/* Our directory, made if missing; -errno, with one warning, if not ours. */
static int open_dir(const char *path, const struct gm_log *log)
{
	struct stat st;
	int fd;

	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	if (st.st_uid != geteuid()) {
		GM_NET_WARN(log,
		            "port reservations: %s belongs to uid %u, not to this user (uid %u): "
		            "another user made it, perhaps to block gamma; ask root to remove it\n",
		            path, (unsigned)st.st_uid, (unsigned)geteuid());
		close(fd);
		return -FI_EACCES;
	}
	if ((st.st_mode & 077) && fchmod(fd, 0700) < 0) {
		close(fd);
		return -errno;
	}
	return fd;
}

static int resv_dir(const struct gm_log *log)
{
	uid_t uid = geteuid();
	char path[64];
	struct stat st;
	int fd;

	if (uid == 0) {
		fd = open_dir("/run/gamma", log);
		if (fd != -ENOENT)
			return fd;
	} else {
		snprintf(path, sizeof(path), "/run/user/%u", (unsigned)uid);
		if (!lstat(path, &st) && S_ISDIR(st.st_mode) && st.st_uid == uid) {
			snprintf(path, sizeof(path), "/run/user/%u/gamma", (unsigned)uid);
			fd = open_dir(path, log);
			if (fd >= 0)
				return fd;
		}
	}
	snprintf(path, sizeof(path), "/tmp/gamma-%u", (unsigned)uid);
	return open_dir(path, log);
}

/* Leftovers of killed processes: unlocked files, removed under the lock. */
static void sweep(int dfd)
{
	static int swept;
	struct dirent *e;
	DIR *d;
	int d2;

	if (__atomic_exchange_n(&swept, 1, __ATOMIC_RELAXED))
		return;
	d2 = dup(dfd);
	d = d2 >= 0 ? fdopendir(d2) : NULL;
	if (!d) {
		if (d2 >= 0)
			close(d2);
		return;
	}
	while ((e = readdir(d))) {
		int fd;

		if (e->d_name[0] == '.')
			continue;
		fd = openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (!flock(fd, LOCK_EX | LOCK_NB))
			unlinkat(dfd, e->d_name, 0);
		close(fd);
	}
	closedir(d);
}

static int take(int dfd, const char *name)
{
	for (int tries = 0; tries < 8; tries++) {
		int fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		struct stat a, b;

		if (fd < 0)
			return -errno;
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			int e = errno;

			close(fd);
			return e == EWOULDBLOCK ? -FI_EADDRINUSE : -e;
		}
		/* The holder before us unlinks the file as it lets go. */
		if (!fstat(fd, &a) && !fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) &&
		    a.st_ino == b.st_ino && a.st_dev == b.st_dev)
			return fd;
		close(fd);
	}
	return -FI_EADDRINUSE;
}

int gm_portres_take(uint16_t ethertype, int ifindex, uint16_t port, uint16_t *got,
                    const struct gm_log *log)
{
	unsigned start, tries = port ? 1 : 65535;
	unsigned long netns = 0;
	struct stat st;
	uint32_t r = 0;
	int dfd, fd = -FI_EADDRINUSE;

	dfd = resv_dir(log);
	if (dfd < 0)
		return dfd;
	sweep(dfd);
	if (!stat("/proc/self/ns/net", &st))
		netns = (unsigned long)st.st_ino;
	if (!port && getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint32_t)getpid() * 2654435761u;
	start = port ? port : 1 + r % 65535;
	for (unsigned i = 0; i < tries; i++) {
		unsigned p = (start - 1 + i) % 65535 + 1;
		char name[64];

		snprintf(name, sizeof(name), "%lu-%04x-%d-%u", netns, ethertype, ifindex, p);
		fd = take(dfd, name);
		if (fd >= 0) {
			*got = (uint16_t)p;
			break;
		}
		if (fd != -FI_EADDRINUSE)
			break;
	}
	close(dfd);
	return fd;
}

void gm_link_port_release(int fd)
{
	char link[32], path[4096];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n > 0) {
		path[n] = 0;
		unlink(path);
	}
	close(fd);
}
