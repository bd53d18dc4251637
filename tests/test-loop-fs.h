/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Scratch ext4 filesystems on loop devices for the C tests (root): made in a scratch directory claimed and
 * guarded as tests/scratch.sh does (test-scratch.h: whatever a killed test leaves is unmounted, detached
 * by name and removed), torn down at exit also when an assertion fails. */

#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/macro.h"
#include "test-scratch.h"
#include "test-util.h"

#define LOOP_FS_MAX 8

typedef struct LoopFs {
        char img[512], mnt[512], dev[64];
        char sysfs[128];                /* its ext4 tunables: /sys/fs/ext4/loopN */
        bool mounted;
        int mount_fd;                   /* the mount's root directory */
        const char *options;            /* mount options (ext4's data string), NULL: none */
} LoopFs;

static char loop_fs_dir[256];
static LoopFs *loop_fs_all[LOOP_FS_MAX];

_printf_(1, 2) static inline int loop_fs_sh(const char *fmt, ...) {
        char cmd[2048];
        va_list ap;
        int r;

        va_start(ap, fmt);
        vsnprintf(cmd, sizeof cmd, fmt, ap);
        va_end(ap);
        r = system(cmd);
        return r < 0 || !WIFEXITED(r) ? -1 : WEXITSTATUS(r);
}

static inline void loop_fs_unmount(LoopFs *fs) {
        if (fs->mount_fd >= 0) {
                close(fs->mount_fd);
                fs->mount_fd = -1;
        }
        if (!fs->mounted)
                return;
        for (int i = 0; i < 20 && umount(fs->mnt) < 0; i++)
                usleep(100 * 1000);
        if (umount2(fs->mnt, MNT_DETACH) < 0 && errno != EINVAL)
                fprintf(stderr, "cleanup: umount %s: %m\n", fs->mnt);
        fs->mounted = false;
}

/* Unmounted and detached; its image stays until exit. */
static inline void loop_fs_teardown(LoopFs *fs) {
        loop_fs_unmount(fs);
        if (fs->dev[0] && loop_fs_sh("losetup -d '%s'", fs->dev) != 0)
                fprintf(stderr, "cleanup: losetup -d %s failed\n", fs->dev);
        fs->dev[0] = 0;
        for (size_t i = 0; i < LOOP_FS_MAX; i++)
                if (loop_fs_all[i] == fs)
                        loop_fs_all[i] = NULL;
}

static inline void loop_fs_cleanup(void) {
        for (size_t i = 0; i < LOOP_FS_MAX; i++)
                if (loop_fs_all[i])
                        loop_fs_teardown(loop_fs_all[i]);
        if (loop_fs_dir[0])
                (void) loop_fs_sh("rm -rf '%s'", loop_fs_dir);
        loop_fs_dir[0] = 0;
}

/* The scratch directory of this test program (made, claimed and guarded once), "" until then. */
static inline const char *loop_fs_scratch(const char *prog) {
        if (loop_fs_dir[0])
                return loop_fs_dir;
        snprintf(loop_fs_dir, sizeof loop_fs_dir, "%s/%s.XXXXXX", test_scratch_root(), prog);
        ASSERT_TRUE(mkdtemp(loop_fs_dir));
        atexit(loop_fs_cleanup);
        ASSERT_EQ(test_claim_dir(loop_fs_dir), 0);
        ASSERT_EQ(test_guard_dir(loop_fs_dir), 0);
        return loop_fs_dir;
}

static inline void loop_fs_mount(LoopFs *fs) {
        ASSERT_EQ(mount(fs->dev, fs->mnt, "ext4", 0, fs->options), 0);
        fs->mounted = true;
        fs->mount_fd = open(fs->mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(fs->mount_fd >= 0);
}

/* An ext4 of size_mb MiB (mkfs.ext4 -b 4096 and mkfs_args) named name, on a loop device, mounted with
 * options (NULL: none; kept for every later loop_fs_mount()). */
static inline void loop_fs_setup(LoopFs *fs, const char *prog, const char *name, unsigned size_mb,
                                 const char *mkfs_args, const char *options) {
        const char *dir = loop_fs_scratch(prog);
        char cmd[1024], *nl;
        size_t i;
        FILE *p;

        *fs = (LoopFs) { .mount_fd = -1, .options = options };
        for (i = 0; i < LOOP_FS_MAX && loop_fs_all[i]; i++)
                ;
        ASSERT_TRUE(i < LOOP_FS_MAX);
        loop_fs_all[i] = fs;
        snprintf(fs->img, sizeof fs->img, "%s/%s.img", dir, name);
        snprintf(fs->mnt, sizeof fs->mnt, "%s/%s", dir, name);
        ASSERT_EQ(mkdir(fs->mnt, 0755), 0);
        ASSERT_EQ(loop_fs_sh("truncate -s %uM '%s' && mkfs.ext4 -q -F -b 4096 %s '%s'", size_mb, fs->img,
                             mkfs_args ?: "", fs->img), 0);
        snprintf(cmd, sizeof cmd, "losetup --find --show '%s'", fs->img);
        p = popen(cmd, "r");
        ASSERT_TRUE(p);
        if (!fgets(fs->dev, sizeof fs->dev, p))
                fs->dev[0] = 0;
        pclose(p);
        nl = strchr(fs->dev, '\n');
        if (nl)
                *nl = 0;
        ASSERT_TRUE(strncmp(fs->dev, "/dev/loop", 9) == 0);
        snprintf(fs->sysfs, sizeof fs->sysfs, "/sys/fs/ext4/%s", fs->dev + 5);
        loop_fs_mount(fs);
        printf("  %s: %u MiB on %s at %s\n", name, size_mb, fs->dev, fs->mnt);
}

/* Unmounted, e2fsck -fn must find it clean (read through the loop device, which shows what the filesystem
 * wrote, whether or not the loop driver has written it into the image file yet); then detached. */
static inline void loop_fs_fsck(LoopFs *fs) {
        char dev[sizeof fs->dev];

        loop_fs_unmount(fs);
        snprintf(dev, sizeof dev, "%s", fs->dev);
        /* what it found, on a failure */
        ASSERT_EQ(loop_fs_sh("e2fsck -fn '%s' >'%s.fsck' 2>&1 || { cat '%s.fsck'; exit 1; }", dev, fs->img,
                             fs->img), 0);
        loop_fs_teardown(fs);
        printf("  e2fsck -fn %s: clean\n", dev);
}

/* Write the files round-robin in `chunk` pieces with fsync after each, so each ends up fragmented. */
static inline void write_interleaved(char **paths, const uint64_t *sizes, size_t n, size_t chunk) {
        int fds[64];
        uint64_t off[64] = {}, seed = 0x9e3779b97f4a7c15ULL;
        uint8_t *buf = malloc(chunk);
        bool more = true;

        ASSERT_TRUE(n <= 64 && buf);
        for (size_t i = 0; i < n; i++) {
                fds[i] = open(paths[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                ASSERT_TRUE(fds[i] >= 0);
        }
        while (more) {
                more = false;
                for (size_t i = 0; i < n; i++) {
                        size_t l;

                        if (off[i] >= sizes[i])
                                continue;
                        l = (size_t) MIN((uint64_t) chunk, sizes[i] - off[i]);
                        for (size_t j = 0; j < l; j++) {
                                seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                                buf[j] = (uint8_t) (seed >> 56);
                        }
                        ASSERT_EQ(pwrite(fds[i], buf, l, (off_t) off[i]), (ssize_t) l);
                        ASSERT_EQ(fsync(fds[i]), 0);
                        off[i] += l;
                        more = more || off[i] < sizes[i];
                }
        }
        for (size_t i = 0; i < n; i++)
                close(fds[i]);
        free(buf);
}
