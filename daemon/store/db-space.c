/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The database file's free space handed back to the filesystem: deleted rows leave free pages, which
 * SQLite reuses but never returns by itself, and a WAL keeps the size of its biggest transaction. Never
 * logs. */
#include <errno.h>
#include <stdio.h>

#include "store/db-private.h"
#include "common/macro.h"

static int exec(Db *db, const char *sql) {
        return sqlite_errno(db_sqlite(db), sqlite3_exec(db_sqlite(db), sql, NULL, NULL, NULL));
}

static int read_int(Db *db, const char *sql, int64_t *ret) {
        sqlite3_stmt *st = NULL;
        int rc, r;

        rc = sqlite3_prepare_v2(db_sqlite(db), sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sqlite_errno(db_sqlite(db), rc);
        r = db_step(db, st);
        if (r > 0)
                *ret = sqlite3_column_int64(st, 0);
        (void) sqlite3_finalize(st);
        return r < 0 ? r : r == 0 ? -EIO : 0;
}

int db_space(Db *db, DbSpace *ret) {
        int64_t pages, free_pages, page_size, mode;
        int r;

        if (!db || !ret)
                return -EINVAL;
        if ((r = read_int(db, "PRAGMA page_count", &pages)) < 0 ||
            (r = read_int(db, "PRAGMA freelist_count", &free_pages)) < 0 ||
            (r = read_int(db, "PRAGMA page_size", &page_size)) < 0 ||
            (r = read_int(db, "PRAGMA auto_vacuum", &mode)) < 0)
                return r;
        *ret = (DbSpace) {
                .pages = (uint64_t) MAX(pages, (int64_t) 0),
                .free_pages = (uint64_t) MAX(free_pages, (int64_t) 0),
                .page_size = (uint64_t) MAX(page_size, (int64_t) 0),
                .incremental = mode == 2,
        };
        return 0;
}

int64_t db_vacuum_step(Db *db, unsigned n) {
        char sql[64];
        int64_t left, mode;
        int r;

        if (!db || n == 0 || !sqlite3_get_autocommit(db_sqlite(db)))
                return -EINVAL;
        r = read_int(db, "PRAGMA auto_vacuum", &mode);
        if (r < 0)
                return r;
        if (mode != 2) {
                /* made before: the mode changes only with a VACUUM, which also returns every free page */
                r = exec(db, "PRAGMA auto_vacuum = INCREMENTAL");
                if (r >= 0)
                        r = exec(db, "VACUUM");
                if (r < 0)
                        return r;
        } else {
                /* PRAGMA takes no parameters; the value is our own integer, not data */
                (void) snprintf(sql, sizeof sql, "PRAGMA incremental_vacuum(%u)", n);
                r = exec(db, sql);
                if (r < 0)
                        return r;
        }
        r = read_int(db, "PRAGMA freelist_count", &left);
        return r < 0 ? r : left;
}

int db_checkpoint_truncate(Db *db) {
        int rc;

        if (!db)
                return -EINVAL;
        /* readers of an older state would make it wait (the busy handler): not on the main loop */
        (void) sqlite3_busy_timeout(db_sqlite(db), 0);
        rc = sqlite3_wal_checkpoint_v2(db_sqlite(db), NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
        (void) sqlite3_busy_timeout(db_sqlite(db), DB_BUSY_TIMEOUT_MSEC);
        return sqlite_errno(db_sqlite(db), rc);
}
