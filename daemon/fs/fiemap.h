/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* A file's physical placement as FS_IOC_FIEMAP reports it (bytes). FIEMAP merges physically adjacent
 * extents, which is what layout quality wants: a "discontinuity" is where the next byte is not next on disk. */
typedef struct Extent {
        uint64_t logical;
        uint64_t physical;
        uint64_t length;
        uint32_t flags;         /* FIEMAP_EXTENT_* */
} Extent;

/* All extents of the open file (no FIEMAP_FLAG_SYNC: we never force writeback just to look).
 * Returns 0 with *ret malloc'ed (NULL and 0 for a file with no blocks), or a negative errno. */
int fiemap_get(int fd, Extent **ret, size_t *ret_n);
