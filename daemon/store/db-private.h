/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Shared between db.c (connection, migrations, recording) and db-run.c (optimizer state). Nothing
 * outside daemon/store/ includes this. */

#include <sqlite3.h>
#include <stdbool.h>

#include "common/alloc-util.h"
#include "store/db.h"

/* How long a statement waits for another connection's lock before it fails with -EBUSY. */
#define DB_BUSY_TIMEOUT_MSEC 5000

typedef enum RunStmt {
        RUN_STMT_RUN_INSERT,
        RUN_STMT_RUN_FILE_INSERT,
        RUN_STMT_RUN_FILE_UPDATE,
        RUN_STMT_RUN_FINISH,
        RUN_STMT_RUNS_UNFINISHED,
        RUN_STMT_RUN_FILES,
        RUN_STMT_RUN_LAST,
        RUN_STMT_QUALITY_UPSERT,
        RUN_STMT_QUALITY_GET,
        RUN_STMT_RETRY_FILES,
        RUN_STMT_EXTENTS_DELETE,
        RUN_STMT_EXTENT_INSERT,
        RUN_STMT_EXTENTS_GET,
        RUN_STMT_RUN_FILES_WAITING,
        RUN_STMT_RUNS_CLOSE_WAITING,
        RUN_STMT_FILE_SETTLED,
        _RUN_STMT_MAX,
} RunStmt;

extern const char *const run_stmt_sql[_RUN_STMT_MAX];

/* The columns read_file_row() expects, in this order. */
#define FILE_COLUMNS "f.id, f.fsid, f.handle_type, f.handle, f.ino, f.generation, f.path, f.size, f.mtime_ns"

sqlite3 *db_sqlite(Db *db);
sqlite3_stmt *db_run_stmt(Db *db, RunStmt s);

int sqlite_errno(sqlite3 *db, int rc);
void stmt_resetp(sqlite3_stmt **st);
#define _cleanup_reset_ _cleanup_(stmt_resetp)
int db_step(Db *db, sqlite3_stmt *st);
int db_step_done(Db *db, sqlite3_stmt *st);
int bind_i64(Db *db, sqlite3_stmt *st, int i, int64_t v);
int bind_double(Db *db, sqlite3_stmt *st, int i, double v);
int bind_text(Db *db, sqlite3_stmt *st, int i, const char *s);
int bind_blob(Db *db, sqlite3_stmt *st, int i, const void *p, size_t n);
int db_begin(Db *db, bool immediate);
int db_commit(Db *db);
/* The connection runs with synchronous = NORMAL: a commit reaches the disk at the next WAL checkpoint, so a
 * power cut may take the last commits back (never part of one). With `full`, each commit syncs the WAL
 * first, which makes it and every commit before it durable. Outside a transaction. */
int db_set_synchronous_full(Db *db, bool full);
void db_rollbackp(Db **db);
#define _cleanup_rollback_ _cleanup_(db_rollbackp)
int column_strdup(Db *db, sqlite3_stmt *st, int c, char **ret);
void db_file_done(DbFile *f);
int read_file_row(Db *db, sqlite3_stmt *st, int c, DbFile *ret);
int profile_lookup(Db *db, const char *name, int64_t *ret_id, ProfileKind *ret_kind);

/* Reads every row st yields into a new array of elements of size bytes: read_row fills one (zeroed) from
 * the current row and, when it fails, leaves nothing allocated in it; free_rows frees the rows read so far
 * when a later one fails. */
typedef int (*DbRowReader)(Db *db, sqlite3_stmt *st, void *row);
typedef void (*DbRowsFree)(void *rows, size_t n);
int db_read_rows(Db *db, sqlite3_stmt *st, size_t size, DbRowReader read_row, DbRowsFree free_rows,
                 void **ret, size_t *ret_n);
