/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/fsmap.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "donor.h"
#include "macro.h"

#define DONOR_RUN_BYTES (UINT64_C(128) * 1024 * 1024)
/* above any logical block (< 2^32), so even the targeted donor's far pilot block counts as "small" */
#define STREAM_REQ_RAISED "4294967295"
/* the pilot's logical block: half the extent format's range, so that a goal below or above it can be
 * reached by logical offsets on filesystems of up to PILOT_BLOCK blocks */
#define PILOT_BLOCK (UINT64_C(1) << 31)
#define EXT_MAX_BLOCKS UINT64_C(0xffffffff)
#define SYSFS_EXT4_PREFIX "/sys/fs/ext4/"
#define STREAM_REQ_NAME "mb_stream_req"

uint64_t donor_acceptable_runs(uint64_t bytes) {
        uint64_t n = bytes / DONOR_RUN_BYTES + (bytes % DONOR_RUN_BYTES != 0);
        return MAX(n, (uint64_t) 1);
}

/* Our own small FIEMAP walk (daemon/fiemap.c belongs to the layout code; the donor only needs a count). */
int donor_count_runs(int fd, uint64_t offset, uint64_t length, uint64_t *ret_runs) {
        enum { BATCH = 128 };
        union {
                struct fiemap fm;
                uint8_t buf[sizeof(struct fiemap) + BATCH * sizeof(struct fiemap_extent)];
        } u;
        uint64_t start = offset, end, runs = 0, next_phys = 0, next_log = 0;
        bool have_prev = false, last = false;

        if (length > FIEMAP_MAX_OFFSET - offset)
                return -EINVAL;
        end = offset + length;
        while (!last && start < end) {
                memset(&u, 0, sizeof u);
                u.fm.fm_start = start;
                u.fm.fm_length = end - start;
                u.fm.fm_extent_count = BATCH;
                if (ioctl(fd, FS_IOC_FIEMAP, &u.fm) < 0)
                        return -errno;
                if (u.fm.fm_mapped_extents == 0)
                        break;
                for (uint32_t i = 0; i < u.fm.fm_mapped_extents; i++) {
                        const struct fiemap_extent *e = &u.fm.fm_extents[i];

                        if (!have_prev || e->fe_physical != next_phys || e->fe_logical != next_log)
                                runs++;
                        have_prev = true;
                        next_phys = e->fe_physical + e->fe_length;
                        next_log = e->fe_logical + e->fe_length;
                        start = next_log;
                        if (e->fe_flags & FIEMAP_EXTENT_LAST)
                                last = true;
                }
        }
        *ret_runs = runs;
        return 0;
}

int donor_create(int dir_fd, uint64_t bytes) {
        _cleanup_close_ int fd = -EBADF;

        if (bytes == 0 || bytes > (uint64_t) INT64_MAX)
                return -EINVAL;
        fd = openat(dir_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        /* mode 0: i_size must cover every donor_start + len (the kernel clamps len to both files' EOF) */
        if (fallocate(fd, 0, 0, (off_t) bytes) < 0)
                return -errno;  /* closing frees whatever was allocated */
        return TAKE_FD(fd);
}

int donor_lowest_free(int fd, uint64_t bytes, uint64_t *ret_physical) {
        enum { BATCH = 256 };
        _cleanup_free_ struct fsmap_head *h = NULL;
        uint64_t run_start = 0, run_len = 0;
        uint32_t run_dev = 0;

        h = calloc(1, sizeof(struct fsmap_head) + BATCH * sizeof(struct fsmap));
        if (!h)
                return -ENOMEM;
        h->fmh_keys[1] = (struct fsmap) {
                .fmr_device = UINT32_MAX,
                .fmr_flags = UINT32_MAX,
                .fmr_physical = UINT64_MAX,
                .fmr_owner = UINT64_MAX,
                .fmr_offset = UINT64_MAX,
        };
        for (;;) {
                h->fmh_count = BATCH;
                if (ioctl(fd, FS_IOC_GETFSMAP, h) < 0)
                        return -errno;
                if (h->fmh_entries == 0)
                        break;
                for (uint32_t i = 0; i < h->fmh_entries; i++) {
                        const struct fsmap *r = &h->fmh_recs[i];

                        if (r->fmr_owner != FMR_OWN_FREE) {
                                run_len = 0;
                        } else if (run_len > 0 && r->fmr_device == run_dev &&
                                   r->fmr_physical == run_start + run_len) {
                                /* free space is reported per block group: join what touches */
                                run_len += r->fmr_length;
                        } else {
                                run_dev = r->fmr_device;
                                run_start = r->fmr_physical;
                                run_len = r->fmr_length;
                        }
                        if (run_len >= bytes) {
                                *ret_physical = run_start;
                                return 0;
                        }
                        if (r->fmr_flags & FMR_OF_LAST)
                                return -ENOSPC;
                }
                h->fmh_keys[0] = h->fmh_recs[h->fmh_entries - 1];
        }
        return -ENOSPC;
}

/* Physical byte address of the block at logical byte `offset` of fd, or a negative errno. */
static int physical_of(int fd, uint64_t offset, uint64_t *ret) {
        union {
                struct fiemap fm;
                uint8_t buf[sizeof(struct fiemap) + sizeof(struct fiemap_extent)];
        } u = {};

        u.fm.fm_start = offset;
        u.fm.fm_length = 1;
        u.fm.fm_extent_count = 1;
        if (ioctl(fd, FS_IOC_FIEMAP, &u.fm) < 0)
                return -errno;
        if (u.fm.fm_mapped_extents != 1 || u.fm.fm_extents[0].fe_logical > offset)
                return -ENODATA;
        *ret = u.fm.fm_extents[0].fe_physical + (offset - u.fm.fm_extents[0].fe_logical);
        return 0;
}

/* The donor aimed at the lowest free range that holds it (see donor.h). ext4 has no call to allocate at
 * a given block, but it aims an allocation at the block where the file's nearest extent would continue:
 * goal = that extent's physical start + the logical distance to it (ext4_ext_find_goal). So a one-block
 * pilot extent is allocated first, far out at logical PILOT_BLOCK, wherever it lands (physical p); the
 * donor's blocks are then allocated at logical PILOT_BLOCK + (target - p), which makes the target the
 * goal; the pilot is removed again: cut off by truncating the file to the donor's end when it lies
 * beyond the donor, punched out when it lies before it. (Punching it out at the end of the file left it
 * allocated on Debian 12's 6.1 kernel, FIEMAP showed; a pilot left over is one block, freed with the
 * donor, and runs are counted over the donor's range only.) Only while mb_stream_req is raised does the goal count: for a
 * "stream" allocation ext4 uses its global goal instead. ext4 may still put the donor elsewhere when the
 * target's block group does not suit the request; the caller judges the result. */
static int donor_create_targeted(int dir_fd, uint64_t bytes, uint64_t *ret_base) {
        _cleanup_close_ int fd = -EBADF;
        uint64_t bs, per_page, blocks, pilot = 0, target = 0, base;
        struct statfs sfs;
        long page = sysconf(_SC_PAGESIZE);
        int r;

        if (fstatfs(dir_fd, &sfs) < 0)
                return -errno;
        bs = (uint64_t) sfs.f_bsize;
        if (bs == 0 || bytes == 0 || bytes % bs != 0)
                return -EINVAL;
        blocks = bytes / bs;
        per_page = page > 0 && (uint64_t) page > bs ? (uint64_t) page / bs : 1;
        /* every physical block number and the donor's range must fit below the pilot's logical block */
        if ((uint64_t) sfs.f_blocks + blocks + per_page >= PILOT_BLOCK)
                return -EFBIG;

        fd = openat(dir_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        if (fallocate(fd, 0, (off_t) (PILOT_BLOCK * bs), (off_t) bs) < 0)
                return -errno;
        r = physical_of(fd, PILOT_BLOCK * bs, &pilot);
        if (r < 0)
                return r;
        /* a page of slack: the donor's logical start must be page aligned, like the files' */
        r = donor_lowest_free(fd, bytes + (per_page - 1) * bs, &target);
        if (r < 0)
                return r;
        pilot /= bs;
        target /= bs;
        base = PILOT_BLOCK + target - pilot;
        if (base % per_page != 0)
                base += per_page - base % per_page;
        if (base + blocks >= EXT_MAX_BLOCKS)
                return -EFBIG;
        if (fallocate(fd, 0, (off_t) (base * bs), (off_t) bytes) < 0)
                return -errno;  /* closing frees whatever was allocated */
        if (base > PILOT_BLOCK) {
                if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t) (PILOT_BLOCK * bs),
                              (off_t) bs) < 0)
                        return -errno;
        } else if (ftruncate(fd, (off_t) ((base + blocks) * bs)) < 0)
                /* i_size = the donor's end: still covers every donor_start + len the mover uses */
                return -errno;
        *ret_base = base * bs;
        return TAKE_FD(fd);
}

static int read_small_file(const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;
        ssize_t n;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
                buf[--n] = 0;
        return 0;
}

static int write_sysfs(const char *path, const char *value) {
        _cleanup_close_ int fd = -EBADF;
        size_t l = strlen(value);
        ssize_t n;

        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = write(fd, value, l);
        if (n < 0)
                return -errno;
        if ((size_t) n != l)
                return -EIO;
        return 0;
}

static int fsync_parent_dir(const char *path) {
        char dir[PATH_MAX];
        _cleanup_close_ int fd = -EBADF;
        char *slash;

        if (strlen(path) >= sizeof dir)
                return -ENAMETOOLONG;
        strcpy(dir, path);
        slash = strrchr(dir, '/');
        if (!slash)
                strcpy(dir, ".");
        else if (slash == dir)
                dir[1] = 0;
        else
                *slash = 0;
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return fsync(fd) < 0 ? -errno : 0;
}

/* state_file.tmp, write, fsync, rename, fsync the directory: after a crash either no state file exists
 * (and the tunable was not yet changed) or a complete one does. */
static int write_state_file(const char *state_file, const char *path, const char *value) {
        char tmp[PATH_MAX], line[PATH_MAX + 64];
        _cleanup_close_ int fd = -EBADF;
        int l, r;
        ssize_t n;

        if ((size_t) snprintf(tmp, sizeof tmp, "%s.tmp", state_file) >= sizeof tmp)
                return -ENAMETOOLONG;
        l = snprintf(line, sizeof line, "%s %s\n", path, value);
        if (l < 0 || (size_t) l >= sizeof line)
                return -ENAMETOOLONG;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        n = write(fd, line, (size_t) l);
        if (n < 0 || n != l || fsync(fd) < 0) {
                r = n < 0 || n == l ? negative_errno() : -EIO;
                (void) unlink(tmp);
                return r;
        }
        fd = safe_close(fd);
        if (rename(tmp, state_file) < 0) {
                r = -errno;
                (void) unlink(tmp);
                return r;
        }
        (void) fsync_parent_dir(state_file);
        return 0;
}

static bool valid_tunable_path(const char *p) {
        size_t l = strlen(p), pl = strlen(SYSFS_EXT4_PREFIX), nl = strlen(STREAM_REQ_NAME);

        return l > pl + nl + 1 && strncmp(p, SYSFS_EXT4_PREFIX, pl) == 0 && streq(p + l - nl, STREAM_REQ_NAME) &&
                p[l - nl - 1] == '/' && !strstr(p, "/../") && !strchr(p + pl, ' ');
}

static bool valid_value(const char *v) {
        if (!*v || strlen(v) > 10)
                return false;
        for (const char *c = v; *c; c++)
                if (*c < '0' || *c > '9')
                        return false;
        return true;
}

int donor_restore_tunables(const char *state_file) {
        char buf[PATH_MAX + 64], tmp[PATH_MAX];
        char *sp;
        int r;

        if (!state_file)
                return 0;
        if ((size_t) snprintf(tmp, sizeof tmp, "%s.tmp", state_file) < sizeof tmp)
                (void) unlink(tmp);     /* a crash before the rename: the tunable was never changed */

        r = read_small_file(state_file, buf, sizeof buf);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        sp = strrchr(buf, ' ');
        if (!sp)
                goto bad;
        *sp = 0;
        if (!valid_tunable_path(buf) || !valid_value(sp + 1))
                goto bad;
        r = write_sysfs(buf, sp + 1);
        if (r == -ENOENT) {
                /* the filesystem is no longer mounted: its tunables went with it */
        } else if (r < 0)
                return r;       /* keep the state file: try again next time */
        if (unlink(state_file) < 0 && errno != ENOENT)
                return -errno;
        (void) fsync_parent_dir(state_file);
        return 0;
bad:
        /* not ours or corrupt (the rename makes a partial file impossible): never write it anywhere */
        (void) unlink(state_file);
        return -EBADMSG;
}

/* The donor made with mb_stream_req raised for the moment of its fallocates: then it counts as a "small"
 * file, whose allocation goes to the goal its extents or its inode give, instead of the global stream goal,
 * which is wherever the last large allocation ended. First aimed at the lowest free range that holds it
 * (donor_create_targeted()); when there is none (or that fails) without a pilot, so that the goal is the
 * inode's block group (the first data group of the flex group of dir_fd's group). Returns the fd, or a
 * negative errno; -EAGAIN when the tunable could not be set (nothing was allocated then). */
static int donor_create_steered(int dir_fd, uint64_t bytes, const char *sysfs_dir, const char *state_file,
                                uint64_t *ret_base) {
        _cleanup_close_ int fd = -EBADF;
        char path[PATH_MAX], orig[64];
        int r, r2;

        if ((size_t) snprintf(path, sizeof path, "%s/" STREAM_REQ_NAME, sysfs_dir) >= sizeof path ||
            !valid_tunable_path(path))
                return -EAGAIN;
        /* a state file left by a crash means the current value is not the original one */
        if (donor_restore_tunables(state_file) < 0 && access(state_file, F_OK) == 0)
                return -EAGAIN;
        if (read_small_file(path, orig, sizeof orig) < 0 || !valid_value(orig))
                return -EAGAIN;
        if (write_state_file(state_file, path, orig) < 0)
                return -EAGAIN;
        r = write_sysfs(path, STREAM_REQ_RAISED);
        if (r >= 0) {
                *ret_base = 0;
                fd = donor_create_targeted(dir_fd, bytes, ret_base);
                if (fd < 0) {
                        *ret_base = 0;
                        fd = donor_create(dir_fd, bytes);
                }
        }
        /* restore first, whatever happened */
        r2 = write_sysfs(path, orig);
        if (r2 >= 0 || r < 0) {
                /* restored, or never changed */
                if (unlink(state_file) >= 0)
                        (void) fsync_parent_dir(state_file);
        }
        /* else: the state file stays for donor_restore_tunables() */
        if (r < 0)
                return -EAGAIN;
        return TAKE_FD(fd);
}

int donor_allocate(int dir_fd, uint64_t bytes, const char *sysfs_dir, const char *state_file,
                   uint64_t *ret_runs, uint64_t *ret_base, unsigned *ret_attempts) {
        _cleanup_close_ int fd = -EBADF, fd2 = -EBADF;
        uint64_t runs = 0, runs2 = 0, base = 0;
        int r;

        *ret_attempts = 0;
        if (sysfs_dir && state_file) {
                (*ret_attempts)++;
                fd = donor_create_steered(dir_fd, bytes, sysfs_dir, state_file, &base);
                if (fd >= 0) {
                        r = donor_count_runs(fd, base, bytes, &runs);
                        if (r < 0)
                                return r;
                        if (runs <= donor_acceptable_runs(bytes))
                                goto done;
                }
                /* ENOSPC too: the stream allocation below may still find room elsewhere */
        }

        /* the allocator's own choice, while we still hold the steered donor (so it can't take its blocks) */
        (*ret_attempts)++;
        fd2 = donor_create(dir_fd, bytes);
        if (fd2 < 0) {
                if (fd >= 0)
                        goto done;      /* no room for a second one: keep the first */
                return fd2;
        }
        r = donor_count_runs(fd2, 0, bytes, &runs2);
        if (r < 0)
                return r;
        if (fd < 0 || runs2 < runs) {
                fd = safe_close(fd);
                fd = TAKE_FD(fd2);
                runs = runs2;
                base = 0;
        }
done:
        *ret_runs = runs;
        *ret_base = base;
        return TAKE_FD(fd);
}
