/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The mover on scratch ext4 images (needs root, loop devices, mkfs.ext4, e2fsck): layout, data integrity
 * after dropping caches, every skip/retry reason, cancel, rate limit, out of space, the mb_stream_req
 * fallback and its crash recovery, where the donor lands (one range, or pieces of the low free space),
 * making room for it (windows in one block group or over several, also when the files moved out land
 * inside the window and the donor is made around them), items that are ranges of files (only their blocks
 * move, in the items' order; a batch in place stays; a run stopped and resumed from its checkpoints in the
 * database). Everything it creates is torn down by an atexit handler, also when an assertion fails. */
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>

#include "store/db.h"
#include "relocate/donor.h"
#include "fs/fid-util.h"
#include "fs/fiemap.h"
#include "common/macro.h"
#include "relocate/mover.h"
#include "relocate/optimizer.h"
#include "relocate/run.h"
#include "test-mover-util.h"
#include "test-wal-syncs.h"

static LoopFs fs_main, fs_small, fs_range, fs_order, fs_resume, fs_ckpt, fs_commit;
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

        drop_caches();
        for (size_t i = 0; i < N_MAIN; i++)
                ASSERT_EQ(fnv_file(paths[i]), sums[i]);
        printf("  checksums of all %d files unchanged after sync + drop_caches\n", N_MAIN);

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
/* Ranges: items that name a part of a file. */

/* The physical block of each of the file's first n logical blocks (UINT64_MAX: a hole), from FIEMAP. */
static uint64_t *block_map(const char *path, size_t n) {
        uint64_t *phys = malloc(n * sizeof *phys);
        Extent *e = NULL;
        size_t ne = 0;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        ASSERT_TRUE(phys && fd >= 0);
        ASSERT_OK(fiemap_get(fd, &e, &ne));
        close(fd);
        for (size_t b = 0; b < n; b++)
                phys[b] = UINT64_MAX;
        for (size_t i = 0; i < ne; i++)
                for (uint64_t o = 0; o < e[i].length; o += BS) {
                        uint64_t b = (e[i].logical + o) / BS;
                        if (b < n)
                                phys[b] = (e[i].physical + o) / BS;
                }
        free(e);
        return phys;
}

/* sha256sum of the file, as the tool computes it (independent of our code). */
static void sha256_of(const char *path, char out[65]) {
        char cmd[1024];
        FILE *p;

        snprintf(cmd, sizeof cmd, "sha256sum '%s'", path);
        p = popen(cmd, "r");
        ASSERT_TRUE(p);
        ASSERT_TRUE(fgets(out, 65, p) != NULL);
        pclose(p);
        ASSERT_EQ(strlen(out), 64);
}

static MoveItem range_item(const char *path, int64_t id, uint64_t offset, uint64_t length) {
        MoveItem it;

        make_item(path, id, &it);
        it.offset = offset;
        it.length = length;
        return it;
}

static void expect_all(const MoveOutcome *out, size_t n, MoveResult res, const char *reason) {
        for (size_t i = 0; i < n; i++)
                expect(&out[i], res, reason);
}

/* Pages 1000-1999 of a 100 MiB file whose pages 900-2099 lie in many runs (pieces rewritten elsewhere): only those blocks
 * move, into the donor, in one run; every other block stays where it was; the data is intact (sha256 after
 * dropping the caches) and e2fsck finds nothing. A second run of the same item finds it in place and moves
 * nothing. Fails when orig_start ignores the range's offset. */
TEST(range) {
        LoopFs *fs = &fs_range;
        char *paths[1];
        const uint64_t sizes[1] = { 100 * MiB }, first = 1000, end = 2000, nb = 100 * MiB / BS;
        char sum_before[65], sum_after[65];
        uint64_t *before, *after, runs_before = 1, moved_outside = 0;
        MoveItem item;
        MoveOutcome out;
        MoverStats st;
        MoverOptions o;
        double t;

        fs_setup(fs, "range", 256);
        paths[0] = path_in(fs, "big");
        write_interleaved(paths, sizes, 1, 1 * MiB);
        rewrite_pieces(paths[0], (first - 100) * BS, (end + 100) * BS, 32 * KiB);
        sha256_of(paths[0], sum_before);
        before = block_map(paths[0], nb);
        for (uint64_t b = first + 1; b < end; b++)
                runs_before += before[b] != before[b - 1] + 1;
        printf("  pages %llu-%llu of the 100 MiB file in %llu runs before\n", (unsigned long long) first,
               (unsigned long long) end - 1, (unsigned long long) runs_before);
        ASSERT_TRUE(runs_before > 4);

        item = range_item(paths[0], 1, first * BS, (end - first) * BS);
        o = options(fs, &item);
        o.keep_in_place = true;
        t = now_sec();
        ASSERT_OK(mover_run(&o, &item, 1, &out, &st));
        printf("  moved in %.3f s\n", now_sec() - t);
        expect(&out, MOVE_DONE, NULL);
        ASSERT_EQ(out.bytes, (end - first) * BS);
        ASSERT_EQ(st.bytes_moved, (end - first) * BS);

        after = block_map(paths[0], nb);
        for (uint64_t b = 0; b < nb; b++)
                if ((b < first || b >= end) && after[b] != before[b])
                        moved_outside++;
        ASSERT_EQ(moved_outside, 0);
        ASSERT_EQ(after[first] * BS, st.donor_physical);
        for (uint64_t b = first + 1; b < end; b++)
                ASSERT_EQ(after[b], after[b - 1] + 1);
        printf("  FIEMAP: the range in one run at %.1f MiB (the donor's start), the other %llu blocks unchanged\n",
               after[first] * (double) BS / MiB, (unsigned long long) (nb - (end - first)));
        drop_caches();
        sha256_of(paths[0], sum_after);
        ASSERT_STREQ(sum_after, sum_before);
        printf("  sha256 unchanged\n");

        /* again: in place, nothing moved, no donor */
        item = range_item(paths[0], 1, first * BS, (end - first) * BS);
        ASSERT_OK(mover_run(&o, &item, 1, &out, &st));
        expect(&out, MOVE_IN_PLACE, "in place");
        ASSERT_EQ(st.bytes_moved, 0);
        ASSERT_EQ(st.donor_physical, UINT64_MAX);
        free(before);
        before = block_map(paths[0], nb);
        ASSERT_TRUE(memcmp(before, after, nb * sizeof *after) == 0);
        printf("  second run: in place, nothing moved\n");

        /* a range that starts past the end of the file, and bad ranges */
        item = range_item(paths[0], 1, 101 * MiB, 4096);
        ASSERT_OK(mover_run(&o, &item, 1, &out, &st));
        expect(&out, MOVE_SKIPPED, "range past the end of the file");
        item = range_item(paths[0], 1, 100, 4096);
        ASSERT_ERROR(mover_run(&o, &item, 1, &out, &st), EINVAL);
        item = range_item(paths[0], 1, 4096, 0);
        ASSERT_ERROR(mover_run(&o, &item, 1, &out, &st), EINVAL);
        item = range_item(paths[0], 1, 4096, UINT64_MAX - 4096);
        ASSERT_ERROR(mover_run(&o, &item, 1, &out, &st), EINVAL);
        item = range_item(paths[0], 1, UINT64_MAX / 4096 * 4096, 4096);
        ASSERT_ERROR(mover_run(&o, &item, 1, &out, &st), EINVAL);

        free(before);
        free(after);
        free(paths[0]);
        loop_fs_fsck(fs);
}

/* Two files read interleaved, A 0-40 KiB, B 0-40 KiB, A 40-80 KiB: their ranges land in that order, back
 * to back; a second run finds them in place. Their data stays intact. */
TEST(range_order) {
        LoopFs *fs = &fs_order;
        char *paths[3];
        const uint64_t sizes[3] = { 80 * KiB, 40 * KiB, 400 * KiB };
        char sums[2][65], now[65];
        uint64_t *a, *b;
        MoveItem items[3];
        MoveOutcome out[3];
        MoverStats st;
        MoverOptions o;

        fs_setup(fs, "order", 64);
        paths[0] = path_in(fs, "A");
        paths[1] = path_in(fs, "B");
        paths[2] = path_in(fs, "C");
        write_interleaved(paths, sizes, 3, 4 * KiB);    /* A, B and C block by block: all scattered */
        sha256_of(paths[0], sums[0]);
        sha256_of(paths[1], sums[1]);

        items[0] = range_item(paths[0], 1, 0, 40 * KiB);
        items[1] = range_item(paths[1], 2, 0, 40 * KiB);
        items[2] = range_item(paths[0], 1, 40 * KiB, 40 * KiB);
        o = options(fs, items);
        o.keep_in_place = true;
        ASSERT_OK(mover_run(&o, items, 3, out, &st));
        expect_all(out, 3, MOVE_DONE, NULL);
        ASSERT_EQ(st.bytes_moved, 120 * KiB);

        a = block_map(paths[0], 20);
        b = block_map(paths[1], 10);
        for (size_t i = 1; i < 20; i++)
                ASSERT_EQ(a[i], a[i - 1] + (i == 10 ? 11 : 1));
        for (size_t i = 1; i < 10; i++)
                ASSERT_EQ(b[i], b[i - 1] + 1);
        ASSERT_EQ(b[0], a[9] + 1);
        ASSERT_EQ(a[10], b[9] + 1);
        ASSERT_EQ(a[0] * BS, st.donor_physical);
        printf("  A1 at block %llu, B1 at %llu, A2 at %llu: back to back in that order\n", (unsigned long long) a[0],
               (unsigned long long) b[0], (unsigned long long) a[10]);

        /* the same items again: in place, no donor, nothing moved */
        items[0] = range_item(paths[0], 1, 0, 40 * KiB);
        items[1] = range_item(paths[1], 2, 0, 40 * KiB);
        items[2] = range_item(paths[0], 1, 40 * KiB, 40 * KiB);
        ASSERT_OK(mover_run(&o, items, 3, out, &st));
        expect_all(out, 3, MOVE_IN_PLACE, "in place");
        ASSERT_EQ(st.bytes_moved, 0);
        ASSERT_EQ(st.donor_physical, UINT64_MAX);
        free(b);
        b = block_map(paths[0], 20);
        ASSERT_TRUE(memcmp(a, b, 20 * sizeof *a) == 0);
        printf("  second run: all in place, nothing moved\n");

        drop_caches();
        sha256_of(paths[0], now);
        ASSERT_STREQ(now, sums[0]);
        sha256_of(paths[1], now);
        ASSERT_STREQ(now, sums[1]);
        free(a);
        free(b);
        for (size_t i = 0; i < 3; i++)
                free(paths[i]);
        loop_fs_fsck(fs);
}


typedef struct ResumeCtx {
        Db *db;
        int64_t run;
        const size_t *positions;
        const MoveItem *items;
        atomic_bool *cancel;    /* set after the first item */
} ResumeCtx;

/* What the optimizer does with each outcome while it pauses: a cancelled item stays pending. */
static void resume_progress(void *userdata, size_t index, const MoveOutcome *o) {
        ResumeCtx *c = userdata;

        progress((void *) c->items, index, o);
        if (o->why != MOVE_REASON_CANCELLED)
                ASSERT_OK(run_checkpoint(c->db, c->run, c->positions[index], o));
        if (c->cancel)
                atomic_store(c->cancel, true);
}

/* A run of the ranges A[0,40K) B[0,40K) A[40K,80K) stopped after the first: its checkpoints in the
 * database leave the other two pending, with their ranges, and the resumed run (items built the way the
 * daemon builds them, run_item_of()) moves exactly those: B1 and A2 back to back, A1 where the first run
 * put it. */
TEST(range_resume) {
        LoopFs *fs = &fs_resume;
        char *paths[3], db_path[600], sums[2][65], now[65];
        const uint64_t sizes[3] = { 80 * KiB, 40 * KiB, 400 * KiB };
        DbSessionFile sf[2];
        DbMergeInput in = {};
        DbRunFile *rf = NULL;
        size_t n_rf = 0, positions[3] = { 0, 1, 2 }, pending = 0;
        int64_t ids[2];
        uint64_t *a, *b, a1;
        MoveItem items[3];
        MoveOutcome out[3];
        MoverStats st;
        MoverOptions o;
        atomic_bool cancel = false;
        ResumeCtx ctx = {};
        Db *db = NULL;

        fs_setup(fs, "resume", 64);
        paths[0] = path_in(fs, "A");
        paths[1] = path_in(fs, "B");
        paths[2] = path_in(fs, "C");
        write_interleaved(paths, sizes, 3, 4 * KiB);
        sha256_of(paths[0], sums[0]);
        sha256_of(paths[1], sums[1]);

        snprintf(db_path, sizeof db_path, "%s/resume.db", loop_fs_dir);
        ASSERT_OK(db_open(db_path, &db));
        for (size_t i = 0; i < 2; i++) {
                MoveItem it;

                make_item(paths[i], 0, &it);
                sf[i] = (DbSessionFile) { .key = it.key, .path = paths[i], .size = it.size, .mtime_ns = it.mtime_ns };
        }
        ASSERT_OK(db_add_session(db, &(DbSession) { .profile = "boot", .kind = PROFILE_BOOT, .files = sf, .n_files = 2,
                                                    .boot_id = "0123456789abcdef0123456789abcdef" },
                                 3, NULL));
        ASSERT_OK(db_load_merge_input(db, "boot", 3, &in));
        ASSERT_EQ(in.n_session_files[0], 2);
        memcpy(ids, in.session_files[0], sizeof ids);
        db_merge_input_free(&in);

        items[0] = range_item(paths[0], ids[0], 0, 40 * KiB);
        items[1] = range_item(paths[1], ids[1], 0, 40 * KiB);
        items[2] = range_item(paths[0], ids[0], 40 * KiB, 40 * KiB);
        ctx = (ResumeCtx) { .db = db, .positions = positions, .items = items, .cancel = &cancel };
        ASSERT_OK(run_create(db, items[0].key.fsid, fs->mnt, items, 3, &ctx.run));
        o = options(fs, items);
        o.keep_in_place = true;
        o.cancel = &cancel;
        o.progress = resume_progress;
        o.userdata = &ctx;
        ASSERT_OK(mover_run(&o, items, 3, out, &st));
        expect(&out[0], MOVE_DONE, NULL);
        expect(&out[1], MOVE_RETRY, "cancelled");
        expect(&out[2], MOVE_RETRY, "cancelled");
        ASSERT_TRUE(st.cancelled);
        a = block_map(paths[0], 20);
        a1 = a[0];
        free(a);

        /* the daemon restarts: the run's pending entries, with their ranges */
        db = db_free(db);
        ASSERT_OK(db_open(db_path, &db));
        ASSERT_OK(db_run_files(db, ctx.run, &rf, &n_rf));
        ASSERT_EQ(n_rf, 3);
        ASSERT_EQ(rf[0].state, RUN_FILE_DONE);
        for (size_t k = 0; k < n_rf; k++)
                if (rf[k].state == RUN_FILE_PENDING) {
                        items[pending] = run_item_of(&rf[k]);
                        positions[pending++] = rf[k].position;
                }
        ASSERT_EQ(pending, 2);
        ASSERT_EQ(items[0].offset, 0);
        ASSERT_EQ(items[0].length, 40 * KiB);
        ASSERT_EQ(items[1].offset, 40 * KiB);
        ASSERT_EQ(items[1].length, 40 * KiB);
        ctx = (ResumeCtx) { .db = db, .run = ctx.run, .positions = positions, .items = items };
        o.cancel = NULL;
        o.userdata = &ctx;
        ASSERT_OK(mover_run(&o, items, pending, out, &st));
        expect_all(out, 2, MOVE_DONE, NULL);
        ASSERT_EQ(st.bytes_moved, 80 * KiB);
        db_run_files_free(rf, n_rf);
        ASSERT_OK(db_run_files(db, ctx.run, &rf, &n_rf));
        for (size_t k = 0; k < n_rf; k++)
                ASSERT_EQ(rf[k].state, RUN_FILE_DONE);
        db_run_files_free(rf, n_rf);
        db = db_free(db);

        a = block_map(paths[0], 20);
        b = block_map(paths[1], 10);
        ASSERT_EQ(a[0], a1);
        for (size_t i = 1; i < 10; i++) {
                ASSERT_EQ(a[i], a[i - 1] + 1);
                ASSERT_EQ(a[10 + i], a[10 + i - 1] + 1);
                ASSERT_EQ(b[i], b[i - 1] + 1);
        }
        ASSERT_EQ(a[10], b[9] + 1);
        ASSERT_EQ(b[0] * BS, st.donor_physical);
        printf("  resumed: A1 stayed at block %llu, B1 at %llu, A2 at %llu right after it\n",
               (unsigned long long) a[0], (unsigned long long) b[0], (unsigned long long) a[10]);
        drop_caches();
        sha256_of(paths[0], now);
        ASSERT_STREQ(now, sums[0]);
        sha256_of(paths[1], now);
        ASSERT_STREQ(now, sums[1]);
        free(a);
        free(b);
        for (size_t i = 0; i < 3; i++)
                free(paths[i]);
        loop_fs_fsck(fs);
}

/* The optimizer's checkpoints: each on the disk before the mover touches the next file. Every WAL sync
 * during the run (a checkpoint's) waits 100 ms, then counts the files whose blocks the mover has changed
 * (FIEMAP): the k-th checkpoint's sync must see exactly k moved. A worker that goes on while the main loop
 * still writes a checkpoint has moved more files by then (these are 64 KiB each). */
enum { CKPT_NF = 8 };
static char *ckpt_paths[CKPT_NF];
static uint64_t ckpt_first[CKPT_NF];
static unsigned ckpt_syncs, ckpt_bad;

static void ckpt_sync_hook(void) {
        unsigned moved = 0;
        uint64_t phys;

        (void) usleep(100 * 1000);
        for (size_t i = 0; i < CKPT_NF; i++) {
                (void) count_extents(ckpt_paths[i], &phys);
                moved += phys != ckpt_first[i];
        }
        ckpt_syncs++;
        printf("    checkpoint sync %u: %u file(s) moved\n", ckpt_syncs, moved);
        if (moved != ckpt_syncs)
                ckpt_bad++;
}

static void ckpt_finished(Optimizer *o, void *userdata) {
        ASSERT_OK(sd_event_exit(o->opts.event, 0));
}

TEST(optimizer_checkpoints) {
        LoopFs *fs = &fs_ckpt;
        uint64_t sizes[CKPT_NF], sums[CKPT_NF];
        DbSessionFile sf[CKPT_NF];
        DbMergeInput in = {};
        DbRunFile *rf = NULL;
        size_t n_rf = 0;
        char db_path[600];
        OptJob *job;
        Optimizer *opt = NULL;
        sd_event *e = NULL;
        int64_t run;
        Db *db = NULL;

        fs_setup(fs, "ckpt", 64);
        for (size_t i = 0; i < CKPT_NF; i++) {
                char name[16];

                snprintf(name, sizeof name, "f%zu", i);
                ckpt_paths[i] = path_in(fs, name);
                sizes[i] = 64 * KiB;
        }
        write_interleaved(ckpt_paths, sizes, CKPT_NF, 4 * KiB);
        count_wal_syncs();
        snprintf(db_path, sizeof db_path, "%s/ckpt.db", loop_fs_dir);
        ASSERT_OK(db_open(db_path, &db));
        ASSERT_TRUE(job = calloc(1, sizeof *job));
        ASSERT_TRUE(job->items = calloc(CKPT_NF, sizeof *job->items));
        ASSERT_TRUE(job->positions = calloc(CKPT_NF, sizeof *job->positions));
        ASSERT_TRUE(job->paths = calloc(CKPT_NF, sizeof *job->paths));
        for (size_t i = 0; i < CKPT_NF; i++) {
                ASSERT_TRUE(job->paths[i] = strdup(ckpt_paths[i]));
                make_item(job->paths[i], 0, &job->items[i]);
                sf[i] = (DbSessionFile) { .key = job->items[i].key, .path = job->paths[i], .size = sizes[i],
                                          .mtime_ns = job->items[i].mtime_ns };
                sums[i] = fnv_file(ckpt_paths[i]);
                (void) count_extents(ckpt_paths[i], &ckpt_first[i]);
                job->positions[i] = i;
        }
        ASSERT_OK(db_add_session(db, &(DbSession) { .profile = "boot", .kind = PROFILE_BOOT, .files = sf,
                                                    .n_files = CKPT_NF,
                                                    .boot_id = "0123456789abcdef0123456789abcdef" },
                                 3, NULL));
        ASSERT_OK(db_load_merge_input(db, "boot", 3, &in));
        ASSERT_EQ(in.n_session_files[0], CKPT_NF);
        for (size_t i = 0; i < CKPT_NF; i++)
                job->items[i].file_id = in.session_files[0][i];
        db_merge_input_free(&in);
        job->n_items = CKPT_NF;
        ASSERT_TRUE(job->mount = strdup(fs->mnt));
        ASSERT_TRUE(job->sysfs_dir = strdup(fs->sysfs));
        ASSERT_OK(run_create(db, job->items[0].key.fsid, fs->mnt, job->items, CKPT_NF, &job->run_id));
        run = job->run_id;

        ASSERT_OK(sd_event_new(&e));
        wal_sync_hook = ckpt_sync_hook;
        ASSERT_OK(optimizer_start(&(OptimizerOptions) { .event = e, .db = db, .state_file = state_file,
                                                        .finished = ckpt_finished },
                                  job, 1, &opt));
        ASSERT_OK(sd_event_loop(e));
        wal_sync_hook = NULL;
        ASSERT_EQ(opt->moved_files, CKPT_NF);
        ASSERT_TRUE(!opt->failed);
        opt = optimizer_free(opt);
        e = sd_event_unref(e);
        printf("  %u checkpoint syncs, %u of them saw a file moved beyond the ones checkpointed\n", ckpt_syncs,
               ckpt_bad);
        ASSERT_EQ(ckpt_syncs, CKPT_NF);
        ASSERT_EQ(ckpt_bad, 0);

        /* every checkpoint done, every file intact and moved */
        db = db_free(db);
        ASSERT_OK(db_open(db_path, &db));
        ASSERT_OK(db_run_files(db, run, &rf, &n_rf));
        ASSERT_EQ(n_rf, CKPT_NF);
        for (size_t k = 0; k < n_rf; k++)
                ASSERT_EQ(rf[k].state, RUN_FILE_DONE);
        db_run_files_free(rf, n_rf);
        db = db_free(db);
        drop_caches();
        for (size_t i = 0; i < CKPT_NF; i++) {
                uint64_t phys;

                ASSERT_EQ(fnv_file(ckpt_paths[i]), sums[i]);
                ASSERT_EQ(count_extents(ckpt_paths[i], &phys), 1);
                ASSERT_TRUE(phys != ckpt_first[i]);
                free(ckpt_paths[i]);
        }
        loop_fs_fsck(fs);
}

/* ---------------------------------------------------------------------------------------------------- */

/* What the mover tells is on the disk: a crash right after a file's progress call (where the daemon writes
 * its checkpoint) keeps that file's move. The crash: EXT4_IOC_SHUTDOWN without flushing the journal (what a
 * power cut leaves of it; the journal's periodic commit pushed out to 10 minutes, so only what the mover
 * committed itself is there); mounted again, the journal replayed, each file told DONE must be where the
 * mover put it (FIEMAP as it was at its progress call) and intact, and the filesystem clean. */
#define COMMIT_NF 6
#define COMMIT_CRASH_AT 3       /* the crash in the progress call of this item */
#ifndef EXT4_IOC_SHUTDOWN
#define EXT4_IOC_SHUTDOWN _IOR('X', 125, uint32_t)
#endif
#define EXT4_GOING_FLAGS_NOLOGFLUSH 0x2

typedef struct CommitRun {
        const MoveItem *items;
        Extent *ext[COMMIT_NF];
        size_t n_ext[COMMIT_NF];
        size_t told;
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
        if (index == COMMIT_CRASH_AT) {
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
        CommitRun c = { .items = items };
        MoverStats st;
        MoverOptions o;

        fs_setup(fs, "commit", 64);
        ASSERT_EQ(mount(NULL, fs->mnt, NULL, MS_REMOUNT, "commit=600"), 0);
        for (size_t i = 0; i < COMMIT_NF; i++)
                sizes[i] = (40 + 24 * i) * KiB;
        make_files(fs, "c", paths, sizes, COMMIT_NF);
        sync();
        for (size_t i = 0; i < COMMIT_NF; i++) {
                sums[i] = fnv_file(paths[i]);
                ASSERT_TRUE(count_extents(paths[i], &phys) > 1);
                make_item(paths[i], (int64_t) i, &items[i]);
        }

        o = options(fs, items);
        o.progress = commit_progress;
        o.userdata = &c;
        ASSERT_OK(mover_run(&o, items, COMMIT_NF, out, &st));
        ASSERT_TRUE(c.crashed);
        ASSERT_EQ(c.told, COMMIT_CRASH_AT + 1);
        /* the filesystem gone from under it: the run stops at the next file, which stays to be retried */
        ASSERT_EQ(st.io_error, -EIO);
        expect(&out[COMMIT_CRASH_AT + 1], MOVE_RETRY, "cannot open: Input/output error");
        for (size_t i = COMMIT_CRASH_AT + 2; i < COMMIT_NF; i++)
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
                printf("    c%zu: %zu extents at its progress call, %zu after the crash, first at %llu: %s\n", i,
                       c.n_ext[i], n_now, (unsigned long long) (n_now > 0 ? now[0].physical : 0),
                       same ? "kept" : "LOST");
                ASSERT_TRUE(same);
                free(c.ext[i]);
        }
        drop_caches();
        for (size_t i = 0; i < COMMIT_NF; i++)
                ASSERT_EQ(fnv_file(paths[i]), sums[i]);
        printf("  the moves of the %zu files told DONE survived the crash; all %d files intact\n", c.told,
               COMMIT_NF);
        for (size_t i = 0; i < COMMIT_NF; i++)
                free(paths[i]);
        loop_fs_fsck(fs);
}


static const MoverTest tests[] = {
#define T(n) { #n, test_##n }
        T(layout), T(count_runs_range), T(errors), T(cancel_before_start), T(big_file), T(small_fs),
        T(range), T(range_order), T(range_resume), T(optimizer_checkpoints), T(commit),
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
