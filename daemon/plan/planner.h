/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "store/db.h"
#include "plan/layout.h"
#include "fs/mounts.h"

/* The planner turns profiles into one layout per filesystem: the boot profile first, then application
 * profiles, the system's (uid_is_system(), profile-kind.h) before users', each class by how often they
 * were launched (sessions recorded, most first), each profile in its own order: the hot ranges of its
 * files, glued as hot-ranges.h says, in the order the starts read them; a file is placed by the first
 * profile that uses it. Files that cannot or should not move are skipped with a reason. A file's hot
 * bytes (its ranges' slices) count against MaxFileMiB= and the hot set per filesystem, which is capped at
 * MaxHotSetMiB= and never more than 5% of the filesystem. A file counted whole is one range, an entry
 * with length 0, as before. */

typedef struct PlanConfig {
        uint64_t max_hot_set_bytes;     /* MaxHotSetMiB= */
        uint64_t max_file_bytes;        /* MaxFileMiB=: of a file's hot bytes */
        uint64_t min_file_age_usec;     /* MinFileAgeSec= */
        const atomic_bool *cancel;      /* NULL, or turns true to stop: planner_build() fails -ECANCELED */
} PlanConfig;

typedef struct PlanFile {
        int64_t file_id;
        char *path;
        const char *profile;            /* the profile that placed it (points into Plan.profiles) */
        FileKey key;
        uint64_t size;
        int64_t mtime_ns;
        uint64_t offset, length;        /* its hot range (bytes); length 0: the whole file */
        Extent *extents;                /* where the range is now */
        size_t n_extents;
} PlanFile;

/* The bytes of an entry: its range's, or the whole file's. */
static inline uint64_t plan_file_bytes(const PlanFile *f) {
        return f->length > 0 ? f->length : f->size;
}

typedef struct PlanSkip {
        char *path;
        char *reason;
        bool retry;                     /* busy now, worth retrying later (running executable, writer) */
        /* for running executables, what the early-boot pass needs to move it later (file_id 0: unset) */
        int64_t file_id;
        size_t fs;                      /* index into Plan.fs */
        uint64_t size;
        int64_t mtime_ns;
        uint64_t *offsets, *lengths;    /* its hot ranges in layout order (length 0: the whole file) */
        size_t n_ranges, allocated_offsets, allocated_lengths;
} PlanSkip;

/* One more file left out, with why (path and reason copied; retry as given, the rest unset): the
 * planner's list and a run's. */
int plan_skip_add(PlanSkip **list, size_t *n, const char *path, const char *reason, bool retry);
void plan_skips_free(PlanSkip *list, size_t n);

typedef struct PlanProfile {
        char *name;
        ProfileKind kind;
        LayoutQuality before;           /* now, from FIEMAP */
        LayoutQuality expected;         /* if every movable file lands in its slice */
} PlanProfile;

typedef struct FsPlan {
        char *mount;
        uint64_t fsid;
        dev_t dev;
        uint64_t device_bytes;
        PlanFile *files;                /* layout order, movable files' ranges only (a file may have several) */
        size_t n_files, allocated_files;
        uint64_t bytes;
        uint64_t slices;                /* bytes the donor needs (each range rounded up to a page) */
        bool journaled;                 /* only journaled ext4 is moved on */
        bool in_place;                  /* already contiguous in this order: nothing to do */
        size_t n_in_place;              /* files of profiles already in place, left out of files[] */
        LayoutQuality before;           /* the whole layout, now */
} FsPlan;

typedef struct Plan {
        FsPlan *fs;
        size_t n_fs;
        PlanSkip *skipped;
        size_t n_skipped;
        PlanProfile *profiles;
        size_t n_profiles;
} Plan;

void plan_done(Plan *p);

/* Build the plan for the given filesystems (mounts: NULL = all of `fss`). refusals[i] (may be NULL, or
 * hold NULL entries): why relocation is off on fss->items[i], e.g. a non-rotational device; its files
 * are skipped with that reason. allowed_breaks[i]: how many
 * discontinuities the last run on fss->items[i] could not avoid (its donor's runs - 1); a layout with no
 * more than that is "in place". */
int planner_build(Db *db, const FilesystemList *fss, char *const *mounts, const PlanConfig *cfg,
                  const uint64_t *allowed_breaks, char *const *refusals, Plan *ret);

/* Breaks a run could still remove from entries files[0..n) (each with the extents of its range): a run puts
 * each entry's allocated runs one after the other (holes take no room; with blocks smaller than a page a run
 * keeps its offset inside the page, a gap of less than a page) and the next entry after its last block,
 * rounded up to `unit` (the page size) from where the entry began. Unlike the walker's discontinuities,
 * neither the rounding gaps nor holes count, so a layout a run made is "in place" (0 breaks, or no more
 * than the run could not avoid) on any block and page size, also when a file's ranges are apart. */
uint64_t planner_layout_breaks(const PlanFile *files, size_t n, uint64_t unit);

/* One file's check (all but the limits on its hot bytes, which depend on its ranges), exported for tests:
 * 0 = movable; 1 = skip (reason set, *ret_retry if worth retrying later); negative errno on internal
 * errors. fd is an O_RDONLY fd of the file. */
int planner_check_fd(int fd, const PlanConfig *cfg, uint64_t now_realtime_usec, char *reason, size_t reason_size,
                     bool *ret_retry);
