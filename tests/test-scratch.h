/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Scratch directories of the tests that make filesystem images, the C side of tests/scratch.sh (same
 * rules, same owner file): where they go, and who owns them, so that tests/reap.sh can tell what a killed
 * run left behind from what a live run still uses. */

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

/* $SEEKLESS_TEST_SCRATCH; else /dev/shm when it is a tmpfs with 4 GiB free: the images then live in
 * memory, so a test's duration does not depend on the disk under /tmp, nor on another run writing to it;
 * else /tmp. */
static inline const char *test_scratch_root(void) {
        const char *e = getenv("SEEKLESS_TEST_SCRATCH");
        struct statfs s;

        if (e && *e)
                return e;
        if (statfs("/dev/shm", &s) == 0 && s.f_type == TMPFS_MAGIC &&
            (unsigned long long) s.f_bavail * (unsigned long long) s.f_bsize >= 4ULL << 30 &&
            access("/dev/shm", W_OK) == 0)
                return "/dev/shm";
        return "/tmp";
}

/* Writes DIR/.owner: this process's pid and start time (field 22 of /proc/self/stat). tests/reap.sh
 * removes a scratch directory whose owner is no longer running. Returns 0, or -1. */
static inline int test_claim_dir(const char *dir) {
        char stat[1024], path[4096], *p;
        unsigned long long start = 0;
        size_t n;
        FILE *f;

        f = fopen("/proc/self/stat", "re");
        if (!f)
                return -1;
        n = fread(stat, 1, sizeof stat - 1, f);
        fclose(f);
        stat[n] = 0;
        p = strrchr(stat, ')');
        if (!p)
                return -1;
        /* the space after ")" starts field 3 (state): 20 spaces on, field 22 */
        for (int field = 2; p && field < 22; field++)
                p = strchr(p + 1, ' ');
        if (!p || sscanf(p + 1, "%llu", &start) != 1)
                return -1;
        snprintf(path, sizeof path, "%s/.owner", dir);
        f = fopen(path, "we");
        if (!f)
                return -1;
        fprintf(f, "%d %llu\n", (int) getpid(), start);
        return fclose(f) == 0 ? 0 : -1;
}

#ifdef TEST_SCRATCH_SH
/* When this process is gone, however it ended (meson's timeout sends SIGTERM, then SIGKILL to the whole
 * process group half a second later, which may find it in a write throttled by the kernel), what it left
 * in DIR is unmounted, detached and removed by scratch_guard of tests/scratch.sh, in a session of its own.
 * Returns 0, or -1. */
static inline int test_guard_dir(const char *dir) {
        char cmd[8192];

        snprintf(cmd, sizeof cmd, "bash -c '. \"$0\" && scratch_guard \"$1\" \"$2\"' '%s' '%s' %d",
                 TEST_SCRATCH_SH, dir, (int) getpid());
        return system(cmd) == 0 ? 0 : -1;
}
#endif
