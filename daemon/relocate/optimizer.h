/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "store/db.h"
#include "relocate/mover.h"
#include "plan/planner.h"

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
        /* a file's hot ranges are items of their own, but count as one file: set by optimizer_start(),
         * unless the owner did so for these items (move_items_files()) */
        size_t *file_of;        /* item -> its file, 0..n_files-1 (move_items_files()) */
        size_t n_files;
        size_t *file_left;      /* per file: its items not reported yet */
        bool *file_moved;       /* per file: one of its items was moved */
} OptJob;


typedef struct Optimizer Optimizer;

/* What the optimizer needs from its owner: the loop its messages arrive on, the run store its checkpoints
 * go to, and two callbacks, both called from that loop. */
typedef struct OptimizerOptions {
        sd_event *event;
        Db *db;
        uint64_t rate_limit_bps;        /* 0: unlimited */
        bool make_room;                 /* MoverOptions.make_room */
        const char *state_file;         /* MoverOptions.state_file (copied) */
        const MoverExecGate *exec_gate; /* MoverOptions.exec_gate (the caller keeps it until finished) */
        /* after each file's checkpoint */
        void (*progress)(Optimizer *o, void *userdata);
        /* once the worker is done with every job (or was given up by optimizer_shutdown()): the owner frees
         * o here, or later, with optimizer_free() */
        void (*finished)(Optimizer *o, void *userdata);
        void *userdata;
} OptimizerOptions;

/* The optimization in progress: a worker thread runs the mover over each job; every finished file is
 * reported through a pipe to the main loop, which checkpoints it in the run store (run.h), acknowledges it
 * (the worker waits for that before the mover goes on to the next file) and calls progress. Only this file
 * writes the cancel and pause state. */
struct Optimizer {
        OptimizerOptions opts;
        OptJob *jobs;
        size_t n_jobs;
        uint64_t id;                    /* the first job's run id: what clients wait for */
        uint64_t files_total, bytes_total, files_done, bytes_done;   /* files: all of a file's items reported */
        uint64_t moved_files, moved_bytes;                            /* files: one of its items moved */
        PlanSkip *skipped;              /* what the plan and the mover left out */
        size_t n_skipped;
        bool cancelled, out_of_space, failed;
        bool pausing;                   /* stopping for shutdown or an idle-policy pause: the runs stay to be
                                         * resumed (remaining files pending) */
        bool abandoned;                 /* shutdown gave up waiting for the worker: don't join it */

        pthread_t thread;
        bool thread_started;
        atomic_bool cancel;
        int pipe_fd[2];
        int ack_fd;                     /* eventfd (semaphore): the main loop's acknowledgements */
        sd_event_source *source;
        char *state_file;
};

Optimizer *optimizer_free(Optimizer *o);
DEFINE_TRIVIAL_CLEANUP_FUNC(Optimizer *, optimizer_free);

/* Start the worker over the given jobs (taken over, also on failure). */
int optimizer_start(const OptimizerOptions *opts, OptJob *jobs, size_t n_jobs, Optimizer **ret);
/* Stop between files (within a second); the runs end "cancelled". Turns a pause under way into a cancel. */
void optimizer_cancel(Optimizer *o);
/* Stop between files, leaving the runs marked running with their remaining files pending, to be resumed:
 * the idle policy's pause. */
void optimizer_pause(Optimizer *o);
bool optimizer_pausing(const Optimizer *o);
/* Daemon shutdown: pause, and process what the worker reports until it is done (at most 10 s; then it is
 * given up and left to process exit). finished is called before this returns. */
void optimizer_shutdown(Optimizer *o);
int optimizer_add_skip(Optimizer *o, const char *path, const char *reason);

void opt_jobs_free(OptJob *jobs, size_t n);
