/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Optimizer state in the database: runs, per-file checkpoints, quality snapshots. Never logs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/alloc-util.h"
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

        r = db_begin(db, true, &tx);
        if (r < 0)
                return r;
        {
                _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_RUN_INSERT);
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                r = db_query_id(db, st, &id, DB_I64(fsid), DB_TEXT(mount),
                                DB_I64((int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000));
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_RUN_FILE_INSERT);
                r = db_write(db, st, DB_I64(id), DB_I64(i), DB_I64(file_ids[i]), DB_I64(sizes[i]),
                             DB_I64(mtimes[i]), DB_I64(offsets ? (int64_t) offsets[i] : 0),
                             DB_I64(lengths ? (int64_t) lengths[i] : 0));
                if (r < 0)
                        return r;
        }
        r = db_commit(&tx);
        if (r < 0)
                return r;
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
        r = db_write(db, st, DB_I64(run_id), DB_I64(position), DB_TEXT(s), DB_TEXT(reason ?: ""),
                     DB_I64(bytes), DB_TEXT(move_reason_to_string(why) ?: ""));
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

        clock_gettime(CLOCK_REALTIME, &ts);
        return db_write(db, st, DB_I64(run_id), DB_TEXT(run_state_to_string(state)),
                        DB_I64((int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000), DB_I64(donor_runs),
                        DB_I64(moved_files), DB_I64(moved_bytes));
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

        r = db_query(db, st, DB_I64(fsid));
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

        r = db_bind(db, st, DB_I64(run_id));
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
        return db_write(db, st, DB_I64(pid), DB_TEXT(quality_which_to_string(which)), DB_I64(q->taken),
                        DB_I64(q->files), DB_I64(q->extents), DB_I64(q->discontinuities), DB_I64(q->span),
                        DB_DOUBLE(q->modeled_ms));
}

int db_quality_get(Db *db, const char *profile, QualityWhich which, DbQuality *ret) {
        _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_QUALITY_GET);
        int r;

        r = db_query(db, st, DB_TEXT(profile), DB_TEXT(quality_which_to_string(which)));
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

        r = db_begin(db, true, &tx);
        if (r < 0)
                return r;
        {
                _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_EXTENTS_DELETE);
                r = db_write(db, st, DB_I64(file_id));
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_EXTENT_INSERT);
                r = db_write(db, st, DB_I64(file_id), DB_I64(i), DB_I64(physical[i]), DB_I64(length[i]));
                if (r < 0)
                        return r;
        }
        r = db_commit(&tx);
        if (r < 0)
                return r;
        return 0;
}

int db_extents_before_get(Db *db, int64_t file_id, uint64_t **ret_physical, uint64_t **ret_length, size_t *ret_n) {
        _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_EXTENTS_GET);
        _cleanup_free_ uint64_t *ph = NULL, *len = NULL;
        size_t n = 0, alloc_ph = 0, alloc_len = 0;
        int r;

        r = db_bind(db, st, DB_I64(file_id));
        if (r < 0)
                return r;
        while ((r = db_step(db, st)) > 0) {
                if (GREEDY_REALLOC(ph, alloc_ph, n + 1) < 0 || GREEDY_REALLOC(len, alloc_len, n + 1) < 0)
                        return -ENOMEM;
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

        return db_write(db, st, DB_I64(run_id), DB_I64(position), DB_I64(file_id), DB_I64(size),
                        DB_I64(mtime_ns), DB_I64(offset), DB_I64(length));
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

        r = db_bind(db, st, DB_TEXT(move_reason_to_string(why)));
        if (r < 0)
                return r;
        return db_read_rows(db, st, sizeof(DbRunFile), read_retry_entry, run_files_free, (void **) ret, ret_n);
}


int db_run_files_waiting(Db *db, int64_t run_id, MoveReason why) {
        _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_RUN_FILES_WAITING);

        return db_write(db, st, DB_I64(run_id), DB_TEXT(move_reason_to_string(why) ?: ""));
}

int db_runs_close_waiting(Db *db, MoveReason why) {
        _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_RUNS_CLOSE_WAITING);
        struct timespec ts;
        int r;

        clock_gettime(CLOCK_REALTIME, &ts);
        r = db_write(db, st, DB_TEXT(move_reason_to_string(why) ?: ""),
                     DB_I64((int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000));
        if (r < 0)
                return r;
        return sqlite3_changes(db_sqlite(db));
}

int db_run_file_settled(Db *db, int64_t file_id, uint64_t size, int64_t mtime_ns) {
        _cleanup_reset_ sqlite3_stmt *st = db_run_stmt(db, RUN_STMT_FILE_SETTLED);
        int r;

        r = db_query(db, st, DB_I64(file_id), DB_I64(size), DB_I64(mtime_ns));
        if (r <= 0)
                return r;
        return sqlite3_column_int(st, 0) > 0;
}
