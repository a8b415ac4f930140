/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * LD_PRELOAD shim for exit-open.sh: dlclose() waits 200 ms after the
 * library is gone.  A thread still running in an unloaded provider wakes
 * within that time (the progress thread naps at most 100 ms) and faults,
 * so a race that would show once in a hundred exits shows every time.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

int dlclose(void *handle)
{
	static int (*real)(void *);
	struct timespec linger = {0, 200 * 1000 * 1000};
	int rc;

	if (!real)
		real = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
	rc = real(handle);
	fputs("dlclose-linger: lingering\n", stderr);
	nanosleep(&linger, NULL);
	return rc;
}
