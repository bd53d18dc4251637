/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/fiemap.h"

/* Layout quality of a profile: walk its files whole, in profile order, through their extents.
 *
 *   extents          number of extents (after FIEMAP's merging of adjacent ones)
 *   discontinuities  times the next extent does not start where the previous one ended (also across files)
 *   span             bytes between the lowest and the highest physical byte touched
 *   modeled_read_ms  a 7200 rpm disk reading the whole sequence:
 *                      transfer at 150 MB/s (1 MB = 10^6 bytes);
 *                      the next extent starting where the previous ended costs nothing extra;
 *                      a forward gap of at most 64 KiB costs the transfer of the gap (the head reads over it);
 *                      any other jump costs a seek: 1 ms settle + 15 ms * sqrt(distance / device size)
 *                      + 4.17 ms rotational latency (half a turn at 7200 rpm);
 *                      the first extent costs one seek of distance 0 (settle + rotation).
 * Files with no blocks (empty, inline) contribute nothing. */
typedef struct LayoutQuality {
        uint64_t files;
        uint64_t bytes;
        uint64_t extents;
        uint64_t discontinuities;
        uint64_t span;
        double modeled_read_ms;
} LayoutQuality;

#define LAYOUT_TRANSFER_BPS 150e6
#define LAYOUT_SHORT_GAP (64 * 1024)

/* The seek part of the model for a jump of `distance` bytes (0 = rotational + settle only). */
double layout_seek_ms(uint64_t distance, uint64_t device_bytes);

/* False for extents with no place on disk of their own: delayed allocation (not yet written, physical
 * reported as 0) and data stored inline in the inode. They are read with the metadata, or not at all, and
 * count for nothing here. */
bool layout_extent_has_blocks(const Extent *e);

/* Incremental form: init, then add each file's extents in order. */
typedef struct LayoutWalker {
        LayoutQuality q;
        uint64_t device_bytes;
        uint64_t lo, hi;        /* physical span so far */
        uint64_t next;          /* where the previous extent ended */
        int started;
} LayoutWalker;

void layout_walker_init(LayoutWalker *w, uint64_t device_bytes);
void layout_walker_add_file(LayoutWalker *w, const Extent *extents, size_t n);
void layout_walker_finish(LayoutWalker *w, LayoutQuality *ret);

/* A sequence of requests (physical offset, length), e.g. a block trace, costed with the same model. */
double layout_model_requests_ms(const uint64_t *offsets, const uint64_t *lengths, size_t n, uint64_t device_bytes);
