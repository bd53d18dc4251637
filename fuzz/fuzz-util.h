/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* What the fuzz targets share: one scratch directory per process (under $TMPDIR, else /tmp; removed at
 * exit), writing an input into a file there, and quiet logging. Each target defines
 * LLVMFuzzerTestOneInput(); libFuzzer calls it (a clang build with -Dfuzz=enabled), and so does
 * replay.c, which replays committed inputs in the unit suite with any compiler. */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Aborts, which libFuzzer and the replay both report as a failure of the input (with its stack). */
#define FUZZ_ASSERT(expr)                                                                       \
        do {                                                                                    \
                if (!(expr)) {                                                                  \
                        fprintf(stderr, "%s:%d: fuzz assertion failed: %s\n", __FILE__, __LINE__, #expr); \
                        abort();                                                                \
                }                                                                               \
        } while (0)

static char fuzz_scratch[4096];

static inline int fuzz_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) remove(path);
        return 0;
}

static inline void fuzz_scratch_remove(void) {
        if (fuzz_scratch[0])
                (void) nftw(fuzz_scratch, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The process's scratch directory, made at the first call; aborts if it can't be. */
static inline const char *fuzz_dir(void) {
        const char *t;

        if (fuzz_scratch[0])
                return fuzz_scratch;
        t = getenv("TMPDIR");
        snprintf(fuzz_scratch, sizeof fuzz_scratch, "%s/seekless-fuzz.XXXXXX", t && *t ? t : "/tmp");
        FUZZ_ASSERT(mkdtemp(fuzz_scratch));
        atexit(fuzz_scratch_remove);
        return fuzz_scratch;
}

/* A path in the scratch directory (a static buffer per call site is the caller's business). */
static inline void fuzz_path(char *buf, size_t n, const char *name) {
        FUZZ_ASSERT((size_t) snprintf(buf, n, "%s/%s", fuzz_dir(), name) < n);
}

/* Writes data[0..size) to path, replacing it. Aborts on failure: the harness, not the input, is broken. */
static inline void fuzz_write(const char *path, const void *data, size_t size) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        const uint8_t *p = data;

        FUZZ_ASSERT(fd >= 0);
        while (size > 0) {
                ssize_t k = write(fd, p, size);
                FUZZ_ASSERT(k > 0);
                p += k;
                size -= (size_t) k;
        }
        FUZZ_ASSERT(close(fd) == 0);
}

/* The daemon's info and debug lines would flood a run: errors only, everything with FUZZ_VERBOSE=1. */
#define fuzz_verbose() (getenv("FUZZ_VERBOSE") != NULL)

static inline void fuzz_log_setup(void) {
        log_set_max_level(fuzz_verbose() ? LOG_DEBUG : LOG_ERR);
}

/* Around a call that logs whatever the level (the configuration's syntax warnings): its stderr goes to
 * /dev/null unless FUZZ_VERBOSE=1, while the checks' and the sanitizers' messages still reach the log. */
static inline int fuzz_stderr_off(void) {
        int saved, null;

        if (fuzz_verbose())
                return -EBADF;
        fflush(stderr);
        saved = dup(STDERR_FILENO);
        null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        FUZZ_ASSERT(saved >= 0 && null >= 0 && dup2(null, STDERR_FILENO) == STDERR_FILENO);
        close(null);
        return saved;
}

static inline void fuzz_stderr_on(int saved) {
        if (saved < 0)
                return;
        fflush(stderr);
        FUZZ_ASSERT(dup2(saved, STDERR_FILENO) == STDERR_FILENO);
        close(saved);
}
