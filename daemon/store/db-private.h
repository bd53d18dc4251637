/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Shared between the store's files: db.c (the connection, migrations, binding and stepping), db-session.c
 * (sessions, the merge input), db-profile.c (profiles, queries, eviction), db-run.c (the optimizer's runs)
 * and db-space.c. Each of the three stores has its own statement table, prepared by db_open(). Nothing
 * outside daemon/store/ includes this. */

#include <sqlite3.h>
#include <stdbool.h>

#include "common/alloc-util.h"
#include "store/db.h"

typedef enum SessionStmt {
        SESSION_STMT_PROFILE_UPSERT,
        SESSION_STMT_FILE_UPSERT,
        SESSION_STMT_SESSION_INSERT,
        SESSION_STMT_SESSION_FILE_INSERT,
        SESSION_STMT_SESSION_RANGE_INSERT,
        SESSION_STMT_SESSION_METADATA_INSERT,
        SESSION_STMT_SESSION_METADATA_PRUNE,
        SESSION_STMT_SESSIONS_PRUNE,
        SESSION_STMT_COUNT_IN_BOOT,
        SESSION_STMT_COUNT_IN_BOOT_ALL,
        SESSION_STMT_MERGE_SESSIONS,
        SESSION_STMT_MERGE_SESSION_FILES,
        SESSION_STMT_MERGE_FILES,
        SESSION_STMT_MERGE_SESSION_RANGES,
        SESSION_STMT_LIST_SESSIONS,
        _SESSION_STMT_MAX,
} SessionStmt;

extern const char *const session_stmt_sql[_SESSION_STMT_MAX];

typedef enum ProfileStmt {
        PROFILE_STMT_PROFILE_LOOKUP,
        PROFILE_STMT_PROFILE_METADATA,
        PROFILE_STMT_FILES_DELETE_ORPHANS,
        PROFILE_STMT_PROFILE_FILES_DELETE,
        PROFILE_STMT_PROFILE_FILE_INSERT,
        PROFILE_STMT_PROFILE_RANGES_DELETE,
        PROFILE_STMT_PROFILE_RANGE_INSERT,
        PROFILE_STMT_PROFILE_RANGES,
        PROFILE_STMT_FILE_UPDATE,
        PROFILE_STMT_FILE_SESSIONS_SHRINK,
        PROFILE_STMT_FILE_DELETE,
        PROFILE_STMT_LIST_PROFILES,
        PROFILE_STMT_PROFILE_FILES,
        PROFILE_STMT_PROFILE_DELETE,
        PROFILE_STMT_PROFILES_DELETE_ALL,
        PROFILE_STMT_COUNTS,
        PROFILE_STMT_PROFILE_UID,
        PROFILE_STMT_COUNT_APP_PROFILES,
        PROFILE_STMT_OLDEST_OF_UID,
        PROFILE_STMT_OLDEST_TO_EVICT,
        _PROFILE_STMT_MAX,
} ProfileStmt;

extern const char *const profile_stmt_sql[_PROFILE_STMT_MAX];

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
/* A table's statement, reset, its bindings cleared. */
sqlite3_stmt *db_session_stmt(Db *db, SessionStmt s);
sqlite3_stmt *db_profile_stmt(Db *db, ProfileStmt s);
sqlite3_stmt *db_run_stmt(Db *db, RunStmt s);

int sqlite_errno(sqlite3 *db, int rc);
void stmt_resetp(sqlite3_stmt **st);
#define _cleanup_reset_ _cleanup_(stmt_resetp)
int db_step(Db *db, sqlite3_stmt *st);
int db_step_done(Db *db, sqlite3_stmt *st);

/* A value for one of a statement's parameters: DB_I64(), DB_DOUBLE(), DB_TEXT(), DB_BLOB(). Text and blobs
 * are bound without a copy: they must outlive the statement's step. */
typedef enum DbValueType {
        DB_VALUE_I64,
        DB_VALUE_DOUBLE,
        DB_VALUE_TEXT,
        DB_VALUE_BLOB,
} DbValueType;

typedef struct DbValue {
        DbValueType type;
        union {
                int64_t i64;
                double d;
                const char *text;
                struct {
                        const void *p;
                        size_t n;
                } blob;
        };
} DbValue;

#define DB_I64(v) ((DbValue) { .type = DB_VALUE_I64, .i64 = (int64_t) (v) })
#define DB_DOUBLE(v) ((DbValue) { .type = DB_VALUE_DOUBLE, .d = (v) })
#define DB_TEXT(v) ((DbValue) { .type = DB_VALUE_TEXT, .text = (v) })
#define DB_BLOB(p_, n_) ((DbValue) { .type = DB_VALUE_BLOB, .blob = { .p = (p_), .n = (n_) } })
#define DB_VALUE_ARRAY(...)                                                                     \
        (const DbValue[]) { __VA_ARGS__ }, ELEMENTSOF(((const DbValue[]) { __VA_ARGS__ }))

/* Each binds v[0..n-1] to the parameters ?1..?n of st, stops at the first that fails, and then: */
int db_bind_values(Db *db, sqlite3_stmt *st, const DbValue *v, size_t n);
/* steps it once: 1 with a row current, 0 without; */
int db_query_values(Db *db, sqlite3_stmt *st, const DbValue *v, size_t n);
/* steps it once, where a row must come (a RETURNING clause, an aggregate): -EIO without one; */
int db_query_row_values(Db *db, sqlite3_stmt *st, const DbValue *v, size_t n);
/* the same, and reads the row's first column (the id it returns, a count) into *ret; */
int db_query_id_values(Db *db, sqlite3_stmt *st, const DbValue *v, size_t n, int64_t *ret);
/* steps a statement that returns no row to its end (db_step_done()). */
int db_write_values(Db *db, sqlite3_stmt *st, const DbValue *v, size_t n);
#define db_bind(db, st, ...) db_bind_values(db, st, DB_VALUE_ARRAY(__VA_ARGS__))
#define db_query(db, st, ...) db_query_values(db, st, DB_VALUE_ARRAY(__VA_ARGS__))
#define db_query_row(db, st, ...) db_query_row_values(db, st, DB_VALUE_ARRAY(__VA_ARGS__))
#define db_query_id(db, st, ret, ...) db_query_id_values(db, st, DB_VALUE_ARRAY(__VA_ARGS__), ret)
#define db_write(db, st, ...) db_write_values(db, st, DB_VALUE_ARRAY(__VA_ARGS__))

/* A transaction: *ret_tx is set to db once it began; declared _cleanup_rollback_, it rolls the transaction
 * back when it goes out of scope, unless db_commit() committed it (and cleared it). */
int db_begin(Db *db, bool immediate, Db **ret_tx);
int db_commit(Db **tx);
/* The connection runs with synchronous = NORMAL: a commit reaches the disk at the next WAL checkpoint, so a
 * power cut may take the last commits back (never part of one). With `full`, each commit syncs the WAL
 * first, which makes it and every commit before it durable. Outside a transaction. */
int db_set_synchronous_full(Db *db, bool full);
void db_rollbackp(Db **db);
#define _cleanup_rollback_ _cleanup_(db_rollbackp)
int column_strdup(Db *db, sqlite3_stmt *st, int c, char **ret);
/* A uid column: NULL (not known) or anything that is not a uid reads as UID_INVALID. */
uid_t column_uid(sqlite3_stmt *st, int c);
/* A profile kind column: -EBADMSG if it is none. */
int column_kind(sqlite3_stmt *st, int c, ProfileKind *ret);
void db_file_done(DbFile *f);
int read_file_row(Db *db, sqlite3_stmt *st, int c, DbFile *ret);

/* In db-profile.c. Looks up a profile: -ENOENT if it does not exist. ret_kind may be NULL. */
int profile_lookup(Db *db, const char *name, int64_t *ret_id, ProfileKind *ret_kind);
/* Deletes the files no session refers to any more (with their profile_files rows). */
int files_delete_orphans(Db *db);

/* Reads every row st yields into a new array of elements of size bytes: read_row fills one (zeroed) from
 * the current row and, when it fails, leaves nothing allocated in it; free_rows frees the rows read so far
 * when a later one fails. */
typedef int (*DbRowReader)(Db *db, sqlite3_stmt *st, void *row);
typedef void (*DbRowsFree)(void *rows, size_t n);
int db_read_rows(Db *db, sqlite3_stmt *st, size_t size, DbRowReader read_row, DbRowsFree free_rows,
                 void **ret, size_t *ret_n);
