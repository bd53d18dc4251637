/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The session store: a recorded session into its profile, files and ranges in one transaction, the counts
 * of a boot's sessions, the list of sessions, and the input of a profile's merge (its newest sessions and
 * their files). Never logs. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "store/db-private.h"
#include "common/macro.h"

/* The sessions of profile ?1 that are kept and merged: its newest ?2, and its newest one whose start was not
 * prefetched (a prefetched start's reads of the prefetched pages are not all in its ranges, nor its
 * metadata: that one keeps them while every later start is prefetched). */
#define NEWEST_SESSIONS                                                                         \
        "SELECT id FROM (SELECT id FROM sessions WHERE profile_id = ?1 "                        \
        "ORDER BY id DESC LIMIT ?2) UNION "                                                     \
        "SELECT id FROM (SELECT id FROM sessions WHERE profile_id = ?1 AND prefetched = 0 "     \
        "ORDER BY id DESC LIMIT 1) ORDER BY id DESC"

const char *const session_stmt_sql[_SESSION_STMT_MAX] = {
        [SESSION_STMT_PROFILE_UPSERT] =
                "INSERT INTO profiles (name, kind, updated, recorded, uid) VALUES (?1, ?2, ?3, 1, ?4) "
                "ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, "
                "updated = MAX(updated, excluded.updated), recorded = recorded + 1, "
                "uid = MIN(IFNULL(uid, excluded.uid), excluded.uid) "
                "RETURNING id",
        [SESSION_STMT_FILE_UPSERT] =
                "INSERT INTO files (fsid, handle_type, handle, dev, ino, generation, path, size, mtime_ns, "
                "first_seen, last_seen) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10) "
                "ON CONFLICT (fsid, handle_type, handle) DO UPDATE SET "
                "dev = excluded.dev, ino = excluded.ino, generation = excluded.generation, "
                "path = excluded.path, size = excluded.size, mtime_ns = excluded.mtime_ns, "
                "last_seen = MAX(last_seen, excluded.last_seen) "
                "RETURNING id",
        [SESSION_STMT_SESSION_INSERT] =
                "INSERT INTO sessions (profile_id, boot_id, started_realtime, duration_usec, n_files, "
                "complete, uid, prefetched) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING id",
        [SESSION_STMT_SESSION_FILE_INSERT] =
                "INSERT INTO session_files (session_id, position, file_id, offset_usec) "
                "VALUES (?1, ?2, ?3, ?4)",
        [SESSION_STMT_SESSION_RANGE_INSERT] =
                "INSERT INTO session_ranges (session_id, position, file_id, offset, length, offset_usec) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        [SESSION_STMT_SESSION_METADATA_INSERT] =
                "INSERT INTO session_metadata (session_id, position, fsid, offset, length, offset_usec) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        /* only the newest metadata is ever read: a session of profile ?1 that brings its own (?2) replaces
         * the others' */
        [SESSION_STMT_SESSION_METADATA_PRUNE] =
                "DELETE FROM session_metadata WHERE session_id IN ("
                "SELECT id FROM sessions WHERE profile_id = ?1 AND id <> ?2)",
        /* session_ranges and session_metadata rows go with the sessions (ON DELETE CASCADE). */
        [SESSION_STMT_SESSIONS_PRUNE] =
                "DELETE FROM sessions WHERE profile_id = ?1 AND id NOT IN (" NEWEST_SESSIONS ")",
        [SESSION_STMT_COUNT_IN_BOOT] =
                "SELECT COUNT(*) FROM sessions s JOIN profiles p ON p.id = s.profile_id "
                "WHERE p.name = ?1 AND s.boot_id = ?2",
        [SESSION_STMT_COUNT_IN_BOOT_ALL] =
                "SELECT p.name, COUNT(*) FROM sessions s JOIN profiles p ON p.id = s.profile_id "
                "WHERE s.boot_id = ?1 GROUP BY p.id ORDER BY p.name",
        [SESSION_STMT_MERGE_SESSIONS] = NEWEST_SESSIONS,
        [SESSION_STMT_MERGE_SESSION_FILES] =
                "SELECT file_id FROM session_files WHERE session_id = ?1 ORDER BY position",
        [SESSION_STMT_MERGE_FILES] =
                "SELECT " FILE_COLUMNS " FROM files f WHERE f.id IN ("
                "SELECT sf.file_id FROM session_files sf WHERE sf.session_id IN (" NEWEST_SESSIONS ")) "
                "ORDER BY f.id",
        [SESSION_STMT_MERGE_SESSION_RANGES] =
                "SELECT file_id, offset, length FROM session_ranges WHERE session_id = ?1 ORDER BY position",
        [SESSION_STMT_LIST_SESSIONS] =
                "SELECT s.id, p.name, p.kind, s.boot_id, s.started_realtime, s.duration_usec, s.n_files, "
                "s.complete, s.uid FROM sessions s JOIN profiles p ON p.id = s.profile_id "
                "ORDER BY s.started_realtime DESC, s.id DESC",
};

static int session_file_add(Db *db, const DbSession *s, int64_t session_id, size_t position,
                            int64_t *ret_file_id) {
        const DbSessionFile *f = s->files + position;
        int64_t file_id;
        int r;

        if (!f->path || f->key.handle_len > FID_HANDLE_MAX)
                return -EINVAL;

        {
                _cleanup_reset_ sqlite3_stmt *st = db_session_stmt(db, SESSION_STMT_FILE_UPSERT);

                r = db_query_id(db, st, &file_id, DB_I64(f->key.fsid), DB_I64(f->key.handle_type),
                                DB_BLOB(f->key.handle, f->key.handle_len), DB_I64(f->dev), DB_I64(f->ino),
                                DB_I64(f->generation), DB_TEXT(f->path), DB_I64(f->size),
                                DB_I64(f->mtime_ns), DB_I64(s->started_realtime_usec));
                if (r < 0)
                        return r;
        }
        *ret_file_id = file_id;

        _cleanup_reset_ sqlite3_stmt *st = db_session_stmt(db, SESSION_STMT_SESSION_FILE_INSERT);

        return db_write(db, st, DB_I64(session_id), DB_I64(position), DB_I64(file_id),
                        DB_I64(f->offset_usec));
}

static int session_range_add(Db *db, int64_t session_id, size_t position, const DbSessionRange *range,
                             const int64_t *file_ids) {
        _cleanup_reset_ sqlite3_stmt *st = db_session_stmt(db, SESSION_STMT_SESSION_RANGE_INSERT);

        return db_write(db, st, DB_I64(session_id), DB_I64(position), DB_I64(file_ids[range->file]),
                        DB_I64(range->offset), DB_I64(range->length), DB_I64(range->offset_usec));
}

static int session_metadata_add(Db *db, int64_t session_id, size_t position, const DbMetaRange *range) {
        _cleanup_reset_ sqlite3_stmt *st = db_session_stmt(db, SESSION_STMT_SESSION_METADATA_INSERT);

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

        r = db_begin(db, true, &tx);
        if (r < 0)
                return r;

        {
                _cleanup_reset_ sqlite3_stmt *st = db_session_stmt(db, SESSION_STMT_PROFILE_UPSERT);

                r = db_query_id(db, st, &profile_id, DB_TEXT(s->profile), DB_TEXT(kind),
                                DB_I64(s->started_realtime_usec + s->duration_usec), DB_I64(s->uid));
                if (r < 0)
                        return r;
        }

        {
                _cleanup_reset_ sqlite3_stmt *st = db_session_stmt(db, SESSION_STMT_SESSION_INSERT);

                r = db_query_id(db, st, &session_id, DB_I64(profile_id), DB_TEXT(s->boot_id),
                                DB_I64(s->started_realtime_usec), DB_I64(s->duration_usec),
                                DB_I64(s->n_files), DB_I64(s->complete), DB_I64(s->uid),
                                DB_I64(s->prefetched));
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
                _cleanup_reset_ sqlite3_stmt *st = db_session_stmt(db, SESSION_STMT_SESSION_METADATA_PRUNE);

                r = db_write(db, st, DB_I64(profile_id), DB_I64(session_id));
                if (r < 0)
                        return r;
        }

        {
                _cleanup_reset_ sqlite3_stmt *st = db_session_stmt(db, SESSION_STMT_SESSIONS_PRUNE);

                r = db_write(db, st, DB_I64(profile_id), DB_I64(keep));
                if (r < 0)
                        return r;
        }

        /* Files only become orphans when session_files rows go away. */
        if (sqlite3_changes(db_sqlite(db)) > 0) {
                r = files_delete_orphans(db);
                if (r < 0)
                        return r;
        }

        r = db_commit(&tx);
        if (r < 0)
                return r;

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

        st = db_session_stmt(db, SESSION_STMT_COUNT_IN_BOOT);
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

        st = db_session_stmt(db, SESSION_STMT_COUNT_IN_BOOT_ALL);
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
                _cleanup_reset_ sqlite3_stmt *st = db_session_stmt(db, SESSION_STMT_MERGE_SESSIONS);

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
                _cleanup_reset_ sqlite3_stmt *st = db_session_stmt(db, SESSION_STMT_MERGE_SESSION_FILES);
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
                _cleanup_reset_ sqlite3_stmt *st = db_session_stmt(db, SESSION_STMT_MERGE_SESSION_RANGES);
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
        _cleanup_reset_ sqlite3_stmt *st = db_session_stmt(db, SESSION_STMT_MERGE_FILES);
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
        r = db_begin(db, false, &tx);
        if (r < 0)
                return r;

        r = profile_lookup(db, profile, &profile_id, NULL);
        if (r < 0)
                return r;

        r = merge_load_sessions(db, profile_id, keep, &in);
        if (r < 0)
                return r;

        r = merge_load_files(db, profile_id, keep, &in);
        if (r < 0)
                return r;

        r = db_commit(&tx);
        if (r < 0)
                return r;

        *ret = in;
        in = (DbMergeInput) {};
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
        st = db_session_stmt(db, SESSION_STMT_LIST_SESSIONS);
        return db_read_rows(db, st, sizeof(DbSessionInfo), read_session_info, session_infos_free, (void **) ret, ret_n);
}

