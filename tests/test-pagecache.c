/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Page-cache recording (pagecache.c, trace-page.c) against the real kernel: a tracefs instance, the
 * tracepoint filemap:mm_filemap_add_to_page_cache, a loop-mounted ext4 image. What each case checks is what
 * the kernel did, seen from outside the engine: the pages a child process touched (through a mapping with
 * MADV_RANDOM, by read(), by exec), by which pid, in which order and when (also across a pause that the
 * ring buffer encodes as a time extension); the directory and inode-table
 * blocks (debugfs) of a directory listed after a remount; nothing while off or for another filesystem;
 * events lost to a full buffer counted so that seen + lost = touched; the instance gone after free, also
 * after its tracefs was lazily unmounted with the event on, and a killed owner's instance removed by the next
 * start; a FUSE file whose inode number is the device's (inofs) not taken for the device's own pages.
 * Needs root, mkfs.ext4, losetup, debugfs; runs in a mount namespace of its own (tracefs is mounted there
 * if the system has none). */
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>

#include "common/macro.h"
#include "record/pagecache.h"
#include "test-loop-fs.h"
#include "test-util.h"
#include "common/time-util.h"

#define TRACEFS "/sys/kernel/tracing"
#define PREFIX "seekless-test-"         /* not the daemon's prefix: a running seeklessd is left alone */
#define BIG_PAGES 25600                 /* 100 MiB */
#define SMALL_PAGES 16

static LoopFs fs;
static dev_t fs_dev;

/* The first number printed by a command (debugfs), or -1. */
_printf_(1, 2) static long long run_number(const char *fmt, ...) {
        char cmd[2048], line[512];
        long long v = -1;
        va_list ap;
        FILE *p;

        va_start(ap, fmt);
        vsnprintf(cmd, sizeof cmd, fmt, ap);
        va_end(ap);
        p = popen(cmd, "r");
        if (!p)
                return -1;
        while (v < 0 && fgets(line, sizeof line, p))
                for (char *s = line; *s; s++)
                        if (*s >= '0' && *s <= '9') {
                                v = strtoll(s, NULL, 10);
                                break;
                        }
        pclose(p);
        return v;
}

static void write_file(const char *path, size_t pages) {
        _cleanup_free_ char *buf = malloc(4096);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);

        ASSERT_TRUE(fd >= 0 && buf);
        for (size_t i = 0; i < pages; i++) {
                memset(buf, (int) (i % 251) + 1, 4096);
                ASSERT_EQ(write(fd, buf, 4096), 4096);
        }
        ASSERT_EQ(close(fd), 0);
}

/* Clean pages only, then dropped: the next access reads from the device. */
static void drop_cache(const char *path) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(fdatasync(fd), 0);
        ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
        close(fd);
}

static void do_mount(void) {
        struct stat st;

        loop_fs_mount(&fs);
        ASSERT_EQ(stat(fs.mnt, &st), 0);
        fs_dev = st.st_dev;
}

static void fs_setup(void) {
        struct stat st;

        loop_fs_setup(&fs, "seekless-test-pagecache", "pagecache", 256, NULL, NULL);
        ASSERT_EQ(stat(fs.mnt, &st), 0);
        fs_dev = st.st_dev;
        write_file(test_path(fs.mnt, "big"), BIG_PAGES);
        write_file(test_path(fs.mnt, "small"), SMALL_PAGES);
        ASSERT_EQ(mkdir(test_path(fs.mnt, "dir"), 0755), 0);
        for (int i = 0; i < 100; i++) {
                char name[32];
                snprintf(name, sizeof name, "dir/f%d", i);
                write_file(test_path(fs.mnt, name), 1);
        }
        ASSERT_EQ(loop_fs_sh("cp /bin/true '%s/true'", fs.mnt), 0);
        sync();
}

static uint64_t inode_of(const char *name) {
        struct stat st;

        ASSERT_EQ(stat(test_path(fs.mnt, name), &st), 0);
        return st.st_ino;
}

/* What the callback saw. */
typedef struct Seen {
        PageCacheEvent *e;
        size_t n, allocated;
} Seen;

static void on_pages(const PageCacheEvent *e, void *userdata) {
        Seen *s = userdata;

        if (s->n == s->allocated) {
                s->allocated = s->allocated ? 2 * s->allocated : 1024;
                s->e = realloc(s->e, s->allocated * sizeof *s->e);
                ASSERT_TRUE(s->e);
        }
        s->e[s->n++] = *e;
}

static int cmp_timestamp(const void *a, const void *b) {
        const PageCacheEvent *x = a, *y = b;
        return x->timestamp_nsec < y->timestamp_nsec ? -1 : x->timestamp_nsec > y->timestamp_nsec;
}

static PageCache *start(Seen *seen, unsigned buffer_kib, bool metadata) {
        PageCacheOptions o = { .tracefs = TRACEFS, .prefix = PREFIX, .buffer_kib = buffer_kib,
                               .metadata = metadata, .on_pages = on_pages, .userdata = seen };
        PageCache *p = NULL;

        *seen = (Seen) {};
        ASSERT_OK(pagecache_new(&o, &p));
        /* where the device's own pages are, learned from a page of it read while the event is off */
        ASSERT_EQ(pagecache_learn_bdev(p, &fs_dev, 1), metadata ? 1 : 0);
        ASSERT_OK(pagecache_set_devices(p, &fs_dev, 1));
        ASSERT_OK(pagecache_enable(p, true));
        return p;
}

/* Child: map FILE, MADV_RANDOM (the kernel reads only the faulting page), close the fd, touch pages
 * [first, last] in ascending order, exit. With pause_at, it stays on one CPU and sleeps PAUSE_MSEC before
 * touching that page: the ring buffer then records the gap as a time extension (deltas have 27 bits of
 * nanoseconds, 134 ms). */
#define PAUSE_MSEC 300
static pid_t touch_mapped_pausing(const char *name, size_t first, size_t last, size_t pause_at) {
        pid_t pid = fork();

        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                int fd = open(test_path(fs.mnt, name), O_RDONLY | O_CLOEXEC);
                struct stat st;
                volatile unsigned char sum = 0;
                unsigned char *m;

                if (fd < 0 || fstat(fd, &st) < 0)
                        _exit(1);
                m = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED, fd, 0);
                if (m == MAP_FAILED || madvise(m, (size_t) st.st_size, MADV_RANDOM) < 0)
                        _exit(1);
                close(fd);
                if (pause_at != SIZE_MAX) {
                        cpu_set_t cpus;

                        CPU_ZERO(&cpus);
                        CPU_SET(sched_getcpu(), &cpus);
                        if (sched_setaffinity(0, sizeof cpus, &cpus) < 0)
                                _exit(1);
                }
                for (size_t i = first; i <= last; i++) {
                        if (i == pause_at)
                                usleep(PAUSE_MSEC * 1000);
                        sum += m[i * 4096];
                }
                (void) sum;
                _exit(0);
        }
        return pid;
}

static pid_t touch_mapped(const char *name, size_t first, size_t last) {
        return touch_mapped_pausing(name, first, last, SIZE_MAX);
}

/* Child: read() FILE whole, 4 KiB at a time, readahead as the kernel likes it. */
static pid_t read_whole(const char *name) {
        pid_t pid = fork();

        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                char buf[4096];
                int fd = open(test_path(fs.mnt, name), O_RDONLY | O_CLOEXEC);
                ssize_t k;

                if (fd < 0)
                        _exit(1);
                while ((k = read(fd, buf, sizeof buf)) > 0)
                        ;
                _exit(k < 0);
        }
        return pid;
}

/* The pages of inode `ino` in the events: each page must be seen once, by `tid`; returns how many, and
 * the lowest and highest. */
static size_t pages_of(const Seen *s, uint64_t ino, pid_t tid, uint64_t *ret_lo, uint64_t *ret_hi) {
        uint64_t lo = UINT64_MAX, hi = 0;
        size_t n = 0;

        for (size_t i = 0; i < s->n; i++) {
                if (s->e[i].dev != fs_dev || s->e[i].ino != ino)
                        continue;
                ASSERT_EQ(s->e[i].tid, tid);
                for (size_t j = 0; j < i; j++)         /* no page twice */
                        ASSERT_TRUE(s->e[j].ino != ino || s->e[j].index + s->e[j].n_pages <= s->e[i].index ||
                                    s->e[i].index + s->e[i].n_pages <= s->e[j].index);
                lo = MIN(lo, s->e[i].index);
                hi = MAX(hi, s->e[i].index + s->e[i].n_pages - 1);
                n += s->e[i].n_pages;
        }
        *ret_lo = lo;
        *ret_hi = hi;
        return n;
}

TEST(mmap_random) {
        _cleanup_(pagecache_freep) PageCache *p = NULL;
        uint64_t before, after, lo, hi, pause_start = 0, pause_end = 0;
        Seen s;
        pid_t pid;

        drop_cache(test_path(fs.mnt, "big"));
        p = start(&s, 0, false);
        before = now_usec(CLOCK_MONOTONIC) * 1000;
        pid = touch_mapped_pausing("big", 1000, 1999, 1500);
        test_wait_child(pid);
        after = now_usec(CLOCK_MONOTONIC) * 1000 + 1000;
        ASSERT_OK(pagecache_read(p));
        /* exactly the pages touched, one by one, by the child, in the order touched, while it ran */
        ASSERT_EQ(pages_of(&s, inode_of("big"), pid, &lo, &hi), 1000);
        ASSERT_EQ(lo, 1000);
        ASSERT_EQ(hi, 1999);
        qsort(s.e, s.n, sizeof *s.e, cmp_timestamp);
        for (size_t i = 0, k = 0; i < s.n; i++) {
                if (s.e[i].ino != inode_of("big"))
                        continue;
                ASSERT_EQ(s.e[i].index, 1000 + k);
                ASSERT_EQ(s.e[i].n_pages, 1);
                ASSERT_TRUE(s.e[i].timestamp_nsec >= before && s.e[i].timestamp_nsec <= after);
                if (s.e[i].index == 1500)
                        pause_end = s.e[i].timestamp_nsec;
                if (s.e[i].index == 1499)
                        pause_start = s.e[i].timestamp_nsec;
                k++;
        }
        ASSERT_TRUE(pause_end - pause_start >= PAUSE_MSEC * UINT64_C(1000000));
        free(s.e);
}

TEST(read_and_exec) {
        _cleanup_(pagecache_freep) PageCache *p = NULL;
        uint64_t lo, hi;
        struct stat st;
        Seen s;
        size_t n;
        pid_t reader, exe;

        drop_cache(test_path(fs.mnt, "small"));
        drop_cache(test_path(fs.mnt, "true"));
        p = start(&s, 0, false);
        reader = read_whole("small");
        test_wait_child(reader);
        exe = fork();
        ASSERT_TRUE(exe >= 0);
        if (exe == 0) {
                execl(test_path(fs.mnt, "true"), "true", (char *) NULL);
                _exit(1);
        }
        test_wait_child(exe);
        ASSERT_OK(pagecache_read(p));
        /* read(): the whole file, by the reader */
        ASSERT_EQ(pages_of(&s, inode_of("small"), reader, &lo, &hi), SMALL_PAGES);
        ASSERT_EQ(lo, 0);
        ASSERT_EQ(hi, SMALL_PAGES - 1);
        /* exec: the binary's pages, from its first, by the exec'ing process (the same pid after exec) */
        ASSERT_EQ(stat(test_path(fs.mnt, "true"), &st), 0);
        n = pages_of(&s, st.st_ino, exe, &lo, &hi);
        printf("exec: %zu of %lld pages of the binary, %" PRIu64 "-%" PRIu64 "\n", n,
               (long long) (st.st_size + 4095) / 4096, lo, hi);
        ASSERT_TRUE(n >= 1);
        ASSERT_EQ(lo, 0);
        free(s.e);
}

TEST(silent) {
        _cleanup_(pagecache_freep) PageCache *p = NULL;
        uint64_t lo, hi;
        dev_t other;
        struct stat st;
        Seen s;
        pid_t pid;

        /* off: nothing */
        drop_cache(test_path(fs.mnt, "big"));
        p = start(&s, 0, false);
        ASSERT_OK(pagecache_enable(p, false));
        test_wait_child(touch_mapped("big", 0, 99));
        ASSERT_EQ(pagecache_read(p), 0);
        /* on, but for another filesystem (/'s): nothing of ours */
        ASSERT_EQ(stat("/", &st), 0);
        other = st.st_dev;
        ASSERT_TRUE(other != fs_dev);
        ASSERT_OK(pagecache_set_devices(p, &other, 1));
        ASSERT_OK(pagecache_enable(p, true));
        test_wait_child(touch_mapped("big", 100, 199));
        ASSERT_OK(pagecache_read(p));
        for (size_t i = 0; i < s.n; i++)
                ASSERT_TRUE(s.e[i].dev != fs_dev);
        /* and ours again: seen */
        ASSERT_OK(pagecache_set_devices(p, &fs_dev, 1));
        pid = touch_mapped("big", 200, 209);
        test_wait_child(pid);
        ASSERT_OK(pagecache_read(p));
        ASSERT_EQ(pages_of(&s, inode_of("big"), pid, &lo, &hi), 10);
        ASSERT_EQ(lo, 200);
        free(s.e);
}

/* The block device's own pages: after an unmount nothing of the filesystem is cached; the mount and a listing
 * of a directory with the sizes of its files read its directory block and its files' inode-table block (the
 * mount may read the latter already, through ext4's inode-table readahead: recording starts before it). */
TEST(metadata) {
        _cleanup_(pagecache_freep) PageCache *p = NULL;
        long long dir_block, itable_block;
        bool dir_seen = false, itable_seen = false;
        Seen s;

        dir_block = run_number("debugfs -R 'bmap /dir 0' '%s' 2>/dev/null", fs.dev);
        itable_block = run_number("debugfs -R 'imap /dir/f50' '%s' 2>/dev/null | sed -n 's/.*located at block //p'",
                                  fs.dev);
        ASSERT_TRUE(dir_block > 0 && itable_block > 0);
        fs.mount_fd = safe_close(fs.mount_fd);
        ASSERT_EQ(umount(fs.mnt), 0);
        fs.mounted = false;
        p = start(&s, 0, true);         /* fs_dev is the loop device's number: it stays */
        do_mount();
        ASSERT_EQ(loop_fs_sh("ls -l '%s/dir' >/dev/null", fs.mnt), 0);
        ASSERT_OK(pagecache_read(p));
        for (size_t i = 0; i < s.n; i++) {
                if (s.e[i].dev != fs_dev || s.e[i].ino != 0)
                        continue;
                if ((long long) s.e[i].index <= dir_block && dir_block < (long long) (s.e[i].index + s.e[i].n_pages))
                        dir_seen = true;
                if ((long long) s.e[i].index <= itable_block &&
                    itable_block < (long long) (s.e[i].index + s.e[i].n_pages))
                        itable_seen = true;
        }
        printf("mount and ls -l: %zu events, directory block %lld and inode-table block %lld among them: %s, %s\n",
               s.n, dir_block, itable_block, dir_seen ? "yes" : "no", itable_seen ? "yes" : "no");
        ASSERT_TRUE(dir_seen);
        ASSERT_TRUE(itable_seen);
        free(s.e);
}

/* A file of another filesystem whose inode number is the device's number (a FUSE file, inofs): its pages
 * look like the device's own to the tracepoint but for the filesystem's device number, and are not taken
 * for the filesystem's metadata. The FUSE file's pages read lie beyond the end of the 256 MiB device. */
#define FORGED_FIRST 76800              /* 300 MiB */
#define FORGED_PAGES 16
TEST(metadata_forged) {
        _cleanup_(pagecache_freep) PageCache *p = NULL;
        const char *inofs = getenv("INOFS");
        char fuse[600], file[700], ino[32], size[32];
        uint64_t kdev = ((uint64_t) major(fs_dev) << 20) | minor(fs_dev);
        bool up = false;
        struct stat st;
        size_t forged = 0, real = 0;
        Seen s;
        pid_t helper;
        int fd;

        if (!inofs || access("/dev/fuse", R_OK | W_OK) < 0) {
                printf("skipped: no inofs helper (libfuse3) or no /dev/fuse\n");
                return;
        }
        snprintf(fuse, sizeof fuse, "%s/fuse", loop_fs_dir);
        snprintf(file, sizeof file, "%s/f", fuse);
        snprintf(ino, sizeof ino, "%" PRIu64, kdev);
        snprintf(size, sizeof size, "%d", (FORGED_FIRST + 1024) * 4096);
        ASSERT_EQ(mkdir(fuse, 0755), 0);
        helper = fork();
        ASSERT_TRUE(helper >= 0);
        if (helper == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
                execl(inofs, "inofs", ino, size, fuse, (char *) NULL);
                _exit(127);
        }
        for (int i = 0; i < 100 && !up; i++) {
                up = stat(file, &st) == 0 && st.st_ino == kdev;
                if (!up)
                        usleep(50 * 1000);
        }
        ASSERT_TRUE(up);

        p = start(&s, 0, true);
        fd = open(file, O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
        for (int i = 0; i < FORGED_PAGES; i++) {
                char c;
                ASSERT_EQ(pread(fd, &c, 1, (off_t) (FORGED_FIRST + i) * 4096), 1);
                ASSERT_EQ(c, (char) ((uint64_t) (FORGED_FIRST + i) * 4096 % 251));
        }
        close(fd);
        /* and a page of the device itself, read by us: the device's own */
        drop_cache(fs.dev);
        fd = open(fs.dev, O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        {
                char c;
                ASSERT_EQ(pread(fd, &c, 1, 3 * 4096), 1);
        }
        close(fd);
        ASSERT_OK(pagecache_read(p));
        for (size_t i = 0; i < s.n; i++) {
                if (s.e[i].dev != fs_dev || s.e[i].ino != 0)
                        continue;
                if (s.e[i].index + s.e[i].n_pages > FORGED_FIRST && s.e[i].index < FORGED_FIRST + FORGED_PAGES)
                        forged += s.e[i].n_pages;
                if (s.e[i].index <= 3 && 3 < s.e[i].index + s.e[i].n_pages)
                        real++;
        }
        {
                dev_t bdev;

                ASSERT_OK(pagecache_bdev(p, &bdev));
                printf("block devices' pages: device %u:%u; forged metadata: %zu pages of the FUSE file (device "
                       "%u:%u) taken as the device's, the device's own page 3 %s\n", major(bdev), minor(bdev),
                       forged, major(st.st_dev), minor(st.st_dev), real ? "seen" : "not seen");
                ASSERT_EQ(major(bdev), 0);
                ASSERT_TRUE(bdev != st.st_dev);
        }
        ASSERT_EQ(real, 1);
        ASSERT_EQ(forged, 0);
        free(s.e);
        ASSERT_EQ(umount2(fuse, MNT_DETACH), 0);
        ASSERT_EQ(kill(helper, SIGTERM), 0);
        ASSERT_EQ(waitpid(helper, NULL, 0), helper);
}

/* A buffer too small for what happens before it is read: what did not fit is counted, nothing is made up. */
TEST(lost) {
        _cleanup_(pagecache_freep) PageCache *p = NULL;
        uint64_t lost, lo, hi;
        Seen s;
        pid_t pid;

        drop_cache(test_path(fs.mnt, "big"));
        p = start(&s, 64, false);
        pid = touch_mapped("big", 0, 19999);
        test_wait_child(pid);
        ASSERT_OK(pagecache_read(p));
        ASSERT_OK(pagecache_lost(p, &lost));
        ASSERT_TRUE(lost > 0);
        printf("64 KiB per CPU: %zu events seen, %" PRIu64 " lost\n", s.n, lost);
        ASSERT_EQ(pages_of(&s, inode_of("big"), pid, &lo, &hi) + lost, 20000);
        ASSERT_EQ(lo, 0);       /* the first touches are kept, the later ones dropped */
        free(s.e);
}

static bool instance_exists(PageCache *p) {
        return access(pagecache_instance(p), F_OK) == 0;
}

/* An instance goes with its engine; one whose owner was killed goes at the next start; one whose owner
 * runs stays. */
TEST(instances) {
        char killed[512], alive[512];
        int pipe_killed[2], pipe_alive[2];
        pid_t k = -1, a = -1;
        PageCache *p;
        Seen s;

        p = start(&s, 0, false);
        snprintf(killed, sizeof killed, "%s", pagecache_instance(p));
        ASSERT_TRUE(instance_exists(p));
        pagecache_free(p);
        ASSERT_TRUE(access(killed, F_OK) < 0 && errno == ENOENT);

        /* two children make instances, each writes its path to a pipe; one is killed, one stays */
        ASSERT_EQ(pipe(pipe_killed), 0);
        ASSERT_EQ(pipe(pipe_alive), 0);
        for (int i = 0; i < 2; i++) {
                pid_t c = fork();

                ASSERT_TRUE(c >= 0);
                if (c == 0) {
                        PageCache *q;

                        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                                _exit(1);
                        q = start(&s, 0, false);
                        int w = i == 0 ? pipe_killed[1] : pipe_alive[1];

                        if (write(w, pagecache_instance(q), strlen(pagecache_instance(q)) + 1) < 0)
                                _exit(1);
                        pause();
                        _exit(0);
                }
                if (i == 0)
                        k = c;
                else
                        a = c;
        }
        ASSERT_TRUE(read(pipe_killed[0], killed, sizeof killed) > 0);
        ASSERT_TRUE(read(pipe_alive[0], alive, sizeof alive) > 0);
        ASSERT_EQ(kill(k, SIGKILL), 0);
        ASSERT_EQ(waitpid(k, NULL, 0), k);
        ASSERT_EQ(access(killed, F_OK), 0);     /* left behind, event on */

        p = start(&s, 0, false);
        ASSERT_TRUE(access(killed, F_OK) < 0 && errno == ENOENT);
        ASSERT_EQ(access(alive, F_OK), 0);
        pagecache_free(p);
        ASSERT_EQ(kill(a, SIGTERM), 0);
        ASSERT_EQ(waitpid(a, NULL, 0), a);
        ASSERT_EQ(pagecache_reap(TRACEFS, PREFIX), 1);   /* the SIGTERMed one had no time to clean up */
        ASSERT_TRUE(access(alive, F_OK) < 0 && errno == ENOENT);
        for (int i = 0; i < 2; i++) {
                close(pipe_killed[i]);
                close(pipe_alive[i]);
        }
}

/* tracefs lazily unmounted under the engine, its event on: freeing it still switches the event off and
 * removes the instance (seen through another mount of the same tracefs). */
TEST(lazy_unmount) {
        char second[512], name[256], seen[768];
        PageCache *p;
        Seen s;

        snprintf(second, sizeof second, "%s/tracefs", loop_fs_dir);
        ASSERT_EQ(mkdir(second, 0700), 0);
        ASSERT_EQ(mount("tracefs", second, "tracefs", 0, NULL), 0);
        {
                PageCacheOptions o = { .tracefs = second, .prefix = PREFIX, .on_pages = on_pages, .userdata = &s };

                s = (Seen) {};
                ASSERT_OK(pagecache_new(&o, &p));
        }
        ASSERT_OK(pagecache_set_devices(p, &fs_dev, 1));
        ASSERT_OK(pagecache_enable(p, true));
        snprintf(name, sizeof name, "%s", strrchr(pagecache_instance(p), '/') + 1);
        snprintf(seen, sizeof seen, TRACEFS "/instances/%s/events/filemap/mm_filemap_add_to_page_cache/enable", name);
        ASSERT_EQ(access(seen, F_OK), 0);
        ASSERT_EQ(umount2(second, MNT_DETACH), 0);
        ASSERT_TRUE(access(pagecache_instance(p), F_OK) < 0);  /* gone from where it was */
        /* still switched and read through what the engine holds */
        ASSERT_OK(pagecache_enable(p, false));
        ASSERT_OK(pagecache_enable(p, true));
        ASSERT_TRUE(pagecache_read(p) >= 0);
        pagecache_free(p);
        free(s.e);
        snprintf(seen, sizeof seen, TRACEFS "/instances/%s", name);
        ASSERT_TRUE(access(seen, F_OK) < 0 && errno == ENOENT);
}

int main(void) {
        if (geteuid() != 0) {
                fprintf(stderr, "needs root (tracefs, loop devices, mount)\n");
                return EXIT_TEST_SKIP;
        }
        if (loop_fs_sh("command -v mkfs.ext4 losetup debugfs >/dev/null") != 0 || sysconf(_SC_PAGESIZE) != 4096)
                return EXIT_TEST_SKIP;
        setvbuf(stdout, NULL, _IOLBF, 0);
        /* our mounts (tracefs if needed, the image) stay in a namespace of our own */
        ASSERT_EQ(unshare(CLONE_NEWNS), 0);
        ASSERT_EQ(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
        if (access(TRACEFS "/instances", F_OK) < 0 && mount("tracefs", TRACEFS, "tracefs", 0, NULL) < 0) {
                fprintf(stderr, "no tracefs: %m\n");
                return EXIT_TEST_SKIP;
        }
        if (access(TRACEFS "/events/filemap/mm_filemap_add_to_page_cache", F_OK) < 0) {
                fprintf(stderr, "no filemap:mm_filemap_add_to_page_cache tracepoint\n");
                return EXIT_TEST_SKIP;
        }
        (void) pagecache_reap(TRACEFS, PREFIX);
        fs_setup();

        RUN(mmap_random);
        RUN(read_and_exec);
        RUN(silent);
        RUN(lost);
        RUN(instances);
        RUN(lazy_unmount);
        RUN(metadata);
        RUN(metadata_forged);
        return EXIT_SUCCESS;
}
