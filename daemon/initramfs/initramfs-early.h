/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* The initramfs stage's early pass: the files the last runs left queued because they were running (PID 1,
 * its libraries, udevd) are moved before the real PID 1 runs them. Only on an ext4 root mounted read-only
 * whose superblock says it is clean and checked in its time, when the command line does not ask for a
 * check; through a read-write remount that is undone (its mount flags kept), with the early pass's
 * checkpoints (relocate/early.h). */
typedef struct InitramfsEarlyOptions {
        const char *root;               /* where the root filesystem is mounted (${rootmnt}) */
        const char *state_dir;          /* the store's directory under root */
        uint64_t budget_usec;           /* the pass's time (EarlyBudgetSec=, cut by the caller) */
        bool force_fsck;                /* the command line asks for a check (fsck.mode=force, forcefsck) */
        const char *sysfs;              /* NULL: /sys (the kernel's error count) */
} InitramfsEarlyOptions;

typedef struct InitramfsEarlyResult {
        const char *skipped;            /* why it did not run (nothing written), or NULL */
        bool stopped;                   /* its budget or a signal stopped it before its queue's end */
        bool left_rw;                   /* the root could not be made read-only again */
        uint64_t moved;                 /* files */
} InitramfsEarlyResult;

/* Runs it. 0 with *ret filled (ret->skipped when it did not run), or a negative errno when the remount or
 * the pass failed (logged). */
int initramfs_early(const InitramfsEarlyOptions *o, InitramfsEarlyResult *ret);
