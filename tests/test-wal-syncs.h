/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The default SQLite VFS with the xSync of WAL files counted: its files keep their memory layout, only their
 * method table is swapped for a copy whose xSync counts (and calls wal_sync_hook, if set, after the real
 * sync, in the thread that committed). count_wal_syncs() registers it as the default; call it before the
 * first db_open(). */

#include <sqlite3.h>

#include "test-util.h"

static sqlite3_vfs *wal_real_vfs, wal_counting_vfs;
static sqlite3_io_methods wal_methods;
static int (*wal_real_sync)(sqlite3_file *f, int flags);
static unsigned wal_syncs;
static void (*wal_sync_hook)(void);

static int wal_counting_sync(sqlite3_file *f, int flags) {
        int rc = wal_real_sync(f, flags);

        wal_syncs++;
        if (wal_sync_hook)
                wal_sync_hook();
        return rc;
}

static int wal_counting_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags, int *out_flags) {
        int rc = wal_real_vfs->xOpen(wal_real_vfs, name, f, flags, out_flags);

        if (rc == SQLITE_OK && (flags & SQLITE_OPEN_WAL) && f->pMethods) {
                if (!wal_real_sync) {
                        wal_methods = *f->pMethods;
                        wal_real_sync = wal_methods.xSync;
                        wal_methods.xSync = wal_counting_sync;
                }
                f->pMethods = &wal_methods;
        }
        return rc;
}

static inline void count_wal_syncs(void) {
        wal_real_vfs = sqlite3_vfs_find(NULL);
        ASSERT_TRUE(wal_real_vfs);
        wal_counting_vfs = *wal_real_vfs;
        wal_counting_vfs.zName = "seekless-test-counting";
        wal_counting_vfs.xOpen = wal_counting_open;
        ASSERT_EQ(sqlite3_vfs_register(&wal_counting_vfs, 1), SQLITE_OK);
}
