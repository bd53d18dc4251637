/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The manager's side of optimizing: plan, start runs (checkpointed in the database), resume runs a crash
 * interrupted, and finish them (quality "after", RunFinished). The moving happens in optimizer.c's
 * thread; this file only runs in the main loop. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "relocate/item-files.h"
#include "common/log.h"
#include "relocate/exec-gate.h"
#include "policy/idle.h"
#include "manager/manager.h"
#include "relocate/run.h"

static PlanConfig manager_plan_config(Manager *m) {
        return (PlanConfig) {
                .max_hot_set_bytes = (uint64_t) m->config.max_hot_set_mib << 20,
                .max_file_bytes = (uint64_t) m->config.max_file_mib << 20,
                .min_file_age_usec = m->config.min_file_age_usec,
        };
}

const char *manager_unwatched_mount(Manager *m, char *const *mounts) {
        for (size_t i = 0; mounts && mounts[i]; i++) {
                bool found = false;
                for (size_t k = 0; k < m->filesystems.n && !found; k++)
                        found = streq(mounts[i], m->filesystems.items[k].mount);
                if (!found)
                        return mounts[i];
        }
        return NULL;
}

const char *manager_relocation_refusal(Manager *m, const Filesystem *fs, char *buf, size_t n) {
        IdleConfig ic;
        bool rot = true;
        int r;

        /* a read-write filesystem seen here only through a read-only mount: recorded, never written */
        if (fs->read_only) {
                snprintf(buf, n, "mounted read-only");
                return buf;
        }
        idle_config_from_config(&ic, &m->config);
        r = block_device_rotational("/sys", fs->dev, &rot);
        if (idle_device_allowed(&ic, r < 0 ? r : (int) rot, buf, n))
                return NULL;
        return buf;
}

/* What a plan of mounts reads besides the database, taken now: the worker builds it while the loop goes on
 * (mounts may come and go, the configuration be reloaded). */
static int plan_inputs(Manager *m, char *const *mounts, PlanInputs *ret) {
        _cleanup_(plan_inputs_done) PlanInputs in = { .config = manager_plan_config(m) };
        int r;

        r = filesystem_list_copy(&m->filesystems, &in.filesystems);
        if (r < 0)
                return r;
        in.allowed_breaks = calloc(m->filesystems.n + 1, sizeof *in.allowed_breaks);
        in.refusals = calloc(m->filesystems.n + 1, sizeof *in.refusals);
        if (!in.allowed_breaks || !in.refusals)
                return -ENOMEM;
        if (mounts) {
                size_t n = 0;
                while (mounts[n])
                        n++;
                in.mounts = calloc(n + 1, sizeof *in.mounts);
                if (!in.mounts)
                        return -ENOMEM;
                for (size_t i = 0; i < n; i++)
                        if (!(in.mounts[i] = strdup(mounts[i])))
                                return -ENOMEM;
        }
        /* Breaks the last run on a filesystem could not avoid (its donor's runs - 1) don't make a layout
         * "not in place": otherwise every later run would rewrite the same files again. */
        for (size_t i = 0; i < m->filesystems.n; i++) {
                DbRunInfo last = {};
                if (db_run_last(m->db, m->filesystems.items[i].fsid, &last) >= 0) {
                        in.allowed_breaks[i] = last.donor_runs > 1 ? last.donor_runs - 1 : 0;
                        free(last.mount);
                }
        }
        for (size_t i = 0; i < m->filesystems.n; i++) {
                char why[128];
                if (manager_relocation_refusal(m, &m->filesystems.items[i], why, sizeof why)) {
                        in.refusals[i] = strdup(why);
                        if (!in.refusals[i])
                                return -ENOMEM;
                }
        }
        *ret = in;
        in = (PlanInputs) {};
        return 0;
}

int manager_plan(Manager *m, char *const *mounts, bool finish_on_stop, PlanBuiltFunc done, void *userdata) {
        PlanInputs in = {};
        int r;

        if (manager_unwatched_mount(m, mounts))
                return -ENODEV;
        r = plan_inputs(m, mounts, &in);
        if (r < 0)
                return r;
        return plan_worker_build(m->plan_worker, &in, finish_on_stop, done, userdata);
}

static uint64_t now_realtime(void) {
        return now_usec(CLOCK_REALTIME);
}

static void store_quality(Manager *m, const char *profile, QualityWhich which, const LayoutQuality *q) {
        DbQuality d = {
                .taken = now_realtime(),
                .files = q->files,
                .extents = q->extents,
                .discontinuities = q->discontinuities,
                .span = q->span,
                .modeled_ms = q->modeled_read_ms,
        };
        int r = db_quality_set(m->db, profile, which, &d);
        if (r < 0)
                log_warning_errno(r, "Failed to store layout quality of %s, ignoring: %m", profile);
}

static void fail_runs(Manager *m, const OptJob *jobs, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (jobs[i].run_id > 0)
                        (void) db_run_finish(m->db, jobs[i].run_id, RUN_FAILED, 0, 0, 0);
}

/* Where each file of the plan was, for "before" pictures: the extents of all its entries (a file with
 * several hot ranges has an entry per range), in plan order. */
static void store_extents_before(Manager *m, const FsPlan *fp, const OptJob *job) {
        _cleanup_free_ size_t *start = NULL, *order = NULL;
        const size_t *file_of = job->file_of;
        size_t n_files = job->n_files;

        if (!file_of || n_files == 0)
                return;
        /* the entries grouped by file, in plan order within a file (a counting sort) */
        start = calloc(n_files + 1, sizeof *start);
        order = calloc(job->n_items, sizeof *order);
        if (!start || !order)
                return;
        for (size_t i = 0; i < job->n_items; i++)
                start[file_of[i] + 1]++;
        for (size_t f = 0; f < n_files; f++)
                start[f + 1] += start[f];
        for (size_t i = 0, *next = start; i < job->n_items; i++)
                order[next[file_of[i]]++] = i;
        /* start[f] is now where file f + 1 begins: file f is order[(f ? start[f - 1] : 0) .. start[f]) */
        for (size_t f = 0, lo = 0; f < n_files; lo = start[f], f++) {
                _cleanup_free_ uint64_t *ph = NULL, *len = NULL;
                const PlanFile *first = &fp->files[order[lo]];
                size_t k = 0, n_ext = 0;
                int r;

                for (size_t j = lo; j < start[f]; j++)
                        n_ext += fp->files[order[j]].n_extents;
                ph = calloc(n_ext + 1, sizeof *ph);
                len = calloc(n_ext + 1, sizeof *len);
                if (!ph || !len)
                        return;
                for (size_t j = lo; j < start[f]; j++) {
                        const PlanFile *e = &fp->files[order[j]];
                        for (size_t x = 0; x < e->n_extents; x++, k++) {
                                ph[k] = e->extents[x].physical;
                                len[k] = e->extents[x].length;
                        }
                }
                r = db_extents_before_set(m->db, first->file_id, ph, len, k);
                if (r < 0)
                        log_debug_errno(r, "Failed to store the extents of %s, ignoring: %m", first->path);
        }
}

/* Build one job from a filesystem's plan and create its run in the database. */
static int job_from_plan(Manager *m, const FsPlan *fp, OptJob *job) {
        *job = (OptJob) {
                .mount = strdup(fp->mount),
                .sysfs_dir = ext4_sysfs_dir(fp->dev),
                .items = calloc(fp->n_files + 1, sizeof *job->items),
                .positions = calloc(fp->n_files + 1, sizeof *job->positions),
                .paths = calloc(fp->n_files + 1, sizeof *job->paths),
        };
        if (!job->mount || !job->items || !job->positions || !job->paths)
                return -ENOMEM;
        for (size_t i = 0; i < fp->n_files; i++) {
                const PlanFile *f = &fp->files[i];

                job->paths[i] = strdup(f->path);
                if (!job->paths[i])
                        return -ENOMEM;
                job->items[i] = (MoveItem) {
                        .file_id = f->file_id,
                        .path = job->paths[i],
                        .key = f->key,
                        .size = f->size,
                        .mtime_ns = f->mtime_ns,
                        .offset = f->offset,
                        .length = f->length,
                };
                job->positions[i] = i;
                job->n_items++;
        }
        /* the optimizer needs the same grouping: made once, here */
        if (move_items_files(job->items, job->n_items, &job->file_of, &job->n_files) < 0)
                return -ENOMEM;
        store_extents_before(m, fp, job);
        return run_create(m->db, fp->fsid, fp->mount, job->items, job->n_items, &job->run_id);
}

static void on_optimizer_progress(Optimizer *o, void *userdata) {
        manager_emit_progress_signal(userdata, o->id, o->files_done, o->files_total, o->bytes_done, o->bytes_total);
}

static void on_optimizer_finished(Optimizer *o, void *userdata);

/* The optimizer over these jobs (taken over), reporting to us. */
static int start_optimizer(Manager *m, OptJob *jobs, size_t n_jobs) {
        _cleanup_free_ char *state_file = NULL;
        int r;

        if (asprintf(&state_file, "%s/mb_stream_req.saved", m->state_dir) < 0) {
                opt_jobs_free(jobs, n_jobs);
                return -ENOMEM;
        }
        /* the mover holds the execs of the files it moves through our exec thread */
        m->runs.exec_gate = exec_gate_of(m->recording.recorder);
        recorder_gate_begin(m->recording.recorder);
        r = optimizer_start(&(OptimizerOptions) {
                        .event = m->event,
                        .db = m->db,
                        .rate_limit_bps = (uint64_t) m->config.rate_limit_mibps << 20,
                        .make_room = m->config.make_room,
                        .state_file = state_file,
                        .exec_gate = &m->runs.exec_gate,
                        .progress = on_optimizer_progress,
                        .finished = on_optimizer_finished,
                        .userdata = m,
                }, jobs, n_jobs, &m->runs.optimizer);
        if (r < 0)
                recorder_gate_end(m->recording.recorder);
        return r;
}

/* The running executables the planner skipped on plan filesystem fi (those it queued: file_id set) become
 * entries of run_id from position pos on, each hot range one (none known: the whole file), as retries for
 * MOVE_REASON_RUNNING: the early-boot pass's queue. */
static void queue_running(Manager *m, const Plan *plan, size_t fi, int64_t run_id, size_t pos) {
        for (size_t k = 0; k < plan->n_skipped; k++) {
                const PlanSkip *sk = &plan->skipped[k];

                if (sk->file_id == 0 || sk->fs != fi)
                        continue;
                for (size_t q = 0; q < MAX(sk->n_ranges, (size_t) 1); q++) {
                        if (db_run_add_file(m->db, run_id, pos, sk->file_id, sk->size, sk->mtime_ns,
                                            q < sk->n_ranges ? sk->offsets[q] : 0,
                                            q < sk->n_ranges ? sk->lengths[q] : 0) >= 0)
                                (void) db_run_file_set(m->db, run_id, pos, RUN_FILE_RETRY, MOVE_REASON_RUNNING,
                                                       "running executable", 0);
                        pos++;
                }
        }
}

/* Nothing else moves on plan filesystem fi: the running executables the plan queued there get a run of
 * their own, which only queues them and is finished at once. It carries the donor runs of the last run
 * on the filesystem, from which the next plan takes the breaks it allows. */
static int queue_running_only(Manager *m, const Plan *plan, size_t fi) {
        const FsPlan *fp = &plan->fs[fi];
        DbRunInfo last = {};
        bool any = false;
        int64_t run_id;
        int r;

        for (size_t k = 0; k < plan->n_skipped && !any; k++)
                any = plan->skipped[k].file_id != 0 && plan->skipped[k].fs == fi;
        if (!any)
                return 0;
        if (db_run_last(m->db, fp->fsid, &last) >= 0)
                free(last.mount);
        r = run_create(m->db, fp->fsid, fp->mount, NULL, 0, &run_id);
        if (r < 0)
                return r;
        queue_running(m, plan, fi, run_id, 0);
        return db_run_finish(m->db, run_id, RUN_DONE, last.donor_runs, 0, 0);
}

/* The rest of an optimization once its plan is there: close the runs it supersedes, store the "before"
 * quality, create the runs and start the optimizer. *ret_id 0: nothing to move. */
static int optimize_start(Manager *m, const Plan *plan, uint64_t *ret_id) {
        OptJob *jobs = NULL;
        size_t n_jobs = 0;
        int r;

        /* A paused or interrupted run is superseded by this one, which plans the same files afresh:
         * close it, or both would resume later. */
        {
                DbRunInfo *old = NULL;
                size_t n_old = 0;
                if (db_runs_unfinished(m->db, &old, &n_old) >= 0) {
                        for (size_t i = 0; i < n_old; i++)
                                (void) db_run_finish(m->db, old[i].id, RUN_CANCELLED, old[i].donor_runs,
                                                     old[i].moved_files, old[i].moved_bytes);
                        db_run_infos_free(old, n_old);
                }
        }

        for (size_t i = 0; i < plan->n_profiles; i++)
                store_quality(m, plan->profiles[i].name, QUALITY_BEFORE, &plan->profiles[i].before);

        jobs = calloc(plan->n_fs + 1, sizeof *jobs);
        if (!jobs)
                return -ENOMEM;
        for (size_t i = 0; i < plan->n_fs; i++) {
                const FsPlan *fp = &plan->fs[i];
                if (fp->n_files > 0 && fp->in_place)
                        log_info("%s: the layout is already in place (%" PRIu64 " discontinuities), nothing to move",
                                 fp->mount, fp->before.discontinuities);
                if (fp->n_files == 0 || fp->in_place) {
                        r = queue_running_only(m, plan, i);
                        if (r < 0)
                                log_warning_errno(r, "%s: failed to queue the running executables for the early-boot pass: %m",
                                                  fp->mount);
                        continue;
                }
                if (fp->n_in_place > 0)
                        log_info("%s: %zu files of profiles already in place stay where they are", fp->mount,
                                 fp->n_in_place);
                r = job_from_plan(m, fp, &jobs[n_jobs]);
                n_jobs++;
                if (r >= 0)
                        queue_running(m, plan, i, jobs[n_jobs - 1].run_id, fp->n_files);
                if (r < 0) {
                        log_error_errno(r, "Failed to prepare the run on %s: %m", fp->mount);
                        fail_runs(m, jobs, n_jobs);
                        opt_jobs_free(jobs, n_jobs);
                        return r;
                }
        }
        if (n_jobs == 0) {
                free(jobs);
                *ret_id = 0;
                return 0;
        }
        {
                /* the run ids survive optimizer_start() freeing the jobs on failure */
                _cleanup_free_ int64_t *ids = calloc(n_jobs, sizeof *ids);
                for (size_t i = 0; ids && i < n_jobs; i++)
                        ids[i] = jobs[i].run_id;
                r = start_optimizer(m, jobs, n_jobs);
                if (r < 0) {
                        /* a run the client was told failed must not run by itself at the next start */
                        for (size_t i = 0; ids && i < n_jobs; i++)
                                (void) db_run_finish(m->db, ids[i], RUN_FAILED, 0, 0, 0);
                        return log_error_errno(r, "Failed to start the optimizer: %m");
                }
        }
        for (size_t i = 0; i < plan->n_skipped; i++)
                (void) optimizer_add_skip(m->runs.optimizer, plan->skipped[i].path, plan->skipped[i].reason);
        log_info("Optimization %" PRIu64 " started: %" PRIu64 " files, %.1f MiB", m->runs.optimizer->id,
                 m->runs.optimizer->files_total, m->runs.optimizer->bytes_total / 1048576.0);
        (void) sd_notifyf(false, "STATUS=Optimizing: %" PRIu64 " files, %.1f MiB",
                          m->runs.optimizer->files_total, m->runs.optimizer->bytes_total / 1048576.0);
        *ret_id = m->runs.optimizer->id;
        return 0;
}

typedef struct OptimizeCall {
        Manager *m;
        ManagerOptimizeDone done;
        void *userdata;
} OptimizeCall;

static void on_optimize_planned(int r, Plan *plan, void *userdata) {
        OptimizeCall *c = userdata;
        Manager *m = c->m;
        uint64_t id = 0;

        m->runs.preparing = false;
        if (r >= 0)
                r = optimize_start(m, plan, &id);
        if (m->runs.cancel_pending && m->runs.optimizer) {
                /* a Cancel came while it was being planned: as if it had come right after the start */
                log_info("Cancelling optimization %" PRIu64, m->runs.optimizer->id);
                optimizer_cancel(m->runs.optimizer);
        }
        m->runs.cancel_pending = false;
        c->done(m, r, id, plan, c->userdata);
        free(c);
}

int manager_optimize(Manager *m, char *const *mounts, ManagerOptimizeDone done, void *userdata) {
        OptimizeCall *c;
        int r;

        if (m->runs.optimizer || m->runs.preparing)
                return -EBUSY;
        c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        *c = (OptimizeCall) { .m = m, .done = done, .userdata = userdata };
        r = manager_plan(m, mounts, false, on_optimize_planned, c);
        if (r < 0) {
                free(c);
                return r;
        }
        m->runs.preparing = true;
        m->runs.cancel_pending = false;
        return 0;
}

/* A run still marked running after a restart was interrupted (crash, kill -9, power loss): finish its
 * pending files; files already done are not moved again. */
int manager_resume_runs(Manager *m) {
        DbRunInfo *runs = NULL;
        OptJob *jobs = NULL;
        size_t n_runs = 0, n_jobs = 0;
        int r;

        r = db_runs_unfinished(m->db, &runs, &n_runs);
        if (r < 0)
                return log_error_errno(r, "Failed to look for interrupted runs: %m");
        if (n_runs == 0)
                return 0;
        jobs = calloc(n_runs + 1, sizeof *jobs);
        if (!jobs) {
                db_run_infos_free(runs, n_runs);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n_runs; i++) {
                DbRunFile *files = NULL;
                size_t n_files = 0, pending = 0;
                const Filesystem *fs = filesystem_list_find_fsid(&m->filesystems, runs[i].fsid);
                OptJob *job = &jobs[n_jobs];

                if (!fs) {
                        /* keep it: it resumes at a later start, once its filesystem is mounted */
                        log_info("Interrupted run %" PRIi64 " on %s waits for its filesystem to be mounted",
                                 runs[i].id, runs[i].mount);
                        continue;
                }
                r = db_run_files(m->db, runs[i].id, &files, &n_files);
                if (r < 0) {
                        log_warning_errno(r, "Interrupted run %" PRIi64 " on %s can't be resumed, closing it: %m",
                                          runs[i].id, runs[i].mount);
                        (void) db_run_finish(m->db, runs[i].id, RUN_FAILED, 0, 0, 0);
                        continue;
                }
                *job = (OptJob) {
                        .run_id = runs[i].id,
                        .mount = strdup(fs->mount),
                        .sysfs_dir = ext4_sysfs_dir(fs->dev),
                        .items = calloc(n_files + 1, sizeof *job->items),
                        .positions = calloc(n_files + 1, sizeof *job->positions),
                        .paths = calloc(n_files + 1, sizeof *job->paths),
                };
                n_jobs++;
                if (!job->mount || !job->items || !job->positions || !job->paths) {
                        db_run_files_free(files, n_files);
                        r = -ENOMEM;
                        goto fail;
                }
                for (size_t k = 0; k < n_files; k++) {
                        if (files[k].state != RUN_FILE_PENDING)
                                continue;
                        job->items[pending] = run_item_of(&files[k]);
                        job->paths[pending] = TAKE_PTR(files[k].file.path);     /* what .path points to */
                        job->positions[pending] = files[k].position;
                        pending++;
                }
                job->n_items = pending;
                log_info("Resuming interrupted run %" PRIi64 " on %s: %zu of %zu files still to do",
                         runs[i].id, job->mount, pending, n_files);
                db_run_files_free(files, n_files);
        }
        db_run_infos_free(runs, n_runs);
        runs = NULL;
        if (n_jobs == 0) {
                free(jobs);
                return 0;
        }
        r = start_optimizer(m, jobs, n_jobs);
        if (r < 0)
                return log_error_errno(r, "Failed to resume the optimizer: %m");
        return 1;
fail:
        db_run_infos_free(runs, n_runs);
        opt_jobs_free(jobs, n_jobs);
        return r;
}


void manager_keep_finished_run(Manager *m, uint64_t id, PlanSkip **skipped, size_t *n_skipped) {
        FinishedRun *f = &m->runs.finished[m->runs.finished_next];

        plan_skips_free(f->skipped, f->n_skipped);
        *f = (FinishedRun) { .id = id, .skipped = TAKE_PTR(*skipped), .n_skipped = *n_skipped };
        *n_skipped = 0;
        m->runs.finished_next = (m->runs.finished_next + 1) % FINISHED_RUNS_KEPT;
}

/* The end of a run, once its "after" snapshot is stored (or could not be taken): RunFinished, and the
 * optimizer goes. */
static void finish_run(Manager *m) {
        Optimizer *o = m->runs.optimizer;
        RunState state = o->failed ? RUN_FAILED : o->cancelled ? RUN_CANCELLED : RUN_DONE;

        m->runs.optimizer = NULL;
        m->runs.finishing = false;
        log_info("Optimization %" PRIu64 " %s: %" PRIu64 " files, %.1f MiB moved, %zu not moved", o->id,
                 run_state_to_string(state), o->moved_files, o->moved_bytes / 1048576.0, o->n_skipped);
        size_t n_skipped = o->n_skipped;
        manager_keep_finished_run(m, o->id, &o->skipped, &o->n_skipped);
        manager_emit_run_finished(m, o->id, state, o->moved_files, o->moved_bytes, n_skipped);
        optimizer_free(o);
        manager_notify_status(m);
}

static void on_after_snapshot(int r, Plan *after, void *userdata) {
        Manager *m = userdata;

        /* "after" quality of every profile, for report */
        for (size_t i = 0; r >= 0 && i < after->n_profiles; i++)
                store_quality(m, after->profiles[i].name, QUALITY_AFTER, &after->profiles[i].before);
        finish_run(m);
}

static void on_optimizer_finished(Optimizer *o, void *userdata) {
        Manager *m = userdata;

        assert(o == m->runs.optimizer);
        recorder_gate_end(m->recording.recorder);
        RecorderStats rs = recorder_get_stats(m->recording.recorder);
        if (rs.execs_held > 0)
                log_info("Execs that waited for the move of their file so far: %" PRIu64 " (%" PRIu64
                         " let go after %" PRIu64 " ms all the same)", rs.execs_held, rs.execs_hold_late,
                         RECORDER_HOLD_WAIT_USEC / USEC_PER_MSEC);
        if (optimizer_pausing(o)) {
                m->runs.optimizer = NULL;
                optimizer_free(o);
                return;
        }
        /* The snapshot walks every profile file: on the worker. The run counts as going on (Optimizing,
         * Busy) until it is stored, so that whoever sees it end finds the "after" quality there. A
         * shutdown waits for it a while. */
        m->runs.finishing = true;
        if (manager_plan(m, NULL, true, on_after_snapshot, m) < 0)
                finish_run(m);
}

void manager_runs_done(Manager *m) {
        m->runs.optimizer = optimizer_free(m->runs.optimizer);
        for (size_t i = 0; i < FINISHED_RUNS_KEPT; i++)
                plan_skips_free(m->runs.finished[i].skipped, m->runs.finished[i].n_skipped);
}
