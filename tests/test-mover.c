/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The mover on scratch ext4 images (needs root, loop devices, mkfs.ext4, e2fsck): layout, data integrity
 * after dropping caches, every skip/retry reason, cancel, rate limit, out of space, the mb_stream_req
 * fallback and its crash recovery, what it tells is on the disk when the filesystem stops under it. Where
 * the donor lands is test-mover-donor.c's, making room for it test-mover-room.c's, items that are ranges of
 * files test-mover-ranges.c's. Everything it creates is torn down by an atexit handler, also when an
 * assertion fails. */
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>

#include "relocate/donor.h"
#include "fs/fid-util.h"
#include "fs/fiemap.h"
#include "common/macro.h"
#include "relocate/mover.h"
#include "test-mover-util.h"

static LoopFs fs_main, fs_small, fs_commit, fs_commit_range;
static pid_t child = -1;

/* ---------------------------------------------------------------------------------------------------- */

static void cleanup(void) {
        if (child > 0) {
                kill(child, SIGKILL);
                waitpid(child, NULL, 0);
                child = -1;
        }
}

/* Bytes the file has allocated (FIEMAP), holes not counted. */
static uint64_t allocated_bytes(const char *path) {
        Extent *e = NULL;
        size_t n = 0;
        uint64_t sum = 0;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(fiemap_get(fd, &e, &n));
        close(fd);
        for (size_t i = 0; i < n; i++)
                sum += e[i].length;
        free(e);
        return sum;
}

/* The filesystems the first tests share, made when one of them first needs it. */
static LoopFs *main_fs(void) {
        if (!fs_main.mounted)
                fs_setup(&fs_main, "main", 256);
        return &fs_main;
}

static LoopFs *small_fs(void) {
        if (!fs_small.mounted)
                fs_setup(&fs_small, "small", 16);
        return &fs_small;
}

/* ---------------------------------------------------------------------------------------------------- */

#define N_MAIN 10

TEST(layout) {
        static const char *const names[N_MAIN] = { "f4k", "f4097", "f12k", "f40k", "f100k", "f300k",
                                                   "f700k", "f1m", "empty", "holey" };
        const uint64_t sizes[8] = { 4 * KiB, 4097, 12 * KiB, 40 * KiB, 100 * KiB + 123, 300 * KiB, 700 * KiB,
                                    1 * MiB + 5 };
        /* move order: a permutation, so the result is not just creation order */
        const size_t order[N_MAIN] = { 7, 0, 9, 3, 8, 1, 6, 2, 5, 4 };
        char *paths[N_MAIN];
        uint64_t wsizes[9], sums[N_MAIN], orig_stream;
        MoveItem items[N_MAIN];
        MoveOutcome out[N_MAIN];
        MoverStats st;
        MoverOptions o;
        char sp[256];
        int fd;

        for (size_t i = 0; i < N_MAIN; i++)
                paths[i] = path_in(main_fs(), names[i]);
        memcpy(wsizes, sizes, sizeof sizes);
        wsizes[8] = 20 * KiB;   /* holey's data part, written interleaved like the rest */
        char *wpaths[9];
        for (size_t i = 0; i < 8; i++)
                wpaths[i] = paths[i];
        wpaths[8] = paths[9];
        write_interleaved(wpaths, wsizes, 9, 4096);
        fd = open(paths[8], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ASSERT_TRUE(fd >= 0);
        close(fd);
        fd = open(paths[9], O_WRONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(ftruncate(fd, 200 * KiB), 0);    /* trailing hole */
        /* and holes inside (as mkfs.ext4 -d leaves for zero blocks): data at 0-4, 8-12 and 16-20 KiB, which
         * must end up in 3 consecutive blocks, not spread over 5 */
        ASSERT_EQ(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4 * KiB, 4 * KiB), 0);
        ASSERT_EQ(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 12 * KiB, 4 * KiB), 0);
        ASSERT_EQ(fsync(fd), 0);
        close(fd);
        ASSERT_EQ(allocated_bytes(paths[9]), 12 * KiB);

        uint64_t before = 0, phys;
        for (size_t i = 0; i < N_MAIN; i++) {
                sums[i] = fnv_file(paths[i]);
                before += count_extents(paths[i], &phys);
        }
        printf("  %d files written interleaved: %llu extents in total\n", N_MAIN, (unsigned long long) before);
        ASSERT_TRUE(before > N_MAIN);

        for (size_t k = 0; k < N_MAIN; k++)
                make_item(paths[order[k]], (int64_t) order[k], &items[k]);
        snprintf(sp, sizeof sp, "%s/mb_stream_req", main_fs()->sysfs);
        orig_stream = read_uint_file(sp);

        o = options(main_fs(), items);
        double t0 = now_sec();
        ASSERT_OK(mover_run(&o, items, N_MAIN, out, &st));
        printf("  mover_run: %.3f s, moved %llu files / %llu bytes, donor runs %llu, attempts %u\n", now_sec() - t0,
               (unsigned long long) st.files_moved, (unsigned long long) st.bytes_moved,
               (unsigned long long) st.donor_runs, st.donor_attempts);
        ASSERT_EQ(st.files_moved, N_MAIN - 1);
        ASSERT_TRUE(!st.cancelled && !st.out_of_space);
        ASSERT_TRUE(st.donor_runs >= 1);
        stream_req_unchanged(main_fs(), orig_stream);
        for (size_t k = 0; k < N_MAIN; k++)
                expect(&out[k], order[k] == 8 ? MOVE_IN_PLACE : MOVE_DONE, NULL);

        for (size_t i = 0; i < N_MAIN; i++)     /* through the page cache */
                ASSERT_EQ(fnv_file(paths[i]), sums[i]);
        drop_caches();
        for (size_t i = 0; i < N_MAIN; i++) {   /* and from the disk */
                ASSERT_EQ(cached_pages(paths[i]), 0u);
                ASSERT_EQ(fnv_file(paths[i]), sums[i]);
        }
        printf("  checksums of all %d files unchanged, cached and after syncfs + dropping their pages\n", N_MAIN);

        /* mtime untouched */
        for (size_t k = 0; k < N_MAIN; k++) {
                struct stat s;
                ASSERT_EQ(stat(items[k].path, &s), 0);
                ASSERT_EQ((int64_t) s.st_mtim.tv_sec * 1000000000 + s.st_mtim.tv_nsec, items[k].mtime_ns);
        }
        printf("  mtimes unchanged\n");

        /* holes stay holes: nothing was allocated for them */
        ASSERT_EQ(allocated_bytes(paths[9]), 12 * KiB);

        /* back to back, in order: each file one run (across its holes), each starting right after the
         * previous one's last block */
        uint64_t prev_phys = 0, prev_slice = 0, breaks = 0;
        bool have_prev = false;
        for (size_t k = 0; k < N_MAIN; k++) {
                size_t runs;
                if (items[k].size == 0)
                        continue;
                runs = count_extents(items[k].path, &phys);
                printf("    %-8s size %8llu  runs %zu  physical %llu\n", strrchr(items[k].path, '/') + 1,
                       (unsigned long long) items[k].size, runs, (unsigned long long) phys);
                ASSERT_EQ(runs, 1);
                if (have_prev && phys != prev_phys + prev_slice)
                        breaks++;
                prev_phys = phys;
                prev_slice = allocated_bytes(items[k].path);
                have_prev = true;
        }
        printf("  layout: every file in one extent, %llu breaks between files (donor runs %llu)\n",
               (unsigned long long) breaks, (unsigned long long) st.donor_runs);
        ASSERT_TRUE(breaks <= st.donor_runs - 1);

        for (size_t i = 0; i < N_MAIN; i++)
                free(paths[i]);
}

static void spawn_exec(const char *path) {
        char exe[512], want[512];
        ssize_t n;

        child = fork();
        ASSERT_TRUE(child >= 0);
        if (child == 0) {
                char *const argv[] = { (char *) "sleepcopy", (char *) "5", NULL };
                execv(path, argv);
                _exit(127);
        }
        snprintf(want, sizeof want, "/proc/%d/exe", (int) child);
        for (int i = 0; i < 200; i++) {
                n = readlink(want, exe, sizeof exe - 1);
                if (n > 0) {
                        exe[n] = 0;
                        if (streq(exe, path))
                                return;
                }
                usleep(10 * 1000);
        }
        ASSERT_TRUE(!"child did not exec");
}

/* donor_count_runs() over a range: a block elsewhere in the file (like a pilot extent that punching
 * did not remove, as on Debian 12's 6.1 kernel) must not count against the donor's range */
TEST(count_runs_range) {
        _cleanup_close_ int fd = -EBADF;
        uint64_t runs = 0, far = UINT64_C(1) << 30;

        fd = openat(main_fs()->mount_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(donor_count_runs(fd, 0, 1 * MiB, &runs));
        ASSERT_EQ(runs, 0);
        ASSERT_EQ(fallocate(fd, 0, (off_t) far, BS), 0);
        ASSERT_EQ(fallocate(fd, 0, 0, 1 * MiB), 0);
        ASSERT_OK(donor_count_runs(fd, 0, 1 * MiB, &runs));
        ASSERT_EQ(runs, 1);
        ASSERT_OK(donor_count_runs(fd, 0, far + BS, &runs));
        ASSERT_EQ(runs, 2);
        ASSERT_OK(donor_count_runs(fd, far, BS, &runs));
        ASSERT_EQ(runs, 1);
        ASSERT_OK(donor_count_runs(fd, 1 * MiB, far - 1 * MiB, &runs));
        ASSERT_EQ(runs, 0);
}

TEST(errors) {
        enum { GONE, CHANGED, WRITER, EXEC, IMMUTABLE, OK, N };
        static const char *const names[N] = { "gone", "changed", "writer", "sleepcopy", "immutable", "ok" };
        char *paths[N];
        uint64_t sizes[N], sum_ok, sum_writer, phys;
        MoveItem items[N];
        MoveOutcome out[N];
        MoverStats st;
        MoverOptions o;
        int wfd, fd, flags;

        for (size_t i = 0; i < N; i++) {
                paths[i] = path_in(main_fs(), names[i]);
                sizes[i] = 64 * KiB + i;
        }
        write_interleaved(paths, sizes, N, 4096);
        unlink(paths[EXEC]);
        ASSERT_EQ(loop_fs_sh("cp /bin/sleep '%s' && chmod 755 '%s'", paths[EXEC], paths[EXEC]), 0);
        sum_ok = fnv_file(paths[OK]);
        sum_writer = fnv_file(paths[WRITER]);
        for (size_t i = 0; i < N; i++)
                make_item(paths[i], (int64_t) i, &items[i]);

        /* after planning: */
        ASSERT_EQ(unlink(paths[GONE]), 0);
        fd = open(paths[CHANGED], O_WRONLY | O_APPEND | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(write(fd, "x", 1), 1);
        close(fd);
        wfd = open(paths[WRITER], O_WRONLY | O_CLOEXEC);
        ASSERT_TRUE(wfd >= 0);
        spawn_exec(paths[EXEC]);
        fd = open(paths[IMMUTABLE], O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(ioctl(fd, FS_IOC_GETFLAGS, &flags), 0);
        flags |= FS_IMMUTABLE_FL;
        ASSERT_EQ(ioctl(fd, FS_IOC_SETFLAGS, &flags), 0);

        o = options(main_fs(), items);
        ASSERT_OK(mover_run(&o, items, N, out, &st));

        flags &= ~FS_IMMUTABLE_FL;
        ASSERT_EQ(ioctl(fd, FS_IOC_SETFLAGS, &flags), 0);
        close(fd);
        close(wfd);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        child = -1;

        expect(&out[GONE], MOVE_SKIPPED, "gone or replaced since recording");
        expect(&out[CHANGED], MOVE_SKIPPED, "changed since plan");
        expect(&out[WRITER], MOVE_RETRY, "open for writing");
        expect(&out[EXEC], MOVE_RETRY, "running executable");
        expect(&out[IMMUTABLE], MOVE_SKIPPED, "immutable or append-only");
        expect(&out[OK], MOVE_DONE, NULL);
        ASSERT_EQ(st.files_moved, 1);
        ASSERT_EQ(out[OK].bytes, sizes[OK]);
        printf("  gone/changed/writer/running executable/immutable reported as expected; the one good file moved\n");

        drop_caches();
        ASSERT_EQ(fnv_file(paths[OK]), sum_ok);
        ASSERT_EQ(fnv_file(paths[WRITER]), sum_writer);
        ASSERT_EQ(count_extents(paths[OK], &phys), 1);
        printf("  data intact, moved file in one extent\n");
        for (size_t i = 0; i < N; i++)
                free(paths[i]);
}

TEST(cancel_before_start) {
        char *p = path_in(main_fs(), "cancelled");
        const uint64_t size = 300 * KiB;
        MoveItem item;
        MoveOutcome out;
        MoverStats st;
        MoverOptions o;
        atomic_bool cancel = true;

        write_interleaved(&p, &size, 1, 4096);
        make_item(p, 1, &item);
        o = options(main_fs(), &item);
        o.cancel = &cancel;
        ASSERT_OK(mover_run(&o, &item, 1, &out, &st));
        expect(&out, MOVE_RETRY, "cancelled");
        ASSERT_TRUE(st.cancelled);
        ASSERT_EQ(st.files_moved, 0);
        printf("  cancel set before start: RETRY cancelled, nothing moved\n");
        free(p);
}

typedef struct CancelArg {
        atomic_bool *flag;
        unsigned delay_ms;
} CancelArg;

static void *cancel_thread(void *p) {
        CancelArg *a = p;
        usleep(a->delay_ms * 1000);
        atomic_store(a->flag, true);
        return NULL;
}

TEST(big_file) {
        char *paths[2] = { path_in(main_fs(), "big"), path_in(main_fs(), "partner") };
        const uint64_t sizes[2] = { 48 * MiB, 48 * 16 * KiB };
        uint64_t sum, phys;
        MoveItem item;
        MoveOutcome out;
        MoverStats st;
        MoverOptions o;
        double t;
        int fd;
        char buf[1 << 16];

        write_interleaved(paths, sizes, 2, 256 * KiB);  /* big: 256 KiB pieces between partner pieces */
        sum = fnv_file(paths[0]);
        printf("  48 MiB file in %zu runs\n", count_extents(paths[0], &phys));
        /* read it normally so it sits in the page cache in large folios (the 6.16-6.18 pitfall) */
        fd = open(paths[0], O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        while (read(fd, buf, sizeof buf) > 0)
                ;
        close(fd);

        make_item(paths[0], 1, &item);
        o = options(main_fs(), &item);
        t = now_sec();
        ASSERT_OK(mover_run(&o, &item, 1, &out, &st));
        t = now_sec() - t;
        expect(&out, MOVE_DONE, NULL);
        printf("  unlimited: 48 MiB moved in %.3f s = %.1f MiB/s (cached in large folios before; incl. syncfs)\n", t,
               48.0 / t);
        drop_caches();
        ASSERT_EQ(fnv_file(paths[0]), sum);
        ASSERT_EQ(count_extents(paths[0], &phys), 1);

        /* again, uncached, for the raw number */
        make_item(paths[0], 1, &item);
        t = now_sec();
        ASSERT_OK(mover_run(&o, &item, 1, &out, &st));
        t = now_sec() - t;
        expect(&out, MOVE_DONE, NULL);
        printf("  unlimited, uncached: 48 MiB moved in %.3f s = %.1f MiB/s\n", t, 48.0 / t);

        /* rate limit: 48 MiB at 32 MiB/s must take >= ~1.25 s (the last chunk is the only one not paid for) */
        make_item(paths[0], 1, &item);
        o.rate_limit_bps = 32 * MiB;
        t = now_sec();
        ASSERT_OK(mover_run(&o, &item, 1, &out, &st));
        t = now_sec() - t;
        expect(&out, MOVE_DONE, NULL);
        printf("  rate limit 32 MiB/s: %.3f s = %.1f MiB/s\n", t, 48.0 / t);
        ASSERT_TRUE(t >= 1.25);

        /* cancel mid-file: 16 MiB/s, cancel after 300 ms */
        atomic_bool cancel = false;
        CancelArg ca = { .flag = &cancel, .delay_ms = 300 };
        pthread_t th;
        make_item(paths[0], 1, &item);
        o.rate_limit_bps = 16 * MiB;
        o.cancel = &cancel;
        ASSERT_EQ(pthread_create(&th, NULL, cancel_thread, &ca), 0);
        t = now_sec();
        ASSERT_OK(mover_run(&o, &item, 1, &out, &st));
        t = now_sec() - t;
        pthread_join(th, NULL);
        expect(&out, MOVE_RETRY, "cancelled");
        ASSERT_TRUE(st.cancelled);
        ASSERT_TRUE(out.bytes > 0 && out.bytes < 48 * MiB);
        ASSERT_TRUE(t < 1.0);
        printf("  cancel after 300 ms: stopped after %.3f s with %llu bytes moved\n", t,
               (unsigned long long) out.bytes);
        drop_caches();
        ASSERT_EQ(fnv_file(paths[0]), sum);
        printf("  48 MiB file intact after all of that\n");

        unlink(paths[0]);
        unlink(paths[1]);
        free(paths[0]);
        free(paths[1]);
}

TEST(small_fs) {
        enum { N = 3 };
        char *paths[N] = { path_in(small_fs(), "a"), path_in(small_fs(), "b"), path_in(small_fs(), "c") };
        const uint64_t sizes[N] = { 512 * KiB, 512 * KiB, 512 * KiB };
        uint64_t sums[N], orig_stream, phys;
        MoveItem items[N];
        MoveOutcome out[N];
        MoverStats st;
        MoverOptions o;
        struct statfs sfs;
        char *filler = path_in(small_fs(), "filler"), sp[256];
        int fd;

        snprintf(sp, sizeof sp, "%s/mb_stream_req", small_fs()->sysfs);
        orig_stream = read_uint_file(sp);
        write_interleaved(paths, sizes, N, 4096);
        for (size_t i = 0; i < N; i++)
                sums[i] = fnv_file(paths[i]);

        /* out of space: leave 512 KiB for a 1.5 MiB donor */
        sync();
        ASSERT_EQ(statfs(small_fs()->mnt, &sfs), 0);
        fd = open(filler, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(fallocate(fd, 0, 0, (off_t) ((uint64_t) sfs.f_bfree * sfs.f_bsize - 512 * KiB)), 0);
        close(fd);
        for (size_t i = 0; i < N; i++)
                make_item(paths[i], (int64_t) i, &items[i]);
        o = options(small_fs(), items);
        ASSERT_OK(mover_run(&o, items, N, out, &st));
        ASSERT_TRUE(st.out_of_space);
        ASSERT_EQ(st.donor_physical, UINT64_MAX);      /* no donor, no address */
        for (size_t i = 0; i < N; i++)
                expect(&out[i], MOVE_RETRY, "no space for the donor");
        drop_caches();
        for (size_t i = 0; i < N; i++)
                ASSERT_EQ(fnv_file(paths[i]), sums[i]);
        stream_req_unchanged(small_fs(), orig_stream);
        printf("  out of space: every item RETRY, files intact, mb_stream_req untouched\n");
        ASSERT_EQ(unlink(filler), 0);

        /* fragmented free space: fill with 32 KiB files, free every other one */
        size_t nf = 0;
        for (;; nf++) {
                char name[600];
                snprintf(name, sizeof name, "%s/fill%05zu", fs_small.mnt, nf);
                fd = open(name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                ASSERT_TRUE(fd >= 0);
                int r = fallocate(fd, 0, 0, 32 * KiB);
                close(fd);
                if (r < 0) {
                        ASSERT_TRUE(errno == ENOSPC);
                        unlink(name);
                        break;
                }
        }
        for (size_t i = 0; i < nf; i += 2) {
                char name[600];
                snprintf(name, sizeof name, "%s/fill%05zu", fs_small.mnt, i);
                ASSERT_EQ(unlink(name), 0);
        }
        sync();
        printf("  free space fragmented: %zu files of 32 KiB, every other one deleted\n", nf);

        for (size_t i = 0; i < N; i++)
                make_item(paths[i], (int64_t) i, &items[i]);
        ASSERT_OK(mover_run(&o, items, N, out, &st));
        printf("  fragmented: donor runs %llu (acceptable %llu), attempts %u, moved %llu\n",
               (unsigned long long) st.donor_runs, (unsigned long long) donor_acceptable_runs(3 * 512 * KiB),
               st.donor_attempts, (unsigned long long) st.files_moved);
        ASSERT_TRUE(st.donor_runs > 1);
        ASSERT_EQ(st.donor_attempts, 2);
        ASSERT_EQ(st.files_moved, N);
        stream_req_unchanged(small_fs(), orig_stream);
        drop_caches();
        for (size_t i = 0; i < N; i++) {
                ASSERT_EQ(fnv_file(paths[i]), sums[i]);
                (void) count_extents(paths[i], &phys);
        }
        printf("  fallback ran, mb_stream_req restored to %llu, state file gone, files intact\n",
               (unsigned long long) orig_stream);

        /* crash recovery of the tunable */
        char line[512];
        snprintf(line, sizeof line, "%s %llu\n", sp, (unsigned long long) orig_stream);
        write_str_file(state_file, line);
        write_str_file(sp, "12345");
        ASSERT_EQ(read_uint_file(sp), 12345);
        ASSERT_OK(mover_restore_tunables(state_file));
        stream_req_unchanged(small_fs(), orig_stream);
        ASSERT_OK(mover_restore_tunables(state_file));  /* nothing to do */
        write_str_file(state_file, "/etc/hostname 1\n");
        ASSERT_EQ(mover_restore_tunables(state_file), -EBADMSG);
        ASSERT_TRUE(access(state_file, F_OK) < 0);
        printf("  mover_restore_tunables: restores a left-over value, refuses a foreign path\n");

        for (size_t i = 0; i < N; i++)
                free(paths[i]);
        free(filler);
}

/* ---------------------------------------------------------------------------------------------------- */

/* What the mover told is on the disk before the next file moves: a crash in a file's progress call (where
 * the daemon writes its checkpoint) keeps the moves of every file told DONE before it; the file of that
 * call is committed only after its checkpoint, so it may keep its old blocks. The crash: EXT4_IOC_SHUTDOWN
 * without flushing the journal (what a power cut leaves of it; the journal's periodic commit pushed out to
 * 10 minutes, so only what the mover committed itself is there); mounted again, the journal replayed, each
 * earlier file must be where the mover put it (FIEMAP as it was at its progress call) and every file
 * intact, and the filesystem clean. */
#define COMMIT_NF 6
#define COMMIT_DEEP 3           /* more extents than the inode holds: its tree has a leaf block */
#define COMMIT_CRASH_AT 4       /* the crash in the progress call of this item */
#ifndef EXT4_IOC_SHUTDOWN
#define EXT4_IOC_SHUTDOWN _IOR('X', 125, uint32_t)
#endif
#define EXT4_GOING_FLAGS_NOLOGFLUSH 0x2

typedef struct CommitRun {
        const MoveItem *items;
        Extent *ext[COMMIT_NF];
        size_t n_ext[COMMIT_NF];
        size_t told;
        size_t crash_at;                /* the crash in the progress call of this item */
        bool crashed;
} CommitRun;

static void commit_progress(void *userdata, size_t index, const MoveOutcome *o) {
        CommitRun *c = userdata;
        uint32_t flags = EXT4_GOING_FLAGS_NOLOGFLUSH;
        int fd;

        progress((void *) c->items, index, o);
        if (c->crashed || o->result != MOVE_DONE)
                return;
        fd = open(c->items[index].path, O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(fiemap_get(fd, &c->ext[index], &c->n_ext[index]));
        if (index == c->crash_at) {
                ASSERT_EQ(ioctl(fd, EXT4_IOC_SHUTDOWN, &flags), 0);
                c->crashed = true;
        }
        close(fd);
        c->told = index + 1;
}

TEST(commit) {
        LoopFs *fs = &fs_commit;
        char *paths[COMMIT_NF];
        uint64_t sizes[COMMIT_NF], sums[COMMIT_NF], phys;
        MoveItem items[COMMIT_NF];
        MoveOutcome out[COMMIT_NF];
        CommitRun c = { .items = items, .crash_at = COMMIT_CRASH_AT };
        MoverStats st;
        MoverOptions o;

        fs_setup(fs, "commit", 64);
        ASSERT_EQ(mount(NULL, fs->mnt, NULL, MS_REMOUNT, "commit=600"), 0);
        for (size_t i = 0; i < COMMIT_NF; i++)
                sizes[i] = (40 + 24 * i) * KiB;
        make_files(fs, "c", paths, sizes, COMMIT_NF);
        /* one of them has more extents than the inode holds (4): its tree has a leaf block, which the swap
         * changes without touching the inode; its fsync must still commit its move. The interleaved writes
         * alone promise neither that nor that each file is in pieces (pieces written from one CPU's
         * preallocation may end up side by side), so every other 8 KiB of each file is written again
         * elsewhere: c3 (112 KiB) gets 7 runs of its own at least */
        for (size_t i = 0; i < COMMIT_NF; i++)
                rewrite_pieces(paths[i], 0, sizes[i], 8 * KiB);
        sync();
        for (size_t i = 0; i < COMMIT_NF; i++) {
                sums[i] = fnv_file(paths[i]);
                ASSERT_TRUE(count_extents(paths[i], &phys) > 1);
                make_item(paths[i], (int64_t) i, &items[i]);
        }
        printf("  c%d: %zu extents before its move\n", COMMIT_DEEP, count_extents(paths[COMMIT_DEEP], &phys));
        ASSERT_TRUE(count_extents(paths[COMMIT_DEEP], &phys) > 4);

        o = options(fs, items);
        o.progress = commit_progress;
        o.userdata = &c;
        ASSERT_OK(mover_run(&o, items, COMMIT_NF, out, &st));
        ASSERT_TRUE(c.crashed);
        ASSERT_EQ(c.told, COMMIT_CRASH_AT + 1);
        /* the filesystem gone from under it: the commit of the crash's file fails, the run stops, the files
         * after it stay to be retried */
        ASSERT_EQ(st.io_error, -EIO);
        for (size_t i = COMMIT_CRASH_AT + 1; i < COMMIT_NF; i++)
                ASSERT_EQ(out[i].result, MOVE_RETRY);
        printf("  crashed after %zu files told DONE; the run then stopped: %s\n", c.told,
               strerror(-st.io_error));

        /* the crash's aftermath: unmounted as it is, mounted again (the journal replayed) */
        fs->mount_fd = safe_close(fs->mount_fd);
        ASSERT_EQ(umount(fs->mnt), 0);
        fs->mounted = false;
        ASSERT_EQ(mount(fs->dev, fs->mnt, "ext4", 0, NULL), 0);
        fs->mounted = true;
        for (size_t i = 0; i < c.told; i++) {
                _cleanup_free_ Extent *now = NULL;
                size_t n_now = 0;
                bool same;
                int fd = open(paths[i], O_RDONLY | O_CLOEXEC);

                ASSERT_TRUE(fd >= 0);
                ASSERT_OK(fiemap_get(fd, &now, &n_now));
                close(fd);
                same = n_now == c.n_ext[i];
                for (size_t k = 0; same && k < n_now; k++)
                        same = now[k].logical == c.ext[i][k].logical && now[k].physical == c.ext[i][k].physical &&
                               now[k].length == c.ext[i][k].length;
                printf("    c%zu: %zu extents at its progress call, %zu after the crash, first at %llu: %s%s\n", i,
                       c.n_ext[i], n_now, (unsigned long long) (n_now > 0 ? now[0].physical : 0),
                       same ? "kept" : "LOST", i + 1 == c.told ? " (the crash came before its commit)" : "");
                ASSERT_TRUE(same || i + 1 == c.told);
                free(c.ext[i]);
        }
        for (size_t i = 0; i < COMMIT_NF; i++) {
                drop_file_cache(paths[i]);
                ASSERT_EQ(fnv_file(paths[i]), sums[i]);
        }
        printf("  the moves of the %zu files told DONE before the crash's survived it; all %d files intact\n", c.told - 1,
               COMMIT_NF);
        for (size_t i = 0; i < COMMIT_NF; i++)
                free(paths[i]);
        loop_fs_fsck(fs);
}

/* The same for a range: only part of a file of many extents moves, so its extent tree keeps a leaf block
 * after the move (the swap changes that block, not the inode); a crash in the next file's progress call
 * must still find the range where the mover put it. */
TEST(commit_range) {
        LoopFs *fs = &fs_commit_range;
        char *paths[2];
        uint64_t sizes[2] = { 512 * KiB, 512 * KiB }, sums[2];
        MoveItem items[2];
        MoveOutcome out[2];
        CommitRun c = { .items = items, .crash_at = 1 };
        MoverStats st;
        MoverOptions o;
        _cleanup_free_ Extent *now = NULL;
        size_t n_now = 0;
        bool same;
        int fd;

        fs_setup(fs, "commit-range", 64);
        ASSERT_EQ(mount(NULL, fs->mnt, NULL, MS_REMOUNT, "commit=600"), 0);
        make_files(fs, "r", paths, sizes, 2);
        /* r0 must keep more extents than its inode holds (4) beside the range that moves: the interleaved
         * writes alone do not promise it (pieces may end up side by side), so every other 16 KiB of it is
         * written again elsewhere: 8 runs before the range and 16 after it at least */
        rewrite_pieces(paths[0], 0, sizes[0], 16 * KiB);
        sync();
        for (size_t i = 0; i < 2; i++)
                sums[i] = fnv_file(paths[i]);
        make_item(paths[0], 0, &items[0]);
        items[0].offset = 128 * KiB;
        items[0].length = 128 * KiB;
        make_item(paths[1], 1, &items[1]);

        o = options(fs, items);
        o.progress = commit_progress;
        o.userdata = &c;
        ASSERT_OK(mover_run(&o, items, 2, out, &st));
        ASSERT_TRUE(c.crashed);
        ASSERT_EQ(c.told, 2);
        printf("  r0: %zu extents after its range moved (more than the inode holds)\n", c.n_ext[0]);
        ASSERT_TRUE(c.n_ext[0] > 4);

        fs->mount_fd = safe_close(fs->mount_fd);
        ASSERT_EQ(umount(fs->mnt), 0);
        fs->mounted = false;
        ASSERT_EQ(mount(fs->dev, fs->mnt, "ext4", 0, NULL), 0);
        fs->mounted = true;
        fd = open(paths[0], O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(fiemap_get(fd, &now, &n_now));
        close(fd);
        same = n_now == c.n_ext[0];
        for (size_t k = 0; same && k < n_now; k++)
                same = now[k].logical == c.ext[0][k].logical && now[k].physical == c.ext[0][k].physical &&
                       now[k].length == c.ext[0][k].length;
        printf("  r0 after the crash: %zu extents, %s\n", n_now, same ? "as at its progress call" : "LOST");
        ASSERT_TRUE(same);
        free(c.ext[0]);
        free(c.ext[1]);
        for (size_t i = 0; i < 2; i++) {
                drop_file_cache(paths[i]);
                ASSERT_EQ(fnv_file(paths[i]), sums[i]);
                free(paths[i]);
        }
        loop_fs_fsck(fs);
}


static const MoverTest tests[] = {
#define T(n) { #n, test_##n }
        T(layout), T(count_runs_range), T(errors), T(cancel_before_start), T(big_file), T(small_fs),
        T(commit), T(commit_range),
#undef T
};

/* the shared filesystems, checked once every test that used them ran */
static void finish(void) {
        if (fs_main.mounted)
                loop_fs_fsck(&fs_main);
        if (fs_small.mounted)
                loop_fs_fsck(&fs_small);
}

int main(int argc, char **argv) {
        return mover_tests_main(argc, argv, tests, ELEMENTSOF(tests), cleanup, finish);
}
