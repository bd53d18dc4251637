/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <ext2fs/ext2fs.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/macro.h"
#include "common/alloc-util.h"
#include "relocate/room.h"

/* how much of the start of the disk is looked at */
#define ROOM_REGION_BYTES (UINT64_C(8) << 30)

/* A file with data in the window: its lowest block there, and all its blocks (it is moved whole). */
typedef struct Hit {
        uint64_t ino, block, blocks;
} Hit;

typedef struct Extent2 {
        uint64_t physical, length;
} Extent2;

typedef struct Scan {
        uint64_t cell, n_cells;         /* cells [0, n_cells) of `cell` blocks each are looked at */
        uint64_t *used, *data;          /* per cell: blocks in use, blocks of movable regular files' data */
        bool *pinned;                   /* per cell: holds something that must stay */
        uint64_t pilot_cell;            /* the cell of the donor's pilot (UINT64_MAX: none), not counted in use */
        const uint64_t *keep;
        size_t n_keep;
        uint64_t max_ino;               /* inodes above are not read */
        /* second pass: the files with data in cells [window_first, window_end) */
        uint64_t window_first, window_end;
        Hit *hits;
        size_t n_hits, n_hits_alloc;
        Extent2 *ext;                   /* one file's extents (reused) */
        size_t n_ext_alloc;
} Scan;

static void fs_closep(ext2_filsys *fs) {
        if (*fs)
                (void) ext2fs_close_free(fs);
}

static int errcode_to_errno(errcode_t e) {
        /* libext2fs passes system errors through as errno values; its own codes are far above them */
        return e > 0 && e < 4096 ? -(int) e : -EIO;
}

static int cmp_hit(const void *a, const void *b) {
        const Hit *x = a, *y = b;

        if (x->block != y->block)
                return x->block < y->block ? -1 : 1;
        return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static int count_used(ext2_filsys fs, Scan *s) {
        _cleanup_free_ uint8_t *bits = malloc(s->cell / 8);
        errcode_t e;

        if (!bits)
                return -ENOMEM;
        e = ext2fs_read_block_bitmap(fs);
        if (e)
                return errcode_to_errno(e);
        for (uint64_t u = 0; u < s->n_cells; u++) {
                e = ext2fs_get_block_bitmap_range2(fs->block_map, u * s->cell, s->cell, bits);
                if (e)
                        return errcode_to_errno(e);
                for (uint64_t i = 0; i < s->cell / 8; i++)
                        s->used[u] += (uint64_t) __builtin_popcount(bits[i]);
        }
        if (s->pilot_cell < s->n_cells && s->used[s->pilot_cell] > 0)
                s->used[s->pilot_cell]--;
        return 0;
}

/* Cells [c, c + len) of a window for need cells: the pilot's takes one more */
static bool window_holds(const Scan *s, uint64_t c, uint64_t len, uint64_t need) {
        return len >= need + (s->pilot_cell >= c && s->pilot_cell < c + len);
}

/* One extent [p, p + len): counted in the cells it touches; *lowest = its lowest block in the window
 * (UINT64_MAX when none). */
static void account_extent(Scan *s, uint64_t p, uint64_t len, bool movable, uint64_t *lowest) {
        uint64_t end = p + len;

        for (uint64_t u = p / s->cell; u < s->n_cells && u * s->cell < end; u++) {
                uint64_t a = MAX(p, u * s->cell), b = MIN(end, (u + 1) * s->cell);

                s->data[u] += b - a;
                if (!movable)
                        s->pinned[u] = true;
                if (u >= s->window_first && u < s->window_end)
                        *lowest = MIN(*lowest, a);
        }
}

/* The leaf extents of one regular file. Files of `keep`, immutable or append-only ones, and files with
 * blocks past their end (which the mover leaves where they are) pin every cell they touch. A file whose
 * extent tree can't be read is left out: its blocks then count as in use by something else. */
static int account_file(ext2_filsys fs, Scan *s, ext2_ino_t ino, struct ext2_inode *inode) {
        uint64_t size = EXT2_I_SIZE(inode), end_block = (size + fs->blocksize - 1) / fs->blocksize;
        uint64_t blocks = 0, lowest = UINT64_MAX;
        bool movable = !(inode->i_flags & (EXT2_IMMUTABLE_FL | EXT2_APPEND_FL)) &&
                !bsearch_safe(&(uint64_t) { ino }, s->keep, s->n_keep, sizeof *s->keep, cmp_uint64);
        ext2_extent_handle_t h = NULL;
        struct ext2fs_extent e;
        size_t n = 0;

        if (ext2fs_extent_open2(fs, ino, inode, &h))
                return 0;
        for (int op = EXT2_EXTENT_ROOT; !ext2fs_extent_get(h, op, &e); op = EXT2_EXTENT_NEXT_LEAF) {
                if (!(e.e_flags & EXT2_EXTENT_FLAGS_LEAF) || e.e_len == 0)
                        continue;
                if (e.e_lblk + e.e_len > end_block)
                        movable = false;
                if (GREEDY_REALLOC(s->ext, s->n_ext_alloc, n + 1) < 0) {
                        ext2fs_extent_free(h);
                        return -ENOMEM;
                }
                s->ext[n++] = (Extent2) { .physical = e.e_pblk, .length = e.e_len };
                blocks += e.e_len;
        }
        ext2fs_extent_free(h);
        for (size_t i = 0; i < n; i++)
                account_extent(s, s->ext[i].physical, s->ext[i].length, movable, &lowest);
        if (lowest != UINT64_MAX && movable) {
                if (GREEDY_REALLOC(s->hits, s->n_hits_alloc, s->n_hits + 1) < 0)
                        return -ENOMEM;
                s->hits[s->n_hits++] = (Hit) { .ino = ino, .block = lowest, .blocks = blocks };
        }
        return 0;
}

static int scan_inodes(ext2_filsys fs, Scan *s) {
        ext2_inode_scan scan = NULL;
        struct ext2_inode_large large;
        struct ext2_inode *inode = (struct ext2_inode *) &large;
        errcode_t e;
        int r = 0;

        e = ext2fs_open_inode_scan(fs, 0, &scan);
        if (e)
                return errcode_to_errno(e);
        for (;;) {
                ext2_ino_t ino;

                e = ext2fs_get_next_inode_full(scan, &ino, inode, sizeof large);
                /* an inode being written right now can read torn (checksum): skipped, its blocks then
                 * count as in use by something else */
                if (e == EXT2_ET_BAD_BLOCK_IN_INODE_TABLE || e == EXT2_ET_INODE_CSUM_INVALID ||
                    e == EXT2_ET_INODE_IS_GARBAGE)
                        continue;
                if (e) {
                        r = errcode_to_errno(e);
                        break;
                }
                if (ino == 0 || ino > s->max_ino)
                        break;
                if (ino < EXT2_FIRST_INODE(fs->super) || inode->i_links_count == 0 ||
                    !LINUX_S_ISREG(inode->i_mode) || !(inode->i_flags & EXT4_EXTENTS_FL) ||
                    (inode->i_flags & EXT4_INLINE_DATA_FL))
                        continue;       /* their blocks, if any, stay "in use by something else" */
                r = account_file(fs, s, ino, inode);
                if (r < 0)
                        break;
        }
        ext2fs_close_inode_scan(scan);
        return r;
}

/* Do cells [c, c + len) hold only movable file data, and how much (*ret_move)? */
static bool cells_clear(const Scan *s, uint64_t c, uint64_t len, uint64_t *ret_move) {
        uint64_t move = 0;

        for (uint64_t u = c; u < c + len; u++) {
                if (s->pinned[u] || s->used[u] != s->data[u])
                        return false;
                move += s->data[u];
        }
        *ret_move = move;
        return true;
}

/* A donor longer than a block group: the lowest window of largest buddies that starts at the start of a
 * block group and runs on through the next ones, none of them the first of its flex group (the
 * power-of-two pass skips those for file data); a group with a backup superblock can't be in it (its first
 * blocks are metadata). Starting each group at its start, the window's buddies are the group's lowest free
 * ones of their size, which that pass takes first. An eighth longer than the donor: the files moved out go
 * into a donor ext4 places by itself, which takes free blocks wherever they are, the window's own free
 * holes too, and the donor is then made around them (donor.c). */
static bool pick_window_groups(const Scan *s, uint64_t cells_per_group, uint64_t flex, uint64_t need_cells,
                               unsigned order_max, uint64_t max_move, uint64_t *ret_first, uint64_t *ret_cells,
                               uint64_t *ret_buddy, uint64_t *ret_move) {
        uint64_t b = UINT64_C(1) << order_max, len = (need_cells + need_cells / 8 + b - 1) / b * b;
        uint64_t groups = (len + cells_per_group - 1) / cells_per_group;

        for (uint64_t g = 0; (g * cells_per_group) + len <= s->n_cells; g++) {
                uint64_t move = 0;
                bool ok = true;

                for (uint64_t h = g; h < g + groups && ok; h++)
                        ok = !(flex >= 4 && h % flex == 0);
                if (!ok || !window_holds(s, g * cells_per_group, len, need_cells) ||
                    !cells_clear(s, g * cells_per_group, len, &move) || move > max_move)
                        continue;
                *ret_first = g * cells_per_group;
                *ret_cells = len;
                *ret_buddy = b;
                *ret_move = move;
                return true;
        }
        return false;
}

/* The lowest window of buddies of one order (whole cells each: 2^k cells, k = 0..order_max) inside one block
 * group that ext4's power-of-two pass serves (not the first group of a flex group), enough of them for
 * need_cells, every cell holding only movable file data, at most max_move blocks of it. On a tie the
 * larger buddies (fewer requests). A donor longer than a block group: pick_window_groups(). */
static bool pick_window(const Scan *s, uint64_t cells_per_group, uint64_t flex, uint64_t need_cells,
                        unsigned order_max, uint64_t max_move, uint64_t *ret_first, uint64_t *ret_cells,
                        uint64_t *ret_buddy, uint64_t *ret_move) {
        bool found = false;

        if (need_cells > cells_per_group)
                return pick_window_groups(s, cells_per_group, flex, need_cells, order_max, max_move, ret_first,
                                          ret_cells, ret_buddy, ret_move);
        for (unsigned k = order_max + 1; k-- > 0;) {
                uint64_t b = UINT64_C(1) << k, len = (need_cells + b - 1) / b * b;

                if (len > cells_per_group)
                        continue;
                for (uint64_t g = 0; g * cells_per_group < s->n_cells; g++) {
                        uint64_t end = MIN((g + 1) * cells_per_group, s->n_cells);

                        if (flex >= 4 && g % flex == 0)
                                continue;
                        if (found && g * cells_per_group >= *ret_first)
                                break;
                        for (uint64_t c = g * cells_per_group; c + len <= end; c += b) {
                                uint64_t move = 0;
                                bool ok = true;

                                if (found && c >= *ret_first)
                                        break;
                                if (!window_holds(s, c, len, need_cells))
                                        continue;
                                for (uint64_t u = c; u < c + len && ok; u++) {
                                        ok = !s->pinned[u] && s->used[u] == s->data[u];
                                        move += s->data[u];
                                }
                                if (ok && move <= max_move) {
                                        *ret_first = c;
                                        *ret_cells = len;
                                        *ret_buddy = b;
                                        *ret_move = move;
                                        found = true;
                                        break;
                                }
                        }
                }
        }
        return found;
}

int room_plan(const char *device, dev_t dev, uint64_t need_blocks, uint64_t below, uint64_t min_chunk_blocks,
              uint64_t max_move_blocks, const uint64_t *keep, size_t n_keep, uint64_t pilot, RoomPlan *ret) {
        _cleanup_(fs_closep) ext2_filsys fs = NULL;
        _cleanup_free_ uint64_t *used = NULL, *data = NULL, *keep_sorted = NULL, *inodes = NULL;
        _cleanup_free_ bool *pinned = NULL;
        _cleanup_free_ Hit *hits = NULL;
        uint64_t unit, cell, per_group, flex, first = 0, cells = 0, buddy = 0, move = 0;
        unsigned order_max = 0;
        size_t n_inodes = 0;
        struct stat st;
        Scan s;
        errcode_t e;
        int r;

        *ret = (RoomPlan) {};
        if (need_blocks == 0)
                return -EINVAL;
        if (stat(device, &st) < 0)
                return -errno;
        if (!S_ISBLK(st.st_mode) || st.st_rdev != dev)
                return -ENODEV;
        /* read-only, buffered (O_DIRECT would miss the metadata ext4 has in memory), no O_EXCL */
        e = ext2fs_open2(device, NULL, EXT2_FLAG_64BITS | EXT2_FLAG_SKIP_MMP | EXT2_FLAG_IGNORE_CSUM_ERRORS, 0, 0,
                         unix_io_manager, &fs);
        if (e)
                return errcode_to_errno(e);
        /* mballoc's largest buddy: order block-size-bits + 1 */
        unit = UINT64_C(2) << (EXT2_MIN_BLOCK_LOG_SIZE + fs->super->s_log_block_size);
        if (EXT2FS_CLUSTER_RATIO(fs) != 1 || fs->super->s_first_data_block != 0 ||
            EXT2_BLOCKS_PER_GROUP(fs->super) % unit != 0 || (long) fs->blocksize != sysconf(_SC_PAGESIZE))
                return -EOPNOTSUPP;
        /* the smallest chunk: the smallest buddy longer than min_chunk_blocks */
        for (cell = unit; cell / 2 > min_chunk_blocks && cell > 1; cell /= 2)
                order_max++;
        if (cell <= min_chunk_blocks)
                return -ENOSPC;
        per_group = EXT2_BLOCKS_PER_GROUP(fs->super) / cell;
        flex = ext2fs_has_feature_flex_bg(fs->super) ? UINT64_C(1) << fs->super->s_log_groups_per_flex : 1;
        /* Only the start of the disk (ROOM_REGION_BYTES) is looked at, but every inode in use is read (the
         * scan skips the never used part of each group's inode table): on a full, aged disk a file's data
         * lies anywhere, whatever flex group holds its inode (reading only the region's own inodes, a
         * directory of files whose inode Orlov put further out made every cell "in use by something else",
         * and no window was found at all). */
        below = MIN(MIN(below, ext2fs_blocks_count(fs->super)), ROOM_REGION_BYTES / fs->blocksize);

        if (n_keep > 0) {
                keep_sorted = malloc(n_keep * sizeof *keep);
                if (!keep_sorted)
                        return -ENOMEM;
                memcpy(keep_sorted, keep, n_keep * sizeof *keep);
                qsort_safe(keep_sorted, n_keep, sizeof *keep_sorted, cmp_uint64);
        }
        s = (Scan) {
                .cell = cell,
                .n_cells = below / cell,
                .keep = keep_sorted,
                .n_keep = n_keep,
                .max_ino = fs->super->s_inodes_count,
                .pilot_cell = pilot == UINT64_MAX ? UINT64_MAX : pilot / cell,
        };
        if (s.n_cells == 0)
                return -ENOSPC;
        used = s.used = calloc(s.n_cells, sizeof *used);
        data = s.data = calloc(s.n_cells, sizeof *data);
        pinned = s.pinned = calloc(s.n_cells, sizeof *pinned);
        if (!used || !data || !pinned)
                return -ENOMEM;
        r = count_used(fs, &s);
        if (r >= 0)
                r = scan_inodes(fs, &s);
        if (r >= 0 && !pick_window(&s, per_group, flex, (need_blocks + cell - 1) / cell, order_max, max_move_blocks,
                                   &first, &cells, &buddy, &move))
                r = -ENOSPC;
        if (r >= 0) {
                /* again, for the files in the window (a second read of the inode tables, instead of keeping
                 * where every file on the disk's low part lies) */
                s.window_first = first;
                s.window_end = first + cells;
                r = scan_inodes(fs, &s);
        }
        hits = s.hits;
        free(s.ext);
        if (r < 0)
                return r;

        /* the window's files, in the order their data lies there; each is moved whole */
        qsort_safe(hits, s.n_hits, sizeof *hits, cmp_hit);
        inodes = calloc(MAX(s.n_hits, (size_t) 1), sizeof *inodes);
        if (!inodes)
                return -ENOMEM;
        move = 0;
        for (size_t i = 0; i < s.n_hits; i++) {
                inodes[n_inodes++] = hits[i].ino;
                move += hits[i].blocks;
        }
        if (move > max_move_blocks)
                return -ENOSPC;
        *ret = (RoomPlan) {
                .start = first * cell,
                .blocks = cells * cell,
                .chunk = buddy * cell,
                .group_start = first * cell / EXT2_BLOCKS_PER_GROUP(fs->super) * EXT2_BLOCKS_PER_GROUP(fs->super),
                .group_blocks = EXT2_BLOCKS_PER_GROUP(fs->super),
                .move_blocks = move,
                .inodes = TAKE_PTR(inodes),
                .n_inodes = n_inodes,
        };
        return 0;
}

void room_plan_done(RoomPlan *p) {
        free(p->inodes);
        *p = (RoomPlan) {};
}
