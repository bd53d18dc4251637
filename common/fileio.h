/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* Small files read whole: sysfs attributes, /proc files, the daemon's own state files. Knows nothing of
 * what they hold. */

/* Reads path (relative to dfd, or AT_FDCWD) into buf, NUL-terminated, with trailing newlines and blanks
 * removed. Returns the length or a negative errno; -EFBIG if it does not fit in size - 1 bytes. */
ssize_t read_small_file_at(int dfd, const char *path, char *buf, size_t size);
ssize_t read_small_file(const char *path, char *buf, size_t size);
