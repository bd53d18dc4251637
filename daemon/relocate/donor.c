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

#include "relocate/donor.h"
#include "common/fileio.h"
#include "common/macro.h"

#define DONOR_RUN_BYTES (UINT64_C(128) * 1024 * 1024)
/* above any logical block (< 2^32), so even the targeted donor's far pilot block counts as "small" */
#define STREAM_REQ_RAISED "4294967295"
/* the pilot's logical block: half the extent format's range, so that a goal below or above it can be
 * reached by logical offsets on filesystems of up to PILOT_BLOCK blocks */
#define PILOT_BLOCK (UINT64_C(1) << 31)
#define EXT_MAX_BLOCKS UINT64_C(0xffffffff)
#define SYSFS_EXT4_PREFIX "/sys/fs/ext4/"
/* free ranges tried in buddies after the one-range donor missed (each failed try holds its range until
 * the journal commits) */
#define BUDDY_ATTEMPTS 4
/* blocks kept free beside the pieces: the pilot and the donor's extent tree blocks */
#define BUDDY_SLACK_BLOCKS 16
/* with a "near" block, buddies are tried in free ranges that start at most this far after it */
#define NEAR_SPAN_BYTES (UINT64_C(128) * 1024 * 1024)
#define STREAM_REQ_NAME "mb_stream_req"

uint64_t donor_acceptable_runs(uint64_t bytes) {
        uint64_t n = bytes / DONOR_RUN_BYTES + (bytes % DONOR_RUN_BYTES != 0);
        return MAX(n, (uint64_t) 1);
}

/* Our own small FIEMAP walk (fs/fiemap.c belongs to the layout code; the donor only needs a count). */
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

/* Calls fn(start, length, userdata) for each free range of the filesystem of fd, lowest first, from
 * FS_IOC_GETFSMAP (free space is reported per block group: ranges that touch are joined). fn returns > 0 to
 * stop the walk (then returned), < 0 to fail it. */
static int free_ranges_walk(int fd, int (*fn)(uint64_t start, uint64_t length, void *userdata), void *userdata) {
        enum { BATCH = 256 };
        _cleanup_free_ struct fsmap_head *h = NULL;
        uint64_t run_start = 0, run_len = 0;
        uint32_t run_dev = 0;
        int r;

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
                        const struct fsmap *rec = &h->fmh_recs[i];

                        if (rec->fmr_owner == FMR_OWN_FREE && run_len > 0 && rec->fmr_device == run_dev &&
                            rec->fmr_physical == run_start + run_len) {
                                run_len += rec->fmr_length;
                                continue;
                        }
                        if (run_len > 0) {
                                r = fn(run_start, run_len, userdata);
                                if (r != 0)
                                        return r;
                        }
                        run_len = 0;
                        if (rec->fmr_owner == FMR_OWN_FREE) {
                                run_dev = rec->fmr_device;
                                run_start = rec->fmr_physical;
                                run_len = rec->fmr_length;
                        }
                }
                if (h->fmh_recs[h->fmh_entries - 1].fmr_flags & FMR_OF_LAST)
                        break;
                h->fmh_keys[0] = h->fmh_recs[h->fmh_entries - 1];
        }
        return run_len > 0 ? fn(run_start, run_len, userdata) : 0;
}

typedef struct LowestFree {
        uint64_t bytes, start;
} LowestFree;

static int lowest_free_fn(uint64_t start, uint64_t length, void *userdata) {
        LowestFree *l = userdata;

        if (length < l->bytes)
                return 0;
        l->start = start;
        return 1;
}

int donor_lowest_free(int fd, uint64_t bytes, uint64_t *ret_physical) {
        LowestFree l = { .bytes = bytes };
        int r;

        r = free_ranges_walk(fd, lowest_free_fn, &l);
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOSPC;
        *ret_physical = l.start;
        return 0;
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

int donor_pilot_create(int dir_fd, uint64_t *ret_block) {
        _cleanup_close_ int fd = -EBADF;
        struct statfs sfs;
        uint64_t p;
        int r;

        if (fstatfs(dir_fd, &sfs) < 0)
                return -errno;
        if (sfs.f_bsize <= 0)
                return -EINVAL;
        fd = openat(dir_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        /* mb_stream_req as it is: a stream allocation of one block (no preallocation with it) */
        if (fallocate(fd, 0, (off_t) (PILOT_BLOCK * (uint64_t) sfs.f_bsize), (off_t) sfs.f_bsize) < 0)
                return -errno;
        r = physical_of(fd, PILOT_BLOCK * (uint64_t) sfs.f_bsize, &p);
        if (r < 0)
                return r;
        *ret_block = p / (uint64_t) sfs.f_bsize;
        return TAKE_FD(fd);
}

/* Where a donor piece goes: `blocks` blocks from physical block `physical`. */
typedef struct DonorTarget {
        uint64_t physical, blocks;
} DonorTarget;

/* The free ranges chosen for a donor in pieces: the lowest ranges of at least min_blocks that start below
 * `below` (the lowest range that would hold the whole donor), until `need` blocks are found, but no more
 * than `avail` blocks in all. Each piece is a whole free range: within the goal's block group ext4 takes
 * the first free extent of exactly the requested length, but of a longer one it looks for the best fit
 * anywhere in the group (ext4_mb_measure_extent()). So a range whose logical start (PILOT_BLOCK +
 * physical - pilot) would not be page aligned, or whose length is not a whole number of pages, is left
 * out. Seen on a scratch filesystem (6.18): a piece aimed at a hole in a block group cut up into many
 * small free extents (as a disk aged in place is) landed in the next group instead: mballoc's fast passes
 * skip a group whose free blocks / free extents is below the request (ext4_mb_good_group(); read in the
 * kernel's source, not traced), and a data request does not try its goal block by itself (no
 * EXT4_MB_HINT_TRY_GOAL). Then the pieces are given up (segments_on_target()) and the donor is made in
 * one range. */
typedef struct SegmentPlan {
        uint64_t bs, per_page, pilot, need, avail, min_blocks, below, got;
        DonorTarget t[DONOR_MAX_SEGMENTS];
        size_t n;
} SegmentPlan;

/* Blocks to skip from physical block b so that its logical block in the donor is page aligned. */
static uint64_t target_skew(uint64_t per_page, uint64_t pilot, uint64_t b) {
        return (per_page - (PILOT_BLOCK + b - pilot) % per_page) % per_page;
}

static int segment_fn(uint64_t start, uint64_t length, void *userdata) {
        SegmentPlan *sp = userdata;
        uint64_t b = start / sp->bs, n = length / sp->bs;

        if (b >= sp->below)
                return 1;
        if (n < sp->min_blocks || n % sp->per_page != 0 || target_skew(sp->per_page, sp->pilot, b) != 0)
                return 0;
        if (n > sp->avail - sp->got)
                return 1;
        sp->t[sp->n++] = (DonorTarget) { .physical = b, .blocks = n };
        sp->got += n;
        return sp->got >= sp->need || sp->n == DONOR_MAX_SEGMENTS;
}

/* Allocate the donor's pieces at logical PILOT_BLOCK + (target - pilot) each (see donor_create_targeted()),
 * then remove the pilot: cut off by truncating the file to the donor's end when it lies beyond every piece,
 * punched out otherwise. (Punching it out at the end of the file leaves it allocated on 6.1, see
 * doc/kernel.md §2; a pilot left over is one block, freed with the donor, and runs are counted over the
 * pieces only.) */
static int place_segments(int fd, uint64_t bs, uint64_t pilot, const DonorTarget *t, size_t n, Donor *d) {
        uint64_t end = 0;

        for (size_t i = 0; i < n; i++) {
                uint64_t logical = PILOT_BLOCK + t[i].physical - pilot;

                if (logical + t[i].blocks >= EXT_MAX_BLOCKS)
                        return -EFBIG;
                if (fallocate(fd, 0, (off_t) (logical * bs), (off_t) (t[i].blocks * bs)) < 0)
                        return -errno;  /* closing frees whatever was allocated */
                d->segments[i] = (DonorSegment) { .logical = logical, .blocks = t[i].blocks };
                end = MAX(end, logical + t[i].blocks);
        }
        d->n_segments = n;
        if (end > PILOT_BLOCK) {
                if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t) (PILOT_BLOCK * bs),
                              (off_t) bs) < 0)
                        return -errno;
        } else if (ftruncate(fd, (off_t) (end * bs)) < 0)
                /* i_size = the donor's end: still covers every donor_start + len the mover uses */
                return -errno;
        return 0;
}

/* Did the pieces land starting inside [lo, hi) (blocks), each in one run, each right after the one before? */
static bool segments_within(int fd, uint64_t bs, const Donor *d, uint64_t lo, uint64_t hi) {
        uint64_t next = 0;

        for (size_t i = 0; i < d->n_segments; i++) {
                uint64_t phys = 0, runs = 0;

                if (physical_of(fd, d->segments[i].logical * bs, &phys) < 0 ||
                    donor_count_runs(fd, d->segments[i].logical * bs, d->segments[i].blocks * bs, &runs) < 0 ||
                    runs != 1 || phys / bs < lo || phys / bs >= hi ||
                    (i > 0 && (phys != next || d->segments[i].logical != d->segments[i - 1].logical +
                                                                        d->segments[i - 1].blocks)))
                        return false;
                next = phys + d->segments[i].blocks * bs;
        }
        return true;
}

/* Did every piece land where it was aimed, in one run? */
static bool segments_on_target(int fd, uint64_t bs, const DonorTarget *t, const Donor *d) {
        for (size_t i = 0; i < d->n_segments; i++) {
                uint64_t phys = 0, runs = 0;

                if (physical_of(fd, d->segments[i].logical * bs, &phys) < 0 || phys != t[i].physical * bs ||
                    donor_count_runs(fd, d->segments[i].logical * bs, d->segments[i].blocks * bs, &runs) < 0 ||
                    runs != 1)
                        return false;
        }
        return true;
}

/* Buddies (see donor_create_buddies()): ext4's allocator keeps a block group's free space as aligned blocks
 * of 2^k blocks, k up to block-size-bits + 1 (2^13 with 4 KiB blocks), each free extent cut greedily into
 * the largest aligned ones that fit (mb_mark_free_simple()). Block groups start at multiples of 2^13 blocks
 * on a filesystem with 4 KiB blocks, so this is computed from the absolute block numbers. */
static unsigned max_buddy_order(uint64_t bs) {
        unsigned bits = 0;

        while ((UINT64_C(1) << bits) < bs)
                bits++;
        return bits + 1;
}

/* The buddy of the free range ending at `end` that starts at p (p on a buddy boundary). */
static uint64_t buddy_at(uint64_t p, uint64_t end, unsigned max_order) {
        unsigned o = 0;

        while (o < max_order && p % (UINT64_C(2) << o) == 0 && p + (UINT64_C(2) << o) <= end)
                o++;
        return UINT64_C(1) << o;
}

typedef struct PiecePlan {
        uint64_t bs, blocks, min_piece, anchor, floor, limit, skip_below, range_end, window_end, got;
        uint64_t group_blocks;  /* a window's (0: not cut, see trim_last_piece()) */
        unsigned max_order;
        bool cut;               /* a plan's last piece was cut */
        DonorTarget t[DONOR_MAX_SEGMENTS];
        size_t n;
} PiecePlan;

/* A window's free range [s, e) (see DonorWindow.end; every range that ends past the window's start comes
 * here, lowest first): its buddies longer than a group preallocation from the floor on, added to those of
 * the window's ranges before it; shorter ones (next to a spot something else took) are left out. Stops
 * (-ENOSPC) at a range from the window's end on while the donor is not held yet. */
static int window_pieces(PiecePlan *pp, uint64_t s, uint64_t e) {
        uint64_t p = s;

        if (s >= pp->window_end)
                return -ENOSPC;
        while (p < e && pp->got < pp->blocks) {
                uint64_t b = buddy_at(p, e, pp->max_order);

                if (b >= pp->min_piece && p >= pp->floor) {
                        if (pp->n == DONOR_MAX_SEGMENTS)
                                return -ENOSPC;
                        pp->t[pp->n++] = (DonorTarget) { .physical = p, .blocks = b };
                        pp->got += b;
                }
                p += b;
        }
        return pp->got >= pp->blocks ? 1 : 0;
}

/* In the free range [start, start + length): the first buddies longer than a group preallocation, one after
 * the other, that hold the donor, none below the floor block. Only the range that contains the anchor
 * block, when there is one; else the lowest that starts at or below the limit, past skip_below. */
static int pieces_fn(uint64_t start, uint64_t length, void *userdata) {
        PiecePlan *pp = userdata;
        uint64_t s = start / pp->bs, e = s + length / pp->bs, p = s, got = 0;

        if ((pp->anchor != UINT64_MAX && e <= pp->anchor) || e <= pp->skip_below)
                return 0;
        pp->range_end = e;
        if (pp->window_end > 0)
                return window_pieces(pp, s, e);
        if (s > pp->limit || (pp->anchor != UINT64_MAX && s > pp->anchor))
                return -ENOSPC;
        pp->n = 0;
        while (p < e && got < pp->blocks) {
                uint64_t b = buddy_at(p, e, pp->max_order);

                if (b < pp->min_piece) {
                        if (pp->n > 0)
                                return 0;       /* the range's end: too short */
                } else if (p >= pp->floor) {
                        if (pp->n == DONOR_MAX_SEGMENTS)
                                return 0;
                        pp->t[pp->n++] = (DonorTarget) { .physical = p, .blocks = b };
                        got += b;
                }
                p += b;
        }
        return got >= pp->blocks ? 1 : pp->anchor != UINT64_MAX ? -ENOSPC : 0;
}

static uint64_t pieces_total(const PiecePlan *pp) {
        uint64_t total = 0;

        for (size_t i = 0; i < pp->n; i++)
                total += pp->t[i].blocks;
        return total;
}

/* Would ext4 serve the cut pieces cut[0..n) (largest first, from the start of pp's last piece) where they
 * are aimed? A request of 2^k blocks takes, in the goal's block group, the lowest free buddy of the
 * smallest size from 2^k up that has any (ext4_mb_simple_scan_group()). Once the planned pieces before the
 * last are taken, the last one's remainder after each cut piece holds one buddy of each size from the
 * piece's down to the next one's, the smallest first: the next piece goes there if the group has no other
 * free buddy of a size from the smallest cut piece's up to below the last piece's, nor one of the last
 * piece's size below it. Checked against the group's free space now (FS_IOC_GETFSMAP), cut greedily into
 * the largest aligned buddies as ext4 keeps it (mb_mark_free_simple()). */
typedef struct CutCheck {
        const PiecePlan *pp;
        uint64_t group_start, group_end, lo, hi, last;
        bool conflict;
} CutCheck;

static bool planned_piece(const PiecePlan *pp, uint64_t p) {
        for (size_t i = 0; i + 1 < pp->n; i++)
                if (pp->t[i].physical == p)
                        return true;
        return false;
}

static int cut_check_fn(uint64_t start, uint64_t length, void *userdata) {
        CutCheck *c = userdata;
        uint64_t s = MAX(start / c->pp->bs, c->group_start), e = MIN(start / c->pp->bs + length / c->pp->bs, c->group_end);

        if (start / c->pp->bs >= c->group_end)
                return 1;       /* past the group: done */
        for (uint64_t p = s; p < e;) {
                uint64_t b = buddy_at(p, e, c->pp->max_order);

                if (p != c->last && !planned_piece(c->pp, p) &&
                    ((b >= c->lo && b < c->hi) || (b == c->hi && p < c->last))) {
                        c->conflict = true;
                        return 1;
                }
                p += b;
        }
        return 0;
}

/* Whole buddies overshoot: the last one may be up to twice what is still missing, more than a nearly full
 * filesystem lets ordinary users allocate (shown with 10,240 blocks of pieces for a donor of 8,448). Cut
 * it into the buddies that follow each other from its start and hold what is missing, rounded up to
 * whole pieces (at least min_piece: longer than a group preallocation), largest first, each aligned to
 * its own size. Only in a window whose block groups' size is known, when the result fits in
 * DONOR_MAX_SEGMENTS pieces and ext4 would serve each piece where it is aimed (above); else the plan is
 * left as it was. */
static bool trim_last_piece(int fd, PiecePlan *pp) {
        DonorTarget last = pp->t[pp->n - 1], cut[DONOR_MAX_SEGMENTS];
        uint64_t missing = pp->blocks - (pieces_total(pp) - last.blocks), p = last.physical;
        size_t n = 0;
        CutCheck c = { .pp = pp, .last = last.physical, .hi = last.blocks };

        if (pp->group_blocks == 0)
                return false;
        missing = (missing + pp->min_piece - 1) / pp->min_piece * pp->min_piece;
        if (missing >= last.blocks)
                return false;
        while (missing > 0) {
                uint64_t b = pp->min_piece;

                while (b * 2 <= missing)
                        b *= 2;
                if (pp->n - 1 + n == DONOR_MAX_SEGMENTS)
                        return false;
                cut[n++] = (DonorTarget) { .physical = p, .blocks = b };
                p += b;
                missing -= b;
        }
        c.lo = cut[n - 1].blocks;
        c.group_start = last.physical / pp->group_blocks * pp->group_blocks;
        c.group_end = c.group_start + pp->group_blocks;
        if (free_ranges_walk(fd, cut_check_fn, &c) < 0 || c.conflict)
                return false;
        memcpy(pp->t + pp->n - 1, cut, n * sizeof *cut);
        pp->n = pp->n - 1 + n;
        return true;
}

/* The pieces from the free ranges as they are now, cut to what ordinary users may still allocate (bavail
 * blocks): 0, -ENOSPC, or another negative errno. */
static int plan_pieces(int fd, PiecePlan *pp, uint64_t bavail) {
        int r;

        pp->n = 0;
        pp->got = 0;
        r = free_ranges_walk(fd, pieces_fn, pp);
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOSPC;
        if (pieces_total(pp) + BUDDY_SLACK_BLOCKS > bavail && trim_last_piece(fd, pp))
                pp->cut = true;
        if (pieces_total(pp) + BUDDY_SLACK_BLOCKS > bavail)
                return -ENOSPC;
        return 0;
}

static bool pilot_in_pieces(const PiecePlan *pp, uint64_t pilot) {
        for (size_t i = 0; i < pp->n; i++)
                if (pilot >= pp->t[i].physical && pilot < pp->t[i].physical + pp->t[i].blocks)
                        return true;
        return false;
}

/* The donor in buddies of the free space: one request per buddy, each aimed at it as in
 * donor_create_targeted(). A request of a power of two that long goes through ext4's first, power-of-two
 * pass, which in the goal's block group takes the group's lowest free buddy of the smallest size that has
 * any free one at least that long (ext4_mb_simple_scan_group()), however cut up the rest of the group is;
 * a request of another length needs the group's free blocks / free extents to be at least the request
 * (ext4_mb_good_group(); read in the source, not traced), which a block group on an aged disk rarely has,
 * so it goes to another group (seen on 6.18). Asking for each buddy at its own size makes it the one the
 * allocator picks, unless the group has a free one of that size lower down, or the target is the first
 * group of a flex group, which that pass skips for file data: every piece must land where it was aimed,
 * in one run (else -EAGAIN, nothing stays allocated). The buddies follow each other, so the donor is one
 * segment. With a window (cleared for the donor): in the free range that contains its start, from its
 * floor on (its block group's start: a range may reach into the group before, maybe the first of a flex
 * group); else the lowest range past block skip_below that holds the donor in buddies and starts at or
 * below block `limit`. *ret_range_end: the end of the range tried (for the next attempt's skip_below).
 * With accept_hi > accept_lo, a piece need not land exactly where aimed, only inside [accept_lo, accept_hi)
 * (blocks), each right after the one before (for "near": the allocator takes the aimed group's lowest free
 * buddy of the size, which may lie below the one aimed at, where the group has freed space lower down). */
static int donor_create_buddies(int dir_fd, uint64_t bytes, uint64_t group_prealloc, const DonorWindow *w,
                                int *pilot_fd, uint64_t limit, uint64_t skip_below, uint64_t accept_lo,
                                uint64_t accept_hi, uint64_t *ret_range_end, Donor *d) {
        _cleanup_close_ int fd = -EBADF;
        PiecePlan pp = {
                .anchor = w ? w->start : UINT64_MAX,
                .floor = w ? w->floor : 0,
                .window_end = w ? w->end : 0,
                .group_blocks = w ? w->group_blocks : 0,
                .limit = w ? UINT64_MAX : limit,
                .skip_below = w ? 0 : skip_below,
        };
        uint64_t pilot = 0;
        bool replanned = false;
        struct statfs sfs;
        int r;

        if (fstatfs(dir_fd, &sfs) < 0)
                return -errno;
        pp.bs = (uint64_t) sfs.f_bsize;
        if (pp.bs == 0 || bytes % pp.bs != 0 || (long) pp.bs != sysconf(_SC_PAGESIZE))
                return -EINVAL;
        pp.blocks = bytes / pp.bs;
        pp.max_order = max_buddy_order(pp.bs);
        for (pp.min_piece = 1; pp.min_piece <= group_prealloc; pp.min_piece *= 2)
                ;
        if ((uint64_t) sfs.f_blocks + pp.blocks + (UINT64_C(1) << pp.max_order) >= PILOT_BLOCK)
                return -EFBIG;
        if (pilot_fd && *pilot_fd >= 0) {
                /* made before the window was chosen: the pieces are planned around it from the start */
                fd = TAKE_FD(*pilot_fd);
                r = physical_of(fd, PILOT_BLOCK * pp.bs, &pilot);
                if (r < 0)
                        return r;
        } else {
                fd = openat(dir_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
                if (fd < 0)
                        return -errno;
        }
        r = plan_pieces(fd, &pp, (uint64_t) sfs.f_bavail);
        if (ret_range_end)
                *ret_range_end = pp.range_end;
        if (r < 0)
                return r;
        if (pilot == 0) {
                if (fallocate(fd, 0, (off_t) (PILOT_BLOCK * pp.bs), (off_t) pp.bs) < 0)
                        return -errno;
                r = physical_of(fd, PILOT_BLOCK * pp.bs, &pilot);
                if (r < 0)
                        return r;
        }
        pilot /= pp.bs;
        if (pilot_in_pieces(&pp, pilot)) {
                /* The pilot took a block of them. Without a window the caller tries the next range. A
                 * window, on a nearly full filesystem, may be the only free space left: planned once more,
                 * around the pilot (the free ranges now show its block, and the group preallocation it
                 * was served from, if any, as taken). */
                if (!w)
                        return -EAGAIN;
                r = plan_pieces(fd, &pp, (uint64_t) sfs.f_bavail - 1);
                if (r < 0)
                        return r == -ENOSPC ? -EAGAIN : r;
                if (pilot_in_pieces(&pp, pilot))
                        return -EAGAIN;
                replanned = true;
        }
        r = place_segments(fd, pp.bs, pilot, pp.t, pp.n, d);
        if (r < 0)
                return r;
        if (accept_hi > accept_lo ? !segments_within(fd, pp.bs, d, accept_lo, accept_hi) :
            !segments_on_target(fd, pp.bs, pp.t, d))
                return -EAGAIN;
        /* the pieces follow each other on disk and in the file; in a window, where something took a spot of
         * it, the next piece starts a new segment (a run of its own) */
        d->n_segments = 1;
        d->segments[0].blocks = pp.t[0].blocks;
        d->chunk = pp.t[0].blocks;
        for (size_t i = 1; i < pp.n; i++) {
                if (pp.t[i].physical == pp.t[i - 1].physical + pp.t[i - 1].blocks)
                        d->segments[d->n_segments - 1].blocks += pp.t[i].blocks;
                else
                        d->segments[d->n_segments++] = d->segments[i];
                d->chunk = MAX(d->chunk, pp.t[i].blocks);
        }
        d->runs = d->n_segments;
        d->cut = pp.cut;
        d->replanned = replanned;
        d->fd = TAKE_FD(fd);
        return 0;
}

/* The donor aimed at the lowest free space (see donor.h). ext4 has no call to allocate at a given block,
 * but it aims an allocation at the block where the file's nearest extent would continue: goal = that
 * extent's physical start + the logical distance to it (ext4_ext_find_goal). So a one-block pilot extent
 * is allocated first, far out at logical PILOT_BLOCK, wherever it lands (physical p); a piece meant for
 * physical block t is then allocated at logical PILOT_BLOCK + (t - p), which makes t the goal (every piece
 * keeps that mapping, so the nearest extent, pilot or piece, gives the same goal); the pilot is removed
 * again. Only while mb_stream_req is raised does the goal count: for a "stream" allocation ext4 uses its
 * global goal instead. ext4 may still put a piece elsewhere when the target's block group does not suit
 * the request: pieces (segmented) that miss are given up and the donor is made again in one range;
 * for one range the caller judges the result. On success d->fd and d->segments are set (d->runs too for
 * pieces); on failure d->segments may have been written and mean nothing (d->fd stays unset). */
static int donor_create_targeted(int dir_fd, uint64_t bytes, uint64_t group_prealloc, bool segmented, Donor *d) {
        _cleanup_close_ int fd = -EBADF;
        uint64_t bs, per_page, blocks, alloc, pilot = 0, single = 0, bavail;
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
        if (blocks % per_page != 0)
                return -EINVAL;
        /* every physical block number and the donor's range must fit below the pilot's logical block */
        if ((uint64_t) sfs.f_blocks + blocks + per_page >= PILOT_BLOCK)
                return -EFBIG;
        bavail = (uint64_t) sfs.f_bavail;
        /* Never a request that fits in a locality group preallocation (mb_group_prealloc blocks): with
         * mb_stream_req raised ext4 would serve it from the preallocated space wherever that is, before it
         * looks at the goal (ext4_mb_use_preallocated()): a small donor is made longer, the rest unused */
        alloc = MAX(blocks, (group_prealloc + 1 + per_page - 1) / per_page * per_page);
        if (alloc > bavail)
                alloc = blocks;

        fd = openat(dir_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        if (fallocate(fd, 0, (off_t) (PILOT_BLOCK * bs), (off_t) bs) < 0)
                return -errno;
        r = physical_of(fd, PILOT_BLOCK * bs, &pilot);
        if (r < 0)
                return r;
        pilot /= bs;
        /* a page of slack: the donor's logical start must be page aligned, like the files' */
        r = donor_lowest_free(fd, (alloc + per_page - 1) * bs, &single);
        if (r < 0 && r != -ENOSPC)
                return r;
        if (r >= 0)
                single /= bs;
        else if (!segmented)
                return r;
        else
                single = UINT64_MAX;

        if (segmented) {
                /* pieces only where all of them lie below the one range, each big enough to be read in a
                 * sweep and longer than a group preallocation (as above); a quarter more than the files
                 * need, so that a file that does not fit the rest of a piece can start at the next one,
                 * within what ordinary users may use */
                uint64_t min_blocks = MAX(MAX(DONOR_SEGMENT_MIN_BYTES / bs, blocks / DONOR_MAX_SEGMENTS),
                                          group_prealloc + 1);
                SegmentPlan sp = {
                        .bs = bs,
                        .per_page = per_page,
                        .pilot = pilot,
                        .need = blocks + blocks / 4,
                        .avail = bavail,
                        .min_blocks = (min_blocks + per_page - 1) / per_page * per_page,
                        .below = single,
                };

                r = free_ranges_walk(fd, segment_fn, &sp);
                if (r < 0)
                        return r;
                if (sp.n < 2 || sp.got < blocks)
                        return -ENOSPC; /* no pieces below the one range: the caller makes it in one */
                r = place_segments(fd, bs, pilot, sp.t, sp.n, d);
                if (r < 0)
                        return r;
                if (!segments_on_target(fd, bs, sp.t, d))
                        return -EAGAIN;
                d->runs = d->n_segments;
        } else {
                DonorTarget t = { .physical = single + target_skew(per_page, pilot, single), .blocks = alloc };

                r = place_segments(fd, bs, pilot, &t, 1, d);
                if (r < 0)
                        return r;
                d->aimed_at = t.physical;
        }
        d->fd = TAKE_FD(fd);
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

int donor_group_prealloc(const char *sysfs_dir, uint64_t *ret) {
        char path[PATH_MAX], v[64];
        int r;

        if ((size_t) snprintf(path, sizeof path, "%s/mb_group_prealloc", sysfs_dir) >= sizeof path)
                return -ENAMETOOLONG;
        r = (int) read_small_file(path, v, sizeof v);
        if (r < 0)
                return r;
        if (!valid_value(v))
                return -EBADMSG;
        *ret = strtoull(v, NULL, 10);
        return 0;
}

int donor_restore_tunables(const char *state_file) {
        char buf[PATH_MAX + 64], tmp[PATH_MAX];
        char *sp;
        int r;

        if (!state_file)
                return 0;
        if ((size_t) snprintf(tmp, sizeof tmp, "%s.tmp", state_file) < sizeof tmp)
                (void) unlink(tmp);     /* a crash before the rename: the tunable was never changed */

        r = (int) read_small_file(state_file, buf, sizeof buf);
        if (r == -ENOENT)
                return 0;
        if (r == -EFBIG)
                goto bad;
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

/* Buddies (donor_create_buddies()) in up to BUDDY_ATTEMPTS free ranges from block `from` on that start at
 * or below block `limit`, one after the other (landing exactly, or inside [accept_lo, accept_hi) if that is
 * not empty); the first that lands replaces *d (whose fd may be unset). */
static int donor_try_buddies(int dir_fd, uint64_t bytes, uint64_t group_prealloc, uint64_t from, uint64_t limit,
                             uint64_t accept_lo, uint64_t accept_hi, Donor *d) {
        uint64_t skip = from;
        int r = -ENOSPC;

        for (unsigned a = 0; a < BUDDY_ATTEMPTS; a++) {
                Donor b = { .fd = -EBADF };
                uint64_t end = 0;

                r = donor_create_buddies(dir_fd, bytes, group_prealloc, NULL, NULL, limit, skip, accept_lo, accept_hi,
                                         &end, &b);
                if (r >= 0) {
                        b.attempts = d->attempts;
                        donor_done(d);
                        *d = b;
                        return 0;
                }
                if (r != -EAGAIN || end <= skip)
                        return r;
                skip = end;
        }
        return r;
}

/* The one-range donor *d missed its aim: buddies below where it went instead, if they land. */
static int donor_retry_buddies(int dir_fd, uint64_t bytes, uint64_t bs, uint64_t group_prealloc, Donor *d) {
        uint64_t went = 0;
        int r;

        r = physical_of(d->fd, d->segments[0].logical * bs, &went);
        if (r < 0)
                return r;
        return donor_try_buddies(dir_fd, bytes, group_prealloc, 0, went / bs, 0, 0, d);
}

/* Did the one-range donor land where it was aimed, in one run? */
static bool donor_on_target(const Donor *d, uint64_t bs) {
        uint64_t phys = 0, runs = 0;

        return physical_of(d->fd, d->segments[0].logical * bs, &phys) >= 0 && phys == d->aimed_at * bs &&
                donor_count_runs(d->fd, d->segments[0].logical * bs, d->segments[0].blocks * bs, &runs) >= 0 &&
                runs == 1;
}

/* The donor made with mb_stream_req raised for the moment of its fallocates: then it counts as a "small"
 * file, whose allocation goes to the goal its extents or its inode give, instead of the global stream goal,
 * which is wherever the last large allocation ended. Aimed at the lowest free space
 * (donor_create_targeted()): in pieces when they all lie below the lowest range that holds it whole, else
 * in that range; when there is none (or that fails) without a pilot, so that the goal is the inode's block
 * group (the first data group of the flex group of dir_fd's group). Returns 0 with d->fd set, or a
 * negative errno; -EAGAIN when the tunable could not be set (nothing was allocated then). */
static int donor_create_steered(int dir_fd, uint64_t bytes, uint64_t bs, const char *sysfs_dir,
                                const char *state_file, const DonorWindow *w, int *pilot_fd, Donor *d) {
        char path[PATH_MAX], orig[64];
        uint64_t group_prealloc = 0;
        bool segmented = false;
        int r, r2;

        if ((size_t) snprintf(path, sizeof path, "%s/" STREAM_REQ_NAME, sysfs_dir) >= sizeof path ||
            !valid_tunable_path(path))
                return -EAGAIN;
        /* a state file left by a crash means the current value is not the original one */
        if (donor_restore_tunables(state_file) < 0 && access(state_file, F_OK) == 0)
                return -EAGAIN;
        if (read_small_file(path, orig, sizeof orig) < 0 || !valid_value(orig))
                return -EAGAIN;
        /* pieces only when we know how long a group preallocation can be (see donor_create_targeted()) */
        segmented = donor_group_prealloc(sysfs_dir, &group_prealloc) >= 0;
        if (write_state_file(state_file, path, orig) < 0)
                return -EAGAIN;
        r = write_sysfs(path, STREAM_REQ_RAISED);
        if (r >= 0 && w && w->start != UINT64_MAX && segmented &&
            donor_create_buddies(dir_fd, bytes, group_prealloc, w, pilot_fd, 0, 0, 0, 0, NULL, d) >= 0)
                d->in_window = true;
        else if (r >= 0 && w && w->start == UINT64_MAX && w->near > 0 && segmented &&
                 donor_try_buddies(dir_fd, bytes, group_prealloc, w->near, w->near + NEAR_SPAN_BYTES / bs,
                                   w->near - MIN(w->near, NEAR_SPAN_BYTES / bs), w->near + NEAR_SPAN_BYTES / bs,
                                   d) >= 0)
                d->near = true;
        else if (r >= 0) {
                if (segmented && donor_create_targeted(dir_fd, bytes, group_prealloc, true, d) >= 0)
                        ;       /* in pieces below the one range */
                else if (donor_create_targeted(dir_fd, bytes, group_prealloc, false, d) >= 0) {
                        /* Not where it was aimed (ext4 took another block group): in buddies of the lowest free
                         * space below where it went instead, while the first one is held. Tried only then:
                         * blocks of a donor that is given up stay taken until the journal commits, so a failed
                         * attempt spoils its range, for a while; the next attempt takes the next range. */
                        if (segmented && !donor_on_target(d, bs))
                                (void) donor_retry_buddies(dir_fd, bytes, bs, group_prealloc, d);
                } else {
                        int fd = donor_create(dir_fd, bytes);

                        if (fd >= 0)
                                donor_set_one(d, fd, 0, bytes / bs);
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
        return d->fd >= 0 ? 0 : -ENOSPC;
}

void donor_set_one(Donor *d, int fd, uint64_t logical, uint64_t blocks) {
        d->fd = fd;
        d->segments[0] = (DonorSegment) { .logical = logical, .blocks = blocks };
        d->n_segments = 1;
}

int donor_physical(const Donor *d, uint64_t block_size, uint64_t *ret) {
        if (d->fd < 0 || d->n_segments == 0)
                return -EBADF;
        return physical_of(d->fd, d->segments[0].logical * block_size, ret);
}

void donor_done(Donor *d) {
        d->fd = safe_close(d->fd);
        d->n_segments = 0;
}

int donor_allocate(int dir_fd, uint64_t bytes, const char *sysfs_dir, const char *state_file, DonorWindow *w,
                   Donor *ret) {
        /* freed here if it does not become the donor (a pilot that could not be used is one block) */
        _cleanup_close_ int pilot_fd = w && w->pilot ? TAKE_FD(w->pilot_fd) : -EBADF;
        Donor d = { .fd = -EBADF }, d2 = { .fd = -EBADF };
        struct statfs sfs;
        uint64_t bs;
        int r;

        *ret = (Donor) { .fd = -EBADF };
        if (fstatfs(dir_fd, &sfs) < 0)
                return -errno;
        bs = (uint64_t) sfs.f_bsize;
        if (bs == 0 || bytes == 0 || bytes % bs != 0)
                return -EINVAL;
        if (w)
                w->pilot = false;
        if (sysfs_dir && state_file) {
                d.attempts++;
                r = donor_create_steered(dir_fd, bytes, bs, sysfs_dir, state_file, w, &pilot_fd, &d);
                if (r >= 0) {
                        if (d.n_segments > 1 || d.in_window)
                                goto done;      /* every piece where it was aimed, each one run */
                        r = donor_count_runs(d.fd, d.segments[0].logical * bs, bytes, &d.runs);
                        if (r < 0)
                                goto fail;
                        if (d.runs <= donor_acceptable_runs(bytes))
                                goto done;
                }
                /* ENOSPC too: the stream allocation below may still find room elsewhere */
        }

        /* the allocator's own choice, while we still hold the steered donor (so it can't take its blocks) */
        d.attempts++;
        r = donor_create(dir_fd, bytes);
        if (r < 0) {
                if (d.fd >= 0)
                        goto done;      /* no room for a second one: keep the first */
                return r;
        }
        donor_set_one(&d2, r, 0, bytes / bs);
        r = donor_count_runs(d2.fd, 0, bytes, &d2.runs);
        if (r < 0)
                goto fail;
        if (d.fd < 0 || d2.runs < d.runs) {
                d2.attempts = d.attempts;
                donor_done(&d);
                d = d2;
                d2 = (Donor) { .fd = -EBADF };
        }
done:
        donor_done(&d2);
        *ret = d;
        return 0;
fail:
        donor_done(&d);
        donor_done(&d2);
        return r;
}
