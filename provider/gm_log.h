/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * How the net core reports what its user must know (a down interface, a
 * refused socket): through a hook the user passes in (gm_net_params.log),
 * so that the core links without the provider.  The provider hands each
 * message to libfabric's log; a test program prints it.
 */
#ifndef GM_LOG_H
#define GM_LOG_H

enum gm_log_level { GM_LOG_WARN, GM_LOG_INFO };

struct gm_log {
	/* func, line: where the core wrote the message (libfabric's log prefix). */
	void (*fn)(void *ctx, enum gm_log_level level, const char *func, int line, const char *msg);
	void *ctx;
};

/* Formats and calls log->fn (log or fn NULL: nothing); errno is preserved. */
void gm_log_printf(const struct gm_log *log, enum gm_log_level level, const char *func, int line,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* A hook for programs: "CTX: warning: MSG" on stderr (ctx: the program's name). */
void gm_log_stderr(void *ctx, enum gm_log_level level, const char *func, int line, const char *msg);

#define GM_NET_WARN(log, ...) gm_log_printf(log, GM_LOG_WARN, __func__, __LINE__, __VA_ARGS__)
#define GM_NET_INFO(log, ...) gm_log_printf(log, GM_LOG_INFO, __func__, __LINE__, __VA_ARGS__)

#endif /* GM_LOG_H */
