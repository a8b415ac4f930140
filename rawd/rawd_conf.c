/* SPDX-License-Identifier: BSD-2-Clause */
/* gamma-rawd configuration file: which interfaces, which EtherType, who. */
#define _GNU_SOURCE
#include "rawd.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <grp.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#define fail(...)                                                                                  \
	do {                                                                                       \
		snprintf(err, errlen, __VA_ARGS__);                                                \
		goto bad;                                                                          \
	} while (0)

/*
 * Pseudo file systems show what a process or the kernel says, not what
 * root wrote: /proc/PID/cmdline of the (non-dumpable, so root-owned)
 * helper is its caller's argv.  FUSE files say what their daemon says.
 */
static const char *pseudo_fs(int fd)
{
	static const struct {
		unsigned long magic;
		const char *name;
	} fs[] = {
	    {PROC_SUPER_MAGIC, "proc"},     {SYSFS_MAGIC, "sysfs"},
	    {FUSE_SUPER_MAGIC, "FUSE"},     {DEBUGFS_MAGIC, "debugfs"},
	    {TRACEFS_MAGIC, "tracefs"},     {SECURITYFS_MAGIC, "securityfs"},
	    {CGROUP_SUPER_MAGIC, "cgroup"}, {CGROUP2_SUPER_MAGIC, "cgroup2"},
	    {BPF_FS_MAGIC, "bpf"},          {EFIVARFS_MAGIC, "efivarfs"},
	};
	struct statfs sf;

	if (fstatfs(fd, &sf) < 0)
		return "unknown";
	for (size_t i = 0; i < sizeof(fs) / sizeof(fs[0]); i++)
		if ((unsigned long)sf.f_type == fs[i].magic)
			return fs[i].name;
	return NULL;
}

/* A config that a user could have written would make the helper theirs. */
static int check_file(int fd, const char *path, char *err, size_t errlen)
{
	const char *fs = pseudo_fs(fd);
	struct stat st;

	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "gamma-rawd: cannot stat %s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		snprintf(err, errlen,
		         "gamma-rawd: refusing config %s: it must be a regular file owned by root "
		         "and writable by root only (chown root %s; chmod 644 %s)",
		         path, path, path);
		return -1;
	}
	if (fs) {
		snprintf(err, errlen,
		         "gamma-rawd: refusing config %s: it is on a %s file system, whose "
		         "contents root did not write; keep it on an ordinary file system",
		         path, fs);
		return -1;
	}
	return 0;
}

/*
 * Anyone who can rename entries in a directory on the way can swap the
 * file.  Sticky directories (/tmp) are fine: there only root may rename
 * root's entries.
 */
static int check_dir(int dfd, const char *dir, const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(dfd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
	    ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))) {
		snprintf(err, errlen,
		         "gamma-rawd: refusing config %s: directory %s must belong to root and be "
		         "writable by root only (chown root %s; chmod go-w %s)",
		         path, dir, dir, dir);
		return -1;
	}
	return 0;
}

/*
 * Open the file through a chain of directories that only root can change,
 * each one opened relative to the last, so that the file checked is the
 * file read.  A symbolic link swapped in after realpath() fails O_NOFOLLOW.
 */
static int open_trusted(const char *path, char *err, size_t errlen)
{
	char real[PATH_MAX], *name = real + 1, *slash;
	int dfd, fd;

	if (!realpath(path, real)) {
		snprintf(err, errlen,
		         "gamma-rawd: cannot read config %s: %s (create it: see "
		         "rawd/README.md)",
		         path, strerror(errno));
		return -1;
	}
	dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || check_dir(dfd, "/", path, err, errlen))
		goto bad;
	while ((slash = strchr(name, '/'))) {
		int next;

		*slash = 0;
		next = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(dfd);
		dfd = next;
		if (dfd < 0) {
			snprintf(err, errlen, "gamma-rawd: refusing config %s: directory %s: %s",
			         path, real, strerror(errno));
			return -1;
		}
		if (check_dir(dfd, real, path, err, errlen))
			goto bad;
		*slash = '/';
		name = slash + 1;
	}
	/* O_NONBLOCK: a FIFO must not hang the helper; it is refused below. */
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	close(dfd);
	if (fd < 0) {
		snprintf(err, errlen, "gamma-rawd: cannot read config %s: %s", path,
		         strerror(errno));
		return -1;
	}
	if (check_file(fd, path, err, errlen)) {
		close(fd);
		return -1;
	}
	return fd;
bad:
	if (dfd >= 0)
		close(dfd);
	else
		snprintf(err, errlen, "gamma-rawd: cannot open /: %s", strerror(errno));
	return -1;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = 0;
	return s;
}

int rawd_conf_load(const char *path, struct rawd_conf *c, char *err, size_t errlen)
{
	char line[512];
	unsigned lineno = 0;
	bool have_ethertype = false;
	FILE *f = NULL;
	int fd;

	memset(c, 0, sizeof(*c));
	snprintf(c->path, sizeof(c->path), "%s", path);
	fd = open_trusted(path, err, errlen);
	if (fd < 0)
		return -1;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		snprintf(err, errlen, "gamma-rawd: %s: %s", path, strerror(errno));
		return -1;
	}
	c->ethertype = 0x88B5;
	while (fgets(line, sizeof(line), f)) {
		char *s = trim(line), *key, *val, *end;

		lineno++;
		if (!*s || *s == '#')
			continue;
		key = s;
		val = s + strcspn(s, " \t");
		if (*val)
			*val++ = 0;
		val = trim(val);
		if (!*val || strpbrk(val, " \t"))
			fail("gamma-rawd: %s:%u: expected 'KEY VALUE'", path, lineno);
		if (!strcmp(key, "interface")) {
			if (c->nifaces == RAWD_MAX_IFACES)
				fail("gamma-rawd: %s:%u: more than %d interface lines", path,
				     lineno, RAWD_MAX_IFACES);
			c->ifaces[c->nifaces] = strdup(val);
			if (!c->ifaces[c->nifaces++])
				fail("gamma-rawd: out of memory");
		} else if (!strcmp(key, "ethertype")) {
			unsigned long v;

			errno = 0;
			v = strtoul(val, &end, 0);
			if (errno || *end || v < 0x0600 || v > 0xffff || have_ethertype)
				fail("gamma-rawd: %s:%u: one 'ethertype' line, 0x0600..0xffff",
				     path, lineno);
			c->ethertype = (uint16_t)v;
			have_ethertype = true;
		} else if (!strcmp(key, "group")) {
			struct group *g = getgrnam(val);

			if (!g || c->have_group)
				fail("gamma-rawd: %s:%u: one 'group' line naming an existing group",
				     path, lineno);
			c->group = g->gr_gid;
			c->have_group = true;
		} else {
			fail("gamma-rawd: %s:%u: unknown key '%s' (interface, ethertype, group)",
			     path, lineno, key);
		}
	}
	fclose(f);
	return 0;
bad:
	if (f)
		fclose(f);
	rawd_conf_free(c);
	return -1;
}

void rawd_conf_free(struct rawd_conf *c)
{
	for (unsigned i = 0; i < c->nifaces; i++)
		free(c->ifaces[i]);
	c->nifaces = 0;
}

bool rawd_conf_iface_allowed(const struct rawd_conf *c, const char *ifname)
{
	for (unsigned i = 0; i < c->nifaces; i++)
		if (!fnmatch(c->ifaces[i], ifname, 0))
			return true;
	return false;
}

bool rawd_conf_user_allowed(const struct rawd_conf *c)
{
	gid_t groups[256];
	int n;

	if (getuid() == 0 || !c->have_group || getgid() == c->group)
		return true;
	n = getgroups(256, groups);
	for (int i = 0; i < n; i++)
		if (groups[i] == c->group)
			return true;
	return false;
}
