/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The planner's hot ranges: gluing ranges of a file that follow each other in the read order and lie less
 * than 64 KiB apart, alignment to pages, cutting at the file's size, and the hot bytes that MaxFileMiB= and
 * the hot-set cap count. */
#include <stdlib.h>

#include "plan/hot-ranges.h"
#include "test-util.h"

#define KiB (UINT64_C(1024))
#define MiB (UINT64_C(1024) * 1024)
#define PAGE (4 * KiB)

typedef struct Want {
        size_t file;
        uint64_t offset, length;
} Want;

static void check(const DbProfileRange *in, size_t n, const uint64_t *sizes, size_t n_files, const Want *want,
                  size_t n_want) {
        HotRange *r = NULL;
        size_t k = 0;

        ASSERT_OK(hot_ranges_glue(in, n, sizes, n_files, PAGE, &r, &k));
        ASSERT_EQ(k, n_want);
        for (size_t i = 0; i < k; i++) {
                ASSERT_EQ(r[i].file, want[i].file);
                ASSERT_EQ(r[i].offset, want[i].offset);
                ASSERT_EQ(r[i].length, want[i].length);
        }
        free(r);
}

/* A 0-40 KiB, B 0-40 KiB, A 40-80 KiB: A's ranges are not next to each other in the order: three items */
TEST(interleaved) {
        const uint64_t sizes[] = { 80 * KiB, 40 * KiB };
        const DbProfileRange in[] = { { 0, 0, 40 * KiB }, { 1, 0, 40 * KiB }, { 0, 40 * KiB, 40 * KiB } };
        const Want want[] = { { 0, 0, 40 * KiB }, { 1, 0, 40 * KiB }, { 0, 40 * KiB, 40 * KiB } };

        check(in, 3, sizes, 2, want, 3);
}

/* consecutive ranges of one file: glued while the gap is below 64 KiB, also when they touch or overlap;
 * never backwards */
TEST(gap) {
        const uint64_t sizes[] = { 10 * MiB };
        const DbProfileRange in[] = {
                { 0, 0, 4 * KiB },
                { 0, 64 * KiB, 4 * KiB },               /* 60 KiB after: glued -> 0..68K */
                { 0, 68 * KiB, 8 * KiB },               /* touching: glued -> 0..76K */
                { 0, 72 * KiB, 8 * KiB },               /* overlapping: glued -> 0..80K */
                { 0, 144 * KiB, 4 * KiB },              /* exactly 64 KiB after: not glued */
                { 0, 100 * KiB, 4 * KiB },              /* before the one before: not glued */
                { 0, 104 * KiB, 4 * KiB },              /* right after it: glued */
        };
        const Want want[] = { { 0, 0, 80 * KiB }, { 0, 144 * KiB, 4 * KiB }, { 0, 100 * KiB, 8 * KiB } };

        check(in, TEST_ELEMENTSOF(in), sizes, 1, want, TEST_ELEMENTSOF(want));
}

/* pages: offsets rounded down, ends up; cut at the file's size (rounded up to a page); a range that starts
 * past the end (the file shrank) dropped, and the ranges around it are still not glued across files */
TEST(align_and_cut) {
        const uint64_t sizes[] = { 10000, 3 * PAGE };
        const DbProfileRange in[] = {
                { 0, 5000, 100 },                       /* -> 4096..8192 */
                { 1, 0, PAGE },
                { 1, 5 * PAGE, PAGE },                  /* past the end of file 1: dropped */
                { 0, 8192, 20000 },                     /* cut at 12288 */
        };
        const Want want[] = { { 0, PAGE, PAGE }, { 1, 0, PAGE }, { 0, 2 * PAGE, PAGE } };

        check(in, TEST_ELEMENTSOF(in), sizes, 2, want, TEST_ELEMENTSOF(want));
}

/* a 175 MiB file of which 8 MiB are hot counts 8 MiB (MaxFileMiB= 128 accepts it); a whole file counts its
 * size rounded up to a page */
TEST(hot_bytes) {
        const uint64_t sizes[] = { 175 * MiB, 10000 };
        DbProfileRange in[] = { { 0, 1000 * PAGE, 4 * MiB }, { 1, 0, 10000 }, { 0, 40000 * PAGE, 4 * MiB } };
        HotRange *r = NULL;
        size_t k = 0;

        ASSERT_OK(hot_ranges_glue(in, 3, sizes, 2, PAGE, &r, &k));
        ASSERT_EQ(k, 3);
        ASSERT_EQ(hot_ranges_file_bytes(r, k, 0, PAGE), 8 * MiB);
        ASSERT_TRUE(hot_ranges_file_bytes(r, k, 0, PAGE) <= 128 * MiB);
        ASSERT_EQ(hot_ranges_file_bytes(r, k, 1, PAGE), 3 * PAGE);

        /* MaxFileMiB=128 takes its 8 hot MiB; the whole 175 MiB it would not */
        ASSERT_EQ(hot_ranges_admit(hot_ranges_file_bytes(r, k, 0, PAGE), 128 * MiB, 0, 1024 * MiB), HOT_ADMIT);
        ASSERT_EQ(hot_ranges_admit(175 * MiB, 128 * MiB, 0, 1024 * MiB), HOT_TOO_LARGE);
        /* the hot set counts hot bytes: 8 MiB fit in the last 8 MiB of it, not in 8 MiB - 1 page */
        ASSERT_EQ(hot_ranges_admit(8 * MiB, 128 * MiB, 1016 * MiB, 1024 * MiB), HOT_ADMIT);
        ASSERT_EQ(hot_ranges_admit(8 * MiB, 128 * MiB, 1016 * MiB + PAGE, 1024 * MiB), HOT_SET_FULL);
        ASSERT_EQ(hot_ranges_admit(PAGE, 128 * MiB, 2048 * MiB, 1024 * MiB), HOT_SET_FULL);
        free(r);
}

TEST(whole_and_errors) {
        DbProfileFile files[2] = { { .file = { .size = 5000 } }, { .file = { .size = 0 } } };
        DbProfileRange *in = NULL, bad = { 2, 0, PAGE };
        const uint64_t sizes[] = { 5000, 0 };
        HotRange *r = NULL;
        size_t n = 0, k = 0;

        ASSERT_OK(hot_ranges_whole(files, 2, &in, &n));
        ASSERT_EQ(n, 2);
        ASSERT_OK(hot_ranges_glue(in, n, sizes, 2, PAGE, &r, &k));
        ASSERT_EQ(k, 1);                /* the empty file has nothing to move */
        ASSERT_EQ(r[0].length, 2 * PAGE);
        free(r);
        free(in);
        ASSERT_ERROR(hot_ranges_glue(&bad, 1, sizes, 2, PAGE, &r, &k), EINVAL);
        ASSERT_ERROR(hot_ranges_glue(&bad, 1, sizes, 2, 3000, &r, &k), EINVAL);
        ASSERT_OK(hot_ranges_glue(NULL, 0, sizes, 2, PAGE, &r, &k));
        ASSERT_EQ(k, 0);
}

/* a range's part of a file's extents: cut at both ends, physical moved with logical */
TEST(clip) {
        const Extent e[] = { { .logical = 0, .physical = 1 * MiB, .length = 16 * KiB },
                             { .logical = 16 * KiB, .physical = 5 * MiB, .length = 16 * KiB },
                             { .logical = 64 * KiB, .physical = 9 * MiB, .length = 8 * KiB } };
        Extent *c = NULL;
        size_t n = 0;

        ASSERT_OK(hot_ranges_clip_extents(e, 3, 8 * KiB, 16 * KiB, &c, &n));
        ASSERT_EQ(n, 2);
        ASSERT_EQ(c[0].logical, 8 * KiB);
        ASSERT_EQ(c[0].physical, 1 * MiB + 8 * KiB);
        ASSERT_EQ(c[0].length, 8 * KiB);
        ASSERT_EQ(c[1].logical, 16 * KiB);
        ASSERT_EQ(c[1].physical, 5 * MiB);
        ASSERT_EQ(c[1].length, 8 * KiB);
        free(c);
        ASSERT_OK(hot_ranges_clip_extents(e, 3, 32 * KiB, 32 * KiB, &c, &n));      /* a hole */
        ASSERT_EQ(n, 0);
        ASSERT_TRUE(!c);
}

int main(void) {
        RUN(interleaved);
        RUN(gap);
        RUN(align_and_cut);
        RUN(hot_bytes);
        RUN(whole_and_errors);
        RUN(clip);
        return EXIT_SUCCESS;
}
