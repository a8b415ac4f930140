/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * User-facing messages are topics of help-btl-gamma.txt, rendered by
 * opal_show_help_string.  Open MPI reads help files from its own data
 * directory, where `make install` puts ours; uninstalled, the build tree
 * keeps a copy beside the component it loads.
 *
 * Each process prints its own: opal_show_help would have mpirun show a
 * topic once per job, but Debian 12's Open MPI 4.1.4 (ORTE over PMIx 4.2)
 * loses messages on that path, its own included ("ORTE_ERROR_LOG: Data
 * unpack had inadequate space ... show_help.c at line 513"; btl tcp's
 * invalid-interface warning vanished in 3 of 8 two-rank jobs and 6 of 8
 * one-rank jobs).  An error the user never sees costs more than a repeat.
 */
#include "btl_gamma.h"

#include <dlfcn.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "opal/mca/installdirs/installdirs.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

void gamma_help_init(void)
{
	static bool done;
	Dl_info dl;

	if (done)
		return;
	done = true;
	if (dladdr(&mca_btl_gamma_component, &dl) && dl.dli_fname) {
		char *path = strdup(dl.dli_fname);

		if (path) {
			opal_show_help_add_dir(dirname(path));
			free(path);
		}
	}
	/* Installed somewhere else (configure --with-ompi-help-dir). */
	if (!opal_install_dirs.opaldatadir || strcmp(GAMMA_HELP_DIR, opal_install_dirs.opaldatadir))
		opal_show_help_add_dir(GAMMA_HELP_DIR);
}

void gamma_show_help(const char *topic, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, topic);
	msg = opal_show_help_vstring(GAMMA_HELP_FILE, topic, true, ap);
	va_end(ap);
	/* NULL: opal_show_help_vstring has said which file or topic is missing. */
	if (msg) {
		opal_output(0, "%s", msg);
		free(msg);
	}
}

bool gamma_help_first(volatile int32_t *shown)
{
	return opal_thread_swap_32(shown, 1) == 0;
}

const char *gamma_hostname(void)
{
	return opal_process_info.nodename ? opal_process_info.nodename : "this host";
}
