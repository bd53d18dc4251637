/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The planner's order of profiles: the boot first, then the system's application profiles, then users',
 * each class by launches recorded. No filesystem is watched here, so every file is skipped, but the plan
 * still lists the profiles in the order their files would be laid out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "planner.h"
#include "test-util.h"

#define BOOT_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static void add(Db *db, const char *profile, uid_t uid, unsigned launches, unsigned file) {
        for (unsigned i = 0; i < launches; i++) {
                DbSessionFile f = {
                        .key = { .fsid = 1, .handle_type = 1, .handle_len = 4 },
                        .path = "/f",
                        .size = 4096,
                };
                memcpy(f.key.handle, &file, sizeof file);
                ASSERT_OK(db_add_session(db, &(DbSession) {
                                .profile = profile,
                                .kind = streq(profile, "boot") ? PROFILE_BOOT : PROFILE_APP,
                                .boot_id = BOOT_A,
                                .started_realtime_usec = 1000 + i,
                                .uid = uid,
                                .files = &f,
                                .n_files = 1,
                        }, 5, NULL));
        }
}

TEST(system_before_users) {
        _cleanup_(db_freep) Db *db = NULL;
        FilesystemList none = {};
        PlanConfig cfg = { .max_hot_set_bytes = 1 << 30, .max_file_bytes = 1 << 30 };
        const char *const want[] = { "boot", "/sys/often", "/sys/once", "/user/often", "/unknown", "/user/once" };
        Plan p = {};

        ASSERT_OK(db_open(":memory:", &db));
        /* launched by users far more often than the system's; one whose uid is not known (older seekless) */
        add(db, "/user/often", 1000, 20, 1);
        add(db, "/user/once", 65534, 1, 2);
        add(db, "/unknown", UID_INVALID, 10, 3);
        add(db, "/sys/once", 0, 1, 4);
        add(db, "/sys/often", SYSTEM_UID_MAX, 2, 5);
        add(db, "boot", 0, 1, 6);

        ASSERT_OK(planner_build(db, &none, NULL, &cfg, NULL, NULL, &p));
        for (size_t i = 0; i < p.n_profiles; i++)
                fprintf(stderr, "   %zu: %s\n", i, p.profiles[i].name);
        ASSERT_EQ(p.n_profiles, TEST_ELEMENTSOF(want));
        for (size_t i = 0; i < p.n_profiles; i++)
                ASSERT_STREQ(p.profiles[i].name, want[i]);
        plan_done(&p);
}

int main(void) {
        RUN(system_before_users);
        return EXIT_SUCCESS;
}
