/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>

#include "common/macro.h"
#include "relocate/run.h"

RunFileState run_file_state_of(MoveResult r) {
        switch (r) {
        case MOVE_DONE:
                return RUN_FILE_DONE;
        case MOVE_IN_PLACE:
                return RUN_FILE_IN_PLACE;
        case MOVE_SKIPPED:
                return RUN_FILE_SKIPPED;
        default:
                return RUN_FILE_RETRY;
        }
}

int run_create(Db *db, uint64_t fsid, const char *mount, const MoveItem *items, size_t n, int64_t *ret_run_id) {
        _cleanup_free_ int64_t *ids = calloc(n + 1, sizeof *ids), *mtimes = calloc(n + 1, sizeof *mtimes);
        _cleanup_free_ uint64_t *sizes = calloc(n + 1, sizeof *sizes), *offsets = calloc(n + 1, sizeof *offsets),
                                *lengths = calloc(n + 1, sizeof *lengths);

        if (!ids || !mtimes || !sizes || !offsets || !lengths)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                ids[i] = items[i].file_id;
                sizes[i] = items[i].size;
                mtimes[i] = items[i].mtime_ns;
                offsets[i] = items[i].offset;
                lengths[i] = items[i].length;
        }
        return db_run_create(db, fsid, mount, ids, sizes, mtimes, offsets, lengths, n, ret_run_id);
}

MoveItem run_item_of(const DbRunFile *f) {
        return (MoveItem) {
                .file_id = f->file.id,
                .path = f->file.path,
                .key = f->file.key,
                .size = f->file.size,
                .mtime_ns = f->file.mtime_ns,
                .offset = f->offset,
                .length = f->length,
        };
}

int run_checkpoint(Db *db, int64_t run_id, size_t position, const MoveOutcome *o) {
        return db_run_file_checkpoint(db, run_id, position, run_file_state_of(o->result), o->why, o->reason,
                                      o->bytes);
}

int run_finish(Db *db, int64_t run_id, int error, const MoverStats *st) {
        if (error < 0 || !st)
                return db_run_finish(db, run_id, RUN_FAILED, 0, 0, 0);
        return db_run_finish(db, run_id, st->io_error < 0 ? RUN_FAILED : st->cancelled ? RUN_CANCELLED : RUN_DONE,
                             st->donor_runs, st->files_moved, st->bytes_moved);
}
