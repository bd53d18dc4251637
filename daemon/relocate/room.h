/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Making room for the donor low on the disk ("room"): when the lowest free range that would hold the donor
 * whole lies far out, a window of whole buddy units (the allocator's largest aligned free chunk: 2 <<
 * block-size-bits blocks, 32 MiB with 4 KiB blocks) lower down, inside one block group that is not the
 * first of a flex group, is cleared by moving the files whose data is in it elsewhere; then the donor is
 * aimed at it one unit at a time. For a donor longer than a block group, the window starts at a block
 * group's start and runs on through whole groups into the last one's start, none of them the first of a
 * flex group (nor one with a backup superblock, whose first blocks are metadata): each group's part then
 * begins at the group's start, so its units are the group's lowest free ones; it is an eighth longer than
 * the donor, which is made around whatever the files moved out took of it (see DonorWindow.end). Why
 * units: a request of exactly one unit is served by ext4's first, power-of-two pass, which in the goal's
 * block group takes the group's first free aligned unit (ext4_mb_simple_scan_group()), however cut up the
 * rest of the group is; a request of another length needs the group's free blocks / free extents to be at
 * least the request (ext4_mb_good_group()), which a group on an aged disk never has. The first group of a flex group is skipped by that pass for file data.
 *
 * room_plan() only reads: the filesystem's geometry, block bitmap and inodes with libext2fs from the block
 * device (buffered, so it sees the in-memory metadata; it can still be stale by a moment, so the caller
 * checks the result with FIEMAP). It looks at the first 8 GiB of the disk only, and reads every inode in
 * use (twice: a second time for the chosen window's files). */

typedef struct RoomPlan {
        uint64_t start;         /* the window's first block */
        uint64_t blocks;        /* its length: a whole number of chunks */
        uint64_t chunk;         /* blocks per chunk (a buddy: power of two, aligned to it) */
        uint64_t group_start;   /* the first block of its block group */
        uint64_t group_blocks;  /* blocks per block group */
        uint64_t move_blocks;   /* file data in the window, to be moved out */
        uint64_t *inodes;       /* the files that hold it, lowest data first (owned) */
        size_t n_inodes;
} RoomPlan;

/* Find the lowest window of ceil(need_blocks / unit) units that lies wholly below block `below`, holds
 * nothing but regular files' data (no metadata, directories, extent-tree blocks, files of `keep` — the
 * inode numbers the caller is about to move anyway —, immutable or append-only files, or files with blocks
 * allocated past their end), and at most max_move_blocks of it. `pilot`: the block of the donor's pilot
 * (see donor.h; UINT64_MAX: none), which is not in the window unless the window has a chunk more than
 * need_blocks takes (the pieces of the donor are whole chunks, and none can hold the pilot's). `device` must be the block device with
 * st_rdev == `dev` (the mounted filesystem's st_dev). Returns 0 with *ret filled (free with
 * room_plan_done()), -ENOSPC when no window qualifies, -EOPNOTSUPP for a filesystem this does not handle
 * (block size other than the page size, bigalloc, blocks per group not a whole number of units), or
 * another negative errno. */
int room_plan(const char *device, dev_t dev, uint64_t need_blocks, uint64_t below, uint64_t min_chunk_blocks,
              uint64_t max_move_blocks, const uint64_t *keep, size_t n_keep, uint64_t pilot, RoomPlan *ret);

void room_plan_done(RoomPlan *p);
