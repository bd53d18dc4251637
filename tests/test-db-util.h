/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* What the store's test programs share (test-db, test-db-session, test-db-profile): numbered files and
 * sessions of them, the store's counts, its rows read on a connection of their own, a scratch directory. */

#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/db.h"
#include "common/macro.h"
#include "test-util.h"

#define BOOT_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define BOOT_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define APP "/usr/bin/foo"
#define APP2 "/usr/bin/aaa"

static char tmpdir[] = "/tmp/test-db-XXXXXX";

/* The file numbered n: a key above INT64_MAX in fsid to check the int64 round trip. */
static inline FileKey file_key(unsigned n) {
        FileKey k = {
                .fsid = 0xF000000000000000ULL | n,
                .handle_type = 1,
                .handle_len = 8,
        };

        for (size_t i = 0; i < 8; i++)
                k.handle[i] = (uint8_t) (n >> (i % 4 * 8));
        return k;
}

static char file_paths[1024][32];

static inline DbSessionFile file_make(unsigned n) {
        ASSERT_TRUE(n < ELEMENTSOF(file_paths));
        (void) snprintf(file_paths[n], sizeof file_paths[n], "/usr/lib/f%u", n);

        return (DbSessionFile) {
                .key = file_key(n),
                .dev = 2049,
                .ino = 1000 + n,
                .generation = n * 7,
                .path = file_paths[n],
                .size = 4096ULL * n,
                .mtime_ns = (int64_t) n * 1000000000LL,
                .offset_usec = 10ULL * n,
        };
}

static inline int add(Db *db, const char *profile, ProfileKind kind, const char *boot_id, uint64_t started,
               const unsigned *nums, size_t n, unsigned keep, int64_t *ret_id) {
        DbSessionFile files[64];

        ASSERT_TRUE(n <= ELEMENTSOF(files));
        for (size_t i = 0; i < n; i++)
                files[i] = file_make(nums[i]);

        DbSession s = {
                .profile = profile,
                .kind = kind,
                .boot_id = boot_id,
                .started_realtime_usec = started,
                .duration_usec = 100,
                .complete = true,
                .files = files,
                .n_files = n,
        };
        return db_add_session(db, &s, keep, ret_id);
}

#define ADD(db, profile, kind, boot_id, started, keep, ...)                                             \
        add(db, profile, kind, boot_id, started, (const unsigned[]) { __VA_ARGS__ },                    \
            sizeof((const unsigned[]) { __VA_ARGS__ }) / sizeof(unsigned), keep, NULL)

static inline void check_counts(Db *db, unsigned profiles, unsigned sessions, unsigned files) {
        unsigned p, s, f;

        ASSERT_OK(db_counts(db, &p, &s, &f));
        fprintf(stderr, "   counts: %u profiles, %u sessions, %u files\n", p, s, f);
        ASSERT_EQ(p, profiles);
        ASSERT_EQ(s, sessions);
        ASSERT_EQ(f, files);
}

/* The number a stored file was made from, by its key. */
static inline unsigned file_num(const DbFile *f) {
        for (unsigned n = 0; n < ELEMENTSOF(file_paths); n++) {
                FileKey k = file_key(n);

                if (file_key_equal(&k, &f->key))
                        return n;
        }
        ASSERT_TRUE(false);
        return 0;
}

static inline int64_t file_id_of(const DbMergeInput *in, unsigned n) {
        for (size_t i = 0; i < in->n_files; i++)
                if (file_num(in->files + i) == n)
                        return in->files[i].id;
        return -1;
}

static inline const char *tmp_path(const char *name) {
        static char buf[4][256];
        static unsigned k;
        char *p = buf[k++ % ELEMENTSOF(buf)];

        (void) snprintf(p, sizeof buf[0], "%s/%s", tmpdir, name);
        return p;
}

static inline void write_file(const char *path, const void *data, size_t n) {
        _cleanup_close_ int fd = -EBADF;

        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(write(fd, data, n), (ssize_t) n);
}

static inline int64_t user_version(const char *path) {
        sqlite3 *s = NULL;
        sqlite3_stmt *st = NULL;
        int64_t v;

        ASSERT_EQ(sqlite3_open_v2(path, &s, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_prepare_v2(s, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
        v = sqlite3_column_int64(st, 0);
        ASSERT_EQ(sqlite3_finalize(st), SQLITE_OK);
        ASSERT_EQ(sqlite3_close(s), SQLITE_OK);
        return v;
}

/* SELECT COUNT(*) FROM what, on a connection of its own. */
static inline int64_t count_rows(const char *path, const char *what) {
        char sql[256];
        sqlite3 *s = NULL;
        sqlite3_stmt *st = NULL;
        int64_t v;

        (void) snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM %s", what);
        ASSERT_EQ(sqlite3_open_v2(path, &s, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_prepare_v2(s, sql, -1, &st, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
        v = sqlite3_column_int64(st, 0);
        ASSERT_EQ(sqlite3_finalize(st), SQLITE_OK);
        ASSERT_EQ(sqlite3_close(s), SQLITE_OK);
        return v;
}

/* A session of files nums[] with the given ranges (file as an index into nums). */
static inline int add_ranges(Db *db, const char *profile, uint64_t started, const unsigned *nums, size_t n,
                      const DbSessionRange *ranges, size_t n_ranges, unsigned keep, int64_t *ret_id) {
        DbSessionFile files[16];

        ASSERT_TRUE(n <= ELEMENTSOF(files));
        for (size_t i = 0; i < n; i++)
                files[i] = file_make(nums[i]);
        return db_add_session(db, &(DbSession) {
                        .profile = profile,
                        .kind = streq(profile, "boot") ? PROFILE_BOOT : PROFILE_APP,
                        .boot_id = BOOT_A,
                        .started_realtime_usec = started,
                        .duration_usec = 100,
                        .complete = true,
                        .files = files,
                        .n_files = n,
                        .ranges = ranges,
                        .n_ranges = n_ranges,
                }, keep, ret_id);
}

/* One session of `profile` launched by `uid`, ending at `started` + 100, reading files nums[]. */
static inline int add_uid(Db *db, const char *profile, uid_t uid, uint64_t started, const unsigned *nums, size_t n) {
        DbSessionFile files[8];

        ASSERT_TRUE(n <= ELEMENTSOF(files));
        for (size_t i = 0; i < n; i++)
                files[i] = file_make(nums[i]);
        return db_add_session(db, &(DbSession) {
                        .profile = profile,
                        .kind = streq(profile, "boot") ? PROFILE_BOOT : PROFILE_APP,
                        .boot_id = BOOT_A,
                        .started_realtime_usec = started,
                        .duration_usec = 100,
                        .complete = true,
                        .uid = uid,
                        .files = files,
                        .n_files = n,
                }, 5, NULL);
}

#define ADD_UID(db, profile, uid, started, ...)                                                         \
        add_uid(db, profile, uid, started, (const unsigned[]) { __VA_ARGS__ },                          \
                sizeof((const unsigned[]) { __VA_ARGS__ }) / sizeof(unsigned))

/* The uid of a profile as listed; fails if there is no such profile. */
static inline uid_t profile_uid(Db *db, const char *name) {
        DbProfileInfo *l = NULL;
        uid_t uid = 0;
        bool found = false;
        size_t k;

        ASSERT_OK(db_list_profiles(db, &l, &k));
        for (size_t i = 0; i < k; i++)
                if (streq(l[i].name, name)) {
                        uid = l[i].uid;
                        found = true;
                }
        db_profile_infos_free(l, k);
        ASSERT_TRUE(found);
        return uid;
}

/* The profile's ranges as "num:offset+length ..." (file numbers as file_make() made them). */
static inline char *ranges_string(Db *db, const char *name) {
        static char buf[1024];
        DbProfileFile *f = NULL;
        DbProfileRange *r = NULL;
        size_t n, m, k = 0;

        buf[0] = 0;
        ASSERT_OK(db_get_profile(db, name, NULL, &f, &n));
        ASSERT_OK(db_get_profile_ranges(db, name, f, n, &r, &m));
        for (size_t i = 0; i < m; i++) {
                ASSERT_TRUE(r[i].file < n);
                k += (size_t) snprintf(buf + k, sizeof buf - k, "%s%u:%" PRIu64 "+%" PRIu64, i ? " " : "",
                                       file_num(&f[r[i].file].file), r[i].offset, r[i].length);
                ASSERT_TRUE(k < sizeof buf);
        }
        free(r);
        db_profile_files_free(f, n);
        fprintf(stderr, "   %s: %s\n", name, buf);
        return buf;
}

static inline int add_meta(Db *db, const char *profile, uint64_t started, const DbMetaRange *meta, size_t n_meta,
                    unsigned keep) {
        DbSessionFile f = file_make(1);

        return db_add_session(db, &(DbSession) {
                        .profile = profile,
                        .kind = streq(profile, "boot") ? PROFILE_BOOT : PROFILE_APP,
                        .boot_id = BOOT_A,
                        .started_realtime_usec = started,
                        .duration_usec = 100,
                        .complete = true,
                        .files = &f,
                        .n_files = 1,
                        .meta = meta,
                        .n_meta = n_meta,
                }, keep, NULL);
}

/* The profile's metadata as "fsid:offset+length ...". */
static inline char *meta_string(Db *db, const char *name) {
        static char buf[512];
        DbMetaRange *r = NULL;
        size_t n, k = 0;

        buf[0] = 0;
        ASSERT_OK(db_get_profile_metadata(db, name, &r, &n));
        for (size_t i = 0; i < n; i++) {
                k += (size_t) snprintf(buf + k, sizeof buf - k, "%s%" PRIu64 ":%" PRIu64 "+%" PRIu64, i ? " " : "",
                                       r[i].fsid, r[i].offset, r[i].length);
                ASSERT_TRUE(k < sizeof buf);
        }
        free(r);
        fprintf(stderr, "   %s metadata: %s\n", name, buf);
        return buf;
}

static inline void test_db_tmpdir_make(void) {
        ASSERT_TRUE(mkdtemp(tmpdir));
}

static inline int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static inline void test_db_tmpdir_remove(void) {
        ASSERT_OK(nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS));
}
