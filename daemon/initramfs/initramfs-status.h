/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* What the initramfs stage (seekless-initramfs(8)) did this boot: written by it to
 * /run/seekless/initramfs.status before the switch to the real root (initramfs-tools moves /run along),
 * read by seeklessd for its InitramfsStage property. One "KEY=value" a line, the value to the end of the
 * line (no newline or control character in it); unknown keys are ignored, so that both sides may grow. */

#define INITRAMFS_STATUS_PATH "/run/seekless/initramfs.status"

typedef struct InitramfsStatus {
        char outcome[32];               /* OUTCOME: "done", "off", "skipped", "failed", "stopped" */
        char summary[384];              /* SUMMARY: a sentence for seeklessctl status */
        char early_outcome[32];         /* EARLY_OUTCOME: "moved", "nothing-queued", "skipped", "off",
                                         * "failed", "stopped"; "" when the stage ended before it */
        char early_summary[384];        /* EARLY_SUMMARY */
        uint64_t prefetch_bytes;        /* PREFETCH_BYTES: asked of the disk */
        uint64_t prefetch_cached_bytes; /* PREFETCH_CACHED_BYTES: cached already, not asked */
        uint64_t prefetch_usec;         /* PREFETCH_USEC: the read-ahead's time */
        uint64_t early_queued;          /* EARLY_QUEUED: files queued for the early pass on the root */
        uint64_t early_moved;           /* EARLY_MOVED */
        uint64_t early_usec;            /* EARLY_USEC: the early pass's time, its remounts included */
        uint64_t total_usec;            /* TOTAL_USEC: the stage's time */
        uint64_t root_fsid;             /* ROOT_FSID: the root filesystem's fsid (statfs f_fsid, as the
                                         * store has it); 0: not known */
} InitramfsStatus;

/* s as the file's text into buf (size bytes): the length, or -ENOBUFS when it does not fit. */
int initramfs_status_format(const InitramfsStatus *s, char *buf, size_t size);
/* Parses the text (n bytes) into *ret (zeroed first). -EBADMSG: no OUTCOME line. */
int initramfs_status_parse(const char *text, size_t n, InitramfsStatus *ret);
/* Writes the file: its directory made (0755), PATH.tmp written and renamed over it. */
int initramfs_status_write(const char *path, const InitramfsStatus *s);
/* Reads the file. -ENOENT: the stage did not run this boot. */
int initramfs_status_read(const char *path, InitramfsStatus *ret);
