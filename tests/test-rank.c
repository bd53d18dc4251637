/* SPDX-License-Identifier: GPL-2.0-or-later */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/macro.h"
#include "profile/rank.h"
#include "test-util.h"

#define SESSION(...)                                                                    \
        {                                                                               \
                .file_ids = (const int64_t[]) { __VA_ARGS__ },                          \
                .n_files = sizeof((const int64_t[]) { __VA_ARGS__ }) / sizeof(int64_t), \
        }

/* Merges and compares with the expected ids, scores and seen counts. */
static void check(const RankSession *sessions, size_t n_sessions, const int64_t *ids, const double *scores,
                  const unsigned *seen, size_t n) {
        _cleanup_free_ RankResult *results = NULL;
        int r;

        r = rank_merge(sessions, n_sessions, &results);
        ASSERT_OK(r);
        ASSERT_EQ(r, n);
        for (size_t i = 0; i < n; i++) {
                fprintf(stderr, "   %zu: file %lld score %.6f seen %u\n", i, (long long) results[i].file_id,
                        results[i].score, results[i].seen);
                ASSERT_EQ(results[i].file_id, ids[i]);
                ASSERT_TRUE(fabs(results[i].score - scores[i]) < 1e-9);
                if (seen)
                        ASSERT_EQ(results[i].seen, seen[i]);
        }
}

TEST(single_session) {
        const RankSession s[] = { SESSION(5, 3, 9, 1) };

        check(s, ELEMENTSOF(s), (const int64_t[]) { 5, 3, 9, 1 },
              (const double[]) { 0, 1.0 / 3, 2.0 / 3, 1 }, (const unsigned[]) { 1, 1, 1, 1 }, 4);

        /* One file: position 0, not 0/0. */
        const RankSession one[] = { SESSION(42) };
        check(one, 1, (const int64_t[]) { 42 }, (const double[]) { 0 }, (const unsigned[]) { 1 }, 1);
}

TEST(two_sessions) {
        /* Weights 1 (S0) and 0.8 (S1), total 1.8, half 0.9.
         *   file 1: S0 0,   S1 0        -> sorted 0(w1): cum 1 >= 0.9                -> 0
         *   file 2: S0 1/2, S1 1/3      -> sorted 1/3(w.8) cum .8 < .9, 1/2(w1)     -> 1/2
         *   file 3: S0 1,   S1 0        -> sorted 0(w.8) cum .8 < .9, 1(w1)         -> 1
         *   file 4: S1 1 only          -> total .8, half .4                         -> 1
         * Files 3 and 4 tie on score 1 and on the position in their newest session (1), so by id. */
        const RankSession s[] = {
                SESSION(1, 2, 3),
                SESSION(3, 2, 1, 4),
        };

        check(s, ELEMENTSOF(s), (const int64_t[]) { 1, 2, 3, 4 }, (const double[]) { 0, 0.5, 1, 1 },
              (const unsigned[]) { 2, 2, 2, 1 }, 4);
}

TEST(three_sessions_scenario) {
        /* Sessions oldest -> newest: L1 = [A,B,C,D], L2 = [B,A,C,D], L3 = [B,C,A,D]; A=1 B=2 C=3 D=4.
         * sessions[0] = L3 (w 1), sessions[1] = L2 (w 0.8), sessions[2] = L1 (w 0.64).
         * n = 4 everywhere, so p = index/3. Every file is in all three: total 2.44, half 1.22.
         *   A: L3 2/3 (w1), L2 1/3 (w.8), L1 0 (w.64)
         *      sorted: 0 cum .64 < 1.22; 1/3 cum 1.44 >= 1.22                            -> 1/3
         *   B: L3 0 (w1), L2 0 (w.8), L1 1/3 (w.64)
         *      sorted: 0 cum 1.8 >= 1.22                                                 -> 0
         *   C: L3 1/3 (w1), L2 2/3 (w.8), L1 2/3 (w.64)
         *      sorted: 1/3 cum 1 < 1.22; 2/3 cum 2.44                                    -> 2/3
         *   D: 1 everywhere                                                              -> 1
         * EXPECTED L1..L3: B (0), A (1/3), C (2/3), D (1)
         * The newest session (B C A D) does not outvote the two before it, which agree on A before C. */
        const int64_t A = 1, B = 2, C = 3, D = 4;
        const RankSession s[] = {
                SESSION(B, C, A, D),  /* L3 */
                SESSION(B, A, C, D),  /* L2 */
                SESSION(A, B, C, D),  /* L1 */
        };

        check(s, ELEMENTSOF(s), (const int64_t[]) { B, A, C, D }, (const double[]) { 0, 1.0 / 3, 2.0 / 3, 1 },
              (const unsigned[]) { 3, 3, 3, 3 }, 4);
}

TEST(median_not_dragged) {
        /* Four sessions: weights 1, .8, .64, .512, total 2.952, half 1.476.
         * S0 = [2,1], S1 = S2 = S3 = [1,2].
         *   file 1: S0 1 (w1), S1..S3 0: sorted 0,0,0 cum .8+.64+.512 = 1.952 >= 1.476  -> 0
         *   file 2: S0 0 (w1), S1..S3 1: sorted 0 cum 1 < 1.476, then 1                 -> 1
         * One late access in the newest session does not move file 1 back. */
        const RankSession s[] = {
                SESSION(2, 1),
                SESSION(1, 2),
                SESSION(1, 2),
                SESSION(1, 2),
        };

        check(s, ELEMENTSOF(s), (const int64_t[]) { 1, 2 }, (const double[]) { 0, 1 },
              (const unsigned[]) { 4, 4 }, 2);
}

TEST(only_in_old_session) {
        /* S0 = S1 = [1,2,3] (p 0, 1/2, 1), S2 = [1,4,2,3] (p 0, 1/3, 2/3, 1).
         *   file 1: 0 everywhere                                   -> 0
         *   file 2: S0 1/2 (w1), S1 1/2, S2 2/3: 1/2 cum 1.8 >= 1.22 -> 1/2
         *   file 3: 1 everywhere                                   -> 1
         *   file 4: S2 1/3 only                                    -> 1/3, seen once, still included */
        const RankSession s[] = {
                SESSION(1, 2, 3),
                SESSION(1, 2, 3),
                SESSION(1, 4, 2, 3),
        };

        check(s, ELEMENTSOF(s), (const int64_t[]) { 1, 4, 2, 3 }, (const double[]) { 0, 1.0 / 3, 0.5, 1 },
              (const unsigned[]) { 3, 1, 3, 3 }, 4);
}

TEST(ties) {
        /* Equal scores, equal newest positions: by file id.
         * S0 = [1,2] (p 0, 1), S1 = [3,4,5] (p 0, 1/2, 1): 1 and 3 score 0, 2 and 5 score 1. */
        const RankSession by_id[] = {
                SESSION(1, 2),
                SESSION(3, 4, 5),
        };
        check(by_id, ELEMENTSOF(by_id), (const int64_t[]) { 1, 3, 4, 2, 5 },
              (const double[]) { 0, 0, 0.5, 1, 1 }, (const unsigned[]) { 1, 1, 1, 1, 1 }, 5);

        /* Equal scores, different newest positions: by that position, not by id.
         * S0 = [5,2,1] (p 0, 1/2, 1), S1 = S2 = S3 = [1,2] (p 0, 1); total 25/12, half 25/24.
         *   file 5: S0 0 only                                          -> 0, newest position 0
         *   file 1: S0 1 (w1), older 0: cum 13/12 >= 25/24             -> 0, newest position 1
         *   file 2: S0 1/2 (w1) cum 1 < 25/24, then 1                   -> 1 */
        const RankSession by_position[] = {
                SESSION(5, 2, 1),
                SESSION(1, 2),
                SESSION(1, 2),
                SESSION(1, 2),
        };
        check(by_position, ELEMENTSOF(by_position), (const int64_t[]) { 5, 1, 2 },
              (const double[]) { 0, 0, 1 }, (const unsigned[]) { 1, 4, 4 }, 3);
}

TEST(two_disagree) {
        /* Two sessions that disagree: weights 1 and 0.8, total 1.8, half 0.9. With 0.8^age weights no subset
         * of sessions weighs exactly half, so the median is never ambiguous.
         *   file 1: S0 1 (w1), S1 0 (w.8): sorted 0 cum .8 < .9, then 1   -> 1
         *   file 2: S0 0 (w1), S1 1 (w.8): sorted 0 cum 1 >= .9          -> 0
         * Between two sessions the newer one decides. */
        const RankSession s[] = {
                SESSION(2, 1),
                SESSION(1, 2),
        };

        check(s, ELEMENTSOF(s), (const int64_t[]) { 2, 1 }, (const double[]) { 0, 1 },
              (const unsigned[]) { 2, 2 }, 2);
}

TEST(duplicate_in_session) {
        /* A file listed twice counts at its first access, once. */
        const RankSession s[] = { SESSION(1, 2, 1) };

        check(s, ELEMENTSOF(s), (const int64_t[]) { 1, 2 }, (const double[]) { 0, 0.5 },
              (const unsigned[]) { 1, 1 }, 2);
}

TEST(empty) {
        RankResult *results = (RankResult *) 0x1;

        ASSERT_EQ(rank_merge(NULL, 0, &results), 0);
        ASSERT_TRUE(!results);

        const RankSession s[] = { { .file_ids = NULL, .n_files = 0 }, { .file_ids = NULL, .n_files = 0 } };
        results = (RankResult *) 0x1;
        ASSERT_EQ(rank_merge(s, ELEMENTSOF(s), &results), 0);
        ASSERT_TRUE(!results);
}

TEST(large) {
        /* 10 sessions of 100k files in different orders: must stay fast (sort-based, not quadratic). */
        enum { N_SESSIONS = 10, N_FILES = 100000 };
        _cleanup_free_ int64_t *ids = NULL;
        _cleanup_free_ RankResult *results = NULL;
        RankSession s[N_SESSIONS];
        int r;

        ids = calloc((size_t) N_SESSIONS * N_FILES, sizeof(int64_t));
        ASSERT_TRUE(ids);

        srand(1);
        for (size_t i = 0; i < N_SESSIONS; i++) {
                int64_t *l = ids + i * N_FILES;

                for (size_t j = 0; j < N_FILES; j++)
                        l[j] = (int64_t) j + 1000;
                for (size_t j = N_FILES - 1; j > 0; j--) {
                        size_t k = (size_t) rand() % (j + 1);
                        int64_t t = l[j];
                        l[j] = l[k];
                        l[k] = t;
                }
                s[i] = (RankSession) { .file_ids = l, .n_files = N_FILES };
        }

        r = rank_merge(s, N_SESSIONS, &results);
        ASSERT_EQ(r, N_FILES);
        for (size_t i = 0; i < N_FILES; i++) {
                ASSERT_EQ(results[i].seen, N_SESSIONS);
                ASSERT_TRUE(results[i].score >= 0 && results[i].score <= 1);
                if (i > 0)
                        ASSERT_TRUE(results[i - 1].score <= results[i].score);
        }
}

#define RANGES(...)                                                                             \
        {                                                                                       \
                .ranges = (const RankRange[]) { __VA_ARGS__ },                                  \
                .n_ranges = sizeof((const RankRange[]) { __VA_ARGS__ }) / sizeof(RankRange),    \
        }
#define NO_PAGES { .ranges = NULL, .n_ranges = 0 }
#define K 4096

/* Ranks the files, merges the ranges and compares them with "id:offset+length ..." (offsets in bytes). */
static void check_ranges(const RankSession *sessions, const RankRangeSession *range_sessions, size_t n_sessions,
                         const char *expected) {
        _cleanup_free_ RankResult *files = NULL;
        _cleanup_free_ RankRange *ranges = NULL;
        char buf[1024];
        size_t k = 0;
        int n, m;

        n = rank_merge(sessions, n_sessions, &files);
        ASSERT_OK(n);
        m = rank_merge_ranges(sessions, range_sessions, n_sessions, files, (size_t) n, &ranges);
        ASSERT_OK(m);
        ASSERT_TRUE(m >= n);
        buf[0] = 0;
        for (int i = 0; i < m; i++) {
                k += (size_t) snprintf(buf + k, sizeof buf - k, "%s%lld:%llu+%llu", i ? " " : "",
                                       (long long) ranges[i].file_id, (unsigned long long) ranges[i].offset,
                                       (unsigned long long) ranges[i].length);
                ASSERT_TRUE(k < sizeof buf);
        }
        fprintf(stderr, "   ranges: %s\n", buf);
        ASSERT_STREQ(buf, expected);
}

/* Without page data every file is one whole range, in the files' order. */
TEST(ranges_whole_files) {
        const RankSession s[] = { SESSION(1, 2, 3), SESSION(3, 2, 1, 4) };
        const RankRangeSession r[] = { NO_PAGES, NO_PAGES };

        check_ranges(s, r, ELEMENTSOF(s), "1:0+0 2:0+0 3:0+0 4:0+0");
        check_ranges(NULL, NULL, 0, "");
}

/* A file's ranges are the union over the sessions with page data, overlapping or touching ones
 * coalesced; separate ones stay apart. */
TEST(ranges_union) {
        const RankSession s[] = { SESSION(1), SESSION(1), SESSION(1) };
        const RankRangeSession touch[] = {
                RANGES({ 1, 0, K }, { 1, 2 * K, K }),
                RANGES({ 1, K, K }),
                NO_PAGES,
        };
        const RankRangeSession overlap[] = {
                RANGES({ 1, 0, 2 * K }),
                RANGES({ 1, K, 2 * K }, { 1, 5 * K, K }),
                RANGES({ 1, 6 * K, K }, { 1, 3 * K, K }),
        };
        const RankRangeSession apart[] = {
                RANGES({ 1, 0, K }),
                RANGES({ 1, 3 * K, K }),
                NO_PAGES,
        };

        /* 0-4K (S0, p 0), 4K-8K (S1, p 0), 8K-12K (S0, p 1) only touch: three ranges, which the order puts
         * next to each other, so they are joined after the sort */
        check_ranges(s, touch, 3, "1:0+12288");
        /* 0-8K and 4K-12K overlap: one, 0-12K (S0 p 0, S1 p 0: score 0); 12K-16K only touches it and stays
         * apart (S2 p 1: 1), as do 20K-24K (S1 p 1: 1) and 24K-28K (S2 p 0: 0). Order: 0-12K and 24K-28K
         * (score 0, tie 0, by offset), then 12K-16K and 20K-24K (score 1, by offset); none follow on. */
        check_ranges(s, overlap, 3, "1:0+12288 1:24576+4096 1:12288+4096 1:20480+4096");
        check_ranges(s, apart, 3, "1:0+4096 1:12288+4096");
}

/* A session with page data but no range for a file (cached) does not shrink the file's ranges, and one
 * without page data does not widen them; a file no session with page data read counts whole.
 *   files: S0 (1, 2, 3), S1 (2, 1), S2 (4, 1): file scores 4: 0, 2: 1/2, 1: 1 (S0 0, S1 1, S2 1), 3: 1.
 *   ranges: S0 1:0-4K (p 0), 3:8K-12K (p 1); S1 2:4K-8K (p 0), 1:4K-8K (p 1); S2 none.
 *   1:0-8K covers S0 p 0 and S1 p 1: median 0, tie 0; 2:4K-8K: 0, tie 0; 3:8K-12K: 1; 4 whole: its file
 *   score 0, tie 0. The three at 0 go in the files' order: 4, 2, 1. */
TEST(ranges_cached_and_whole) {
        const RankSession s[] = { SESSION(1, 2, 3), SESSION(2, 1), SESSION(4, 1) };
        const RankRangeSession r[] = {
                RANGES({ 1, 0, K }, { 3, 2 * K, K }),
                RANGES({ 2, K, K }, { 1, K, K }),
                NO_PAGES,
        };

        check_ranges(s, r, ELEMENTSOF(s), "4:0+0 2:4096+4096 1:0+8192 3:8192+4096");
}

/* Ranges interleave across files as the sessions read them, by the same weighted median.
 *   S0: 1:0-4K, 2:0-4K, 1:8K-12K, 99 (not a file of the profile): p 0, 1/3, 2/3, 1
 *   S1: 2:0-4K, 1:0-4K, 1:8K-12K: p 0, 1/2, 1
 *   1:0-4K: S0 0, S1 1/2 -> 0; 2:0-4K: S0 1/3, S1 0 -> 1/3 (S1's 0.8 is not half of 1.8); 1:8K: 2/3. */
TEST(ranges_interleave) {
        const RankSession s[] = { SESSION(1, 2), SESSION(2, 1) };
        const RankRangeSession r[] = {
                RANGES({ 1, 0, K }, { 2, 0, K }, { 1, 2 * K, K }, { 99, 0, K }),
                RANGES({ 2, 0, K }, { 1, 0, K }, { 1, 2 * K, K }),
        };
        const RankRangeSession reversed[] = {
                RANGES({ 1, 2 * K, K }, { 2, 0, K }, { 1, 0, K }),
        };

        check_ranges(s, r, ELEMENTSOF(s), "1:0+4096 2:0+4096 1:8192+4096");
        /* one session: exactly its order, even against a file's offsets */
        check_ranges(s, reversed, 1, "1:8192+4096 2:0+4096 1:0+4096");
}

/* A session that read some files cold (ranges) and found others cached (no range): the cached ones keep
 * their place among the files, on the ranges' scale, rather than a file score on another scale.
 *   files 1-5, ranges only of 3, 4, 5: units 1, 2, 3r, 4r, 5r (p 0, 1/4, 1/2, 3/4, 1): the files' order
 *   (on the files' scale 2 would be at 1/4 and 3's range at 0: 1 3 2 4 5);
 *   files 1-3, ranges 1:0-4K, 3:0-4K, 1:8K-12K, 2 cached: units 1r, 2, 3r, 1r' */
TEST(ranges_mixed_cached) {
        const RankSession s[] = { SESSION(1, 2, 3, 4, 5) };
        const RankRangeSession r[] = { RANGES({ 3, 0, K }, { 4, 0, K }, { 5, 0, K }) };
        const RankSession t[] = { SESSION(1, 2, 3) };
        const RankRangeSession u[] = { RANGES({ 1, 0, K }, { 3, 0, K }, { 1, 2 * K, K }) };

        check_ranges(s, r, 1, "1:0+0 2:0+0 3:0+4096 4:0+4096 5:0+4096");
        check_ranges(t, u, 1, "1:0+4096 2:0+0 3:0+4096 1:8192+4096");
}

int main(void) {
        RUN(single_session);
        RUN(two_sessions);
        RUN(three_sessions_scenario);
        RUN(median_not_dragged);
        RUN(only_in_old_session);
        RUN(ties);
        RUN(two_disagree);
        RUN(duplicate_in_session);
        RUN(empty);
        RUN(large);
        RUN(ranges_whole_files);
        RUN(ranges_union);
        RUN(ranges_cached_and_whole);
        RUN(ranges_interleave);
        RUN(ranges_mixed_cached);
        return EXIT_SUCCESS;
}
