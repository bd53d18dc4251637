/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Minimal test helpers: each test program runs its TEST()s in order and exits 0, 1 on the first failed
 * assertion, or 77 (skip) via test_skip(). */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>

#define ASSERT_TRUE(expr)                                                                       \
        do {                                                                                    \
                if (!(expr)) {                                                                  \
                        fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #expr); \
                        exit(EXIT_FAILURE);                                                     \
                }                                                                               \
        } while (0)

#define ASSERT_OK(expr)                                                                         \
        do {                                                                                    \
                long long _r = (long long) (expr);                                              \
                if (_r < 0) {                                                                   \
                        fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr,    \
                                strerror((int) -_r));                                           \
                        exit(EXIT_FAILURE);                                                     \
                }                                                                               \
        } while (0)

#define ASSERT_ERROR(expr, err)                                                                 \
        do {                                                                                    \
                long long _r = (long long) (expr);                                              \
                if (_r != -(err)) {                                                             \
                        fprintf(stderr, "%s:%d: %s returned %lld, expected -%s\n", __FILE__,    \
                                __LINE__, #expr, _r, strerror(err));                            \
                        exit(EXIT_FAILURE);                                                     \
                }                                                                               \
        } while (0)

#define ASSERT_EQ(a, b)                                                                         \
        do {                                                                                    \
                long long _a = (long long) (a), _b = (long long) (b);                           \
                if (_a != _b) {                                                                 \
                        fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__,   \
                                __LINE__, #a, _a, #b, _b);                                      \
                        exit(EXIT_FAILURE);                                                     \
                }                                                                               \
        } while (0)

#define ASSERT_STREQ(a, b)                                                                      \
        do {                                                                                    \
                const char *_a = (a), *_b = (b);                                                \
                if (!_a || !_b || strcmp(_a, _b) != 0) {                                        \
                        fprintf(stderr, "%s:%d: \"%s\" != \"%s\"\n", __FILE__, __LINE__,        \
                                _a ?: "(null)", _b ?: "(null)");                                \
                        exit(EXIT_FAILURE);                                                     \
                }                                                                               \
        } while (0)

#define TEST(name) static void test_##name(void)
#define RUN(name)                                                                               \
        do {                                                                                    \
                fprintf(stderr, "-- %s\n", #name);                                              \
                test_##name();                                                                  \
        } while (0)

#define EXIT_TEST_SKIP 77

#define TEST_ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

/* Waits for the child pid, which must have exited with status 0. */
static inline void test_wait_child(pid_t pid) {
        int status;

        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* "<dir>/<name>" in one of a few rotating static buffers, so one call can take several. */
static inline const char *test_path(const char *dir, const char *name) {
        static char bufs[4][PATH_MAX];
        static unsigned i;
        char *buf = bufs[i++ % TEST_ELEMENTSOF(bufs)];

        snprintf(buf, PATH_MAX, "%s/%s", dir, name);
        return buf;
}

/* What a test prints into a memory stream: test_capture_begin() opens it, test_capture_end() closes it and
 * returns the text (free() it). */
typedef struct TestCapture {
        FILE *f;
        char *buf;
        size_t size;
} TestCapture;

static inline FILE *test_capture_begin(TestCapture *c) {
        *c = (TestCapture) {};
        c->f = open_memstream(&c->buf, &c->size);
        ASSERT_TRUE(c->f);
        return c->f;
}

static inline char *test_capture_end(TestCapture *c) {
        ASSERT_TRUE(fclose(c->f) == 0);
        return c->buf;
}

static inline void test_write_file(const char *path, const char *contents) {
        FILE *f = fopen(path, "we");

        ASSERT_TRUE(f);
        ASSERT_TRUE(fputs(contents, f) >= 0);
        ASSERT_TRUE(fclose(f) == 0);
}
