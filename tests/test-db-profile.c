/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The profile store (db-profile.c): who recorded a profile, eviction over the caps, a profile's
 * ranges. */

#include "test-db-util.h"

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

int main(int argc, char **argv) {
        test_db_tmpdir_make();

        RUN(uids);
        RUN(evict_order);
        RUN(ranges);

        test_db_tmpdir_remove();
        return EXIT_SUCCESS;
}
