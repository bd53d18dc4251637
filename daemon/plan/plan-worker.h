/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "store/db.h"
#include "fs/mounts.h"
#include "plan/planner.h"

/* Work that walks every profile file (a plan opens each by its handle and reads its extents) takes seconds
 * on a big profile; the event loop must go on reading fanotify and answering the bus meanwhile. A
 * PlanWorker is one thread with a database connection of its own (WAL: it reads while the loop writes),
 * started at the first job. It runs jobs one at a time, in the order given; each job's done callback then
 * runs on the loop, which the thread wakes through a pipe. It knows nothing of who asks. */

typedef struct PlanWorker PlanWorker;

/* On the worker thread, with its connection: the job's work. *cancel turns true when the worker is being
 * stopped; the work should then return -ECANCELED soon. */
typedef int (*PlanWorkFunc)(Db *db, const atomic_bool *cancel, void *userdata);
/* On the loop: r is what the work returned; -ECANCELED if the worker was stopped before the work ran, or
 * the error opening the database. */
typedef void (*PlanDoneFunc)(int r, void *userdata);

int plan_worker_new(sd_event *event, const char *db_path, PlanWorker **ret);
/* Stops the worker (as plan_worker_stop() with no time to finish) and frees it. */
PlanWorker *plan_worker_free(PlanWorker *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(PlanWorker *, plan_worker_free);

/* Queue a job. finish_on_stop: plan_worker_stop() lets it finish (within its timeout) rather than cancel
 * it. Fails (done not called) with -ECANCELED once the worker is stopping. */
int plan_worker_submit(PlanWorker *w, PlanWorkFunc work, PlanDoneFunc done, void *userdata, bool finish_on_stop);

/* Daemon shutdown: cancel the jobs that need not finish, give the others timeout_usec, then cancel them
 * too; wait for the thread and run every done callback still due before returning. */
void plan_worker_stop(PlanWorker *w, uint64_t timeout_usec);

/* Everything planner_build() reads besides the database, copied, so that the loop may change its own (a
 * mount coming or going, a reload) while the plan is built. */
typedef struct PlanInputs {
        FilesystemList filesystems;
        char **mounts;                  /* NULL: every filesystem */
        PlanConfig config;              /* .cancel is set by the worker */
        uint64_t *allowed_breaks;       /* filesystems.n entries */
        char **refusals;                /* filesystems.n entries, NULL where relocation is allowed */
} PlanInputs;

void plan_inputs_done(PlanInputs *in);

/* On the loop: r as PlanDoneFunc's; when r >= 0 the plan, which the callback may take over (leaving
 * *plan zeroed), else it is freed after it returns. */
typedef void (*PlanBuiltFunc)(int r, Plan *plan, void *userdata);

/* planner_build() over `in` (taken over, also on failure) as a job. */
int plan_worker_build(PlanWorker *w, PlanInputs *in, bool finish_on_stop, PlanBuiltFunc done, void *userdata);
