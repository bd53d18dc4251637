/* SPDX-License-Identifier: GPL-2.0-or-later */

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
};

typedef enum Stmt {
        STMT_BEGIN,
        STMT_BEGIN_IMMEDIATE,
        STMT_COMMIT,
        STMT_ROLLBACK,
        STMT_PROFILE_UPSERT,
        STMT_PROFILE_LOOKUP,
        STMT_FILE_UPSERT,
        STMT_SESSION_INSERT,
        STMT_SESSION_FILE_INSERT,
        STMT_SESSION_RANGE_INSERT,
        STMT_SESSION_METADATA_INSERT,
        STMT_SESSION_METADATA_PRUNE,
        STMT_PROFILE_METADATA,
        STMT_SESSIONS_PRUNE,
        STMT_FILES_DELETE_ORPHANS,
        STMT_COUNT_IN_BOOT,
        STMT_COUNT_IN_BOOT_ALL,
        STMT_MERGE_SESSIONS,
        STMT_MERGE_SESSION_FILES,
        STMT_MERGE_FILES,
        STMT_MERGE_SESSION_RANGES,
        STMT_PROFILE_FILES_DELETE,
        STMT_PROFILE_FILE_INSERT,
        STMT_PROFILE_RANGES_DELETE,
        STMT_PROFILE_RANGE_INSERT,
        STMT_PROFILE_RANGES,
        STMT_FILE_UPDATE,
        STMT_FILE_SESSIONS_SHRINK,
        STMT_FILE_DELETE,
        STMT_LIST_PROFILES,
        STMT_PROFILE_FILES,
        STMT_LIST_SESSIONS,
        STMT_PROFILE_DELETE,
        STMT_PROFILES_DELETE_ALL,
        STMT_COUNTS,
        STMT_PROFILE_UID,
        STMT_COUNT_APP_PROFILES,
        STMT_OLDEST_OF_UID,
        STMT_OLDEST_TO_EVICT,
        _STMT_MAX,
} Stmt;


/* The newest ?2 sessions of profile ?1. */
#define NEWEST_SESSIONS                                                                         \
        "SELECT id FROM sessions WHERE profile_id = ?1 "                                        \
        "ORDER BY id DESC LIMIT ?2"

static const char *const stmt_sql[_STMT_MAX] = {
        [STMT_BEGIN] = "BEGIN",
        [STMT_BEGIN_IMMEDIATE] = "BEGIN IMMEDIATE",
        [STMT_COMMIT] = "COMMIT",
        [STMT_ROLLBACK] = "ROLLBACK",
        [STMT_PROFILE_UPSERT] =
                "INSERT INTO profiles (name, kind, updated, recorded, uid) VALUES (?1, ?2, ?3, 1, ?4) "
                "ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, "
                "updated = MAX(updated, excluded.updated), recorded = recorded + 1, "
                "uid = MIN(IFNULL(uid, excluded.uid), excluded.uid) "
                "RETURNING id",
        [STMT_PROFILE_LOOKUP] = "SELECT id, kind FROM profiles WHERE name = ?1",
        [STMT_FILE_UPSERT] =
                "INSERT INTO files (fsid, handle_type, handle, dev, ino, generation, path, size, mtime_ns, "
                "first_seen, last_seen) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10) "
                "ON CONFLICT (fsid, handle_type, handle) DO UPDATE SET "
                "dev = excluded.dev, ino = excluded.ino, generation = excluded.generation, "
                "path = excluded.path, size = excluded.size, mtime_ns = excluded.mtime_ns, "
                "last_seen = MAX(last_seen, excluded.last_seen) "
                "RETURNING id",
        [STMT_SESSION_INSERT] =
                "INSERT INTO sessions (profile_id, boot_id, started_realtime, duration_usec, n_files, "
                "complete, uid) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
        [STMT_SESSION_FILE_INSERT] =
                "INSERT INTO session_files (session_id, position, file_id, offset_usec) "
                "VALUES (?1, ?2, ?3, ?4)",
        [STMT_SESSION_RANGE_INSERT] =
                "INSERT INTO session_ranges (session_id, position, file_id, offset, length, offset_usec) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        [STMT_SESSION_METADATA_INSERT] =
                "INSERT INTO session_metadata (session_id, position, fsid, offset, length, offset_usec) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        /* only the newest metadata is ever read: a session of profile ?1 that brings its own (?2) replaces
         * the others' */
        [STMT_SESSION_METADATA_PRUNE] =
                "DELETE FROM session_metadata WHERE session_id IN ("
                "SELECT id FROM sessions WHERE profile_id = ?1 AND id <> ?2)",
        /* the metadata of profile ?1's newest session that has any: the filesystem as it is now */
        [STMT_PROFILE_METADATA] =
                "SELECT fsid, offset, length FROM session_metadata WHERE session_id = ("
                "SELECT MAX(sm.session_id) FROM session_metadata sm JOIN sessions s ON s.id = sm.session_id "
                "WHERE s.profile_id = ?1) ORDER BY position",
        /* session_ranges and session_metadata rows go with the sessions (ON DELETE CASCADE). */
        [STMT_SESSIONS_PRUNE] =
                "DELETE FROM sessions WHERE profile_id = ?1 AND id NOT IN (" NEWEST_SESSIONS ")",
        /* profile_files rows of the deleted files go with them (ON DELETE CASCADE). */
        [STMT_FILES_DELETE_ORPHANS] =
                "DELETE FROM files WHERE NOT EXISTS "
                "(SELECT 1 FROM session_files sf WHERE sf.file_id = files.id)",
        [STMT_COUNT_IN_BOOT] =
                "SELECT COUNT(*) FROM sessions s JOIN profiles p ON p.id = s.profile_id "
                "WHERE p.name = ?1 AND s.boot_id = ?2",
        [STMT_COUNT_IN_BOOT_ALL] =
                "SELECT p.name, COUNT(*) FROM sessions s JOIN profiles p ON p.id = s.profile_id "
                "WHERE s.boot_id = ?1 GROUP BY p.id ORDER BY p.name",
        [STMT_MERGE_SESSIONS] = NEWEST_SESSIONS,
        [STMT_MERGE_SESSION_FILES] =
                "SELECT file_id FROM session_files WHERE session_id = ?1 ORDER BY position",
        [STMT_MERGE_FILES] =
                "SELECT " FILE_COLUMNS " FROM files f WHERE f.id IN ("
                "SELECT sf.file_id FROM session_files sf WHERE sf.session_id IN (" NEWEST_SESSIONS ")) "
                "ORDER BY f.id",
        [STMT_MERGE_SESSION_RANGES] =
                "SELECT file_id, offset, length FROM session_ranges WHERE session_id = ?1 ORDER BY position",
        [STMT_PROFILE_FILES_DELETE] = "DELETE FROM profile_files WHERE profile_id = ?1",
        [STMT_PROFILE_RANGES_DELETE] = "DELETE FROM profile_ranges WHERE profile_id = ?1",
        [STMT_PROFILE_RANGE_INSERT] =
                "INSERT INTO profile_ranges (profile_id, position, file_id, offset, length) "
                "VALUES (?1, ?2, ?3, ?4, ?5)",
        [STMT_PROFILE_RANGES] =
                "SELECT file_id, offset, length FROM profile_ranges WHERE profile_id = ?1 ORDER BY position",
        [STMT_PROFILE_FILE_INSERT] =
                "INSERT INTO profile_files (profile_id, position, file_id, score, seen) "
                "VALUES (?1, ?2, ?3, ?4, ?5)",
        [STMT_FILE_UPDATE] = "UPDATE files SET path = ?2, size = ?3, mtime_ns = ?4 WHERE id = ?1",
        [STMT_FILE_SESSIONS_SHRINK] =
                "UPDATE sessions SET n_files = n_files - "
                "(SELECT COUNT(*) FROM session_files sf "
                " WHERE sf.session_id = sessions.id AND sf.file_id = ?1) "
                "WHERE id IN (SELECT session_id FROM session_files WHERE file_id = ?1)",
        /* session_files and profile_files rows go with it (ON DELETE CASCADE). */
        [STMT_FILE_DELETE] = "DELETE FROM files WHERE id = ?1",
        [STMT_LIST_PROFILES] =
                "SELECT p.name, p.kind, "
                "(SELECT COUNT(*) FROM sessions s WHERE s.profile_id = p.id), "
                "(SELECT COUNT(*) FROM profile_files pf WHERE pf.profile_id = p.id), "
                "(SELECT COALESCE(SUM(f.size), 0) FROM profile_files pf JOIN files f ON f.id = pf.file_id "
                " WHERE pf.profile_id = p.id), "
                "(SELECT COALESCE(MAX(s.started_realtime + s.duration_usec), 0) FROM sessions s "
                " WHERE s.profile_id = p.id), p.recorded, p.uid "
                "FROM profiles p ORDER BY p.kind <> 'boot', p.name",
        [STMT_PROFILE_FILES] =
                "SELECT " FILE_COLUMNS ", pf.score, pf.seen FROM profile_files pf "
                "JOIN files f ON f.id = pf.file_id WHERE pf.profile_id = ?1 ORDER BY pf.position",
        [STMT_LIST_SESSIONS] =
                "SELECT s.id, p.name, p.kind, s.boot_id, s.started_realtime, s.duration_usec, s.n_files, "
                "s.complete, s.uid FROM sessions s JOIN profiles p ON p.id = s.profile_id "
                "ORDER BY s.started_realtime DESC, s.id DESC",
        [STMT_PROFILE_DELETE] = "DELETE FROM profiles WHERE name = ?1",
        [STMT_PROFILES_DELETE_ALL] = "DELETE FROM profiles",
        [STMT_COUNTS] =
                "SELECT (SELECT COUNT(*) FROM profiles), (SELECT COUNT(*) FROM sessions), "
                "(SELECT COUNT(*) FROM files)",
        [STMT_PROFILE_UID] = "SELECT uid FROM profiles WHERE id = ?1",
        /* MaxProfiles= counts app profiles: the boot profile is never evicted */
        [STMT_COUNT_APP_PROFILES] = "SELECT COUNT(*) FROM profiles WHERE kind = 'app'",
        /* MaxProfilesPerUser=: the profiles of uid ?1 beyond the ?3 most recently updated, the one just
         * stored (?2) counting as the newest */
        [STMT_OLDEST_OF_UID] =
                "SELECT name FROM profiles WHERE kind = 'app' AND uid = ?1 "
                "ORDER BY id = ?2 DESC, updated DESC, id DESC LIMIT -1 OFFSET ?3",
        /* MaxProfiles=: the least recently updated users' profile (uid NULL or above ?3), then the
         * system's; the one just stored (?1) last. A user's session (?2 = 0) evicts users' profiles only,
         * its own last of all: it never displaces the system's. */
        [STMT_OLDEST_TO_EVICT] =
                "SELECT name, uid FROM profiles WHERE kind = 'app' AND (?2 OR NOT IFNULL(uid <= ?3, 0)) "
                "ORDER BY id = ?1, IFNULL(uid <= ?3, 0), updated, id LIMIT 1",
};

struct Db {
        sqlite3 *sqlite;
        bool counted;                   /* in open_dbs */
        sqlite3_stmt *stmt[_STMT_MAX];
        sqlite3_stmt *run_stmt[_RUN_STMT_MAX];
};

sqlite3 *db_sqlite(Db *db) {
        return db->sqlite;
}

sqlite3_stmt *db_run_stmt(Db *db, RunStmt s) {
        sqlite3_stmt *st = db->run_stmt[s];

        (void) sqlite3_reset(st);
        (void) sqlite3_clear_bindings(st);
        return st;
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

static sqlite3_stmt *db_stmt(Db *db, Stmt s) {
        sqlite3_stmt *st = db->stmt[s];

        /* In case a previous user returned early without the cleanup. */
        (void) sqlite3_reset(st);
        (void) sqlite3_clear_bindings(st);
        return st;
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

int db_begin(Db *db, bool immediate) {
        return db_exec_stmt(db, immediate ? STMT_BEGIN_IMMEDIATE : STMT_BEGIN);
}

int db_commit(Db *db) {
        return db_exec_stmt(db, STMT_COMMIT);
}

/* For _cleanup_: roll back the transaction unless the pointer was taken after COMMIT. */
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
static uid_t column_uid(sqlite3_stmt *st, int c) {
        int64_t v;

        if (sqlite3_column_type(st, c) == SQLITE_NULL)
                return UID_INVALID;
        v = sqlite3_column_int64(st, c);
        return v < 0 || v >= (int64_t) UID_INVALID ? UID_INVALID : (uid_t) v;
}

static int column_kind(sqlite3_stmt *st, int c, ProfileKind *ret) {
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

/* Looks up a profile: -ENOENT if it does not exist. ret_kind may be NULL. */
int profile_lookup(Db *db, const char *name, int64_t *ret_id, ProfileKind *ret_kind) {
        _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_PROFILE_LOOKUP);
        ProfileKind kind;
        int64_t id;
        int r;

        r = db_query(db, st, DB_TEXT(name));
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOENT;

        id = sqlite3_column_int64(st, 0);
        r = column_kind(st, 1, &kind);
        if (r < 0)
                return r;

        *ret_id = id;
        if (ret_kind)
                *ret_kind = kind;
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

Db *db_free(Db *db) {
        if (!db)
                return NULL;

        for (size_t i = 0; i < _STMT_MAX; i++)
                (void) sqlite3_finalize(db->stmt[i]);
        for (size_t i = 0; i < _RUN_STMT_MAX; i++)
                (void) sqlite3_finalize(db->run_stmt[i]);
        /* The last connection closing checkpoints the WAL into the main file. */
        (void) sqlite3_close_v2(db->sqlite);
        if (db->counted)
                atomic_fetch_sub(&open_dbs, 1);
        free(db);
        return NULL;
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

        r = db_probe(db);
        if (r < 0)
                return r;

        for (size_t i = 0; i < _STMT_MAX; i++) {
                rc = sqlite3_prepare_v3(db->sqlite, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &db->stmt[i],
                                        NULL);
                if (rc != SQLITE_OK)
                        return not_ours_errno(db, sqlite_errno(db->sqlite, rc));
        }
        for (size_t i = 0; i < _RUN_STMT_MAX; i++) {
                rc = sqlite3_prepare_v3(db->sqlite, run_stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                                        &db->run_stmt[i], NULL);
                if (rc != SQLITE_OK)
                        return not_ours_errno(db, sqlite_errno(db->sqlite, rc));
        }

        *ret = TAKE_PTR(db);
        return 0;
}

static int session_file_add(Db *db, const DbSession *s, int64_t session_id, size_t position,
                            int64_t *ret_file_id) {
        const DbSessionFile *f = s->files + position;
        int64_t file_id;
        int r;

        if (!f->path || f->key.handle_len > FID_HANDLE_MAX)
                return -EINVAL;

        {
                _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_FILE_UPSERT);

                r = db_query_id(db, st, &file_id, DB_I64(f->key.fsid), DB_I64(f->key.handle_type),
                                DB_BLOB(f->key.handle, f->key.handle_len), DB_I64(f->dev), DB_I64(f->ino),
                                DB_I64(f->generation), DB_TEXT(f->path), DB_I64(f->size),
                                DB_I64(f->mtime_ns), DB_I64(s->started_realtime_usec));
                if (r < 0)
                        return r;
        }
        *ret_file_id = file_id;

        _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_SESSION_FILE_INSERT);

        return db_write(db, st, DB_I64(session_id), DB_I64(position), DB_I64(file_id),
                        DB_I64(f->offset_usec));
}

static int session_range_add(Db *db, int64_t session_id, size_t position, const DbSessionRange *range,
                             const int64_t *file_ids) {
        _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_SESSION_RANGE_INSERT);

        return db_write(db, st, DB_I64(session_id), DB_I64(position), DB_I64(file_ids[range->file]),
                        DB_I64(range->offset), DB_I64(range->length), DB_I64(range->offset_usec));
}

static int session_metadata_add(Db *db, int64_t session_id, size_t position, const DbMetaRange *range) {
        _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_SESSION_METADATA_INSERT);

        return db_write(db, st, DB_I64(session_id), DB_I64(position), DB_I64(range->fsid),
                        DB_I64(range->offset), DB_I64(range->length), DB_I64(range->offset_usec));
}

static bool meta_ranges_valid(const DbSession *s) {
        if (s->n_meta > 0 && !s->meta)
                return false;
        for (size_t i = 0; i < s->n_meta; i++) {
                const DbMetaRange *r = s->meta + i;

                if (r->length == 0 || r->offset > INT64_MAX || r->length > INT64_MAX - r->offset ||
                    r->offset_usec > INT64_MAX)
                        return false;
        }
        return true;
}

/* A range names one of the session's files, is not empty and ends where int64 still counts. */
static bool session_ranges_valid(const DbSession *s) {
        if (s->n_ranges > 0 && !s->ranges)
                return false;
        for (size_t i = 0; i < s->n_ranges; i++) {
                const DbSessionRange *r = s->ranges + i;

                if (r->file >= s->n_files || r->length == 0 || r->offset > INT64_MAX ||
                    r->length > INT64_MAX - r->offset || r->offset_usec > INT64_MAX)
                        return false;
        }
        return true;
}

static int files_delete_orphans(Db *db) {
        return db_exec_stmt(db, STMT_FILES_DELETE_ORPHANS);
}

int db_add_session(Db *db, const DbSession *s, unsigned keep, int64_t *ret_session_id) {
        _cleanup_rollback_ Db *tx = NULL;
        int64_t profile_id, session_id;
        const char *kind;
        int r;

        _cleanup_free_ int64_t *file_ids = NULL;

        if (!db || !s || !s->profile || !s->boot_id || (s->n_files > 0 && !s->files) || !session_ranges_valid(s) ||
            !meta_ranges_valid(s))
                return -EINVAL;
        /* keep == 0 would delete the session we are adding. */
        if (keep == 0)
                return -EINVAL;
        kind = profile_kind_to_string(s->kind);
        if (!kind)
                return -EINVAL;

        r = db_begin(db, true);
        if (r < 0)
                return r;
        tx = db;

        {
                _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_PROFILE_UPSERT);

                r = db_query_id(db, st, &profile_id, DB_TEXT(s->profile), DB_TEXT(kind),
                                DB_I64(s->started_realtime_usec + s->duration_usec), DB_I64(s->uid));
                if (r < 0)
                        return r;
        }

        {
                _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_SESSION_INSERT);

                r = db_query_id(db, st, &session_id, DB_I64(profile_id), DB_TEXT(s->boot_id),
                                DB_I64(s->started_realtime_usec), DB_I64(s->duration_usec),
                                DB_I64(s->n_files), DB_I64(s->complete), DB_I64(s->uid));
                if (r < 0)
                        return r;
        }

        file_ids = calloc(s->n_files + 1, sizeof *file_ids);
        if (!file_ids)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_files; i++) {
                r = session_file_add(db, s, session_id, i, file_ids + i);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < s->n_ranges; i++) {
                r = session_range_add(db, session_id, i, s->ranges + i, file_ids);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < s->n_meta; i++) {
                r = session_metadata_add(db, session_id, i, s->meta + i);
                if (r < 0)
                        return r;
        }
        if (s->n_meta > 0) {
                _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_SESSION_METADATA_PRUNE);

                r = db_write(db, st, DB_I64(profile_id), DB_I64(session_id));
                if (r < 0)
                        return r;
        }

        {
                _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_SESSIONS_PRUNE);

                r = db_write(db, st, DB_I64(profile_id), DB_I64(keep));
                if (r < 0)
                        return r;
        }

        /* Files only become orphans when session_files rows go away. */
        if (sqlite3_changes(db->sqlite) > 0) {
                r = files_delete_orphans(db);
                if (r < 0)
                        return r;
        }

        r = db_commit(db);
        if (r < 0)
                return r;
        TAKE_PTR(tx);

        if (ret_session_id)
                *ret_session_id = session_id;
        return 0;
}

int db_count_sessions_in_boot(Db *db, const char *profile, const char *boot_id, unsigned *ret) {
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int64_t n;
        int r;

        if (!db || !profile || !boot_id || !ret)
                return -EINVAL;

        st = db_stmt(db, STMT_COUNT_IN_BOOT);
        r = db_query_id(db, st, &n, DB_TEXT(profile), DB_TEXT(boot_id));
        if (r < 0)
                return r;

        *ret = (unsigned) n;
        return 0;
}

void db_boot_counts_free(DbBootCount *l, size_t n) {
        for (size_t i = 0; l && i < n; i++)
                free(l[i].profile);
        free(l);
}

static int read_boot_count(Db *db, sqlite3_stmt *st, void *row) {
        DbBootCount *c = row;

        c->n = (unsigned) sqlite3_column_int64(st, 1);
        return column_strdup(db, st, 0, &c->profile);
}

static void boot_counts_free(void *rows, size_t n) {
        db_boot_counts_free(rows, n);
}

int db_count_sessions_in_boot_all(Db *db, const char *boot_id, DbBootCount **ret, size_t *ret_n) {
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int r;

        if (!db || !boot_id || !ret || !ret_n)
                return -EINVAL;

        st = db_stmt(db, STMT_COUNT_IN_BOOT_ALL);
        r = db_bind(db, st, DB_TEXT(boot_id));
        if (r < 0)
                return r;
        return db_read_rows(db, st, sizeof(DbBootCount), read_boot_count, boot_counts_free, (void **) ret, ret_n);
}

void db_merge_input_free(DbMergeInput *in) {
        if (!in)
                return;

        if (in->session_files)
                for (size_t i = 0; i < in->n_sessions; i++)
                        free(in->session_files[i]);
        free(in->session_files);
        free(in->n_session_files);
        if (in->session_ranges)
                for (size_t i = 0; i < in->n_sessions; i++)
                        free(in->session_ranges[i]);
        free(in->session_ranges);
        free(in->n_session_ranges);
        free(in->session_ids);
        for (size_t i = 0; i < in->n_files; i++)
                db_file_done(in->files + i);
        free(in->files);
        *in = (DbMergeInput) {};
}

static int merge_load_sessions(Db *db, int64_t profile_id, unsigned keep, DbMergeInput *in) {
        _cleanup_free_ int64_t *ids = NULL;
        size_t n = 0, n_alloc = 0;
        int r;

        {
                _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_MERGE_SESSIONS);

                r = db_bind(db, st, DB_I64(profile_id), DB_I64(keep));
                if (r < 0)
                        return r;

                while ((r = db_step(db, st)) > 0) {
                        r = GREEDY_REALLOC(ids, n_alloc, n + 1);
                        if (r < 0)
                                return r;
                        ids[n++] = sqlite3_column_int64(st, 0);
                }
                if (r < 0)
                        return r;
        }

        in->session_files = calloc(MAX(n, (size_t) 1), sizeof(int64_t *));
        in->n_session_files = calloc(MAX(n, (size_t) 1), sizeof(size_t));
        in->session_ranges = calloc(MAX(n, (size_t) 1), sizeof(DbRange *));
        in->n_session_ranges = calloc(MAX(n, (size_t) 1), sizeof(size_t));
        if (!in->session_files || !in->n_session_files || !in->session_ranges || !in->n_session_ranges)
                return -ENOMEM;
        in->n_sessions = n;
        in->session_ids = TAKE_PTR(ids);

        for (size_t i = 0; i < n; i++) {
                _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_MERGE_SESSION_FILES);
                size_t m = 0, m_alloc = 0;

                r = db_bind(db, st, DB_I64(in->session_ids[i]));
                if (r < 0)
                        return r;

                while ((r = db_step(db, st)) > 0) {
                        r = GREEDY_REALLOC(in->session_files[i], m_alloc, m + 1);
                        if (r < 0)
                                return r;
                        in->session_files[i][m++] = sqlite3_column_int64(st, 0);
                        in->n_session_files[i] = m;
                }
                if (r < 0)
                        return r;
        }

        for (size_t i = 0; i < n; i++) {
                _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_MERGE_SESSION_RANGES);
                size_t m = 0, m_alloc = 0;

                r = db_bind(db, st, DB_I64(in->session_ids[i]));
                if (r < 0)
                        return r;

                while ((r = db_step(db, st)) > 0) {
                        r = GREEDY_REALLOC(in->session_ranges[i], m_alloc, m + 1);
                        if (r < 0)
                                return r;
                        in->session_ranges[i][m++] = (DbRange) {
                                .file_id = sqlite3_column_int64(st, 0),
                                .offset = (uint64_t) sqlite3_column_int64(st, 1),
                                .length = (uint64_t) sqlite3_column_int64(st, 2),
                        };
                        in->n_session_ranges[i] = m;
                }
                if (r < 0)
                        return r;
        }

        return 0;
}

static int merge_load_files(Db *db, int64_t profile_id, unsigned keep, DbMergeInput *in) {
        _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_MERGE_FILES);
        size_t n_alloc = 0;
        int r;

        r = db_bind(db, st, DB_I64(profile_id), DB_I64(keep));
        if (r < 0)
                return r;

        while ((r = db_step(db, st)) > 0) {
                r = GREEDY_REALLOC(in->files, n_alloc, in->n_files + 1);
                if (r < 0)
                        return r;
                r = read_file_row(db, st, 0, in->files + in->n_files);
                if (r < 0)
                        return r;
                in->n_files++;
        }

        return r;
}

int db_load_merge_input(Db *db, const char *profile, unsigned keep, DbMergeInput *ret) {
        _cleanup_(db_merge_input_free) DbMergeInput in = {};
        _cleanup_rollback_ Db *tx = NULL;
        int64_t profile_id;
        int r;

        if (!db || !profile || !ret)
                return -EINVAL;
        if (keep == 0)
                return -EINVAL;

        /* One read transaction, so the sessions and the files are a consistent snapshot. */
        r = db_begin(db, false);
        if (r < 0)
                return r;
        tx = db;

        r = profile_lookup(db, profile, &profile_id, NULL);
        if (r < 0)
                return r;

        r = merge_load_sessions(db, profile_id, keep, &in);
        if (r < 0)
                return r;

        r = merge_load_files(db, profile_id, keep, &in);
        if (r < 0)
                return r;

        r = db_commit(db);
        if (r < 0)
                return r;
        TAKE_PTR(tx);

        *ret = in;
        in = (DbMergeInput) {};
        return 0;
}

static int profile_clear(Db *db, Stmt s, int64_t profile_id) {
        _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, s);

        return db_write(db, st, DB_I64(profile_id));
}

static int profile_range_add(Db *db, int64_t profile_id, size_t position, const DbRange *range) {
        _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_PROFILE_RANGE_INSERT);

        if (range->offset > INT64_MAX || range->length > INT64_MAX - range->offset ||
            (range->length == 0 && range->offset != 0))
                return -EINVAL;
        return db_write(db, st, DB_I64(profile_id), DB_I64(position), DB_I64(range->file_id),
                        DB_I64(range->offset), DB_I64(range->length));
}

int db_store_profile(Db *db, const char *profile, const DbProfileEntry *entries, size_t n) {
        return db_store_profile_ranges(db, profile, entries, n, NULL, 0);
}

int db_store_profile_ranges(Db *db, const char *profile, const DbProfileEntry *entries, size_t n,
                            const DbRange *ranges, size_t n_ranges) {
        _cleanup_rollback_ Db *tx = NULL;
        _cleanup_free_ int64_t *ids = NULL;
        int64_t profile_id;
        int r;

        if (!db || !profile || (n > 0 && !entries) || (n_ranges > 0 && !ranges))
                return -EINVAL;

        /* Each range's file is one of the entries (sorted ids, for the lookups). */
        ids = calloc(n + 1, sizeof *ids);
        if (!ids)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                ids[i] = entries[i].file_id;
        qsort_safe(ids, n, sizeof *ids, cmp_int64);
        for (size_t i = 0; i < n_ranges; i++)
                if (n == 0 || !bsearch_safe(&ranges[i].file_id, ids, n, sizeof *ids, cmp_int64))
                        return -EINVAL;

        r = db_begin(db, true);
        if (r < 0)
                return r;
        tx = db;

        r = profile_lookup(db, profile, &profile_id, NULL);
        if (r < 0)
                return r;

        r = profile_clear(db, STMT_PROFILE_FILES_DELETE, profile_id);
        if (r < 0)
                return r;
        r = profile_clear(db, STMT_PROFILE_RANGES_DELETE, profile_id);
        if (r < 0)
                return r;

        for (size_t i = 0; i < n; i++) {
                _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_PROFILE_FILE_INSERT);

                /* A file id that does not exist fails the foreign key: -EINVAL. */
                r = db_write(db, st, DB_I64(profile_id), DB_I64(i), DB_I64(entries[i].file_id),
                             DB_DOUBLE(entries[i].score), DB_I64(entries[i].seen));
                if (r < 0)
                        return r;
        }

        /* Without ranges, each file whole, in file order. */
        for (size_t i = 0; i < (ranges ? n_ranges : n); i++) {
                r = profile_range_add(db, profile_id, i,
                                      ranges ? ranges + i : &(DbRange) { .file_id = entries[i].file_id });
                if (r < 0)
                        return r;
        }

        r = db_commit(db);
        if (r < 0)
                return r;
        TAKE_PTR(tx);

        return 0;
}

int db_update_file(Db *db, int64_t file_id, const char *path, uint64_t size, int64_t mtime_ns) {
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int r;

        if (!db || !path)
                return -EINVAL;

        st = db_stmt(db, STMT_FILE_UPDATE);
        r = db_write(db, st, DB_I64(file_id), DB_TEXT(path), DB_I64(size), DB_I64(mtime_ns));
        if (r < 0)
                return r;

        return sqlite3_changes(db->sqlite) > 0 ? 0 : -ENOENT;
}

int db_delete_file(Db *db, int64_t file_id) {
        _cleanup_rollback_ Db *tx = NULL;
        int r;

        if (!db)
                return -EINVAL;

        r = db_begin(db, true);
        if (r < 0)
                return r;
        tx = db;

        /* Positions of the remaining files keep their order; only the counts need fixing. */
        {
                _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_FILE_SESSIONS_SHRINK);

                r = db_write(db, st, DB_I64(file_id));
                if (r < 0)
                        return r;
        }

        {
                _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_FILE_DELETE);

                r = db_write(db, st, DB_I64(file_id));
                if (r < 0)
                        return r;
        }

        if (sqlite3_changes(db->sqlite) == 0)
                return -ENOENT;

        r = db_commit(db);
        if (r < 0)
                return r;
        TAKE_PTR(tx);

        return 0;
}

void db_profile_infos_free(DbProfileInfo *p, size_t n) {
        if (!p)
                return;
        for (size_t i = 0; i < n; i++)
                free(p[i].name);
        free(p);
}

static int read_profile_info(Db *db, sqlite3_stmt *st, void *row) {
        DbProfileInfo *p = row;
        int r;

        *p = (DbProfileInfo) {
                .n_sessions = (unsigned) sqlite3_column_int64(st, 2),
                .n_files = (unsigned) sqlite3_column_int64(st, 3),
                .bytes = (uint64_t) sqlite3_column_int64(st, 4),
                .updated_realtime_usec = (uint64_t) sqlite3_column_int64(st, 5),
                .n_launches = (unsigned) sqlite3_column_int64(st, 6),
                .uid = column_uid(st, 7),
        };
        r = column_kind(st, 1, &p->kind);
        if (r < 0)
                return r;
        return column_strdup(db, st, 0, &p->name);
}

static void profile_infos_free(void *rows, size_t n) {
        db_profile_infos_free(rows, n);
}

int db_list_profiles(Db *db, DbProfileInfo **ret, size_t *ret_n) {
        _cleanup_reset_ sqlite3_stmt *st = NULL;

        if (!db || !ret || !ret_n)
                return -EINVAL;
        st = db_stmt(db, STMT_LIST_PROFILES);
        return db_read_rows(db, st, sizeof(DbProfileInfo), read_profile_info, profile_infos_free, (void **) ret, ret_n);
}

void db_profile_files_free(DbProfileFile *p, size_t n) {
        if (!p)
                return;
        for (size_t i = 0; i < n; i++)
                db_file_done(&p[i].file);
        free(p);
}

int db_get_profile(Db *db, const char *name, ProfileKind *ret_kind, DbProfileFile **ret, size_t *ret_n) {
        _cleanup_rollback_ Db *tx = NULL;
        DbProfileFile *list = NULL;
        size_t n = 0, n_alloc = 0;
        int64_t profile_id;
        ProfileKind kind;
        int r;

        if (!db || !name || !ret || !ret_n)
                return -EINVAL;

        r = db_begin(db, false);
        if (r < 0)
                return r;
        tx = db;

        r = profile_lookup(db, name, &profile_id, &kind);
        if (r < 0)
                return r;

        {
                _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_PROFILE_FILES);

                r = db_bind(db, st, DB_I64(profile_id));
                if (r < 0)
                        return r;

                while ((r = db_step(db, st)) > 0) {
                        DbProfileFile *p;

                        r = GREEDY_REALLOC(list, n_alloc, n + 1);
                        if (r < 0)
                                goto fail;

                        p = list + n;
                        *p = (DbProfileFile) {
                                .score = sqlite3_column_double(st, 9),
                                .seen = (unsigned) sqlite3_column_int64(st, 10),
                        };
                        r = read_file_row(db, st, 0, &p->file);
                        if (r < 0)
                                goto fail;
                        n++;
                }
                if (r < 0)
                        goto fail;
        }

        r = db_commit(db);
        if (r < 0)
                goto fail;
        TAKE_PTR(tx);

        if (ret_kind)
                *ret_kind = kind;
        *ret = list;
        *ret_n = n;
        return 0;

fail:
        db_profile_files_free(list, n);
        return r;
}

static int read_meta_row(Db *db, sqlite3_stmt *st, void *row) {
        int64_t offset = sqlite3_column_int64(st, 1), length = sqlite3_column_int64(st, 2);

        if (offset < 0 || length <= 0)
                return -EBADMSG;
        *(DbMetaRange *) row = (DbMetaRange) {
                .fsid = (uint64_t) sqlite3_column_int64(st, 0),
                .offset = (uint64_t) offset,
                .length = (uint64_t) length,
        };
        return 0;
}

static void meta_rows_free(void *rows, size_t n) {
        free(rows);
}

int db_get_profile_metadata(Db *db, const char *name, DbMetaRange **ret, size_t *ret_n) {
        _cleanup_rollback_ Db *tx = NULL;
        int64_t profile_id;
        int r;

        if (!db || !name || !ret || !ret_n)
                return -EINVAL;
        r = db_begin(db, false);
        if (r < 0)
                return r;
        tx = db;
        r = profile_lookup(db, name, &profile_id, NULL);
        if (r < 0)
                return r;
        {
                _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_PROFILE_METADATA);

                r = db_bind(db, st, DB_I64(profile_id));
                if (r < 0)
                        return r;
                r = db_read_rows(db, st, sizeof(DbMetaRange), read_meta_row, meta_rows_free, (void **) ret,
                                 ret_n);
                if (r < 0)
                        return r;
        }
        r = db_commit(db);
        if (r < 0) {
                *ret = mfree(*ret);
                *ret_n = 0;
                return r;
        }
        TAKE_PTR(tx);
        return 0;
}

/* A file's index in `files`, by its id: (id, index) pairs sorted by id. */
typedef struct FileIndex {
        int64_t id;
        size_t index;
} FileIndex;

static int file_index_compare(const void *a, const void *b) {
        const FileIndex *x = a, *y = b;

        return x->id < y->id ? -1 : x->id > y->id;
}

int db_get_profile_ranges(Db *db, const char *name, const DbProfileFile *files, size_t n_files,
                          DbProfileRange **ret, size_t *ret_n) {
        _cleanup_rollback_ Db *tx = NULL;
        _cleanup_free_ FileIndex *index = NULL;
        _cleanup_free_ DbProfileRange *list = NULL;
        _cleanup_free_ bool *has = NULL;
        size_t n = 0, n_alloc = 0;
        int64_t profile_id;
        int r;

        if (!db || !name || (n_files > 0 && !files) || !ret || !ret_n)
                return -EINVAL;

        index = calloc(n_files + 1, sizeof *index);
        has = calloc(n_files + 1, sizeof *has);
        if (!index || !has)
                return -ENOMEM;
        for (size_t i = 0; i < n_files; i++)
                index[i] = (FileIndex) { .id = files[i].file.id, .index = i };
        qsort_safe(index, n_files, sizeof *index, file_index_compare);

        r = db_begin(db, false);
        if (r < 0)
                return r;
        tx = db;

        r = profile_lookup(db, name, &profile_id, NULL);
        if (r < 0)
                return r;

        {
                _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_PROFILE_RANGES);

                r = db_bind(db, st, DB_I64(profile_id));
                if (r < 0)
                        return r;

                while ((r = db_step(db, st)) > 0) {
                        FileIndex key = { .id = sqlite3_column_int64(st, 0) };
                        int64_t offset = sqlite3_column_int64(st, 1), length = sqlite3_column_int64(st, 2);
                        const FileIndex *fi;
                        uint64_t size;

                        fi = n_files > 0 ? bsearch(&key, index, n_files, sizeof *index, file_index_compare) : NULL;
                        if (!fi || offset < 0 || length < 0)
                                continue;
                        size = files[fi->index].file.size;
                        if (length == 0) {
                                /* whole, at its size now */
                                offset = 0;
                                length = (int64_t) MIN(size, (uint64_t) INT64_MAX);
                        } else if ((uint64_t) offset >= size)
                                continue;
                        else
                                length = (int64_t) MIN((uint64_t) length, size - (uint64_t) offset);

                        r = GREEDY_REALLOC(list, n_alloc, n + 1);
                        if (r < 0)
                                return r;
                        list[n++] = (DbProfileRange) { .file = fi->index, .offset = (uint64_t) offset,
                                                       .length = (uint64_t) length };
                        has[fi->index] = true;
                }
                if (r < 0)
                        return r;
        }

        r = db_commit(db);
        if (r < 0)
                return r;
        TAKE_PTR(tx);

        /* Every file has a range: those the stored ranges miss count whole. */
        for (size_t i = 0; i < n_files; i++) {
                if (has[i])
                        continue;
                r = GREEDY_REALLOC(list, n_alloc, n + 1);
                if (r < 0)
                        return r;
                list[n++] = (DbProfileRange) { .file = i, .offset = 0, .length = files[i].file.size };
        }

        *ret = TAKE_PTR(list);
        *ret_n = n;
        return 0;
}

void db_session_infos_free(DbSessionInfo *p, size_t n) {
        if (!p)
                return;
        for (size_t i = 0; i < n; i++) {
                free(p[i].profile);
                free(p[i].boot_id);
        }
        free(p);
}

static int read_session_info(Db *db, sqlite3_stmt *st, void *row) {
        DbSessionInfo *p = row;
        int r;

        *p = (DbSessionInfo) {
                .id = sqlite3_column_int64(st, 0),
                .started_realtime_usec = (uint64_t) sqlite3_column_int64(st, 4),
                .duration_usec = (uint64_t) sqlite3_column_int64(st, 5),
                .n_files = (unsigned) sqlite3_column_int64(st, 6),
                .complete = sqlite3_column_int64(st, 7) != 0,
                .uid = column_uid(st, 8),
        };
        r = column_kind(st, 2, &p->kind);
        if (r < 0)
                return r;
        r = column_strdup(db, st, 1, &p->profile);
        if (r < 0)
                return r;
        r = column_strdup(db, st, 3, &p->boot_id);
        if (r < 0)
                p->profile = mfree(p->profile);
        return r;
}

static void session_infos_free(void *rows, size_t n) {
        db_session_infos_free(rows, n);
}

int db_list_sessions(Db *db, DbSessionInfo **ret, size_t *ret_n) {
        _cleanup_reset_ sqlite3_stmt *st = NULL;

        if (!db || !ret || !ret_n)
                return -EINVAL;
        st = db_stmt(db, STMT_LIST_SESSIONS);
        return db_read_rows(db, st, sizeof(DbSessionInfo), read_session_info, session_infos_free, (void **) ret, ret_n);
}

/* Inside a write transaction: -ENOENT if there is no such profile. Sessions, their session_files and the
 * profile_files go with it (ON DELETE CASCADE); the files only it referred to are left for the caller to
 * delete (files_delete_orphans()), once for however many profiles it deletes. */
static int profile_delete(Db *db, const char *name) {
        _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_PROFILE_DELETE);
        int r;

        r = db_write(db, st, DB_TEXT(name));
        if (r < 0)
                return r;

        return sqlite3_changes(db->sqlite) > 0 ? 0 : -ENOENT;
}

int db_forget_profile(Db *db, const char *name) {
        _cleanup_rollback_ Db *tx = NULL;
        int r;

        if (!db || !name)
                return -EINVAL;

        r = db_begin(db, true);
        if (r < 0)
                return r;
        tx = db;

        r = profile_delete(db, name);
        if (r < 0)
                return r;

        r = files_delete_orphans(db);
        if (r < 0)
                return r;

        r = db_commit(db);
        if (r < 0)
                return r;
        TAKE_PTR(tx);

        return 0;
}

static const char *const evict_reason_table[_EVICT_REASON_MAX] = {
        [EVICT_PER_USER] = "MaxProfilesPerUser",
        [EVICT_TOTAL] = "MaxProfiles",
};

DEFINE_STRING_TABLE_TO_STRING(evict_reason, EvictReason, )

void db_evicted_free(DbEvicted *e, size_t n) {
        if (!e)
                return;
        for (size_t i = 0; i < n; i++)
                free(e[i].name);
        free(e);
}

static int evicted_add(Db *db, DbEvicted **list, size_t *n, size_t *n_alloc, const char *name, uid_t uid,
                       EvictReason reason) {
        char *copy;
        int r;

        r = greedy_realloc((void **) list, n_alloc, *n + 1, sizeof(DbEvicted));
        if (r < 0)
                return r;
        copy = strdup(name);
        if (!copy)
                return -ENOMEM;
        (*list)[(*n)++] = (DbEvicted) { .name = copy, .uid = uid, .reason = reason };
        return 0;
}

static int count_app_profiles(Db *db, unsigned *ret) {
        _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_COUNT_APP_PROFILES);
        int64_t n;
        int r;

        r = db_query_id_values(db, st, NULL, 0, &n);
        if (r < 0)
                return r;
        *ret = (unsigned) n;
        return 0;
}

static int evict_per_user(Db *db, int64_t stored_id, uid_t owner, unsigned max_per_user, DbEvicted **list,
                          size_t *n, size_t *n_alloc) {
        size_t first = *n;
        int r;

        {
                _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_OLDEST_OF_UID);

                r = db_bind(db, st, DB_I64(owner), DB_I64(stored_id), DB_I64(max_per_user));
                if (r < 0)
                        return r;
                while ((r = db_step(db, st)) > 0) {
                        const char *name = (const char *) sqlite3_column_text(st, 0);

                        if (!name)
                                return -ENOMEM;
                        r = evicted_add(db, list, n, n_alloc, name, owner, EVICT_PER_USER);
                        if (r < 0)
                                return r;
                }
                if (r < 0)
                        return r;
        }

        for (size_t i = first; i < *n; i++) {
                r = profile_delete(db, (*list)[i].name);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int evict_total(Db *db, int64_t stored_id, bool system_store, unsigned max_profiles, DbEvicted **list,
                       size_t *n, size_t *n_alloc) {
        unsigned count;
        int r;

        r = count_app_profiles(db, &count);
        if (r < 0)
                return r;

        for (; count > max_profiles; count--) {
                _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_OLDEST_TO_EVICT);
                const char *name;

                r = db_query(db, st, DB_I64(stored_id), DB_I64(system_store), DB_I64(SYSTEM_UID_MAX));
                if (r < 0)
                        return r;
                if (r == 0)
                        break;          /* a user's session, and only the system's profiles left */
                name = (const char *) sqlite3_column_text(st, 0);
                if (!name)
                        return -ENOMEM;
                r = evicted_add(db, list, n, n_alloc, name, column_uid(st, 1), EVICT_TOTAL);
                if (r < 0)
                        return r;
                r = profile_delete(db, (*list)[*n - 1].name);
                if (r < 0)
                        return r;
        }
        return 0;
}

int db_evict_profiles(Db *db, const char *profile, unsigned max_profiles, unsigned max_per_user,
                      DbEvicted **ret, size_t *ret_n) {
        _cleanup_rollback_ Db *tx = NULL;
        DbEvicted *list = NULL;
        size_t n = 0, n_alloc = 0;
        int64_t stored_id;
        uid_t owner;
        int r;

        if (!db || !profile || !ret || !ret_n || max_profiles == 0 || max_per_user == 0)
                return -EINVAL;

        r = db_begin(db, true);
        if (r < 0)
                return r;
        tx = db;

        r = profile_lookup(db, profile, &stored_id, NULL);
        if (r < 0)
                goto fail;
        {
                _cleanup_reset_ sqlite3_stmt *st = db_stmt(db, STMT_PROFILE_UID);

                r = db_query_row(db, st, DB_I64(stored_id));
                if (r < 0)
                        goto fail;
                owner = column_uid(st, 0);
        }

        /* One user's flood evicts that user's own profiles; nobody owns the unknown ones. */
        if (!uid_is_system(owner) && owner != UID_INVALID) {
                r = evict_per_user(db, stored_id, owner, max_per_user, &list, &n, &n_alloc);
                if (r < 0)
                        goto fail;
        }

        r = evict_total(db, stored_id, uid_is_system(owner), max_profiles, &list, &n, &n_alloc);
        if (r < 0)
                goto fail;

        if (n > 0) {
                r = files_delete_orphans(db);
                if (r < 0)
                        goto fail;
        }

        r = db_commit(db);
        if (r < 0)
                goto fail;
        TAKE_PTR(tx);

        *ret = list;
        *ret_n = n;
        return 0;

fail:
        db_evicted_free(list, n);
        return r;
}

int db_forget_all(Db *db, unsigned *ret_n_profiles) {
        _cleanup_rollback_ Db *tx = NULL;
        unsigned n;
        int r;

        if (!db)
                return -EINVAL;

        r = db_begin(db, true);
        if (r < 0)
                return r;
        tx = db;

        r = db_exec_stmt(db, STMT_PROFILES_DELETE_ALL);
        if (r < 0)
                return r;
        /* Counts the profiles only, not the rows removed by the cascade. */
        n = (unsigned) sqlite3_changes(db->sqlite);

        r = files_delete_orphans(db);
        if (r < 0)
                return r;

        r = db_commit(db);
        if (r < 0)
                return r;
        TAKE_PTR(tx);

        if (ret_n_profiles)
                *ret_n_profiles = n;
        return 0;
}

int db_counts(Db *db, unsigned *ret_profiles, unsigned *ret_sessions, unsigned *ret_files) {
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int r;

        if (!db)
                return -EINVAL;

        st = db_stmt(db, STMT_COUNTS);
        r = db_query_row_values(db, st, NULL, 0);
        if (r < 0)
                return r;

        if (ret_profiles)
                *ret_profiles = (unsigned) sqlite3_column_int64(st, 0);
        if (ret_sessions)
                *ret_sessions = (unsigned) sqlite3_column_int64(st, 1);
        if (ret_files)
                *ret_files = (unsigned) sqlite3_column_int64(st, 2);
        return 0;
}

int db_set_busy_timeout(Db *db, unsigned msec) {
        return sqlite_errno(db->sqlite, sqlite3_busy_timeout(db->sqlite, (int) MIN(msec, (unsigned) INT_MAX)));
}
