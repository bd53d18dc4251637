/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The prefetch plan and its run on a scratch ext4 on a loop device (needs root): the plan's order (one
 * ascending sweep over the device, metadata first, or as recorded), ranges cut to the files' extents,
 * stale files (replaced, shorter) left out and counted, then the run: every planned page in the page cache
 * afterwards and nothing beside it, in calls of at most the read-ahead size (one longer call is cut by the
 * kernel), metadata through the block device (a cold pass of stat and listings then reads nothing), what
 * is cached not asked for again, a stored profile's input, the guard (off file, memory floor, pressure), and each way it stops:
 * its budget in bytes, a deadline, a cancel, the caller's stop. */
#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <time.h>

#include "common/macro.h"
#include "fs/fid-util.h"
#include "fs/fiemap.h"
#include "fs/resident.h"
#include "prefetch/prefetch-plan.h"
#include "prefetch/prefetch.h"
#include "prefetch/prefetch-guard.h"
#include "prefetch/prefetch-profile.h"
#include "store/db.h"
#include "test-loop-fs.h"
#include "test-util.h"

#define KiB (UINT64_C(1024))
#define MiB (UINT64_C(1024) * 1024)
#define PAGE 4096

static LoopFs fs;
static int bdev_fd = -1;

static void setup_once(void) {
        if (fs.mounted)
                return;
        /* no lazy init, no prefetch of block bitmaps: after each mount ext4's thread for them reads and
         * writes the device in the background, which the metadata test would count as the pass's reads */
        loop_fs_setup(&fs, "seekless-test-prefetch", "pf", 128, "-E lazy_itable_init=0,lazy_journal_init=0",
                      "no_prefetch_block_bitmaps");
        bdev_fd = open(fs.dev, O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(bdev_fd >= 0);
}

static char *path_of(const char *name) {
        char *p;

        ASSERT_TRUE(asprintf(&p, "%s/%s", fs.mnt, name) > 0);
        return p;
}


static void write_file(const char *path, uint64_t size) {
        char *p[1] = { (char *) path };

        write_interleaved(p, &size, 1, 16 * KiB);
}

static PrefetchFile file_of(const char *path) {
        PrefetchFile f = {};
        struct stat st;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(fstat(fd, &st), 0);
        ASSERT_OK(file_key_from_fd(fd, &f.key));
        f.size = (uint64_t) st.st_size;
        close(fd);
        return f;
}

/* The file's pages dropped from the page cache (clean: written and synced). */
static void drop(const char *path) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(fdatasync(fd), 0);
        ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
        close(fd);
}

static uint64_t cached(const char *path, uint64_t off, uint64_t len) {
        uint64_t n = 0;
        int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : dup(bdev_fd);

        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(range_cached_pages(fd, off, len, &n));
        close(fd);
        return n;
}

static uint64_t first_physical(const char *path, uint64_t logical) {
        Extent *e = NULL;
        size_t n = 0;
        uint64_t phys = UINT64_MAX;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(fiemap_get(fd, &e, &n));
        for (size_t i = 0; i < n; i++)
                if (logical >= e[i].logical && logical < e[i].logical + e[i].length)
                        phys = e[i].physical + (logical - e[i].logical);
        free(e);
        close(fd);
        return phys;
}

static PrefetchOptions options(void) {
        return (PrefetchOptions) { .mount_fd = fs.mount_fd, .bdev_fd = bdev_fd };
}

/* ---------------------------------------------------------------------------------------------------- */

/* Three scattered files, spans read in the order f2, f0, f1 (part), plus a metadata span (the device's
 * blocks under f0's first 64 KiB, as seen through the block device): each order as promised. */
TEST(plan_order) {
        static const char *const names[3] = { "o0", "o1", "o2" };
        uint64_t sizes[3] = { 256 * KiB, 192 * KiB, 128 * KiB };
        char *paths[3];
        PrefetchFile files[3];
        PrefetchPlan *p = NULL;
        PrefetchSpan data[3] = { { .file = 2, .offset = 0, .length = 64 * KiB },
                                 { .file = 0, .offset = 0, .length = 256 * KiB },
                                 { .file = 1, .offset = 64 * KiB, .length = 64 * KiB } };
        PrefetchSpan meta[1];

        setup_once();
        for (size_t i = 0; i < 3; i++)
                paths[i] = path_of(names[i]);
        write_interleaved(paths, sizes, 3, 16 * KiB);
        for (size_t i = 0; i < 3; i++)
                files[i] = file_of(paths[i]);
        meta[0] = (PrefetchSpan) { .offset = first_physical(paths[0], 0), .length = 16 * KiB };
        PrefetchInput in = { .files = files, .n_files = 3, .data = data, .n_data = 3, .metadata = meta,
                             .n_metadata = 1 };

        /* disk: one ascending sweep, the data cut to extents (16 KiB pieces, scattered), nothing lost */
        ASSERT_OK(prefetch_plan_build(fs.mount_fd, &in, PREFETCH_ORDER_DISK, NULL, 0, &p));
        printf("  disk order: %zu ranges, %llu data bytes, %llu metadata bytes\n", p->n_ranges,
               (unsigned long long) p->data_bytes, (unsigned long long) p->metadata_bytes);
        ASSERT_EQ(p->data_bytes, 384 * KiB);
        ASSERT_EQ(p->metadata_bytes, 16 * KiB);
        ASSERT_EQ(p->files_stale, 0);
        ASSERT_TRUE(p->n_ranges > 6);
        for (size_t i = 1; i < p->n_ranges; i++)
                ASSERT_TRUE(p->ranges[i].physical >= p->ranges[i - 1].physical);
        for (size_t i = 0; i < p->n_ranges; i++) {
                const PrefetchRange *r = &p->ranges[i];

                if (r->kind == PREFETCH_METADATA)
                        continue;
                /* within its span, and where FIEMAP says */
                ASSERT_TRUE(r->file != 1 || (r->offset >= 64 * KiB && r->offset + r->length <= 128 * KiB));
                ASSERT_TRUE(r->file != 2 || r->offset + r->length <= 64 * KiB);
                ASSERT_EQ(r->physical, first_physical(paths[r->file], r->offset));
        }
        p = prefetch_plan_free(p);

        /* metadata first, each part ascending */
        ASSERT_OK(prefetch_plan_build(fs.mount_fd, &in, PREFETCH_ORDER_METADATA_FIRST, NULL, 0, &p));
        ASSERT_EQ(p->ranges[0].kind, PREFETCH_METADATA);
        for (size_t i = 2; i < p->n_ranges; i++) {
                ASSERT_EQ(p->ranges[i].kind, PREFETCH_DATA);
                ASSERT_TRUE(p->ranges[i].physical > p->ranges[i - 1].physical);
        }
        p = prefetch_plan_free(p);

        /* as recorded: the metadata, then f2's, f0's, f1's pieces in file order */
        ASSERT_OK(prefetch_plan_build(fs.mount_fd, &in, PREFETCH_ORDER_RECORDED, NULL, 0, &p));
        ASSERT_EQ(p->ranges[0].kind, PREFETCH_METADATA);
        ASSERT_EQ(p->ranges[1].file, 2);
        ASSERT_EQ(p->ranges[p->n_ranges - 1].file, 1);
        for (size_t i = 2; i < p->n_ranges; i++)
                if (p->ranges[i].file == p->ranges[i - 1].file)
                        ASSERT_TRUE(p->ranges[i].offset > p->ranges[i - 1].offset);
        printf("  metadata-first and recorded orders as promised\n");
        p = prefetch_plan_free(p);
        ASSERT_EQ(prefetch_order_from_string("disk"), PREFETCH_ORDER_DISK);
        ASSERT_EQ(prefetch_order_from_string("sideways"), -EINVAL);
        for (size_t i = 0; i < 3; i++)
                free(paths[i]);
}

/* A file replaced since recording (a new inode under its name: the handle no longer opens) and one now
 * shorter: stale, left out, counted; the third prefetched. One replaced after the plan was built: the run
 * counts it. No error either way. */
TEST(stale) {
        static const char *const names[4] = { "s-replaced", "s-truncated", "s-kept", "s-late" };
        char *paths[4], *tmp = path_of("s-new");
        PrefetchFile files[4];
        PrefetchSpan data[4];
        PrefetchPlan *p = NULL;
        PrefetchStats st;

        setup_once();
        for (size_t i = 0; i < 4; i++) {
                paths[i] = path_of(names[i]);
                write_file(paths[i], 64 * KiB);
                files[i] = file_of(paths[i]);
                data[i] = (PrefetchSpan) { .file = (uint32_t) i, .offset = 0, .length = 64 * KiB };
        }
        write_file(tmp, 64 * KiB);
        ASSERT_EQ(rename(tmp, paths[0]), 0);
        ASSERT_EQ(truncate(paths[1], 32 * KiB), 0);
        PrefetchInput in = { .files = files, .n_files = 4, .data = data, .n_data = 4 };
        ASSERT_OK(prefetch_plan_build(fs.mount_fd, &in, PREFETCH_ORDER_DISK, NULL, 0, &p));
        ASSERT_EQ(p->files_stale, 2);
        ASSERT_TRUE(p->stale[0] && p->stale[1] && !p->stale[2] && !p->stale[3]);
        ASSERT_EQ(p->data_bytes, 128 * KiB);
        for (size_t i = 0; i < p->n_ranges; i++)
                ASSERT_TRUE(p->ranges[i].file >= 2);

        write_file(tmp, 64 * KiB);
        ASSERT_EQ(rename(tmp, paths[3]), 0);
        drop(paths[2]);
        ASSERT_OK(prefetch_run(p, &(PrefetchOptions) { .mount_fd = fs.mount_fd, .bdev_fd = -1 }, &st));
        printf("  stale: %u files (2 in the plan, 1 since), %llu bytes asked, end %s\n", st.files_stale,
               (unsigned long long) st.bytes_asked, prefetch_end_to_string(st.end));
        ASSERT_EQ(st.files_stale, 3);
        ASSERT_EQ(st.end, PREFETCH_END_DONE);
        ASSERT_EQ(st.bytes_asked, 64 * KiB);
        ASSERT_EQ(st.errors, 0);
        ASSERT_EQ(cached(paths[2], 0, 64 * KiB), 16);
        p = prefetch_plan_free(p);
        for (size_t i = 0; i < 4; i++)
                free(paths[i]);
        free(tmp);
}

/* A cold run: every planned page cached afterwards and none beside them; an 8 MiB range in calls of at
 * most the device's read-ahead; the metadata span read through the block device; a second run finds all
 * cached and asks for nothing. */
TEST(run_cold) {
        char *big = path_of("r-big"), *part = path_of("r-part");
        PrefetchFile files[2];
        PrefetchSpan data[3], meta[1];
        PrefetchPlan *p = NULL;
        PrefetchStats st;
        PrefetchOptions o = options();
        uint64_t chunk = prefetch_chunk_bytes(bdev_fd), meta_at;

        setup_once();
        chunk = prefetch_chunk_bytes(bdev_fd);
        write_file(big, 8 * MiB);
        write_file(part, 1 * MiB);
        files[0] = file_of(big);
        files[1] = file_of(part);
        data[0] = (PrefetchSpan) { .file = 1, .offset = 256 * KiB, .length = 128 * KiB };
        data[1] = (PrefetchSpan) { .file = 0, .offset = 0, .length = 8 * MiB };
        data[2] = (PrefetchSpan) { .file = 1, .offset = 768 * KiB, .length = 64 * KiB };
        /* the device's blocks under part's first 64 KiB: in the file's page cache, not the device's */
        meta_at = first_physical(part, 0);
        meta[0] = (PrefetchSpan) { .offset = meta_at, .length = 64 * KiB };
        drop(big);
        drop(part);
        ASSERT_EQ(posix_fadvise(bdev_fd, (off_t) meta_at, 64 * KiB, POSIX_FADV_DONTNEED), 0);
        ASSERT_EQ(cached(big, 0, 8 * MiB), 0);
        ASSERT_EQ(cached(part, 0, 1 * MiB), 0);
        ASSERT_EQ(cached(NULL, meta_at, 64 * KiB), 0);

        PrefetchInput in = { .files = files, .n_files = 2, .data = data, .n_data = 3, .metadata = meta,
                             .n_metadata = 1 };
        ASSERT_OK(prefetch_plan_build(fs.mount_fd, &in, PREFETCH_ORDER_DISK, NULL, 0, &p));
        ASSERT_OK(prefetch_run(p, &o, &st));
        printf("  cold run: %llu bytes asked (%llu metadata) in %llu calls of at most %llu KiB, %llu cached, "
               "end %s\n", (unsigned long long) st.bytes_asked, (unsigned long long) st.metadata_asked,
               (unsigned long long) st.calls, (unsigned long long) (chunk / KiB),
               (unsigned long long) st.bytes_cached, prefetch_end_to_string(st.end));
        ASSERT_EQ(st.end, PREFETCH_END_DONE);
        ASSERT_EQ(st.ranges_done, p->n_ranges);
        ASSERT_EQ(st.bytes_asked, 8 * MiB + 192 * KiB + 64 * KiB);
        ASSERT_EQ(st.metadata_asked, 64 * KiB);
        ASSERT_TRUE(st.calls >= (8 * MiB) / chunk);
        ASSERT_EQ(cached(big, 0, 8 * MiB), 8 * MiB / PAGE);
        ASSERT_EQ(cached(part, 256 * KiB, 128 * KiB), 32);
        ASSERT_EQ(cached(part, 768 * KiB, 64 * KiB), 16);
        ASSERT_EQ(cached(NULL, meta_at, 64 * KiB), 16);
        /* nothing beside the spans */
        ASSERT_EQ(cached(part, 0, 256 * KiB), 0);
        ASSERT_EQ(cached(part, 384 * KiB, 384 * KiB), 0);
        ASSERT_EQ(cached(part, 832 * KiB, 192 * KiB), 0);
        printf("  every planned page cached, none beside\n");

        /* again: all cached, nothing asked */
        ASSERT_OK(prefetch_run(p, &o, &st));
        ASSERT_EQ(st.bytes_asked, 0);
        ASSERT_EQ(st.calls, 0);
        ASSERT_EQ(st.bytes_cached, 8 * MiB + 192 * KiB + 64 * KiB);
        printf("  warm run: nothing asked, %llu bytes found cached\n", (unsigned long long) st.bytes_cached);

        /* one call for the whole 8 MiB: the kernel reads a part only (doc/kernel.md §8): printed, not
         * asserted, a kernel that reads it all is no failure of ours */
        drop(big);
        o.chunk_bytes = 8 * MiB;
        ASSERT_OK(prefetch_run(p, &o, &st));
        printf("  one 8 MiB call: %llu of 2048 pages cached after it\n",
               (unsigned long long) cached(big, 0, 8 * MiB));
        p = prefetch_plan_free(p);
        free(big);
        free(part);
}

/* A stored profile's input for one filesystem: its files there with their recorded sizes, its ranges in
 * layout order, the metadata of that filesystem only; then planned and run like any. */
TEST(profile) {
        char *a = path_of("p-a"), *b = path_of("p-b");
        PrefetchFile fa, fb;
        PrefetchProfile pp = {};
        DbMergeInput in = {};
        PrefetchPlan *p = NULL;
        PrefetchStats st;
        Db *db = NULL;
        int64_t ida, idb;

        setup_once();
        write_file(a, 64 * KiB);
        write_file(b, 32 * KiB);
        fa = file_of(a);
        fb = file_of(b);
        DbSessionFile sf[2] = { { .key = fa.key, .path = a, .size = fa.size },
                                { .key = fb.key, .path = b, .size = fb.size } };
        DbSessionRange sr[2] = { { .file = 1, .offset = 0, .length = 8 * KiB },
                                 { .file = 0, .offset = 16 * KiB, .length = 8 * KiB } };
        DbMetaRange mr[2] = { { .fsid = fa.key.fsid + 1, .offset = 2 * MiB, .length = 4 * KiB },
                              { .fsid = fa.key.fsid, .offset = 1 * MiB, .length = 8 * KiB } };
        ASSERT_OK(db_open(":memory:", &db));
        ASSERT_OK(db_add_session(db, &(DbSession) { .profile = "/usr/bin/pf", .kind = PROFILE_APP,
                                                    .boot_id = "0123456789abcdef0123456789abcdef",
                                                    .complete = true, .files = sf, .n_files = 2,
                                                    .ranges = sr, .n_ranges = 2, .meta = mr, .n_meta = 2 },
                                 3, NULL));
        ASSERT_OK(db_load_merge_input(db, "/usr/bin/pf", 3, &in));
        ida = in.session_files[0][0];
        idb = in.session_files[0][1];
        db_merge_input_free(&in);
        ASSERT_OK(db_store_profile_ranges(db, "/usr/bin/pf",
                                          (const DbProfileEntry[]) { { .file_id = idb, .score = 1, .seen = 1 },
                                                                     { .file_id = ida, .score = 1, .seen = 1 } },
                                          2,
                                          (const DbRange[]) { { idb, 0, 8 * KiB }, { ida, 16 * KiB, 8 * KiB } },
                                          2));

        ASSERT_OK(prefetch_profile_load(db, "/usr/bin/pf", fa.key.fsid, &pp));
        ASSERT_EQ(pp.input.n_files, 2);
        ASSERT_EQ(pp.input.n_data, 2);
        ASSERT_TRUE(file_key_equal(&pp.input.files[pp.input.data[0].file].key, &fb.key));
        ASSERT_EQ(pp.input.data[0].length, 8 * KiB);
        ASSERT_TRUE(file_key_equal(&pp.input.files[pp.input.data[1].file].key, &fa.key));
        ASSERT_EQ(pp.input.data[1].offset, 16 * KiB);
        ASSERT_EQ(pp.input.files[pp.input.data[1].file].size, 64 * KiB);
        ASSERT_EQ(pp.input.n_metadata, 1);
        ASSERT_EQ(pp.input.metadata[0].offset, 1 * MiB);

        drop(a);
        drop(b);
        ASSERT_OK(prefetch_plan_build(fs.mount_fd, &pp.input, PREFETCH_ORDER_DISK, NULL, 0, &p));
        ASSERT_OK(prefetch_run(p, &(PrefetchOptions) { .mount_fd = fs.mount_fd, .bdev_fd = -1 }, &st));
        ASSERT_EQ(st.bytes_asked, 16 * KiB);
        ASSERT_EQ(cached(b, 0, 32 * KiB), 2);
        ASSERT_EQ(cached(a, 0, 64 * KiB), 2);
        ASSERT_EQ(cached(a, 16 * KiB, 8 * KiB), 2);
        p = prefetch_plan_free(p);
        prefetch_profile_done(&pp);

        ASSERT_OK(prefetch_profile_load(db, "/usr/bin/pf", fa.key.fsid + 1, &pp));
        ASSERT_EQ(pp.input.n_files, 0);
        ASSERT_EQ(pp.input.n_data, 0);
        ASSERT_EQ(pp.input.n_metadata, 1);
        prefetch_profile_done(&pp);
        ASSERT_ERROR(prefetch_profile_load(db, "/usr/bin/none", fa.key.fsid, &pp), ENOENT);
        printf("  a stored profile: its ranges on this filesystem in layout order, its metadata here only\n");
        db = db_free(db);
        free(a);
        free(b);
}

/* Reads of the block device so far (its stat file, field 1). */
static uint64_t device_reads(void) {
        char path[300], buf[256];
        unsigned long long reads = 0;
        FILE *f;

        snprintf(path, sizeof path, "/sys/block/%s/stat", fs.dev + 5);
        ASSERT_TRUE(f = fopen(path, "re"));
        ASSERT_TRUE(fgets(buf, sizeof buf, f));
        fclose(f);
        ASSERT_EQ(sscanf(buf, "%llu", &reads), 1);
        return reads;
}

/* Until the prefetch's reads of the device's spans completed (they are asynchronous, and a read counts in the
 * device's statistics when it completes, or when it is dispatched at all): every page must be in the cache
 * already (else reading it here would hide that the prefetch did not), then each is read through the
 * device, which waits for the pages still under I/O and reads none. */
static void wait_spans_read(const PrefetchSpan *spans, size_t n) {
        static uint8_t buf[64 * KiB];

        for (size_t i = 0; i < n; i++) {
                ASSERT_EQ(cached(NULL, spans[i].offset, spans[i].length), spans[i].length / PAGE);
                for (uint64_t off = spans[i].offset; off < spans[i].offset + spans[i].length; off += sizeof buf) {
                        size_t l = (size_t) MIN((uint64_t) sizeof buf, spans[i].offset + spans[i].length - off);

                        ASSERT_EQ(pread(bdev_fd, buf, l, (off_t) off), (ssize_t) l);
                }
        }
}

/* The filesystem's caches emptied: unmounted, the device's page cache dropped, mounted again. */
static void remount_cold(void) {
        loop_fs_unmount(&fs);
        ASSERT_EQ(ioctl(bdev_fd, BLKFLSBUF, 0), 0);
        loop_fs_mount(&fs);
}

static void stat_all(unsigned dirs, unsigned files) {
        for (unsigned d = 0; d < dirs; d++) {
                char p[600];
                struct stat st;
                DIR *dir;

                snprintf(p, sizeof p, "%s/m%u", fs.mnt, d);
                ASSERT_TRUE(dir = opendir(p));
                while (readdir(dir))
                        ;
                closedir(dir);
                for (unsigned i = 0; i < files; i++) {
                        snprintf(p, sizeof p, "%s/m%u/f%u", fs.mnt, d, i);
                        ASSERT_EQ(stat(p, &st), 0);
                }
        }
}

/* The metadata part: the device pages a cold pass of stat and directory listings brings into the device's
 * page cache (what the recorder keeps as a session's metadata), prefetched after the caches were emptied:
 * the same pass then reads nothing from the device. */
TEST(metadata) {
        enum { DIRS = 8, FILES = 200 };
        uint64_t size = 0, page_bytes = PAGE, reads;
        PrefetchSpan *meta = NULL;
        size_t n_meta = 0;
        PrefetchPlan *p = NULL;
        PrefetchStats st;

        setup_once();
        for (unsigned d = 0; d < DIRS; d++) {
                char dir[600];

                snprintf(dir, sizeof dir, "%s/m%u", fs.mnt, d);
                ASSERT_EQ(mkdir(dir, 0755), 0);
                for (unsigned i = 0; i < FILES; i++) {
                        char f[700];
                        int fd;

                        snprintf(f, sizeof f, "%s/f%u", dir, i);
                        ASSERT_TRUE((fd = open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0);
                        ASSERT_EQ(write(fd, "x", 1), 1);
                        close(fd);
                }
        }
        ASSERT_EQ(ioctl(bdev_fd, BLKGETSIZE64, &size), 0);

        /* the recording: the device's pages a cold pass caches, page by page */
        remount_cold();
        stat_all(DIRS, FILES);
        for (uint64_t off = 0; off < size; off += page_bytes) {
                uint64_t n = 0;

                ASSERT_OK(range_cached_pages(bdev_fd, off, page_bytes, &n));
                if (n == 0)
                        continue;
                if (n_meta > 0 && meta[n_meta - 1].offset + meta[n_meta - 1].length == off) {
                        meta[n_meta - 1].length += page_bytes;
                        continue;
                }
                ASSERT_TRUE(meta = realloc(meta, (n_meta + 1) * sizeof *meta));
                meta[n_meta++] = (PrefetchSpan) { .offset = off, .length = page_bytes };
        }
        printf("  a cold pass over %d directories, %d files each, cached %zu ranges of the device\n", DIRS,
               FILES, n_meta);
        ASSERT_TRUE(n_meta > 0);

        /* without a prefetch the pass reads the device */
        remount_cold();
        reads = device_reads();
        stat_all(DIRS, FILES);
        printf("  cold again: the pass made %llu reads\n", (unsigned long long) (device_reads() - reads));
        ASSERT_TRUE(device_reads() > reads);

        /* prefetched first, it reads nothing */
        remount_cold();
        PrefetchInput in = { .metadata = meta, .n_metadata = n_meta };
        PrefetchOptions o = options();
        ASSERT_OK(prefetch_plan_build(fs.mount_fd, &in, PREFETCH_ORDER_DISK, NULL, 0, &p));
        ASSERT_OK(prefetch_run(p, &o, &st));
        printf("  prefetch: %llu bytes of metadata asked in %llu calls, %llu cached already\n",
               (unsigned long long) st.metadata_asked, (unsigned long long) st.calls,
               (unsigned long long) st.bytes_cached);
        wait_spans_read(meta, n_meta);
        reads = device_reads();
        stat_all(DIRS, FILES);
        printf("  after the prefetch the pass made %llu reads\n", (unsigned long long) (device_reads() - reads));
        ASSERT_EQ(device_reads(), reads);
        p = prefetch_plan_free(p);
        free(meta);
}

static void write_text(const char *path, const char *text) {
        FILE *f = fopen(path, "we");

        ASSERT_TRUE(f);
        ASSERT_TRUE(fputs(text, f) >= 0);
        ASSERT_EQ(fclose(f), 0);
}

/* The guard: the off file, the memory floor and the pressure each veto (from files written here in place
 * of /proc's), the machine's own files read; a run given the guard as its stop ends "stopped". */
TEST(guard) {
        char meminfo[600], psi[600], off[600];
        PrefetchGuard g;
        uint64_t avail;
        double pressure;

        setup_once();
        snprintf(meminfo, sizeof meminfo, "%s/meminfo", loop_fs_dir);
        snprintf(psi, sizeof psi, "%s/pressure", loop_fs_dir);
        snprintf(off, sizeof off, "%s/no-prefetch", loop_fs_dir);
        write_text(meminfo, "MemTotal:        2000000 kB\nMemFree:          50000 kB\nMemAvailable:     100000 kB\n");
        write_text(psi, "some avg10=12.50 avg60=3.00 avg300=1.00 total=123\nfull avg10=2.00 avg60=0.00 avg300=0.00 total=1\n");
        g = (PrefetchGuard) { .off_file = off, .min_available_bytes = 64 * MiB, .max_pressure = 20,
                              .meminfo_path = meminfo, .pressure_path = psi };

        ASSERT_EQ(prefetch_guard_check(&g, &avail, &pressure), PREFETCH_VETO_NONE);
        ASSERT_EQ(avail, 100000 * KiB);
        ASSERT_TRUE(pressure > 12.49 && pressure < 12.51);
        g.max_pressure = 10;
        ASSERT_EQ(prefetch_guard_check(&g, NULL, NULL), PREFETCH_VETO_PRESSURE);
        g.min_available_bytes = 128 * MiB;
        ASSERT_EQ(prefetch_guard_check(&g, NULL, NULL), PREFETCH_VETO_LOW_MEMORY);
        write_text(off, "");
        ASSERT_EQ(prefetch_guard_check(&g, NULL, NULL), PREFETCH_VETO_OFF_FILE);
        ASSERT_STREQ(prefetch_veto_to_string(PREFETCH_VETO_OFF_FILE), "off for this boot");
        {
                atomic_bool abandon = false;

                g.abandon = &abandon;
                ASSERT_EQ(prefetch_guard_check(&g, NULL, NULL), PREFETCH_VETO_OFF_FILE);
                atomic_store(&abandon, true);
                ASSERT_EQ(prefetch_guard_check(&g, NULL, NULL), PREFETCH_VETO_ABANDONED);
                ASSERT_TRUE(prefetch_guard_should_stop(&g));
                g.abandon = NULL;
        }
        ASSERT_TRUE(unlink(off) == 0);
        /* no PSI (a kernel without it): no pressure veto; an unreadable meminfo: no floor */
        g = (PrefetchGuard) { .min_available_bytes = UINT64_MAX - 1, .max_pressure = 1,
                              .meminfo_path = "/nonexistent", .pressure_path = "/nonexistent" };
        ASSERT_EQ(prefetch_guard_check(&g, &avail, &pressure), PREFETCH_VETO_NONE);
        ASSERT_EQ(avail, UINT64_MAX);
        ASSERT_TRUE(pressure < 0);
        /* the machine's own files */
        g = (PrefetchGuard) { .min_available_bytes = 1, .max_pressure = 100 };
        ASSERT_EQ(prefetch_guard_check(&g, &avail, &pressure), PREFETCH_VETO_NONE);
        ASSERT_TRUE(avail != UINT64_MAX && avail > 0);
        printf("  guard: each veto seen; this machine: %llu MiB available, memory pressure %.2f %%\n",
               (unsigned long long) (avail / MiB), pressure);

        /* a run with it as its stop: the floor above what is available stops it after the first ask */
        {
                char *f = path_of("g-file");
                PrefetchFile files[1];
                PrefetchSpan data[1] = { { .file = 0, .offset = 0, .length = 8 * MiB } };
                PrefetchPlan *p = NULL;
                PrefetchStats st;
                PrefetchOptions o = options();

                write_file(f, 8 * MiB);
                files[0] = file_of(f);
                drop(f);
                PrefetchInput in = { .files = files, .n_files = 1, .data = data, .n_data = 1 };
                ASSERT_OK(prefetch_plan_build(fs.mount_fd, &in, PREFETCH_ORDER_DISK, NULL, 0, &p));
                g = (PrefetchGuard) { .min_available_bytes = 128 * MiB, .meminfo_path = meminfo };
                o.should_stop = prefetch_guard_should_stop;
                o.userdata = &g;
                ASSERT_OK(prefetch_run(p, &o, &st));
                ASSERT_EQ(st.end, PREFETCH_END_STOPPED);
                ASSERT_EQ(st.bytes_asked, PREFETCH_ASK_BYTES);
                p = prefetch_plan_free(p);
                free(f);
        }
}

static unsigned stop_asked;
static bool stop_now(void *userdata) {
        stop_asked++;
        return true;
}

/* Each way a run ends early: its budget in bytes (exactly that much asked, the rest not cached), a
 * deadline passed, a cancel, the caller's stop (asked after PREFETCH_ASK_BYTES). */
TEST(limits) {
        char *f = path_of("l-file");
        PrefetchFile files[1];
        PrefetchSpan data[1] = { { .file = 0, .offset = 0, .length = 16 * MiB } };
        PrefetchPlan *p = NULL;
        PrefetchStats st;
        PrefetchOptions o;
        atomic_bool cancel = true;

        setup_once();
        write_file(f, 16 * MiB);
        files[0] = file_of(f);
        PrefetchInput in = { .files = files, .n_files = 1, .data = data, .n_data = 1 };

        /* planning stops too: cancelled before a file is looked at, or past its deadline (nothing planned,
         * nothing counted stale) */
        ASSERT_ERROR(prefetch_plan_build(fs.mount_fd, &in, PREFETCH_ORDER_DISK, &cancel, 0, &p), ECANCELED);
        ASSERT_OK(prefetch_plan_build(fs.mount_fd, &in, PREFETCH_ORDER_DISK, NULL, 1, &p));
        ASSERT_EQ(p->files_unplanned, 1);
        ASSERT_EQ(p->files_stale, 0);
        ASSERT_EQ(p->n_ranges, 0);
        p = prefetch_plan_free(p);

        ASSERT_OK(prefetch_plan_build(fs.mount_fd, &in, PREFETCH_ORDER_DISK, NULL, 0, &p));

        drop(f);
        o = options();
        o.max_bytes = 1 * MiB + 4 * KiB;
        ASSERT_OK(prefetch_run(p, &o, &st));
        printf("  cap: %llu bytes asked, end %s\n", (unsigned long long) st.bytes_asked,
               prefetch_end_to_string(st.end));
        ASSERT_EQ(st.end, PREFETCH_END_CAP);
        ASSERT_EQ(st.bytes_asked, 1 * MiB + 4 * KiB);
        ASSERT_EQ(cached(f, 0, 16 * MiB), 257);

        drop(f);
        o = options();
        o.deadline_usec = 1;    /* long past */
        ASSERT_OK(prefetch_run(p, &o, &st));
        ASSERT_EQ(st.end, PREFETCH_END_DEADLINE);
        ASSERT_EQ(st.bytes_asked, 0);

        o = options();
        o.cancel = &cancel;
        ASSERT_OK(prefetch_run(p, &o, &st));
        ASSERT_EQ(st.end, PREFETCH_END_CANCELLED);
        ASSERT_EQ(st.bytes_asked, 0);

        o = options();
        o.should_stop = stop_now;
        ASSERT_OK(prefetch_run(p, &o, &st));
        printf("  stop: asked once, after %llu bytes, end %s\n", (unsigned long long) st.bytes_asked,
               prefetch_end_to_string(st.end));
        ASSERT_EQ(st.end, PREFETCH_END_STOPPED);
        ASSERT_EQ(stop_asked, 1);
        ASSERT_EQ(st.bytes_asked, PREFETCH_ASK_BYTES);
        ASSERT_EQ(cached(f, 0, 16 * MiB), PREFETCH_ASK_BYTES / PAGE);
        p = prefetch_plan_free(p);
        free(f);
        /* the device closed first: detached at once, nothing of it left when e2fsck reads the image */
        close(bdev_fd);
        bdev_fd = -1;
        loop_fs_fsck(&fs);
}

static const struct {
        const char *name;
        void (*fn)(void);
} tests[] = {
#define T(n) { #n, test_##n }
        T(plan_order), T(stale), T(run_cold), T(profile), T(metadata), T(guard), T(limits),
#undef T
};

int main(int argc, char **argv) {
        if (geteuid() != 0) {
                printf("SKIP: needs root (loop devices, mount)\n");
                return 77;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        /* test-prefetch [TEST...]: the named tests, or all in order (limits ends with the fsck) */
        for (size_t i = 0; i < TEST_ELEMENTSOF(tests); i++) {
                bool want = argc < 2;

                for (int a = 1; a < argc; a++)
                        want = want || streq(argv[a], tests[i].name);
                if (!want)
                        continue;
                fprintf(stderr, "-- %s\n", tests[i].name);
                tests[i].fn();
        }
        if (bdev_fd >= 0)
                close(bdev_fd);
        printf("test-prefetch: OK\n");
        return 0;
}
