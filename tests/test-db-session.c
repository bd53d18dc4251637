/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The session store (db-session.c): sessions stored, pruned and counted, the merge input, and the
 * profile stored from it through to forgetting (one scenario, on ":memory:" and on a file); the
 * filesystem metadata of sessions. */

#include <math.h>

#include "test-db-util.h"

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

static int add_prefetched(Db *db, uint64_t started, unsigned keep) {
        DbSessionFile f = file_make(1);

        return db_add_session(db, &(DbSession) {
                        .profile = "boot", .kind = PROFILE_BOOT, .boot_id = BOOT_B,
                        .started_realtime_usec = started, .duration_usec = 100, .complete = true,
                        .prefetched = true, .files = &f, .n_files = 1,
                }, keep, NULL);
}

/* A profile keeps its newest session that was not prefetched besides its newest `keep`, so its ranges and
 * metadata outlive any number of prefetched ones; the merge reads it, after them. A session that was not
 * prefetched replaces it. */
TEST(prefetched_keep_cold) {
        const char *p = tmp_path("prefetched.db");
        _cleanup_(db_freep) Db *db = NULL;
        DbMergeInput in = {};

        (void) unlink(p);
        ASSERT_OK(db_open(p, &db));
        ASSERT_OK(add_meta(db, "boot", 1000, (const DbMetaRange[]) { { .fsid = 7, .offset = 8192, .length = 4096 } },
                           1, 1));
        for (uint64_t t = 2000; t <= 4000; t += 1000) {
                ASSERT_OK(add_prefetched(db, t, 1));
                check_counts(db, 1, 2, 1);
                ASSERT_STREQ(meta_string(db, "boot"), "7:8192+4096");
        }
        ASSERT_EQ(count_rows(p, "sessions WHERE prefetched = 1"), 1);
        ASSERT_OK(db_load_merge_input(db, "boot", 1, &in));
        ASSERT_EQ(in.n_sessions, 2u);
        db_merge_input_free(&in);
        /* with keep 3: the three newest, the cold one among them */
        ASSERT_OK(add_prefetched(db, 5000, 3));
        check_counts(db, 1, 3, 1);
        ASSERT_OK(add_meta(db, "boot", 6000, (const DbMetaRange[]) { { .fsid = 7, .offset = 0, .length = 4096 } },
                           1, 1));
        check_counts(db, 1, 1, 1);
        ASSERT_STREQ(meta_string(db, "boot"), "7:0+4096");
        db = db_free(db);
        (void) unlink(p);
}

int main(int argc, char **argv) {
        test_db_tmpdir_make();

        RUN(store_memory);
        RUN(store_file);
        RUN(metadata);
        RUN(prefetched_keep_cold);

        test_db_tmpdir_remove();
        return EXIT_SUCCESS;
}
