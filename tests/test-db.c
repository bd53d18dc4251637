/* SPDX-License-Identifier: GPL-2.0-or-later */

#include <fcntl.h>
#include <inttypes.h>
#include <ftw.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
static FileKey file_key(unsigned n) {
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

static DbSessionFile file_make(unsigned n) {
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

static int add(Db *db, const char *profile, ProfileKind kind, const char *boot_id, uint64_t started,
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

static void check_counts(Db *db, unsigned profiles, unsigned sessions, unsigned files) {
        unsigned p, s, f;

        ASSERT_OK(db_counts(db, &p, &s, &f));
        fprintf(stderr, "   counts: %u profiles, %u sessions, %u files\n", p, s, f);
        ASSERT_EQ(p, profiles);
        ASSERT_EQ(s, sessions);
        ASSERT_EQ(f, files);
}

/* The number a stored file was made from, by its key. */
static unsigned file_num(const DbFile *f) {
        for (unsigned n = 0; n < ELEMENTSOF(file_paths); n++) {
                FileKey k = file_key(n);

                if (file_key_equal(&k, &f->key))
                        return n;
        }
        ASSERT_TRUE(false);
        return 0;
}

static int64_t file_id_of(const DbMergeInput *in, unsigned n) {
        for (size_t i = 0; i < in->n_files; i++)
                if (file_num(in->files + i) == n)
                        return in->files[i].id;
        return -1;
}

static const char *tmp_path(const char *name) {
        static char buf[4][256];
        static unsigned k;
        char *p = buf[k++ % ELEMENTSOF(buf)];

        (void) snprintf(p, sizeof buf[0], "%s/%s", tmpdir, name);
        return p;
}

static void write_file(const char *path, const void *data, size_t n) {
        _cleanup_close_ int fd = -EBADF;

        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(write(fd, data, n), (ssize_t) n);
}

/* The store scenario, run against ":memory:" and a file. */
static void test_store(const char *path) {
        _cleanup_(db_freep) Db *db = NULL;
        int64_t id;

        fprintf(stderr, "   database %s\n", path);
        ASSERT_OK(db_open(path, &db));
        check_counts(db, 0, 0, 0);

        /* An app session referring to file 1, which the boot sessions below prune. */
        ASSERT_OK(ADD(db, APP, PROFILE_APP, BOOT_A, 500, 5, 1, 100, 200));
        check_counts(db, 1, 1, 3);

        /* Boot session i (started i * 1000) reads files i, i + 1 and 100; keep 3. */
        ASSERT_OK(ADD(db, "boot", PROFILE_BOOT, BOOT_A, 1000, 3, 1, 2, 100));
        /* Files 1 and 100 are stored once although two sessions refer to them. */
        check_counts(db, 2, 2, 4);
        ASSERT_OK(ADD(db, "boot", PROFILE_BOOT, BOOT_A, 2000, 3, 2, 3, 100));
        check_counts(db, 2, 3, 5);
        ASSERT_OK(ADD(db, "boot", PROFILE_BOOT, BOOT_A, 3000, 3, 3, 4, 100));
        check_counts(db, 2, 4, 6);
        /* Pruning starts: session 1000 goes, file 2 is still in session 2000, file 1 in the app's. */
        ASSERT_OK(ADD(db, "boot", PROFILE_BOOT, BOOT_B, 4000, 3, 4, 5, 100));
        check_counts(db, 2, 4, 7);
        /* Session 2000 goes and with it file 2, which nothing refers to any more. */
        ASSERT_OK(add(db, "boot", PROFILE_BOOT, BOOT_B, 5000, (const unsigned[]) { 5, 6, 100 }, 3, 3, &id));
        ASSERT_TRUE(id > 0);
        check_counts(db, 2, 4, 7);   /* {1, 3, 4, 5, 6, 100, 200} */

        /* keep == 0 would delete the session being added. */
        ASSERT_ERROR(ADD(db, "boot", PROFILE_BOOT, BOOT_B, 6000, 0, 1), EINVAL);

        /* A bad file in the middle rolls the whole session back. */
        {
                DbSessionFile files[3] = { file_make(7), file_make(8), file_make(9) };
                files[1].key.handle_len = FID_HANDLE_MAX + 1;
                DbSession s = {
                        .profile = "boot", .kind = PROFILE_BOOT, .boot_id = BOOT_B,
                        .started_realtime_usec = 6000, .files = files, .n_files = 3,
                };
                ASSERT_ERROR(db_add_session(db, &s, 3, NULL), EINVAL);
                check_counts(db, 2, 4, 7);
        }

        /* Sessions in a boot. */
        unsigned n;
        ASSERT_OK(db_count_sessions_in_boot(db, "boot", BOOT_A, &n));
        ASSERT_EQ(n, 1);
        ASSERT_OK(db_count_sessions_in_boot(db, "boot", BOOT_B, &n));
        ASSERT_EQ(n, 2);
        ASSERT_OK(db_count_sessions_in_boot(db, APP, BOOT_A, &n));
        ASSERT_EQ(n, 1);
        ASSERT_OK(db_count_sessions_in_boot(db, APP, BOOT_B, &n));
        ASSERT_EQ(n, 0);
        ASSERT_OK(db_count_sessions_in_boot(db, "/nope", BOOT_A, &n));
        ASSERT_EQ(n, 0);
        /* ... and the same for every profile at once (what seeklessd keeps in memory) */
        {
                DbBootCount *c = NULL;
                size_t k = 0;

                ASSERT_OK(db_count_sessions_in_boot_all(db, BOOT_A, &c, &k));
                ASSERT_EQ(k, 2);
                ASSERT_STREQ(c[0].profile, APP);
                ASSERT_EQ(c[0].n, 1);
                ASSERT_STREQ(c[1].profile, "boot");
                ASSERT_EQ(c[1].n, 1);
                db_boot_counts_free(c, k);
                ASSERT_OK(db_count_sessions_in_boot_all(db, BOOT_B, &c, &k));
                ASSERT_EQ(k, 1);
                ASSERT_STREQ(c[0].profile, "boot");
                ASSERT_EQ(c[0].n, 2);
                db_boot_counts_free(c, k);
                ASSERT_OK(db_count_sessions_in_boot_all(db, "nope", &c, &k));
                ASSERT_EQ(k, 0);
                db_boot_counts_free(c, k);
        }

        /* Sessions, newest first. */
        {
                DbSessionInfo *l = NULL;
                size_t k;

                ASSERT_OK(db_list_sessions(db, &l, &k));
                ASSERT_EQ(k, 4);
                ASSERT_EQ(l[0].started_realtime_usec, 5000);
                ASSERT_EQ(l[0].id, id);
                ASSERT_EQ(l[1].started_realtime_usec, 4000);
                ASSERT_EQ(l[2].started_realtime_usec, 3000);
                ASSERT_EQ(l[3].started_realtime_usec, 500);
                ASSERT_STREQ(l[0].profile, "boot");
                ASSERT_EQ(l[0].kind, PROFILE_BOOT);
                ASSERT_STREQ(l[0].boot_id, BOOT_B);
                ASSERT_STREQ(l[2].boot_id, BOOT_A);
                ASSERT_STREQ(l[3].profile, APP);
                ASSERT_EQ(l[3].kind, PROFILE_APP);
                ASSERT_EQ(l[0].n_files, 3);
                ASSERT_EQ(l[0].duration_usec, 100);
                ASSERT_TRUE(l[0].complete);
                db_session_infos_free(l, k);
        }

        /* Merge input round trip. */
        DbMergeInput in = {};
        ASSERT_ERROR(db_load_merge_input(db, "/nope", 10, &in), ENOENT);
        ASSERT_OK(db_load_merge_input(db, "boot", 10, &in));
        ASSERT_EQ(in.n_sessions, 3);
        ASSERT_EQ(in.n_files, 5);   /* {3, 4, 5, 6, 100} */
        for (size_t i = 0; i < in.n_files; i++) {
                const DbFile *f = in.files + i;
                unsigned num = file_num(f);
                DbSessionFile e = file_make(num);

                ASSERT_TRUE(file_key_equal(&f->key, &e.key));
                ASSERT_EQ(f->key.fsid, e.key.fsid);
                ASSERT_STREQ(f->path, e.path);
                ASSERT_EQ(f->size, e.size);
                ASSERT_EQ(f->ino, e.ino);
                ASSERT_EQ(f->generation, e.generation);
                ASSERT_EQ(f->mtime_ns, e.mtime_ns);
        }
        /* Newest first (the session added last is the first), files in position order. */
        ASSERT_EQ(in.session_ids[0], id);
        ASSERT_TRUE(in.session_ids[1] < in.session_ids[0] && in.session_ids[2] < in.session_ids[1]);
        const unsigned expect[3][3] = { { 5, 6, 100 }, { 4, 5, 100 }, { 3, 4, 100 } };
        for (size_t s = 0; s < 3; s++) {
                ASSERT_EQ(in.n_session_files[s], 3);
                for (size_t i = 0; i < 3; i++)
                        ASSERT_EQ(in.session_files[s][i], file_id_of(&in, expect[s][i]));
        }
        int64_t id3 = file_id_of(&in, 3), id4 = file_id_of(&in, 4), id5 = file_id_of(&in, 5),
                id6 = file_id_of(&in, 6), id100 = file_id_of(&in, 100);
        db_merge_input_free(&in);
        db_merge_input_free(&in);   /* idempotent */

        ASSERT_OK(db_load_merge_input(db, "boot", 2, &in));
        ASSERT_EQ(in.n_sessions, 2);
        ASSERT_EQ(in.n_files, 4);   /* {4, 5, 6, 100} */
        ASSERT_EQ(file_id_of(&in, 3), -1);
        db_merge_input_free(&in);

        /* Store and read back a merged order. */
        const DbProfileEntry entries[] = {
                { id100, 0.0, 3 }, { id6, 0.1, 1 }, { id5, 0.2, 2 }, { id4, 0.5, 2 }, { id3, 1.0, 1 },
        };
        ASSERT_ERROR(db_store_profile(db, "/nope", entries, ELEMENTSOF(entries)), ENOENT);
        ASSERT_OK(db_store_profile(db, "boot", entries, ELEMENTSOF(entries)));
        {
                DbProfileFile *l = NULL;
                ProfileKind kind;
                size_t k;

                ASSERT_ERROR(db_get_profile(db, "/nope", &kind, &l, &k), ENOENT);
                ASSERT_OK(db_get_profile(db, "boot", &kind, &l, &k));
                ASSERT_EQ(kind, PROFILE_BOOT);
                ASSERT_EQ(k, ELEMENTSOF(entries));
                for (size_t i = 0; i < k; i++) {
                        ASSERT_EQ(l[i].file.id, entries[i].file_id);
                        ASSERT_TRUE(fabs(l[i].score - entries[i].score) < 1e-12);
                        ASSERT_EQ(l[i].seen, entries[i].seen);
                }
                ASSERT_STREQ(l[0].file.path, "/usr/lib/f100");
                ASSERT_EQ(file_num(&l[1].file), 6);
                db_profile_files_free(l, k);
        }
        /* Storing again replaces. */
        ASSERT_OK(db_store_profile(db, "boot", entries + 1, 3));
        {
                DbProfileFile *l = NULL;
                size_t k;

                ASSERT_OK(db_get_profile(db, "boot", NULL, &l, &k));
                ASSERT_EQ(k, 3);
                ASSERT_EQ(l[0].file.id, id6);
                ASSERT_EQ(l[2].file.id, id4);
                db_profile_files_free(l, k);
        }
        /* The app profile has no merged order yet. */
        {
                DbProfileFile *l = NULL;
                ProfileKind kind;
                size_t k;

                ASSERT_OK(db_get_profile(db, APP, &kind, &l, &k));
                ASSERT_EQ(kind, PROFILE_APP);
                ASSERT_EQ(k, 0);
                db_profile_files_free(l, k);
        }
        /* An unknown file id fails the foreign key and leaves the old order. */
        ASSERT_TRUE(db_store_profile(db, "boot", (const DbProfileEntry[]) { { 999999, 0, 1 } }, 1) < 0);

        /* Profiles: boot first although "/usr..." sorts before "boot", then by name. */
        ASSERT_OK(ADD(db, APP2, PROFILE_APP, BOOT_B, 7000, 5, 200));
        {
                DbProfileInfo *l = NULL;
                size_t k;

                ASSERT_OK(db_list_profiles(db, &l, &k));
                ASSERT_EQ(k, 3);
                ASSERT_STREQ(l[0].name, "boot");
                ASSERT_EQ(l[0].kind, PROFILE_BOOT);
                ASSERT_EQ(l[0].n_sessions, 3);
                /* five boots were recorded; pruning keeps three sessions but not the count */
                ASSERT_EQ(l[0].n_launches, 5);
                ASSERT_EQ(l[0].n_files, 3);
                ASSERT_EQ(l[0].bytes, 4096ULL * (6 + 5 + 4));
                ASSERT_EQ(l[0].updated_realtime_usec, 5100);
                ASSERT_STREQ(l[1].name, APP2);
                ASSERT_EQ(l[1].kind, PROFILE_APP);
                ASSERT_EQ(l[1].n_sessions, 1);
                ASSERT_EQ(l[1].n_launches, 1);
                ASSERT_EQ(l[1].updated_realtime_usec, 7100);
                ASSERT_STREQ(l[2].name, APP);
                ASSERT_EQ(l[2].n_sessions, 1);
                ASSERT_EQ(l[2].n_files, 0);
                ASSERT_EQ(l[2].bytes, 0);
                ASSERT_EQ(l[2].updated_realtime_usec, 600);
                db_profile_infos_free(l, k);
        }
        check_counts(db, 3, 5, 7);

        /* Update a file; a new session with the same key but another path refreshes it too. */
        ASSERT_OK(db_update_file(db, id6, "/usr/lib/moved", 1, 2));
        ASSERT_ERROR(db_update_file(db, 999999, "/x", 1, 2), ENOENT);
        {
                DbProfileFile *l = NULL;
                size_t k;

                ASSERT_OK(db_get_profile(db, "boot", NULL, &l, &k));
                ASSERT_STREQ(l[0].file.path, "/usr/lib/moved");
                ASSERT_EQ(l[0].file.size, 1);
                ASSERT_EQ(l[0].file.mtime_ns, 2);
                db_profile_files_free(l, k);
        }
        {
                DbSessionFile f = file_make(200);
                f.path = "/usr/lib/renamed";
                DbSession s = {
                        .profile = APP2, .kind = PROFILE_APP, .boot_id = BOOT_B,
                        .started_realtime_usec = 8000, .files = &f, .n_files = 1,
                };
                ASSERT_OK(db_add_session(db, &s, 5, NULL));
                check_counts(db, 3, 6, 7);
                ASSERT_OK(db_load_merge_input(db, APP2, 5, &in));
                ASSERT_EQ(in.n_sessions, 2);
                ASSERT_EQ(in.n_files, 1);
                ASSERT_STREQ(in.files[0].path, "/usr/lib/renamed");
                db_merge_input_free(&in);
        }

        /* Delete a file: it leaves every session and profile. */
        ASSERT_OK(db_delete_file(db, id5));
        ASSERT_ERROR(db_delete_file(db, id5), ENOENT);
        check_counts(db, 3, 6, 6);
        {
                DbProfileFile *l = NULL;
                size_t k;

                ASSERT_OK(db_get_profile(db, "boot", NULL, &l, &k));
                ASSERT_EQ(k, 2);
                ASSERT_EQ(l[0].file.id, id6);
                ASSERT_EQ(l[1].file.id, id4);
                db_profile_files_free(l, k);
        }
        ASSERT_OK(db_load_merge_input(db, "boot", 10, &in));
        ASSERT_EQ(in.n_sessions, 3);
        ASSERT_EQ(in.n_files, 4);
        ASSERT_EQ(in.n_session_files[0], 2);   /* {6, 100} */
        ASSERT_EQ(in.session_files[0][0], id6);
        ASSERT_EQ(in.session_files[0][1], id100);
        ASSERT_EQ(in.n_session_files[1], 2);   /* {4, 100} */
        ASSERT_EQ(in.n_session_files[2], 3);   /* {3, 4, 100} */
        db_merge_input_free(&in);
        {
                DbSessionInfo *l = NULL;
                size_t k;

                ASSERT_OK(db_list_sessions(db, &l, &k));
                ASSERT_EQ(k, 6);
                for (size_t i = 0; i < k; i++)
                        if (l[i].started_realtime_usec == 5000 || l[i].started_realtime_usec == 4000)
                                ASSERT_EQ(l[i].n_files, 2);
                        else if (l[i].started_realtime_usec == 3000)
                                ASSERT_EQ(l[i].n_files, 3);
                db_session_infos_free(l, k);
        }

        /* Forget the first app: its sessions go, and file 1 that only it referred to; file 200 stays
         * with APP2, file 100 with boot. */
        ASSERT_OK(db_forget_profile(db, APP));
        ASSERT_ERROR(db_forget_profile(db, APP), ENOENT);
        check_counts(db, 2, 5, 5);   /* {3, 4, 6, 100, 200} */
        ASSERT_OK(db_count_sessions_in_boot(db, APP, BOOT_A, &n));
        ASSERT_EQ(n, 0);

        ASSERT_OK(db_forget_all(db, &n));
        ASSERT_EQ(n, 2);
        check_counts(db, 0, 0, 0);
        ASSERT_OK(db_forget_all(db, &n));
        ASSERT_EQ(n, 0);

        /* Still usable afterwards. */
        ASSERT_OK(ADD(db, "boot", PROFILE_BOOT, BOOT_A, 9000, 3, 1, 2));
        check_counts(db, 1, 1, 2);
}

TEST(store_memory) {
        test_store(":memory:");
}

TEST(store_file) {
        const char *p = tmp_path("store.db");

        test_store(p);
        (void) unlink(p);
}

TEST(kind_strings) {
        ASSERT_STREQ(profile_kind_to_string(PROFILE_BOOT), "boot");
        ASSERT_STREQ(profile_kind_to_string(PROFILE_APP), "app");
        ASSERT_TRUE(!profile_kind_to_string(_PROFILE_KIND_MAX));
        ASSERT_EQ(profile_kind_from_string("boot"), PROFILE_BOOT);
        ASSERT_EQ(profile_kind_from_string("app"), PROFILE_APP);
        ASSERT_EQ(profile_kind_from_string("Boot"), _PROFILE_KIND_INVALID);
        ASSERT_EQ(profile_kind_from_string(""), _PROFILE_KIND_INVALID);
        ASSERT_EQ(profile_kind_from_string(NULL), _PROFILE_KIND_INVALID);
}

static int64_t user_version(const char *path) {
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

TEST(migrations_idempotent) {
        const char *p = tmp_path("migrate.db");
        Db *db = NULL;

        ASSERT_TRUE(db_schema_version() >= 1);

        ASSERT_OK(db_open(p, &db));
        ASSERT_OK(ADD(db, "boot", PROFILE_BOOT, BOOT_A, 1000, 3, 1, 2, 3));
        db = db_free(db);
        ASSERT_TRUE(!db);
        ASSERT_EQ(user_version(p), db_schema_version());

        ASSERT_OK(db_open(p, &db));
        check_counts(db, 1, 1, 3);
        db = db_free(db);
        ASSERT_OK(db_open(p, &db));
        check_counts(db, 1, 1, 3);
        db = db_free(db);
        ASSERT_EQ(user_version(p), db_schema_version());

        /* An empty file is a new database, not a corrupt one. */
        const char *e = tmp_path("empty.db");
        write_file(e, "", 0);
        ASSERT_OK(db_open(e, &db));
        check_counts(db, 0, 0, 0);
        db = db_free(db);

        ASSERT_TRUE(!db_free(NULL));
        (void) unlink(p);
        (void) unlink(e);
}

TEST(newer_version) {
        const char *p = tmp_path("newer.db");
        Db *db = NULL;
        sqlite3 *s = NULL;
        char sql[64];

        ASSERT_OK(db_open(p, &db));
        db = db_free(db);

        ASSERT_EQ(sqlite3_open_v2(p, &s, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        (void) snprintf(sql, sizeof sql, "PRAGMA user_version = %d", db_schema_version() + 1);
        ASSERT_EQ(sqlite3_exec(s, sql, NULL, NULL, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_close(s), SQLITE_OK);

        db = (Db *) 0x1;
        ASSERT_ERROR(db_open(p, &db), EPROTO);
        ASSERT_TRUE(db == (Db *) 0x1);   /* not written on failure */
        ASSERT_EQ(user_version(p), db_schema_version() + 1);

        (void) unlink(p);
}

/* A valid SQLite file that seekless did not write: a negative user_version (the code before indexed
 * migrations[-1]), tables at version 0, and a foreign schema under one of our versions. Each is refused
 * as corrupt (EBADMSG: the daemon moves it aside), not with EIO. */
static void check_foreign(const char *sql) {
        const char *p = tmp_path("foreign.db");
        Db *db = NULL;
        sqlite3 *s = NULL;

        (void) unlink(p);
        ASSERT_EQ(sqlite3_open_v2(p, &s, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(s, sql, NULL, NULL, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_close(s), SQLITE_OK);
        fprintf(stderr, "   %s\n", sql);
        ASSERT_ERROR(db_open(p, &db), EBADMSG);
        ASSERT_TRUE(!db);
        (void) unlink(p);
}

TEST(foreign) {
        char sql[128];

        check_foreign("PRAGMA user_version = -1");
        check_foreign("PRAGMA user_version = -2000000000");
        check_foreign("CREATE TABLE photos (id INTEGER PRIMARY KEY, data BLOB)");
        (void) snprintf(sql, sizeof sql, "CREATE TABLE photos (id INTEGER); PRAGMA user_version = %d",
                        db_schema_version());
        check_foreign(sql);
}

TEST(corrupt) {
        const char *p = tmp_path("garbage.db");
        char junk[8192];
        Db *db = NULL;

        /* ASCII junk. */
        for (size_t i = 0; i < sizeof junk; i++)
                junk[i] = (char) ('a' + i * 7 % 26);
        write_file(p, junk, sizeof junk);
        ASSERT_ERROR(db_open(p, &db), EBADMSG);

        /* Random bytes. */
        srand(42);
        for (size_t i = 0; i < sizeof junk; i++)
                junk[i] = (char) rand();
        write_file(p, junk, sizeof junk);
        ASSERT_ERROR(db_open(p, &db), EBADMSG);

        /* The right magic followed by junk. */
        memcpy(junk, "SQLite format 3", 16);
        write_file(p, junk, sizeof junk);
        ASSERT_ERROR(db_open(p, &db), EBADMSG);

        ASSERT_TRUE(!db);
        (void) unlink(p);
}

/* A real database, cut short at `size` bytes. */
static void check_truncated(off_t size) {
        const char *p = tmp_path("truncated.db");
        Db *db = NULL;
        unsigned nums[50];
        struct stat st;

        ASSERT_OK(db_open(p, &db));
        for (unsigned s = 0; s < 20; s++) {
                for (unsigned i = 0; i < ELEMENTSOF(nums); i++)
                        nums[i] = s * 50 + i;
                ASSERT_OK(add(db, "boot", PROFILE_BOOT, BOOT_A, 1000 + s, nums, ELEMENTSOF(nums), 100, NULL));
        }
        db = db_free(db);

        ASSERT_OK(stat(p, &st));
        fprintf(stderr, "   %lld bytes, truncating to %lld\n", (long long) st.st_size,
                (long long) (size < 0 ? st.st_size / 2 : size));
        ASSERT_OK(truncate(p, size < 0 ? st.st_size / 2 : size));

        ASSERT_ERROR(db_open(p, &db), EBADMSG);
        ASSERT_TRUE(!db);
        (void) unlink(p);
}

TEST(truncated) {
        check_truncated(-1);      /* half */
        check_truncated(1000);    /* within the first page */
        check_truncated(4096);    /* just the first page */
}

/* Pages of the file at fd in the page cache (and read), of its pages in total. */
static size_t resident_pages(int fd, size_t *ret_total) {
        long psz = sysconf(_SC_PAGESIZE);
        unsigned char vec[4096];
        struct stat st;
        size_t n, k = 0;
        void *map;

        ASSERT_OK(fstat(fd, &st));
        n = ((size_t) st.st_size + (size_t) psz - 1) / (size_t) psz;
        ASSERT_TRUE(n > 0 && n <= sizeof vec);
        map = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED, fd, 0);
        ASSERT_TRUE(map != MAP_FAILED);
        ASSERT_OK(mincore(map, (size_t) st.st_size, vec));
        ASSERT_OK(munmap(map, (size_t) st.st_size));
        for (size_t i = 0; i < n; i++)
                k += vec[i] & 1;
        *ret_total = n;
        return k;
}

/* Opening a small store reads all of it (in file order, one request per extent) rather than the pages the
 * first queries happen to touch. Observed through the page cache: dropped before the open, complete after
 * it. Without the prefetch the open's own reads (and the kernel's read-ahead around them) leave about half
 * of this 300-session store unread, while a store of a few dozen pages is read whole anyway by the large
 * folios of a 6.18 kernel: hence the size. */
TEST(prefetch) {
        const char *p = tmp_path("prefetch.db");
        _cleanup_close_ int fd = -EBADF;
        unsigned nums[60];
        size_t total = 0, k;
        Db *db = NULL;

        ASSERT_OK(db_open(p, &db));
        for (unsigned s = 0; s < 300; s++) {
                for (unsigned i = 0; i < ELEMENTSOF(nums); i++)
                        nums[i] = (s * 30 + i) % 1000;
                ASSERT_OK(add(db, "boot", PROFILE_BOOT, BOOT_A, 1000 + s, nums, ELEMENTSOF(nums), 1000, NULL));
        }
        db = db_free(db);   /* checkpoints the WAL into the file and removes it */

        fd = open(p, O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(fdatasync(fd));
        ASSERT_OK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
        k = resident_pages(fd, &total);
        fprintf(stderr, "   %zu pages, %zu in the page cache after dropping it\n", total, k);
        if (k > 0) {
                /* tmpfs and the like keep their pages: nothing to observe there */
                fprintf(stderr, "   SKIP prefetch: the page cache of %s cannot be dropped\n", tmpdir);
                (void) unlink(p);
                return;
        }

        ASSERT_OK(db_open(p, &db));
        /* the read-ahead is asynchronous; allow it 5 s to complete */
        for (unsigned i = 0; i < 500 && (k = resident_pages(fd, &total)) < total; i++)
                (void) usleep(10000);
        fprintf(stderr, "   %zu of %zu pages in the page cache after db_open()\n", k, total);
        ASSERT_EQ(k, total);
        check_counts(db, 1, 300, 1000);
        db = db_free(db);
        (void) unlink(p);
}

/* Sessions in the store at p, counted by a connection of a process of its own, read-write as the sqlite3
 * shell opens it, that closes at once (the --count-sessions mode of main()): -1 on error. Executed anew,
 * not forked: a forked child would share this process's SQLite state and its locks. */
static int count_sessions(const char *p) {
        sqlite3 *s = NULL;
        sqlite3_stmt *st = NULL;
        int n = -1;

        if (sqlite3_open_v2(p, &s, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(s, "SELECT COUNT(*) FROM sessions", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
                n = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(s);
        return n;
}

static int sessions_seen_by_another_process(const char *p) {
        int status;
        pid_t pid = fork();

        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                execl("/proc/self/exe", "test-db", "--count-sessions", p, (char *) NULL);
                _exit(254);
        }
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status));
        ASSERT_TRUE(WEXITSTATUS(status) < 254);   /* 255: the child could not count */
        return WEXITSTATUS(status);
}

/* The daemon has two connections (the loop's and the plan worker's, opened later). Opening the second must
 * not drop the first one's locks: then an outside reader closing (an administrator's sqlite3) deleted the
 * WAL while the daemon kept writing into it, and every later commit was invisible to others and lost at
 * a crash (found by tests/test-faults.sh: its run checkpoints did not show). */
TEST(second_connection) {
        const char *p = tmp_path("second.db");
        char wal[4096];
        Db *a = NULL, *b = NULL;

        (void) snprintf(wal, sizeof wal, "%s-wal", p);
        ASSERT_OK(db_open(p, &a));
        ASSERT_OK(ADD(a, APP, PROFILE_APP, BOOT_A, 1000, 10, 1, 2, 3));
        ASSERT_OK(db_open(p, &b));
        ASSERT_EQ(sessions_seen_by_another_process(p), 1);
        ASSERT_TRUE(access(wal, F_OK) == 0);    /* the outside reader was not the last connection */
        ASSERT_OK(ADD(a, APP, PROFILE_APP, BOOT_A, 2000, 10, 4, 5));
        ASSERT_EQ(sessions_seen_by_another_process(p), 2);
        b = db_free(b);
        ASSERT_OK(ADD(a, APP, PROFILE_APP, BOOT_A, 3000, 10, 6));
        ASSERT_EQ(sessions_seen_by_another_process(p), 3);
        a = db_free(a);
        (void) unlink(p);
}

/* One session of `profile` launched by `uid`, ending at `started` + 100, reading files nums[]. */
static int add_uid(Db *db, const char *profile, uid_t uid, uint64_t started, const unsigned *nums, size_t n) {
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
static uid_t profile_uid(Db *db, const char *name) {
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

static bool profile_exists(Db *db, const char *name) {
        DbProfileFile *l = NULL;
        size_t k;
        int r;

        r = db_get_profile(db, name, NULL, &l, &k);
        ASSERT_TRUE(r == 0 || r == -ENOENT);
        db_profile_files_free(l, r == 0 ? k : 0);
        return r == 0;
}

/* Stores a session, then applies the caps; checks that exactly the profiles in `expect` (NULL-terminated,
 * in eviction order) were evicted, for `reason`. */
static void store_and_evict(Db *db, const char *profile, uid_t uid, uint64_t started, unsigned file,
                            unsigned max_profiles, unsigned max_per_user, EvictReason reason,
                            const char *const *expect) {
        DbEvicted *e = NULL;
        size_t n, k = 0;

        ASSERT_OK(ADD_UID(db, profile, uid, started, file, 999));
        ASSERT_OK(db_evict_profiles(db, profile, max_profiles, max_per_user, &e, &n));
        for (size_t i = 0; i < n; i++)
                fprintf(stderr, "   %s (uid %u) evicted for %s\n", e[i].name, (unsigned) e[i].uid,
                        evict_reason_to_string(e[i].reason));
        for (; expect[k]; k++) {
                ASSERT_TRUE(k < n);
                ASSERT_STREQ(e[k].name, expect[k]);
                ASSERT_EQ(e[k].reason, reason);
                ASSERT_TRUE(!profile_exists(db, expect[k]));
        }
        ASSERT_EQ(n, k);
        db_evicted_free(e, n);
}

#define NONE ((const char *const[]) { NULL })
#define EVICTS(...) ((const char *const[]) { __VA_ARGS__, NULL })

TEST(uids) {
        _cleanup_(db_freep) Db *db = NULL;
        DbSessionInfo *l = NULL;
        size_t k;

        ASSERT_TRUE(uid_is_system(0) && uid_is_system(SYSTEM_UID_MAX));
        ASSERT_TRUE(!uid_is_system(1000) && !uid_is_system(65534) && !uid_is_system(UID_INVALID));

        ASSERT_OK(db_open(":memory:", &db));
        ASSERT_OK(ADD_UID(db, "boot", 0, 100, 1));
        ASSERT_OK(ADD_UID(db, APP, 1000, 200, 2));
        ASSERT_EQ(profile_uid(db, "boot"), 0);
        ASSERT_EQ(profile_uid(db, APP), 1000);
        /* the lowest uid that ever recorded it, whatever the order */
        ASSERT_OK(ADD_UID(db, APP, 65534, 300, 2));
        ASSERT_EQ(profile_uid(db, APP), 1000);
        ASSERT_OK(ADD_UID(db, APP, 0, 400, 2));
        ASSERT_EQ(profile_uid(db, APP), 0);
        ASSERT_OK(ADD_UID(db, APP, 1000, 500, 2));
        ASSERT_EQ(profile_uid(db, APP), 0);
        /* a launcher whose uid could not be read */
        ASSERT_OK(ADD_UID(db, APP2, UID_INVALID, 600, 3));
        ASSERT_EQ(profile_uid(db, APP2), UID_INVALID);

        ASSERT_OK(db_list_sessions(db, &l, &k));
        ASSERT_EQ(k, 6);
        ASSERT_EQ(l[0].uid, UID_INVALID);   /* newest first */
        ASSERT_EQ(l[1].uid, 1000);
        ASSERT_EQ(l[2].uid, 0);
        ASSERT_EQ(l[3].uid, 65534);
        ASSERT_EQ(l[5].uid, 0);
        db_session_infos_free(l, k);
}

TEST(evict_order) {
        _cleanup_(db_freep) Db *db = NULL;

        ASSERT_TRUE(streq(evict_reason_to_string(EVICT_PER_USER), "MaxProfilesPerUser"));
        ASSERT_TRUE(streq(evict_reason_to_string(EVICT_TOTAL), "MaxProfiles"));
        ASSERT_TRUE(!evict_reason_to_string(_EVICT_REASON_MAX));

        ASSERT_OK(db_open(":memory:", &db));
        /* the boot and two system profiles, older than anything the users record */
        store_and_evict(db, "boot", 0, 100, 1, 6, 2, EVICT_TOTAL, NONE);
        store_and_evict(db, "/sys/s1", 0, 200, 2, 6, 2, EVICT_TOTAL, NONE);
        store_and_evict(db, "/sys/s2", 999, 300, 3, 6, 2, EVICT_TOTAL, NONE);

        /* MaxProfilesPerUser=2: uid 1000's third profile evicts its own least recently updated */
        store_and_evict(db, "/u/a1", 1000, 1000, 10, 6, 2, EVICT_PER_USER, NONE);
        store_and_evict(db, "/u/a2", 1000, 1100, 11, 6, 2, EVICT_PER_USER, NONE);
        store_and_evict(db, "/u/b1", 1001, 1200, 20, 6, 2, EVICT_PER_USER, NONE);
        store_and_evict(db, "/u/a3", 1000, 1300, 12, 6, 2, EVICT_PER_USER, EVICTS("/u/a1"));
        /* a1 was recorded again (updated 1400): now a2 is the oldest */
        store_and_evict(db, "/u/a1", 1000, 1400, 10, 6, 2, EVICT_PER_USER, EVICTS("/u/a2"));
        /* files 1, 2, 3, 10, 12, 20 and 999: a2's file 11 went with it, the shared 999 stays */
        check_counts(db, 6, 6, 7);

        /* MaxProfiles=5 (app profiles): uid 1001's second pushes the total over; the least recently
         * updated user's profile goes (b1), not the older system ones */
        store_and_evict(db, "/u/b2", 1001, 1500, 21, 5, 2, EVICT_TOTAL, EVICTS("/u/b1"));
        ASSERT_TRUE(profile_exists(db, "/sys/s1") && profile_exists(db, "/sys/s2") && profile_exists(db, "boot"));

        /* A system profile over MaxProfiles=5: users' go first, however recent (a3, of another user) */
        store_and_evict(db, "/sys/s3", 0, 1600, 4, 5, 2, EVICT_TOTAL, EVICTS("/u/a3"));
        /* MaxProfiles=3: a system session evicts all users' first, then the oldest of the system's, never
         * the boot profile nor the profile just stored (the oldest here) */
        store_and_evict(db, "/sys/s4", 0, 100, 5, 3, 2, EVICT_TOTAL, EVICTS("/u/a1", "/u/b2", "/sys/s1"));
        ASSERT_TRUE(profile_exists(db, "boot") && profile_exists(db, "/sys/s4"));

        /* Only the system's left: a user's new profile evicts itself, never theirs */
        store_and_evict(db, "/u/c1", 1002, 2000, 30, 3, 2, EVICT_TOTAL, EVICTS("/u/c1"));
        ASSERT_TRUE(profile_exists(db, "/sys/s2") && profile_exists(db, "/sys/s3") && profile_exists(db, "/sys/s4"));
        /* boot and three system profiles: files 1, 3, 4, 5 and 999; s1's and the users' gone with them */
        check_counts(db, 4, 4, 5);

        /* An unknown uid is nobody's for MaxProfilesPerUser=1, and a user's for MaxProfiles= */
        store_and_evict(db, "/u/x1", UID_INVALID, 2100, 40, 5, 1, EVICT_TOTAL, NONE);
        store_and_evict(db, "/u/x2", UID_INVALID, 2200, 41, 5, 1, EVICT_TOTAL, NONE);
        store_and_evict(db, "/u/x3", UID_INVALID, 2300, 42, 5, 1, EVICT_TOTAL, EVICTS("/u/x1"));

        ASSERT_ERROR(db_evict_profiles(db, "/nope", 5, 1, &(DbEvicted *) { NULL }, &(size_t) { 0 }), ENOENT);
        ASSERT_ERROR(db_evict_profiles(db, "boot", 0, 1, &(DbEvicted *) { NULL }, &(size_t) { 0 }), EINVAL);
}

/* What migration 4 -> 5 adds, dropped: back to schema 4. */
#define SCHEMA_5_DROP "DROP TABLE session_ranges; DROP TABLE profile_ranges; "
/* What migration 5 -> 6 adds, dropped. */
#define SCHEMA_6_DROP "ALTER TABLE run_files DROP COLUMN range_offset; ALTER TABLE run_files DROP COLUMN range_length; "
/* What migration 6 -> 7 adds, dropped. */
#define SCHEMA_7_DROP "DROP TABLE session_metadata; "

/* A database of schema 2 (before uids): made by the current code and brought back to schema 2's tables
 * (the columns migrations 2 -> 3, 3 -> 4 and 5 -> 6 add and the tables of 4 -> 5 dropped, user_version 2),
 * then opened again. */
TEST(migration_from_2) {
        const char *p = tmp_path("schema2.db");
        Db *db = NULL;
        sqlite3 *s = NULL;

        (void) unlink(p);
        ASSERT_EQ(db_schema_version(), 7);
        ASSERT_OK(db_open(p, &db));
        ASSERT_OK(ADD(db, "boot", PROFILE_BOOT, BOOT_A, 1000, 3, 1, 2));
        ASSERT_OK(ADD(db, APP, PROFILE_APP, BOOT_A, 2000, 3, 2, 3));
        db = db_free(db);
        ASSERT_EQ(sqlite3_open_v2(p, &s, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(s, "ALTER TABLE sessions DROP COLUMN uid; ALTER TABLE profiles DROP COLUMN uid; "
                               "ALTER TABLE run_files DROP COLUMN why; " SCHEMA_5_DROP SCHEMA_6_DROP SCHEMA_7_DROP
                               "PRAGMA user_version = 2", NULL, NULL, NULL),
                  SQLITE_OK);
        ASSERT_EQ(sqlite3_close(s), SQLITE_OK);
        ASSERT_EQ(user_version(p), 2);

        ASSERT_OK(db_open(p, &db));
        ASSERT_EQ(user_version(p), db_schema_version());
        check_counts(db, 2, 2, 3);
        /* the boot is the system's; who launched the app is not known: a user's until a session says */
        ASSERT_EQ(profile_uid(db, "boot"), 0);
        ASSERT_EQ(profile_uid(db, APP), UID_INVALID);
        {
                DbSessionInfo *l = NULL;
                size_t k;

                ASSERT_OK(db_list_sessions(db, &l, &k));
                ASSERT_EQ(k, 2);
                ASSERT_EQ(l[0].uid, 0);
                ASSERT_EQ(l[1].uid, 0);
                db_session_infos_free(l, k);
        }
        ASSERT_OK(ADD_UID(db, APP, 1000, 3000, 2));
        ASSERT_EQ(profile_uid(db, APP), 1000);
        ASSERT_OK(ADD_UID(db, APP, 0, 4000, 2));
        ASSERT_EQ(profile_uid(db, APP), 0);
        db = db_free(db);
        (void) unlink(p);
}

/* Schema 3 kept why a file was not moved as text only; the early-boot pass's queue selected on the text.
 * Migration 3 -> 4 gives the queue's rows (retry, "running executable...") their code, and only those: the
 * queue reads the same after it. */
TEST(migration_from_3) {
        const char *p = tmp_path("schema3.db");
        DbRunFile *q = NULL;
        Db *db = NULL;
        sqlite3 *s = NULL;
        int64_t ids[4], run;
        uint64_t sizes[4] = { 1, 1, 1, 1 };
        int64_t mtimes[4] = { 0, 0, 0, 0 };
        size_t n, k;

        (void) unlink(p);
        ASSERT_OK(db_open(p, &db));
        ASSERT_OK(ADD(db, APP, PROFILE_APP, BOOT_A, 1000, 3, 1, 2, 3, 4));
        {
                sqlite3_stmt *st = NULL;

                n = 0;
                ASSERT_EQ(sqlite3_open_v2(p, &s, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
                ASSERT_EQ(sqlite3_prepare_v2(s, "SELECT id FROM files ORDER BY id", -1, &st, NULL), SQLITE_OK);
                while (n < 4 && sqlite3_step(st) == SQLITE_ROW)
                        ids[n++] = sqlite3_column_int64(st, 0);
                sqlite3_finalize(st);
                ASSERT_EQ(sqlite3_close(s), SQLITE_OK);
                ASSERT_EQ(n, 4u);
        }
        ASSERT_OK(db_run_create(db, 1, "/", ids, sizes, mtimes, NULL, NULL, 4, &run));
        ASSERT_OK(db_run_file_set(db, run, 0, RUN_FILE_RETRY, MOVE_REASON_NONE, "running executable", 0));
        ASSERT_OK(db_run_file_set(db, run, 1, RUN_FILE_RETRY, MOVE_REASON_NONE, "running executable or swap", 0));
        ASSERT_OK(db_run_file_set(db, run, 2, RUN_FILE_RETRY, MOVE_REASON_NONE, "open for writing", 0));
        ASSERT_OK(db_run_file_set(db, run, 3, RUN_FILE_SKIPPED, MOVE_REASON_NONE, "running executable", 0));
        db = db_free(db);
        ASSERT_EQ(sqlite3_open_v2(p, &s, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(s, "ALTER TABLE run_files DROP COLUMN why; " SCHEMA_5_DROP SCHEMA_6_DROP SCHEMA_7_DROP
                               "PRAGMA user_version = 3", NULL, NULL, NULL),
                  SQLITE_OK);
        ASSERT_EQ(sqlite3_close(s), SQLITE_OK);

        ASSERT_OK(db_open(p, &db));
        ASSERT_EQ(user_version(p), db_schema_version());
        {
                /* the entries of before are whole files: a run left unfinished resumes with them whole */
                DbRunFile *rf = NULL;
                size_t nrf = 0;

                ASSERT_OK(db_run_files(db, run, &rf, &nrf));
                ASSERT_EQ(nrf, 4u);
                for (size_t i = 0; i < nrf; i++) {
                        ASSERT_EQ(rf[i].offset, 0);
                        ASSERT_EQ(rf[i].length, 0);
                        ASSERT_EQ(rf[i].file.size, 1);
                }
                db_run_files_free(rf, nrf);
        }
        ASSERT_OK(db_retry_entries(db, MOVE_REASON_RUNNING, &q, &k));
        ASSERT_EQ(k, 2u);
        ASSERT_TRUE((q[0].file.id == ids[0] && q[1].file.id == ids[1]) || (q[0].file.id == ids[1] && q[1].file.id == ids[0]));
        db_run_files_free(q, k);
        ASSERT_OK(db_retry_entries(db, MOVE_REASON_BUSY, &q, &k));
        ASSERT_EQ(k, 0u);
        db_run_files_free(q, k);
        /* from now on the code decides, whatever the text says */
        ASSERT_OK(db_run_file_set(db, run, 2, RUN_FILE_RETRY, MOVE_REASON_RUNNING, "anything at all", 0));
        ASSERT_OK(db_retry_entries(db, MOVE_REASON_RUNNING, &q, &k));
        ASSERT_EQ(k, 3u);
        db_run_files_free(q, k);
        db = db_free(db);
        (void) unlink(p);
}

/* SELECT COUNT(*) FROM what, on a connection of its own. */
static int64_t count_rows(const char *path, const char *what) {
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
static int add_ranges(Db *db, const char *profile, uint64_t started, const unsigned *nums, size_t n,
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

/* The database file and its WAL, in bytes. */
static uint64_t db_bytes(const char *path) {
        char wal[300];
        struct stat st;
        uint64_t n = 0;

        if (stat(path, &st) >= 0)
                n += (uint64_t) st.st_size;
        (void) snprintf(wal, sizeof wal, "%s-wal", path);
        if (stat(wal, &st) >= 0)
                n += (uint64_t) st.st_size;
        return n;
}

/* A session of 16 files with 16,384 one-page ranges (as many as a launch keeps). */
static void add_capped_session(Db *db, const char *profile, uint64_t started) {
        const size_t n = 16384;
        _cleanup_free_ DbSessionRange *r = calloc(n, sizeof *r);
        unsigned nums[16];

        ASSERT_TRUE(r);
        for (unsigned i = 0; i < 16; i++)
                nums[i] = 100 + i;
        for (size_t i = 0; i < n; i++)
                r[i] = (DbSessionRange) { .file = i % 16, .offset = (i / 16) * 32 * 4096, .length = 4096,
                                          .offset_usec = i };
        ASSERT_OK(add_ranges(db, profile, started, nums, 16, r, n, 5, NULL));
}

/* Space is handed back: a database made now has auto_vacuum = INCREMENTAL; after a big session is
 * forgotten, vacuum steps hand its pages back and the WAL is truncated: the file and its WAL are as big as
 * before the session. A database made before (auto_vacuum = NONE) is converted by its first step. */
static void check_space_returned(const char *p, bool incremental) {
        _cleanup_(db_freep) Db *db = NULL;
        DbSpace sp;
        uint64_t before, full;
        int64_t left;
        unsigned steps = 0;

        ASSERT_OK(db_open(p, &db));
        ASSERT_OK(db_space(db, &sp));
        ASSERT_EQ(sp.incremental, incremental);
        ASSERT_OK(db_checkpoint_truncate(db));
        before = db_bytes(p);
        add_capped_session(db, APP, 5000);
        full = db_bytes(p);
        ASSERT_TRUE(full > before + 512 * 1024);
        ASSERT_OK(db_forget_profile(db, APP));
        ASSERT_OK(db_space(db, &sp));
        ASSERT_TRUE(sp.free_pages * sp.page_size > 512 * 1024);
        while ((left = db_vacuum_step(db, 64)) > 0)
                ASSERT_TRUE(++steps < 10000);
        ASSERT_EQ(left, 0);
        ASSERT_OK(db_space(db, &sp));
        ASSERT_TRUE(sp.incremental && sp.free_pages == 0);
        /* incremental: a few pages a step */
        ASSERT_TRUE(incremental ? steps >= 2 : steps == 0);
        ASSERT_OK(db_checkpoint_truncate(db));
        fprintf(stderr, "   %s: %" PRIu64 " bytes before, %" PRIu64 " with the session, %" PRIu64 " after, %u steps\n",
                incremental ? "incremental" : "converted", before, full, db_bytes(p), steps);
        ASSERT_TRUE(db_bytes(p) <= before + before / 10);
}

TEST(space) {
        const char *p = tmp_path("space.db");
        sqlite3 *raw = NULL;
        _cleanup_(db_freep) Db *mem = NULL;

        (void) unlink(p);
        {
                _cleanup_(db_freep) Db *db = NULL;

                ASSERT_OK(db_open(p, &db));
                ASSERT_OK(ADD(db, "boot", PROFILE_BOOT, BOOT_A, 1000, 3, 1, 2, 3));
        }
        check_space_returned(p, true);
        /* as made before: auto_vacuum off */
        ASSERT_EQ(sqlite3_open(p, &raw), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(raw, "PRAGMA auto_vacuum = NONE; VACUUM", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(raw);
        check_space_returned(p, false);
        /* in memory: nothing to truncate */
        ASSERT_OK(db_open(":memory:", &mem));
        ASSERT_OK(db_checkpoint_truncate(mem));
        ASSERT_ERROR(db_vacuum_step(mem, 0), EINVAL);
}

/* The profile's ranges as "num:offset+length ..." (file numbers as file_make() made them). */
static char *ranges_string(Db *db, const char *name) {
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

/* Sessions keep their ranges in first-touch order, the profile its merged ranges; both go with what they
 * belong to (a pruned session, a deleted file, a forgotten profile). */
TEST(ranges) {
        const char *p = tmp_path("ranges.db");
        _cleanup_(db_freep) Db *db = NULL;
        DbMergeInput in = {};
        int64_t s1, s2;

        (void) unlink(p);
        ASSERT_OK(db_open(p, &db));

        /* files 1, 2, 3 (4, 8, 12 KiB): 2 read at 4K..8K then 1 whole, 3 cached */
        const DbSessionRange r1[] = {
                { .file = 1, .offset = 4096, .length = 4096, .offset_usec = 5 },
                { .file = 0, .offset = 0, .length = 4096, .offset_usec = 7 },
        };
        ASSERT_OK(add_ranges(db, "boot", 1000, (const unsigned[]) { 1, 2, 3 }, 3, r1, 2, 2, &s1));
        /* bad ranges store nothing: a file not in the session, an empty range, one past INT64_MAX */
        const DbSessionRange bad[][1] = {
                { { .file = 3, .offset = 0, .length = 4096 } },
                { { .file = 0, .offset = 4096, .length = 0 } },
                { { .file = 0, .offset = INT64_MAX, .length = 4096 } },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                ASSERT_ERROR(add_ranges(db, "boot", 1500, (const unsigned[]) { 1, 2, 3 }, 3, bad[i], 1, 2, NULL),
                             EINVAL);
        ASSERT_ERROR(add_ranges(db, "boot", 1500, (const unsigned[]) { 1 }, 1, NULL, 1, 2, NULL), EINVAL);
        check_counts(db, 1, 1, 3);
        ASSERT_EQ(count_rows(p, "session_ranges"), 2);

        /* a session without page data has no ranges */
        ASSERT_OK(add_ranges(db, "boot", 2000, (const unsigned[]) { 3, 1 }, 2, NULL, 0, 2, &s2));
        ASSERT_OK(db_load_merge_input(db, "boot", 2, &in));
        ASSERT_EQ(in.n_sessions, 2u);
        ASSERT_EQ(in.session_ids[0], s2);
        ASSERT_EQ(in.n_session_ranges[0], 0u);
        ASSERT_EQ(in.n_session_ranges[1], 2u);
        ASSERT_EQ(in.session_ranges[1][0].file_id, file_id_of(&in, 2));
        ASSERT_EQ(in.session_ranges[1][0].offset, 4096u);
        ASSERT_EQ(in.session_ranges[1][0].length, 4096u);
        ASSERT_EQ(in.session_ranges[1][1].file_id, file_id_of(&in, 1));
        ASSERT_EQ(in.session_ranges[1][1].offset, 0u);

        /* the profile's ranges: by file id, file 1 whole (length 0), cut at the size, one left out */
        int64_t f1 = file_id_of(&in, 1), f2 = file_id_of(&in, 2), f3 = file_id_of(&in, 3);
        const DbProfileEntry e[] = { { f2, 0, 1 }, { f1, 0.5, 2 }, { f3, 1, 1 } };
        ASSERT_ERROR(db_store_profile_ranges(db, "boot", e, 2, (const DbRange[]) { { f3, 0, 4096 } }, 1), EINVAL);
        ASSERT_ERROR(db_store_profile_ranges(db, "boot", e, 3, (const DbRange[]) { { f3, 4096, 0 } }, 1), EINVAL);
        ASSERT_ERROR(db_store_profile_ranges(db, "/nope", e, 3, NULL, 0), ENOENT);
        ASSERT_OK(db_store_profile_ranges(db, "boot", e, 3, (const DbRange[]) {
                        { f2, 4096, 4096 }, { f3, 8192, 65536 }, { f1, 0, 0 }, { f2, 0, 4096 } }, 4));
        ASSERT_STREQ(ranges_string(db, "boot"), "2:4096+4096 3:8192+4096 1:0+4096 2:0+4096");
        ASSERT_EQ(count_rows(p, "profile_ranges"), 4);
        /* without ranges: each file whole, in file order */
        ASSERT_OK(db_store_profile(db, "boot", e, 3));
        ASSERT_STREQ(ranges_string(db, "boot"), "2:0+8192 1:0+4096 3:0+12288");
        ASSERT_OK(db_store_profile_ranges(db, "boot", e, 3, (const DbRange[]) {
                        { f2, 4096, 4096 }, { f3, 12288, 4096 }, { f1, 0, 4096 } }, 3));
        /* file 3's only range lies past its end now: whole, after the others */
        ASSERT_STREQ(ranges_string(db, "boot"), "2:4096+4096 1:0+4096 3:0+12288");
        {
                DbProfileRange *r = NULL;
                size_t m;

                ASSERT_ERROR(db_get_profile_ranges(db, "/nope", NULL, 0, &r, &m), ENOENT);
                /* no files given: no ranges */
                ASSERT_OK(db_get_profile_ranges(db, "boot", NULL, 0, &r, &m));
                ASSERT_EQ(m, 0u);
                free(r);
        }

        /* a deleted file takes its session and profile ranges with it */
        ASSERT_OK(db_delete_file(db, f2));
        ASSERT_EQ(count_rows(p, "session_ranges"), 1);
        ASSERT_STREQ(ranges_string(db, "boot"), "1:0+4096 3:0+12288");
        db_merge_input_free(&in);

        /* pruned sessions take theirs: s1 is the oldest of three with keep 2 */
        ASSERT_OK(add_ranges(db, "boot", 3000, (const unsigned[]) { 1 }, 1, NULL, 0, 2, NULL));
        ASSERT_EQ(count_rows(p, "session_ranges"), 0);
        ASSERT_OK(add_ranges(db, APP, 3000, (const unsigned[]) { 4 }, 1,
                             (const DbSessionRange[]) { { .file = 0, .offset = 0, .length = 4096 } }, 1, 2, NULL));
        ASSERT_OK(db_load_merge_input(db, APP, 2, &in));
        ASSERT_OK(db_store_profile_ranges(db, APP, (const DbProfileEntry[]) { { in.files[0].id, 0, 1 } }, 1,
                                          (const DbRange[]) { { in.files[0].id, 0, 4096 } }, 1));
        db_merge_input_free(&in);
        ASSERT_EQ(count_rows(p, "session_ranges"), 1);
        ASSERT_EQ(count_rows(p, "profile_ranges"), 3);
        /* forgetting takes both */
        ASSERT_OK(db_forget_profile(db, APP));
        ASSERT_EQ(count_rows(p, "session_ranges"), 0);
        ASSERT_EQ(count_rows(p, "profile_ranges"), 2);
        ASSERT_OK(db_forget_all(db, NULL));
        ASSERT_EQ(count_rows(p, "profile_ranges"), 0);
        db = db_free(db);
        (void) unlink(p);
}

static int add_meta(Db *db, const char *profile, uint64_t started, const DbMetaRange *meta, size_t n_meta,
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
static char *meta_string(Db *db, const char *name) {
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

/* Filesystem metadata: stored per session in first-touch order; a profile's is its newest session's that
 * has any; it goes with its session (pruned, forgotten). */
TEST(metadata) {
        const char *p = tmp_path("metadata.db");
        _cleanup_(db_freep) Db *db = NULL;
        DbMetaRange *r = NULL;
        size_t n;

        (void) unlink(p);
        ASSERT_OK(db_open(p, &db));
        ASSERT_ERROR(db_get_profile_metadata(db, "boot", &r, &n), ENOENT);
        ASSERT_OK(add_meta(db, "boot", 1000, (const DbMetaRange[]) {
                        { .fsid = 7, .offset = 8192, .length = 4096, .offset_usec = 3 },
                        { .fsid = 9, .offset = 4096, .length = 12288, .offset_usec = 4 },
                        { .fsid = 7, .offset = 0, .length = 4096, .offset_usec = 5 } }, 3, 3));
        ASSERT_STREQ(meta_string(db, "boot"), "7:8192+4096 9:4096+12288 7:0+4096");
        /* bad ranges store nothing */
        ASSERT_ERROR(add_meta(db, "boot", 1500, (const DbMetaRange[]) { { .fsid = 7, .length = 0 } }, 1, 3), EINVAL);
        ASSERT_ERROR(add_meta(db, "boot", 1500, (const DbMetaRange[]) {
                        { .fsid = 7, .offset = INT64_MAX, .length = 4096 } }, 1, 3), EINVAL);
        ASSERT_ERROR(add_meta(db, "boot", 1500, NULL, 1, 3), EINVAL);
        ASSERT_EQ(count_rows(p, "session_metadata"), 3);
        /* a newer session without metadata: the profile keeps the last one recorded */
        ASSERT_OK(add_meta(db, "boot", 2000, NULL, 0, 3));
        ASSERT_STREQ(meta_string(db, "boot"), "7:8192+4096 9:4096+12288 7:0+4096");
        /* a newer one with metadata replaces it (the filesystem as it is now); another profile's is its own */
        ASSERT_OK(add_meta(db, "boot", 3000, (const DbMetaRange[]) { { .fsid = 7, .offset = 65536, .length = 4096 } },
                           1, 3));
        ASSERT_STREQ(meta_string(db, "boot"), "7:65536+4096");
        /* the older session's rows are gone (only the newest is ever read), the session itself stays */
        ASSERT_EQ(count_rows(p, "session_metadata"), 1);
        check_counts(db, 1, 3, 1);
        ASSERT_OK(add_meta(db, APP, 3500, (const DbMetaRange[]) { { .fsid = 9, .offset = 0, .length = 4096 } }, 1, 3));
        ASSERT_STREQ(meta_string(db, APP), "9:0+4096");
        ASSERT_STREQ(meta_string(db, "boot"), "7:65536+4096");
        ASSERT_EQ(count_rows(p, "session_metadata"), 2);
        /* pruned with its session: keep 1 leaves only the newest boot session, which has none */
        ASSERT_OK(add_meta(db, "boot", 4000, NULL, 0, 1));
        ASSERT_EQ(count_rows(p, "session_metadata"), 1);
        ASSERT_STREQ(meta_string(db, "boot"), "");
        ASSERT_OK(db_forget_profile(db, APP));
        ASSERT_EQ(count_rows(p, "session_metadata"), 0);
        db = db_free(db);
        (void) unlink(p);
}

/* A database of the previous schema (4, whole files only), with a merged profile: migration 4 -> 5 gives
 * each of its files one whole range, in profile order; its sessions have no ranges. */
TEST(migration_from_4) {
        const char *p = tmp_path("schema4.db");
        _cleanup_(db_freep) Db *db = NULL;
        DbMergeInput in = {};
        sqlite3 *s = NULL;

        (void) unlink(p);
        ASSERT_OK(db_open(p, &db));
        ASSERT_OK(ADD(db, "boot", PROFILE_BOOT, BOOT_A, 1000, 3, 1, 2, 3));
        ASSERT_OK(ADD(db, APP, PROFILE_APP, BOOT_A, 2000, 3, 5, 4));
        ASSERT_OK(db_load_merge_input(db, "boot", 3, &in));
        ASSERT_OK(db_store_profile(db, "boot", (const DbProfileEntry[]) {
                        { file_id_of(&in, 3), 0, 1 }, { file_id_of(&in, 1), 0.5, 1 }, { file_id_of(&in, 2), 1, 1 } }, 3));
        db_merge_input_free(&in);
        ASSERT_OK(db_load_merge_input(db, APP, 3, &in));
        ASSERT_OK(db_store_profile(db, APP, (const DbProfileEntry[]) {
                        { file_id_of(&in, 5), 0, 1 }, { file_id_of(&in, 4), 1, 1 } }, 2));
        db_merge_input_free(&in);
        db = db_free(db);
        ASSERT_EQ(sqlite3_open_v2(p, &s, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(s, SCHEMA_5_DROP SCHEMA_6_DROP SCHEMA_7_DROP "PRAGMA user_version = 4", NULL, NULL, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_close(s), SQLITE_OK);
        ASSERT_EQ(user_version(p), 4);

        ASSERT_OK(db_open(p, &db));
        ASSERT_EQ(user_version(p), db_schema_version());
        ASSERT_EQ(count_rows(p, "profile_ranges WHERE length = 0"), 5);
        ASSERT_STREQ(ranges_string(db, "boot"), "3:0+12288 1:0+4096 2:0+8192");
        ASSERT_STREQ(ranges_string(db, APP), "5:0+20480 4:0+16384");
        ASSERT_OK(db_load_merge_input(db, "boot", 3, &in));
        ASSERT_EQ(in.n_sessions, 1u);
        ASSERT_EQ(in.n_session_ranges[0], 0u);
        db_merge_input_free(&in);
        /* no metadata before; a session stores and reads its own after the migration */
        ASSERT_STREQ(meta_string(db, "boot"), "");
        ASSERT_OK(add_meta(db, "boot", 3000, (const DbMetaRange[]) { { .fsid = 7, .offset = 4096, .length = 8192 } },
                           1, 3));
        ASSERT_STREQ(meta_string(db, "boot"), "7:4096+8192");
        db = db_free(db);
        (void) unlink(p);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

int main(int argc, char **argv) {
        if (argc == 3 && streq(argv[1], "--count-sessions")) {
                int n = count_sessions(argv[2]);
                return n < 0 ? 255 : MIN(n, 253);
        }
        ASSERT_TRUE(mkdtemp(tmpdir));

        RUN(kind_strings);
        RUN(store_memory);
        RUN(store_file);
        RUN(migrations_idempotent);
        RUN(uids);
        RUN(migration_from_3);
        RUN(evict_order);
        RUN(migration_from_2);
        RUN(ranges);
        RUN(migration_from_4);
        RUN(metadata);
        RUN(newer_version);
        RUN(foreign);
        RUN(corrupt);
        RUN(truncated);
        RUN(prefetch);
        RUN(second_connection);
        RUN(space);

        ASSERT_OK(nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS));
        return EXIT_SUCCESS;
}
