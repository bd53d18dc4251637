/* SPDX-License-Identifier: GPL-2.0-or-later */

#include <fcntl.h>
#include <linux/fiemap.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fiemap.h"
#include "plan/layout.h"
#include "common/macro.h"
#include "test-util.h"

/* Numbers chosen so that the hand computation stays exact:
 *   device D = 1 GiB = 1073741824 bytes;
 *   transfer at 150 MB/s is 150000 bytes per ms, so 75 KiB = 76800 bytes = 0.512 ms,
 *   300 KiB = 307200 = 2.048 ms, 600 KiB = 614400 = 4.096 ms, 60 KiB = 61440 = 0.4096 ms;
 *   seek(0) = 1 + 0 + 4.17 = 5.17 ms. */
#define KiB 1024ULL
#define MiB (1024ULL * 1024ULL)
#define D (1024ULL * MiB)

#define EXTENT(l, p, len) { .logical = (l), .physical = (p), .length = (len) }

static void assert_near(double got, double expected, double eps) {
        if (fabs(got - expected) > eps) {
                fprintf(stderr, "   modeled %.12f ms, expected %.12f ms\n", got, expected);
                ASSERT_TRUE(fabs(got - expected) <= eps);
        }
}

static void assert_ms(double got, double expected) {
        assert_near(got, expected, 1e-9);
}

static void walk(const Extent *const *files, const size_t *n, size_t n_files, LayoutQuality *ret) {
        LayoutWalker w;

        layout_walker_init(&w, D);
        for (size_t i = 0; i < n_files; i++)
                layout_walker_add_file(&w, files[i], n[i]);
        layout_walker_finish(&w, ret);
        fprintf(stderr, "   files %llu bytes %llu extents %llu disc %llu span %llu ms %.6f\n",
                (unsigned long long) ret->files, (unsigned long long) ret->bytes,
                (unsigned long long) ret->extents, (unsigned long long) ret->discontinuities,
                (unsigned long long) ret->span, ret->modeled_read_ms);
}

TEST(seek_formula) {
        /* 1 ms settle + 15 ms * sqrt(d / D) + 4.17 ms:
         *   d = 0      -> 1 + 0 + 4.17              = 5.17
         *   d = D      -> 1 + 15 + 4.17             = 20.17
         *   d = D/4    -> 1 + 15 * 0.5 + 4.17       = 12.67
         *   d = D/16   -> 1 + 15 * 0.25 + 4.17      = 8.92
         *   d = 100 KiB -> 102400 / 2^30 = 100 / 2^20, sqrt = 10 / 1024 = 0.009765625,
         *                 1 + 0.146484375 + 4.17    = 5.316484375
         *   d = 2D     -> clamped to a full stroke  = 20.17
         *   D unknown (0): d = 0 -> 5.17, d > 0 -> full stroke 20.17 */
        assert_ms(layout_seek_ms(0, D), 5.17);
        assert_ms(layout_seek_ms(D, D), 20.17);
        assert_ms(layout_seek_ms(D / 4, D), 12.67);
        assert_ms(layout_seek_ms(D / 16, D), 8.92);
        assert_ms(layout_seek_ms(100 * KiB, D), 5.316484375);
        assert_ms(layout_seek_ms(2 * D, D), 20.17);
        assert_ms(layout_seek_ms(0, 0), 5.17);
        assert_ms(layout_seek_ms(4096, 0), 20.17);
}

TEST(contiguous) {
        /* File A: 300 KiB at 1 MiB, then 300 KiB right after (1048576 + 307200 = 1355776); file B: 600 KiB right
         * after A (1355776 + 307200 = 1662976).
         *   files 2, extents 3, discontinuities 0, bytes = span = 1228800 (1200 KiB)
         *   ms = seek(0) 5.17 + 2.048 + 2.048 + 4.096 = 13.362 */
        const Extent a[] = {
                EXTENT(0, 1 * MiB, 300 * KiB),
                EXTENT(300 * KiB, 1355776, 300 * KiB),
        };
        const Extent b[] = {
                EXTENT(0, 1662976, 600 * KiB),
        };
        const Extent *files[] = { a, b };
        const size_t n[] = { ELEMENTSOF(a), ELEMENTSOF(b) };
        LayoutQuality q;

        walk(files, n, 2, &q);
        ASSERT_EQ(q.files, 2);
        ASSERT_EQ(q.extents, 3);
        ASSERT_EQ(q.discontinuities, 0);
        ASSERT_EQ(q.bytes, 1228800);
        ASSERT_EQ(q.span, 1228800);
        assert_ms(q.modeled_read_ms, 13.362);
}

TEST(backward_jump) {
        /* File A: 600 KiB at 64 MiB (67108864), ends at 67723264. File B: 600 KiB at 614400, so the head jumps back
         * 67723264 - 614400 = 67108864 = D/16.
         *   discontinuities 1, span = 67723264 - 614400 = 67108864
         *   ms = 5.17 + 4.096 + seek(D/16) 8.92 + 4.096 = 22.282 */
        const Extent a[] = { EXTENT(0, 64 * MiB, 600 * KiB) };
        const Extent b[] = { EXTENT(0, 614400, 600 * KiB) };
        const Extent *files[] = { a, b };
        const size_t n[] = { 1, 1 };
        LayoutQuality q;

        walk(files, n, 2, &q);
        ASSERT_EQ(q.files, 2);
        ASSERT_EQ(q.extents, 2);
        ASSERT_EQ(q.discontinuities, 1);
        ASSERT_EQ(q.bytes, 1228800);
        ASSERT_EQ(q.span, 67108864);
        assert_ms(q.modeled_read_ms, 22.282);
}

TEST(short_and_long_gaps) {
        LayoutQuality q;

        /* 300 KiB at 1 MiB, then 300 KiB after a 60 KiB forward gap: the head reads over the gap.
         *   discontinuities 1, span 660 KiB = 675840, bytes 614400
         *   ms = 5.17 + 2.048 + 0.4096 + 2.048 = 9.6756 */
        const Extent gap60[] = {
                EXTENT(0, 1 * MiB, 300 * KiB),
                EXTENT(300 * KiB, 1 * MiB + 360 * KiB, 300 * KiB),
        };
        const Extent *f60[] = { gap60 };
        walk(f60, (const size_t[]) { 2 }, 1, &q);
        ASSERT_EQ(q.discontinuities, 1);
        ASSERT_EQ(q.span, 675840);
        ASSERT_EQ(q.bytes, 614400);
        assert_ms(q.modeled_read_ms, 9.6756);

        /* Exactly 64 KiB is still a short gap: 65536 / 150000 ms = 0.436906666... ms
         *   ms = 5.17 + 2.048 + 0.4369066667 + 2.048 = 9.7029066667 */
        const Extent gap64[] = {
                EXTENT(0, 1 * MiB, 300 * KiB),
                EXTENT(300 * KiB, 1 * MiB + 364 * KiB, 300 * KiB),
        };
        const Extent *f64[] = { gap64 };
        walk(f64, (const size_t[]) { 2 }, 1, &q);
        ASSERT_EQ(q.discontinuities, 1);
        assert_ms(q.modeled_read_ms, 5.17 + 2.048 + 65536.0 / 150000.0 + 2.048);

        /* The same with a 100 KiB gap: a seek of 102400 bytes (5.316484375, see seek_formula).
         *   discontinuities 1, span 700 KiB = 716800
         *   ms = 5.17 + 2.048 + 5.316484375 + 2.048 = 14.582484375 */
        const Extent gap100[] = {
                EXTENT(0, 1 * MiB, 300 * KiB),
                EXTENT(300 * KiB, 1 * MiB + 400 * KiB, 300 * KiB),
        };
        const Extent *f100[] = { gap100 };
        walk(f100, (const size_t[]) { 2 }, 1, &q);
        ASSERT_EQ(q.discontinuities, 1);
        ASSERT_EQ(q.span, 716800);
        assert_ms(q.modeled_read_ms, 14.582484375);
}

TEST(span) {
        /* Files out of physical order: A 300 KiB at 10 MiB, B 300 KiB at 2 MiB, C 75 KiB at 20 MiB.
         *   lo = 2 MiB = 2097152, hi = 20 MiB + 76800 = 21048320, span = 18951168
         *   discontinuities 2 (A->B backward, B->C forward far), bytes 691200
         *   ms = 5.17 + 2.048
         *        + seek(10 MiB + 300 KiB - 2 MiB = 8695808)  = 1 + 15 * sqrt(0.0080986) + 4.17 = 6.5198835
         *        + 2.048
         *        + seek(20 MiB - (2 MiB + 300 KiB) = 18567168) = 1 + 15 * sqrt(0.0172920) + 4.17 = 7.1424870
         *        + 0.512
         *      = 23.4403706 */
        const Extent a[] = { EXTENT(0, 10 * MiB, 300 * KiB) };
        const Extent b[] = { EXTENT(0, 2 * MiB, 300 * KiB) };
        const Extent c[] = { EXTENT(0, 20 * MiB, 75 * KiB) };
        const Extent *files[] = { a, b, c };
        const size_t n[] = { 1, 1, 1 };
        LayoutQuality q;

        walk(files, n, 3, &q);
        ASSERT_EQ(q.files, 3);
        ASSERT_EQ(q.discontinuities, 2);
        ASSERT_EQ(q.bytes, 691200);
        ASSERT_EQ(q.span, 18951168);
        assert_near(q.modeled_read_ms, 23.4403706, 1e-6);
        assert_ms(q.modeled_read_ms, 5.17 + 2.048 + 1 + 15 * sqrt(8695808.0 / D) + 4.17 + 2.048 + 1 +
                                             15 * sqrt(18567168.0 / D) + 4.17 + 0.512);
}

TEST(no_blocks) {
        LayoutQuality q;

        /* Nothing at all: everything 0, including the model (no first seek). */
        walk(NULL, NULL, 0, &q);
        ASSERT_EQ(q.files, 0);
        ASSERT_EQ(q.extents, 0);
        ASSERT_EQ(q.span, 0);
        ASSERT_TRUE(q.modeled_read_ms == 0);

        /* A (300 KiB at 1 MiB), an empty file, a file with only a delayed-allocation extent (physical unknown,
         * reported as 0) and one inline, then B right after A: the three in between contribute nothing, so it
         * is the contiguous case: files 2, extents 2, discontinuities 0, span 600 KiB = 614400,
         * ms = 5.17 + 2.048 + 2.048 = 9.266 */
        const Extent a[] = { EXTENT(0, 1 * MiB, 300 * KiB) };
        const Extent delalloc[] = {
                { .logical = 0, .physical = 0, .length = 8192,
                  .flags = FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_LAST },
        };
        const Extent inl[] = {
                { .logical = 0, .physical = 5000, .length = 60,
                  .flags = FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_NOT_ALIGNED | FIEMAP_EXTENT_LAST },
        };
        const Extent b[] = { EXTENT(0, 1 * MiB + 300 * KiB, 300 * KiB) };
        const Extent *files[] = { a, NULL, delalloc, inl, b };
        const size_t n[] = { 1, 0, 1, 1, 1 };

        walk(files, n, ELEMENTSOF(files), &q);
        ASSERT_EQ(q.files, 2);
        ASSERT_EQ(q.extents, 2);
        ASSERT_EQ(q.discontinuities, 0);
        ASSERT_EQ(q.bytes, 614400);
        ASSERT_EQ(q.span, 614400);
        assert_ms(q.modeled_read_ms, 9.266);
}

TEST(requests) {
        /* r0: 300 KiB at 1048576                       first: 5.17 + 2.048            next = 1355776
         * r1: 300 KiB at 1355776                       contiguous: 2.048              next = 1662976
         * r2: 75 KiB at 1662976 + 61440 = 1724416      60 KiB gap: 0.4096 + 0.512     next = 1801216
         * r3: 75 KiB at 1801216 + 102400 = 1903616     100 KiB gap: 5.316484375 + 0.512
         * total = 5.17 + 2.048 + 2.048 + 0.4096 + 0.512 + 5.316484375 + 0.512 = 16.016084375 */
        const uint64_t off[] = { 1048576, 1355776, 1724416, 1903616 };
        const uint64_t len[] = { 300 * KiB, 300 * KiB, 75 * KiB, 75 * KiB };

        assert_ms(layout_model_requests_ms(off, len, ELEMENTSOF(off), D), 16.016084375);

        /* Backward: 600 KiB at 64 MiB, then 600 KiB at 614400 (as in backward_jump): 22.282 */
        const uint64_t off2[] = { 64 * MiB, 614400 };
        const uint64_t len2[] = { 600 * KiB, 600 * KiB };
        assert_ms(layout_model_requests_ms(off2, len2, 2, D), 22.282);

        /* A single request: 5.17 + 0.512 = 5.682; none: 0. */
        assert_ms(layout_model_requests_ms(off, (const uint64_t[]) { 75 * KiB }, 1, D), 5.682);
        assert_ms(layout_model_requests_ms(NULL, NULL, 0, D), 0);
}

/* A real file on the filesystem of /tmp. */
static bool fiemap_unsupported(int r) {
        return r == -EOPNOTSUPP || r == -ENOTTY || r == -EINVAL;
}

static Extent *extents_free(Extent *e) {
        free(e);
        return NULL;
}

static int make_temp_dir(char *buf, size_t size) {
        const char *tmp = getenv("TMPDIR");

        if (isempty(tmp))
                tmp = "/tmp";
        if ((size_t) snprintf(buf, size, "%s/test-layout.XXXXXX", tmp) >= size)
                return -ENAMETOOLONG;
        if (!mkdtemp(buf))
                return negative_errno();
        return 0;
}

TEST(fiemap_real) {
        char dir[4096], path[4096 + 32], sparse[4096 + 32], empty[4096 + 32];
        _cleanup_free_ char *buf = NULL;
        _cleanup_free_ Extent *extents = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t n = 99;
        uint64_t sum = 0, expect_logical = 0;
        int r;

        ASSERT_OK(make_temp_dir(dir, sizeof(dir)));
        snprintf(path, sizeof(path), "%s/data", dir);
        snprintf(sparse, sizeof(sparse), "%s/sparse", dir);
        snprintf(empty, sizeof(empty), "%s/empty", dir);

        /* 1 MiB of non-zero data, fsynced so that the blocks are allocated (we never ask FIEMAP to sync). */
        buf = malloc(MiB);
        ASSERT_TRUE(buf);
        memset(buf, 0x5a, MiB);
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        ASSERT_OK(fd);
        ASSERT_EQ(write(fd, buf, MiB), (ssize_t) MiB);
        ASSERT_OK(fsync(fd));

        r = fiemap_get(fd, &extents, &n);
        if (fiemap_unsupported(r)) {
                fprintf(stderr, "   FIEMAP not supported on %s, skipping\n", dir);
                (void) unlink(path);
                (void) rmdir(dir);
                exit(EXIT_TEST_SKIP);
        }
        ASSERT_OK(r);
        ASSERT_TRUE(n > 0);
        ASSERT_TRUE(extents);
        for (size_t i = 0; i < n; i++) {
                fprintf(stderr, "   extent %zu: logical %llu physical %llu length %llu flags 0x%x\n", i,
                        (unsigned long long) extents[i].logical, (unsigned long long) extents[i].physical,
                        (unsigned long long) extents[i].length, extents[i].flags);
                /* No holes: each extent starts where the previous one ended, from 0. */
                ASSERT_EQ(extents[i].logical, expect_logical);
                expect_logical += extents[i].length;
                sum += extents[i].length;
        }
        ASSERT_TRUE(sum >= MiB);
        ASSERT_TRUE(expect_logical >= MiB);
        ASSERT_TRUE(extents[n - 1].flags & FIEMAP_EXTENT_LAST);

        /* Walked: all of it counted. */
        LayoutWalker w;
        LayoutQuality q;
        layout_walker_init(&w, D);
        layout_walker_add_file(&w, extents, n);
        layout_walker_finish(&w, &q);
        ASSERT_EQ(q.files, 1);
        ASSERT_EQ(q.extents, n);
        ASSERT_EQ(q.bytes, sum);
        ASSERT_TRUE(q.modeled_read_ms >= 5.17 + sum / 150000.0 - 1e-9);
        fd = safe_close(fd);
        extents = extents_free(extents);

        /* 100 separate 4 KiB blocks, one every 64 KiB: more extents than one FIEMAP call asks for. */
        fd = open(sparse, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        ASSERT_OK(fd);
        for (unsigned i = 0; i < 100; i++)
                ASSERT_EQ(pwrite(fd, buf, 4096, (off_t) i * 64 * KiB), 4096);
        ASSERT_OK(fsync(fd));
        ASSERT_OK(fiemap_get(fd, &extents, &n));
        ASSERT_EQ(n, 100);
        for (size_t i = 0; i < n; i++) {
                ASSERT_EQ(extents[i].logical, i * 64 * KiB);
                ASSERT_EQ(extents[i].length, 4096);
        }
        ASSERT_TRUE(extents[n - 1].flags & FIEMAP_EXTENT_LAST);
        fd = safe_close(fd);
        extents = extents_free(extents);

        /* An empty file has no extents. */
        fd = open(empty, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        ASSERT_OK(fd);
        n = 99;
        ASSERT_OK(fiemap_get(fd, &extents, &n));
        ASSERT_EQ(n, 0);
        ASSERT_TRUE(!extents);

        ASSERT_OK(unlink(path));
        ASSERT_OK(unlink(sparse));
        ASSERT_OK(unlink(empty));
        ASSERT_OK(rmdir(dir));
}

int main(void) {
        RUN(seek_formula);
        RUN(contiguous);
        RUN(backward_jump);
        RUN(short_and_long_gaps);
        RUN(span);
        RUN(no_blocks);
        RUN(requests);
        RUN(fiemap_real);
        return EXIT_SUCCESS;
}
