/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "relocate/item-files.h"
#include "common/log.h"
#include "relocate/optimizer.h"
#include "relocate/run.h"
#include "common/time-util.h"

#define IOPRIO_CLASS_SHIFT 13
#define IOPRIO_CLASS_IDLE 3
#define IOPRIO_WHO_PROCESS 1

typedef enum MsgType {
        MSG_FILE,
        MSG_JOB_DONE,
        MSG_ALL_DONE,
} MsgType;

typedef struct Msg {
        MsgType type;
        int error;
        size_t job;
        size_t index;
        MoveOutcome outcome;
        MoverStats stats;
} Msg;

typedef struct ThreadCtx {
        Optimizer *o;
        size_t job;
} ThreadCtx;

/* The main loop is done with a MSG_FILE: its checkpoint is on the disk (or was not to be written). */
static void ack_file(Optimizer *o) {
        uint64_t one = 1;

        while (write(o->ack_fd, &one, sizeof one) < 0 && errno == EINTR)
                ;
}

void opt_jobs_free(OptJob *jobs, size_t n) {
        for (size_t i = 0; jobs && i < n; i++) {
                for (size_t k = 0; k < jobs[i].n_items; k++)
                        free(jobs[i].paths[k]);
                free(jobs[i].paths);
                free(jobs[i].items);
                free(jobs[i].positions);
                free(jobs[i].mount);
                free(jobs[i].sysfs_dir);
                free(jobs[i].file_of);
                free(jobs[i].file_left);
                free(jobs[i].file_moved);
        }
        free(jobs);
}

Optimizer *optimizer_free(Optimizer *o) {
        if (!o)
                return NULL;
        if (o->abandoned) {
                /* the worker still runs and uses o: leave everything to process exit */
                return NULL;
        }
        if (o->thread_started) {
                atomic_store(&o->cancel, true);
                /* the worker may be blocked writing to a full pipe: drain while we wait */
                for (;;) {
                        Msg msg;
                        if (pthread_tryjoin_np(o->thread, NULL) == 0)
                                break;
                        while (read(o->pipe_fd[0], &msg, sizeof msg) > 0)
                                if (msg.type == MSG_FILE)
                                        ack_file(o);
                        usleep(10000);
                }
        }
        sd_event_source_disable_unref(o->source);
        safe_close(o->pipe_fd[0]);
        safe_close(o->pipe_fd[1]);
        safe_close(o->ack_fd);
        opt_jobs_free(o->jobs, o->n_jobs);
        plan_skips_free(o->skipped, o->n_skipped);
        free(o->state_file);
        free(o);
        return NULL;
}

int optimizer_add_skip(Optimizer *o, const char *path, const char *reason) {
        /* every file a run leaves alone, whether the planner or the mover decided so */
        log_info("%s: not moved: %s", path, reason);
        return plan_skip_add(&o->skipped, &o->n_skipped, path, reason, false);
}

static void send_msg(Optimizer *o, const Msg *m) {
        /* blocking write: the main loop drains the pipe; a Msg is smaller than PIPE_BUF, so atomic */
        while (write(o->pipe_fd[1], m, sizeof *m) < 0 && errno == EINTR)
                ;
}

/* A file's outcome, sent to the main loop; returns once its checkpoint is on the disk, so that the mover
 * touches the next file only then (run.h: a power cut must not leave a moved file pending, to be moved
 * again). The main loop acknowledges every MSG_FILE, also while it shuts down. */
static void send_file_msg(Optimizer *o, const Msg *m) {
        uint64_t v;

        send_msg(o, m);
        while (read(o->ack_fd, &v, sizeof v) < 0 && errno == EINTR)
                ;
}

static void on_file_done(void *userdata, size_t index, const MoveOutcome *outcome) {
        ThreadCtx *c = userdata;
        Msg m = { .type = MSG_FILE, .job = c->job, .index = index, .outcome = *outcome };

        send_file_msg(c->o, &m);
}

static void *optimizer_thread(void *userdata) {
        Optimizer *o = userdata;

        /* Idle I/O class: the mover only gets the disk when nobody else wants it (BFQ, mq-deadline).
         * IOPRIO_WHO_PROCESS with 0 means this thread. */
        (void) syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT);

        for (size_t j = 0; j < o->n_jobs; j++) {
                OptJob *job = &o->jobs[j];
                ThreadCtx ctx = { .o = o, .job = j };
                _cleanup_free_ MoveOutcome *outcomes = calloc(job->n_items + 1, sizeof *outcomes);
                _cleanup_close_ int mfd = open(job->mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                Msg done = { .type = MSG_JOB_DONE, .job = j };
                MoverOptions opts = {
                        .mount_fd = mfd,
                        .rate_limit_bps = o->opts.rate_limit_bps,
                        .cancel = &o->cancel,
                        .sysfs_dir = job->sysfs_dir,
                        .state_file = o->state_file,
                        .make_room = o->opts.make_room,
                        .keep_in_place = true,
                        .exec_gate = o->opts.exec_gate,
                        .progress = on_file_done,
                        .userdata = &ctx,
                };

                int r = mfd < 0 ? -errno : !outcomes ? -ENOMEM : 0;

                if (r == 0)
                        r = mover_run(&opts, job->items, job->n_items, outcomes, &done.stats);
                if (r < 0) {
                        /* nothing was moved: say so for every file, and fail the run (not "cancelled") */
                        done.error = r;
                        for (size_t i = 0; i < job->n_items; i++) {
                                Msg m = { .type = MSG_FILE, .job = j, .index = i,
                                          .outcome = { .result = MOVE_RETRY, .why = MOVE_REASON_RUN_FAILED } };
                                snprintf(m.outcome.reason, sizeof m.outcome.reason, "run failed: %s",
                                         strerror(-r));
                                send_file_msg(o, &m);
                        }
                }
                send_msg(o, &done);
        }
        send_msg(o, &(Msg) { .type = MSG_ALL_DONE });
        return NULL;
}

/* Handles what the worker sent. Returns 1 once it said it is done with every job (the thread is joined
 * then), 0 otherwise. */
static int process_msgs(Optimizer *o) {
        char where[64];
        Msg msg;
        int r;

        while (read(o->pipe_fd[0], &msg, sizeof msg) == (ssize_t) sizeof msg) {
                OptJob *job = msg.job < o->n_jobs ? &o->jobs[msg.job] : NULL;

                switch (msg.type) {
                case MSG_FILE:
                        if (!job || msg.index >= job->n_items) {
                                ack_file(o);
                                break;
                        }
                        if (o->pausing && msg.outcome.why == MOVE_REASON_CANCELLED) {
                                ack_file(o);
                                break;   /* stays pending: resumed at the next start */
                        }
                        r = run_checkpoint(o->opts.db, job->run_id, job->positions[msg.index], &msg.outcome);
                        if (r < 0)
                                log_warning_errno(r, "Failed to checkpoint %s, ignoring: %m", job->items[msg.index].path);
                        ack_file(o);
                        size_t f = job->file_of[msg.index];
                        if (job->file_left[f] > 0 && --job->file_left[f] == 0)
                                o->files_done++;
                        o->bytes_done += move_item_bytes(&job->items[msg.index]);
                        if (msg.outcome.result == MOVE_DONE) {
                                if (!job->file_moved[f]) {
                                        job->file_moved[f] = true;
                                        o->moved_files++;
                                }
                                o->moved_bytes += msg.outcome.bytes;
                        } else if (msg.outcome.result == MOVE_SKIPPED || msg.outcome.result == MOVE_RETRY) {
                                (void) optimizer_add_skip(o, job->items[msg.index].path, msg.outcome.reason);
                        }
                        if (o->opts.progress)
                                o->opts.progress(o, o->opts.userdata);
                        break;
                case MSG_JOB_DONE:
                        if (!job)
                                break;
                        job->stats = msg.stats;
                        job->error = msg.error;
                        if (msg.error < 0) {
                                o->failed = true;
                                log_error_errno(msg.error, "Run %" PRIi64 " on %s failed: %m", job->run_id, job->mount);
                                (void) run_finish(o->opts.db, job->run_id, msg.error, NULL);
                                break;
                        }
                        if (o->pausing && msg.stats.cancelled) {
                                log_info("Run %" PRIi64 " on %s stopped (shutdown or the machine got busy); it resumes later",
                                         job->run_id, job->mount);
                                break;
                        }
                        o->cancelled = o->cancelled || msg.stats.cancelled;
                        o->out_of_space = o->out_of_space || msg.stats.out_of_space;
                        if (msg.stats.io_error < 0) {
                                o->failed = true;
                                log_error_errno(msg.stats.io_error,
                                                "Run %" PRIi64 " on %s stopped: the filesystem failed under it (%m); "
                                                "the files not moved stay where they are", job->run_id, job->mount);
                        }
                        r = run_finish(o->opts.db, job->run_id, 0, &msg.stats);
                        if (r < 0)
                                log_warning_errno(r, "Failed to record the end of run %" PRIi64 ": %m", job->run_id);
                        if (msg.stats.room_start != UINT64_MAX && msg.stats.room_cleared)
                                log_info("Run %" PRIi64 " on %s: cleared a window for the donor at %.1f MiB: %" PRIu64
                                         " other file(s), %.1f MiB, moved out of it%s",
                                         job->run_id, job->mount, msg.stats.room_start / 1048576.0,
                                         msg.stats.room_files, msg.stats.room_bytes / 1048576.0,
                                         msg.stats.room_used ? "" : "; the donor went elsewhere");
                        else if (msg.stats.room_start != UINT64_MAX)
                                log_info("Run %" PRIi64 " on %s: the window for the donor at %.1f MiB was not cleared (%"
                                         PRIu64 " other file(s), %.1f MiB, moved out of it; the others busy, changed or "
                                         "gone): the donor was made the usual way",
                                         job->run_id, job->mount, msg.stats.room_start / 1048576.0,
                                         msg.stats.room_files, msg.stats.room_bytes / 1048576.0);
                        log_info("Run %" PRIi64 " on %s %s: %" PRIu64 " files, %.1f MiB moved, donor in %" PRIu64
                                 " run(s) in %" PRIu64 " free range(s)%s",
                                 job->run_id, job->mount,
                                 msg.stats.io_error < 0 ? "failed" : msg.stats.cancelled ? "cancelled" : "finished",
                                 msg.stats.files_moved, msg.stats.bytes_moved / 1048576.0, msg.stats.donor_runs,
                                 msg.stats.donor_segments, mover_donor_where(&msg.stats, " ", where, sizeof where));
                        break;
                case MSG_ALL_DONE:
                        (void) pthread_join(o->thread, NULL);
                        o->thread_started = false;
                        return 1;
                }
        }
        return 0;
}

static int on_msg(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Optimizer *o = userdata;

        if (process_msgs(o) > 0)
                o->opts.finished(o, o->opts.userdata);  /* may free o */
        return 0;
}

int optimizer_start(const OptimizerOptions *opts, OptJob *jobs, size_t n_jobs, Optimizer **ret) {
        _cleanup_(optimizer_freep) Optimizer *o = NULL;
        int r;

        o = calloc(1, sizeof *o);
        if (!o) {
                opt_jobs_free(jobs, n_jobs);
                return -ENOMEM;
        }
        o->opts = *opts;
        o->jobs = jobs;
        o->n_jobs = n_jobs;
        o->pipe_fd[0] = o->pipe_fd[1] = o->ack_fd = -EBADF;
        o->id = n_jobs > 0 ? (uint64_t) jobs[0].run_id : 0;
        o->state_file = strdup(opts->state_file);
        if (!o->state_file)
                return -ENOMEM;
        o->opts.state_file = o->state_file;
        for (size_t j = 0; j < n_jobs; j++) {
                OptJob *job = &jobs[j];

                if (!job->file_of) {
                        r = move_items_files(job->items, job->n_items, &job->file_of, &job->n_files);
                        if (r < 0)
                                return r;
                }
                job->file_left = calloc(MAX(job->n_files, (size_t) 1), sizeof *job->file_left);
                job->file_moved = calloc(MAX(job->n_files, (size_t) 1), sizeof *job->file_moved);
                if (!job->file_left || !job->file_moved)
                        return -ENOMEM;
                for (size_t i = 0; i < job->n_items; i++) {
                        job->file_left[job->file_of[i]]++;
                        o->bytes_total += move_item_bytes(&job->items[i]);
                }
                o->files_total += job->n_files;
        }
        atomic_init(&o->cancel, false);
        if (pipe2(o->pipe_fd, O_CLOEXEC) < 0)
                return -errno;
        if (fcntl(o->pipe_fd[0], F_SETFL, O_NONBLOCK) < 0)
                return -errno;
        /* one count per MSG_FILE handled; the worker takes them one at a time */
        o->ack_fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
        if (o->ack_fd < 0)
                return -errno;
        r = sd_event_add_io(opts->event, &o->source, o->pipe_fd[0], EPOLLIN, on_msg, o);
        if (r < 0)
                return r;
        r = pthread_create(&o->thread, NULL, optimizer_thread, o);
        if (r != 0)
                return -r;
        o->thread_started = true;
        *ret = TAKE_PTR(o);
        return 0;
}

void optimizer_cancel(Optimizer *o) {
        o->pausing = false;
        atomic_store(&o->cancel, true);
}

void optimizer_pause(Optimizer *o) {
        o->pausing = true;
        atomic_store(&o->cancel, true);
}

bool optimizer_pausing(const Optimizer *o) {
        return o->pausing;
}

void optimizer_shutdown(Optimizer *o) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + 10 * USEC_PER_SEC;

        optimizer_pause(o);
        /* The mover stops between files or 8 MiB steps; a step (or the fdatasync before it) can take
         * long on a busy disk. Wait a bounded time: a run left behind stays 'running' and resumes at the
         * next start, and the kernel finishes the ioctl in progress even if we exit under it. */
        while (process_msgs(o) == 0) {
                if (now_usec(CLOCK_MONOTONIC) > deadline) {
                        log_warning("The mover did not stop within 10 s; leaving its run to be resumed at the next start");
                        o->abandoned = true;
                        break;
                }
                usleep(10000);
        }
        o->opts.finished(o, o->opts.userdata);
}
