/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The mover making room for its donor on scratch ext4 images (needs root, loop devices, mkfs.ext4, e2fsck):
 * windows in one block group, over several, or of one whole group on a full filesystem; also when the files
 * moved out land inside the window and the donor is made around them, when the files around the window have
 * their inodes far out, and when a file in the window can't be moved. Everything it creates is torn down by
 * an atexit handler, also when an assertion fails. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/statfs.h>

#include "test-mover-aged.h"
#include "test-mover-util.h"

static LoopFs fs_room, fs_busy, fs_scope, fs_groups, fs_spots, fs_spots_tight, fs_unit, fs_unit_tight;

/* every other MiB of block groups 1-4 (128-640 MiB), and 660-700 MiB whole */
static int drop_room(uint64_t mib) {
        if (mib >= 660 && mib < 700)
                return 2;
        return mib >= 128 && mib < 640 && mib % 2 == 1;
}

/* Making room (room.h): block groups 1-4 are cut up into 1 MiB pieces, so no free range there holds even
 * a group preallocation; the only range that holds the 12 MiB donor is a 40 MiB gap in group 5. With
 * make_room the mover must move the other files out of a window low in group 1 (64 MiB or more below that
 * gap) and put the files there; the files moved out must be intact, none left in the window. */
TEST(room) {
        MoverStats st;
        uint64_t first, lowest, gap_lo, gap_hi;

        aged_scenario(&fs_room, "room", drop_room, true, false, 0, &st, &first, &lowest, &gap_lo, &gap_hi);
        ASSERT_TRUE(lowest >= gap_lo && lowest < gap_hi);      /* the premise */
        ASSERT_TRUE(st.room_start >= 128 * MiB && st.room_start + 64 * MiB <= gap_lo);
        ASSERT_TRUE(st.room_files > 0);
        ASSERT_TRUE(st.room_cleared);
        ASSERT_TRUE(st.room_used);
        ASSERT_TRUE(st.donor_chunk > 0);
        ASSERT_EQ(first, st.room_start);
}

/* every other MiB of 32-512 MiB (block groups 1-15 of 32 MiB), and 600-700 MiB whole */
static int drop_groups(uint64_t mib) {
        if (mib >= 600 && mib < 700)
                return 2;
        return mib >= 32 && mib < 512 && mib % 2 == 1;
}

enum { GROUPS_NF = 8 };
static const uint64_t groups_sizes[GROUPS_NF] = { 6 * MiB, 4 * MiB, 5 * MiB, 3 * MiB, 8 * MiB, 4 * MiB, 6 * MiB,
                                                  4 * MiB };

/* Making room for a donor longer than a block group: block groups of 32 MiB (mkfs -g 8192), 1-15 cut up
 * into 1 MiB pieces, the only range that holds the 40 MiB donor a 100 MiB gap at 600 MiB. The window must
 * span two whole groups, start at a group's start (neither group the first of its flex group or one with a
 * backup superblock) 64 MiB or more below the gap, and take the files back to back in one run; every file
 * (moved, moved out, left) intact (FNV and sha256 read back from the disk), none left in the window, e2fsck
 * clean. Without windows over several groups the donor goes to the gap. */
TEST(room_groups) {
        MoverStats st;
        uint64_t first, lowest, gap_lo, gap_hi, group = 32 * MiB;

        aged_scenario_with(&fs_groups, "groups", "-g 8192", NULL, groups_sizes, GROUPS_NF, drop_groups, true, false, 0,
                           &st, &first, &lowest, &gap_lo, &gap_hi);
        ASSERT_TRUE(lowest >= gap_lo && lowest < gap_hi);      /* the premise */
        ASSERT_TRUE(st.room_cleared);
        ASSERT_TRUE(st.room_used);
        ASSERT_TRUE(st.room_files > 0);
        ASSERT_EQ(st.room_start % group, 0);
        ASSERT_TRUE(st.room_start >= 2 * group && st.room_start + 64 * MiB <= gap_lo);
        ASSERT_EQ(first, st.room_start);
        /* the 40 MiB reach into the window's second group */
        ASSERT_TRUE(first / group != (first + 40 * MiB - 1) / group);
}

/* 256-288 MiB whole (block group 8 of 32 MiB), and the MiB at 300 */
static int drop_unit(uint64_t mib) {
        return mib >= 256 && mib < 288 ? 2 : mib == 300;
}

/* With unit_tight, the reserve set so that ordinary users may allocate 8 blocks more than a unit once the
 * pilot is made (what the files moved out of the window take, then what the donor gets): fewer than the
 * unit and the donor's 16 spare blocks. Else no reserve. */
static bool unit_tight;

static void unit_prepare(LoopFs *fs) {
        struct statfs sfs;

        set_reserved_clusters(fs, 0);
        ASSERT_EQ(fstatfs(fs->mount_fd, &sfs), 0);
        if (unit_tight) {
                ASSERT_TRUE(sfs.f_bavail > 8192 + 8 + 1);
                set_reserved_clusters(fs, sfs.f_bavail - (8192 + 8 + 1));
                ASSERT_EQ(fstatfs(fs->mount_fd, &sfs), 0);
        }
        printf("  free: %llu blocks, %llu of them for ordinary users\n", (unsigned long long) sfs.f_bfree,
               (unsigned long long) sfs.f_bavail);
}

enum { UNIT_NF = 7 };

/* A window of one unit (a whole block group of 32 MiB: mkfs -g 8192, 320 MiB, backup superblocks only in
 * groups 1 and 9, the journal in group 0) that is the only free space with room for a group preallocation
 * once cleared: the filesystem full to the last block (the files to move, 1 MiB files, then 4 KiB ones),
 * but for group 8, which takes the 32 MiB of files moved out of the window, and the MiB at 300. The donor
 * must be made in the window, the files back to back in one run there; checked as room_groups. */
static void unit_scenario(LoopFs *fs, const char *name, const uint64_t *sizes, MoverStats *st) {
        uint64_t first, lowest, gap_lo, gap_hi, group = 32 * MiB;

        aged_mb = 320;
        aged_fill_rest = true;
        aged_prepare = unit_prepare;
        aged_scenario_with(fs, name, "-g 8192 -m 0 -O sparse_super2 -J location=8M", NULL, sizes, UNIT_NF,
                           drop_unit, true, false, 0, st, &first, &lowest, &gap_lo, &gap_hi);
        aged_mb = 0;
        aged_fill_rest = false;
        aged_prepare = NULL;
        ASSERT_TRUE(lowest >= gap_lo && lowest < gap_hi);      /* the premise */
        printf("  last buddy cut: %d; planned again around the pilot: %d\n", st->room_cut, st->room_replanned);
        ASSERT_TRUE(st->room_cleared);
        ASSERT_TRUE(st->room_files > 0);
        ASSERT_EQ(st->room_start % group, 0);
        ASSERT_TRUE(st->room_used);
        ASSERT_EQ(first, st->room_start);
        /* the pilot, made before the window was chosen, is outside it: no piece planned again */
        ASSERT_TRUE(!st->room_replanned);
}

/* 30.5 MiB: less than the unit, more than its 28 MiB of whole buddies past its first 4 MiB */
static const uint64_t unit_sizes[UNIT_NF] = { 6 * MiB, 4 * MiB, 5 * MiB, 3 * MiB, 4608 * KiB, 4 * MiB, 4 * MiB };

/* The donor's pilot block, made once the window was clear, landed at the window's start: the window's
 * first 4 MiB, less than a whole buddy longer than a group preallocation, were lost to the donor, whose
 * 30.5 MiB no longer fitted in its pieces (seen on 6.18: the donor "went elsewhere", made the usual way 4
 * KiB into the window, the one free range that held it). No reserve. */
TEST(room_unit) {
        MoverStats st;

        unit_scenario(&fs_unit, "unit", unit_sizes, &st);
        ASSERT_TRUE(!st.room_cut);
}

/* 27 MiB: the unit is one whole buddy, 32 MiB, more than ordinary users may allocate here (unit_tight):
 * the donor's pieces must be cut to 28 MiB (4096 + 2048 + 1024 blocks: room_cut). */
static const uint64_t unit_tight_sizes[UNIT_NF] = { 6 * MiB, 4 * MiB, 5 * MiB, 3 * MiB, 4 * MiB, 3 * MiB, 2 * MiB };

TEST(room_unit_tight) {
        MoverStats st;

        unit_tight = true;
        unit_scenario(&fs_unit_tight, "unit-tight", unit_tight_sizes, &st);
        unit_tight = false;
        ASSERT_TRUE(st.room_cut);
}

/* every other MiB of 128-384 MiB (block groups 1 and 2), 400-440 MiB whole */
static int drop_scope(uint64_t mib) {
        if (mib >= 400 && mib < 440)
                return 2;
        return mib >= 128 && mib < 384 && mib % 2 == 1;
}

/* Making room when the files around the window have their inodes far out: flex groups of two block groups
 * (mkfs -G 2), the 1 MiB files made in a directory whose inode is in group 4 or 5 (so are theirs), their
 * data everywhere; the lowest range that holds the donor is a gap at 400 MiB, in group 3. The window's
 * files must be found (every inode in use read, not only those of the flex groups below the window's
 * limit, which would leave every cell "in use by something else") and the donor made there. */
TEST(room_scope) {
        MoverStats st;
        uint64_t first, lowest, gap_lo, gap_hi;

        aged_scenario_with(&fs_scope, "scope", "-G 2", "far", aged_sizes, AGED_NF, drop_scope, true, false, 0, &st,
                           &first, &lowest, &gap_lo, &gap_hi);
        /* the premise (group 2's metadata shifts the files of groups 2-3 off MiB boundaries) */
        ASSERT_TRUE(lowest + MiB > gap_lo && lowest < gap_hi);
        ASSERT_TRUE(st.room_cleared);
        ASSERT_TRUE(st.room_used);
        ASSERT_TRUE(st.room_files > 0);
        ASSERT_TRUE(st.room_start + 64 * MiB <= gap_lo);
        ASSERT_EQ(first, st.room_start);
}

/* Spots: the window of a donor longer than a block group, where the files moved out of it must land
 * inside it (the only free space is the window's own holes), so that the donor is made around them. */
static uint64_t spots_base;     /* MiB: the block group where the window is to start */
static uint64_t spots_headroom; /* MiB freed right before the window */

/* in the 64 MiB from spots_base: the 4 MiB at 0, 12, 24, 36, 48 and 60 MiB in keep their files, the
 * others are deleted (holes of 8 MiB); the spots_headroom MiB before it are deleted too (headroom for the
 * donor, see room_spots); everything else stays full */
static int drop_spots(uint64_t mib) {
        if (mib + spots_headroom >= spots_base && mib < spots_base)
                return 1;
        return mib >= spots_base && mib < spots_base + 64 && (mib - spots_base) / 4 % 3 != 0;
}

static bool extents_overlap(const Extent *a, size_t na, const Extent *b, size_t nb) {
        for (size_t i = 0; i < na; i++)
                for (size_t j = 0; j < nb; j++)
                        if (a[i].physical < b[j].physical + b[j].length && b[j].physical < a[i].physical + a[i].length)
                                return true;
        return false;
}

enum { SPOTS_NF = 7, SPOTS_MAXFILL = 400 };
/* 33 MiB: longer than a block group of 32 MiB, so the window spans two (an eighth more, in buddies of 32 MiB) */
static const uint64_t spots_sizes[SPOTS_NF] = { 6 * MiB, 4 * MiB, 5 * MiB, 3 * MiB, 7 * MiB, 4 * MiB, 4 * MiB };

/* Making room over several block groups when the files moved out land inside the window: 320 MiB, block
 * groups of 32 MiB, backup superblocks only in groups 1 and 9 (sparse_super2), the journal in group 0, no
 * reserved blocks; the 33 MiB of files to move are written first, then the filesystem is filled with 1 MiB
 * files, and in the two groups after the one where the files to move end only the 4 MiB at every 12 MiB
 * keep theirs (24 MiB of files, 40 MiB of holes), and the 4 MiB before them are freed. Those two groups are
 * the lowest window (the groups before hold metadata, a backup superblock or the files to move), and the
 * only other free space is those 4 MiB and what the fill cannot take (ext4's own reserve,
 * reserved_clusters: 6.4 MiB): at least 20 of the 24 files moved out of the window must go into its holes
 * (the path this test is for, asserted from FIEMAP: some of them inside the window afterwards, between the
 * moved files; so far all 24), and the donor must be made in pieces around those spots, in the window. Its
 * pieces are whole buddies, 40 MiB for the 33 MiB; the 4 MiB are headroom for them (and the pilot block):
 * without them what ordinary users may use was 150 blocks more than the pieces, and with the free space
 * outside the window filled as well (tried by hand) exactly as much, and the pieces' fallocate failed
 * (ENOSPC; the donor went elsewhere). The free space is printed. Checked from the disk: every file intact
 * (FNV of each, read back from the disk, and sha256sum of every file on the filesystem), the moved files
 * inside the window in their order, none of their blocks shared with another file, the other files where
 * they were, e2fsck clean. Fails when the donor's pieces are taken as one segment across the spots (files
 * moved only in part), when they are planned through the spots (the donor is not made in the window) and
 * when a segment after a spot starts one block early, inside it (a block left outside the window). */
static void spots_scenario(LoopFs *fs, const char *name, uint64_t headroom_mib, uint64_t avail_mib) {
        const uint64_t group = 32 * MiB, window = 2 * group;
        char *paths[SPOTS_NF], *fill[SPOTS_MAXFILL];
        uint64_t sums[SPOTS_NF], fill_sum[SPOTS_MAXFILL], hot_end = 0, gap_lo, gap_hi;
        uint64_t ws, we, prev_end = 0, lo = UINT64_MAX, hi = 0, inside = 0, between = 0, phys;
        Extent *hot[SPOTS_NF], *before[SPOTS_MAXFILL];
        size_t nhot[SPOTS_NF], nbefore[SPOTS_MAXFILL], nfill, n_out = 0, kept = 0;
        bool alive[SPOTS_MAXFILL], was_in[SPOTS_MAXFILL];
        MoveItem items[SPOTS_NF];
        MoveOutcome out[SPOTS_NF];
        MoverStats st;
        MoverOptions o;

        fs_setup_with(fs, name, 320, "-g 8192 -m 0 -O sparse_super2 -J location=8M");
        uint64_t orig_stream = fs_tunable(fs, "mb_stream_req");
        make_files(fs, name, paths, spots_sizes, SPOTS_NF);
        sync();
        for (size_t i = 0; i < SPOTS_NF; i++) {
                Extent *e = extents_of(paths[i], &nhot[i]);

                for (size_t j = 0; j < nhot[i]; j++)
                        hot_end = MAX(hot_end, e[j].physical + e[j].length);
                free(e);
        }
        /* the window: the two groups after the one where the files to move end (group 2 at least: group 0
         * holds the metadata, 1 a backup superblock; 9, the last, the other) */
        spots_base = MAX(hot_end / group + 1, (uint64_t) 2) * group / MiB;
        spots_headroom = headroom_mib;
        ASSERT_TRUE(spots_base * MiB + window <= 9 * group);
        printf("  files to move end at %llu MiB: window expected at %llu MiB\n", (unsigned long long) (hot_end >> 20),
               (unsigned long long) spots_base);
        aged_fill_rest = avail_mib > 0;
        nfill = make_aged(fs, NULL, fill, SPOTS_MAXFILL, drop_spots, alive, fill_sum, &gap_lo, &gap_hi);
        aged_fill_rest = false;
        ws = spots_base * MiB;
        we = ws + window;
        /* where the other files lie: those with data in the window are to be moved out of it */
        for (size_t i = 0; i < nfill; i++) {
                before[i] = NULL;
                nbefore[i] = 0;
                was_in[i] = false;
                if (!alive[i])
                        continue;
                before[i] = extents_of(fill[i], &nbefore[i]);
                for (size_t j = 0; j < nbefore[i]; j++)
                        was_in[i] = was_in[i] ||
                                (before[i][j].physical < we && before[i][j].physical + before[i][j].length > ws);
        }
        for (size_t i = 0; i < SPOTS_NF; i++) {
                sums[i] = fnv_file(paths[i]);
                make_item(paths[i], (int64_t) i, &items[i]);
        }
        ASSERT_EQ(loop_fs_sh("cd '%s' && find . -type f -print0 | sort -z | xargs -0 sha256sum > '%s.sha256'", fs->mnt,
                      fs->img), 0);
        if (avail_mib > 0) {
                /* nearly full: ext4's own reserve set so that ordinary users may allocate avail_mib */
                struct statfs sfs;

                ASSERT_EQ(fstatfs(fs->mount_fd, &sfs), 0);
                ASSERT_TRUE(fs_tunable(fs, "reserved_clusters") + sfs.f_bavail > avail_mib * MiB / sfs.f_bsize);
                set_reserved_clusters(fs, fs_tunable(fs, "reserved_clusters") + sfs.f_bavail -
                                          avail_mib * MiB / sfs.f_bsize);
        }
        {
                struct statfs sfs;

                ASSERT_EQ(fstatfs(fs->mount_fd, &sfs), 0);
                printf("  free: %llu KiB, %llu KiB of it for ordinary users\n",
                       (unsigned long long) (sfs.f_bfree * sfs.f_bsize >> 10),
                       (unsigned long long) (sfs.f_bavail * sfs.f_bsize >> 10));
        }
        o = options(fs, items);
        o.make_room = true;
        ASSERT_OK(mover_run(&o, items, SPOTS_NF, out, &st));
        printf("  donor: %llu run(s), %llu segment(s) from %llu MiB, aimed %llu KiB at a time; window %lld MiB, "
               "%llu file(s) and %llu KiB moved out of it\n",
               (unsigned long long) st.donor_runs, (unsigned long long) st.donor_segments,
               (unsigned long long) (st.donor_physical >> 20), (unsigned long long) (st.donor_chunk >> 10),
               st.room_start == UINT64_MAX ? -1LL : (long long) (st.room_start >> 20),
               (unsigned long long) st.room_files, (unsigned long long) (st.room_bytes >> 10));
        ASSERT_EQ(st.files_moved, SPOTS_NF);
        ASSERT_EQ(st.room_start, ws);
        ASSERT_TRUE(st.room_cleared);
        ASSERT_TRUE(st.room_used);
        ASSERT_TRUE(st.donor_segments > 1);     /* in pieces, around what took spots of the window */
        printf("  last buddy cut: %d; planned again around the pilot: %d\n", st.room_cut,
               st.room_replanned);
        /* with headroom, no cut needed; the pilot, made before the window was chosen, in it or not, is
         * planned around from the start */
        ASSERT_TRUE(avail_mib > 0 || !st.room_cut);
        ASSERT_TRUE(!st.room_replanned);

        /* read back from the disk */
        sync();
        for (size_t i = 0; i < SPOTS_NF; i++)
                drop_file_cache(paths[i]);
        for (size_t i = 0; i < nfill; i++)
                if (alive[i])
                        drop_file_cache(fill[i]);
        /* the moved files: intact, inside the window, in their order */
        for (size_t i = 0; i < SPOTS_NF; i++) {
                ASSERT_EQ(fnv_file(paths[i]), sums[i]);
                hot[i] = extents_of(paths[i], &nhot[i]);
                ASSERT_TRUE(nhot[i] >= 1);
                for (size_t j = 0; j < nhot[i]; j++) {
                        ASSERT_TRUE(hot[i][j].physical >= ws && hot[i][j].physical + hot[i][j].length <= we);
                        ASSERT_TRUE(hot[i][j].physical >= prev_end);
                        prev_end = hot[i][j].physical + hot[i][j].length;
                        lo = MIN(lo, hot[i][j].physical);
                        hi = MAX(hi, prev_end);
                }
                printf("  %s: %zu run(s) from %llu KiB\n", strrchr(paths[i], '/') + 1, count_extents(paths[i], &phys),
                       (unsigned long long) (hot[i][0].physical >> 10));
        }
        /* the files moved out of the window (those that lay in it): intact, none sharing a block with the
         * moved files; some of them in the window now, between the moved files (the donor was made around
         * them) */
        for (size_t i = 0; i < nfill; i++) {
                Extent *e;
                size_t ne;

                if (!alive[i])
                        continue;
                kept++;
                ASSERT_EQ(fnv_file(fill[i]), fill_sum[i]);
                e = extents_of(fill[i], &ne);
                for (size_t h = 0; h < SPOTS_NF; h++)
                        ASSERT_TRUE(!extents_overlap(e, ne, hot[h], nhot[h]));
                if (was_in[i]) {
                        bool in = false, btw = false;

                        n_out++;
                        for (size_t j = 0; j < ne; j++) {
                                in = in || (e[j].physical < we && e[j].physical + e[j].length > ws);
                                btw = btw || (e[j].physical < hi && e[j].physical + e[j].length > lo);
                        }
                        inside += in;
                        between += btw;
                } else {
                        /* the others stay where they were */
                        ASSERT_EQ(ne, nbefore[i]);
                        for (size_t j = 0; j < ne; j++) {
                                ASSERT_EQ(e[j].logical, before[i][j].logical);
                                ASSERT_EQ(e[j].physical, before[i][j].physical);
                                ASSERT_EQ(e[j].length, before[i][j].length);
                        }
                }
                free(e);
                free(before[i]);
        }
        printf("  %zu files moved out of the window: %llu of them inside it now, %llu between the moved files; "
               "%zu other files intact\n", n_out, (unsigned long long) inside, (unsigned long long) between, kept);
        ASSERT_EQ(n_out, 24);
        ASSERT_EQ(st.room_files, n_out);
        ASSERT_TRUE(inside > 0);        /* the path: spots in the window */
        ASSERT_TRUE(between > 0);       /* the donor made around them */
        ASSERT_EQ(loop_fs_sh("cd '%s' && sha256sum --quiet -c '%s.sha256'", fs->mnt, fs->img), 0);
        stream_req_unchanged(fs, orig_stream);
        for (size_t i = 0; i < SPOTS_NF; i++) {
                free(hot[i]);
                free(paths[i]);
        }
        for (size_t i = 0; i < nfill; i++)
                free(fill[i]);
        loop_fs_fsck(fs);
}

TEST(room_spots) {
        spots_scenario(&fs_spots, "spots", 4, 0);
}

/* The same on a filesystem full to the last block but for the window's holes (ext4's own reserve lifted
 * while it is filled, then what 1 MiB files leave taken by 4 KiB ones), the reserve then set so that
 * ordinary users may allocate 37 MiB of the 40. The donor's pilot block can only land in the window's
 * holes: made before the window is chosen, it is planned around from the start (seen: in the window's
 * first hole, the files moved out of the window elsewhere in it, and the pieces whole buddies, 36 MiB for
 * the 33, in 5 runs). When the pilot was made once the window was clear, the window's whole buddies added
 * up to 40 MiB, the last one had to be cut and the pieces planned again around the pilot (3 runs); with
 * 36 MiB or less for ordinary users the donor was made elsewhere either way. The cut is forced by
 * room_unit_tight. Checked as room_spots. */
TEST(room_spots_tight) {
        spots_scenario(&fs_spots_tight, "tight", 0, 37);
}

/* Making room when a file in the window can't be moved (open for writing): the window is not cleared, the
 * files that could be moved out stay moved, whole and intact, and the donor is made the usual way (in
 * the gap: its block group is not cut up). */
TEST(room_busy) {
        MoverStats st;
        uint64_t first, lowest, gap_lo, gap_hi;

        aged_scenario(&fs_busy, "busy", drop_room, true, true, 0, &st, &first, &lowest, &gap_lo, &gap_hi);
        ASSERT_TRUE(st.room_start >= 128 * MiB && st.room_start < 256 * MiB);
        ASSERT_TRUE(!st.room_cleared);
        ASSERT_TRUE(!st.room_used);
        ASSERT_TRUE(first >= gap_lo && first + 12 * MiB <= gap_hi);
}

static const MoverTest tests[] = {
#define T(n) { #n, test_##n }
        T(room), T(room_busy), T(room_groups), T(room_scope), T(room_spots), T(room_spots_tight),
        T(room_unit), T(room_unit_tight),
#undef T
};

int main(int argc, char **argv) {
        return mover_tests_main(argc, argv, tests, ELEMENTSOF(tests), writers_close, NULL);
}
