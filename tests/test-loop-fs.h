/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Scratch ext4 filesystems on loop devices for the C tests (root): made in a scratch directory claimed and
 * guarded as tests/scratch.sh does (test-scratch.h: whatever a killed test leaves is unmounted, detached
 * by name and removed), torn down at exit also when an assertion fails. */

#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
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

/* Unmounted and detached, e2fsck -fn must find its image clean. */
static inline void loop_fs_fsck(LoopFs *fs) {
        loop_fs_teardown(fs);
        ASSERT_EQ(loop_fs_sh("e2fsck -fn '%s' >/dev/null 2>&1", fs->img), 0);
        printf("  e2fsck -fn %s: clean\n", fs->img);
}
