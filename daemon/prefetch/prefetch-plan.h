/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* A prefetch plan: what one start (a boot, a launch) will read, as the ranges to read ahead of it, in the
 * order to issue them. Built from a profile's hot ranges (files by handle, no path walk) and the block-device
 * ranges of filesystem metadata its sessions read; each file range resolved to where it lies on the disk
 * (FIEMAP), so that on a rotating disk the plan is one ascending sweep over the device. A file whose handle
 * no longer opens (deleted, replaced by an upgrade: a new inode) or that is shorter than recorded is stale:
 * counted and left out, never an error. Knows nothing of the daemon: prefetch.h issues a plan. */

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/fid.h"

typedef enum PrefetchKind {
        PREFETCH_METADATA,              /* a range of the block device (inode tables, directories, extent blocks) */
        PREFETCH_DATA,                  /* a range of a file */
        _PREFETCH_KIND_MAX,
} PrefetchKind;

/* In which order the plan's ranges are issued. */
typedef enum PrefetchOrder {
        PREFETCH_ORDER_DISK,            /* metadata and data together by position on the device: one sweep */
        PREFETCH_ORDER_METADATA_FIRST,  /* the metadata by position, then the data by position */
        PREFETCH_ORDER_RECORDED,        /* the metadata, then the data, each in the order they were first read
                                         * (a device without seeks) */
        _PREFETCH_ORDER_MAX,
        _PREFETCH_ORDER_INVALID = -EINVAL,
} PrefetchOrder;

const char *prefetch_order_to_string(PrefetchOrder o);
PrefetchOrder prefetch_order_from_string(const char *s);

/* A file of the profile: its handle and its size when recorded. */
typedef struct PrefetchFile {
        FileKey key;
        uint64_t size;
} PrefetchFile;

/* A range in bytes: of files[file] (data), or of the block device (metadata: file unused). */
typedef struct PrefetchSpan {
        uint32_t file;
        uint64_t offset, length;
} PrefetchSpan;

typedef struct PrefetchInput {
        const PrefetchFile *files;
        size_t n_files;
        const PrefetchSpan *data;       /* in the order the start first read them */
        size_t n_data;
        const PrefetchSpan *metadata;   /* likewise */
        size_t n_metadata;
} PrefetchInput;

typedef struct PrefetchRange {
        PrefetchKind kind;
        uint32_t file;                  /* data: index into the plan's files */
        uint64_t offset, length;        /* bytes in the file, or on the device */
        uint64_t physical;              /* byte address on the device (UINT64_MAX: not known, e.g. not yet
                                         * allocated; such ranges go last) */
} PrefetchRange;

typedef struct PrefetchPlan {
        PrefetchFile *files;
        size_t n_files;
        PrefetchRange *ranges;
        size_t n_ranges;
        uint64_t data_bytes, metadata_bytes;
        unsigned files_stale;           /* left out: gone, replaced, or shorter than recorded */
        unsigned files_unplanned;       /* left out: not looked at before the deadline */
        uint8_t *stale;                 /* n_files flags */
} PrefetchPlan;

/* Builds the plan of in (copied) on the filesystem of mount_fd (a directory fd: files open by handle there).
 * Data ranges are cut to the file's allocated extents (holes take no reading); ranges that touch or overlap,
 * of the same file and next to each other on the device, are merged. Each file costs an open and a FIEMAP
 * (a read of its inode and extent blocks when they are not cached): cancel (may be NULL) is asked before
 * each, and at deadline_usec (CLOCK_MONOTONIC, 0: none) the files not looked at yet are left out of the
 * plan (not counted stale). Returns 0 or a negative errno (-ENOMEM, -ECANCELED; a file that cannot be
 * looked at is stale, not a failure). */
int prefetch_plan_build(int mount_fd, const PrefetchInput *in, PrefetchOrder order, const atomic_bool *cancel,
                        uint64_t deadline_usec, PrefetchPlan **ret);
PrefetchPlan *prefetch_plan_free(PrefetchPlan *p);
