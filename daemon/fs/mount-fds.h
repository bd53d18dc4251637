/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Opens a directory fd on the filesystem fsid (its mount point; the caller closes it), or returns a
 * negative errno (-ENODEV: not mounted now). */
typedef int (*MountFdOpenFn)(uint64_t fsid, void *userdata);

/* One mount fd per filesystem for the duration of one pass over many file handles: each is opened once,
 * on first use, and closed by mount_fds_done(). Not held longer, since an open fd keeps the filesystem
 * busy for umount. Set open (and userdata), the rest starts zeroed:
 *         _cleanup_(mount_fds_done) MountFds fds = { .open = fn, .userdata = u }; */
typedef struct MountFds {
        MountFdOpenFn open;
        void *userdata;

        uint64_t *fsid;
        int *fd;
        size_t n, allocated_fsid, allocated_fd;
} MountFds;

/* The fd of filesystem fsid (owned by the cache), or a negative errno from open (not cached: a later
 * call tries again), -ENOMEM. */
int mount_fds_get(MountFds *c, uint64_t fsid);
/* Closes every fd; the cache can be used again. */
void mount_fds_done(MountFds *c);
