/* SPDX-License-Identifier: BSD-2-Clause */
/* Which Ethernet interfaces this process drives: the provider offers one
 * domain per interface; btl_gamma_if_include/if_exclude filter them, and with
 * several ranks per host local rank i takes interface i mod n.  An entry
 * a+b of btl_gamma_if_include is one multi-rail domain over both (the
 * provider's failover), one module. */
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

/*
 * A btl_gamma_if_include entry exists and is up; if not, say how to fix it.
 * A missing one is worth a word only when nothing listed exists here: one
 * list may name the interfaces of every host, whose names differ.
 */
static bool include_usable(const char *name, bool tell_missing)
{
	bool exists;
	bool up = iface_is_up(name, &exists);

	if (!exists && tell_missing)
		gamma_show_help("interface missing", name, gamma_hostname());
	else if (exists && !up)
		gamma_show_help("interface down", name, gamma_hostname(), name);
	return exists && up;
}

static bool in_list(char **list, const char *name)
{
	for (int i = 0; list && list[i]; i++)
		if (!strcmp(list[i], name))
			return true;
	return false;
}

/* The same for every rail of an entry a+b (a rail down now may come back). */
static bool entry_usable(const char *entry, bool tell_missing)
{
	char **rails = opal_argv_split(entry, '+');
	bool ok = rails != NULL;

	for (int i = 0; rails && rails[i]; i++)
		ok &= include_usable(rails[i], tell_missing);
	opal_argv_free(rails);
	return ok;
}

/* Whether some rail of some entry of list exists on this host. */
static bool any_exists(char **list)
{
	bool found = false;

	for (int i = 0; list && list[i] && !found; i++) {
		char **rails = opal_argv_split(list[i], '+');

		for (int r = 0; rails && rails[r] && !found; r++)
			found = if_nametoindex(rails[r]) != 0;
		opal_argv_free(rails);
	}
	return found;
}

/* A multi-rail entry is offered when the provider makes its domain. */
static bool entry_offered(char **offered, const char *entry)
{
	struct fi_info *fi = NULL;

	if (in_list(offered, entry))
		return true;
	if (!strchr(entry, '+') || gamma_fi_getinfo(entry, &fi))
		return false;
	fi_freeinfo(fi);
	return true;
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

/* Domains (= interfaces) the provider offers, each once, in its order. */
static int offered_domains(char ***out)
{
	struct fi_info *all = NULL, *fi;
	char **names = NULL;
	int rc;

	rc = gamma_fi_getinfo(NULL, &all);
	if (rc && !gamma_fi_provider_loaded()) {
		gamma_show_help("provider not found", gamma_hostname());
		return rc;
	}
	if (rc && !gamma_have_cap_net_raw()) {
		gamma_show_help("no CAP_NET_RAW", gamma_hostname());
		return rc;
	}
	if (rc) {
		gamma_show_help("no interface offered", fi_strerror(-rc), gamma_hostname());
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
		bool tell_missing = !any_exists(incl);
		for (int i = 0; incl && incl[i]; i++)
			if (entry_usable(incl[i], tell_missing) && !in_list(chosen, incl[i]))
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
			if (entry_offered(offered, incl[i]))
				opal_argv_append_nosize(&chosen, incl[i]);
			else
				gamma_show_help("interface not offered", incl[i], gamma_hostname());
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
		gamma_show_help("no usable interface", gamma_hostname());
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
