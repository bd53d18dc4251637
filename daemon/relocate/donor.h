/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The mover's donor file: an O_TMPFILE on the target filesystem, fallocated (mode 0, so i_size covers it)
 * to the batch's total size, into whose blocks the files are moved (see mover.h and
 * doc/kernel.md §1-2). It has no name, so it never shows up in a directory, and its blocks
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

/* A donor is used in pieces (segments) of its logical range, filled in their order: one piece in the
 * common case; several when the free space near the start of the disk is in pieces (below). */
#define DONOR_MAX_SEGMENTS 64
/* the smallest free range used as a piece (or 1/64 of the donor, or a group preallocation, if more) */
#define DONOR_SEGMENT_MIN_BYTES (UINT64_C(1024) * 1024)

typedef struct DonorSegment {
        uint64_t logical;       /* first block, in filesystem blocks of the donor file */
        uint64_t blocks;        /* a whole number of pages */
} DonorSegment;

typedef struct Donor {
        int fd;                 /* O_RDWR, owned; -EBADF when none */
        DonorSegment segments[DONOR_MAX_SEGMENTS];
        size_t n_segments;
        uint64_t runs;          /* physical runs over all segments */
        unsigned attempts;      /* donors allocated: 1, or 2 when the allocator's own choice was tried too */
        bool in_window;         /* made in the window the caller cleared for it */
        bool cut;               /* ... with the last buddy of a plan cut to what was missing */
        bool replanned;         /* ... planned again around the pilot block */
        bool near;              /* made near the block the caller asked for */
        uint64_t chunk;         /* made in buddies of the free space, the largest this long (blocks; 0: not) */
        uint64_t aimed_at;      /* the one-range donor's target block */
} Donor;


/* Where the caller wants the donor: a window cleared for it (see room.h), which starts at block `start`
 * in the block group that starts at block `floor`; or, with start = UINT64_MAX, near block `near` (0:
 * nowhere in particular): first in buddies of the free ranges that start within 128 MiB from it on,
 * accepted wherever ext4 puts them within 128 MiB of it, in one run. */
typedef struct DonorWindow {
        uint64_t start, floor;
        uint64_t end;           /* the window's end (block after it): buddies are taken from its free ranges up
                                 * to there, around anything that took a spot of it (0: from the one free
                                 * range that contains `start` only) */
        uint64_t near;
        uint64_t group_blocks;  /* blocks per block group (0: unknown; the window's last buddy is then never cut) */
        bool pilot;             /* pilot_fd is the donor's pilot, made before the window was chosen
                                 * (donor_pilot_create()); donor_allocate() takes it over */
        int pilot_fd;
} DonorWindow;

/* The pilot of a donor aimed at a window (see donor.c): an O_TMPFILE in dir_fd with one block far out in
 * the file, wherever ext4 puts it, made before the window is chosen so that the window is chosen around it
 * (room_plan()): made once the window is clear, it can only land there when the window is the lowest free
 * space, and takes a block the donor's whole pieces needed. Returns its fd (its block in *ret_block) or a
 * negative errno. */
int donor_pilot_create(int dir_fd, uint64_t *ret_block);

void donor_set_one(Donor *d, int fd, uint64_t logical, uint64_t blocks);
/* Physical byte address of the donor's first block (its first segment's start, from FIEMAP), or a
 * negative errno (-EBADF: no donor; -ENODATA: that block is not allocated). */
int donor_physical(const Donor *d, uint64_t block_size, uint64_t *ret);
/* Closes the fd (freeing the donor's blocks). */
void donor_done(Donor *d);

/* Create the donor for `bytes` (a multiple of the block size and of the page size). Where it lands
 * matters as much as being one run: by default ext4 puts a large file where the last large allocation
 * ended (the global stream goal), anywhere on the disk, and a rotational disk reads it fastest close to
 * the start, where the first flex group's inode tables and the top directories are, which a boot reads
 * in between. So when sysfs_dir and state_file are set, the donor is first made with
 * <sysfs_dir>/mb_stream_req raised to 4294967295 (global for the filesystem: the original value is saved
 * to state_file first, crash-safe, and restored right after; the state file is then removed), which makes
 * ext4 honour a goal, reached through a one-block pilot extent at a far logical offset (see donor.c):
 *   - with a window `w` the caller cleared for it (else NULL), in the free range that contains the
 *     window's start, in buddies: one request per aligned power-of-two block of ext4's allocator, each of
 *     which must land where it was aimed (see donor.c; then ->in_window); with w->near instead, in buddies
 *     of the free ranges from that block on, up to four ranges tried (then ->near); in a window on a
 *     nearly full filesystem, the last buddy is cut into smaller ones that hold just what is missing when
 *     the whole ones add up to more than ordinary users may allocate and ext4 would serve the smaller ones
 *     there (see donor.c), and the pieces are planned again around the pilot block when it took a spot
 *     of them;
 *   - in pieces, when there are whole free ranges of at least max(DONOR_SEGMENT_MIN_BYTES, bytes / 64,
 *     mb_group_prealloc + 1 blocks) that all lie below the lowest free range that holds the donor whole
 *     (donor_lowest_free()) and together hold it (taken lowest first until they hold a quarter more, so
 *     that a file need not be split where a piece ends, within what ordinary users may use): at most
 *     DONOR_MAX_SEGMENTS pieces; used only if every piece landed where it was aimed, in one run (then
 *     ->runs = ->n_segments);
 *   - else in that lowest range that holds it whole (a donor of at most mb_group_prealloc blocks is made
 *     mb_group_prealloc + 1 blocks long, within what ordinary users may use: a shorter request would be
 *     served from a group preallocation, wherever that is; the rest is never used); when ext4 put it
 *     elsewhere (another block group), it is made again in buddies of the lowest free range below where
 *     it went, up to four ranges tried, while the first is held (->chunk set; see donor.c), else kept;
 *   - with no such range, without the pilot, so ext4 aims at the donor inode's own flex group (for
 *     dir_fd = the mount's root, the start of the filesystem).
 * If that one-piece donor is in more than donor_acceptable_runs() runs (or can't be made), one is made the
 * default way as well (logical 0) and the one with fewer runs is kept (the first on a tie). Without
 * sysfs_dir, only the default way. Returns 0 (*ret filled, the caller owns ret->fd: donor_done()) or a
 * negative errno (-ENOSPC/-EDQUOT: no room); w's pilot, if any, is closed or has become the donor's. Never
 * leaves mb_stream_req changed unless restoring it failed, in which case the state file stays for
 * donor_restore_tunables(). Not safe against a concurrent second mover on the same filesystem (the daemon
 * runs one mover at a time). */
int donor_allocate(int dir_fd, uint64_t bytes, const char *sysfs_dir, const char *state_file, DonorWindow *w,
                   Donor *ret);

/* If state_file exists: parse "PATH VALUE", write VALUE to PATH (only /sys/fs/ext4/<dev>/mb_stream_req
 * paths are accepted), then remove it. Returns 0 when nothing was to do or it was restored. */
int donor_restore_tunables(const char *state_file);

/* <sysfs_dir>/mb_group_prealloc (blocks): how long a locality group preallocation can be. */
int donor_group_prealloc(const char *sysfs_dir, uint64_t *ret);
