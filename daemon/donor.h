/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>

/* The mover's donor file: an O_TMPFILE on the target filesystem, fallocated (mode 0, so i_size covers it)
 * to the batch's total size, into whose blocks the files are moved (see mover.h and
 * ../shared/notes/kernel-apis.md §1-2). It has no name, so it never shows up in a directory, and its blocks
 * (after the moves: the files' old blocks) are freed when it is closed, or by orphan processing at the
 * next mount after a crash. */

/* Physical runs of the byte range [offset, offset + length) of an open file: FIEMAP extents, counting a
 * new run wherever the next extent does not start physically (or logically) where the previous one
 * ended. 0 for a range without blocks. */
int donor_count_runs(int fd, uint64_t offset, uint64_t length, uint64_t *ret_runs);

/* How many runs a donor of `bytes` may have before the mb_stream_req fallback is tried:
 * max(1, ceil(bytes / 128 MiB)). 128 MiB is the largest on-disk extent (32768 blocks of 4 KiB) and about
 * a block group, so a donor larger than that crossing a group with a backup superblock costs one run per
 * 128 MiB at most; anything beyond that means the allocator scattered it. */
uint64_t donor_acceptable_runs(uint64_t bytes);

/* One O_TMPFILE in the directory dir_fd, fallocated to `bytes`. Returns an O_RDWR fd or a negative errno
 * (-ENOSPC/-EDQUOT when the space is not there: nothing is left allocated). */
int donor_create(int dir_fd, uint64_t bytes);

/* The start (physical byte address) of the lowest free range of the filesystem of fd that holds `bytes`,
 * from FS_IOC_GETFSMAP (free space as ext4's allocator sees it, preallocations included; ranges that
 * touch across block groups are joined). -ENOSPC when there is none. */
int donor_lowest_free(int fd, uint64_t bytes, uint64_t *ret_physical);

/* Create the donor. Where it lands matters as much as being one run: by default ext4 puts a large file
 * where the last large allocation ended (the global stream goal), anywhere on the disk, and a rotational
 * disk reads it fastest close to the start, where the first flex group's inode tables and the top
 * directories are, which a boot reads in between. So when sysfs_dir and state_file are set, the donor is
 * first made with <sysfs_dir>/mb_stream_req raised to 4294967295 (global for the filesystem: the original
 * value is saved to state_file first, crash-safe, and restored right after; the state file is then
 * removed), which makes ext4 honour a goal: it is aimed at the lowest free range that holds it
 * (donor_lowest_free()), reached through a one-block pilot extent at a far logical offset (see donor.c);
 * its blocks then start at logical byte *ret_base instead of 0. With no such range, it is made without
 * the pilot, so ext4 aims at the donor inode's own flex group (for dir_fd = the mount's root, the start of
 * the filesystem). If that donor is in more than donor_acceptable_runs() runs (or can't be made), one is
 * made the default way as well (*ret_base 0) and the one with fewer runs is kept (the first on a tie).
 * *ret_attempts: 1 or 2 (1 without sysfs_dir). Returns the donor fd or a negative errno. Never leaves
 * mb_stream_req changed unless restoring it failed, in which case the state file stays for
 * donor_restore_tunables(). Not safe against a concurrent second mover on the same filesystem (the daemon
 * runs one mover at a time). */
int donor_allocate(int dir_fd, uint64_t bytes, const char *sysfs_dir, const char *state_file,
                   uint64_t *ret_runs, uint64_t *ret_base, unsigned *ret_attempts);

/* If state_file exists: parse "PATH VALUE", write VALUE to PATH (only /sys/fs/ext4/<dev>/mb_stream_req
 * paths are accepted), then remove it. Returns 0 when nothing was to do or it was restored. */
int donor_restore_tunables(const char *state_file);
