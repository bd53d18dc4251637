/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "fs/mounts.h"

/* What the early-boot pass needs, filled by its caller from the configuration and the command line. */
typedef struct EarlyPassOptions {
        uint64_t budget_usec;           /* EarlyBudgetSec= */
        const char *db_path;
        const char *state_dir;          /* the mover's saved tunables */
        const FilesystemPins *only_filesystems;         /* NULL: every filesystem */
        const char *mount_as;           /* the mount point its runs record; NULL: where it is mounted now
                                         * (the initramfs stage: "/", mounted at ${rootmnt} before the switch) */
        bool no_execs;                  /* nothing can execute the files (the initramfs, before the switch):
                                         * moved without holding execs, no exec thread */
        uint64_t keep_running_fsid;     /* the initramfs stage's early pass works on this filesystem (the
                                         * root): a queued program of it that runs already stays queued for
                                         * the next boot's stage, instead of being skipped for good; 0: none */
        uint64_t *ret_moved;            /* if set: files moved */
        bool *ret_stopped;              /* if set: whether the budget or a signal stopped it */
} EarlyPassOptions;

/* The early-boot pass (seeklessd --early-pass, from seekless-early.service): right after the root
 * filesystem becomes writable and before most services start, move the files earlier runs had to leave
 * because they were running executables, within EarlyBudgetSec=. No D-Bus and no recording: the database,
 * the mover, and an exec thread of its own that holds execs of a file while it moves. Returns 0 (also when there was nothing to do or the budget ran out), or a negative errno. */
int early_pass_run(const EarlyPassOptions *opts);
