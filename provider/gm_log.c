/* SPDX-License-Identifier: BSD-2-Clause */
/* The net core's log hook (gm_log.h). */
#include "gm_log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

void gm_log_printf(const struct gm_log *log, enum gm_log_level level, const char *func, int line,
                   const char *fmt, ...)
{
	/* The longest message quotes a helper's refusal (RAWD_MSG_MAX) whole. */
	char msg[1024];
	int saved = errno;
	va_list ap;

	if (!log || !log->fn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log->fn(log->ctx, level, func, line, msg);
	errno = saved;
}

void gm_log_stderr(void *ctx, enum gm_log_level level, const char *func, int line, const char *msg)
{
	fprintf(stderr, "%s: %s%s", (const char *)ctx, level == GM_LOG_WARN ? "warning: " : "",
	        msg);
}
