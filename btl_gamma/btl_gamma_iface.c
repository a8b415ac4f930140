/* SPDX-License-Identifier: BSD-2-Clause */
/* Which Ethernet interfaces this process drives: the provider offers one
 * domain per interface; btl_gamma_if_include/if_exclude filter them, and with
 * several ranks per host local rank i takes interface i mod n. */
#include "btl_gamma.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "opal/util/argv.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

/* linux/capability.h: CAP_NET_RAW */
#define CAP_NET_RAW_BIT 13

static bool iface_is_up(const char *name, bool *exists)
{
	struct ifreq ifr;
	int fd;
	bool up = false;

	*exists = if_nametoindex(name) != 0;
	if (!*exists)
		return false;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		return true; /* cannot tell: let the provider decide */
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0)
		up = (ifr.ifr_flags & IFF_UP) != 0;
	else
		up = true;
	close(fd);
	return up;
}

/* A btl_gamma_if_include entry exists and is up; if not, say how to fix it. */
static bool include_usable(const char *name)
{
	bool exists;
	bool up = iface_is_up(name, &exists);

	if (!exists)
		opal_output(0, "btl gamma: interface \"%s\" (btl_gamma_if_include) does not exist "
			       "on %s; fix: name one listed by `ip link`; using other BTLs",
			    name, opal_process_info.nodename ?: "this host");
	else if (!up)
		opal_output(0, "btl gamma: interface \"%s\" is down; fix: `ip link set %s up` or "
			       "choose another with btl_gamma_if_include; using other BTLs",
			    name, name);
	return exists && up;
}

/* Effective CAP_NET_RAW, read from /proc so no libcap is needed; when it
 * cannot be read, assume present and let the provider answer. */
bool gamma_have_cap_net_raw(void)
{
	char line[256];
	unsigned long long eff;
	bool have = true;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return true;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "CapEff: %llx", &eff) == 1) {
			have = (eff >> CAP_NET_RAW_BIT) & 1;
			break;
		}
	}
	fclose(f);
	return have;
}

static bool in_list(char **list, const char *name)
{
	for (int i = 0; list && list[i]; i++)
		if (!strcmp(list[i], name))
			return true;
	return false;
}

/* Domains (= interfaces) the provider offers, each once, in its order. */
static int offered_domains(char ***out)
{
	struct fi_info *all = NULL, *fi;
	char **names = NULL;
	int rc;

	rc = gamma_fi_getinfo(NULL, &all);
	if (rc && !gamma_fi_provider_loaded()) {
		opal_output(0, "btl gamma: libfabric provider \"gamma\" not found (libgamma-fi.so "
			       "not in FI_PROVIDER_PATH or libfabric's provider directory); fix: "
			       "`. tools/gamma-env.sh` in the gamma build tree, or `make install`; "
			       "check with `fi_info -p gamma`; using other BTLs");
		return rc;
	}
	if (rc && !gamma_have_cap_net_raw()) {
		opal_output(0, "btl gamma: provider \"gamma\" offers no interface to this process, "
			       "which lacks CAP_NET_RAW (needed for raw Ethernet frames) and got no "
			       "socket from the gamma-rawd helper; fix: run as root or `setcap "
			       "cap_net_raw+ep` the program, or install gamma-rawd (`make install` "
			       "setcaps it) and allow this interface in its rawd.conf; using other "
			       "BTLs");
		return rc;
	}
	if (rc) {
		opal_output(0, "btl gamma: provider \"gamma\" offers no usable interface "
			       "(fi_getinfo: %s); fix: bring an Ethernet interface up, check "
			       "FI_GAMMA_IFACE and `fi_info -p gamma`; using other BTLs",
			    fi_strerror(-rc));
		return rc;
	}
	for (fi = all; fi; fi = fi->next) {
		const char *d = fi->domain_attr ? fi->domain_attr->name : NULL;
		if (d && !in_list(names, d))
			opal_argv_append_nosize(&names, d);
	}
	fi_freeinfo(all);
	*out = names;
	return 0;
}

/* Local rank and local process count, from Open MPI or the launcher's env. */
static void local_placement(int *rank, int *size)
{
	const char *r = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
	const char *s = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");

	*rank = opal_process_info.my_local_rank;
	*size = opal_process_info.num_local_peers + 1;
	if (*rank < 0 && r)
		*rank = atoi(r);
	if (*size <= 1 && s)
		*size = atoi(s);
	if (*rank < 0)
		*rank = 0;
}

int gamma_iface_select(char ***names_out, int *count_out)
{
	struct gamma_params *p = &mca_btl_gamma_component.params;
	char **offered = NULL, **chosen = NULL;
	char **incl = NULL, **excl = NULL;
	int count, rank, size;

	*names_out = NULL;
	*count_out = 0;
	if (p->if_include && *p->if_include) {
		/* Interface problems first: they are the user's to fix, whatever
		 * state the provider is in. */
		incl = opal_argv_split(p->if_include, ',');
		for (int i = 0; incl && incl[i]; i++)
			if (include_usable(incl[i]) && !in_list(chosen, incl[i]))
				opal_argv_append_nosize(&chosen, incl[i]);
		opal_argv_free(incl);
		if (!chosen)
			return 0;
		if (offered_domains(&offered)) {
			opal_argv_free(chosen);
			return 0;
		}
		incl = chosen;
		chosen = NULL;
		for (int i = 0; incl[i]; i++) {
			if (in_list(offered, incl[i]))
				opal_argv_append_nosize(&chosen, incl[i]);
			else
				opal_output(0, "btl gamma: provider \"gamma\" does not offer "
					       "interface \"%s\" (not Ethernet, or left out by "
					       "FI_GAMMA_IFACE); fix: check `fi_info -p gamma`; "
					       "using other BTLs",
					    incl[i]);
		}
		if (!chosen) {
			opal_argv_free(incl);
			opal_argv_free(offered);
			return 0;
		}
	} else {
		if (offered_domains(&offered))
			return 0;
		if (p->if_exclude && *p->if_exclude)
			excl = opal_argv_split(p->if_exclude, ',');
		for (int i = 0; offered && offered[i]; i++) {
			bool exists;
			if (!in_list(excl, offered[i]) && iface_is_up(offered[i], &exists))
				opal_argv_append_nosize(&chosen, offered[i]);
		}
		count = opal_argv_count(chosen);
		if (count > 1)
			gamma_hwloc_sort_nearest(chosen, count);
	}
	opal_argv_free(incl);
	opal_argv_free(excl);
	opal_argv_free(offered);

	count = opal_argv_count(chosen);
	if (count == 0) {
		opal_output(0, "btl gamma: no usable Ethernet interface (need one that is up and "
			       "offered by `fi_info -p gamma`; see btl_gamma_if_include/"
			       "if_exclude); using other BTLs");
		opal_argv_free(chosen);
		return 0;
	}
	local_placement(&rank, &size);
	if (count > 1 && size > 1) {
		/* Several ranks share this host: spread them over the NICs. */
		char *mine = strdup(chosen[rank % count]);
		opal_argv_free(chosen);
		chosen = NULL;
		opal_argv_append_nosize(&chosen, mine);
		free(mine);
		count = 1;
	}
	for (int i = 0; i < count; i++)
		GAMMA_VERBOSE(10, "btl gamma: local rank %d of %d uses interface %s", rank, size,
			      chosen[i]);
	*names_out = chosen;
	*count_out = count;
	return 0;
}

void gamma_names_free(char **names, int count)
{
	opal_argv_free(names);
}
