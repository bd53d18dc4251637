/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The one escaping of file names, used in log lines, on the bus and on a terminal. A file name is bytes;
 * what is shown or sent is valid UTF-8 without control characters:
 *   - a backslash is written as \\ ;
 *   - a control character (0x01-0x1f, except a tab where ESCAPE_KEEP_TAB is given), DEL (0x7f) and every
 *     byte that is not part of a valid UTF-8 sequence is written as \xNN (two lowercase hex digits);
 *   - everything else (printable ASCII, valid UTF-8) is written as it is.
 * path_unescape() inverts it, so the escaping is lossless; dbus/org.seekless.Seekless1.xml documents it as
 * the encoding of every path crossing the bus. */

typedef enum EscapeFlags {
        ESCAPE_KEEP_TAB = 1 << 0,       /* log lines keep tabs */
} EscapeFlags;

/* Length of the valid UTF-8 sequence of more than one byte at s (n bytes readable there), or 0. */
size_t utf8_sequence(const unsigned char *s, size_t n);

/* Writes the escaped form of in into out (size bytes, always NUL-terminated), cutting at a character
 * boundary when out is too small; 4 bytes of out per byte of in always suffice. Returns the bytes of in
 * consumed. */
size_t escape_into(const char *in, char *out, size_t size, EscapeFlags flags);

/* The escaped form of a path, newly allocated (NULL when out of memory). */
char *path_escape(const char *path);

/* The bytes an escaped form stands for, newly allocated. -EINVAL for a backslash not followed by "\\" or
 * "x" and two hex digits, or for an escaped NUL; -ENOMEM. */
int path_unescape(const char *escaped, char **ret);

/* True when s could be an escaped form: valid UTF-8 without control characters. */
bool escape_is_clean(const char *s);

/* Columns s takes on a terminal: a character of an East Asian wide or emoji block counts 2, a combining
 * mark 0, anything else 1 (s is an escaped form, so valid UTF-8). */
size_t utf8_columns(const char *s);
