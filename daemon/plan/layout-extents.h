/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/mounts.h"
#include "store/db.h"

/* Where a profile's files lie, extent by extent, for a picture of its layout (GetLayout): where each was
 * before the last run (the "before" extents the database keeps) and where its hot ranges are now (FIEMAP,
 * cut to the ranges, whole blocks). Walks every file of the profile: meant for the plan worker, with its
 * connection; opens each file by its handle on the filesystems given. Knows nothing of the bus. */

typedef struct LayoutExtent {
        uint32_t index;                 /* the file's index in the profile */
        uint64_t physical, length;
} LayoutExtent;

typedef struct LayoutExtents {
        uint64_t device;                /* bytes of the device the first reachable file is on; 0: unknown */
        LayoutExtent *before, *now;
        size_t n_before, n_now, allocated_before, allocated_now;
} LayoutExtents;

void layout_extents_done(LayoutExtents *l);

/* The extents of profile's files. -ENOENT: no such profile; -ECANCELED once *cancel turned true; another
 * negative errno from the database. Files that are gone or unreachable have no extents now; files without
 * "before" extents none before. */
int layout_extents_get(Db *db, const char *profile, const FilesystemList *filesystems,
                       const atomic_bool *cancel, LayoutExtents *ret);
