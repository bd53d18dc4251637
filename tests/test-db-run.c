/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The optimizer's crash-safety store (db-run.c) on a database file: a run and its checkpoints written by a
 * process that is then killed (no close, the WAL left behind), found again by a new process with exactly
 * the files still pending; a run's creation and its checkpoints synced to the disk (WAL syncs counted by a
 * VFS shim), nothing else; finished runs, layout quality snapshots and the extents files had before a run,
 * each read back after a reopen. */
#include <signal.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/db.h"
#include "common/macro.h"
#include "test-scratch.h"
#include "test-util.h"
#include "test-wal-syncs.h"

#define BOOT_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define FSID UINT64_C(0xF00D000000000001)       /* above INT64_MAX: the int64 round trip */
#define OTHER_FSID UINT64_C(42)
#define N_FILES 6

static char dir[256], db_path[512];
static pid_t owner;

static void cleanup(void) {
        char cmd[512];

        if (!dir[0] || getpid() != owner)      /* not in the child, which exits on a failed assertion */
                return;
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
                fprintf(stderr, "cleanup: %s failed\n", cmd);
        dir[0] = 0;
}

static Db *reopen(Db *db) {
        Db *n = NULL;

        db_free(db);
        ASSERT_OK(db_open(db_path, &n));
        return n;
}

/* A boot session with N_FILES files, so that runs have files to refer to; their ids in position order. */
static void add_files(Db *db, int64_t ids[static N_FILES]) {
        DbSessionFile f[N_FILES];
        char paths[N_FILES][32];
        DbMergeInput in = {};

        for (unsigned i = 0; i < N_FILES; i++) {
                snprintf(paths[i], sizeof paths[i], "/mnt/f%u", i);
                f[i] = (DbSessionFile) {
                        .key = { .fsid = FSID, .handle_type = 1, .handle_len = 4 },
                        .path = paths[i],
                        .size = 4096 * (i + 1),
                        .mtime_ns = 1000 + i,
                };
                memcpy(f[i].key.handle, &i, sizeof i);
        }
        ASSERT_OK(db_add_session(db, &(DbSession) {
                        .profile = "boot", .kind = PROFILE_BOOT, .boot_id = BOOT_A, .uid = 0,
                        .files = f, .n_files = N_FILES,
                }, 3, NULL));
        ASSERT_OK(db_load_merge_input(db, "boot", 3, &in));
        ASSERT_EQ(in.n_sessions, 1);
        ASSERT_EQ(in.n_session_files[0], N_FILES);
        memcpy(ids, in.session_files[0], N_FILES * sizeof *ids);
        db_merge_input_free(&in);
}

/* The ids of add_files()'s files, in position order, as a later test finds them. */
static void boot_file_ids(Db *db, int64_t ids[static N_FILES]) {
        DbMergeInput in = {};

        ASSERT_OK(db_load_merge_input(db, "boot", 3, &in));
        memcpy(ids, in.session_files[0], N_FILES * sizeof *ids);
        db_merge_input_free(&in);
}

/* The run as the optimizer leaves it when the machine goes down: five files planned at creation, a sixth
 * added, the first four checkpointed, then the process killed. The planned sizes and mtimes differ from the
 * stored ones (the files changed since they were recorded). */
/* The entries' ranges: even positions whole files, odd ones a range (4 KiB * position, 8 KiB long). */
static uint64_t range_offset(size_t i) {
        return i % 2 ? 4096 * i : 0;
}

static uint64_t range_length(size_t i) {
        return i % 2 ? 8192 : 0;
}

static void child_run(const int64_t ids[static N_FILES]) {
        uint64_t sizes[N_FILES], offsets[N_FILES], lengths[N_FILES];
        int64_t mtimes[N_FILES], run, other;
        Db *db = NULL;

        for (unsigned i = 0; i < N_FILES; i++) {
                sizes[i] = 100 + i;
                mtimes[i] = 2000 + i;
                offsets[i] = range_offset(i);
                lengths[i] = range_length(i);
        }
        ASSERT_OK(db_open(db_path, &db));
        /* an earlier run on another filesystem, finished */
        ASSERT_OK(db_run_create(db, OTHER_FSID, "/other", ids, sizes, mtimes, NULL, NULL, 2, &other));
        ASSERT_OK(db_run_finish(db, other, RUN_CANCELLED, 0, 1, 4096));
        ASSERT_OK(db_run_create(db, FSID, "/mnt", ids, sizes, mtimes, offsets, lengths, N_FILES - 1, &run));
        ASSERT_TRUE(run > other);
        ASSERT_OK(db_run_add_file(db, run, N_FILES - 1, ids[N_FILES - 1], 100 + N_FILES - 1, 2000 + N_FILES - 1, 0, 0));
        ASSERT_OK(db_run_file_set(db, run, 0, RUN_FILE_DONE, MOVE_REASON_NONE, NULL, 8192));
        ASSERT_OK(db_run_file_set(db, run, 1, RUN_FILE_SKIPPED, MOVE_REASON_GONE, "gone or replaced since recording", 0));
        ASSERT_OK(db_run_file_set(db, run, 2, RUN_FILE_RETRY, MOVE_REASON_RUNNING, "running executable (ETXTBSY)", 0));
        ASSERT_OK(db_run_file_set(db, run, 3, RUN_FILE_IN_PLACE, MOVE_REASON_NONE, NULL, 0));
        /* checkpoints of files the run does not have, and states that are none */
        ASSERT_ERROR(db_run_file_set(db, run, N_FILES, RUN_FILE_DONE, MOVE_REASON_NONE, NULL, 0), ENOENT);
        ASSERT_ERROR(db_run_file_set(db, run + 100, 0, RUN_FILE_DONE, MOVE_REASON_NONE, NULL, 0), ENOENT);
        ASSERT_ERROR(db_run_file_set(db, run, 4, _RUN_FILE_STATE_MAX, MOVE_REASON_NONE, NULL, 0), EINVAL);
        raise(SIGKILL);
}

TEST(interrupted_run) {
        Db *db = NULL;
        int64_t ids[N_FILES];
        DbRunInfo *runs = NULL, last;
        DbRunFile *f = NULL;
        DbRunFile *retry = NULL;
        size_t n = 0;
        int status;
        pid_t pid;

        ASSERT_OK(db_open(db_path, &db));
        add_files(db, ids);
        db = db_free(db);

        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0)
                child_run(ids);
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

        /* The new process finds the run, and in it exactly the pending files. */
        ASSERT_OK(db_open(db_path, &db));
        ASSERT_OK(db_runs_unfinished(db, &runs, &n));
        ASSERT_EQ(n, 1);
        int64_t run = runs[0].id;
        ASSERT_EQ(runs[0].fsid, FSID);
        ASSERT_STREQ(runs[0].mount, "/mnt");
        ASSERT_EQ(runs[0].state, RUN_RUNNING);
        ASSERT_TRUE(runs[0].started > 0);
        ASSERT_EQ(runs[0].finished, 0);
        db_run_infos_free(runs, n);

        ASSERT_OK(db_run_files(db, run, &f, &n));
        ASSERT_EQ(n, N_FILES);
        const RunFileState want[N_FILES] = { RUN_FILE_DONE, RUN_FILE_SKIPPED, RUN_FILE_RETRY, RUN_FILE_IN_PLACE,
                                             RUN_FILE_PENDING, RUN_FILE_PENDING };
        const char *reason[N_FILES] = { "", "gone or replaced since recording", "running executable (ETXTBSY)",
                                        "", NULL, NULL };
        for (size_t i = 0; i < n; i++) {
                ASSERT_EQ(f[i].position, i);
                ASSERT_EQ(f[i].file.id, ids[i]);
                ASSERT_EQ(f[i].state, want[i]);
                if (reason[i])
                        ASSERT_STREQ(f[i].reason, reason[i]);
                ASSERT_EQ(f[i].bytes, i == 0 ? 8192 : 0);
                /* the values when the run was planned, not the stored ones */
                ASSERT_EQ(f[i].file.size, 100 + i);
                ASSERT_EQ(f[i].file.mtime_ns, 2000 + (int64_t) i);
                ASSERT_EQ(f[i].file.key.fsid, FSID);
                /* the ranges as planned (the one added afterwards is a whole file) */
                ASSERT_EQ(f[i].offset, i < N_FILES - 1 ? range_offset(i) : 0);
                ASSERT_EQ(f[i].length, i < N_FILES - 1 ? range_length(i) : 0);
        }
        db_run_files_free(f, n);

        /* The early-boot pass's files: the retry for a running executable, with its planned values. */
        ASSERT_OK(db_retry_entries(db, MOVE_REASON_RUNNING, &retry, &n));
        ASSERT_EQ(n, 1);
        ASSERT_EQ(retry[0].file.id, ids[2]);
        ASSERT_EQ(retry[0].file.size, 102);
        ASSERT_EQ(retry[0].file.mtime_ns, 2002);
        ASSERT_EQ(retry[0].offset, range_offset(2));
        ASSERT_EQ(retry[0].length, range_length(2));
        db_run_files_free(retry, n);
        ASSERT_OK(db_retry_entries(db, MOVE_REASON_GONE, &retry, &n));
        ASSERT_EQ(n, 0);
        db_run_files_free(retry, n);

        /* Resumed: the pending ones checkpointed, the run finished. */
        ASSERT_OK(db_run_file_set(db, run, 4, RUN_FILE_DONE, MOVE_REASON_NONE, NULL, 4096));
        ASSERT_OK(db_run_file_set(db, run, 5, RUN_FILE_DONE, MOVE_REASON_NONE, NULL, 4096));
        ASSERT_ERROR(db_run_last(db, FSID, &last), ENOENT);
        ASSERT_OK(db_run_finish(db, run, RUN_DONE, 2, 3, 16384));
        db = reopen(db);
        ASSERT_OK(db_runs_unfinished(db, &runs, &n));
        ASSERT_EQ(n, 0);
        db_run_infos_free(runs, n);
        ASSERT_OK(db_run_last(db, FSID, &last));
        ASSERT_EQ(last.id, run);
        ASSERT_EQ(last.state, RUN_DONE);
        ASSERT_EQ(last.donor_runs, 2);
        ASSERT_EQ(last.moved_files, 3);
        ASSERT_EQ(last.moved_bytes, 16384);
        ASSERT_TRUE(last.finished >= last.started);
        free(last.mount);
        ASSERT_OK(db_run_last(db, OTHER_FSID, &last));
        ASSERT_EQ(last.state, RUN_CANCELLED);
        ASSERT_STREQ(last.mount, "/other");
        free(last.mount);
        ASSERT_ERROR(db_run_last(db, 7, &last), ENOENT);

        /* A later run of a file makes it newest there: a retry in an older run no longer counts. */
        int64_t later;
        ASSERT_OK(db_run_create(db, FSID, "/mnt", &ids[2], (const uint64_t[]) { 1 }, (const int64_t[]) { 1 }, NULL, NULL, 1,
                                &later));
        ASSERT_OK(db_run_file_set(db, later, 0, RUN_FILE_DONE, MOVE_REASON_NONE, NULL, 4096));
        ASSERT_OK(db_retry_entries(db, MOVE_REASON_RUNNING, &retry, &n));
        ASSERT_EQ(n, 0);
        db_run_files_free(retry, n);
        db_free(db);
}

/* A power cut must not take back a run whose files may already be moving, nor a checkpoint of a file the
 * mover is done with (the resumed run would move that file again): the run's creation and each checkpoint
 * sync the WAL, once each. Nothing else does: an entry set otherwise (db_run_file_set(), e.g. a retry
 * mark), the run's end, and whatever follows, under the connection's synchronous = NORMAL, which both
 * leave as it was. */
TEST(run_creation_synced) {
        Db *db = NULL;
        int64_t ids[N_FILES], run;

        ASSERT_OK(db_open(db_path, &db));
        boot_file_ids(db, ids);
        /* the first write after opening starts a new WAL, which SQLite syncs whatever the setting */
        ASSERT_OK(db_run_create(db, FSID, "/mnt", ids, (const uint64_t[]) { 1 }, (const int64_t[]) { 1 }, NULL, NULL, 1, &run));
        ASSERT_OK(db_run_finish(db, run, RUN_DONE, 1, 1, 4096));
        wal_syncs = 0;
        ASSERT_OK(db_run_create(db, FSID, "/mnt", ids, (const uint64_t[]) { 1, 2 }, (const int64_t[]) { 1, 2 }, NULL, NULL, 2,
                                &run));
        ASSERT_EQ(wal_syncs, 1);
        wal_syncs = 0;
        ASSERT_OK(db_run_file_checkpoint(db, run, 0, RUN_FILE_DONE, MOVE_REASON_NONE, NULL, 4096));
        ASSERT_EQ(wal_syncs, 1);
        ASSERT_OK(db_run_file_set(db, run, 1, RUN_FILE_RETRY, MOVE_REASON_BUSY, "busy", 0));
        ASSERT_EQ(wal_syncs, 1);
        ASSERT_OK(db_run_file_checkpoint(db, run, 1, RUN_FILE_DONE, MOVE_REASON_NONE, NULL, 8192));
        ASSERT_EQ(wal_syncs, 2);
        ASSERT_OK(db_run_finish(db, run, RUN_DONE, 1, 2, 12288));
        ASSERT_EQ(wal_syncs, 2);
        /* a checkpoint of an entry that is not there fails, and leaves the setting as it was too */
        ASSERT_ERROR(db_run_file_checkpoint(db, run, 7, RUN_FILE_DONE, MOVE_REASON_NONE, NULL, 1), ENOENT);
        wal_syncs = 0;
        ASSERT_OK(db_run_finish(db, run, RUN_DONE, 1, 2, 12288));
        ASSERT_EQ(wal_syncs, 0);
        db_free(db);
}

TEST(quality) {
        Db *db = NULL;
        DbQuality q;
        const DbQuality before = { .taken = 1000, .files = 10, .extents = 40, .discontinuities = 30, .span = 1 << 30,
                                   .modeled_ms = 123.25 };
        const DbQuality after = { .taken = 2000, .files = 10, .extents = 11, .discontinuities = 1, .span = 1 << 24,
                                  .modeled_ms = 8.5 };

        ASSERT_OK(db_open(db_path, &db));
        ASSERT_ERROR(db_quality_get(db, "boot", QUALITY_BEFORE, &q), ENOENT);
        ASSERT_ERROR(db_quality_set(db, "/nope", QUALITY_BEFORE, &before), ENOENT);
        ASSERT_OK(db_quality_set(db, "boot", QUALITY_BEFORE, &(DbQuality) { .taken = 1 }));
        ASSERT_OK(db_quality_set(db, "boot", QUALITY_BEFORE, &before));      /* replaces */
        ASSERT_OK(db_quality_set(db, "boot", QUALITY_AFTER, &after));
        db = reopen(db);
        ASSERT_OK(db_quality_get(db, "boot", QUALITY_BEFORE, &q));
        ASSERT_TRUE(memcmp(&q, &before, sizeof q) == 0);
        ASSERT_OK(db_quality_get(db, "boot", QUALITY_AFTER, &q));
        ASSERT_TRUE(memcmp(&q, &after, sizeof q) == 0);
        ASSERT_ERROR(db_quality_get(db, "/nope", QUALITY_AFTER, &q), ENOENT);
        db_free(db);
}

TEST(extents_before) {
        Db *db = NULL;
        int64_t ids[N_FILES];
        _cleanup_free_ uint64_t *ph = NULL, *len = NULL;
        size_t n = 99;

        ASSERT_OK(db_open(db_path, &db));
        boot_file_ids(db, ids);
        ASSERT_OK(db_extents_before_get(db, ids[0], &ph, &len, &n));
        ASSERT_EQ(n, 0);
        ph = mfree(ph);
        len = mfree(len);
        ASSERT_OK(db_extents_before_set(db, ids[0], (const uint64_t[]) { 900, 100, 500 },
                                        (const uint64_t[]) { 8, 16, 4 }, 3));
        ASSERT_OK(db_extents_before_set(db, ids[1], (const uint64_t[]) { 1 }, (const uint64_t[]) { 1 }, 1));
        db = reopen(db);
        ASSERT_OK(db_extents_before_get(db, ids[0], &ph, &len, &n));
        ASSERT_EQ(n, 3);
        /* in the order given (the file's logical order), not sorted by block */
        ASSERT_EQ(ph[0], 900);
        ASSERT_EQ(ph[1], 100);
        ASSERT_EQ(ph[2], 500);
        ASSERT_EQ(len[0], 8);
        ASSERT_EQ(len[1], 16);
        ASSERT_EQ(len[2], 4);
        ph = mfree(ph);
        len = mfree(len);
        /* a newer run's "before" replaces the older one */
        ASSERT_OK(db_extents_before_set(db, ids[0], (const uint64_t[]) { 7 }, (const uint64_t[]) { 2 }, 1));
        ASSERT_OK(db_extents_before_get(db, ids[0], &ph, &len, &n));
        ASSERT_EQ(n, 1);
        ASSERT_EQ(ph[0], 7);
        ASSERT_EQ(len[0], 2);
        db_free(db);
}

/* Ranges of one running executable left for the early pass: the pass's queue has each range once, in
 * file order, with the values planned. */
TEST(retry_ranges) {
        Db *db = NULL;
        int64_t ids[N_FILES], same[3], run;
        DbRunFile *retry = NULL;
        size_t n = 0;

        ASSERT_OK(db_open(db_path, &db));
        boot_file_ids(db, ids);
        same[0] = same[1] = same[2] = ids[4];
        ASSERT_OK(db_run_create(db, FSID, "/mnt", same, (const uint64_t[]) { 65536, 65536, 65536 },
                                (const int64_t[]) { 7, 7, 7 }, (const uint64_t[]) { 32768, 0, 32768 },
                                (const uint64_t[]) { 8192, 8192, 8192 }, 3, &run));
        for (size_t i = 0; i < 3; i++)
                ASSERT_OK(db_run_file_set(db, run, i, RUN_FILE_RETRY, MOVE_REASON_RUNNING, "running executable", 0));
        ASSERT_OK(db_retry_entries(db, MOVE_REASON_RUNNING, &retry, &n));
        ASSERT_EQ(n, 2);
        for (size_t i = 0; i < n; i++) {
                ASSERT_EQ(retry[i].file.id, ids[4]);
                ASSERT_EQ(retry[i].file.size, 65536);
                ASSERT_EQ(retry[i].file.mtime_ns, 7);
                ASSERT_EQ(retry[i].offset, i * 32768);
                ASSERT_EQ(retry[i].length, 8192);
        }
        db_run_files_free(retry, n);
        db_free(db);
}

static bool queued(const DbRunFile *q, size_t n, int64_t id) {
        for (size_t i = 0; i < n; i++)
                if (q[i].file.id == id)
                        return true;
        return false;
}

/* An early pass killed after its first file: its entries wait for MOVE_REASON_RUNNING until checkpointed,
 * so the next pass's queue has the files it did not reach and not the one it moved, also once its run is
 * closed (cancelled, the move its checkpoints count). A live run's pending entries are in no queue, and an
 * interrupted live run stays to be resumed. */
TEST(early_pass_killed) {
        Db *db = NULL;
        int64_t ids[N_FILES], early, live;
        DbRunFile *q = NULL;
        DbRunInfo *runs = NULL, last = {};
        size_t n = 0;

        ASSERT_OK(db_open(db_path, &db));
        boot_file_ids(db, ids);
        const int64_t mine[3] = { ids[0], ids[1], ids[3] };
        ASSERT_OK(db_run_create(db, FSID, "/mnt", mine, (const uint64_t[]) { 4096, 4096, 4096 },
                                (const int64_t[]) { 1, 1, 1 }, NULL, NULL, 3, &early));
        ASSERT_OK(db_run_files_waiting(db, early, MOVE_REASON_RUNNING));
        ASSERT_OK(db_run_file_set(db, early, 0, RUN_FILE_DONE, MOVE_REASON_NONE, NULL, 4096));
        ASSERT_OK(db_run_create(db, FSID, "/mnt", &ids[5], (const uint64_t[]) { 4096 }, (const int64_t[]) { 1 },
                                NULL, NULL, 1, &live));
        db = reopen(db);

        for (int round = 0; round < 2; round++) {
                ASSERT_OK(db_retry_entries(db, MOVE_REASON_RUNNING, &q, &n));
                ASSERT_TRUE(queued(q, n, ids[1]) && queued(q, n, ids[3]));
                ASSERT_TRUE(!queued(q, n, ids[0]) && !queued(q, n, ids[5]));
                db_run_files_free(q, n);
                ASSERT_EQ(db_runs_close_waiting(db, MOVE_REASON_RUNNING), round == 0 ? 1 : 0);
        }
        ASSERT_OK(db_runs_unfinished(db, &runs, &n));
        ASSERT_TRUE(n > 0 && runs[n - 1].id == live);   /* the earlier tests' runs stay running too */
        for (size_t i = 0; i < n; i++)
                ASSERT_TRUE(runs[i].id != early);
        db_run_infos_free(runs, n);
        ASSERT_OK(db_run_last(db, FSID, &last));
        ASSERT_EQ(last.id, early);
        ASSERT_EQ(last.state, RUN_CANCELLED);
        ASSERT_EQ(last.moved_files, 1);
        ASSERT_EQ(last.moved_bytes, 4096);
        free(last.mount);
        ASSERT_OK(db_run_finish(db, live, RUN_CANCELLED, 0, 0, 0));
        db_free(db);
}

int main(void) {
        snprintf(dir, sizeof dir, "%s/seekless-test-db-run.XXXXXX", test_scratch_root());
        if (!mkdtemp(dir)) {
                fprintf(stderr, "mkdtemp %s: %m\n", dir);
                return EXIT_FAILURE;
        }
        owner = getpid();
        atexit(cleanup);
        ASSERT_EQ(test_claim_dir(dir), 0);
        snprintf(db_path, sizeof db_path, "%s/seekless.db", dir);

        count_wal_syncs();
        RUN(interrupted_run);
        RUN(run_creation_synced);
        RUN(quality);
        RUN(extents_before);
        RUN(retry_ranges);
        RUN(early_pass_killed);
        return EXIT_SUCCESS;
}
