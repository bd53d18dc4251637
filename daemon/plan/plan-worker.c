/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "plan/plan-worker.h"
#include "common/time-util.h"

typedef struct Job {
        struct Job *next;
        PlanWorkFunc work;
        PlanDoneFunc done;
        void *userdata;
        bool finish_on_stop;
        atomic_bool cancel;
        int result;
} Job;

struct PlanWorker {
        char *db_path;
        sd_event_source *source;
        int pipe_fd[2];                 /* finished jobs (their pointers), thread -> loop */

        pthread_t thread;
        bool thread_started;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        /* under lock */
        Job *queue, **queue_tail;
        Job *running;
        bool stopping;                  /* the thread exits once the queue is empty */
};

static void *worker_thread(void *userdata) {
        PlanWorker *w = userdata;
        _cleanup_(db_freep) Db *db = NULL;

        pthread_mutex_lock(&w->lock);
        for (;;) {
                Job *job;

                while (!w->queue && !w->stopping)
                        pthread_cond_wait(&w->wake, &w->lock);
                job = w->queue;
                if (!job)
                        break;
                w->queue = job->next;
                if (!w->queue)
                        w->queue_tail = &w->queue;
                w->running = job;
                pthread_mutex_unlock(&w->lock);

                if (atomic_load(&job->cancel))
                        job->result = -ECANCELED;
                else {
                        /* opened at the first job (again after a failure): a daemon that never plans
                         * keeps one connection */
                        job->result = db ? 0 : db_open(w->db_path, &db);
                        if (job->result >= 0)
                                job->result = job->work(db, &job->cancel, job->userdata);
                }

                pthread_mutex_lock(&w->lock);
                w->running = NULL;
                pthread_mutex_unlock(&w->lock);
                /* a pointer is far below PIPE_BUF: written whole; the loop drains the pipe */
                while (write(w->pipe_fd[1], &job, sizeof job) < 0 && errno == EINTR)
                        ;
                pthread_mutex_lock(&w->lock);
        }
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

/* Runs the done callbacks of the jobs the thread finished. */
static void process_done(PlanWorker *w) {
        Job *job;

        while (read(w->pipe_fd[0], &job, sizeof job) == (ssize_t) sizeof job) {
                job->done(job->result, job->userdata);
                free(job);
        }
}

static int on_done(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        process_done(userdata);
        return 0;
}

int plan_worker_new(sd_event *event, const char *db_path, PlanWorker **ret) {
        _cleanup_(plan_worker_freep) PlanWorker *w = NULL;
        int r;

        w = calloc(1, sizeof *w);
        if (!w)
                return -ENOMEM;
        w->pipe_fd[0] = w->pipe_fd[1] = -EBADF;
        w->queue_tail = &w->queue;
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->wake, NULL);
        w->db_path = strdup(db_path);
        if (!w->db_path)
                return -ENOMEM;
        if (pipe2(w->pipe_fd, O_CLOEXEC) < 0)
                return -errno;
        if (fcntl(w->pipe_fd[0], F_SETFL, O_NONBLOCK) < 0)
                return -errno;
        r = sd_event_add_io(event, &w->source, w->pipe_fd[0], EPOLLIN, on_done, w);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(w);
        return 0;
}

int plan_worker_submit(PlanWorker *w, PlanWorkFunc work, PlanDoneFunc done, void *userdata, bool finish_on_stop) {
        Job *job;
        int r;

        if (w->stopping)
                return -ECANCELED;
        if (!w->thread_started) {
                r = pthread_create(&w->thread, NULL, worker_thread, w);
                if (r != 0)
                        return -r;
                w->thread_started = true;
        }
        job = calloc(1, sizeof *job);
        if (!job)
                return -ENOMEM;
        *job = (Job) { .work = work, .done = done, .userdata = userdata, .finish_on_stop = finish_on_stop };
        atomic_init(&job->cancel, false);

        pthread_mutex_lock(&w->lock);
        *w->queue_tail = job;
        w->queue_tail = &job->next;
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->lock);
        return 0;
}

/* Cancel the queued and running jobs (all, or those that need not finish). */
static void cancel_jobs(PlanWorker *w, bool all) {
        pthread_mutex_lock(&w->lock);
        for (Job *j = w->queue; j; j = j->next)
                if (all || !j->finish_on_stop)
                        atomic_store(&j->cancel, true);
        if (w->running && (all || !w->running->finish_on_stop))
                atomic_store(&w->running->cancel, true);
        pthread_mutex_unlock(&w->lock);
}

void plan_worker_stop(PlanWorker *w, uint64_t timeout_usec) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + timeout_usec;
        bool all = false;

        pthread_mutex_lock(&w->lock);
        w->stopping = true;
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->lock);
        if (!w->thread_started)
                return;
        cancel_jobs(w, false);
        /* a cancelled plan stops within a file; what must finish gets timeout_usec */
        for (;;) {
                process_done(w);
                if (pthread_tryjoin_np(w->thread, NULL) == 0)
                        break;
                if (!all && now_usec(CLOCK_MONOTONIC) >= deadline) {
                        cancel_jobs(w, true);
                        all = true;
                }
                (void) poll(&(struct pollfd) { .fd = w->pipe_fd[0], .events = POLLIN }, 1, 10);
        }
        w->thread_started = false;
        process_done(w);
}

PlanWorker *plan_worker_free(PlanWorker *w) {
        if (!w)
                return NULL;
        plan_worker_stop(w, 0);
        sd_event_source_disable_unref(w->source);
        safe_close(w->pipe_fd[0]);
        safe_close(w->pipe_fd[1]);
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->wake);
        free(w->db_path);
        free(w);
        return NULL;
}

void plan_inputs_done(PlanInputs *in) {
        for (size_t i = 0; in->refusals && i < in->filesystems.n; i++)
                free(in->refusals[i]);
        free(in->refusals);
        free(in->allowed_breaks);
        strv_free(in->mounts);
        filesystem_list_clear(&in->filesystems);
        *in = (PlanInputs) {};
}

typedef struct BuildJob {
        PlanInputs in;
        Plan plan;
        PlanBuiltFunc done;
        void *userdata;
} BuildJob;

static int build_work(Db *db, const atomic_bool *cancel, void *userdata) {
        BuildJob *b = userdata;
        PlanConfig cfg = b->in.config;

        cfg.cancel = cancel;
        return planner_build(db, &b->in.filesystems, b->in.mounts, &cfg, b->in.allowed_breaks, b->in.refusals,
                             &b->plan);
}

static void build_done(int r, void *userdata) {
        BuildJob *b = userdata;

        b->done(r, &b->plan, b->userdata);
        plan_done(&b->plan);
        plan_inputs_done(&b->in);
        free(b);
}

int plan_worker_build(PlanWorker *w, PlanInputs *in, bool finish_on_stop, PlanBuiltFunc done, void *userdata) {
        BuildJob *b = calloc(1, sizeof *b);
        int r;

        if (!b) {
                plan_inputs_done(in);
                return -ENOMEM;
        }
        *b = (BuildJob) { .in = *in, .done = done, .userdata = userdata };
        *in = (PlanInputs) {};
        r = plan_worker_submit(w, build_work, build_done, b, finish_on_stop);
        if (r < 0) {
                plan_inputs_done(&b->in);
                free(b);
        }
        return r;
}
