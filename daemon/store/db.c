/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The store's connection: opening (the prefetch, the probe of a file that may not be ours), the schema's
 * migrations, the statement tables of db-session.c, db-profile.c and db-run.c prepared once, transactions,
 * binding and stepping, reading rows. Never logs. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/db.h"
#include "store/db-private.h"
#include "common/macro.h"

/* Append-only: migrations[i] takes user_version from i to i + 1. Never edit a released entry. */
static const char *const migrations[] = {
        /* 0 -> 1: the initial schema. */
        "CREATE TABLE files ("
        "        id INTEGER PRIMARY KEY,"
        "        fsid INTEGER NOT NULL,"                /* uint64 stored as int64 */
        "        handle_type INTEGER NOT NULL,"
        "        handle BLOB NOT NULL,"
        "        dev INTEGER NOT NULL,"
        "        ino INTEGER NOT NULL,"
        "        generation INTEGER NOT NULL,"
        "        path TEXT NOT NULL,"
        "        size INTEGER NOT NULL,"
        "        mtime_ns INTEGER NOT NULL,"
        "        first_seen INTEGER NOT NULL,"          /* realtime usec of the first session seeing it */
        "        last_seen INTEGER NOT NULL,"
        "        UNIQUE (fsid, handle_type, handle));"
        "CREATE TABLE profiles ("
        "        id INTEGER PRIMARY KEY,"
        "        name TEXT NOT NULL UNIQUE,"
        "        kind TEXT NOT NULL CHECK (kind IN ('boot', 'app')),"
        "        updated INTEGER NOT NULL DEFAULT 0);"
        "CREATE TABLE sessions ("
        "        id INTEGER PRIMARY KEY,"
        "        profile_id INTEGER NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,"
        "        boot_id TEXT NOT NULL,"
        "        started_realtime INTEGER NOT NULL,"
        "        duration_usec INTEGER NOT NULL,"
        "        n_files INTEGER NOT NULL,"
        "        complete INTEGER NOT NULL);"
        "CREATE INDEX sessions_profile ON sessions(profile_id, started_realtime, id);"
        "CREATE TABLE session_files ("
        "        session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
        "        position INTEGER NOT NULL,"
        "        file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,"
        "        offset_usec INTEGER NOT NULL,"
        "        PRIMARY KEY (session_id, position)) WITHOUT ROWID;"
        /* Orphan detection and the foreign key cascade from files look sessions up by file. */
        "CREATE INDEX session_files_file ON session_files(file_id);"
        "CREATE TABLE profile_files ("
        "        profile_id INTEGER NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,"
        "        position INTEGER NOT NULL,"
        "        file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,"
        "        score REAL NOT NULL,"
        "        seen INTEGER NOT NULL,"
        "        PRIMARY KEY (profile_id, position)) WITHOUT ROWID;"
        "CREATE INDEX profile_files_file ON profile_files(file_id);",

        /* 1 -> 2: optimizer runs, per-file checkpoints (a crashed run resumes where it stopped, never
         * redoing finished files) and layout quality snapshots per profile. */
        "CREATE TABLE runs ("
        "        id INTEGER PRIMARY KEY,"
        "        fsid INTEGER NOT NULL,"
        "        mount TEXT NOT NULL,"
        "        started INTEGER NOT NULL,"
        "        finished INTEGER NOT NULL DEFAULT 0,"
        "        state TEXT NOT NULL CHECK (state IN ('running', 'done', 'cancelled', 'failed')),"
        "        donor_runs INTEGER NOT NULL DEFAULT 0,"
        "        moved_files INTEGER NOT NULL DEFAULT 0,"
        "        moved_bytes INTEGER NOT NULL DEFAULT 0);"
        "CREATE TABLE run_files ("
        "        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
        "        position INTEGER NOT NULL,"
        "        file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,"
        "        size INTEGER NOT NULL,"
        "        mtime_ns INTEGER NOT NULL,"
        "        state TEXT NOT NULL CHECK (state IN ('pending', 'done', 'in_place', 'skipped', 'retry')),"
        "        reason TEXT NOT NULL DEFAULT '',"
        "        bytes INTEGER NOT NULL DEFAULT 0,"
        "        PRIMARY KEY (run_id, position)) WITHOUT ROWID;"
        "CREATE INDEX run_files_file ON run_files(file_id);"
        "CREATE TABLE quality ("
        "        profile_id INTEGER NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,"
        "        which TEXT NOT NULL CHECK (which IN ('before', 'after')),"
        "        taken INTEGER NOT NULL,"
        "        files INTEGER NOT NULL,"
        "        extents INTEGER NOT NULL,"
        "        discontinuities INTEGER NOT NULL,"
        "        span INTEGER NOT NULL,"
        "        modeled_ms REAL NOT NULL,"
        "        PRIMARY KEY (profile_id, which)) WITHOUT ROWID;"
        /* each file's extents when the newest run that included it started, for "before" pictures */
        "CREATE TABLE extents_before ("
        "        file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,"
        "        seq INTEGER NOT NULL,"
        "        physical INTEGER NOT NULL,"
        "        length INTEGER NOT NULL,"
        "        PRIMARY KEY (file_id, seq)) WITHOUT ROWID;"
        /* how often a profile was recorded, ever: orders applications by how often they launch */
        "ALTER TABLE profiles ADD COLUMN recorded INTEGER NOT NULL DEFAULT 0;"
        "UPDATE profiles SET recorded = (SELECT COUNT(*) FROM sessions s WHERE s.profile_id = profiles.id);",

        /* 2 -> 3: who recorded what: each session's launching process's real uid, and per profile the
         * lowest uid that recorded it, so that the system's profiles are laid out before and evicted
         * after users' (SYSTEM_UID_MAX). The uids of earlier launches are not known: their sessions read
         * 0, but their app profiles' uid stays NULL (a user's) until a new session records one. */
        "ALTER TABLE sessions ADD COLUMN uid INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE profiles ADD COLUMN uid INTEGER;"
        "UPDATE profiles SET uid = 0 WHERE kind = 'boot';",

        /* 3 -> 4: why a file was not moved, as a code (MoveReason's strings) beside the text shown: the
         * early-boot pass's queue selects on it. Earlier rows of that queue (retry, "running executable"
         * or "running executable or swap") get their code; no other code decides anything. */
        "ALTER TABLE run_files ADD COLUMN why TEXT NOT NULL DEFAULT '';"
        "UPDATE run_files SET why = 'running' WHERE state = 'retry' AND substr(reason, 1, 18) = 'running executable';",

        /* 4 -> 5: byte ranges. A session recorded with page data keeps the ranges it read, in first-touch
         * order (sessions recorded before have none: their files count whole). A profile keeps its merged
         * ranges in layout order beside its files; length 0 is a whole file, at its size when read. Every
         * profile so far counted its files whole: one whole range per file, in file order. */
        "CREATE TABLE session_ranges ("
        "        session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
        "        position INTEGER NOT NULL,"
        "        file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,"
        "        offset INTEGER NOT NULL,"
        "        length INTEGER NOT NULL,"
        "        offset_usec INTEGER NOT NULL,"
        "        PRIMARY KEY (session_id, position)) WITHOUT ROWID;"
        "CREATE INDEX session_ranges_file ON session_ranges(file_id);"
        "CREATE TABLE profile_ranges ("
        "        profile_id INTEGER NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,"
        "        position INTEGER NOT NULL,"
        "        file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,"
        "        offset INTEGER NOT NULL,"
        "        length INTEGER NOT NULL,"
        "        PRIMARY KEY (profile_id, position)) WITHOUT ROWID;"
        "CREATE INDEX profile_ranges_file ON profile_ranges(file_id);"
        "INSERT INTO profile_ranges (profile_id, position, file_id, offset, length) "
        "        SELECT profile_id, position, file_id, 0, 0 FROM profile_files;",

        /* 5 -> 6: a run's entries are ranges of files (a file may have several, at several positions):
         * byte offset and length of each, length 0 for a whole file, which is what every earlier entry
         * was, so an unfinished run of before resumes with whole files. */
        "ALTER TABLE run_files ADD COLUMN range_offset INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE run_files ADD COLUMN range_length INTEGER NOT NULL DEFAULT 0;",

        /* 6 -> 7: the filesystem metadata a session read (the pages of the filesystem's block device:
         * inode tables, directories, extent blocks), in first-touch order, as byte ranges of the device
         * of the filesystem fsid. Never relocated; kept for a prefetch. Only the newest session of a
         * profile that recorded any keeps its rows. Earlier sessions have none. */
        "CREATE TABLE session_metadata ("
        "        session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
        "        position INTEGER NOT NULL,"
        "        fsid INTEGER NOT NULL,"
        "        offset INTEGER NOT NULL,"
        "        length INTEGER NOT NULL,"
        "        offset_usec INTEGER NOT NULL,"
        "        PRIMARY KEY (session_id, position)) WITHOUT ROWID;",

        /* 7 -> 8: whether a session's start was prefetched (what it read of the prefetched pages is not all
         * in its ranges, nor its metadata); a profile keeps its newest session that was not, besides its
         * newest KeepBoots=/KeepLaunches=. Earlier sessions were not. */
        "ALTER TABLE sessions ADD COLUMN prefetched INTEGER NOT NULL DEFAULT 0;",
};

typedef enum Stmt {
        STMT_BEGIN,
        STMT_BEGIN_IMMEDIATE,
        STMT_COMMIT,
        STMT_ROLLBACK,
        _STMT_MAX,
} Stmt;

static const char *const stmt_sql[_STMT_MAX] = {
        [STMT_BEGIN] = "BEGIN",
        [STMT_BEGIN_IMMEDIATE] = "BEGIN IMMEDIATE",
        [STMT_COMMIT] = "COMMIT",
        [STMT_ROLLBACK] = "ROLLBACK",
};

struct Db {
        sqlite3 *sqlite;
        bool counted;                   /* in open_dbs */
        sqlite3_stmt *stmt[_STMT_MAX];
        sqlite3_stmt *session_stmt[_SESSION_STMT_MAX];
        sqlite3_stmt *profile_stmt[_PROFILE_STMT_MAX];
        sqlite3_stmt *run_stmt[_RUN_STMT_MAX];
};

sqlite3 *db_sqlite(Db *db) {
        return db->sqlite;
}

static sqlite3_stmt *stmt_fresh(sqlite3_stmt *st) {
        /* In case a previous user returned early without the cleanup. */
        (void) sqlite3_reset(st);
        (void) sqlite3_clear_bindings(st);
        return st;
}

static sqlite3_stmt *db_stmt(Db *db, Stmt s) {
        return stmt_fresh(db->stmt[s]);
}

sqlite3_stmt *db_session_stmt(Db *db, SessionStmt s) {
        return stmt_fresh(db->session_stmt[s]);
}

sqlite3_stmt *db_profile_stmt(Db *db, ProfileStmt s) {
        return stmt_fresh(db->profile_stmt[s]);
}

sqlite3_stmt *db_run_stmt(Db *db, RunStmt s) {
        return stmt_fresh(db->run_stmt[s]);
}

int db_schema_version(void) {
        return (int) ELEMENTSOF(migrations);
}

/* Map an SQLite result code to a negative errno. db may be NULL. */
int sqlite_errno(sqlite3 *db, int rc) {
        int e;

        switch (rc & 0xff) {
        case SQLITE_OK:
        case SQLITE_ROW:
        case SQLITE_DONE:
                return 0;
        case SQLITE_NOMEM:
                return -ENOMEM;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                return -EBUSY;
        case SQLITE_NOTADB:
        case SQLITE_CORRUPT:
                return -EBADMSG;
        case SQLITE_FULL:
                return -ENOSPC;
        case SQLITE_READONLY:
                return -EROFS;
        case SQLITE_PERM:
        case SQLITE_AUTH:
                return -EACCES;
        case SQLITE_TOOBIG:
                return -E2BIG;
        case SQLITE_INTERRUPT:
                return -EINTR;
        case SQLITE_CONSTRAINT:
                if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY)
                        return -EEXIST;
                return -EINVAL;
        case SQLITE_RANGE:
        case SQLITE_MISMATCH:
        case SQLITE_MISUSE:
                return -EINVAL;
        case SQLITE_CANTOPEN:
        case SQLITE_IOERR:
                /* These carry the errno of the failed system call. */
                e = db ? sqlite3_system_errno(db) : 0;
                if (e > 0)
                        return -e;
                return (rc & 0xff) == SQLITE_CANTOPEN ? -ENOENT : -EIO;
        default:
                return -EIO;
        }
}

/* Statements are reset when the variable goes out of scope, so no path leaves one half-stepped with its
 * read transaction open. */
void stmt_resetp(sqlite3_stmt **st) {
        if (*st) {
                (void) sqlite3_reset(*st);
                (void) sqlite3_clear_bindings(*st);
        }
}

/* Returns 1 on SQLITE_ROW, 0 on SQLITE_DONE, negative errno otherwise. */
int db_step(Db *db, sqlite3_stmt *st) {
        int rc;

        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                return 1;
        if (rc == SQLITE_DONE)
                return 0;
        return sqlite_errno(db->sqlite, rc);
}

/* Step a statement that must finish without returning rows. */
int db_step_done(Db *db, sqlite3_stmt *st) {
        int r;

        r = db_step(db, st);
        if (r < 0)
                return r;
        return r == 0 ? 0 : -EIO;
}

static int bind_value(Db *db, sqlite3_stmt *st, int i, const DbValue *v) {
        switch (v->type) {
        case DB_VALUE_I64:
                return sqlite_errno(db->sqlite, sqlite3_bind_int64(st, i, v->i64));
        case DB_VALUE_DOUBLE:
                return sqlite_errno(db->sqlite, sqlite3_bind_double(st, i, v->d));
        case DB_VALUE_TEXT:
                return sqlite_errno(db->sqlite, sqlite3_bind_text(st, i, v->text, -1, SQLITE_STATIC));
        case DB_VALUE_BLOB:
                /* A zero-length blob from a NULL pointer would be bound as SQL NULL. */
                if (v->blob.n == 0)
                        return sqlite_errno(db->sqlite, sqlite3_bind_zeroblob(st, i, 0));
                return sqlite_errno(db->sqlite, sqlite3_bind_blob(st, i, v->blob.p, (int) v->blob.n,
                                                                  SQLITE_STATIC));
        }
        return -EINVAL;
}

int db_bind_values(Db *db, sqlite3_stmt *st, const DbValue *v, size_t n) {
        int r;

        for (size_t i = 0; i < n; i++) {
                r = bind_value(db, st, (int) i + 1, v + i);
                if (r < 0)
                        return r;
        }
        return 0;
}

int db_query_values(Db *db, sqlite3_stmt *st, const DbValue *v, size_t n) {
        int r;

        r = db_bind_values(db, st, v, n);
        if (r < 0)
                return r;
        return db_step(db, st);
}

int db_query_row_values(Db *db, sqlite3_stmt *st, const DbValue *v, size_t n) {
        int r;

        r = db_query_values(db, st, v, n);
        if (r < 0)
                return r;
        return r == 0 ? -EIO : 0;
}

int db_query_id_values(Db *db, sqlite3_stmt *st, const DbValue *v, size_t n, int64_t *ret) {
        int r;

        r = db_query_row_values(db, st, v, n);
        if (r < 0)
                return r;
        *ret = sqlite3_column_int64(st, 0);
        return 0;
}

int db_write_values(Db *db, sqlite3_stmt *st, const DbValue *v, size_t n) {
        int r;

        r = db_bind_values(db, st, v, n);
        if (r < 0)
                return r;
        return db_step_done(db, st);
}

static int db_exec_stmt(Db *db, Stmt s) {
        _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, s);

        return db_step_done(db, st);
}

int db_begin(Db *db, bool immediate, Db **ret_tx) {
        int r;

        assert(ret_tx && !*ret_tx);
        r = db_exec_stmt(db, immediate ? STMT_BEGIN_IMMEDIATE : STMT_BEGIN);
        if (r < 0)
                return r;
        *ret_tx = db;
        return 0;
}

int db_commit(Db **tx) {
        int r;

        r = db_exec_stmt(*tx, STMT_COMMIT);
        if (r < 0)
                return r;
        *tx = NULL;
        return 0;
}

/* For _cleanup_: roll back the transaction unless db_commit() cleared the pointer. */
void db_rollbackp(Db **db) {
        if (!*db || sqlite3_get_autocommit((*db)->sqlite))
                return;
        (void) db_exec_stmt(*db, STMT_ROLLBACK);
}

int column_strdup(Db *db, sqlite3_stmt *st, int c, char **ret) {
        const unsigned char *s;
        char *d;

        s = sqlite3_column_text(st, c);
        if (!s)
                /* The columns we read are NOT NULL: a NULL here is an allocation failure. */
                return sqlite3_errcode(db->sqlite) == SQLITE_NOMEM ? -ENOMEM : -EBADMSG;

        d = strdup((const char *) s);
        if (!d)
                return -ENOMEM;

        *ret = d;
        return 0;
}

/* A uid column: NULL (not known) or anything that is not a uid reads as UID_INVALID. */
uid_t column_uid(sqlite3_stmt *st, int c) {
        int64_t v;

        if (sqlite3_column_type(st, c) == SQLITE_NULL)
                return UID_INVALID;
        v = sqlite3_column_int64(st, c);
        return v < 0 || v >= (int64_t) UID_INVALID ? UID_INVALID : (uid_t) v;
}

int column_kind(sqlite3_stmt *st, int c, ProfileKind *ret) {
        ProfileKind k;

        k = profile_kind_from_string((const char *) sqlite3_column_text(st, c));
        if (k < 0)
                return -EBADMSG;

        *ret = k;
        return 0;
}

void db_file_done(DbFile *f) {
        if (!f)
                return;
        free(f->path);
        f->path = NULL;
}

/* Reads FILE_COLUMNS starting at column c. */
int read_file_row(Db *db, sqlite3_stmt *st, int c, DbFile *ret) {
        DbFile f = {};
        const void *h;
        int n, r;

        f.id = sqlite3_column_int64(st, c + 0);
        f.key.fsid = (uint64_t) sqlite3_column_int64(st, c + 1);
        f.key.handle_type = (int32_t) sqlite3_column_int64(st, c + 2);

        h = sqlite3_column_blob(st, c + 3);
        n = sqlite3_column_bytes(st, c + 3);
        if (n < 0 || n > FID_HANDLE_MAX)
                return -EBADMSG;
        if (n > 0) {
                if (!h)
                        return -ENOMEM;
                memcpy(f.key.handle, h, (size_t) n);
        }
        f.key.handle_len = (uint32_t) n;

        f.ino = (uint64_t) sqlite3_column_int64(st, c + 4);
        f.generation = (uint32_t) sqlite3_column_int64(st, c + 5);
        f.size = (uint64_t) sqlite3_column_int64(st, c + 7);
        f.mtime_ns = sqlite3_column_int64(st, c + 8);

        r = column_strdup(db, st, c + 6, &f.path);
        if (r < 0)
                return r;

        *ret = f;
        return 0;
}

int db_read_rows(Db *db, sqlite3_stmt *st, size_t size, DbRowReader read_row, DbRowsFree free_rows,
                 void **ret, size_t *ret_n) {
        void *rows = NULL;
        size_t n = 0, allocated = 0;
        int r;

        while ((r = db_step(db, st)) > 0) {
                void *row;

                r = greedy_realloc(&rows, &allocated, n + 1, size);
                if (r < 0)
                        break;
                row = (uint8_t *) rows + n * size;
                memset(row, 0, size);
                r = read_row(db, st, row);
                if (r < 0)
                        break;
                n++;
        }
        if (r < 0) {
                free_rows(rows, n);
                return r;
        }
        *ret = rows;
        *ret_n = n;
        return 0;
}

static void sqlite3_finalizep(sqlite3_stmt **st) {
        if (*st)
                (void) sqlite3_finalize(*st);
}

/* For the few statements run only at open: prepared, stepped once and finalized. */
static int db_read_int(Db *db, const char *sql, int64_t *ret) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int rc, r;

        rc = sqlite3_prepare_v2(db->sqlite, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sqlite_errno(db->sqlite, rc);

        r = db_step(db, st);
        if (r < 0)
                return r;

        *ret = r > 0 ? sqlite3_column_int64(st, 0) : 0;
        return 0;
}

static int db_exec(Db *db, const char *sql) {
        return sqlite_errno(db->sqlite, sqlite3_exec(db->sqlite, sql, NULL, NULL, NULL));
}

/* r from a statement of ours that failed on the file while it is opened (a database of one of our schema
 * versions, or of none yet). What the file holds is the cause, and it is not seekless's or is corrupt
 * (-EBADMSG, on which the caller moves it aside), rather than an error that would stop the daemon at every
 * start, when SQLite says:
 *   SQLITE_ERROR     SQL of ours cannot run on it: its tables are not what its version made (one missing
 *                    or there already, a column renamed), or SQLite cannot read its file format;
 *   SQLITE_NOMEM     a length in it so corrupt that the allocation SQLite asks for fails (a real shortage
 *                    of memory at this point looks the same and is taken for it: it costs the profiles,
 *                    not the file, which is moved aside, not removed);
 *   SQLITE_READONLY  while we may write the file: its header asks for a newer SQLite to write it.
 * What comes from around the file (busy, I/O, no space, no permission) stays what it is. */
static int not_ours_errno(Db *db, int r) {
        const char *f;

        if (r >= 0)
                return r;
        switch (sqlite3_errcode(db->sqlite) & 0xff) {
        case SQLITE_ERROR:
        case SQLITE_NOMEM:
        /* a migration whose rows the schema refuses (a foreign key, NOT NULL, a type): data no seekless
         * wrote, found by fuzz-db on the migration to page ranges */
        case SQLITE_CONSTRAINT:
        case SQLITE_MISMATCH:
                return -EBADMSG;
        case SQLITE_READONLY:
                f = sqlite3_db_filename(db->sqlite, "main");
                return f && *f && access(f, W_OK) >= 0 ? -EBADMSG : r;
        default:
                return r;
        }
}

int db_set_synchronous_full(Db *db, bool full) {
        return db_exec(db, full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
}

static int db_migrate(Db *db) {
        int64_t version;
        int r;

        r = db_read_int(db, "PRAGMA user_version", &version);
        if (r < 0)
                return r;
        if (version < 0)
                return -EBADMSG;        /* no seekless wrote that */
        if (version > db_schema_version())
                return -EPROTO;
        if (version == 0) {
                int64_t objects;

                /* every migration commits with its version: tables at version 0 are someone else's */
                r = not_ours_errno(db, db_read_int(db, "SELECT COUNT(*) FROM sqlite_schema", &objects));
                if (r < 0)
                        return r;
                if (objects > 0)
                        return -EBADMSG;
        }

        for (int64_t v = version; v < db_schema_version(); v++) {
                char sql[64];

                r = db_exec(db, "BEGIN IMMEDIATE");
                if (r < 0)
                        return r;

                /* Another process may have migrated between our read and taking the write lock. */
                r = db_read_int(db, "PRAGMA user_version", &version);
                if (r < 0)
                        goto rollback;
                if (version < 0 || version > db_schema_version()) {
                        r = version < 0 ? -EBADMSG : -EPROTO;
                        goto rollback;
                }
                if (version > v) {
                        (void) db_exec(db, "ROLLBACK");
                        v = version - 1;
                        continue;
                }

                r = not_ours_errno(db, db_exec(db, migrations[v]));
                if (r < 0)
                        goto rollback;

                /* PRAGMA takes no parameters; the value is our own integer, not data. */
                (void) snprintf(sql, sizeof sql, "PRAGMA user_version = %d", (int) v + 1);
                r = db_exec(db, sql);
                if (r < 0)
                        goto rollback;

                r = db_exec(db, "COMMIT");
                if (r < 0)
                        goto rollback;
        }

        return 0;

rollback:
        if (!sqlite3_get_autocommit(db->sqlite))
                (void) db_exec(db, "ROLLBACK");
        return r;
}

/* sqlite3_open_v2() does not read the file. Touch the schema and the last b-tree page of every table and
 * index (the min/max optimisation walks one path) so that a file that is not a database, or one cut short,
 * fails here rather than later. PRAGMA quick_check reads everything and is too slow for large stores. */
static int db_probe(Db *db) {
        int64_t dummy;
        int r;

        r = db_read_int(db,
                           "SELECT (SELECT COUNT(*) FROM sqlite_schema) + "
                           "IFNULL((SELECT MAX(id) FROM files), 0) + "
                           "IFNULL((SELECT MAX(fsid) FROM files), 0) + "
                           "IFNULL((SELECT MAX(id) FROM profiles), 0) + "
                           "IFNULL((SELECT MAX(name) FROM profiles), 0) + "
                           "IFNULL((SELECT MAX(id) FROM sessions), 0) + "
                           "IFNULL((SELECT MAX(profile_id) FROM sessions), 0) + "
                           "IFNULL((SELECT MAX(session_id) FROM session_files), 0) + "
                           "IFNULL((SELECT MAX(file_id) FROM session_files), 0) + "
                           "IFNULL((SELECT MAX(profile_id) FROM profile_files), 0) + "
                           "IFNULL((SELECT MAX(file_id) FROM profile_files), 0) + "
                           "IFNULL((SELECT MAX(session_id) FROM session_ranges), 0) + "
                           "IFNULL((SELECT MAX(profile_id) FROM profile_ranges), 0) + "
                           "IFNULL((SELECT MAX(session_id) FROM session_metadata), 0)",
                           &dummy);
        /* "no such table" or "no such column": a schema that is not ours, under one of our versions */
        return not_ours_errno(db, r);
}

/* At start (the early pass, then seeklessd, both during the boot) the queries read a page here and there:
 * the schema, b-tree roots and right edges, spread over a file that grew a few pages at a time. On a
 * rotating disk each costs a seek, and a store of a few hundred KiB is read in a dozen or more requests. A
 * store this small is cheaper read whole, in file order (one request per extent): ask for it before the
 * first query, asynchronously (the queries wait for their pages). Larger stores are left to the queries. */
#define DB_PREFETCH_MAX_BYTES (8 * 1024 * 1024)

static void prefetch_file(const char *path) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > DB_PREFETCH_MAX_BYTES)
                return;
        (void) posix_fadvise(fd, 0, st.st_size, POSIX_FADV_WILLNEED);
}

/* Connections this process has open. The prefetch opens and closes the database file with plain
 * open()/close(), and closing any descriptor of a file drops every POSIX lock the process holds on it:
 * those of a connection already open (SQLite still counts them as held). With its shared lock gone, any
 * other process's connection that closes thinks it is the last one, checkpoints and deletes the WAL while
 * we still write into it: our commits from then on land in an unlinked file, unseen by other readers and
 * lost if we die before closing. So only the process's first connection prefetches. */
static atomic_uint open_dbs;

static void db_prefetch(const char *path) {
        char wal[4096];

        if (streq(path, ":memory:"))
                return;
        prefetch_file(path);
        /* after an unclean stop the newest pages are in the WAL, read at open as well */
        if ((size_t) snprintf(wal, sizeof wal, "%s-wal", path) < sizeof wal)
                prefetch_file(wal);
}

static void finalize_all(sqlite3_stmt **st, size_t n) {
        for (size_t i = 0; i < n; i++)
                (void) sqlite3_finalize(st[i]);
}

/* One of the statement tables, into st[]. */
static int prepare_all(Db *db, const char *const *sql, size_t n, sqlite3_stmt **st) {
        int rc;

        for (size_t i = 0; i < n; i++) {
                rc = sqlite3_prepare_v3(db->sqlite, sql[i], -1, SQLITE_PREPARE_PERSISTENT, st + i, NULL);
                if (rc != SQLITE_OK)
                        return not_ours_errno(db, sqlite_errno(db->sqlite, rc));
        }
        return 0;
}

Db *db_free(Db *db) {
        if (!db)
                return NULL;

        finalize_all(db->stmt, _STMT_MAX);
        finalize_all(db->session_stmt, _SESSION_STMT_MAX);
        finalize_all(db->profile_stmt, _PROFILE_STMT_MAX);
        finalize_all(db->run_stmt, _RUN_STMT_MAX);
        /* The last connection closing checkpoints the WAL into the main file. */
        (void) sqlite3_close_v2(db->sqlite);
        if (db->counted)
                atomic_fetch_sub(&open_dbs, 1);
        free(db);
        return NULL;
}

/* The tables checked to be ours (db_probe()), then every statement of every table prepared once. */
static int probe_and_prepare(Db *db) {
        int r;

        r = db_probe(db);
        if (r < 0)
                return r;
        if ((r = prepare_all(db, stmt_sql, _STMT_MAX, db->stmt)) < 0 ||
            (r = prepare_all(db, session_stmt_sql, _SESSION_STMT_MAX, db->session_stmt)) < 0 ||
            (r = prepare_all(db, profile_stmt_sql, _PROFILE_STMT_MAX, db->profile_stmt)) < 0 ||
            (r = prepare_all(db, run_stmt_sql, _RUN_STMT_MAX, db->run_stmt)) < 0)
                return r;
        return 0;
}

int db_open(const char *path, Db **ret) {
        _cleanup_(db_freep) Db *db = NULL;
        int64_t pages;
        int rc, r;

        if (!path || !ret)
                return -EINVAL;

        db = calloc(1, sizeof(Db));
        if (!db)
                return -ENOMEM;

        db->counted = true;
        if (atomic_fetch_add(&open_dbs, 1) == 0)
                db_prefetch(path);
        rc = sqlite3_open_v2(path, &db->sqlite,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX |
                             SQLITE_OPEN_EXRESCODE,
                             NULL);
        if (rc != SQLITE_OK)
                /* db->sqlite is still allocated (unless out of memory) and freed by db_free(). */
                return db->sqlite ? sqlite_errno(db->sqlite, rc) : -ENOMEM;

        (void) sqlite3_extended_result_codes(db->sqlite, 1);

        rc = sqlite3_busy_timeout(db->sqlite, DB_BUSY_TIMEOUT_MSEC);
        if (rc != SQLITE_OK)
                return sqlite_errno(db->sqlite, rc);

        /* The first statements that read the file: a non-database fails here with SQLITE_NOTADB, one in a
         * file format this SQLite cannot read with SQLITE_ERROR. A new (empty) database hands deleted rows'
         * pages back to the filesystem on request (db_vacuum_step()): it can be made so only before its
         * first table and before it is in WAL mode (asked of an existing one, SQLite rewrites its header).
         * For ":memory:" the journal mode stays "memory". */
        r = not_ours_errno(db, db_read_int(db, "PRAGMA page_count", &pages));
        if (r < 0)
                return r;
        if (pages == 0) {
                r = db_exec(db, "PRAGMA auto_vacuum = INCREMENTAL");
                if (r < 0)
                        return r;
        }
        r = not_ours_errno(db, db_exec(db, "PRAGMA journal_mode = WAL"));
        if (r < 0)
                return r;

        /* a WAL keeps the size its biggest transaction gave it unless told: cut back to 4 MiB whenever a
         * checkpoint resets it */
        r = db_exec(db, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; "
                        "PRAGMA journal_size_limit = 4194304");
        if (r < 0)
                return r;

        r = db_migrate(db);
        if (r < 0)
                return r;

        r = probe_and_prepare(db);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(db);
        return 0;
}

/* path as an SQLite URI that opens it immutable: "file://" (an empty authority, so that a path beginning
 * with "//" stays a path), the path with '%', '?' and '#' escaped, then the parameter. */
static char *immutable_uri(const char *path) {
        static const char prefix[] = "file://", suffix[] = "?immutable=1";
        size_t n = strlen(path);
        char *u = malloc(sizeof prefix + 3 * n + sizeof suffix), *w;

        if (!u)
                return NULL;
        w = stpcpy(u, prefix);
        for (const char *c = path; *c; c++)
                if (*c == '%' || *c == '?' || *c == '#')
                        w += sprintf(w, "%%%02X", (unsigned char) *c);
                else
                        *w++ = *c;
        strcpy(w, suffix);
        return u;
}

int db_open_readonly(const char *path, Db **ret) {
        _cleanup_(db_freep) Db *db = NULL;
        _cleanup_free_ char *uri = NULL, *wal = NULL, *abs = NULL;
        struct stat st;
        int64_t version;
        int rc, r;

        if (!path || !ret || streq(path, ":memory:"))
                return -EINVAL;
        if (access(path, F_OK) < 0)
                return -errno;
        /* an immutable connection does not read the WAL: with one left behind (a stop that was not clean)
         * the file alone may be older than the store, or read as corrupt */
        if (asprintf(&wal, "%s-wal", path) < 0)
                return -ENOMEM;
        if (stat(wal, &st) >= 0 && st.st_size > 0)
                return -EUCLEAN;
        /* the URI's path is absolute: a relative one would begin with its authority */
        abs = realpath(path, NULL);
        if (!abs)
                return -errno;
        uri = immutable_uri(abs);
        db = calloc(1, sizeof(Db));
        if (!uri || !db)
                return -ENOMEM;
        prefetch_file(abs);
        rc = sqlite3_open_v2(uri, &db->sqlite, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX |
                             SQLITE_OPEN_EXRESCODE, NULL);
        if (rc != SQLITE_OK)
                return db->sqlite ? sqlite_errno(db->sqlite, rc) : -ENOMEM;
        (void) sqlite3_extended_result_codes(db->sqlite, 1);

        /* no migration here: only the schema this code knows is read */
        r = not_ours_errno(db, db_read_int(db, "PRAGMA user_version", &version));
        if (r < 0)
                return r;
        if (version <= 0)
                return -EBADMSG;
        if (version > db_schema_version())
                return -EPROTO;
        if (version < db_schema_version())
                return -ESTALE;
        r = probe_and_prepare(db);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(db);
        return 0;
}

int db_set_busy_timeout(Db *db, unsigned msec) {
        return sqlite_errno(db->sqlite, sqlite3_busy_timeout(db->sqlite, (int) MIN(msec, (unsigned) INT_MAX)));
}

