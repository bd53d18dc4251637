/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <sys/stat.h>

#include "fs/fid.h"

/* The key of an open file, as fanotify's FAN_REPORT_FID would report it. */
int file_key_from_fd(int fd, FileKey *ret);

/* Open the file behind a key (O_PATH) relative to a mount point fd of its filesystem, and return its stat
 * and current path (either may be NULL). *ret_path is set to NULL when the kernel can't name the file
 * reliably (a disconnected dentry: the file exists, but its path is unknown right now). Errors: -ESTALE the file is gone or the inode now belongs to
 * another file (generation changed); -EBADE not a regular file. Needs CAP_DAC_READ_SEARCH. */
int file_key_resolve(int mount_fd, const FileKey *key, struct stat *ret_st, char **ret_path);

/* The same checks on a file already open (by its key, with any flags). */
int file_key_check_fd(int fd, struct stat *ret_st, char **ret_path);

/* The path of a file (`st`: its stat, from its handle) through the directory it was read in and its name
 * there, for when the file's own handle no longer names it (its dentry was evicted). -ESTALE: the name is
 * gone or leads to another file now; -ENOENT: the directory cannot be named either; -EINVAL: not a name. */
int file_key_name_in_dir(int mount_fd, const FileKey *dir, const char *name, const struct stat *st, char **ret);

/* Open the file behind a key with `flags` (O_CLOEXEC and, where permitted, O_NOATIME are added).
 * -ESTALE: gone or replaced. Needs CAP_DAC_READ_SEARCH. */
int file_key_open(int mount_fd, const FileKey *key, int flags);

/* Inode number and generation from an ext4 FILEID_INO32_GEN handle (0 when the handle is another type). */
void file_key_ino_gen(const FileKey *key, uint64_t *ret_ino, uint32_t *ret_gen);

/* Path of an fd via /proc/self/fd. Fails with -ENOENT for deleted files (" (deleted)" suffix). */
int fd_get_path(int fd, char **ret);

/* The file's path now (after a rename, the new one), when it leads back to the same inode: *ret is NULL
 * when the kernel cannot name the file reliably. -ENOENT: deleted. */
int fd_get_verified_path(int fd, char **ret);
