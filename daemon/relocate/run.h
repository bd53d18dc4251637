/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "store/db.h"
#include "relocate/mover.h"

/* The life of a run, the same for the optimizer and the early-boot pass: one filesystem's batch gets a
 * run in the database with its files in layout order (all pending), each file is checkpointed as soon as
 * the mover is done with it, on the disk before the next one moves, and the run is finished with the
 * mover's stats. A run still "running" after a restart was interrupted: its pending files are what is left
 * to do. */

/* What the run store keeps for a mover's result. */
RunFileState run_file_state_of(MoveResult r);

/* Creates the run of items[0..n) (their file ids, planned sizes and mtimes, ranges, positions 0..n-1). */
int run_create(Db *db, uint64_t fsid, const char *mount, const MoveItem *items, size_t n, int64_t *ret_run_id);

/* The item a run's entry stands for (as db_run_files() returned it): the file as planned, its range; path
 * points into f. What an interrupted run resumes with. */
MoveItem run_item_of(const DbRunFile *f);

/* The checkpoint of the item at position: its state, why it was not moved and the text shown; on the disk
 * when this returns (the caller lets the mover touch the next item only then). */
int run_checkpoint(Db *db, int64_t run_id, size_t position, const MoveOutcome *o);

/* Ends a run: failed when error < 0 (the mover could not start; st may be NULL then) or when the
 * filesystem failed under it (st->io_error), else cancelled or done, with what st says was moved. */
int run_finish(Db *db, int64_t run_id, int error, const MoverStats *st);
