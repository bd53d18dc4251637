/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The profile store: a profile's merged files and ranges, its lookups and queries, the files' updates and
 * deletions, forgetting profiles and evicting them over the caps. Never logs. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/db-private.h"
#include "common/macro.h"

const char *const profile_stmt_sql[_PROFILE_STMT_MAX] = {
        [PROFILE_STMT_PROFILE_LOOKUP] = "SELECT id, kind FROM profiles WHERE name = ?1",
        /* the metadata of profile ?1's newest session that has any: the filesystem as it is now */
        [PROFILE_STMT_PROFILE_METADATA] =
                "SELECT fsid, offset, length FROM session_metadata WHERE session_id = ("
                "SELECT MAX(sm.session_id) FROM session_metadata sm JOIN sessions s ON s.id = sm.session_id "
                "WHERE s.profile_id = ?1) ORDER BY position",
        /* profile_files rows of the deleted files go with them (ON DELETE CASCADE). */
        [PROFILE_STMT_FILES_DELETE_ORPHANS] =
                "DELETE FROM files WHERE NOT EXISTS "
                "(SELECT 1 FROM session_files sf WHERE sf.file_id = files.id)",
        [PROFILE_STMT_PROFILE_FILES_DELETE] = "DELETE FROM profile_files WHERE profile_id = ?1",
        [PROFILE_STMT_PROFILE_RANGES_DELETE] = "DELETE FROM profile_ranges WHERE profile_id = ?1",
        [PROFILE_STMT_PROFILE_RANGE_INSERT] =
                "INSERT INTO profile_ranges (profile_id, position, file_id, offset, length) "
                "VALUES (?1, ?2, ?3, ?4, ?5)",
        [PROFILE_STMT_PROFILE_RANGES] =
                "SELECT file_id, offset, length FROM profile_ranges WHERE profile_id = ?1 ORDER BY position",
        [PROFILE_STMT_PROFILE_FILE_INSERT] =
                "INSERT INTO profile_files (profile_id, position, file_id, score, seen) "
                "VALUES (?1, ?2, ?3, ?4, ?5)",
        [PROFILE_STMT_FILE_UPDATE] = "UPDATE files SET path = ?2, size = ?3, mtime_ns = ?4 WHERE id = ?1",
        [PROFILE_STMT_FILE_SESSIONS_SHRINK] =
                "UPDATE sessions SET n_files = n_files - "
                "(SELECT COUNT(*) FROM session_files sf "
                " WHERE sf.session_id = sessions.id AND sf.file_id = ?1) "
                "WHERE id IN (SELECT session_id FROM session_files WHERE file_id = ?1)",
        /* session_files and profile_files rows go with it (ON DELETE CASCADE). */
        [PROFILE_STMT_FILE_DELETE] = "DELETE FROM files WHERE id = ?1",
        [PROFILE_STMT_LIST_PROFILES] =
                "SELECT p.name, p.kind, "
                "(SELECT COUNT(*) FROM sessions s WHERE s.profile_id = p.id), "
                "(SELECT COUNT(*) FROM profile_files pf WHERE pf.profile_id = p.id), "
                "(SELECT COALESCE(SUM(f.size), 0) FROM profile_files pf JOIN files f ON f.id = pf.file_id "
                " WHERE pf.profile_id = p.id), "
                "(SELECT COALESCE(MAX(s.started_realtime + s.duration_usec), 0) FROM sessions s "
                " WHERE s.profile_id = p.id), p.recorded, p.uid "
                "FROM profiles p ORDER BY p.kind <> 'boot', p.name",
        [PROFILE_STMT_PROFILE_FILES] =
                "SELECT " FILE_COLUMNS ", pf.score, pf.seen FROM profile_files pf "
                "JOIN files f ON f.id = pf.file_id WHERE pf.profile_id = ?1 ORDER BY pf.position",
        [PROFILE_STMT_PROFILE_DELETE] = "DELETE FROM profiles WHERE name = ?1",
        [PROFILE_STMT_PROFILES_DELETE_ALL] = "DELETE FROM profiles",
        [PROFILE_STMT_COUNTS] =
                "SELECT (SELECT COUNT(*) FROM profiles), (SELECT COUNT(*) FROM sessions), "
                "(SELECT COUNT(*) FROM files)",
        [PROFILE_STMT_PROFILE_UID] = "SELECT uid FROM profiles WHERE id = ?1",
        /* MaxProfiles= counts app profiles: the boot profile is never evicted */
        [PROFILE_STMT_COUNT_APP_PROFILES] = "SELECT COUNT(*) FROM profiles WHERE kind = 'app'",
        /* MaxProfilesPerUser=: the profiles of uid ?1 beyond the ?3 most recently updated, the one just
         * stored (?2) counting as the newest */
        [PROFILE_STMT_OLDEST_OF_UID] =
                "SELECT name FROM profiles WHERE kind = 'app' AND uid = ?1 "
                "ORDER BY id = ?2 DESC, updated DESC, id DESC LIMIT -1 OFFSET ?3",
        /* MaxProfiles=: the least recently updated users' profile (uid NULL or above ?3), then the
         * system's; the one just stored (?1) last. A user's session (?2 = 0) evicts users' profiles only,
         * its own last of all: it never displaces the system's. */
        [PROFILE_STMT_OLDEST_TO_EVICT] =
                "SELECT name, uid FROM profiles WHERE kind = 'app' AND (?2 OR NOT IFNULL(uid <= ?3, 0)) "
                "ORDER BY id = ?1, IFNULL(uid <= ?3, 0), updated, id LIMIT 1",
};

/* Looks up a profile: -ENOENT if it does not exist. ret_kind may be NULL. */
int profile_lookup(Db *db, const char *name, int64_t *ret_id, ProfileKind *ret_kind) {
        _cleanup_reset_ sqlite3_stmt *st = db_profile_stmt(db, PROFILE_STMT_PROFILE_LOOKUP);
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

int files_delete_orphans(Db *db) {
        _cleanup_reset_ sqlite3_stmt *st = db_profile_stmt(db, PROFILE_STMT_FILES_DELETE_ORPHANS);

        return db_step_done(db, st);
}

static int profile_clear(Db *db, ProfileStmt s, int64_t profile_id) {
        _cleanup_reset_ sqlite3_stmt *st = db_profile_stmt(db, s);

        return db_write(db, st, DB_I64(profile_id));
}

static int profile_range_add(Db *db, int64_t profile_id, size_t position, const DbRange *range) {
        _cleanup_reset_ sqlite3_stmt *st = db_profile_stmt(db, PROFILE_STMT_PROFILE_RANGE_INSERT);

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

        r = db_begin(db, true, &tx);
        if (r < 0)
                return r;

        r = profile_lookup(db, profile, &profile_id, NULL);
        if (r < 0)
                return r;

        r = profile_clear(db, PROFILE_STMT_PROFILE_FILES_DELETE, profile_id);
        if (r < 0)
                return r;
        r = profile_clear(db, PROFILE_STMT_PROFILE_RANGES_DELETE, profile_id);
        if (r < 0)
                return r;

        for (size_t i = 0; i < n; i++) {
                _cleanup_reset_ sqlite3_stmt *st = db_profile_stmt(db, PROFILE_STMT_PROFILE_FILE_INSERT);

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

        r = db_commit(&tx);
        if (r < 0)
                return r;

        return 0;
}

int db_update_file(Db *db, int64_t file_id, const char *path, uint64_t size, int64_t mtime_ns) {
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int r;

        if (!db || !path)
                return -EINVAL;

        st = db_profile_stmt(db, PROFILE_STMT_FILE_UPDATE);
        r = db_write(db, st, DB_I64(file_id), DB_TEXT(path), DB_I64(size), DB_I64(mtime_ns));
        if (r < 0)
                return r;

        return sqlite3_changes(db_sqlite(db)) > 0 ? 0 : -ENOENT;
}

int db_delete_file(Db *db, int64_t file_id) {
        _cleanup_rollback_ Db *tx = NULL;
        int r;

        if (!db)
                return -EINVAL;

        r = db_begin(db, true, &tx);
        if (r < 0)
                return r;

        /* Positions of the remaining files keep their order; only the counts need fixing. */
        {
                _cleanup_reset_ sqlite3_stmt *st = db_profile_stmt(db, PROFILE_STMT_FILE_SESSIONS_SHRINK);

                r = db_write(db, st, DB_I64(file_id));
                if (r < 0)
                        return r;
        }

        {
                _cleanup_reset_ sqlite3_stmt *st = db_profile_stmt(db, PROFILE_STMT_FILE_DELETE);

                r = db_write(db, st, DB_I64(file_id));
                if (r < 0)
                        return r;
        }

        if (sqlite3_changes(db_sqlite(db)) == 0)
                return -ENOENT;

        r = db_commit(&tx);
        if (r < 0)
                return r;

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
        st = db_profile_stmt(db, PROFILE_STMT_LIST_PROFILES);
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

        r = db_begin(db, false, &tx);
        if (r < 0)
                return r;

        r = profile_lookup(db, name, &profile_id, &kind);
        if (r < 0)
                return r;

        {
                _cleanup_reset_ sqlite3_stmt *st = db_profile_stmt(db, PROFILE_STMT_PROFILE_FILES);

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

        r = db_commit(&tx);
        if (r < 0)
                goto fail;

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
        r = db_begin(db, false, &tx);
        if (r < 0)
                return r;
        r = profile_lookup(db, name, &profile_id, NULL);
        if (r < 0)
                return r;
        {
                _cleanup_reset_ sqlite3_stmt *st = db_profile_stmt(db, PROFILE_STMT_PROFILE_METADATA);

                r = db_bind(db, st, DB_I64(profile_id));
                if (r < 0)
                        return r;
                r = db_read_rows(db, st, sizeof(DbMetaRange), read_meta_row, meta_rows_free, (void **) ret,
                                 ret_n);
                if (r < 0)
                        return r;
        }
        r = db_commit(&tx);
        if (r < 0) {
                *ret = mfree(*ret);
                *ret_n = 0;
                return r;
        }
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

        r = db_begin(db, false, &tx);
        if (r < 0)
                return r;

        r = profile_lookup(db, name, &profile_id, NULL);
        if (r < 0)
                return r;

        {
                _cleanup_reset_ sqlite3_stmt *st = db_profile_stmt(db, PROFILE_STMT_PROFILE_RANGES);

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

        r = db_commit(&tx);
        if (r < 0)
                return r;

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

/* Inside a write transaction: -ENOENT if there is no such profile. Sessions, their session_files and the
 * profile_files go with it (ON DELETE CASCADE); the files only it referred to are left for the caller to
 * delete (files_delete_orphans()), once for however many profiles it deletes. */
static int profile_delete(Db *db, const char *name) {
        _cleanup_reset_ sqlite3_stmt *st = db_profile_stmt(db, PROFILE_STMT_PROFILE_DELETE);
        int r;

        r = db_write(db, st, DB_TEXT(name));
        if (r < 0)
                return r;

        return sqlite3_changes(db_sqlite(db)) > 0 ? 0 : -ENOENT;
}

int db_forget_profile(Db *db, const char *name) {
        _cleanup_rollback_ Db *tx = NULL;
        int r;

        if (!db || !name)
                return -EINVAL;

        r = db_begin(db, true, &tx);
        if (r < 0)
                return r;

        r = profile_delete(db, name);
        if (r < 0)
                return r;

        r = files_delete_orphans(db);
        if (r < 0)
                return r;

        r = db_commit(&tx);
        if (r < 0)
                return r;

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
        _cleanup_reset_ sqlite3_stmt *st = db_profile_stmt(db, PROFILE_STMT_COUNT_APP_PROFILES);
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
                _cleanup_reset_ sqlite3_stmt *st = db_profile_stmt(db, PROFILE_STMT_OLDEST_OF_UID);

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
                _cleanup_reset_ sqlite3_stmt *st = db_profile_stmt(db, PROFILE_STMT_OLDEST_TO_EVICT);
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

        r = db_begin(db, true, &tx);
        if (r < 0)
                return r;

        r = profile_lookup(db, profile, &stored_id, NULL);
        if (r < 0)
                goto fail;
        {
                _cleanup_reset_ sqlite3_stmt *st = db_profile_stmt(db, PROFILE_STMT_PROFILE_UID);

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

        r = db_commit(&tx);
        if (r < 0)
                goto fail;

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

        r = db_begin(db, true, &tx);
        if (r < 0)
                return r;

        {
                _cleanup_reset_ sqlite3_stmt *st = db_profile_stmt(db, PROFILE_STMT_PROFILES_DELETE_ALL);

                r = db_step_done(db, st);
                if (r < 0)
                        return r;
        }
        /* Counts the profiles only, not the rows removed by the cascade. */
        n = (unsigned) sqlite3_changes(db_sqlite(db));

        r = files_delete_orphans(db);
        if (r < 0)
                return r;

        r = db_commit(&tx);
        if (r < 0)
                return r;

        if (ret_n_profiles)
                *ret_n_profiles = n;
        return 0;
}

int db_counts(Db *db, unsigned *ret_profiles, unsigned *ret_sessions, unsigned *ret_files) {
        _cleanup_reset_ sqlite3_stmt *st = NULL;
        int r;

        if (!db)
                return -EINVAL;

        st = db_profile_stmt(db, PROFILE_STMT_COUNTS);
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

