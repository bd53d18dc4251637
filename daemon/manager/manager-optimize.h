/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/mounts.h"
#include "plan/plan-worker.h"
#include "plan/planner.h"
#include "relocate/optimizer.h"

typedef struct Manager Manager;

/* A run that ended, and the files it did not move (taken over from its Optimizer). */
#define FINISHED_RUNS_KEPT 4
typedef struct FinishedRun {
        uint64_t id;                    /* 0: empty slot */
        PlanSkip *skipped;
        size_t n_skipped;
} FinishedRun;

/* The runs' state (manager-optimize.c). */
typedef struct ManagerRuns {
        Optimizer *optimizer;           /* the optimization in progress, if any */
        MoverExecGate exec_gate;        /* its mover's, holding execs through the recorder */
        bool preparing;                 /* an optimization is being planned (no second one: Busy) */
        bool cancel_pending;            /* Cancel came meanwhile: cancel it as soon as it starts */
        bool finishing;                 /* optimizer's run ended, its "after" snapshot is being taken */
        /* the files the last runs did not move, for GetRunSkipped: RunFinished, which every user may
         * receive, carries only their number */
        FinishedRun finished[FINISHED_RUNS_KEPT];
        size_t finished_next;
} ManagerRuns;

/* Plan mounts (NULL: all) on the plan worker; done runs on the loop. -ENODEV at once for a mount that is
 * not watched. finish_on_stop: see plan_worker_submit(). */
int manager_plan(Manager *m, char *const *mounts, bool finish_on_stop, PlanBuiltFunc done, void *userdata);
/* The first of mounts that is not a watched filesystem, NULL if all are. */
const char *manager_unwatched_mount(Manager *m, char *const *mounts);
/* NULL, or why relocation is off on this filesystem (non-rotational device). */
const char *manager_relocation_refusal(Manager *m, const Filesystem *fs, char *buf, size_t n);
/* How an optimization's start went: r < 0 failed, else id is its run (0: nothing to move); plan (skips) as
 * PlanBuiltFunc's. */
typedef void (*ManagerOptimizeDone)(Manager *m, int r, uint64_t id, Plan *plan, void *userdata);
/* Plan and start an optimization; done is called once it started (or failed). Fails at once (done not
 * called) with -EBUSY while one is running or being planned, -ENODEV for a mount not watched. */
int manager_optimize(Manager *m, char *const *mounts, ManagerOptimizeDone done, void *userdata);
int manager_resume_runs(Manager *m);
/* Keeps the skipped files of a run that ended (taken over: *skipped is NULL after), dropping the oldest. */
void manager_keep_finished_run(Manager *m, uint64_t id, PlanSkip **skipped, size_t *n_skipped);
/* Frees the optimizer (its worker stops) and the finished runs kept. */
void manager_runs_done(Manager *m);
