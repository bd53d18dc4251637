/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The planner's order of profiles: the boot first, then the system's application profiles, then users',
 * each class by launches recorded. No filesystem is watched here, so every file is skipped, but the plan
 * still lists the profiles in the order their files would be laid out. And its "in place" rule on the
 * entries of ranges: what a run left needs no other. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "plan/planner.h"
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

#define KiB (UINT64_C(1024))

/* A[0,40K) B[0,40K) A[40K,80K) as a run lays them out (block 1000 on, back to back): no break; the second
 * optimize leaves them. A's two ranges where they were before (A whole in one run, B elsewhere): two
 * breaks, to B and back. A range with a hole (its data packed across it) is in place too. */
TEST(breaks_of_ranges) {
        Extent a1 = { .logical = 0, .physical = 1000 * 4 * KiB, .length = 40 * KiB },
               b1 = { .logical = 0, .physical = 1010 * 4 * KiB, .length = 40 * KiB },
               a2 = { .logical = 40 * KiB, .physical = 1020 * 4 * KiB, .length = 40 * KiB },
               a2_before = { .logical = 40 * KiB, .physical = 1010 * 4 * KiB, .length = 40 * KiB },
               b1_before = { .logical = 0, .physical = 5000 * 4 * KiB, .length = 40 * KiB },
               holey[2] = { { .logical = 0, .physical = 1030 * 4 * KiB, .length = 8 * KiB },
                            { .logical = 16 * KiB, .physical = 1032 * 4 * KiB, .length = 8 * KiB } };
        PlanFile moved[4] = {
                { .offset = 0, .length = 40 * KiB, .extents = &a1, .n_extents = 1 },
                { .offset = 0, .length = 40 * KiB, .extents = &b1, .n_extents = 1 },
                { .offset = 40 * KiB, .length = 40 * KiB, .extents = &a2, .n_extents = 1 },
                { .offset = 0, .length = 0, .extents = holey, .n_extents = 2 },
        };
        PlanFile before[3] = {
                { .offset = 0, .length = 40 * KiB, .extents = &a1, .n_extents = 1 },
                { .offset = 0, .length = 40 * KiB, .extents = &b1_before, .n_extents = 1 },
                { .offset = 40 * KiB, .length = 40 * KiB, .extents = &a2_before, .n_extents = 1 },
        };

        ASSERT_EQ(planner_layout_breaks(moved, 4, 4 * KiB), 0);
        ASSERT_EQ(planner_layout_breaks(before, 3, 4 * KiB), 2);
        /* B's range one page further: one break before it, one after */
        b1.physical += 4 * KiB;
        ASSERT_EQ(planner_layout_breaks(moved, 3, 4 * KiB), 2);
}

int main(void) {
        RUN(system_before_users);
        RUN(breaks_of_ranges);
        return EXIT_SUCCESS;
}
