/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "mover.h"

typedef struct Manager Manager;

/* One filesystem's share of an optimization: a run in the database and its files, in layout order. */
typedef struct OptJob {
        int64_t run_id;
        char *mount;
        char *sysfs_dir;        /* /sys/fs/ext4/<dev> */
        MoveItem *items;        /* only the files still to do */
        size_t *positions;      /* their positions in the run (checkpoint keys) */
        char **paths;           /* owned copies of items[].path */
        size_t n_items;
        MoverStats stats;
        int error;              /* mover_run() failed before moving (negative errno), 0 otherwise */
} OptJob;

typedef struct SkipEntry {
        char *path;
        char *reason;
} SkipEntry;

void skip_entries_free(SkipEntry *l, size_t n);

/* The optimization in progress: a worker thread runs the mover over each job; every finished file is
 * reported through a pipe to the main loop, which checkpoints it in the database and emits Progress. */
typedef struct Optimizer {
        Manager *manager;
        OptJob *jobs;
        size_t n_jobs;
        uint64_t id;                    /* the first job's run id: what clients wait for */
        uint64_t files_total, bytes_total, files_done, bytes_done;
        uint64_t moved_files, moved_bytes;
        SkipEntry *skipped;
        size_t n_skipped;
        bool cancelled, out_of_space, failed;
        bool shutdown;                  /* stopping for shutdown or an idle-policy pause: leave the runs to
                                         * be resumed (remaining files stay pending) */
        bool abandoned;                 /* shutdown gave up waiting for the worker: don't join it */

        pthread_t thread;
        bool thread_started;
        atomic_bool cancel;
        int pipe_fd[2];
        sd_event_source *source;
        uint64_t rate_limit_bps;
        bool make_room;
        char *state_file;
} Optimizer;

Optimizer *optimizer_free(Optimizer *o);
DEFINE_TRIVIAL_CLEANUP_FUNC(Optimizer *, optimizer_free);

/* Start the worker over the given jobs (taken over). */
int optimizer_start(Manager *m, OptJob *jobs, size_t n_jobs, Optimizer **ret);
void optimizer_cancel(Optimizer *o);
/* Daemon shutdown: stop the worker between files and process what it reports, leaving unfinished runs
 * marked running with their remaining files pending, so the next start resumes them. Frees o (through
 * manager_optimizer_finished()). */
void optimizer_shutdown(Optimizer *o);
int optimizer_add_skip(Optimizer *o, const char *path, const char *reason);

void opt_jobs_free(OptJob *jobs, size_t n);

