/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* What the mover's test programs share (test-mover, test-mover-donor, test-mover-room, test-mover-ranges):
 * their scratch filesystems (test-loop-fs.h), files written interleaved so that each lies in pieces, their
 * checksums and extents read back, items and options for mover_run(), and the main loop that runs the tests
 * named on the command line. */

#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/macro.h"
#include "fs/fid-util.h"
#include "fs/fiemap.h"
#include "relocate/mover.h"
#include "test-loop-fs.h"
#include "test-util.h"

#define KiB (UINT64_C(1024))
#define MiB (UINT64_C(1024) * 1024)
#define BS 4096

static char state_file[512];

/* A scratch ext4 of size_mb MiB, made with mkfs.ext4 -b 4096 and mkfs_args (e.g. "-g 8192"). */
static inline void fs_setup_with(LoopFs *fs, const char *name, unsigned size_mb, const char *mkfs_args) {
        loop_fs_setup(fs, "test-mover", name, size_mb, mkfs_args, NULL);
}

static inline void fs_setup(LoopFs *fs, const char *name, unsigned size_mb) {
        fs_setup_with(fs, name, size_mb, "");
}

static inline int drop_one_file(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        int fd;

        (void) st;
        (void) ftw;
        if (type != FTW_F)
                return 0;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0)
                return 0;               /* gone, or a test's file that does not open for reading: not cached by us */
        (void) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
        return 0;
}

/* The page cache of every file on this program's scratch filesystems dropped after syncfs(), so that what
 * is read next comes from the disk. Only its own files: dropping the whole machine's page cache would also
 * empty what a test running beside it has just read ahead and checks. */
static inline void drop_caches(void) {
        for (size_t i = 0; i < LOOP_FS_MAX; i++) {
                LoopFs *fs = loop_fs_all[i];

                if (!fs || !fs->mounted)
                        continue;
                ASSERT_OK(syncfs(fs->mount_fd));
                ASSERT_OK(nftw(fs->mnt, drop_one_file, 16, FTW_PHYS | FTW_MOUNT));
        }
}

/* How many of the file's pages are in the page cache (mincore of a mapping of it). */
static inline size_t cached_pages(const char *path) {
        size_t n = 0, pages;
        unsigned char *vec;
        struct stat st;
        void *p;
        int fd;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(fstat(fd, &st));
        if (st.st_size == 0) {
                close(fd);
                return 0;
        }
        pages = ((size_t) st.st_size + BS - 1) / BS;
        p = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED, fd, 0);
        ASSERT_TRUE(p != MAP_FAILED);
        vec = calloc(pages, 1);
        ASSERT_TRUE(vec);
        ASSERT_OK(mincore(p, (size_t) st.st_size, vec));
        for (size_t i = 0; i < pages; i++)
                n += vec[i] & 1;
        free(vec);
        munmap(p, (size_t) st.st_size);
        close(fd);
        return n;
}

/* The page cache of one clean, unmapped file dropped (after sync()): it is read from the disk again. */
static inline void drop_file_cache(const char *path) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
        close(fd);
}

/* FNV-1a over the file's 8-byte words (the tail byte by byte): any changed byte changes it. */
static inline uint64_t fnv_file(const char *path) {
        uint64_t h = 1469598103934665603ULL, w;
        uint8_t buf[65536];
        size_t have = 0;
        ssize_t n;
        int fd;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        do {
                n = read(fd, buf + have, sizeof buf - have);
                ASSERT_TRUE(n >= 0);
                have += (size_t) n;
                if (have < sizeof buf && n > 0)
                        continue;       /* a short read: fill the buffer first, so words do not depend on it */
                size_t i = 0;
                for (; i + 8 <= have; i += 8) {
                        memcpy(&w, buf + i, 8);
                        h = (h ^ w) * 1099511628211ULL;
                }
                for (; i < have; i++)
                        h = (h ^ buf[i]) * 1099511628211ULL;
                have = 0;
        } while (n > 0);
        close(fd);
        return h;
}

static inline uint64_t read_uint_file(const char *path) {
        char buf[64] = {};
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_TRUE(read(fd, buf, sizeof buf - 1) > 0);
        close(fd);
        return strtoull(buf, NULL, 10);
}

static inline void write_str_file(const char *path, const char *s) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(write(fd, s, strlen(s)), (ssize_t) strlen(s));
        close(fd);
}


static inline size_t count_extents(const char *path, uint64_t *first_phys) {
        Extent *e = NULL;
        size_t n = 0;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(fiemap_get(fd, &e, &n));
        close(fd);
        *first_phys = n > 0 ? e[0].physical : 0;
        /* merge physically adjacent ones, as the layout code does */
        size_t runs = n > 0;
        for (size_t i = 1; i < n; i++)
                if (e[i].physical != e[i - 1].physical + e[i - 1].length)
                        runs++;
        free(e);
        return runs;
}

static inline void make_item(const char *path, int64_t id, MoveItem *ret) {
        struct stat st;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(fstat(fd, &st), 0);
        *ret = (MoveItem) {
                .file_id = id,
                .path = path,
                .size = (uint64_t) st.st_size,
                .mtime_ns = (int64_t) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
        };
        ASSERT_OK(file_key_from_fd(fd, &ret->key));
        close(fd);
}

static inline const char *result_name(MoveResult r) {
        static const char *const names[] = { "DONE", "IN_PLACE", "SKIPPED", "RETRY" };
        return r < _MOVE_RESULT_MAX ? names[r] : "?";
}

static inline void progress(void *userdata, size_t index, const MoveOutcome *o) {
        const MoveItem *items = userdata;
        const char *slash = strrchr(items[index].path, '/');

        printf("    [%zu] %-14s %-8s %-40s %8llu bytes\n", index, slash ? slash + 1 : items[index].path,
               result_name(o->result), o->reason, (unsigned long long) o->bytes);
}

static inline MoverOptions options(LoopFs *fs, const MoveItem *items) {
        return (MoverOptions) {
                .mount_fd = fs->mount_fd,
                .sysfs_dir = fs->sysfs,
                .state_file = state_file,
                .progress = progress,
                .userdata = (void *) items,
        };
}

static inline double now_sec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static inline void expect(const MoveOutcome *o, MoveResult res, const char *reason) {
        ASSERT_STREQ(result_name(o->result), result_name(res));
        if (reason)
                ASSERT_STREQ(o->reason, reason);
}

static inline char *path_in(const LoopFs *fs, const char *name) {
        char *p;
        ASSERT_TRUE(asprintf(&p, "%s/%s", fs->mnt, name) > 0);
        return p;
}

/* An ext4 tunable of fs (/sys/fs/ext4/<dev>/<name>). */
static inline uint64_t fs_tunable(const LoopFs *fs, const char *name) {
        char p[300];
        snprintf(p, sizeof p, "%s/%s", fs->sysfs, name);
        return read_uint_file(p);
}

/* Files <prefix>0 .. <prefix>n-1 on fs (paths[] to free), written interleaved in 16 KiB pieces. */
static inline void make_files(const LoopFs *fs, const char *prefix, char **paths, const uint64_t *sizes,
                              size_t n) {
        for (size_t i = 0; i < n; i++) {
                char name[32];
                snprintf(name, sizeof name, "%s%zu", prefix, i);
                paths[i] = path_in(fs, name);
        }
        write_interleaved(paths, sizes, n, 16 * KiB);
}

static inline void stream_req_unchanged(const LoopFs *fs, uint64_t orig) {
        char p[256];
        snprintf(p, sizeof p, "%s/mb_stream_req", fs->sysfs);
        ASSERT_EQ(read_uint_file(p), orig);
        ASSERT_TRUE(access(state_file, F_OK) < 0 && errno == ENOENT);
}

/* Every other piece of [from, to) of the file punched out and written again (the same data): the new
 * blocks cannot continue the ones before (taken), so that part of the file ends up in many runs. */
static inline void rewrite_pieces(const char *path, uint64_t from, uint64_t to, uint64_t piece) {
        uint8_t *buf = malloc(piece);
        int fd = open(path, O_RDWR | O_CLOEXEC);

        ASSERT_TRUE(buf && fd >= 0);
        for (uint64_t o = from; o + piece <= to; o += 2 * piece) {
                ASSERT_EQ(pread(fd, buf, piece, (off_t) o), (ssize_t) piece);
                ASSERT_EQ(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t) o, (off_t) piece), 0);
                ASSERT_EQ(pwrite(fd, buf, piece, (off_t) o), (ssize_t) piece);
                ASSERT_EQ(fsync(fd), 0);
        }
        close(fd);
        free(buf);
}

typedef struct MoverTest {
        const char *name;
        void (*fn)(void);
} MoverTest;

/* usage: PROGRAM [TEST...]: the named tests (meson runs one at a time, so that a slow one is named and the
 * others still run), or all of them in order. cleanup (if set) runs at exit, before the filesystems are torn
 * down; finish (if set) after the last test. */
static inline int mover_tests_main(int argc, char **argv, const MoverTest *tests, size_t n_tests,
                                   void (*cleanup)(void), void (*finish)(void)) {
        if (geteuid() != 0) {
                fprintf(stderr, "needs root (loop devices, mount)\n");
                return EXIT_TEST_SKIP;
        }
        if (loop_fs_sh("command -v mkfs.ext4 losetup e2fsck >/dev/null") != 0)
                return EXIT_TEST_SKIP;
        for (int a = 1; a < argc; a++) {
                bool known = false;
                for (size_t i = 0; i < n_tests; i++)
                        known = known || streq(argv[a], tests[i].name);
                if (!known) {
                        fprintf(stderr, "unknown test: %s\n", argv[a]);
                        return EXIT_FAILURE;
                }
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        snprintf(state_file, sizeof state_file, "%s/mover.state", loop_fs_scratch("test-mover"));
        if (cleanup)
                atexit(cleanup);

        for (size_t i = 0; i < n_tests; i++) {
                bool want = argc < 2;
                for (int a = 1; a < argc; a++)
                        want = want || streq(argv[a], tests[i].name);
                if (!want)
                        continue;
                fprintf(stderr, "-- %s\n", tests[i].name);
                double t = now_sec();
                tests[i].fn();
                printf("  (%s: %.1f s)\n", tests[i].name, now_sec() - t);
        }
        if (finish)
                finish();
        printf("%s: OK\n", program_invocation_short_name);
        return 0;
}
