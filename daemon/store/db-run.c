/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Optimizer state in the database: runs, per-file checkpoints, quality snapshots. Never logs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/db-private.h"
#include "common/macro.h"

const char *const run_stmt_sql[_RUN_STMT_MAX] = {
        [RUN_STMT_RUN_INSERT] =
                "INSERT INTO runs (fsid, mount, started, state) VALUES (?1, ?2, ?3, 'running') RETURNING id",
        [RUN_STMT_RUN_FILE_INSERT] =
                "INSERT INTO run_files (run_id, position, file_id, size, mtime_ns, state, range_offset, range_length) "
                "VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?7)",
        [RUN_STMT_RUN_FILE_UPDATE] =
                "UPDATE run_files SET state = ?3, reason = ?4, bytes = ?5, why = ?6 WHERE run_id = ?1 AND position = ?2",
        [RUN_STMT_RUN_FINISH] =
                "UPDATE runs SET state = ?2, finished = ?3, donor_runs = ?4, moved_files = ?5, moved_bytes = ?6 "
                "WHERE id = ?1",
        [RUN_STMT_RUNS_UNFINISHED] =
                "SELECT id, fsid, mount, started, finished, state, donor_runs, moved_files, moved_bytes "
                "FROM runs WHERE state = 'running' ORDER BY id",
        [RUN_STMT_RUN_FILES] =
                "SELECT " FILE_COLUMNS ", rf.position, rf.state, rf.reason, rf.bytes, rf.size, rf.mtime_ns, "
                "rf.range_offset, rf.range_length FROM run_files rf JOIN files f ON f.id = rf.file_id WHERE rf.run_id = ?1 ORDER BY rf.position",
        [RUN_STMT_RUN_LAST] =
                "SELECT id, fsid, mount, started, finished, state, donor_runs, moved_files, moved_bytes "
                "FROM runs WHERE fsid = ?1 AND state <> 'running' ORDER BY id DESC LIMIT 1",
        [RUN_STMT_QUALITY_UPSERT] =
                "INSERT INTO quality (profile_id, which, taken, files, extents, discontinuities, span, modeled_ms) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (profile_id, which) DO UPDATE SET "
                "taken = excluded.taken, files = excluded.files, extents = excluded.extents, "
                "discontinuities = excluded.discontinuities, span = excluded.span, modeled_ms = excluded.modeled_ms",
        [RUN_STMT_QUALITY_GET] =
                "SELECT q.taken, q.files, q.extents, q.discontinuities, q.span, q.modeled_ms FROM quality q "
                "JOIN profiles p ON p.id = q.profile_id WHERE p.name = ?1 AND q.which = ?2",
        /* the entries of files' newest runs that are a retry for this reason, or still wait for it (a
         * pass that never reached them), with their planned size/mtime and range, each range once (a run
         * has it once; this is for safety) */
        [RUN_STMT_RETRY_FILES] =
                "SELECT DISTINCT " FILE_COLUMNS ", rf.size, rf.mtime_ns, rf.range_offset, rf.range_length "
                "FROM files f JOIN run_files rf ON rf.file_id = f.id "
                "WHERE rf.state IN ('retry', 'pending') AND rf.why = ?1 "
                "AND rf.run_id = (SELECT MAX(run_id) FROM run_files r2 WHERE r2.file_id = f.id) "
                "ORDER BY f.id, rf.range_offset",
        [RUN_STMT_EXTENTS_DELETE] = "DELETE FROM extents_before WHERE file_id = ?1",
        [RUN_STMT_EXTENT_INSERT] =
                "INSERT INTO extents_before (file_id, seq, physical, length) VALUES (?1, ?2, ?3, ?4)",
        [RUN_STMT_EXTENTS_GET] = "SELECT physical, length FROM extents_before WHERE file_id = ?1 ORDER BY seq",
        [RUN_STMT_RUN_FILES_WAITING] = "UPDATE run_files SET why = ?2 WHERE run_id = ?1 AND state = 'pending'",
        /* what its checkpoints say was moved: the run never got to count it */
        [RUN_STMT_RUNS_CLOSE_WAITING] =
                "UPDATE runs SET state = 'cancelled', finished = ?2, "
                "moved_files = (SELECT COUNT(DISTINCT file_id) FROM run_files rf WHERE rf.run_id = runs.id AND rf.state = 'done'), "
                "moved_bytes = (SELECT COALESCE(SUM(bytes), 0) FROM run_files rf WHERE rf.run_id = runs.id) "
                "WHERE state = 'running' AND EXISTS (SELECT 1 FROM run_files rf WHERE rf.run_id = runs.id "
                "AND rf.state = 'pending' AND rf.why = ?1)",
        /* NULL when no run had it */
        [RUN_STMT_FILE_SETTLED] =
                "SELECT MIN(state IN ('done', 'in_place') AND size = ?2 AND mtime_ns = ?3) FROM run_files "
                "WHERE file_id = ?1 AND run_id = (SELECT MAX(run_id) FROM run_files WHERE file_id = ?1)",
};

static const char *const run_file_state_table[_RUN_FILE_STATE_MAX] = {
        [RUN_FILE_PENDING] = "pending",
        [RUN_FILE_DONE] = "done",
        [RUN_FILE_IN_PLACE] = "in_place",
        [RUN_FILE_SKIPPED] = "skipped",
        [RUN_FILE_RETRY] = "retry",
};

DEFINE_STRING_TABLE_TO_STRING(run_file_state, RunFileState, )

static const char *const run_state_table[_RUN_STATE_MAX] = {
        [RUN_RUNNING] = "running",
        [RUN_DONE] = "done",
        [RUN_CANCELLED] = "cancelled",
        [RUN_FAILED] = "failed",
};

DEFINE_STRING_TABLE(run_state, RunState)

static const char *const quality_which_table[_QUALITY_WHICH_MAX] = {
        [QUALITY_BEFORE] = "before",
        [QUALITY_AFTER] = "after",
};

DEFINE_STRING_TABLE_TO_STRING(quality_which, QualityWhich, )
DEFINE_STRING_TABLE_FROM_STRING(run_file_state, RunFileState, static)

void db_run_files_free(DbRunFile *f, size_t n) {
        for (size_t i = 0; f && i < n; i++) {
                db_file_done(&f[i].file);
                free(f[i].reason);
        }
        free(f);
}

void db_run_infos_free(DbRunInfo *r, size_t n) {
        for (size_t i = 0; r && i < n; i++) {
                free(r[i].mount);
        }
        free(r);
}

static int run_create_tx(Db *db, uint64_t fsid, const char *mount, const int64_t *file_ids, const uint64_t *sizes,
                         const int64_t *mtimes, const uint64_t *offsets, const uint64_t *lengths, size_t n,
                         int64_t *ret_run_id) {
        _cleanup_rollback_ Db *tx = NULL;
        int64_t id;
        int r;

        r = db_begin(db, true);
        if (r < 0)
                return r;
        tx = db;
        {
                _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_RUN_INSERT);
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                if ((r = bind_i64(db, st, 1, (int64_t) fsid)) < 0 || (r = bind_text(db, st, 2, mount)) < 0 ||
                    (r = bind_i64(db, st, 3, (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000)) < 0)
                        return r;
                r = db_step(db, st);
                if (r < 0)
                        return r;
                if (r == 0)
                        return -EIO;
                id = sqlite3_column_int64(st, 0);
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_RUN_FILE_INSERT);
                if ((r = bind_i64(db, st, 1, id)) < 0 || (r = bind_i64(db, st, 2, (int64_t) i)) < 0 ||
                    (r = bind_i64(db, st, 3, file_ids[i])) < 0 || (r = bind_i64(db, st, 4, (int64_t) sizes[i])) < 0 ||
                    (r = bind_i64(db, st, 5, mtimes[i])) < 0 ||
                    (r = bind_i64(db, st, 6, offsets ? (int64_t) offsets[i] : 0)) < 0 ||
                    (r = bind_i64(db, st, 7, lengths ? (int64_t) lengths[i] : 0)) < 0)
                        return r;
                r = db_step_done(db, st);
                if (r < 0)
                        return r;
        }
        r = db_commit(db);
        if (r < 0)
                return r;
        tx = NULL;
        if (ret_run_id)
                *ret_run_id = id;
        return 0;
}

/* Durable before the first file moves: the moves commit in the filesystem's journal within seconds, while a
 * commit under synchronous = NORMAL may wait in the page cache until a WAL checkpoint, so a power cut
 * could leave files moved and no run to resume. (The per-file checkpoints: db_run_file_checkpoint().) */
int db_run_create(Db *db, uint64_t fsid, const char *mount, const int64_t *file_ids, const uint64_t *sizes,
                  const int64_t *mtimes, const uint64_t *offsets, const uint64_t *lengths, size_t n,
                  int64_t *ret_run_id) {
        int r;

        r = db_set_synchronous_full(db, true);
        if (r < 0)
                return r;
        r = run_create_tx(db, fsid, mount, file_ids, sizes, mtimes, offsets, lengths, n, ret_run_id);
        (void) db_set_synchronous_full(db, false);
        return r;
}

int db_run_file_set(Db *db, int64_t run_id, size_t position, RunFileState state, MoveReason why,
                    const char *reason, uint64_t bytes) {
        _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_RUN_FILE_UPDATE);
        const char *s = run_file_state_to_string(state);
        int r;

        if (!s)
                return -EINVAL;
        if ((r = bind_i64(db, st, 1, run_id)) < 0 || (r = bind_i64(db, st, 2, (int64_t) position)) < 0 ||
            (r = bind_text(db, st, 3, s)) < 0 || (r = bind_text(db, st, 4, reason ?: "")) < 0 ||
            (r = bind_i64(db, st, 5, (int64_t) bytes)) < 0 ||
            (r = bind_text(db, st, 6, move_reason_to_string(why) ?: "")) < 0)
                return r;
        r = db_step_done(db, st);
        if (r < 0)
                return r;
        return sqlite3_changes(db_sqlite(db)) > 0 ? 0 : -ENOENT;
}

/* Durable before the mover touches the next file, for the same reason as the run's creation: a checkpoint
 * still in the page cache when the power goes leaves a file pending that the filesystem's journal has
 * moved, and the resumed run moves it a second time. Costs a sync of the WAL per file (bench/README.md,
 * "Durable checkpoints"). */
int db_run_file_checkpoint(Db *db, int64_t run_id, size_t position, RunFileState state, MoveReason why,
                           const char *reason, uint64_t bytes) {
        int r;

        r = db_set_synchronous_full(db, true);
        if (r < 0)
                return r;
        r = db_run_file_set(db, run_id, position, state, why, reason, bytes);
        (void) db_set_synchronous_full(db, false);
        return r;
}

int db_run_finish(Db *db, int64_t run_id, RunState state, uint64_t donor_runs, uint64_t moved_files,
                  uint64_t moved_bytes) {
        _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_RUN_FINISH);
        struct timespec ts;
        int r;

        clock_gettime(CLOCK_REALTIME, &ts);
        if ((r = bind_i64(db, st, 1, run_id)) < 0 || (r = bind_text(db, st, 2, run_state_to_string(state))) < 0 ||
            (r = bind_i64(db, st, 3, (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000)) < 0 ||
            (r = bind_i64(db, st, 4, (int64_t) donor_runs)) < 0 || (r = bind_i64(db, st, 5, (int64_t) moved_files)) < 0 ||
            (r = bind_i64(db, st, 6, (int64_t) moved_bytes)) < 0)
                return r;
        return db_step_done(db, st);
}

static int read_run_row(Db *db, sqlite3_stmt *st, DbRunInfo *ret) {
        DbRunInfo i = {
                .id = sqlite3_column_int64(st, 0),
                .fsid = (uint64_t) sqlite3_column_int64(st, 1),
                .started = (uint64_t) sqlite3_column_int64(st, 3),
                .finished = (uint64_t) sqlite3_column_int64(st, 4),
                .donor_runs = (uint64_t) sqlite3_column_int64(st, 6),
                .moved_files = (uint64_t) sqlite3_column_int64(st, 7),
                .moved_bytes = (uint64_t) sqlite3_column_int64(st, 8),
        };
        int r;

        r = column_strdup(db, st, 2, &i.mount);
        if (r < 0)
                return r;
        i.state = run_state_from_string((const char *) sqlite3_column_text(st, 5));
        if (i.state < 0) {
                free(i.mount);
                return -EBADMSG;
        }
        *ret = i;
        return 0;
}

static int read_run_info(Db *db, sqlite3_stmt *st, void *row) {
        return read_run_row(db, st, row);
}

static void run_infos_free(void *rows, size_t n) {
        db_run_infos_free(rows, n);
}

int db_runs_unfinished(Db *db, DbRunInfo **ret, size_t *ret_n) {
        _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_RUNS_UNFINISHED);

        return db_read_rows(db, st, sizeof(DbRunInfo), read_run_info, run_infos_free, (void **) ret, ret_n);
}

int db_run_last(Db *db, uint64_t fsid, DbRunInfo *ret) {
        _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_RUN_LAST);
        int r;

        r = bind_i64(db, st, 1, (int64_t) fsid);
        if (r < 0)
                return r;
        r = db_step(db, st);
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOENT;
        return read_run_row(db, st, ret);
}

static int read_run_file(Db *db, sqlite3_stmt *st, void *row) {
        DbRunFile *f = row;
        int r;

        r = read_file_row(db, st, 0, &f->file);
        if (r < 0)
                return r;
        f->position = (size_t) sqlite3_column_int64(st, 9);
        f->state = run_file_state_from_string((const char *) sqlite3_column_text(st, 10));
        f->bytes = (uint64_t) sqlite3_column_int64(st, 12);
        /* the planned size and mtime, not the current ones */
        f->file.size = (uint64_t) sqlite3_column_int64(st, 13);
        f->file.mtime_ns = sqlite3_column_int64(st, 14);
        f->offset = (uint64_t) sqlite3_column_int64(st, 15);
        f->length = (uint64_t) sqlite3_column_int64(st, 16);
        r = f->state < 0 ? -EBADMSG : column_strdup(db, st, 11, &f->reason);
        if (r < 0)
                db_file_done(&f->file);
        return r;
}

static void run_files_free(void *rows, size_t n) {
        db_run_files_free(rows, n);
}

int db_run_files(Db *db, int64_t run_id, DbRunFile **ret, size_t *ret_n) {
        _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_RUN_FILES);
        int r;

        r = bind_i64(db, st, 1, run_id);
        if (r < 0)
                return r;
        return db_read_rows(db, st, sizeof(DbRunFile), read_run_file, run_files_free, (void **) ret, ret_n);
}

int db_quality_set(Db *db, const char *profile, QualityWhich which, const DbQuality *q) {
        _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_QUALITY_UPSERT);
        int64_t pid;
        int r;

        r = profile_lookup(db, profile, &pid, NULL);
        if (r < 0)
                return r;
        if ((r = bind_i64(db, st, 1, pid)) < 0 || (r = bind_text(db, st, 2, quality_which_to_string(which))) < 0 ||
            (r = bind_i64(db, st, 3, (int64_t) q->taken)) < 0 || (r = bind_i64(db, st, 4, (int64_t) q->files)) < 0 ||
            (r = bind_i64(db, st, 5, (int64_t) q->extents)) < 0 ||
            (r = bind_i64(db, st, 6, (int64_t) q->discontinuities)) < 0 ||
            (r = bind_i64(db, st, 7, (int64_t) q->span)) < 0 || (r = bind_double(db, st, 8, q->modeled_ms)) < 0)
                return r;
        return db_step_done(db, st);
}

int db_quality_get(Db *db, const char *profile, QualityWhich which, DbQuality *ret) {
        _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_QUALITY_GET);
        int r;

        if ((r = bind_text(db, st, 1, profile)) < 0 || (r = bind_text(db, st, 2, quality_which_to_string(which))) < 0)
                return r;
        r = db_step(db, st);
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOENT;
        *ret = (DbQuality) {
                .taken = (uint64_t) sqlite3_column_int64(st, 0),
                .files = (uint64_t) sqlite3_column_int64(st, 1),
                .extents = (uint64_t) sqlite3_column_int64(st, 2),
                .discontinuities = (uint64_t) sqlite3_column_int64(st, 3),
                .span = (uint64_t) sqlite3_column_int64(st, 4),
                .modeled_ms = sqlite3_column_double(st, 5),
        };
        return 0;
}

int db_extents_before_set(Db *db, int64_t file_id, const uint64_t *physical, const uint64_t *length, size_t n) {
        _cleanup_rollback_ Db *tx = NULL;
        int r;

        r = db_begin(db, true);
        if (r < 0)
                return r;
        tx = db;
        {
                _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_EXTENTS_DELETE);
                if ((r = bind_i64(db, st, 1, file_id)) < 0 || (r = db_step_done(db, st)) < 0)
                        return r;
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_EXTENT_INSERT);
                if ((r = bind_i64(db, st, 1, file_id)) < 0 || (r = bind_i64(db, st, 2, (int64_t) i)) < 0 ||
                    (r = bind_i64(db, st, 3, (int64_t) physical[i])) < 0 ||
                    (r = bind_i64(db, st, 4, (int64_t) length[i])) < 0 || (r = db_step_done(db, st)) < 0)
                        return r;
        }
        r = db_commit(db);
        if (r < 0)
                return r;
        tx = NULL;
        return 0;
}

int db_extents_before_get(Db *db, int64_t file_id, uint64_t **ret_physical, uint64_t **ret_length, size_t *ret_n) {
        _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_EXTENTS_GET);
        _cleanup_free_ uint64_t *ph = NULL, *len = NULL;
        size_t n = 0, alloc = 0;
        int r;

        r = bind_i64(db, st, 1, file_id);
        if (r < 0)
                return r;
        while ((r = db_step(db, st)) > 0) {
                if (n == alloc) {
                        size_t na = alloc ? alloc * 2 : 8;
                        uint64_t *a = reallocarray(ph, na, sizeof *a);
                        if (!a)
                                return -ENOMEM;
                        ph = a;
                        a = reallocarray(len, na, sizeof *a);
                        if (!a)
                                return -ENOMEM;
                        len = a;
                        alloc = na;
                }
                ph[n] = (uint64_t) sqlite3_column_int64(st, 0);
                len[n] = (uint64_t) sqlite3_column_int64(st, 1);
                n++;
        }
        if (r < 0)
                return r;
        *ret_physical = TAKE_PTR(ph);
        *ret_length = TAKE_PTR(len);
        *ret_n = n;
        return 0;
}

int db_run_add_file(Db *db, int64_t run_id, size_t position, int64_t file_id, uint64_t size, int64_t mtime_ns,
                    uint64_t offset, uint64_t length) {
        _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_RUN_FILE_INSERT);
        int r;

        if ((r = bind_i64(db, st, 1, run_id)) < 0 || (r = bind_i64(db, st, 2, (int64_t) position)) < 0 ||
            (r = bind_i64(db, st, 3, file_id)) < 0 || (r = bind_i64(db, st, 4, (int64_t) size)) < 0 ||
            (r = bind_i64(db, st, 5, mtime_ns)) < 0 || (r = bind_i64(db, st, 6, (int64_t) offset)) < 0 ||
            (r = bind_i64(db, st, 7, (int64_t) length)) < 0)
                return r;
        return db_step_done(db, st);
}

static int read_retry_entry(Db *db, sqlite3_stmt *st, void *row) {
        DbRunFile *f = row;
        int r;

        r = read_file_row(db, st, 0, &f->file);
        if (r < 0)
                return r;
        /* the values at planning time: a file changed since then is not moved */
        f->file.size = (uint64_t) sqlite3_column_int64(st, 9);
        f->file.mtime_ns = sqlite3_column_int64(st, 10);
        f->offset = (uint64_t) sqlite3_column_int64(st, 11);
        f->length = (uint64_t) sqlite3_column_int64(st, 12);
        f->state = RUN_FILE_RETRY;
        return 0;
}

int db_retry_entries(Db *db, MoveReason why, DbRunFile **ret, size_t *ret_n) {
        _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_RETRY_FILES);
        int r;

        r = bind_text(db, st, 1, move_reason_to_string(why));
        if (r < 0)
                return r;
        return db_read_rows(db, st, sizeof(DbRunFile), read_retry_entry, run_files_free, (void **) ret, ret_n);
}


int db_run_files_waiting(Db *db, int64_t run_id, MoveReason why) {
        _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_RUN_FILES_WAITING);
        int r;

        if ((r = bind_i64(db, st, 1, run_id)) < 0 || (r = bind_text(db, st, 2, move_reason_to_string(why) ?: "")) < 0)
                return r;
        return db_step_done(db, st);
}

int db_runs_close_waiting(Db *db, MoveReason why) {
        _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_RUNS_CLOSE_WAITING);
        struct timespec ts;
        int r;

        clock_gettime(CLOCK_REALTIME, &ts);
        if ((r = bind_text(db, st, 1, move_reason_to_string(why) ?: "")) < 0 ||
            (r = bind_i64(db, st, 2, (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000)) < 0)
                return r;
        r = db_step_done(db, st);
        if (r < 0)
                return r;
        return sqlite3_changes(db_sqlite(db));
}

int db_run_file_settled(Db *db, int64_t file_id, uint64_t size, int64_t mtime_ns) {
        _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_FILE_SETTLED);
        int r;

        if ((r = bind_i64(db, st, 1, file_id)) < 0 || (r = bind_i64(db, st, 2, (int64_t) size)) < 0 ||
            (r = bind_i64(db, st, 3, mtime_ns)) < 0)
                return r;
        r = db_step(db, st);
        if (r <= 0)
                return r;
        return sqlite3_column_int(st, 0) > 0;
}
