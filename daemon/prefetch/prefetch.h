/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Issues a prefetch plan (prefetch-plan.h): buffered readahead only, never a read into our memory, never
 * O_DIRECT, never a write. Each range is asked for in calls of at most the device's read-ahead size: the
 * kernel cuts a longer POSIX_FADV_WILLNEED to that and reads no more (doc/kernel.md §8). Metadata is read
 * ahead on the block device, whose page cache is ext4's metadata cache. What is already in the page cache
 * is counted and not asked for. The calls only queue I/O: a run takes the time of submitting it, and
 * stops at the first of its budget in bytes, its deadline, a cancel, or its caller's stop (memory
 * floor, pressure: asked every PREFETCH_ASK_BYTES). Runs on the caller's thread; knows nothing of the
 * daemon. */

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "prefetch/prefetch-plan.h"

#define PREFETCH_CHUNK_DEFAULT (UINT64_C(128) * 1024)
#define PREFETCH_ASK_BYTES (UINT64_C(4) << 20)

typedef enum PrefetchEnd {
        PREFETCH_END_DONE,              /* every range asked for */
        PREFETCH_END_CAP,               /* max_bytes reached */
        PREFETCH_END_DEADLINE,
        PREFETCH_END_CANCELLED,
        PREFETCH_END_STOPPED,           /* should_stop() said so */
        _PREFETCH_END_MAX,
        _PREFETCH_END_INVALID = -EINVAL,
} PrefetchEnd;

const char *prefetch_end_to_string(PrefetchEnd e);
PrefetchEnd prefetch_end_from_string(const char *s);

typedef struct PrefetchOptions {
        int mount_fd;                   /* the filesystem (a directory fd): files open by handle */
        int bdev_fd;                    /* its block device, opened O_RDONLY; < 0: metadata left out */
        uint64_t chunk_bytes;           /* at most this much a call: the device's read-ahead
                                         * (prefetch_chunk_bytes()); 0: PREFETCH_CHUNK_DEFAULT */
        uint64_t max_bytes;             /* ask for at most this much (whole pages, not counting what is
                                         * cached); 0: all */
        uint64_t deadline_usec;         /* CLOCK_MONOTONIC; 0: none */
        atomic_bool *cancel;            /* set from another thread: stops before the next call */
        bool (*should_stop)(void *userdata);
        void *userdata;
} PrefetchOptions;

typedef struct PrefetchStats {
        uint64_t bytes_asked;           /* given to the kernel to read (whole pages) */
        uint64_t bytes_cached;          /* already in the page cache: not asked for */
        uint64_t metadata_asked;        /* of bytes_asked, on the block device */
        uint64_t calls;                 /* readahead calls made */
        unsigned files_stale;           /* the plan's, and the files whose handle stopped opening since */
        unsigned errors;                /* calls the kernel refused (each skipped) */
        size_t ranges_done;             /* of the plan's ranges, in order */
        PrefetchEnd end;
} PrefetchStats;

/* The read-ahead size of the block device bdev_fd (BLKRAGET); PREFETCH_CHUNK_DEFAULT if it cannot tell. */
uint64_t prefetch_chunk_bytes(int bdev_fd);

/* Issues plan with o; *ret_stats says how far it got and why it ended. Returns 0, or a negative errno for
 * bad options only: what a single file or call does wrong is counted and skipped. */
int prefetch_run(const PrefetchPlan *plan, const PrefetchOptions *o, PrefetchStats *ret_stats);
