/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The handful of helpers both binaries use. Written for seekless; libsystemd does not export these. */

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_ __attribute__((noreturn))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#define USEC_PER_SEC ((uint64_t) 1000000ULL)
#define USEC_PER_MINUTE (60 * USEC_PER_SEC)
#define USEC_PER_HOUR (60 * USEC_PER_MINUTE)
#define USEC_PER_DAY (24 * USEC_PER_HOUR)
#define USEC_PER_MSEC ((uint64_t) 1000ULL)
#define NSEC_PER_USEC ((uint64_t) 1000ULL)

/* Take ownership of *p, leaving NULL behind. */
#define TAKE_PTR(p)                             \
        ({                                      \
                __typeof__(p) _tp_ = (p);       \
                (p) = NULL;                     \
                _tp_;                           \
        })
#define TAKE_FD(fd)                             \
        ({                                      \
                int _tf_ = (fd);                \
                (fd) = -EBADF;                  \
                _tf_;                           \
        })

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -EBADF;
}
static inline void closep(int *fd) {
        (void) safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

static inline void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}
#define _cleanup_closedir_ _cleanup_(closedirp)

/* Define "funcp(type *p)" calling func(*p) if non-NULL, for use with _cleanup_(). */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)         \
        static inline void func##p(type *p) {           \
                if (*p)                                 \
                        func(*p);                       \
        }

static inline void strv_free(char **l) {
        if (!l)
                return;
        for (char **i = l; *i; i++)
                free(*i);
        free(l);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free);
#define _cleanup_strv_free_ _cleanup_(strv_freep)

static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

#define streq(a, b) (strcmp((a), (b)) == 0)
#define startswith(s, prefix) (strncmp((s), (prefix), strlen(prefix)) == 0)

/* An enum's string table: "static const char *const NAME_table[]" indexed by the enum. These define
 * NAME_to_string() (NULL out of range) and NAME_from_string() (-EINVAL for an unknown string or NULL), with
 * the given scope (nothing or static). */
#define DEFINE_STRING_TABLE_TO_STRING(name, type, scope)                                \
        scope const char *name##_to_string(type i) {                                    \
                if ((int) i < 0 || (size_t) i >= ELEMENTSOF(name##_table))              \
                        return NULL;                                                    \
                return name##_table[i];                                                 \
        }
#define DEFINE_STRING_TABLE_FROM_STRING(name, type, scope)                              \
        scope type name##_from_string(const char *s) {                                  \
                for (size_t i = 0; s && i < ELEMENTSOF(name##_table); i++)              \
                        if (name##_table[i] && streq(name##_table[i], s))               \
                                return (type) i;                                        \
                return (type) -EINVAL;                                                  \
        }
#define DEFINE_STRING_TABLE(name, type)                                                 \
        DEFINE_STRING_TABLE_TO_STRING(name, type, )                                     \
        DEFINE_STRING_TABLE_FROM_STRING(name, type, )

static inline int isempty(const char *s) {
        return !s || !s[0];
}

/* qsort() and bsearch() that take an empty array given as NULL (theirs must not be NULL, even when n is 0) */
static inline void qsort_safe(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
        if (n > 1)
                qsort(base, n, size, cmp);
}

static inline void *bsearch_safe(const void *key, const void *base, size_t n, size_t size,
                                 int (*cmp)(const void *, const void *)) {
        return n > 0 ? bsearch(key, base, n, size, cmp) : NULL;
}

/* for qsort()/bsearch() over uint64_t and int64_t */
static inline int cmp_uint64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

static inline int cmp_int64(const void *a, const void *b) {
        int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;

        return x < y ? -1 : x > y;
}

static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

static inline int strv_contains(char *const *l, const char *s) {
        for (size_t i = 0; l && l[i]; i++)
                if (streq(l[i], s))
                        return 1;
        return 0;
}
