/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "store/db.h"
#include "plan/layout.h"

/* What of a profile's files the donor receives: their hot ranges, in the order the starts read them,
 * interleaved across files. Pure functions (no I/O), for the planner.
 *
 * Gluing: a range is moved together with the one before it in that order when both are of the same file
 * and it starts at or after the start of the one before and less than HOT_RANGE_GAP bytes after its end
 * (or overlaps it): reading over such a gap costs less than a seek (the quality model's short gap,
 * layout.h), and one move of the union keeps the file's blocks in file order. Ranges of a file that are
 * not next to each other in the order are not glued: the donor receives them where the starts read them.
 * Every range is aligned to `unit` (the page size, or the block size if larger: offset rounded down, end
 * rounded up), cut at the file's size, and dropped when it starts at or past it. */

#define HOT_RANGE_GAP LAYOUT_SHORT_GAP

typedef struct HotRange {
        size_t file;                    /* index into the profile's files */
        uint64_t offset, length;        /* bytes: offset a multiple of unit, length > 0 */
} HotRange;

/* ranges[0..n) in layout order, of files whose sizes (now) are sizes[0..n_files): the glued ranges in
 * *ret (malloc'ed; NULL with 0 when none). -EINVAL for a range of a file index >= n_files or a unit that
 * is not a power of two. */
int hot_ranges_glue(const DbProfileRange *ranges, size_t n, const uint64_t *sizes, size_t n_files, uint64_t unit,
                    HotRange **ret, size_t *ret_n);

/* The hot bytes of a file: the sum of its glued ranges' lengths, each rounded up to `unit` (what its slices
 * take in the donor; what MaxFileMiB= and the hot-set cap count). */
uint64_t hot_ranges_file_bytes(const HotRange *r, size_t n, size_t file, uint64_t unit);

/* Whether a movable file joins the hot set of its filesystem, judged at its first range: its hot bytes
 * against MaxFileMiB= (max_file) and, added to the slices already taken, against the hot-set cap. */
typedef enum HotAdmit {
        HOT_ADMIT,
        HOT_TOO_LARGE,          /* more hot bytes than MaxFileMiB= */
        HOT_SET_FULL,           /* they do not fit in the hot set any more */
} HotAdmit;

HotAdmit hot_ranges_admit(uint64_t hot_bytes, uint64_t max_file, uint64_t slices, uint64_t cap);

/* The ranges of a profile whose files are all counted whole: one per file, in the files' order, 0..size
 * (until the profile store keeps page ranges, what the planner uses). */
int hot_ranges_whole(const DbProfileFile *files, size_t n_files, DbProfileRange **ret, size_t *ret_n);

/* The part of a file's extents[0..n) (FIEMAP, bytes) that lies in [offset, offset + length): each extent cut
 * to it (logical and physical moved alike). *ret malloc'ed (NULL with 0 when none). */
int hot_ranges_clip_extents(const Extent *e, size_t n, uint64_t offset, uint64_t length, Extent **ret, size_t *ret_n);
