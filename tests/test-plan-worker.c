/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The plan worker against plan-worker.h's contract, on a database file another connection writes: jobs run
 * on a thread of their own, one at a time in the order given, each done callback on the loop; a plan built
 * there is the one planner_build() gives on the loop's own connection, and sees what that connection
 * committed; stopping cancels what need not finish (the running job through *cancel, the queued ones
 * without running them), lets the others finish, and refuses new jobs; a database that cannot be opened
 * fails each job. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/db.h"
#include "plan/plan-worker.h"
#include "test-util.h"

#define BOOT_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static char dir[] = "/tmp/test-plan-worker.XXXXXX";
static pthread_t loop_thread;

typedef struct Seen {
        int r[8];
        size_t n;
        bool on_worker[8];
        bool ran[8];
        unsigned dones;
} Seen;

static void add_session(Db *db, const char *profile, unsigned file) {
        DbSessionFile f = {
                .key = { .fsid = 1, .handle_type = 1, .handle_len = 4 },
                .path = "/f",
                .size = 4096,
        };
        memcpy(f.key.handle, &file, sizeof file);
        ASSERT_OK(db_add_session(db, &(DbSession) {
                        .profile = profile,
                        .kind = PROFILE_APP,
                        .boot_id = BOOT_A,
                        .started_realtime_usec = 1000,
                        .uid = 0,
                        .files = &f,
                        .n_files = 1,
                }, 5, NULL));
}

static void run_until(sd_event *e, const unsigned *counter, unsigned want) {
        for (unsigned i = 0; *counter < want && i < 500; i++)
                ASSERT_OK(sd_event_run(e, 10000));
        ASSERT_EQ(*counter, want);
}

typedef struct Step {
        Seen *seen;
        size_t slot;
        int ret;
        unsigned sleep_ms;
        bool spin;              /* until cancelled */
} Step;

static int step_work(Db *db, const atomic_bool *cancel, void *userdata) {
        Step *s = userdata;

        ASSERT_TRUE(db);
        s->seen->on_worker[s->slot] = !pthread_equal(pthread_self(), loop_thread);
        s->seen->ran[s->slot] = true;
        usleep(s->sleep_ms * 1000);
        while (s->spin && !atomic_load(cancel))
                usleep(1000);
        return s->spin ? -ECANCELED : s->ret;
}

static void step_done(int r, void *userdata) {
        Step *s = userdata;

        ASSERT_TRUE(pthread_equal(pthread_self(), loop_thread));
        s->seen->r[s->slot] = r;
        s->seen->n = s->slot + 1 > s->seen->n ? s->slot + 1 : s->seen->n;
        s->seen->dones++;
}

TEST(order_and_threads) {
        _cleanup_(plan_worker_freep) PlanWorker *w = NULL;
        sd_event *e = NULL;
        Seen seen = {};
        Step steps[3];

        ASSERT_OK(sd_event_new(&e));
        ASSERT_OK(plan_worker_new(e, test_path(dir, "db"), &w));
        /* the first sleeps: the others wait behind it, and finish after it */
        for (size_t i = 0; i < 3; i++) {
                steps[i] = (Step) { .seen = &seen, .slot = i, .ret = (int) i + 40, .sleep_ms = i == 0 ? 100 : 0 };
                ASSERT_OK(plan_worker_submit(w, step_work, step_done, &steps[i], false));
        }
        ASSERT_EQ(seen.dones, 0);
        run_until(e, &seen.dones, 3);
        for (size_t i = 0; i < 3; i++) {
                ASSERT_EQ(seen.r[i], (int) i + 40);
                ASSERT_TRUE(seen.on_worker[i]);
        }
        w = plan_worker_free(w);
        sd_event_unref(e);
}

typedef struct Built {
        int r;
        Plan plan;
        unsigned dones;
} Built;

static void on_built(int r, Plan *plan, void *userdata) {
        Built *b = userdata;

        b->r = r;
        if (r >= 0) {
                b->plan = *plan;
                *plan = (Plan) {};   /* taken over */
        }
        b->dones++;
}

TEST(plan_as_on_the_loop) {
        _cleanup_(plan_worker_freep) PlanWorker *w = NULL;
        _cleanup_(db_freep) Db *db = NULL;
        FilesystemList none = {};
        PlanConfig cfg = { .max_hot_set_bytes = 1 << 30, .max_file_bytes = 1 << 30 };
        Plan direct = {};
        Built b = {};
        sd_event *e = NULL;

        ASSERT_OK(db_open(test_path(dir, "db"), &db));
        add_session(db, "/often", 1);
        add_session(db, "/often", 1);
        add_session(db, "/once", 2);
        ASSERT_OK(sd_event_new(&e));
        ASSERT_OK(plan_worker_new(e, test_path(dir, "db"), &w));

        ASSERT_OK(plan_worker_build(w, &(PlanInputs) { .config = cfg }, false, on_built, &b));
        run_until(e, &b.dones, 1);
        ASSERT_OK(b.r);
        ASSERT_OK(planner_build(db, &none, NULL, &cfg, NULL, NULL, &direct));
        ASSERT_EQ(b.plan.n_profiles, 2);
        ASSERT_EQ(b.plan.n_profiles, direct.n_profiles);
        for (size_t i = 0; i < direct.n_profiles; i++)
                ASSERT_STREQ(b.plan.profiles[i].name, direct.profiles[i].name);
        ASSERT_EQ(b.plan.n_skipped, direct.n_skipped);
        plan_done(&b.plan);
        plan_done(&direct);

        /* what the loop's connection commits later, the worker's (kept open) sees */
        add_session(db, "/new", 3);
        b = (Built) {};
        ASSERT_OK(plan_worker_build(w, &(PlanInputs) { .config = cfg }, false, on_built, &b));
        run_until(e, &b.dones, 1);
        ASSERT_OK(b.r);
        ASSERT_EQ(b.plan.n_profiles, 3);
        plan_done(&b.plan);
        w = plan_worker_free(w);
        sd_event_unref(e);
}

TEST(stop) {
        _cleanup_(plan_worker_freep) PlanWorker *w = NULL;
        sd_event *e = NULL;
        Seen seen = {};
        Step spin = { .seen = &seen, .slot = 0, .spin = true };
        Step keep = { .seen = &seen, .slot = 1, .ret = 7, .sleep_ms = 50 };
        Step queued = { .seen = &seen, .slot = 2, .ret = 9 };

        ASSERT_OK(sd_event_new(&e));
        ASSERT_OK(plan_worker_new(e, test_path(dir, "db"), &w));
        ASSERT_OK(plan_worker_submit(w, step_work, step_done, &spin, false));
        ASSERT_OK(plan_worker_submit(w, step_work, step_done, &keep, true));
        ASSERT_OK(plan_worker_submit(w, step_work, step_done, &queued, false));
        while (!seen.ran[0])
                usleep(1000);
        /* every done callback has run when it returns, here on the caller's (the loop's) thread */
        plan_worker_stop(w, 5 * USEC_PER_SEC);
        ASSERT_EQ(seen.dones, 3);
        ASSERT_ERROR(seen.r[0], ECANCELED);
        ASSERT_EQ(seen.r[1], 7);
        ASSERT_TRUE(seen.ran[1]);
        ASSERT_ERROR(seen.r[2], ECANCELED);
        ASSERT_TRUE(!seen.ran[2]);
        ASSERT_ERROR(plan_worker_submit(w, step_work, step_done, &queued, false), ECANCELED);

        /* no time to finish: a job that must finish is cancelled as well */
        w = plan_worker_free(w);
        seen = (Seen) {};
        ASSERT_OK(plan_worker_new(e, test_path(dir, "db"), &w));
        spin.slot = 0;
        ASSERT_OK(plan_worker_submit(w, step_work, step_done, &spin, true));
        while (!seen.ran[0])
                usleep(1000);
        w = plan_worker_free(w);
        ASSERT_EQ(seen.dones, 1);
        ASSERT_ERROR(seen.r[0], ECANCELED);
        sd_event_unref(e);
}

TEST(no_database) {
        _cleanup_(plan_worker_freep) PlanWorker *w = NULL;
        sd_event *e = NULL;
        Seen seen = {};
        Step s = { .seen = &seen, .slot = 0, .ret = 1 };

        ASSERT_OK(sd_event_new(&e));
        ASSERT_OK(plan_worker_new(e, test_path(dir, "missing/db"), &w));
        ASSERT_OK(plan_worker_submit(w, step_work, step_done, &s, false));
        run_until(e, &seen.dones, 1);
        ASSERT_TRUE(seen.r[0] < 0);
        ASSERT_TRUE(!seen.ran[0]);
        w = plan_worker_free(w);
        sd_event_unref(e);
}

int main(void) {
        char cmd[PATH_MAX + 16];

        loop_thread = pthread_self();
        if (!mkdtemp(dir)) {
                fprintf(stderr, "mkdtemp %s: %m\n", dir);
                return EXIT_FAILURE;
        }
        RUN(order_and_threads);
        RUN(plan_as_on_the_loop);
        RUN(stop);
        RUN(no_database);
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        (void) system(cmd);
        return EXIT_SUCCESS;
}
