/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The mover's items that are ranges of files, on scratch ext4 images (needs root, loop devices, mkfs.ext4,
 * e2fsck): only their blocks move, in the items' order; a batch in place stays; a run stopped and resumed
 * from its checkpoints in the database; the optimizer's checkpoints, each on the disk before the next file
 * moves. Everything it creates is torn down by an atexit handler, also when an assertion fails. */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "store/db.h"
#include "relocate/optimizer.h"
#include "relocate/run.h"
#include "test-mover-util.h"
#include "test-wal-syncs.h"

static LoopFs fs_range, fs_order, fs_resume, fs_ckpt;

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

static const MoverTest tests[] = {
#define T(n) { #n, test_##n }
        T(range), T(range_order), T(range_resume), T(optimizer_checkpoints),
#undef T
};

int main(int argc, char **argv) {
        return mover_tests_main(argc, argv, tests, ELEMENTSOF(tests), NULL, NULL);
}
