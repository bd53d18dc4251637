/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>

/* Why a file was not moved, as a code: what decides anything (resume, the early-boot pass's queue) looks
 * at this, never at the text shown beside it (MoveOutcome.reason). The strings are the codes the run store
 * keeps (run_files.why): never change one. */
typedef enum MoveReason {
        MOVE_REASON_NONE,               /* moved, or already in place */
        MOVE_REASON_CANCELLED,          /* the run was cancelled or paused before this file */
        MOVE_REASON_RUNNING,            /* a running executable (or a swap file): the early-boot pass's queue */
        MOVE_REASON_RUNNING_EARLY,      /* running since before the early-boot pass: no pass can move it */
        MOVE_REASON_BUSY,               /* open for writing, leased, being written or mapped: try later */
        MOVE_REASON_NO_SPACE,           /* no room for the donor or for this file's blocks */
        MOVE_REASON_GONE,               /* deleted or replaced since it was recorded */
        MOVE_REASON_CHANGED,            /* size or mtime changed since the plan */
        MOVE_REASON_UNMOVABLE,          /* immutable, append-only, not a regular file, not extent-mapped, ... */
        MOVE_REASON_ERROR,              /* a system call failed (the text names it) */
        MOVE_REASON_RUN_FAILED,         /* the run could not start */
        MOVE_REASON_IO_ERROR,           /* the filesystem failed under the run (a write error, read-only): it stopped */
        _MOVE_REASON_MAX,
        _MOVE_REASON_INVALID = -EINVAL,
} MoveReason;

const char *move_reason_to_string(MoveReason r);
MoveReason move_reason_from_string(const char *s);
