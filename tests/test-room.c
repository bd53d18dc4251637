/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Room planning (room.c) on a scratch ext4 image (needs root, a loop device, mkfs.ext4): room_plan()'s
 * contract from room.h checked against what the kernel reports, not against room.c's own reading: the
 * window is whole chunks, aligned, inside one block group that is not the first of its flex group, below
 * `below`; it holds no metadata (FS_IOC_GETFSMAP) and no data but that of the files it lists (FIEMAP of
 * every file), each listed file has data there, lowest first, and their blocks are move_blocks; files of
 * `keep`, immutable ones and ones with blocks past their end are never in it; it is free once they are
 * gone; max_move_blocks is kept; a window that holds the donor's pilot has room for it. The image is torn
 * down by an atexit handler, and by tests/scratch.sh's guard if the test is killed. */
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/fsmap.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "fs/fiemap.h"
#include "common/macro.h"
#include "relocate/room.h"
#include "test-loop-fs.h"
#include "test-util.h"

#define MiB (UINT64_C(1) << 20)
#define BS UINT64_C(4096)
#define FS_MIB 768
#define BLOCKS_PER_GROUP UINT64_C(32768)        /* mkfs -g */
#define FLEX 16                                 /* mkfs -G */
#define MIN_CHUNK 512                           /* mballoc's default group preallocation */
#define N_FILES 72
#define FILE_SIZE (4 * MiB)

static LoopFs fs;
static dev_t fs_dev;
static uint64_t blocks_count;

typedef struct File {
        char path[600];
        uint64_t ino;
        Extent *ext;            /* bytes */
        size_t n_ext;
        bool gone;
} File;
static File files[N_FILES];

static void fs_setup(void) {
        char mkfs_args[64];
        struct stat st;

        snprintf(mkfs_args, sizeof mkfs_args, "-g %llu -G %d", (unsigned long long) BLOCKS_PER_GROUP, FLEX);
        loop_fs_setup(&fs, "seekless-test-room", "room", FS_MIB, mkfs_args, NULL);
        ASSERT_EQ(fstat(fs.mount_fd, &st), 0);
        fs_dev = st.st_dev;
        blocks_count = (uint64_t) FS_MIB * MiB / BS;
}

/* What the kernel says lies in blocks [start, start + len): metadata blocks, and the other used blocks (file
 * data). ext4 has no reverse map: it reports metadata and free space, and the used ranges between them as
 * of unknown owner, but not all of them (on 6.18 a used range running to the end of a block group was
 * missing), so used is what is neither metadata nor free. The whole
 * device is asked for: records before the low key come back anyway. */
static void fsmap(uint64_t start, uint64_t len, uint64_t *ret_meta, uint64_t *ret_used) {
        enum { N = 256 };
        _cleanup_free_ struct fsmap_head *h = calloc(1, sizeof *h + N * sizeof(struct fsmap));
        uint64_t lo = start * BS, hi = (start + len) * BS, meta = 0, free_bytes = 0;

        ASSERT_TRUE(h);
        h->fmh_keys[1] = (struct fsmap) { .fmr_device = UINT32_MAX, .fmr_flags = UINT32_MAX,
                                          .fmr_physical = UINT64_MAX, .fmr_owner = UINT64_MAX,
                                          .fmr_offset = UINT64_MAX };
        for (;;) {
                h->fmh_count = N;
                ASSERT_EQ(ioctl(fs.mount_fd, FS_IOC_GETFSMAP, h), 0);
                for (uint32_t i = 0; i < h->fmh_entries; i++) {
                        const struct fsmap *r = &h->fmh_recs[i];
                        uint64_t a = MAX(r->fmr_physical, lo), b = MIN(r->fmr_physical + r->fmr_length, hi);

                        if (b <= a || !(r->fmr_flags & FMR_OF_SPECIAL_OWNER) || r->fmr_owner == FMR_OWN_UNKNOWN)
                                continue;
                        if (r->fmr_owner == FMR_OWN_FREE)
                                free_bytes += b - a;
                        else
                                meta += b - a;
                }
                if (h->fmh_entries == 0 || (h->fmh_recs[h->fmh_entries - 1].fmr_flags & FMR_OF_LAST))
                        break;
                h->fmh_keys[0] = h->fmh_recs[h->fmh_entries - 1];
        }
        ASSERT_TRUE(meta + free_bytes <= hi - lo);
        *ret_meta = meta / BS;
        *ret_used = (hi - lo - meta - free_bytes) / BS;
}

/* Blocks of file f in [start, start + len); *ret_lowest: the lowest of them (UINT64_MAX if none). */
static uint64_t file_blocks_in(const File *f, uint64_t start, uint64_t len, uint64_t *ret_lowest) {
        uint64_t n = 0, lowest = UINT64_MAX;

        for (size_t i = 0; i < f->n_ext; i++) {
                uint64_t p = f->ext[i].physical / BS, e = p + f->ext[i].length / BS;
                uint64_t a = MAX(p, start), b = MIN(e, start + len);

                if (b > a) {
                        n += b - a;
                        lowest = MIN(lowest, a);
                }
        }
        if (ret_lowest)
                *ret_lowest = lowest;
        return n;
}

static uint64_t file_blocks(const File *f) {
        return file_blocks_in(f, 0, UINT64_MAX / 2, NULL);
}

static File *file_of(uint64_t ino) {
        for (size_t i = 0; i < N_FILES; i++)
                if (files[i].ino == ino)
                        return &files[i];
        return NULL;
}

static bool listed(const RoomPlan *p, uint64_t ino) {
        for (size_t i = 0; i < p->n_inodes; i++)
                if (p->inodes[i] == ino)
                        return true;
        return false;
}

/* Created in one order and written in the other, so that inode order is not block order. */
static void make_files(void) {
        _cleanup_free_ uint8_t *buf = malloc(FILE_SIZE);
        int fds[N_FILES];

        ASSERT_TRUE(buf);
        for (size_t i = 0; i < N_FILES; i++) {
                struct stat st;

                snprintf(files[i].path, sizeof files[i].path, "%s/f%02zu", fs.mnt, i);
                fds[i] = open(files[i].path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                ASSERT_TRUE(fds[i] >= 0);
                ASSERT_EQ(fstat(fds[i], &st), 0);
                files[i].ino = st.st_ino;
        }
        for (size_t i = N_FILES; i-- > 0;) {
                memset(buf, (int) i, FILE_SIZE);
                ASSERT_EQ(write(fds[i], buf, FILE_SIZE), (ssize_t) FILE_SIZE);
                ASSERT_EQ(fsync(fds[i]), 0);
        }
        for (size_t i = 0; i < N_FILES; i++) {
                ASSERT_OK(fiemap_get(fds[i], &files[i].ext, &files[i].n_ext));
                ASSERT_TRUE(files[i].n_ext > 0);
                close(fds[i]);
        }
        sync();
}

/* room_plan() without a pilot */
static int plan(const char *device, dev_t d, uint64_t need, uint64_t below, uint64_t min_chunk, uint64_t max_move,
                const uint64_t *keep, size_t n_keep, RoomPlan *ret) {
        return room_plan(device, d, need, below, min_chunk, max_move, keep, n_keep, UINT64_MAX, ret);
}

/* The contract, whatever the disk looks like. */
static void check_plan(const RoomPlan *p, uint64_t need, uint64_t below, uint64_t max_move) {
        uint64_t meta, used, covered = 0, move = 0, prev = 0, group = p->start / BLOCKS_PER_GROUP;

        printf("  window %llu-%llu MiB (%llu blocks, chunks of %llu), %zu files, %llu blocks to move\n",
               (unsigned long long) (p->start * BS / MiB), (unsigned long long) ((p->start + p->blocks) * BS / MiB),
               (unsigned long long) p->blocks, (unsigned long long) p->chunk, p->n_inodes,
               (unsigned long long) p->move_blocks);
        /* whole chunks, each a power-of-two buddy longer than the group preallocation, aligned */
        ASSERT_TRUE(p->chunk > MIN_CHUNK && (p->chunk & (p->chunk - 1)) == 0);
        ASSERT_EQ(p->start % p->chunk, 0);
        ASSERT_EQ(p->blocks % p->chunk, 0);
        ASSERT_TRUE(p->blocks >= need);
        /* in one block group, not the first of its flex group, below `below` */
        ASSERT_EQ(p->group_start, group * BLOCKS_PER_GROUP);
        ASSERT_TRUE(p->start + p->blocks <= p->group_start + BLOCKS_PER_GROUP);
        ASSERT_TRUE(group % FLEX != 0);
        ASSERT_TRUE(p->start + p->blocks <= below);
        /* no metadata; every used block is data of a listed file */
        fsmap(p->start, p->blocks, &meta, &used);
        ASSERT_EQ(meta, 0);
        for (size_t i = 0; i < N_FILES; i++) {
                uint64_t lowest, n = file_blocks_in(&files[i], p->start, p->blocks, &lowest);

                if (files[i].gone)
                        continue;
                if (!listed(p, files[i].ino)) {
                        ASSERT_EQ(n, 0);
                        continue;
                }
                covered += n;
        }
        ASSERT_EQ(covered, used);
        /* each listed file has data there, lowest first, and is moved whole */
        for (size_t i = 0; i < p->n_inodes; i++) {
                File *f = file_of(p->inodes[i]);
                uint64_t lowest;

                ASSERT_TRUE(f && !f->gone);
                ASSERT_TRUE(file_blocks_in(f, p->start, p->blocks, &lowest) > 0);
                ASSERT_TRUE(i == 0 || lowest >= prev);
                prev = lowest;
                move += file_blocks(f);
        }
        ASSERT_EQ(p->move_blocks, move);
        ASSERT_TRUE(move <= max_move);
}

TEST(errors) {
        RoomPlan p;

        ASSERT_ERROR(plan(fs.dev, fs_dev, 0, blocks_count, MIN_CHUNK, UINT64_MAX, NULL, 0, &p), EINVAL);
        ASSERT_ERROR(plan(fs.dev, makedev(1, 3), 1024, blocks_count, MIN_CHUNK, UINT64_MAX, NULL, 0, &p), ENODEV);
        ASSERT_ERROR(plan(fs.img, fs_dev, 1024, blocks_count, MIN_CHUNK, UINT64_MAX, NULL, 0, &p), ENODEV);
        /* group 0 is the first of its flex group: nothing below its end qualifies */
        ASSERT_ERROR(plan(fs.dev, fs_dev, 1024, BLOCKS_PER_GROUP, MIN_CHUNK, UINT64_MAX, NULL, 0, &p), ENOSPC);
        /* no buddy is longer than the largest one */
        ASSERT_ERROR(plan(fs.dev, fs_dev, 1024, blocks_count, 8192, UINT64_MAX, NULL, 0, &p), ENOSPC);
        /* more than a block group */
        ASSERT_ERROR(plan(fs.dev, fs_dev, BLOCKS_PER_GROUP + 1, blocks_count, MIN_CHUNK, UINT64_MAX, NULL, 0, &p),
                     ENOSPC);
        ASSERT_EQ(p.n_inodes, 0);
        ASSERT_TRUE(!p.inodes);
}

TEST(empty) {
        _cleanup_(room_plan_done) RoomPlan p = {};
        uint64_t meta, used;

        ASSERT_OK(plan(fs.dev, fs_dev, 1024, blocks_count, MIN_CHUNK, 0, NULL, 0, &p));
        check_plan(&p, 1024, blocks_count, 0);
        ASSERT_EQ(p.n_inodes, 0);
        /* the lowest: group 1 (group 0 is the first of the flex group), past its backup superblock */
        ASSERT_EQ(p.group_start, BLOCKS_PER_GROUP);
        fsmap(p.group_start, p.start - p.group_start, &meta, &used);
        ASSERT_TRUE(meta > 0);
        ASSERT_TRUE(p.start - p.group_start < 2 * p.chunk);
}

static RoomPlan filled;

TEST(filled) {
        _cleanup_(room_plan_done) RoomPlan p = {}, q = {};
        uint64_t need = 2048, meta, used;
        int r;

        make_files();
        ASSERT_OK(plan(fs.dev, fs_dev, need, blocks_count, MIN_CHUNK, UINT64_MAX, NULL, 0, &filled));
        check_plan(&filled, need, blocks_count, UINT64_MAX);
        ASSERT_TRUE(filled.n_inodes > 0);

        /* below: a window wholly below it */
        ASSERT_OK(plan(fs.dev, fs_dev, need, filled.start + filled.blocks, MIN_CHUNK, UINT64_MAX, NULL, 0, &p));
        check_plan(&p, need, filled.start + filled.blocks, UINT64_MAX);
        ASSERT_EQ(p.start, filled.start);
        room_plan_done(&p);
        ASSERT_ERROR(plan(fs.dev, fs_dev, need, filled.start + filled.blocks - 1, MIN_CHUNK, UINT64_MAX, NULL, 0,
                               &p), ENOSPC);

        /* the files of keep stay where they are: another window */
        ASSERT_OK(plan(fs.dev, fs_dev, need, blocks_count, MIN_CHUNK, UINT64_MAX, &filled.inodes[0], 1, &p));
        check_plan(&p, need, blocks_count, UINT64_MAX);
        ASSERT_TRUE(!listed(&p, filled.inodes[0]));
        ASSERT_EQ(file_blocks_in(file_of(filled.inodes[0]), p.start, p.blocks, NULL), 0);
        room_plan_done(&p);

        /* so do immutable files */
        {
                _cleanup_close_ int fd = open(file_of(filled.inodes[0])->path, O_RDONLY | O_CLOEXEC);
                int flags;

                ASSERT_TRUE(fd >= 0);
                ASSERT_EQ(ioctl(fd, FS_IOC_GETFLAGS, &flags), 0);
                flags |= FS_IMMUTABLE_FL;
                ASSERT_EQ(ioctl(fd, FS_IOC_SETFLAGS, &flags), 0);
                r = plan(fs.dev, fs_dev, need, blocks_count, MIN_CHUNK, UINT64_MAX, NULL, 0, &p);
                flags &= ~FS_IMMUTABLE_FL;
                ASSERT_EQ(ioctl(fd, FS_IOC_SETFLAGS, &flags), 0);
                ASSERT_OK(r);
                check_plan(&p, need, blocks_count, UINT64_MAX);
                ASSERT_EQ(file_blocks_in(file_of(filled.inodes[0]), p.start, p.blocks, NULL), 0);
                room_plan_done(&p);
        }

        /* and files with blocks allocated past their end (which the mover leaves where they are) */
        {
                File *f = file_of(filled.inodes[0]);
                _cleanup_close_ int fd = open(f->path, O_WRONLY | O_CLOEXEC);

                ASSERT_TRUE(fd >= 0);
                ASSERT_EQ(fallocate(fd, FALLOC_FL_KEEP_SIZE, FILE_SIZE, MiB), 0);
                ASSERT_EQ(fsync(fd), 0);
                f->ext = mfree(f->ext);
                ASSERT_OK(fiemap_get(fd, &f->ext, &f->n_ext));
                ASSERT_OK(plan(fs.dev, fs_dev, need, blocks_count, MIN_CHUNK, UINT64_MAX, NULL, 0, &p));
                check_plan(&p, need, blocks_count, UINT64_MAX);
                ASSERT_EQ(file_blocks_in(f, p.start, p.blocks, NULL), 0);
                room_plan_done(&p);
                ASSERT_EQ(ftruncate(fd, FILE_SIZE), 0);
                ASSERT_EQ(fsync(fd), 0);
                f->ext = mfree(f->ext);
                ASSERT_OK(fiemap_get(fd, &f->ext, &f->n_ext));
        }

        /* max_move_blocks: at most that much to move */
        ASSERT_OK(plan(fs.dev, fs_dev, need, blocks_count, MIN_CHUNK, 0, NULL, 0, &p));
        check_plan(&p, need, blocks_count, 0);
        ASSERT_EQ(p.n_inodes, 0);
        ASSERT_TRUE(p.start > filled.start);
        room_plan_done(&p);
        r = plan(fs.dev, fs_dev, need, blocks_count, MIN_CHUNK, filled.move_blocks - 1, NULL, 0, &q);
        ASSERT_TRUE(r == -ENOSPC || r == 0);
        if (r == 0) {
                check_plan(&q, need, blocks_count, filled.move_blocks - 1);
                ASSERT_TRUE(q.start != filled.start);
        }

        /* the window is free once its files are gone (moved out) */
        for (size_t i = 0; i < filled.n_inodes; i++) {
                File *f = file_of(filled.inodes[i]);
                ASSERT_EQ(unlink(f->path), 0);
                f->gone = true;
        }
        sync();
        fsmap(filled.start, filled.blocks, &meta, &used);
        ASSERT_EQ(meta, 0);
        ASSERT_EQ(used, 0);
        /* and then the lowest window, with nothing to move */
        ASSERT_OK(plan(fs.dev, fs_dev, need, blocks_count, MIN_CHUNK, UINT64_MAX, NULL, 0, &p));
        check_plan(&p, need, blocks_count, UINT64_MAX);
        ASSERT_EQ(p.start, filled.start);
        ASSERT_EQ(p.n_inodes, 0);
        room_plan_done(&filled);
}

/* The donor's pilot (its block passed in): a window that holds it has a chunk more than the donor needs
 * (none of the donor's pieces, whole chunks, can hold the pilot's), or lies elsewhere. Against the lowest
 * window, free since `filled`, with the pilot at its first block and at its last. */
TEST(pilot) {
        _cleanup_(room_plan_done) RoomPlan p = {};
        uint64_t need = 2048;

        ASSERT_OK(plan(fs.dev, fs_dev, need, blocks_count, MIN_CHUNK, UINT64_MAX, NULL, 0, &p));
        check_plan(&p, need, blocks_count, UINT64_MAX);
        ASSERT_EQ(p.blocks, need);
        for (unsigned k = 0; k < 2; k++) {
                _cleanup_(room_plan_done) RoomPlan q = {};
                uint64_t pilot = k == 0 ? p.start : p.start + p.blocks - 1;

                ASSERT_OK(room_plan(fs.dev, fs_dev, need, blocks_count, MIN_CHUNK, UINT64_MAX, NULL, 0, pilot, &q));
                check_plan(&q, need, blocks_count, UINT64_MAX);
                printf("  the pilot at block %llu: %s\n", (unsigned long long) pilot,
                       pilot >= q.start && pilot < q.start + q.blocks ? "in the window" : "outside the window");
                /* a chunk more: the smallest, 2 * MIN_CHUNK (a buddy longer than a group preallocation) */
                ASSERT_TRUE(pilot < q.start || pilot >= q.start + q.blocks || q.blocks >= need + 2 * MIN_CHUNK);
        }
}

int main(void) {
        if (geteuid() != 0) {
                fprintf(stderr, "needs root (loop devices, mount)\n");
                return EXIT_TEST_SKIP;
        }
        if (loop_fs_sh("command -v mkfs.ext4 losetup >/dev/null") != 0 || sysconf(_SC_PAGESIZE) != (long) BS)
                return EXIT_TEST_SKIP;
        setvbuf(stdout, NULL, _IOLBF, 0);
        fs_setup();

        RUN(errors);
        RUN(empty);
        RUN(filled);
        RUN(pilot);
        for (size_t i = 0; i < N_FILES; i++)
                free(files[i].ext);
        return EXIT_SUCCESS;
}
