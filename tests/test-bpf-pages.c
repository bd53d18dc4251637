/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The BPF page recorder's engine (record-bpf/bpf-pages.c) against the real kernel, on a scratch ext4: a
 * watched child reads half of a file that was cached before (A), a file that was not (B), maps and
 * touches a cached file (C), re-reads A's half, reads a cached file of four chunks (D) whole by one
 * pread, twice, and a page of it again, and forks a grandchild that reads A whole. What the ring buffer
 * must then hold: A's pages as pages used (mm_filemap_get_pages) by the child and, for the half the child
 * had not read, by the grandchild (the watch is inherited), and never as inserted; B's pages inserted;
 * C's pages mapped or faulted; D's in one record; every page once per session and class of event (no
 * record for a re-read); nothing from a process nobody watched (this one, and a child that reads A); no
 * record lost; the child's and the grandchild's entries gone once they exited, the count of watched
 * processes back at 0. Needs root, the kernel's BTF, mkfs.ext4 and losetup; skips (77) when the engine
 * was built without BPF. tracefs is mounted in a mount namespace of its own if the system has none. */
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/alloc-util.h"
#include "common/macro.h"
#include "record-bpf/bpf-pages.h"
#include "test-loop-fs.h"
#include "test-util.h"

#define TRACEFS "/sys/kernel/tracing"
#define PAGES 64                /* each file: 256 KiB, a bit of a uint64_t a page */
#define HALF 32                 /* what the child reads of A */
#define ALL UINT64_MAX
#define D_PAGES 256             /* D: four chunks (PAGES_CHUNK), read by one pread() */
#define FIRST_HALF ((1ULL << HALF) - 1)
#define TAG 7

static LoopFs fs;
static dev_t fs_dev;

typedef struct Seen {
        BpfPageEvent *e;
        size_t n, allocated;
} Seen;

static void on_event(const BpfPageEvent *e, void *userdata) {
        Seen *s = userdata;

        ASSERT_OK(GREEDY_REALLOC(s->e, s->allocated, s->n + 1));
        s->e[s->n++] = *e;
}

static void write_file(const char *name, size_t pages) {
        char buf[4096];
        int fd = open(test_path(fs.mnt, name), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        ASSERT_TRUE(fd >= 0);
        for (size_t i = 0; i < pages; i++) {
                memset(buf, (int) i + 1, sizeof buf);
                ASSERT_EQ(write(fd, buf, sizeof buf), (ssize_t) sizeof buf);
        }
        ASSERT_EQ(fdatasync(fd), 0);
        ASSERT_EQ(close(fd), 0);
}

/* pread() pages [first, last) 4 KiB at a time; 0 or -1. */
static int read_pages(const char *name, size_t first, size_t last) {
        char buf[4096];
        int fd = open(test_path(fs.mnt, name), O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return -1;
        for (size_t i = first; i < last; i++)
                if (pread(fd, buf, sizeof buf, (off_t) (i * sizeof buf)) != (ssize_t) sizeof buf)
                        return -1;
        close(fd);
        return 0;
}

/* Maps the file and reads a byte of each page. */
static int touch_mapped(const char *name) {
        int fd = open(test_path(fs.mnt, name), O_RDONLY | O_CLOEXEC);
        volatile unsigned char sum = 0;
        unsigned char *m;

        if (fd < 0)
                return -1;
        m = mmap(NULL, PAGES * 4096, PROT_READ, MAP_SHARED, fd, 0);
        close(fd);
        if (m == MAP_FAILED)
                return -1;
        for (size_t i = 0; i < PAGES; i++)
                sum += m[i * 4096];
        (void) sum;
        return munmap(m, PAGES * 4096);
}

/* The file cached and kept so: mapped and locked (another test's drop_caches, anywhere on the machine,
 * would otherwise make it cold). */
static void *lock_cached(const char *name, size_t pages) {
        int fd = open(test_path(fs.mnt, name), O_RDONLY | O_CLOEXEC);
        void *m;

        ASSERT_TRUE(fd >= 0);
        m = mmap(NULL, pages * 4096, PROT_READ, MAP_SHARED, fd, 0);
        close(fd);
        ASSERT_TRUE(m != MAP_FAILED);
        ASSERT_EQ(mlock(m, pages * 4096), 0);
        return m;
}

/* Reads D whole with one pread() of all its pages; 0 or -1. */
static int read_long(void) {
        static char buf[D_PAGES * 4096];
        int fd = open(test_path(fs.mnt, "D"), O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -1;
        n = pread(fd, buf, sizeof buf, 0);
        close(fd);
        return n == (ssize_t) sizeof buf ? 0 : -1;
}

static uint64_t inode_of(const char *name) {
        struct stat st;

        ASSERT_EQ(stat(test_path(fs.mnt, name), &st), 0);
        return st.st_ino;
}

/* A child that waits until the write end of hold is closed everywhere, then exits. */
static pid_t waiting_child(int hold[2]) {
        pid_t pid = fork();
        char c;

        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                close(hold[1]);
                _exit(read(hold[0], &c, 1) == 0 ? 0 : 1);
        }
        return pid;
}

/* The watched child: waits for a byte on go, reads, forks the grandchild and tells its pid on back. */
static pid_t watched_child(int go, int back) {
        pid_t pid = fork();

        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                pid_t grandchild;
                int status;
                char c;

                if (read(go, &c, 1) != 1)
                        _exit(1);
                if (read_pages("A", 0, HALF) < 0 || read_pages("B", 0, PAGES) < 0 || touch_mapped("C") < 0 ||
                    read_pages("A", 0, HALF) < 0 || read_long() < 0 || read_long() < 0 ||
                    read_pages("D", 200, 201) < 0)
                        _exit(1);
                grandchild = fork();
                if (grandchild < 0)
                        _exit(1);
                if (grandchild == 0)
                        _exit(read_pages("A", 0, PAGES) < 0);
                if (write(back, &grandchild, sizeof grandchild) != sizeof grandchild ||
                    waitpid(grandchild, &status, 0) != grandchild || !WIFEXITED(status) ||
                    WEXITSTATUS(status) != 0)
                        _exit(1);
                _exit(0);
        }
        return pid;
}

/* The pages (bit i: page i) of inode ino that events of one kind from pid cover, and how many events
 * there were; kind -1: the use kinds (get_pages, map_pages, fault). */
static uint64_t pages_of(const Seen *s, uint64_t ino, int kind, pid_t pid, size_t *ret_n) {
        uint64_t pages = 0;
        size_t n = 0;

        for (size_t i = 0; i < s->n; i++) {
                const BpfPageEvent *e = &s->e[i];

                if (e->dev != fs_dev || e->ino != ino || e->pid != pid)
                        continue;
                if (kind >= 0 ? (int) e->kind != kind : e->kind == BPF_PAGE_ADD)
                        continue;
                ASSERT_TRUE(e->first <= e->last && e->last < PAGES);
                for (uint64_t j = e->first; j <= e->last; j++)
                        pages |= 1ULL << j;
                n++;
        }
        if (ret_n)
                *ret_n = n;
        return pages;
}

/* Every record of a file of ours brings a page its session had not reported in its class (inserted;
 * used) yet: a re-read makes none. For the files of PAGES pages (D's record is counted apart). */
static void assert_no_duplicates(const Seen *s) {
        for (size_t i = 0; i < s->n; i++) {
                const BpfPageEvent *e = &s->e[i];
                uint64_t before = 0, range;

                if (e->dev != fs_dev || e->last >= PAGES)
                        continue;
                for (size_t j = 0; j < i; j++) {
                        const BpfPageEvent *f = &s->e[j];

                        if (f->dev == e->dev && f->ino == e->ino && f->tag == e->tag && f->last < PAGES &&
                            (f->kind == BPF_PAGE_ADD) == (e->kind == BPF_PAGE_ADD))
                                for (uint64_t k = f->first; k <= f->last; k++)
                                        before |= 1ULL << k;
                }
                range = e->last - e->first == 63 ? ~0ULL : ((1ULL << (e->last - e->first + 1)) - 1) << e->first;
                ASSERT_TRUE((range & ~before) != 0);
        }
}

static void print_events(const Seen *s, pid_t child, pid_t grandchild) {
        size_t count[2][_BPF_PAGE_KIND_MAX] = {};

        for (size_t i = 0; i < s->n; i++) {
                const BpfPageEvent *e = &s->e[i];

                if (e->dev == fs_dev)
                        printf("  %s pid %s ino %" PRIu64 " pages %" PRIu64 "-%" PRIu64 "\n",
                               bpf_page_kind_to_string(e->kind), e->pid == child ? "child" : "grandchild",
                               e->ino, e->first, e->last);
                count[e->pid == grandchild][e->kind]++;
        }
        for (int k = 0; k < _BPF_PAGE_KIND_MAX; k++)
                printf("  %s: %zu from the child, %zu from the grandchild (all filesystems)\n",
                       bpf_page_kind_to_string(k), count[0][k], count[1][k]);
}

TEST(inherit_warm_cold_mapped) {
        _cleanup_(bpf_pages_freep) BpfPages *p = NULL;
        BpfPagesOptions o = { .tracefs = TRACEFS, .on_event = on_event };
        uint64_t a = inode_of("A"), b = inode_of("B"), c = inode_of("C"), d = inode_of("D"), lost = 1;
        int go[2], back[2], r;
        pid_t child, grandchild, other;
        unsigned attached;
        void *locked_a, *locked_c, *locked_d;
        Seen s = {};
        size_t n;

        o.userdata = &s;
        /* A and C cached, B not: dropped after its pages were written back */
        locked_a = lock_cached("A", PAGES);
        locked_c = lock_cached("C", PAGES);
        locked_d = lock_cached("D", D_PAGES);
        {
                int fd = open(test_path(fs.mnt, "B"), O_RDONLY | O_CLOEXEC);
                ASSERT_TRUE(fd >= 0);
                ASSERT_EQ(fdatasync(fd), 0);
                ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
                close(fd);
        }

        r = bpf_pages_new(&o, &p);
        ASSERT_OK(r);
        attached = bpf_pages_attached(p);
        printf("  attached:");
        for (int k = 0; k < _BPF_PAGE_KIND_MAX; k++)
                if (attached & (1u << k))
                        printf(" %s", bpf_page_kind_to_string(k));
        printf("\n");
        ASSERT_TRUE(attached & (1u << BPF_PAGE_ADD));

        ASSERT_EQ(pipe2(go, O_CLOEXEC), 0);
        ASSERT_EQ(pipe2(back, O_CLOEXEC), 0);
        child = watched_child(go[0], back[1]);
        ASSERT_EQ(bpf_pages_watching(p), 0);
        ASSERT_OK(bpf_pages_watch(p, child, TAG));
        ASSERT_EQ(bpf_pages_watching(p), 1);
        ASSERT_EQ(write(go[1], "x", 1), 1);
        ASSERT_EQ(read(back[0], &grandchild, sizeof grandchild), (ssize_t) sizeof grandchild);
        test_wait_child(child);
        /* nobody watches these: this process and another child read A */
        ASSERT_EQ(read_pages("A", 0, PAGES), 0);
        other = fork();
        ASSERT_TRUE(other >= 0);
        if (other == 0)
                _exit(read_pages("A", 0, PAGES) < 0);
        test_wait_child(other);

        while ((r = bpf_pages_consume(p, 0)) > 0)
                ;
        ASSERT_OK(r);
        print_events(&s, child, grandchild);

        for (size_t i = 0; i < s.n; i++) {
                ASSERT_EQ(s.e[i].tag, TAG);
                ASSERT_TRUE(s.e[i].pid == child || s.e[i].pid == grandchild);
        }
        assert_no_duplicates(&s);

        /* B was read from the disk, A and C were not */
        ASSERT_TRUE(pages_of(&s, b, BPF_PAGE_ADD, child, NULL) == ALL);
        ASSERT_TRUE(pages_of(&s, a, BPF_PAGE_ADD, child, NULL) == 0);
        ASSERT_TRUE(pages_of(&s, a, BPF_PAGE_ADD, grandchild, NULL) == 0);
        ASSERT_TRUE(pages_of(&s, c, BPF_PAGE_ADD, child, NULL) == 0);

        if (!(attached & (1u << BPF_PAGE_GET_PAGES))) {
                printf("  no mm_filemap_get_pages in this kernel: pages used not checked\n");
                goto lost;
        }
        /* A, cached, used by the child (its half, a record a page although read twice) and by the
         * grandchild (the other half: the first was reported for the session already) */
        ASSERT_TRUE(pages_of(&s, a, BPF_PAGE_GET_PAGES, child, &n) == FIRST_HALF);
        ASSERT_EQ(n, HALF);
        ASSERT_TRUE(pages_of(&s, a, BPF_PAGE_GET_PAGES, grandchild, &n) == ALL - FIRST_HALF);
        ASSERT_EQ(n, PAGES - HALF);
        ASSERT_TRUE(pages_of(&s, b, BPF_PAGE_GET_PAGES, child, NULL) == ALL);
        /* D, cached, read whole by one pread: a record of its four chunks, none for the second pread and
         * none for a page of its last chunk read afterwards */
        n = 0;
        for (size_t i = 0; i < s.n; i++)
                if (s.e[i].dev == fs_dev && s.e[i].ino == d) {
                        ASSERT_EQ(s.e[i].kind, BPF_PAGE_GET_PAGES);
                        ASSERT_EQ(s.e[i].first, 0);
                        ASSERT_EQ(s.e[i].last, D_PAGES - 1);
                        n++;
                }
        ASSERT_EQ(n, 1);
        /* C, cached, mapped around the faults or faulted */
        if (attached & (1u << BPF_PAGE_MAP_PAGES))
                ASSERT_TRUE(pages_of(&s, c, -1, child, NULL) == ALL);

lost:
        ASSERT_OK(bpf_pages_lost(p, &lost));
        ASSERT_EQ(lost, 0);
        /* the child's and the grandchild's entries left the map with their last threads */
        ASSERT_ERROR(bpf_pages_unwatch(p, child), ENOENT);
        ASSERT_ERROR(bpf_pages_unwatch(p, grandchild), ENOENT);
        ASSERT_EQ(bpf_pages_watching(p), 0);

        /* watch_new keeps the tag a process has; unwatch_tag takes every process of one tag */
        {
                int hold[2];
                pid_t x, y;

                ASSERT_EQ(pipe2(hold, O_CLOEXEC), 0);
                x = waiting_child(hold);
                y = waiting_child(hold);
                ASSERT_OK(bpf_pages_watch_new(p, x, TAG + 1));
                ASSERT_ERROR(bpf_pages_watch_new(p, x, TAG + 2), EEXIST);
                ASSERT_OK(bpf_pages_watch_new(p, y, TAG + 1));
                ASSERT_OK(bpf_pages_watch_new(p, getpid(), TAG + 2));
                ASSERT_EQ(bpf_pages_watching(p), 3);
                ASSERT_EQ(bpf_pages_unwatch_tag(p, TAG + 1), 2);
                ASSERT_EQ(bpf_pages_unwatch_tag(p, TAG + 1), 0);
                ASSERT_EQ(bpf_pages_watching(p), 1);
                ASSERT_ERROR(bpf_pages_unwatch(p, x), ENOENT);
                ASSERT_ERROR(bpf_pages_unwatch_if(p, getpid(), TAG + 1), ESRCH);
                ASSERT_OK(bpf_pages_unwatch_if(p, getpid(), TAG + 2));
                ASSERT_ERROR(bpf_pages_unwatch_if(p, getpid(), TAG + 2), ENOENT);
                ASSERT_EQ(bpf_pages_watching(p), 0);
                close(hold[1]);
                test_wait_child(x);
                test_wait_child(y);
                close(hold[0]);
        }
        ASSERT_EQ(munmap(locked_a, PAGES * 4096), 0);
        ASSERT_EQ(munmap(locked_c, PAGES * 4096), 0);
        ASSERT_EQ(munmap(locked_d, D_PAGES * 4096), 0);
        free(s.e);
}

/* A child that reads pages of A and the first page of the file open at other_fd (on another filesystem),
 * then exits. */
static void child_reads(int other_fd) {
        pid_t pid = fork();
        char buf[4096];

        ASSERT_TRUE(pid >= 0);
        if (pid == 0)
                _exit(read_pages("A", 0, 4) < 0 || pread(other_fd, buf, sizeof buf, 0) != sizeof buf);
        test_wait_child(pid);
}

/* The boot's way: everyone's pages under one tag but this process's own, of the filesystems asked for
 * only; off again, nobody's. */
TEST(watch_all_devices) {
        _cleanup_(bpf_pages_freep) BpfPages *p = NULL;
        _cleanup_free_ char *other = NULL;
        Seen s = {};
        BpfPagesOptions o = { .tracefs = TRACEFS, .on_event = on_event, .userdata = &s };
        uint64_t a = inode_of("A");
        struct stat st;
        size_t n_a = 0;
        int r, other_fd;

        /* on the disk below /var/tmp (tmpfs's reads raise none of these events) */
        other = strdup("/var/tmp/seekless-test-bpf-pages-other.XXXXXX");
        ASSERT_TRUE(other);
        r = mkstemp(other);
        ASSERT_TRUE(r >= 0);
        ASSERT_EQ(unlink(other), 0);    /* nothing left behind, whatever fails: read through the fd */
        {
                char page[4096] = { 1 };

                ASSERT_EQ(write(r, page, sizeof page), (ssize_t) sizeof page);
                ASSERT_EQ(fdatasync(r), 0);
                ASSERT_EQ(posix_fadvise(r, 0, 0, POSIX_FADV_DONTNEED), 0);
        }
        other_fd = r;
        ASSERT_EQ(fstat(other_fd, &st), 0);
        ASSERT_TRUE(st.st_dev != fs_dev);

        ASSERT_OK(bpf_pages_new(&o, &p));
        ASSERT_OK(bpf_pages_set_devices(p, &fs_dev, 1, 0));
        bpf_pages_watch_all(p, TAG + 5);
        ASSERT_EQ(read_pages("B", 0, 4), 0);            /* ours: not reported */
        child_reads(other_fd);
        while ((r = bpf_pages_consume(p, 0)) > 0)
                ;
        ASSERT_OK(r);
        for (size_t i = 0; i < s.n; i++) {
                ASSERT_EQ(s.e[i].tag, TAG + 5);
                ASSERT_TRUE(s.e[i].pid != getpid());
                ASSERT_TRUE(s.e[i].dev == fs_dev);      /* nothing of the other filesystem */
                if (s.e[i].ino == a)
                        n_a++;
        }
        ASSERT_TRUE(n_a > 0);
        printf("  watching all: %zu records, %zu of A from the child, none of ours or of another filesystem\n",
               s.n, n_a);

        /* off: nobody's */
        bpf_pages_watch_all(p, 0);
        s.n = 0;
        child_reads(other_fd);
        while ((r = bpf_pages_consume(p, 0)) > 0)
                ;
        ASSERT_OK(r);
        ASSERT_EQ(s.n, 0);

        /* no device: nobody's pages, not even the child's of the filesystem asked for before; dropped first,
         * so that they are read again (insertions, on kernels without the tracepoints for pages used too) */
        ASSERT_OK(bpf_pages_set_devices(p, &fs_dev, 0, 0));
        bpf_pages_watch_all(p, TAG + 7);
        {
                int fd = open(test_path(fs.mnt, "A"), O_RDONLY | O_CLOEXEC);

                ASSERT_TRUE(fd >= 0);
                ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
                close(fd);
                ASSERT_EQ(posix_fadvise(other_fd, 0, 0, POSIX_FADV_DONTNEED), 0);
        }
        child_reads(other_fd);
        while ((r = bpf_pages_consume(p, 0)) > 0)
                ;
        ASSERT_OK(r);
        ASSERT_EQ(s.n, 0);
        bpf_pages_watch_all(p, 0);

        /* every device again: the other filesystem's page is reported too */
        ASSERT_OK(bpf_pages_set_devices(p, NULL, 0, 0));
        bpf_pages_watch_all(p, TAG + 6);
        child_reads(other_fd);
        while ((r = bpf_pages_consume(p, 0)) > 0)
                ;
        ASSERT_OK(r);
        n_a = 0;
        for (size_t i = 0; i < s.n; i++)
                if (s.e[i].dev != fs_dev)
                        n_a++;
        ASSERT_TRUE(n_a > 0);
        printf("  every device: %zu record(s) of other filesystems\n", n_a);
        bpf_pages_watch_all(p, 0);
        close(other_fd);
        free(s.e);
}

/* A bounded consume stops at its bound, whatever still waits, and the rest is there for the next call. */
TEST(consume_bounded) {
        _cleanup_(bpf_pages_freep) BpfPages *p = NULL;
        Seen s = {};
        BpfPagesOptions o = { .tracefs = TRACEFS, .on_event = on_event, .userdata = &s };
        size_t first;
        pid_t pid;
        int r;

        ASSERT_OK(bpf_pages_new(&o, &p));
        bpf_pages_watch_all(p, TAG + 8);
        /* a child reads D's pages one at a time, readahead off: a record each at least */
        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                char buf[4096];
                int fd = open(test_path(fs.mnt, "D"), O_RDONLY | O_CLOEXEC);

                if (fd < 0 || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0 ||
                    posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM) != 0)
                        _exit(1);
                for (size_t i = 0; i < D_PAGES; i++)
                        if (pread(fd, buf, sizeof buf, (off_t) (i * sizeof buf)) != sizeof buf)
                                _exit(1);
                _exit(0);
        }
        test_wait_child(pid);
        bpf_pages_watch_all(p, 0);

        /* a bound already past: the clock is read after 64 records, and it stops there */
        r = bpf_pages_consume(p, 1);
        ASSERT_EQ(r, -EAGAIN);
        ASSERT_EQ(s.n, 64u);
        first = s.n;
        while ((r = bpf_pages_consume(p, 0)) > 0)
                ;
        ASSERT_OK(r);
        ASSERT_TRUE(s.n >= D_PAGES);
        printf("  a bound already past: %zu records, then %zu more without one\n", first, s.n - first);
        free(s.e);
}

/* In a PID namespace of its own the loader refuses (the programs report the initial namespace's ids). */
TEST(pid_namespace) {
        pid_t pid;
        int status;

        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                pid_t inner;

                if (unshare(CLONE_NEWPID) < 0)
                        _exit(10);
                inner = fork();
                if (inner < 0)
                        _exit(11);
                if (inner == 0) {
                        BpfPagesOptions o = { .tracefs = TRACEFS, .on_event = on_event };
                        BpfPages *p = NULL;
                        int r = bpf_pages_new(&o, &p);

                        bpf_pages_free(p);
                        _exit(getpid() == 1 && r == -EXDEV ? 0 : 12);
                }
                _exit(waitpid(inner, &status, 0) == inner && WIFEXITED(status) ? WEXITSTATUS(status) : 13);
        }
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status));
        ASSERT_EQ(WEXITSTATUS(status), 0);
        printf("  as pid 1 of a PID namespace of its own: -EXDEV\n");
}

int main(void) {
        BpfPagesOptions probe = { .tracefs = TRACEFS, .on_event = on_event };
        BpfPages *p = NULL;
        struct stat st;
        int r;

        if (geteuid() != 0) {
                fprintf(stderr, "needs root (BPF, loop devices, mount)\n");
                return EXIT_TEST_SKIP;
        }
        if (access("/sys/kernel/btf/vmlinux", R_OK) < 0) {
                fprintf(stderr, "no kernel BTF\n");
                return EXIT_TEST_SKIP;
        }
        if (loop_fs_sh("command -v mkfs.ext4 losetup >/dev/null") != 0 || sysconf(_SC_PAGESIZE) != 4096)
                return EXIT_TEST_SKIP;
        r = bpf_pages_new(&probe, &p);
        if (r == -EOPNOTSUPP) {
                fprintf(stderr, "built without the BPF recorder\n");
                return EXIT_TEST_SKIP;
        }
        bpf_pages_free(p);
        setvbuf(stdout, NULL, _IOLBF, 0);
        /* our mounts (tracefs if needed, the image) stay in a namespace of our own */
        ASSERT_EQ(unshare(CLONE_NEWNS), 0);
        ASSERT_EQ(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
        if (access(TRACEFS "/events", F_OK) < 0 && mount("tracefs", TRACEFS, "tracefs", 0, NULL) < 0) {
                fprintf(stderr, "no tracefs: %m\n");
                return EXIT_TEST_SKIP;
        }

        loop_fs_setup(&fs, "seekless-test-bpf-pages", "bpf-pages", 32, NULL, NULL);
        ASSERT_EQ(stat(fs.mnt, &st), 0);
        fs_dev = st.st_dev;
        write_file("A", PAGES);
        write_file("B", PAGES);
        write_file("C", PAGES);
        write_file("D", D_PAGES);

        RUN(inherit_warm_cold_mapped);
        RUN(watch_all_devices);
        RUN(consume_bounded);
        RUN(pid_namespace);
        return EXIT_SUCCESS;
}
