/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>

#include "fs/fid.h"

/* A page event names its file by (device, inode) only. On ext4 a file handle with generation 0 opens the
 * inode of that number whatever its generation (doc/kernel.md §5); the opened file's own handle is then its
 * FileKey, the same fanotify reports.
 *
 * Returns 1 and the key; 0 when the file is to be left out: not a regular file, or born at or after
 * `since_realtime_usec` (created during the window: its pages were written, not read); -ESTALE: no such
 * inode any more; -EOVERFLOW: an inode number a FILEID_INO32_GEN handle cannot hold; other negative errno.
 * Needs CAP_DAC_READ_SEARCH. */
int page_file_key(int mount_fd, uint64_t ino, uint64_t since_realtime_usec, FileKey *ret);
/* The inode of that number opened with flags (O_CLOEXEC added by the caller), as above: an fd or a
 * negative errno. */
int page_file_open(int mount_fd, uint64_t ino, int flags);
