/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Where the mover's donor lands, on scratch ext4 images (needs root, loop devices, mkfs.ext4, e2fsck): the
 * lowest free range that holds it, also where ext4 would not put it by itself; pieces of the low free space;
 * whole buddies of a cut-up block group, and the next range when those miss; near a given place. Everything
 * it creates is torn down by an atexit handler, also when an assertion fails. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "relocate/donor.h"
#include "test-mover-aged.h"
#include "test-mover-util.h"

static LoopFs fs_place, fs_target, fs_seg, fs_bud, fs_bud2, fs_near;

/* every other MiB of 384-448 MiB (block group 3), 460-500 MiB whole (the gap), 700-768 MiB whole */
static int drop_buddies(uint64_t mib) {
        if (mib >= 460 && mib < 500)
                return 2;
        return (mib >= 384 && mib < 448 && mib % 2 == 1) || mib >= 700;
}

/* as drop_buddies(), and block group 0 (the first of the flex group) cut up the same way at 40-100 MiB with
 * a 20 MiB gap at 104-124 MiB: the lowest range that holds the donor */
static int drop_buddies_retry(uint64_t mib) {
        if (mib >= 104 && mib < 124)
                return 3;
        if (mib >= 40 && mib < 100)
                return mib % 2 == 1;
        return drop_buddies(mib);
}

/* Where the donor lands: by default ext4 puts a large allocation where the last large one ended (the
 * stream goal); the mover steers it to the lowest free range that holds it. Big files written one after
 * the other and deleted move the stream goal past 500 MiB while the start is free. The donor here (1.1 MiB)
 * is shorter than a group preallocation: it must still land there, not in a preallocation (fails without
 * the lengthening in donor_create_targeted(): it landed at 131 MiB, next to the pilot). */
TEST(placement) {
        LoopFs *fs = &fs_place;
        char *paths[4], *big[4];
        uint64_t sizes[4] = { 300 * KiB, 200 * KiB, 500 * KiB, 100 * KiB }, sums[4], phys, steered = 0, plain = 0,
                 lowest = 0;
        MoveItem items[4];
        MoveOutcome out[4];
        MoverStats st;
        MoverOptions o;
        int fd;

        fs_setup(fs, "place", 1024);
        uint64_t orig_stream = fs_tunable(fs, "mb_stream_req");
        for (size_t i = 0; i < 4; i++) {
                char name[16];
                snprintf(name, sizeof name, "big%zu", i);
                big[i] = path_in(fs, name);
                fd = open(big[i], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                ASSERT_TRUE(fd >= 0);
                ASSERT_EQ(fallocate(fd, 0, 0, 150 * 1024 * KiB), 0);
                ASSERT_EQ(fsync(fd), 0);
                close(fd);
                ASSERT_TRUE(count_extents(big[i], &phys) >= 1);
                printf("  big%zu at %llu MiB\n", i, (unsigned long long) (phys >> 20));
        }
        for (size_t i = 0; i < 4; i++) {
                ASSERT_EQ(unlink(big[i]), 0);
                free(big[i]);
        }
        sync();

        for (int round = 0; round < 2; round++) {
                for (size_t i = 0; i < 4; i++) {
                        char name[16];
                        snprintf(name, sizeof name, "p%d-%zu", round, i);
                        paths[i] = path_in(fs, name);
                }
                write_interleaved(paths, sizes, 4, 16 * KiB);
                for (size_t i = 0; i < 4; i++) {
                        sums[i] = fnv_file(paths[i]);
                        make_item(paths[i], (int64_t) i, &items[i]);
                }
                o = options(fs, items);
                if (round == 0)
                        o.sysfs_dir = NULL;     /* the allocator's own choice */
                else {
                        /* a donor of 1.1 MiB is made longer than a group preallocation (else ext4 may
                         * serve it from one, wherever that is): the lowest range that holds that */
                        ASSERT_OK(donor_lowest_free(fs->mount_fd, (fs_tunable(fs, "mb_group_prealloc") + 1) * BS,
                                                    &lowest));
                }
                ASSERT_OK(mover_run(&o, items, 4, out, &st));
                ASSERT_EQ(st.files_moved, 4);
                ASSERT_EQ(st.donor_runs, 1);
                drop_caches();
                for (size_t i = 0; i < 4; i++) {
                        ASSERT_EQ(fnv_file(paths[i]), sums[i]);
                        ASSERT_EQ(count_extents(paths[i], &phys), 1);
                        if (i == 0) {
                                *(round == 0 ? &plain : &steered) = phys;
                                /* the stats say where the donor starts: the first file lies there */
                                ASSERT_TRUE(phys >= st.donor_physical && phys < st.donor_physical + 64 * KiB);
                        }
                        free(paths[i]);
                }
                printf("  %s: donor at %llu MiB, attempts %u\n", round == 0 ? "default" : "steered",
                       (unsigned long long) (phys >> 20), st.donor_attempts);
        }
        /* at the lowest free range that holds it (a pilot block may sit at its start) */
        printf("  lowest free range for it at %llu KiB, steered donor at %llu KiB\n",
               (unsigned long long) (lowest >> 10), (unsigned long long) (steered >> 10));
        ASSERT_TRUE(steered >= lowest && steered < lowest + 64 * KiB);
        ASSERT_TRUE(plain > steered);
        stream_req_unchanged(fs, orig_stream);
        loop_fs_fsck(fs);
}

/* Where ext4 puts an O_TMPFILE of `bytes` by itself, with mb_stream_req as it is or raised (the donor's
 * allocation before it was aimed): physical byte address of its first block. Closed (and committed) again. */
static uint64_t probe_allocation(LoopFs *fs, uint64_t bytes, bool raised) {
        char sp[300], orig[32];
        uint64_t phys;
        int fd;

        snprintf(sp, sizeof sp, "%s/mb_stream_req", fs->sysfs);
        snprintf(orig, sizeof orig, "%llu", (unsigned long long) read_uint_file(sp));
        if (raised)
                write_str_file(sp, "4294967295");
        fd = openat(fs->mount_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(fallocate(fd, 0, 0, (off_t) bytes), 0);
        if (raised)
                write_str_file(sp, orig);
        {
                Extent *e = NULL;
                size_t n = 0;
                ASSERT_OK(fiemap_get(fd, &e, &n));
                ASSERT_TRUE(n >= 1);
                phys = e[0].physical;
                free(e);
        }
        close(fd);
        sync();
        return phys;
}

/* Fill what ordinary users may use of fs with files of size a and b in turn (the last one smaller, in
 * 64 KiB steps), fallocated: names in fill[], sizes in fill_size[]. Returns how many. */
static size_t fill_up(LoopFs *fs, char **fill, uint64_t *fill_size, size_t max, uint64_t a, uint64_t b) {
        struct statfs sfs;
        size_t n = 0;

        for (;; n++) {
                uint64_t want = n % 2 == 0 ? a : b, avail;
                char name[64];
                int fd;

                ASSERT_EQ(fstatfs(fs->mount_fd, &sfs), 0);
                avail = (uint64_t) sfs.f_bavail * (uint64_t) sfs.f_bsize;
                if (avail < 64 * KiB)
                        break;
                ASSERT_TRUE(n < max);
                want = MIN(want, avail / (64 * KiB) * (64 * KiB));
                snprintf(name, sizeof name, "fill%03zu", n);
                fill[n] = path_in(fs, name);
                fd = open(fill[n], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                ASSERT_TRUE(fd >= 0);
                ASSERT_EQ(fallocate(fd, 0, 0, (off_t) want), 0);
                close(fd);
                fill_size[n] = want;
        }
        sync();
        return n;
}

/* The donor aimed at the lowest free range that holds it, where ext4 would not put it by itself: the
 * filesystem is filled with files of 40 and 8 MiB in turn (leaving root's reserve alone), then the lowest
 * 40 MiB file and the highest 8 MiB file above it are deleted. Both gaps hold the 3 MiB donor; the lower
 * one is the target. */
TEST(target) {
        LoopFs *fs = &fs_target;
        enum { NF = 3, MAXFILL = 64 };
        char *paths[NF], *fill[MAXFILL];
        uint64_t sizes[NF] = { 1024 * KiB, 512 * KiB, 1536 * KiB }, sums[NF], phys, low = 0, high = 0;
        uint64_t fill_phys[MAXFILL], fill_size[MAXFILL], by_default, by_inode_group, lowest = 0;
        size_t nfill = 0, ilow = SIZE_MAX, ihigh = SIZE_MAX;
        MoveItem items[NF];
        MoveOutcome out[NF];
        MoverStats st;
        MoverOptions o;

        fs_setup(fs, "target", 1024);
        uint64_t orig_stream = fs_tunable(fs, "mb_stream_req");
        make_files(fs, "t", paths, sizes, NF);

        nfill = fill_up(fs, fill, fill_size, MAXFILL, 40 * MiB, 8 * MiB);
        for (size_t i = 0; i < nfill; i++) {
                if (count_extents(fill[i], &fill_phys[i]) != 1)
                        continue;
                if (fill_size[i] == 40 * MiB && (ilow == SIZE_MAX || fill_phys[i] < fill_phys[ilow]))
                        ilow = i;
        }
        ASSERT_TRUE(ilow != SIZE_MAX);
        for (size_t i = 0; i < nfill; i++)
                if (fill_size[i] == 8 * MiB && fill_phys[i] > fill_phys[ilow] &&
                    count_extents(fill[i], &phys) == 1 && (ihigh == SIZE_MAX || fill_phys[i] > fill_phys[ihigh]))
                        ihigh = i;
        ASSERT_TRUE(ihigh != SIZE_MAX);
        low = fill_phys[ilow];
        high = fill_phys[ihigh];
        ASSERT_EQ(unlink(fill[ilow]), 0);
        ASSERT_EQ(unlink(fill[ihigh]), 0);
        sync();
        printf("  %zu fillers; gaps: 40 MiB at %llu MiB, 8 MiB at %llu MiB\n", nfill,
               (unsigned long long) (low >> 20), (unsigned long long) (high >> 20));
        ASSERT_OK(donor_lowest_free(fs->mount_fd, 3 * MiB, &lowest));
        ASSERT_EQ(lowest, low);

        /* the scenario means something only if ext4 left to itself goes elsewhere */
        by_default = probe_allocation(fs, 3 * MiB, false);
        by_inode_group = probe_allocation(fs, 3 * MiB, true);
        printf("  by itself ext4 puts 3 MiB at %llu MiB (default), %llu MiB (mb_stream_req raised)\n",
               (unsigned long long) (by_default >> 20), (unsigned long long) (by_inode_group >> 20));
        ASSERT_TRUE(by_default < low || by_default >= low + 40 * MiB ||
                    by_inode_group < low || by_inode_group >= low + 40 * MiB);

        for (size_t i = 0; i < NF; i++) {
                sums[i] = fnv_file(paths[i]);
                make_item(paths[i], (int64_t) i, &items[i]);
        }
        o = options(fs, items);
        ASSERT_OK(mover_run(&o, items, NF, out, &st));
        ASSERT_EQ(st.files_moved, NF);
        ASSERT_EQ(st.donor_runs, 1);
        ASSERT_EQ(st.donor_attempts, 1);
        drop_caches();
        uint64_t next = 0;
        for (size_t i = 0; i < NF; i++) {
                ASSERT_EQ(fnv_file(paths[i]), sums[i]);
                ASSERT_EQ(count_extents(paths[i], &phys), 1);
                if (i == 0) {
                        ASSERT_TRUE(phys >= low && phys + 3 * MiB <= low + 40 * MiB);
                        printf("  donor at %llu MiB: in the lower gap\n", (unsigned long long) (phys >> 20));
                } else
                        ASSERT_EQ(phys, next);  /* back to back in item order */
                next = phys + sizes[i];
                free(paths[i]);
        }
        stream_req_unchanged(fs, orig_stream);
        for (size_t i = 0; i < nfill; i++)
                free(fill[i]);
        loop_fs_fsck(fs);
}

/* A donor in pieces: the free space low on the disk is in 3 MiB holes (the filesystem is filled with
 * 3 MiB files, then every third of the lowest ones is deleted), and the only range that holds the donor
 * whole is what is left at the end (root's reserve). The files must land in the holes, in item order, each
 * in one piece: a file that does not fit in the rest of a hole starts at the next one. A hole is longer
 * than a locality group preallocation (mb_group_prealloc, 2 MiB here), as pieces must be. */
TEST(segments) {
        LoopFs *fs = &fs_seg;
        enum { NF = 6, MAXFILL = 512, NHOLE = 4 };
        const uint64_t HOLE = 3 * MiB;
        char *paths[NF], *fill[MAXFILL];
        const uint64_t sizes[NF] = { 1536 * KiB, 1280 * KiB, 1536 * KiB, 1280 * KiB, 1536 * KiB, 1280 * KiB };
        uint64_t sums[NF], phys[NF], fill_phys[MAXFILL], fill_size[MAXFILL], hole[NHOLE], lowest = 0, prev_end = 0;
        size_t nfill = 0, order[MAXFILL], nhole = 0, hole_of[NF];
        MoveItem items[NF];
        MoveOutcome out[NF];
        MoverStats st;
        MoverOptions o;

        fs_setup(fs, "seg", 512);
        uint64_t orig_stream = fs_tunable(fs, "mb_stream_req");
        make_files(fs, "s", paths, sizes, NF);

        nfill = fill_up(fs, fill, fill_size, MAXFILL, HOLE, HOLE);
        /* fillers in one piece of 3 MiB, in disk order; every third of them, from the second on, a hole */
        size_t nwhole = 0;
        for (size_t i = 0; i < nfill; i++)
                if (fill_size[i] == HOLE && count_extents(fill[i], &fill_phys[i]) == 1)
                        order[nwhole++] = i;
        for (size_t a = 1; a < nwhole; a++)
                for (size_t b = a; b > 0 && fill_phys[order[b]] < fill_phys[order[b - 1]]; b--) {
                        size_t t = order[b];
                        order[b] = order[b - 1];
                        order[b - 1] = t;
                }
        for (size_t k = 1; k < nwhole && nhole < NHOLE; k += 3) {
                /* both neighbours on disk are fillers that touch it: the hole stays 2 MiB */
                if (k + 1 >= nwhole || fill_phys[order[k - 1]] + HOLE != fill_phys[order[k]] ||
                    fill_phys[order[k]] + HOLE != fill_phys[order[k + 1]])
                        continue;
                hole[nhole++] = fill_phys[order[k]];
                ASSERT_EQ(unlink(fill[order[k]]), 0);
        }
        ASSERT_EQ(nhole, NHOLE);
        sync();
        ASSERT_OK(donor_lowest_free(fs->mount_fd, HOLE + 4 * KiB, &lowest));
        printf("  %zu fillers; holes of 3 MiB at %llu, %llu, %llu, %llu KiB; lowest free range > 3 MiB at %llu KiB\n",
               nfill, (unsigned long long) (hole[0] >> 10), (unsigned long long) (hole[1] >> 10),
               (unsigned long long) (hole[2] >> 10), (unsigned long long) (hole[3] >> 10),
               (unsigned long long) (lowest >> 10));
        /* the scenario: no hole grew into a bigger range, and the one range for the whole donor lies above */
        ASSERT_TRUE(lowest > hole[NHOLE - 1]);

        for (size_t i = 0; i < NF; i++) {
                sums[i] = fnv_file(paths[i]);
                make_item(paths[i], (int64_t) i, &items[i]);
        }
        o = options(fs, items);
        ASSERT_OK(mover_run(&o, items, NF, out, &st));
        printf("  donor: %llu run(s) in %llu free range(s), attempts %u\n", (unsigned long long) st.donor_runs,
               (unsigned long long) st.donor_segments, st.donor_attempts);
        ASSERT_EQ(st.files_moved, NF);
        ASSERT_TRUE(st.donor_segments >= 2);
        ASSERT_EQ(st.donor_runs, st.donor_segments);
        ASSERT_EQ(st.donor_attempts, 1);
        drop_caches();
        for (size_t i = 0; i < NF; i++) {
                ASSERT_EQ(fnv_file(paths[i]), sums[i]);
                ASSERT_EQ(count_extents(paths[i], &phys[i]), 1);       /* not split where a hole ends */
                hole_of[i] = SIZE_MAX;
                for (size_t h = 0; h < NHOLE; h++)
                        if (phys[i] >= hole[h] && phys[i] + sizes[i] <= hole[h] + HOLE)
                                hole_of[i] = h;
                printf("  s%zu at %llu KiB: hole %zu\n", i, (unsigned long long) (phys[i] >> 10), hole_of[i]);
                ASSERT_TRUE(hole_of[i] != SIZE_MAX);
                ASSERT_TRUE(phys[i] >= prev_end);      /* in item order */
                if (i > 0 && hole_of[i] == hole_of[i - 1])
                        ASSERT_EQ(phys[i], prev_end);  /* back to back inside a hole */
                prev_end = phys[i] + sizes[i];
        }
        /* 1.5 + 1.25 MiB fill a hole; the next 1.5 MiB file starts at the next one */
        ASSERT_EQ(hole_of[0], 0);
        ASSERT_EQ(hole_of[2], 1);
        ASSERT_EQ(hole_of[4], 2);
        stream_req_unchanged(fs, orig_stream);
        for (size_t i = 0; i < NF; i++)
                free(paths[i]);
        for (size_t i = 0; i < nfill; i++)
                free(fill[i]);
        loop_fs_fsck(fs);
}

/* Buddies (donor.c): the lowest free range that holds the 12 MiB donor is a 40 MiB gap in block group 3,
 * whose other free space is in 1 MiB pieces, and group 5 has 68 MiB free at its end. A one-range request
 * aimed at the gap goes to group 5 (the group's free blocks / free extents is below the request); asked for
 * in buddies it must land in the gap. No room is made (off). */
TEST(buddies) {
        MoverStats st;
        uint64_t first, lowest, gap_lo, gap_hi;

        aged_scenario(&fs_bud, "bud", drop_buddies, false, false, 0, &st, &first, &lowest, &gap_lo, &gap_hi);
        ASSERT_TRUE(lowest >= gap_lo && lowest < gap_hi);      /* the premise */
        ASSERT_EQ(st.room_start, UINT64_MAX);
        ASSERT_TRUE(st.donor_chunk > 0);
        ASSERT_TRUE(first >= gap_lo && first + 12 * MiB <= gap_hi);
}

/* Buddies, retried: the lowest range that holds the donor is now a 20 MiB gap in block group 0, cut up
 * too. The one-range request misses it, and so do buddies there (ext4's power-of-two pass skips the first
 * group of a flex group for file data); the next range, the gap in group 3, must take the donor. */
TEST(buddies_retry) {
        MoverStats st;
        uint64_t first, lowest, gap_lo, gap_hi;

        aged_scenario(&fs_bud2, "bud2", drop_buddies_retry, false, false, 0, &st, &first, &lowest, &gap_lo, &gap_hi);
        ASSERT_TRUE(lowest >= 100 * MiB && lowest < 128 * MiB);        /* the premise: group 0's gap */
        ASSERT_TRUE(st.donor_chunk > 0);
        ASSERT_TRUE(first >= gap_lo && first + 12 * MiB <= gap_hi);
}

/* Near (the early pass: next to the boot's other files): the buddies scenario, the donor wanted near 600
 * MiB. The gap at 460 MiB would be lower; the donor must go to the free space from 600 MiB on (700 MiB). */
TEST(near) {
        MoverStats st;
        uint64_t first, lowest, gap_lo, gap_hi;

        aged_scenario(&fs_near, "near", drop_buddies, false, false, 600 * MiB, &st, &first, &lowest, &gap_lo,
                      &gap_hi);
        ASSERT_TRUE(lowest >= gap_lo && lowest < gap_hi);      /* lower than where it is wanted */
        ASSERT_TRUE(st.donor_near);
        ASSERT_TRUE(first >= 700 * MiB);
}

static const MoverTest tests[] = {
#define T(n) { #n, test_##n }
        T(placement), T(target), T(segments), T(buddies), T(buddies_retry), T(near),
#undef T
};

int main(int argc, char **argv) {
        return mover_tests_main(argc, argv, tests, ELEMENTSOF(tests), NULL, NULL);
}
