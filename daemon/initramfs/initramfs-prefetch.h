/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>

#include "prefetch/prefetch.h"
#include "store/db.h"

/* The initramfs stage's read-ahead: the boot profile's plan for the root filesystem, issued before the
 * switch, so that the real PID 1 and what it maps find their data and metadata cached. Reads only: the
 * store opened read-only (db_open_readonly()), files by handle, the device read ahead through its own
 * page cache. */
typedef struct InitramfsPrefetchOptions {
        const char *root;               /* where the root filesystem is mounted (${rootmnt}) */
        Db *db;                         /* read-only */
        uint64_t deadline_usec;         /* CLOCK_MONOTONIC: the plan built and issued by then */
        uint64_t max_bytes;             /* 0: all */
        uint64_t min_available_bytes;   /* MemAvailable floor; 0: none */
        const char *sysfs;              /* NULL: /sys (the device's rotational flag) */
        bool non_rotational;            /* also on a non-rotational device (PrefetchNonRotational=) */
} InitramfsPrefetchOptions;

/* Issues it. Returns 0 with *ret_stats filled, or 0 with *ret_skipped set to why nothing was asked for ("no
 * boot profile yet", ...), or a negative errno (what failed is logged). */
int initramfs_prefetch(const InitramfsPrefetchOptions *o, PrefetchStats *ret_stats, const char **ret_skipped);
