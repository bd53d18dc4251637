/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc-util.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/macro.h"
#include "common/time-util.h"
#include "fs/block-device.h"
#include "fs/mounts.h"
#include "initramfs/initramfs-early.h"
#include "initramfs/initramfs-util.h"
#include "relocate/early.h"

#ifndef ST_NOSYMFOLLOW
#define ST_NOSYMFOLLOW 0x2000
#endif
#ifndef MS_NOSYMFOLLOW
#define MS_NOSYMFOLLOW 256
#endif

/* Less than this is not worth a read-write remount. */
#define MIN_BUDGET_USEC (100 * USEC_PER_MSEC)

/* statvfs()'s flags of a mount as mount(2)'s: a remount that leaves one out clears it. */
static unsigned long mount_flags_of(unsigned long st) {
        static const struct {
                unsigned long st, ms;
        } map[] = {
                { ST_NOSUID, MS_NOSUID },         { ST_NODEV, MS_NODEV },
                { ST_NOEXEC, MS_NOEXEC },         { ST_SYNCHRONOUS, MS_SYNCHRONOUS },
                { ST_MANDLOCK, MS_MANDLOCK },     { ST_NOATIME, MS_NOATIME },
                { ST_NODIRATIME, MS_NODIRATIME }, { ST_RELATIME, MS_RELATIME },
                { ST_NOSYMFOLLOW, MS_NOSYMFOLLOW },
        };
        unsigned long ms = 0;

        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                if (st & map[i].st)
                        ms |= map[i].ms;
        return ms;
}

/* Why the root may not be written now, or NULL. */
static const char *refusal(const InitramfsEarlyOptions *o, dev_t dev) {
        _cleanup_close_ int bdev = -EBADF;
        _cleanup_free_ char *sysfs = NULL;
        uint8_t b[EXT4_SUPER_SIZE];
        Ext4Super s;
        const char *why;
        char path[512], v[32];

        if (o->force_fsck)
                return "the kernel command line asks for a check (fsck.mode=force or forcefsck)";
        if (o->budget_usec < MIN_BUDGET_USEC)
                return "no time for it (EarlyBudgetSec=0, or the stage's time limit near)";
        bdev = block_device_open(dev);
        if (bdev < 0)
                return "its device cannot be opened";
        if (pread(bdev, b, sizeof b, EXT4_SUPER_OFFSET) != (ssize_t) sizeof b || ext4_super_parse(b, &s) < 0)
                return "its superblock cannot be read as ext4's";
        why = ext4_super_unclean(&s, time(NULL));
        if (why) {
                static char buf[128];

                snprintf(buf, sizeof buf, "its superblock says it %s", why);
                return buf;
        }
        /* what the kernel counted since the mount, not yet in the superblock */
        sysfs = ext4_sysfs_dir(dev);
        if (sysfs && (size_t) snprintf(path, sizeof path, "%s/errors_count", sysfs) < sizeof path &&
            read_small_file(path, v, sizeof v) > 0 && strtoull(v, NULL, 10) > 0)
                return "the kernel counted errors on it since it was mounted";
        return NULL;
}

static int remount(const char *root, unsigned long flags) {
        /* a writer that just closed may keep it busy for a moment */
        for (unsigned i = 0;; i++) {
                if (mount(NULL, root, NULL, MS_REMOUNT | flags, NULL) >= 0)
                        return 0;
                if (errno != EBUSY || i >= 20)
                        return -errno;
                (void) usleep(50 * 1000);
        }
}

int initramfs_early(const InitramfsEarlyOptions *o, InitramfsEarlyResult *ret) {
        _cleanup_free_ char *db_path = NULL;
        FilesystemPins pins = {};
        struct statvfs sv;
        struct stat st;
        uint64_t fsid;
        unsigned long flags;
        int r, r2;

        *ret = (InitramfsEarlyResult) {};
        if (statvfs(o->root, &sv) < 0 || stat(o->root, &st) < 0 || fsid_of_path(o->root, &fsid) < 0)
                return log_error_errno(-errno, "early pass: cannot look at %s: %m", o->root);
        if (!(sv.f_flag & ST_RDONLY)) {
                ret->skipped = "the root filesystem is mounted read-write already (written before its check)";
                return 0;
        }
        ret->skipped = refusal(o, st.st_dev);
        if (ret->skipped)
                return 0;
        if (asprintf(&db_path, "%s/seekless.db", o->state_dir) < 0)
                return -ENOMEM;

        flags = mount_flags_of(sv.f_flag);
        r = remount(o->root, flags);
        if (r < 0)
                return log_error_errno(r, "early pass: cannot remount %s read-write: %m", o->root);
        log_notice("early pass: %s remounted read-write for at most %.1f s", o->root, o->budget_usec / 1e6);

        pins.fsid = &fsid;
        pins.n = 1;
        r = early_pass_run(&(EarlyPassOptions) {
                .budget_usec = o->budget_usec,
                .db_path = db_path,
                .state_dir = o->state_dir,
                .only_filesystems = &pins,
                .mount_as = "/",
                .no_execs = true,
                .ret_moved = &ret->moved,
                .ret_stopped = &ret->stopped,
        });

        /* on the disk before the switch, and read-only again as the boot's check expects it */
        {
                int fd = open(o->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                if (fd >= 0) {
                        (void) syncfs(fd);
                        close(fd);
                }
        }
        r2 = remount(o->root, flags | MS_RDONLY);
        if (r2 < 0) {
                ret->left_rw = true;
                log_error_errno(r2, "early pass: cannot remount %s read-only again, it stays read-write: %m", o->root);
        } else
                log_info("early pass: %s read-only again", o->root);
        return r < 0 ? r : r2;
}
