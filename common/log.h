/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <syslog.h>

#include "common/macro.h"

/* Logging to stderr. When stderr is the journal (JOURNAL_STREAM matches) or --log-prefix is set, lines carry
 * the "<N>" priority prefix that journald understands. "%m" in a format prints strerror(-error). All *_errno
 * functions return -abs(error) so callers can write "return log_error_errno(r, ...)". */

/* A log line is cut after this many bytes of message (then "..." follows). */
#define LOG_LINE_MAX 2048

/* Copies in to out (size bytes, NUL-terminated) as one safe line, in the escaping of escape.h with tabs
 * kept. Every log line goes through it, so a newline or an escape sequence in a file name cannot forge a
 * line or reach a terminal. 4 bytes of out per byte of in suffice. */
void log_escape(const char *in, char *out, size_t size);

void log_set_max_level(int level);
int log_get_max_level(void);
void log_open(void);
/* From now on lines up to max_level go to the kernel's log (/dev/kmsg, "<PRI>ident: message"; the early
 * boot's only log), not to stderr. The kernel lets each opener write 10 lines in 5 s (its devkmsg rate
 * limit), so a chatty program sends the rest to a file of its own (log_open_file()). -errno when it cannot
 * be opened (stderr stays). ident must stay valid. */
int log_open_kmsg(const char *ident, int kmsg_level);
/* From now on every line also goes to path (appended, "<PRI>message"), and no longer to stderr. */
int log_open_file(const char *path);

int log_internal(int level, int error, const char *file, int line, const char *format, ...) _printf_(5, 6);

#define log_full_errno(level, error, ...)                                               \
        ({                                                                              \
                int _l_ = (level), _e_ = (error);                                       \
                _l_ <= log_get_max_level()                                              \
                        ? log_internal(_l_, _e_, __FILE__, __LINE__, __VA_ARGS__)       \
                        : -abs(_e_);                                                    \
        })
#define log_full(level, ...) (void) log_full_errno((level), 0, __VA_ARGS__)

#define log_debug(...) log_full(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_full(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_full(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_full(LOG_ERR, __VA_ARGS__)

#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, e, __VA_ARGS__)
#define log_info_errno(e, ...) log_full_errno(LOG_INFO, e, __VA_ARGS__)
#define log_notice_errno(e, ...) log_full_errno(LOG_NOTICE, e, __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, e, __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, e, __VA_ARGS__)

/* Errors not coming from errno: log_error_errno(SYNTHETIC_ERRNO(EINVAL), "..."). */
#define SYNTHETIC_ERRNO(e) (e)

/* A config-file problem: "FILE:LINE: message". Always a warning; returns 0 so parsing goes on. */
int log_syntax_internal(const char *file, unsigned line, const char *format, ...) _printf_(3, 4);
#define log_syntax(file, line, ...) log_syntax_internal((file), (line), __VA_ARGS__)
