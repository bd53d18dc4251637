/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/macro.h"
#include "common/time-util.h"
#include "fs/block-device.h"
#include "fs/mounts.h"
#include "initramfs/initramfs-prefetch.h"
#include "policy/idle.h"
#include "prefetch/prefetch-guard.h"
#include "prefetch/prefetch-plan.h"
#include "prefetch/prefetch-profile.h"

#define BOOT_PROFILE "boot"

int initramfs_prefetch(const InitramfsPrefetchOptions *o, PrefetchStats *ret_stats, const char **ret_skipped) {
        _cleanup_close_ int mount_fd = -EBADF, bdev_fd = -EBADF;
        PrefetchGuard guard = { .min_available_bytes = o->min_available_bytes };
        PrefetchProfile pp = {};
        PrefetchPlan *plan = NULL;
        PrefetchVeto veto;
        bool rotational = true;
        struct stat st;
        uint64_t fsid;
        int r;

        *ret_stats = (PrefetchStats) {};
        *ret_skipped = NULL;
        mount_fd = open(o->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (mount_fd < 0)
                return log_error_errno(-errno, "read-ahead: cannot open %s: %m", o->root);
        if (fstat(mount_fd, &st) < 0 || fsid_of_fd(mount_fd, &fsid) < 0)
                return log_error_errno(-errno, "read-ahead: cannot identify the filesystem at %s: %m", o->root);
        r = block_device_rotational(o->sysfs ?: "/sys", st.st_dev, &rotational);
        if (r < 0)
                rotational = true;      /* not known: as the daemon takes it */
        if (!rotational && !o->non_rotational) {
                *ret_skipped = "the root filesystem's device is not rotational (PrefetchNonRotational=no)";
                return 0;
        }
        veto = prefetch_guard_check(&guard, NULL, NULL);
        if (veto != PREFETCH_VETO_NONE) {
                *ret_skipped = veto == PREFETCH_VETO_LOW_MEMORY ? "low memory (PrefetchMinAvailableMiB=)"
                                                                : prefetch_veto_to_string(veto);
                return 0;
        }

        r = prefetch_profile_load(o->db, BOOT_PROFILE, fsid, &pp);
        if (r == -ENOENT) {
                *ret_skipped = "no boot profile yet";
                return 0;
        }
        if (r < 0)
                return log_error_errno(r, "read-ahead: cannot read the boot profile: %m");
        if (pp.input.n_data == 0 && pp.input.n_metadata == 0) {
                prefetch_profile_done(&pp);
                *ret_skipped = "nothing of the boot profile on the root filesystem";
                return 0;
        }
        /* without the device, the data only */
        bdev_fd = block_device_open(st.st_dev);
        if (bdev_fd < 0)
                log_info_errno(bdev_fd, "read-ahead: cannot open the root filesystem's device, its data only: %m");
        r = prefetch_plan_build(mount_fd, &pp.input, rotational ? PREFETCH_ORDER_DISK : PREFETCH_ORDER_RECORDED,
                                NULL, o->deadline_usec, &plan);
        prefetch_profile_done(&pp);
        if (r < 0)
                return log_error_errno(r, "read-ahead: cannot plan the boot profile: %m");
        r = prefetch_run(plan, &(PrefetchOptions) {
                                 .mount_fd = mount_fd,
                                 .bdev_fd = bdev_fd,
                                 .chunk_bytes = prefetch_chunk_bytes(bdev_fd),
                                 .max_bytes = o->max_bytes,
                                 .deadline_usec = o->deadline_usec,
                                 .should_stop = prefetch_guard_should_stop,
                                 .userdata = &guard,
                         }, ret_stats);
        prefetch_plan_free(plan);
        if (r < 0)
                return log_error_errno(r, "read-ahead: failed: %m");
        return 0;
}
