/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A profile's extents before the last run and now (layout-extents.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "common/alloc-util.h"
#include "common/macro.h"
#include "fs/fid-util.h"
#include "fs/fiemap.h"
#include "plan/hot-ranges.h"
#include "plan/layout.h"
#include "plan/layout-extents.h"

void layout_extents_done(LayoutExtents *l) {
        l->before = mfree(l->before);
        l->now = mfree(l->now);
        *l = (LayoutExtents) {};
}

static int layout_add(LayoutExtent **l, size_t *n, size_t *allocated, uint32_t index, uint64_t physical,
                      uint64_t length) {
        if (GREEDY_REALLOC(*l, *allocated, *n + 1) < 0)
                return -ENOMEM;
        (*l)[(*n)++] = (LayoutExtent) { index, physical, length };
        return 0;
}

static int open_mount_of(const FilesystemList *l, uint64_t fsid) {
        const Filesystem *fs = filesystem_list_find_fsid(l, fsid);
        int fd;

        if (!fs)
                return -ENODEV;
        fd = open(fs->mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

int layout_extents_get(Db *db, const char *profile, const FilesystemList *filesystems,
                       const atomic_bool *cancel, LayoutExtents *ret) {
        _cleanup_(layout_extents_done) LayoutExtents l = {};
        _cleanup_free_ DbProfileRange *ranges = NULL;
        DbProfileFile *f = NULL;
        size_t n = 0, n_ranges = 0;
        int r;

        r = db_get_profile(db, profile, NULL, &f, &n);
        if (r < 0)
                return r;
        /* now: the profile's hot ranges only (a file read whole is one range) */
        r = db_get_profile_ranges(db, profile, f, n, &ranges, &n_ranges);
        if (r == -ENOENT)
                r = hot_ranges_whole(f, n, &ranges, &n_ranges);
        if (r < 0) {
                db_profile_files_free(f, n);
                return r;
        }
        /* device size: the block device of the first file's filesystem, else what statfs counts of it */
        for (size_t i = 0; i < n && l.device == 0; i++) {
                const Filesystem *fs = filesystem_list_find_fsid(filesystems, f[i].file.key.fsid);
                _cleanup_close_ int mfd = -EBADF;
                struct statfs sfs;
                if (!fs || block_device_bytes(fs->dev, &l.device) >= 0)
                        continue;
                mfd = open_mount_of(filesystems, f[i].file.key.fsid);
                if (mfd >= 0 && fstatfs(mfd, &sfs) >= 0)
                        l.device = (uint64_t) sfs.f_blocks * (uint64_t) sfs.f_bsize;
        }
        for (size_t i = 0; r >= 0 && i < n; i++) {
                _cleanup_free_ uint64_t *ph = NULL, *len = NULL;
                size_t k = 0;
                if (db_extents_before_get(db, f[i].file.id, &ph, &len, &k) < 0)
                        continue;
                for (size_t e = 0; r >= 0 && e < k; e++)
                        r = layout_add(&l.before, &l.n_before, &l.allocated_before, (uint32_t) i, ph[e],
                                       len[e]);
        }
        for (size_t i = 0; r >= 0 && i < n; i++) {
                _cleanup_close_ int mfd = open_mount_of(filesystems, f[i].file.key.fsid), fd = -EBADF;
                _cleanup_free_ Extent *ext = NULL;
                size_t k = 0;
                if (atomic_load(cancel))
                        r = -ECANCELED;
                if (r < 0 || mfd < 0)
                        continue;
                struct stat st;
                fd = file_key_open(mfd, &f[i].file.key, O_RDONLY | O_NONBLOCK);
                if (fd < 0 || fstat(fd, &st) < 0 || fiemap_get(fd, &ext, &k) < 0)
                        continue;
                for (size_t h = 0; r >= 0 && h < n_ranges; h++) {
                        /* whole blocks, as FIEMAP reports them: a range that ends at the file's end takes its
                         * last block whole */
                        uint64_t blk = st.st_blksize > 0 ? (uint64_t) st.st_blksize : 4096;
                        uint64_t lo = ranges[h].offset / blk * blk, hi = ranges[h].offset + ranges[h].length;
                        _cleanup_free_ Extent *hot = NULL;
                        size_t n_hot = 0;

                        if (ranges[h].file != i)
                                continue;
                        hi = hi > UINT64_MAX - blk ? UINT64_MAX : (hi + blk - 1) / blk * blk;
                        r = hot_ranges_clip_extents(ext, k, lo, hi - lo, &hot, &n_hot);
                        for (size_t e = 0; r >= 0 && e < n_hot; e++)
                                if (layout_extent_has_blocks(&hot[e]))
                                        r = layout_add(&l.now, &l.n_now, &l.allocated_now, (uint32_t) i,
                                                       hot[e].physical, hot[e].length);
                }
        }
        db_profile_files_free(f, n);
        if (r < 0)
                return r;
        *ret = l;
        l = (LayoutExtents) {};
        return 0;
}
