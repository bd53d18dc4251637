/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc-util.h"
#include "relocate/donor.h"
#include "fs/fiemap.h"
#include "relocate/item-files.h"
#include "common/macro.h"
#include "fs/mounts.h"
#include "relocate/mover.h"
#include "relocate/mover-room.h"

/* The kernel's ext4 uapi definitions, missing from Debian 12's linux-libc-dev (doc/kernel.md §1) */
struct move_extent {
        uint32_t reserved;      /* should be zero */
        uint32_t donor_fd;      /* donor file descriptor */
        uint64_t orig_start;    /* logical start offset in block for orig */
        uint64_t donor_start;   /* logical start offset in block for donor */
        uint64_t len;           /* block length to be moved */
        uint64_t moved_len;     /* moved block length */
};
#ifndef EXT4_IOC_MOVE_EXT
#define EXT4_IOC_MOVE_EXT _IOWR('f', 15, struct move_extent)
#endif

#define CHUNK_BYTES (UINT64_C(8) * 1024 * 1024)
#define EXT_MAX_BLOCKS UINT64_C(0xffffffff)
#define THROTTLE_STEP_USEC (100 * USEC_PER_MSEC)
#define PREFETCH_BYTES ((size_t) 1024 * 1024)
/* the chunks of a file whose execs are held (mover.h) */
#define EXEC_CHUNK_BYTES ((uint64_t) 1024 * 1024)

/* Layout rules (what the slices are):
 *   - every item gets a slice of round_up(its length (a whole file: its planned size), max(page size, block
 *     size)) bytes; a range is the file's blocks [offset / block, round_up(offset + length) / block), cut at
 *     the planned size; the donor is the
 *     sum of all slices (an upper bound: holes take no room), and slices start page aligned;
 *   - slices are handed out in item order from a running offset, but only to files of which at least one
 *     block was actually moved: skipped files consume nothing, so the moved files sit back to back. A file
 *     with holes takes only the blocks it has: its allocated runs go to consecutive donor blocks (at the
 *     same offset inside a page as in the file, which costs nothing when a block is a page), and the next
 *     file starts right after its last block, rounded up to the slice granularity;
 *   - a file moved only partly (EBUSY or cancel in a later chunk) consumes what it reached, the failed
 *     chunk included, so that nobody else is moved on top of the blocks it left in the donor.
 * Outcome conventions: size 0 is MOVE_IN_PLACE "empty"; progress is called exactly once per item, also for
 * the items left MOVE_RETRY after a cancel or ENOSPC. bytes_moved counts partial moves too; files_moved
 * counts the files of which an item is MOVE_DONE (a file's hot ranges count once). */

typedef struct Mover {
        const MoverOptions *o;
        MoverStats *stats;
        Donor donor;
        uint64_t fsid;
        uint64_t bsize;                 /* filesystem block size */
        uint64_t unit;                  /* slice granularity: max(page, block) */
        uint64_t chunk_blocks;
        uint64_t slack;                 /* donor blocks beyond the slices' sum, free to skip to a new segment */
        uint64_t next_block;            /* running position in the donor's segments, one after the other */
        uint64_t t_start;               /* CLOCK_MONOTONIC usec, for the rate limit */
        uint64_t throttled_bytes;
        uint8_t *buf;                   /* PREFETCH_BYTES, NULL: no prefetch */
        int commit_fd;                  /* the file just moved, committed after its progress call */
} Mover;

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

static bool is_cancelled(const Mover *m) {
        return m->o->cancel && atomic_load(m->o->cancel);
}

_printf_(4, 5) static void set_outcome(MoveOutcome *out, MoveResult res, MoveReason why, const char *fmt, ...) {
        va_list ap;

        out->result = res;
        out->why = why;
        if (!fmt) {
                out->reason[0] = 0;
                return;
        }
        va_start(ap, fmt);
        (void) vsnprintf(out->reason, sizeof out->reason, fmt, ap);
        va_end(ap);
}

/* Sleep until bytes/elapsed <= rate, in steps so a cancel is noticed within THROTTLE_STEP_USEC. */
static void throttle(Mover *m, uint64_t bytes) {
        uint64_t rate = m->o->rate_limit_bps, want, elapsed;

        m->throttled_bytes += bytes;
        if (rate == 0)
                return;
        want = (uint64_t) ((long double) m->throttled_bytes * USEC_PER_SEC / rate);
        for (;;) {
                elapsed = now_usec() - m->t_start;
                if (elapsed >= want || is_cancelled(m))
                        return;
                uint64_t d = MIN(want - elapsed, THROTTLE_STEP_USEC);
                struct timespec ts = { .tv_sec = (time_t) (d / USEC_PER_SEC),
                                       .tv_nsec = (long) (d % USEC_PER_SEC * NSEC_PER_USEC) };
                (void) nanosleep(&ts, NULL);
        }
}

static int open_key(int mount_fd, const FileKey *key, int flags) {
        union {
                struct file_handle fh;
                uint8_t buf[sizeof(struct file_handle) + FID_HANDLE_MAX];
        } u;
        int fd;

        if (key->handle_len == 0 || key->handle_len > FID_HANDLE_MAX)
                return -EINVAL;
        u.fh.handle_bytes = key->handle_len;
        u.fh.handle_type = key->handle_type;
        memcpy(u.fh.f_handle, key->handle, key->handle_len);
        fd = open_by_handle_at(mount_fd, &u.fh, flags);
        return fd < 0 ? -errno : fd;
}

static bool is_gone(int r) {
        return r == -ESTALE || r == -ENOENT;
}

static int64_t mtime_ns(const struct stat *st) {
        return (int64_t) st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* Write the file's dirty pages and wait for them: -errno when a write failed since fd was opened (the
 * writeback error is reported once to each open file, whoever started the writeback; see doc/kernel.md §6). */
static int write_out(int fd) {
        if (sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) < 0)
                return -errno;
        return 0;
}

/* Drop the file's clean page cache: the 6.16-6.18 MOVE_EXT code is very slow on large folios, and after the
 * move our reading must not leave the cache full of pages nobody asked for. Dirty pages are written first. */
static void drop_cache(int fd) {
        (void) write_out(fd);
        (void) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

/* The filesystem failed under us: it went read-only (an ext4 error, an aborted journal) or cannot write. */
static bool fs_failed(int e) {
        return e == EROFS || e == EIO;
}

/* The <= 6.18 MOVE_EXT reads every uncached page synchronously, one block at a time. Read the chunk ahead
 * in 1 MiB requests through the O_NOATIME read-only fd with POSIX_FADV_RANDOM, so the page cache gets
 * order-0 pages: large folios (normal readahead, readahead(2)) make the same code crawl (6.16-6.18). Both,
 * and what the read-ahead gains, in doc/kernel.md §1. Best effort. */
static void prefetch(const Mover *m, int ro_fd, uint64_t offset, uint64_t len) {
        if (!m->buf)
                return;
        for (uint64_t o = 0; o < len; o += PREFETCH_BYTES)
                if (pread(ro_fd, m->buf, PREFETCH_BYTES, (off_t) (offset + o)) <= 0)
                        break;
}

typedef enum Next {
        NEXT_CONTINUE,
        NEXT_STOP_CANCEL,
        NEXT_STOP_NOSPC,
        NEXT_STOP_IO,
} Next;

/* A sync of the file failed with errno e: to be retried, and the batch stops if the filesystem failed. */
static Next sync_failed(Mover *m, MoveOutcome *out, const char *what, int e) {
        if (fs_failed(e)) {
                set_outcome(out, MOVE_RETRY, MOVE_REASON_IO_ERROR, "%s: %s", what, strerror(e));
                m->stats->io_error = -e;
                return NEXT_STOP_IO;
        }
        set_outcome(out, MOVE_RETRY, MOVE_REASON_ERROR, "%s: %s", what, strerror(e));
        return NEXT_CONTINUE;
}

/* A MOVE_EXT call that swapped blocks: the same call again swaps them back. */
typedef struct Swapped {
        uint64_t orig, donor, len;
} Swapped;

/* A file that can be exec'd: its execs are held while we have it open for writing (mover.h). */
static bool may_be_exec(const Mover *m, const struct stat *st) {
        return m->o->exec_gate && (st->st_mode & (S_IXUSR | S_IXGRP | S_IXOTH));
}

static void release_execs(const Mover *m, const MoveItem *it) {
        m->o->exec_gate->release(m->o->exec_gate->userdata, &it->key);
}

/* Identity, state and writer checks; returns an O_RDWR fd on the right file (and in *ret_ro the O_RDONLY
 * O_NOATIME one it was checked against; *ret_held: its execs are held, to be released once the O_RDWR fd is
 * closed) or -1 with *out set. */
static int open_item(Mover *m, const MoveItem *it, MoveOutcome *out, int *ret_ro, bool *ret_held) {
        _cleanup_close_ int ro = -EBADF, rw = -EBADF;
        struct stat st, st2;
        bool held = false;
        int r;

        if (it->key.fsid != m->fsid) {
                set_outcome(out, MOVE_SKIPPED, MOVE_REASON_UNMOVABLE, "on another filesystem");
                return -1;
        }
        /* O_NONBLOCK: fail with EWOULDBLOCK rather than break someone's lease and wait for it */
        ro = open_key(m->o->mount_fd, &it->key, O_RDONLY | O_CLOEXEC | O_NOATIME | O_NONBLOCK);
        if (ro == -EPERM)       /* O_NOATIME needs ownership or CAP_FOWNER */
                ro = open_key(m->o->mount_fd, &it->key, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (ro < 0) {
                if (is_gone(ro))
                        set_outcome(out, MOVE_SKIPPED, MOVE_REASON_GONE, "gone or replaced since recording");
                else if (ro == -EWOULDBLOCK)
                        set_outcome(out, MOVE_RETRY, MOVE_REASON_BUSY, "leased by another process");
                else if (fs_failed(-ro) && (ro == -EROFS || syncfs(m->o->mount_fd) < 0)) {
                        /* the filesystem failed (a shut-down ext4 refuses every open and its sync), not
                         * this file alone (an unreadable inode block): the batch stops */
                        set_outcome(out, MOVE_RETRY, MOVE_REASON_IO_ERROR, "cannot open: %s", strerror(-ro));
                        m->stats->io_error = ro;
                } else
                        set_outcome(out, MOVE_SKIPPED, MOVE_REASON_ERROR, "cannot open: %s", strerror(-ro));
                return -1;
        }
        if (fstat(ro, &st) < 0) {
                set_outcome(out, MOVE_SKIPPED, MOVE_REASON_ERROR, "fstat: %s", strerror(errno));
                return -1;
        }
        if (!S_ISREG(st.st_mode)) {
                set_outcome(out, MOVE_SKIPPED, MOVE_REASON_UNMOVABLE, "not a regular file");
                return -1;
        }
        if (st.st_nlink == 0) {
                set_outcome(out, MOVE_SKIPPED, MOVE_REASON_GONE, "gone or replaced since recording");
                return -1;
        }
        if ((uint64_t) st.st_size != it->size || mtime_ns(&st) != it->mtime_ns) {
                set_outcome(out, MOVE_SKIPPED, MOVE_REASON_CHANGED, "changed since plan");
                return -1;
        }
        if (st.st_size == 0) {
                set_outcome(out, MOVE_IN_PLACE, MOVE_REASON_NONE, "empty");
                return -1;
        }

        /* a read lease is only granted when nobody has the file open for writing */
        if (fcntl(ro, F_SETLEASE, F_RDLCK) < 0) {
                if (errno == EAGAIN || errno == EBUSY) {
                        set_outcome(out, MOVE_RETRY, MOVE_REASON_BUSY, "open for writing");
                        return -1;
                }
                /* leases disabled (fs.leases-enable=0) or not permitted: the probe is optional */
        } else
                (void) fcntl(ro, F_SETLEASE, F_UNLCK);   /* release before our own O_RDWR open breaks it */

        if (may_be_exec(m, &st)) {
                r = m->o->exec_gate->hold(m->o->exec_gate->userdata, &it->key, ro);
                if (r == -EBUSY) {
                        set_outcome(out, MOVE_RETRY, MOVE_REASON_BUSY, "exec'd just now");
                        return -1;
                }
                if (r < 0) {
                        set_outcome(out, MOVE_RETRY, MOVE_REASON_RUNNING, "executable, its execs cannot be held: %s",
                                    strerror(-r));
                        return -1;
                }
                held = true;
        }
        rw = open_key(m->o->mount_fd, &it->key, O_RDWR | O_CLOEXEC | O_NONBLOCK);
        if (rw < 0) {
                r = rw;
                if (held)
                        release_execs(m, it);
                if (r == -ETXTBSY)
                        set_outcome(out, MOVE_RETRY, MOVE_REASON_RUNNING, "running executable");
                else if (r == -EPERM)
                        set_outcome(out, MOVE_SKIPPED, MOVE_REASON_UNMOVABLE, "immutable or append-only");
                else if (is_gone(r))
                        set_outcome(out, MOVE_SKIPPED, MOVE_REASON_GONE, "gone or replaced since recording");
                else if (r == -EWOULDBLOCK)
                        set_outcome(out, MOVE_RETRY, MOVE_REASON_BUSY, "leased by another process");
                else if (fs_failed(-r)) {
                        set_outcome(out, MOVE_RETRY, MOVE_REASON_IO_ERROR, "cannot open for writing: %s", strerror(-r));
                        m->stats->io_error = r;
                } else
                        set_outcome(out, MOVE_SKIPPED, MOVE_REASON_ERROR, "cannot open for writing: %s", strerror(-r));
                return -1;
        }
        if (fstat(rw, &st2) < 0)
                set_outcome(out, MOVE_SKIPPED, MOVE_REASON_ERROR, "fstat: %s", strerror(errno));
        else if (st2.st_ino != st.st_ino || st2.st_dev != st.st_dev || !S_ISREG(st2.st_mode))
                set_outcome(out, MOVE_SKIPPED, MOVE_REASON_GONE, "gone or replaced since recording");
        else if ((uint64_t) st2.st_size != it->size || mtime_ns(&st2) != it->mtime_ns)
                set_outcome(out, MOVE_SKIPPED, MOVE_REASON_CHANGED, "changed since plan");
        else {
                *ret_ro = TAKE_FD(ro);
                *ret_held = held;
                return TAKE_FD(rw);
        }
        /* closed before its execs go on */
        rw = safe_close(rw);
        if (held)
                release_execs(m, it);
        return -1;
}

/* The donor's logical block at position `at` (the donor's segments taken one after the other);
 * *ret_left: the blocks from there to the end of its segment (0: past the last one). */
static uint64_t donor_block(const Mover *m, uint64_t at, uint64_t *ret_left) {
        for (size_t i = 0; i < m->donor.n_segments; i++) {
                const DonorSegment *seg = &m->donor.segments[i];

                if (at < seg->blocks) {
                        *ret_left = seg->blocks - at;
                        return seg->logical + at;
                }
                at -= seg->blocks;
        }
        *ret_left = 0;
        return 0;
}

/* Blocks to skip from the donor position `at` so that a run starting at the file's block `orig` lands on
 * the same offset inside a page (MOVE_EXT's rule; always 0 when a block is a page). Segments start and
 * end on page boundaries, so this never crosses into the next one. */
static uint64_t page_skew(const Mover *m, uint64_t orig, uint64_t at) {
        uint64_t k = m->unit / m->bsize, left;

        return k <= 1 ? 0 : (orig % k + k - donor_block(m, at, &left) % k) % k;
}

/* A file that does not fit in the rest of the donor's segment starts at the next one, as long as the
 * donor's spare blocks cover what is skipped (so every later slice still fits): one break between files
 * instead of one inside a file. */
static void skip_to_fitting_segment(Mover *m, uint64_t slice_blocks) {
        uint64_t left;

        (void) donor_block(m, m->next_block, &left);
        if (slice_blocks > left && left > 0 && left <= m->slack) {
                m->next_block += left;
                m->slack -= left;
        }
}

/* The file's new blocks did not take its data: give it its old blocks back. The same calls again swap the
 * extents back (MOVE_EXT exchanges whatever the two ranges hold), and write the data, still in the page
 * cache after the failed writeback, to the old blocks. Returns 0 or the first error. */
static int move_back(const Mover *m, int fd, const Swapped *sw, size_t n) {
        for (size_t i = n; i > 0; i--) {
                uint64_t orig = sw[i - 1].orig, donor = sw[i - 1].donor, len = sw[i - 1].len;
                unsigned interrupted = 0;

                while (len > 0) {
                        struct move_extent me = {
                                .donor_fd = (uint32_t) m->donor.fd,
                                .orig_start = orig,
                                .donor_start = donor,
                                .len = len,
                        };

                        if (ioctl(fd, EXT4_IOC_MOVE_EXT, &me) >= 0)
                                break;
                        if (errno == ENODATA)
                                break;          /* nothing allocated from there on */
                        if (errno != EINTR || ++interrupted >= 100)
                                return -errno;
                        orig += me.moved_len;
                        donor += me.moved_len;
                        len -= MIN(me.moved_len, len);
                }
        }
        return 0;
}

/* After the moves of a file: its data written to the new blocks, or moved back. */
static Next check_written(Mover *m, int fd, const Swapped *sw, size_t n, MoveOutcome *out, bool *ret_keep_cache) {
        int w, r;

        w = write_out(fd);
        if (w >= 0)
                return NEXT_CONTINUE;
        m->stats->io_error = w;
        out->bytes = 0;
        r = move_back(m, fd, sw, n);
        if (r < 0) {
                /* the good copy is in the page cache: keep it there */
                *ret_keep_cache = true;
                set_outcome(out, MOVE_RETRY, MOVE_REASON_IO_ERROR, "write error on its new blocks (%s); moving back: %s",
                            strerror(-w), strerror(-r));
        } else if ((r = write_out(fd)) < 0) {
                *ret_keep_cache = true;
                set_outcome(out, MOVE_RETRY, MOVE_REASON_IO_ERROR, "write error on its new blocks (%s); moved back (%s)",
                            strerror(-w), strerror(-r));
        } else
                set_outcome(out, MOVE_RETRY, MOVE_REASON_IO_ERROR, "write error on its new blocks (%s): moved back",
                            strerror(-w));
        return NEXT_STOP_IO;
}

/* The item's blocks [*ret_first, *ret_end): a whole file's, or its range's, cut at the planned size. */
static void item_blocks(const Mover *m, const MoveItem *it, uint64_t *ret_first, uint64_t *ret_end) {
        uint64_t file_blocks = it->size / m->bsize + (it->size % m->bsize != 0);

        if (it->length == 0) {
                *ret_first = 0;
                *ret_end = file_blocks;
                return;
        }
        /* mover_run() checked that offset + length does not overflow */
        *ret_first = it->offset / m->bsize;
        *ret_end = MIN((it->offset + it->length + m->bsize - 1) / m->bsize, file_blocks);
}

/* Moves the opened item (fd O_RDWR, ro its O_RDONLY twin); held: its execs are held, let go as soon as one
 * waits. */
static Next move_opened_item(Mover *m, const MoveItem *it, uint64_t slice_blocks, MoveOutcome *out, int fd, int ro,
                             bool held) {
        _cleanup_free_ Extent *ext = NULL;
        _cleanup_free_ Swapped *swapped = NULL;
        size_t n_ext = 0, n_swapped = 0, n_alloc = 0;
        uint64_t first, file_blocks, moved = 0, at;
        bool failed = false, keep_cache = false;
        Next next = NEXT_CONTINUE;
        unsigned interrupted = 0;
        /* an exec of a held file waits at most a chunk */
        uint64_t chunk_blocks = held ? MAX(MIN(m->chunk_blocks, EXEC_CHUNK_BYTES / m->bsize), (uint64_t) 1) :
                                m->chunk_blocks;
        int r;

        item_blocks(m, it, &first, &file_blocks);
        if (first >= file_blocks) {
                /* the planned size is the size now: a range planned beyond it (the file shrank before) */
                set_outcome(out, MOVE_SKIPPED, MOVE_REASON_CHANGED, "range past the end of the file");
                return NEXT_CONTINUE;
        }

        /* delalloc data is invisible to the <= 6.18 walk (ENODATA) and to FIEMAP: flush it; drop large
         * folios */
        if (fdatasync(fd) < 0)
                return sync_failed(m, out, "fdatasync", errno);
        (void) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        (void) posix_fadvise(ro, 0, 0, POSIX_FADV_RANDOM);     /* for prefetch(): order-0 pages */

        /* The file's allocated runs, moved one after the other to consecutive donor blocks: holes take no
         * room in the new layout (mkfs.ext4 -d, cp --sparse and the like leave files with holes whose
         * data lies back to back; keeping the holes' room would split reads that were one request). A block
         * written into a hole after this look stays where it is: its data is the file's either way. */
        r = fiemap_get(fd, &ext, &n_ext);
        if (r < 0) {
                set_outcome(out, MOVE_RETRY, MOVE_REASON_ERROR, "FIEMAP: %s", strerror(-r));
                return NEXT_CONTINUE;
        }
        skip_to_fitting_segment(m, slice_blocks);
        at = m->next_block;
        set_outcome(out, MOVE_DONE, MOVE_REASON_NONE, NULL);
        for (size_t i = 0, j; i < n_ext && !failed; i = j) {
                uint64_t l = ext[i].logical / m->bsize, end;

                /* a run: extents that follow each other logically, however scattered on disk (a file
                 * without holes is one run, moved in as few calls as before) */
                for (j = i + 1; j < n_ext && ext[j].logical == ext[j - 1].logical + ext[j - 1].length; j++)
                        ;
                end = MIN((ext[j - 1].logical + ext[j - 1].length + m->bsize - 1) / m->bsize, file_blocks);
                l = MAX(l, first);      /* a range: only its blocks */
                if (l >= end)
                        continue;       /* outside the range, or allocated past the end of the file */
                at += page_skew(m, l, at);
                while (l < end) {
                        uint64_t left, db = donor_block(m, at, &left);
                        struct move_extent me = {
                                .donor_fd = (uint32_t) m->donor.fd,
                                .orig_start = l,
                                .donor_start = db,
                                /* a chunk ends where the donor's segment does */
                                .len = MIN(MIN(end - l, chunk_blocks), left),
                        };
                        int e;

                        if (left == 0) {
                                /* cannot happen (the donor holds every slice): never move past it */
                                set_outcome(out, MOVE_RETRY, MOVE_REASON_NO_SPACE, "donor full");
                                failed = true;
                                break;
                        }
                        if (is_cancelled(m)) {
                                set_outcome(out, MOVE_RETRY, MOVE_REASON_CANCELLED, "cancelled");
                                next = NEXT_STOP_CANCEL;
                                failed = true;
                                break;
                        }
                        if (held && m->o->exec_gate->waiting(m->o->exec_gate->userdata, &it->key)) {
                                /* an exec of it waits: let the file go, the rest in a later run */
                                set_outcome(out, MOVE_RETRY, MOVE_REASON_BUSY, "exec'd during its move");
                                failed = true;
                                break;
                        }
                        if (GREEDY_REALLOC(swapped, n_alloc, n_swapped + 1) < 0) {
                                set_outcome(out, MOVE_RETRY, MOVE_REASON_ERROR, "out of memory");
                                failed = true;
                                break;
                        }
                        prefetch(m, ro, l * m->bsize, me.len * m->bsize);
                        r = ioctl(fd, EXT4_IOC_MOVE_EXT, &me);
                        e = errno;
                        moved += me.moved_len;
                        /* what a call swapped: all of the range when it returned (holes stay holes both
                         * ways), else the part before where it stopped */
                        if (r >= 0 || me.moved_len > 0)
                                swapped[n_swapped++] = (Swapped) { l, db, r >= 0 ? me.len : me.moved_len };
                        if (r >= 0) {
                                /* The whole range was walked; a hole that appeared since FIEMAP is skipped
                                 * and not counted in moved_len, so advance by len, not moved_len. */
                                l += me.len;
                                at += me.len;
                                throttle(m, me.moved_len * m->bsize);
                                continue;
                        }
                        if (e == EINTR && ++interrupted < 100) {
                                l += me.moved_len;   /* at worst redoes a few blocks: harmless */
                                at += me.moved_len;
                                continue;
                        }
                        /* what the failed call may have touched in the donor stays this file's */
                        at += me.len;
                        failed = true;
                        if (e == ENODATA) {
                                /* nothing allocated from here on: truncated since FIEMAP */
                                if (moved == 0)
                                        set_outcome(out, MOVE_SKIPPED, MOVE_REASON_UNMOVABLE, "unflushed or sparse");
                                break;
                        }
                        if (e == EBUSY)
                                set_outcome(out, MOVE_RETRY, MOVE_REASON_BUSY, "busy (being written or mapped)");
                        else if (e == ETXTBSY)
                                set_outcome(out, MOVE_RETRY, MOVE_REASON_RUNNING, "running executable or swap");
                        else if (e == EOPNOTSUPP)
                                set_outcome(out, MOVE_SKIPPED, MOVE_REASON_UNMOVABLE,
                                            "not movable (not extent-mapped, encrypted, data=journal, ...)");
                        else if (e == ENOSPC || e == EDQUOT) {
                                set_outcome(out, MOVE_RETRY, MOVE_REASON_NO_SPACE, "no space");
                                next = NEXT_STOP_NOSPC;
                        } else if (e == EROFS) {
                                set_outcome(out, MOVE_RETRY, MOVE_REASON_IO_ERROR, "move failed: %s", strerror(e));
                                m->stats->io_error = -e;
                                next = NEXT_STOP_IO;
                        } else
                                set_outcome(out, MOVE_SKIPPED, MOVE_REASON_ERROR, "move failed: %s", strerror(e));
                        break;
                }
        }
        if (moved == 0 && !failed)
                set_outcome(out, MOVE_SKIPPED, MOVE_REASON_UNMOVABLE, "unflushed or sparse");

        out->bytes = MIN(moved * m->bsize, MIN(file_blocks * m->bsize, it->size) - first * m->bsize);
        if (moved > 0 && check_written(m, fd, swapped, n_swapped, out, &keep_cache) == NEXT_STOP_IO)
                next = NEXT_STOP_IO;
        if (!keep_cache)
                drop_cache(fd);
        if (moved > 0) {
                /* consumed, even if only partly (see top); never more than the slice the donor holds */
                uint64_t k = m->unit / m->bsize;
                m->next_block = MIN((at + k - 1) / k * k, m->next_block + slice_blocks);
        }
        return next;
}

/* A moved file's new extents are in the journal's running transaction when MOVE_EXT returns, committed
 * seconds later (doc/kernel.md §1, "When a move is on the disk"). They are committed right after the
 * file's progress call, which writes its checkpoint, and before the next file moves: a power cut then
 * leaves no file moved whose checkpoint says pending (the resumed run would move it a second time), and at
 * most the last file checkpointed done with its old blocks (it stays where it was, intact). syncfs(), not
 * the file's fsync(): a swap that changes only a leaf block of the file's extent tree leaves its inode
 * alone, and fsync() then commits nothing (doc/kernel.md §1). It also writes back the filesystem's other
 * dirty data (what a commit costs), and says a writeback error of any file since the fd was opened: the
 * run then stops as on any I/O error of the filesystem. Returns NEXT_STOP_IO when the filesystem failed. */
static Next commit_moved(Mover *m) {
        _cleanup_close_ int fd = TAKE_FD(m->commit_fd);

        if (fd < 0 || syncfs(fd) >= 0 || !fs_failed(errno))
                return NEXT_CONTINUE;
        m->stats->io_error = -errno;
        return NEXT_STOP_IO;
}

static Next move_item(Mover *m, const MoveItem *it, uint64_t slice_blocks, MoveOutcome *out) {
        _cleanup_close_ int fd = -EBADF, ro = -EBADF;
        bool held = false;
        Next next;

        fd = open_item(m, it, out, &ro, &held);
        if (fd < 0)
                return m->stats->io_error < 0 ? NEXT_STOP_IO : NEXT_CONTINUE;
        next = move_opened_item(m, it, slice_blocks, out, fd, ro, held);
        /* closed before its execs go on */
        fd = safe_close(fd);
        if (held)
                release_execs(m, it);
        if (out->result == MOVE_DONE && next == NEXT_CONTINUE && !m->o->lazy_commit)
                m->commit_fd = TAKE_FD(ro);
        return next;
}

const char *mover_donor_where(const MoverStats *st, const char *prefix, char *buf, size_t size) {
        if (st->donor_physical == UINT64_MAX || size == 0)
                return "";
        if (st->donor_chunk > 0)
                (void) snprintf(buf, size, "%sfrom %.1f MiB (aimed %.0f MiB at a time)", prefix,
                                st->donor_physical / 1048576.0, st->donor_chunk / 1048576.0);
        else
                (void) snprintf(buf, size, "%sfrom %.1f MiB", prefix, st->donor_physical / 1048576.0);
        return buf;
}

int mover_restore_tunables(const char *state_file) {
        return donor_restore_tunables(state_file);
}

/* Is the item where the batch's layout would put it: its allocated blocks (holes take no room) one physical
 * run that starts at *next (a block address; UINT64_MAX: anywhere), or less than a page after it? Then
 * *next is where the item ends. false when it cannot be told (the file is gone, changed since the plan,
 * busy): the move decides then. */
static bool item_in_place(const Mover *m, const MoveItem *it, uint64_t *next) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ Extent *ext = NULL;
        uint64_t first, end, k = m->unit / m->bsize;
        size_t n_ext = 0;
        struct stat st;

        if (it->key.fsid != m->fsid)
                return false;
        fd = open_key(m->o->mount_fd, &it->key, O_RDONLY | O_CLOEXEC | O_NOATIME | O_NONBLOCK);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink == 0 ||
            (uint64_t) st.st_size != it->size || mtime_ns(&st) != it->mtime_ns)
                return false;
        if (fiemap_get(fd, &ext, &n_ext) < 0)
                return false;
        item_blocks(m, it, &first, &end);
        if (it->size > 0 && first >= end)
                return false;   /* a range past the end: move_item() says so */
        for (size_t i = 0; i < n_ext; i++) {
                uint64_t l = ext[i].logical / m->bsize, e = (ext[i].logical + ext[i].length) / m->bsize,
                         p = ext[i].physical / m->bsize;

                if (ext[i].flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC))
                        return false;   /* not on the disk yet: the move flushes it */
                if (e <= first || l >= end)
                        continue;
                p += MAX(l, first) - l;
                if (*next != UINT64_MAX && (p < *next || p - *next >= k))
                        return false;
                *next = p + MIN(e, end) - MAX(l, first);
        }
        return true;
}

/* Is every item of the batch already in place, one after the other? */
static bool batch_in_place(const Mover *m, const MoveItem *items, size_t n) {
        uint64_t next = UINT64_MAX;

        for (size_t i = 0; i < n; i++)
                if (!item_in_place(m, &items[i], &next))
                        return false;
        return true;
}

/* Items from..n-1 are left for a later run, each reported. */
static void retry_rest(const MoverOptions *o, MoveOutcome *outcomes, size_t from, size_t n, MoveReason why,
                       const char *reason) {
        for (size_t i = from; i < n; i++) {
                set_outcome(&outcomes[i], MOVE_RETRY, why, "%s", reason);
                if (o->progress)
                        o->progress(o->userdata, i, &outcomes[i]);
        }
}

static void retry_rest_io(const MoverOptions *o, MoveOutcome *outcomes, size_t from, size_t n, int error) {
        char reason[sizeof outcomes[0].reason];

        (void) snprintf(reason, sizeof reason, "not attempted: the filesystem failed (%s)", strerror(-error));
        retry_rest(o, outcomes, from, n, MOVE_REASON_IO_ERROR, reason);
}

/* Clear a window low on the disk for the donor (mover-room.h): the files that hold it are moved out by a
 * run of their own. Returns as mover_room_commit(), or 0 when there is no window worth clearing. */
static int make_room(const MoverOptions *o, const MoveItem *items, size_t n, uint64_t blocks, uint64_t bsize,
                     DonorWindow *ret, MoverStats *st) {
        _cleanup_(room_evacuation_done) RoomEvacuation e = { .pilot_fd = -EBADF };
        MoverStats sub_st = {};
        int r;

        r = mover_room_plan(o, items, n, blocks, bsize, &e, st);
        if (r <= 0)
                return r;
        if (e.n > 0) {
                /* the files moved out go where the allocator puts a donor by itself: not aimed low, and
                 * not into the window, which they fill until they are moved */
                MoverOptions sub = {
                        .mount_fd = o->mount_fd,
                        .rate_limit_bps = o->rate_limit_bps,
                        .cancel = o->cancel,
                        .exec_gate = o->exec_gate,
                        /* no checkpoint tells of these moves: the journal commits them in its time */
                        .lazy_commit = true,
                };

                r = mover_run(&sub, e.items, e.n, e.outcomes, &sub_st);
        }
        return mover_room_commit(o, &e, r, &sub_st, ret, st);
}

int mover_run(const MoverOptions *o, const MoveItem *items, size_t n, MoveOutcome *outcomes, MoverStats *ret_stats) {
        _cleanup_free_ uint64_t *slices = NULL;
        _cleanup_free_ uint8_t *buf = NULL, *file_moved = NULL;
        _cleanup_free_ size_t *file_of = NULL;
        size_t n_files = 0;
        MoverStats stats = { .donor_physical = UINT64_MAX, .room_start = UINT64_MAX };
        struct statfs sfs;
        uint64_t total = 0;
        long page;
        size_t i = 0;
        Mover m = { .commit_fd = -EBADF };
        int r;

        if (!o || o->mount_fd < 0 || (n > 0 && (!items || !outcomes)))
                return -EINVAL;
        for (size_t j = 0; j < n; j++) {
                outcomes[j] = (MoveOutcome) { .result = MOVE_RETRY };
                snprintf(outcomes[j].reason, sizeof outcomes[j].reason, "not attempted");
        }
        if (ret_stats)
                *ret_stats = stats;
        if (n == 0)
                return 0;

        if (fstatfs(o->mount_fd, &sfs) < 0)
                return -errno;
        if (sfs.f_type != EXT4_SUPER_MAGIC)
                return -EOPNOTSUPP;
        page = sysconf(_SC_PAGESIZE);
        if (page <= 0 || sfs.f_bsize <= 0)
                return -EINVAL;
        m = (Mover) {
                .o = o,
                .stats = &stats,
                .donor = { .fd = -EBADF },
                .bsize = (uint64_t) sfs.f_bsize,
                .unit = MAX((uint64_t) page, (uint64_t) sfs.f_bsize),
        };
        m.chunk_blocks = MAX(CHUNK_BYTES / m.bsize, m.unit / m.bsize);
        r = fsid_of_fd(o->mount_fd, &m.fsid);
        if (r < 0)
                return r;
        r = move_items_files(items, n, &file_of, &n_files);
        if (r < 0)
                return r;
        file_moved = calloc(n_files, 1);
        if (!file_moved)
                return -ENOMEM;

        slices = calloc(n, sizeof *slices);
        if (!slices)
                return -ENOMEM;
        for (size_t j = 0; j < n; j++) {
                uint64_t s = move_item_bytes(&items[j]);

                if ((items[j].length == 0 && items[j].offset != 0) || items[j].offset % m.unit != 0 ||
                    items[j].length > UINT64_MAX - m.unit || items[j].offset > UINT64_MAX - m.unit - items[j].length)
                        return -EINVAL;

                if (s > UINT64_MAX - m.unit)
                        return -EFBIG;
                s = (s + m.unit - 1) / m.unit * m.unit;
                slices[j] = s / m.bsize;
                if (slices[j] > EXT_MAX_BLOCKS - 1 - total)
                        return -EFBIG;  /* the donor's logical blocks must stay below EXT_MAX_BLOCKS */
                total += slices[j];
        }

        if (total > 0 && o->keep_in_place && !(o->cancel && atomic_load(o->cancel)) && batch_in_place(&m, items, n)) {
                for (size_t j = 0; j < n; j++) {
                        set_outcome(&outcomes[j], MOVE_IN_PLACE, MOVE_REASON_NONE, "in place");
                        if (o->progress)
                                o->progress(o->userdata, j, &outcomes[j]);
                }
                goto finish;
        }
        if (total > 0 && !(o->cancel && atomic_load(o->cancel))) {
                uint64_t capacity = 0;

                /* Never dig into the blocks ext4 reserves for root (we run as root, fallocate would let
                 * us): a donor that doesn't fit in what ordinary users may use is "no space". */
                if (fstatfs(o->mount_fd, &sfs) >= 0 &&
                    (uint64_t) sfs.f_bavail * (uint64_t) sfs.f_bsize < total * m.bsize)
                        r = -ENOSPC;
                else {
                        DonorWindow w = { .start = UINT64_MAX, .near = o->near / m.bsize };
                        int room = 0;

                        if (o->make_room) {
                                room = make_room(o, items, n, total, m.bsize, &w, &stats);
                                if (room == -ECANCELED) {
                                        stats.cancelled = true;
                                        retry_rest(o, outcomes, i, n, MOVE_REASON_CANCELLED, "cancelled");
                                        goto finish;
                                }
                                if (stats.io_error < 0) {
                                        retry_rest_io(o, outcomes, i, n, stats.io_error);
                                        goto finish;
                                }
                        }
                        r = donor_allocate(o->mount_fd, total * m.bsize, o->sysfs_dir, o->state_file,
                                           room > 0 || w.near > 0 ? &w : NULL, &m.donor);
                        stats.room_used = m.donor.in_window;
                        stats.room_cut = m.donor.cut;
                        stats.room_replanned = m.donor.replanned;
                        stats.donor_near = m.donor.near;
                        stats.donor_chunk = m.donor.chunk * m.bsize;
                }
                stats.donor_attempts = m.donor.attempts;
                stats.donor_runs = m.donor.runs;
                stats.donor_segments = m.donor.n_segments;
                if (r == -ENOSPC || r == -EDQUOT) {
                        stats.out_of_space = true;
                        retry_rest(o, outcomes, i, n, MOVE_REASON_NO_SPACE, "no space for the donor");
                        goto finish;
                }
                if (r < 0)
                        return r;
                if (donor_physical(&m.donor, m.bsize, &stats.donor_physical) < 0)
                        stats.donor_physical = UINT64_MAX;
                for (size_t j = 0; j < m.donor.n_segments; j++)
                        capacity += m.donor.segments[j].blocks;
                if (capacity < total) {
                        donor_done(&m.donor);
                        return -EIO;    /* never: donor_allocate() makes room for every slice */
                }
                m.slack = capacity - total;
        }

        buf = malloc(PREFETCH_BYTES);
        m.buf = buf;
        m.t_start = now_usec();
        for (; i < n; i++) {
                Next next;

                if (is_cancelled(&m)) {
                        stats.cancelled = true;
                        break;
                }
                outcomes[i] = (MoveOutcome) {};
                next = move_item(&m, &items[i], slices[i], &outcomes[i]);
                if (outcomes[i].result == MOVE_DONE && !file_moved[file_of[i]]) {
                        file_moved[file_of[i]] = 1;
                        stats.files_moved++;
                }
                stats.bytes_moved += outcomes[i].bytes;
                if (o->progress)
                        o->progress(o->userdata, i, &outcomes[i]);
                if (commit_moved(&m) == NEXT_STOP_IO)
                        next = NEXT_STOP_IO;
                if (next == NEXT_STOP_CANCEL) {
                        stats.cancelled = true;
                        i++;
                        break;
                }
                if (next == NEXT_STOP_NOSPC) {
                        stats.out_of_space = true;
                        i++;
                        break;
                }
                if (next == NEXT_STOP_IO) {
                        i++;
                        break;
                }
        }
        if (stats.io_error < 0)
                retry_rest_io(o, outcomes, i, n, stats.io_error);
        else if (stats.out_of_space)
                retry_rest(o, outcomes, i, n, MOVE_REASON_NO_SPACE, "no space");
        else
                retry_rest(o, outcomes, i, n, MOVE_REASON_CANCELLED, "cancelled");

finish:
        /* the moved data on disk before the donor's close frees the old blocks (nothing to wait for, and
         * no reason to wait for other people's dirty data, when nothing moved) */
        if (stats.bytes_moved > 0)
                (void) syncfs(o->mount_fd);
        donor_done(&m.donor);
        if (ret_stats)
                *ret_stats = stats;
        return 0;
}
