/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Aged filesystems for the mover's tests of where the donor goes and of making room for it
 * (test-mover-donor, test-mover-room): filled with 1 MiB files of distinct data in disk order, then those
 * where a drop function says deleted; a scenario moves a set of files there and checks every file, moved
 * or not, read back from the disk. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "relocate/donor.h"
#include "test-mover-util.h"

/* Fill fs (root's reserve too: we run as root) with 1 MiB files of distinct data (names in fill[]), written
 * one after the other, so that they lie in disk order, in the directory dir of fs (NULL: its root). Returns
 * how many. */
static inline size_t fill_with_data(LoopFs *fs, const char *dir, char **fill, size_t max) {
        uint64_t seed = 0x2545f4914f6cdd1dULL;
        uint8_t *buf = malloc(MiB);
        struct statfs sfs;
        size_t n = 0;

        ASSERT_TRUE(buf);
        for (;; n++) {
                char name[64];
                int fd;

                ASSERT_EQ(fstatfs(fs->mount_fd, &sfs), 0);
                if ((uint64_t) sfs.f_bfree * (uint64_t) sfs.f_bsize < 2 * MiB)
                        break;
                ASSERT_TRUE(n < max);
                for (size_t j = 0; j < MiB; j += 8) {
                        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                        memcpy(buf + j, &seed, 8);
                }
                snprintf(name, sizeof name, "%s%scold%03zu", dir ?: "", dir ? "/" : "", n);
                fill[n] = path_in(fs, name);
                fd = open(fill[n], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                ASSERT_TRUE(fd >= 0);
                /* allocated now, in one piece, after the previous file: left to delayed allocation,
                 * writeback under memory pressure placed parts of some files apart */
                if (fallocate(fd, 0, 0, MiB) < 0 || write(fd, buf, MiB) != (ssize_t) MiB) {
                        ASSERT_EQ(errno, ENOSPC);       /* full: the last one goes */
                        close(fd);
                        ASSERT_EQ(unlink(fill[n]), 0);
                        free(fill[n]);
                        break;
                }
                close(fd);
        }
        free(buf);
        sync();
        return n;
}

/* An aged filesystem, made: fs filled with 1 MiB files (fill_with_data()), then the ones whose data starts
 * where drop(MiB) says deleted (any non-zero value). Returns how many were made; alive[] says which remain,
 * sum[] their checksums; *gap_lo and *gap_hi: the span of the deleted ones for which drop() returned 2. */
typedef int (*DropFn)(uint64_t mib);

/* With it, make_aged() fills the filesystem to the last block before it deletes: ext4's own reserve
 * (reserved_clusters) lifted meanwhile, then what the 1 MiB files leave taken by 4 KiB ones (rest/) */
static bool aged_fill_rest;

static inline void set_reserved_clusters(const LoopFs *fs, uint64_t v) {
        char p[300];
        FILE *f;

        snprintf(p, sizeof p, "%s/reserved_clusters", fs->sysfs);
        f = fopen(p, "we");
        ASSERT_TRUE(f);
        fprintf(f, "%llu\n", (unsigned long long) v);
        ASSERT_EQ(fclose(f), 0);
}

static inline size_t fill_rest(LoopFs *fs) {
        char *dir = path_in(fs, "rest");
        size_t n = 0;

        ASSERT_EQ(mkdir(dir, 0755), 0);
        for (;; n++) {
                char name[64], buf[4096];
                _cleanup_free_ char *path = NULL;
                int fd;

                memset(buf, (int) (n & 0xff), sizeof buf);
                snprintf(name, sizeof name, "rest/%zu", n);
                path = path_in(fs, name);
                fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                if (fd < 0) {
                        ASSERT_EQ(errno, ENOSPC);
                        break;
                }
                if (fallocate(fd, 0, 0, sizeof buf) < 0 || write(fd, buf, sizeof buf) != (ssize_t) sizeof buf) {
                        ASSERT_EQ(errno, ENOSPC);
                        close(fd);
                        ASSERT_EQ(unlink(path), 0);
                        break;
                }
                close(fd);
        }
        free(dir);
        ASSERT_EQ(syncfs(fs->mount_fd), 0);
        return n;
}

static inline size_t make_aged(LoopFs *fs, const char *dir, char **fill, size_t max, DropFn drop,
                               bool *alive, uint64_t *sum, uint64_t *gap_lo, uint64_t *gap_hi) {
        uint64_t phys, resv = fs_tunable(fs, "reserved_clusters");
        size_t n, kept = 0, rest = 0;

        if (aged_fill_rest)
                set_reserved_clusters(fs, 0);
        n = fill_with_data(fs, dir, fill, max);
        if (aged_fill_rest) {
                rest = fill_rest(fs);
                set_reserved_clusters(fs, resv);
                printf("  then %zu files of 4 KiB: full\n", rest);
        }

        *gap_lo = UINT64_MAX;
        *gap_hi = 0;
        for (size_t i = 0; i < n; i++) {
                int d = count_extents(fill[i], &phys) == 1 ? drop(phys >> 20) : 0;

                alive[i] = d == 0;
                if (d == 2) {
                        *gap_lo = MIN(*gap_lo, phys);
                        *gap_hi = MAX(*gap_hi, phys + MiB);
                }
                if (!alive[i])
                        ASSERT_EQ(unlink(fill[i]), 0);
                else {
                        sum[i] = fnv_file(fill[i]);
                        kept++;
                }
        }
        sync();
        if (*gap_lo == UINT64_MAX)
                printf("  %zu files of 1 MiB, %zu kept; no gap\n", n, kept);
        else
                printf("  %zu files of 1 MiB, %zu kept; gap %llu-%llu MiB\n", n, kept,
                       (unsigned long long) (*gap_lo >> 20), (unsigned long long) (*gap_hi >> 20));
        return n;
}

/* The extents of a file (FIEMAP; *n of them, malloc'ed). */
static inline Extent *extents_of(const char *path, size_t *n) {
        Extent *e = NULL;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(fiemap_get(fd, &e, n));
        close(fd);
        return e;
}

/* Move the NF files of sizes[] (paths[], sums[]) with o; then each must be intact and in one extent, the
 * first at *first (or anywhere when UINT64_MAX), the others back to back in order; the files of the aged
 * filesystem must be intact, none of them inside the files' span. Returns where the first one went. */
static inline uint64_t move_and_check(LoopFs *fs, MoverOptions *o, char **paths, const uint64_t *sizes,
                                      const uint64_t *sums, MoveItem *items, MoveOutcome *out, size_t nf,
                                      MoverStats *st, char **fill, size_t nfill, const bool *alive,
                                      const uint64_t *fill_sum) {
        uint64_t phys, first = 0, next = 0;
        size_t kept = 0;

        ASSERT_OK(mover_run(o, items, nf, out, st));
        printf("  donor: %llu run(s) from %llu MiB, aimed %llu KiB at a time; window %lld MiB, %llu file(s) and "
               "%llu KiB moved out of it\n",
               (unsigned long long) st->donor_runs, (unsigned long long) (st->donor_physical >> 20),
               (unsigned long long) (st->donor_chunk >> 10),
               st->room_start == UINT64_MAX ? -1LL : (long long) (st->room_start >> 20),
               (unsigned long long) st->room_files, (unsigned long long) (st->room_bytes >> 10));
        ASSERT_EQ(st->files_moved, nf);
        ASSERT_EQ(st->donor_runs, 1);
        /* read back from the disk: the caches of the files checked below dropped (not the machine's) */
        sync();
        for (size_t i = 0; i < nf; i++)
                drop_file_cache(paths[i]);
        for (size_t i = 0; i < nfill; i++)
                if (alive[i])
                        drop_file_cache(fill[i]);
        for (size_t i = 0; i < nf; i++) {
                ASSERT_EQ(fnv_file(paths[i]), sums[i]);
                ASSERT_EQ(count_extents(paths[i], &phys), 1);
                if (i == 0)
                        first = phys;
                else
                        ASSERT_EQ(phys, next);  /* back to back in item order */
                next = phys + sizes[i];
        }
        for (size_t i = 0; i < nfill; i++)
                if (alive[i]) {
                        size_t ne;
                        Extent *e = extents_of(fill[i], &ne);

                        ASSERT_EQ(fnv_file(fill[i]), fill_sum[i]);
                        ASSERT_TRUE(ne >= 1);
                        for (size_t j = 0; j < ne; j++)
                                ASSERT_TRUE(e[j].physical + e[j].length <= first || e[j].physical >= next);
                        free(e);
                        kept++;
                }
        printf("  files at %llu-%llu MiB; %zu other files intact, none there\n", (unsigned long long) (first >> 20),
               (unsigned long long) (next >> 20), kept);
        return first;
}

enum { AGED_NF = 6, AGED_MAXNF = 16, AGED_MAXFILL = 800 };
static const uint64_t aged_sizes[AGED_NF] = { 2 * MiB, 1536 * KiB, 3 * MiB, 1 * MiB, 2560 * KiB, 2 * MiB };

/* Writers on the files that remain in 128-256 MiB (block group 1), closed by writers_close(). */
static int writer_fds[AGED_MAXFILL];
static size_t n_writers;

static inline void writers_open(char **fill, size_t nfill, const bool *alive) {
        uint64_t phys;

        for (size_t i = 0; i < nfill; i++)
                if (alive[i] && count_extents(fill[i], &phys) == 1 && phys >= 128 * MiB && phys < 256 * MiB) {
                        writer_fds[n_writers] = open(fill[i], O_WRONLY | O_CLOEXEC);
                        ASSERT_TRUE(writer_fds[n_writers] >= 0);
                        n_writers++;
                }
        printf("  %zu files in 128-256 MiB held open for writing\n", n_writers);
}

static inline void writers_close(void) {
        for (size_t i = 0; i < n_writers; i++)
                close(writer_fds[i]);
        n_writers = 0;
}

/* The directory `name` in the root of fs, its inode in the last third of the inode numbers (of a 768 MiB
 * filesystem with block groups of 128 MiB: in group 4 or 5): top-level directories are spread over the
 * flex groups (Orlov), so directories are made until one lands there; it is renamed to `name` (its inode
 * stays), the others removed. Files made in it get inodes of that group too. */
static inline void make_high_dir(LoopFs *fs, const char *name) {
        struct statfs sfs;
        char *d[64], *target = path_in(fs, name);
        bool found = false;
        size_t n = 0;

        ASSERT_EQ(fstatfs(fs->mount_fd, &sfs), 0);
        for (; n < ELEMENTSOF(d) && !found; n++) {
                char nm[16];
                struct stat st;

                snprintf(nm, sizeof nm, "d%zu", n);
                d[n] = path_in(fs, nm);
                ASSERT_EQ(mkdir(d[n], 0755), 0);
                ASSERT_EQ(stat(d[n], &st), 0);
                if ((uint64_t) st.st_ino > (uint64_t) sfs.f_files * 2 / 3) {
                        ASSERT_EQ(rename(d[n], target), 0);
                        printf("  %s: inode %llu of %llu\n", name, (unsigned long long) st.st_ino,
                               (unsigned long long) sfs.f_files);
                        found = true;
                }
        }
        ASSERT_TRUE(found);
        for (size_t i = 0; i < n; i++) {
                if (i + 1 < n)
                        ASSERT_EQ(rmdir(d[i]), 0);
                free(d[i]);
        }
        free(target);
}

/* The aged scenarios' filesystem size (MiB; 0: 768), and what is done to it once aged (NULL: nothing) */
static unsigned aged_mb;
static void (*aged_prepare)(LoopFs *fs);

/* One scenario on its own 768 MiB filesystem (block groups of 128 MiB, the first of the flex group is
 * group 0): the 12 MiB of files of aged_sizes moved with make_room on or off (with the files of block
 * group 1 held open for writing during the move if busy), the donor wanted near `near` (bytes, 0: none). */
static inline void aged_scenario_with(LoopFs *fs, const char *name, const char *mkfs_args,
                                      const char *fill_dir, const uint64_t *sizes, size_t nf, DropFn drop,
                                      bool make_room, bool busy, uint64_t near, MoverStats *st,
                                      uint64_t *first, uint64_t *lowest, uint64_t *gap_lo,
                                      uint64_t *gap_hi) {
        char *paths[AGED_MAXNF], *fill[AGED_MAXFILL];
        uint64_t sums[AGED_MAXNF], fill_sum[AGED_MAXFILL], total = 0;
        bool alive[AGED_MAXFILL];
        MoveItem items[AGED_MAXNF];
        MoveOutcome out[AGED_MAXNF];
        MoverOptions o;
        size_t nfill;

        ASSERT_TRUE(nf <= AGED_MAXNF);
        fs_setup_with(fs, name, aged_mb ?: 768, mkfs_args);
        if (fill_dir)
                make_high_dir(fs, fill_dir);
        uint64_t orig_stream = fs_tunable(fs, "mb_stream_req");
        make_files(fs, name, paths, sizes, nf);
        nfill = make_aged(fs, fill_dir, fill, AGED_MAXFILL, drop, alive, fill_sum, gap_lo, gap_hi);
        if (aged_prepare)
                aged_prepare(fs);
        for (size_t i = 0; i < nf; i++)
                total += sizes[i];
        ASSERT_OK(donor_lowest_free(fs->mount_fd, total + 4 * KiB, lowest));
        printf("  the lowest free range that holds %llu MiB: at %llu MiB\n", (unsigned long long) (total >> 20),
               (unsigned long long) (*lowest >> 20));
        for (size_t i = 0; i < nf; i++) {
                sums[i] = fnv_file(paths[i]);
                make_item(paths[i], (int64_t) i, &items[i]);
        }
        /* making room: sha256 of every file on the filesystem too (the files to move and the ones that may be
         * moved out), checked again after the move, read from the disk */
        if (make_room)
                ASSERT_EQ(loop_fs_sh("cd '%s' && find . -type f -print0 | sort -z | xargs -0 sha256sum > '%s.sha256'",
                              fs->mnt, fs->img), 0);
        o = options(fs, items);
        o.make_room = make_room;
        o.near = near;
        if (busy)
                writers_open(fill, nfill, alive);
        *first = move_and_check(fs, &o, paths, sizes, sums, items, out, nf, st, fill, nfill, alive, fill_sum);
        writers_close();
        if (make_room)
                ASSERT_EQ(loop_fs_sh("cd '%s' && sha256sum --quiet -c '%s.sha256'", fs->mnt, fs->img), 0);
        stream_req_unchanged(fs, orig_stream);
        for (size_t i = 0; i < nf; i++)
                free(paths[i]);
        for (size_t i = 0; i < nfill; i++)
                free(fill[i]);
        loop_fs_fsck(fs);
}

static inline void aged_scenario(LoopFs *fs, const char *name, DropFn drop, bool make_room, bool busy,
                                 uint64_t near, MoverStats *st, uint64_t *first, uint64_t *lowest,
                                 uint64_t *gap_lo, uint64_t *gap_hi) {
        aged_scenario_with(fs, name, "", NULL, aged_sizes, AGED_NF, drop, make_room, busy, near, st, first, lowest, gap_lo,
                           gap_hi);
}
