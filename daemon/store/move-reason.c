/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stddef.h>
#include <string.h>

#include "common/macro.h"
#include "store/move-reason.h"

static const char *const move_reason_table[_MOVE_REASON_MAX] = {
        [MOVE_REASON_NONE] = "",
        [MOVE_REASON_CANCELLED] = "cancelled",
        [MOVE_REASON_RUNNING] = "running",
        [MOVE_REASON_RUNNING_EARLY] = "running-early",
        [MOVE_REASON_BUSY] = "busy",
        [MOVE_REASON_NO_SPACE] = "no-space",
        [MOVE_REASON_GONE] = "gone",
        [MOVE_REASON_CHANGED] = "changed",
        [MOVE_REASON_UNMOVABLE] = "unmovable",
        [MOVE_REASON_ERROR] = "error",
        [MOVE_REASON_RUN_FAILED] = "run-failed",
        [MOVE_REASON_IO_ERROR] = "io-error",
};

DEFINE_STRING_TABLE(move_reason, MoveReason)
