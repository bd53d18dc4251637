/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Why a filesystem on a device is not watched (what seeklessctl status says of it); where more than one
 * holds, the first. */
typedef enum Unwatched {
        UNWATCHED_NOT_EXT4,     /* "not ext4" */
        UNWATCHED_READ_ONLY,    /* "mounted read-only": its superblock (every mount of it) */
        UNWATCHED_NOT_GIVEN,    /* "not given with --filesystem=" (the daemon watches only those) */
        UNWATCHED_SAME_UUID,    /* "same UUID as a watched filesystem": another one has its fsid (a copy of
                                 * it mounted beside it); file handles would name files of both */
        _UNWATCHED_MAX,
        _UNWATCHED_INVALID = -EINVAL,
} Unwatched;

const char *unwatched_to_string(Unwatched u);

/* The filesystems seeklessd watches: every read-write ext4 filesystem in /proc/self/mountinfo, deduplicated
 * by device (bind mounts and other mounts of the same superblock count once), or only those given with
 * --filesystem=, pinned when they were given (FilesystemPins). */
typedef struct Filesystem {
        dev_t dev;
        uint64_t fsid;          /* statfs f_fsid: what fanotify reports in FID records */
        char *mount;            /* one mount point of it */
        char *fstype;
        bool read_only;
        bool whole;             /* the mount shows the filesystem's root (not a bind of a subdirectory) */
        Unwatched unwatched;    /* in a list of filesystems not watched: why */
} Filesystem;

typedef struct FilesystemList {
        Filesystem *items;
        size_t n, allocated;
} FilesystemList;

void filesystem_list_clear(FilesystemList *l);
/* A deep copy, for a thread that must not see the list change under it. */
int filesystem_list_copy(const FilesystemList *l, FilesystemList *ret);

/* Filesystems given by a path, pinned by identity when given: the fsid of the filesystem the path led to
 * then (statfs f_fsid; ext4 derives it from the filesystem's UUID). A scan later finds that filesystem
 * wherever and whenever it is mounted, and nothing when it is not: never what the path leads to after an
 * unmount (the root filesystem under the mount point). */
typedef struct FilesystemPins {
        uint64_t *fsid;
        size_t n;
} FilesystemPins;

/* Pins the filesystems of paths (NULL-terminated). On failure *ret_failed is the path that failed. */
int filesystem_pins_make(char *const *paths, FilesystemPins *ret, const char **ret_failed);
void filesystem_pins_clear(FilesystemPins *p);

/* Parse a mountinfo file (normally /proc/self/mountinfo) into the list of candidate filesystems: ext4,
 * mounted read-write, one entry per device, and one per fsid: of two filesystems with the same fsid (the
 * same UUID: a copy of an image or a partition), the one listed first (mounted first) is watched. `only`
 * (may be NULL: every one) restricts the result to the pinned filesystems. With ret_unwatched, also the
 * other filesystems on a device (a mount source in /dev: not proc, tmpfs, overlays, network filesystems,
 * ...), one entry per device, each with why it is not watched; mount points this process cannot reach are
 * in neither list. Returns 0 or a negative errno. */
int mounts_scan(const char *mountinfo, const FilesystemPins *only, FilesystemList *ret,
                FilesystemList *ret_unwatched);

const Filesystem *filesystem_list_find_fsid(const FilesystemList *l, uint64_t fsid);
const Filesystem *filesystem_list_find_dev(const FilesystemList *l, dev_t dev);

/* statfs(path).f_fsid as fanotify reports it. */
int fsid_of_path(const char *path, uint64_t *ret);
int fsid_of_fd(int fd, uint64_t *ret);

/* An absolute path with "//", "/./" and a trailing "/" taken out ("/mnt//img/" is "/mnt/img"), in place.
 * -EINVAL for a relative path or one with a ".." component (which only the caller's filesystem view could
 * resolve). */
int mount_path_normalize(char *path);

/* /sys/fs/ext4/<name> of a block device, NULL if it can't be found. */
char *ext4_sysfs_dir(dev_t dev);

/* The size of a block device in bytes, from sysfs: where FIEMAP's physical offsets on a filesystem on it
 * can lie (statfs's f_blocks leaves out the filesystem's own metadata, so it is less). */
int block_device_bytes(dev_t dev, uint64_t *ret);
