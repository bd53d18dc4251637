/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The idle policy in the main loop: every 10 s (every second while a run it started is going) read the
 * machine's state, decide with idle.c whether an optimization may start, start or resume one, and pause
 * it (leaving it resumable) as soon as the machine gets busy. An administrator's `seeklessctl optimize`
 * is not paused: it runs regardless of idleness. `seeklessctl optimize --when-idle` queues a request
 * here instead: it starts when the machine is idle, whatever MinIntervalHours= says, and its run pauses
 * and resumes like one the policy started. When MinIntervalHours= is all that holds a run back, the
 * layout of every profile is compared with how it was right after the last run (at most hourly). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-login.h>
#include <time.h>
#include <unistd.h>

#include "policy/idle.h"
#include "common/log.h"
#include "manager/manager.h"

#define IDLE_CHECK_USEC (10 * USEC_PER_SEC)
#define IDLE_CHECK_RUNNING_USEC (1 * USEC_PER_SEC)

static bool graphical_sessions(void) {
        _cleanup_strv_free_ char **sessions = NULL;
        int n = sd_get_sessions(&sessions);

        for (int i = 0; i < n && sessions && sessions[i]; i++) {
                _cleanup_free_ char *type = NULL;
                if (sd_session_get_type(sessions[i], &type) >= 0 &&
                    (streq(type, "x11") || streq(type, "wayland") || streq(type, "mir")))
                        return true;
        }
        return false;
}

static int on_logind_idle(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        int b = 0;

        if (!sd_bus_message_get_error(reply) && sd_bus_message_read(reply, "v", "b", &b) >= 0)
                m->idle.logind_idle = b;
        return 0;
}

/* Asked asynchronously; the decision uses the last answer (not idle until logind said so). */
static void ask_logind(Manager *m) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;

        if (!m->bus ||
            sd_bus_message_new_method_call(m->bus, &call, "org.freedesktop.login1", "/org/freedesktop/login1",
                                           "org.freedesktop.DBus.Properties", "Get") < 0 ||
            sd_bus_message_append(call, "ss", "org.freedesktop.login1.Manager", "IdleHint") < 0 ||
            sd_bus_message_set_auto_start(call, false) < 0)
                return;
        (void) sd_bus_call_async(m->bus, NULL, call, on_logind_idle, m, 0);
}

static uint64_t last_run_realtime(Manager *m) {
        uint64_t last = m->idle.last_noop_realtime_usec;

        for (size_t i = 0; i < m->filesystems.n; i++) {
                DbRunInfo r = {};
                if (db_run_last(m->db, m->filesystems.items[i].fsid, &r) >= 0) {
                        last = MAX(last, r.finished);
                        free(r.mount);
                }
        }
        return last;
}

/* A profile recorded since the last run that no run has laid out yet (no "after" snapshot). A new
 * session merged into a profile that was laid out before is not enough: sessions reorder a few files all
 * the time, and rewriting the profile for that would cost more than it gains. Real drift shows in the
 * layout check (MaxQualityLossPercent=). */
static bool profiles_changed_since(Manager *m, uint64_t since) {
        DbProfileInfo *p = NULL;
        size_t n = 0;
        bool changed = false;

        if (db_list_profiles(m->db, &p, &n) < 0)
                return false;
        for (size_t i = 0; i < n && !changed; i++) {
                DbQuality after = {};
                if (p[i].updated_realtime_usec > since && db_quality_get(m->db, p[i].name, QUALITY_AFTER, &after) < 0)
                        changed = true;
        }
        db_profile_infos_free(p, n);
        return changed;
}

/* A run was paused (or interrupted) on a filesystem we watch and waits to be resumed. */
static bool run_paused(Manager *m) {
        DbRunInfo *runs = NULL;
        size_t n = 0;
        bool found = false;

        if (m->runs.optimizer || db_runs_unfinished(m->db, &runs, &n) < 0)
                return false;
        for (size_t i = 0; i < n; i++)
                if (filesystem_list_find_fsid(&m->filesystems, runs[i].fsid))
                        found = true;
        db_run_infos_free(runs, n);
        return found;
}

static void quality_forget(Manager *m) {
        m->idle.quality_worst_profile = mfree(m->idle.quality_worst_profile);
        m->idle.quality_worst_percent = 0;
}

static void gather(Manager *m, IdleInputs *in) {
        struct timespec ts;
        long n_cpus = sysconf(_SC_NPROCESSORS_ONLN);

        *in = (IdleInputs) {
                .on_ac = true,
                .n_cpus = n_cpus > 0 ? (unsigned) n_cpus : 1,
                .now_usec = now_usec(CLOCK_MONOTONIC),
                .now_realtime_usec = now_usec(CLOCK_REALTIME),
                .busy_since_usec = m->idle.busy_since_usec,
        };
        (void) power_on_ac("/sys/class/power_supply", &in->on_ac);
        (void) psi_read_some_avg10("/proc/pressure/io", &in->io_some_avg10);
        (void) loadavg_read("/proc/loadavg", &in->load1);
        clock_gettime(CLOCK_BOOTTIME, &ts);
        in->uptime_usec = (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
        in->graphical_sessions = graphical_sessions();
        if (in->graphical_sessions)
                ask_logind(m);
        in->seats_idle = m->idle.logind_idle;
        in->last_run_realtime_usec = last_run_realtime(m);
        in->profiles_changed = profiles_changed_since(m, in->last_run_realtime_usec);
        in->requested = m->idle.request_realtime_usec != 0;
        in->run_paused = run_paused(m);

        /* A run ended (or found nothing to move) since the last layout check: its "after" snapshot is the
         * layout now, so there is nothing to compare for a while. */
        if (in->last_run_realtime_usec != m->idle.quality_last_run) {
                m->idle.quality_last_run = in->last_run_realtime_usec;
                m->idle.quality_checked_usec = in->now_usec;
                quality_forget(m);
        }
        in->worst_profile = m->idle.quality_worst_profile;
        in->worst_loss_percent = m->idle.quality_worst_percent;
}

/* Reads the machine's state into in; a busy machine restarts the IdleSec= clock. */
static bool observe(Manager *m, const IdleConfig *ic, IdleInputs *in, char *busy, size_t busy_size) {
        bool is_busy;

        gather(m, in);
        is_busy = idle_inputs_busy(ic, in, busy, busy_size);
        if (is_busy) {
                m->idle.busy_since_usec = in->now_usec;
                in->busy_since_usec = in->now_usec;
        }
        return is_busy;
}

#define QUALITY_CHECK_USEC USEC_PER_HOUR

/* MaxQualityLossPercent=: each profile's modeled read time now against its "after" snapshot, taken when
 * the last run ended. Planning reads the extents of every profile file, so this runs only when the
 * interval is all that keeps a run from starting (the machine is idle then), and at most hourly. */
static bool quality_check_due(Manager *m, const IdleConfig *ic, const IdleInputs *in) {
        if (ic->max_quality_loss_percent <= 0 || m->recording.boot)
                return false;
        if (m->idle.quality_checked_usec != 0 &&
            in->now_usec - m->idle.quality_checked_usec < QUALITY_CHECK_USEC)
                return false;
        return idle_only_interval_blocks(ic, in);
}

static void schedule_next(Manager *m, uint64_t usec);

static void on_quality_checked(int r, Plan *plan, void *userdata) {
        Manager *m = userdata;

        m->idle.quality_checking = false;
        if (r == -ECANCELED)
                return;   /* stopping */
        if (r < 0)
                log_warning_errno(r, "Idle: failed to check the layout quality, ignoring: %m");
        for (size_t i = 0; r >= 0 && i < plan->n_profiles; i++) {
                DbQuality after = {};
                double loss;
                char *name;

                if (db_quality_get(m->db, plan->profiles[i].name, QUALITY_AFTER, &after) < 0)
                        continue;   /* never optimized: a new profile counts as a changed one */
                loss = idle_quality_loss_percent(after.modeled_ms, plan->profiles[i].before.modeled_read_ms);
                if (loss <= m->idle.quality_worst_percent)
                        continue;
                name = strdup(plan->profiles[i].name);
                if (!name)
                        break;
                free(m->idle.quality_worst_profile);
                m->idle.quality_worst_profile = name;
                m->idle.quality_worst_percent = loss;
        }
        if (r >= 0 && m->idle.quality_worst_profile)
                log_info("Idle: layout check: '%s' reads %.1f%% slower (modeled) than after the last run",
                         m->idle.quality_worst_profile, m->idle.quality_worst_percent);
        else if (r >= 0)
                log_info("Idle: layout check: no profile reads slower (modeled) than after the last run");
        /* the decision it held back, now */
        schedule_next(m, 0);
}

/* The check plans every profile: on the worker. Returns whether it is under way (the decision waits). */
static bool check_quality(Manager *m) {
        int r;

        m->idle.quality_checked_usec = now_usec(CLOCK_MONOTONIC);
        quality_forget(m);

        r = manager_plan(m, NULL, false, on_quality_checked, m);
        if (r < 0) {
                log_warning_errno(r, "Idle: failed to check the layout quality, ignoring: %m");
                return false;
        }
        m->idle.quality_checking = true;
        return true;
}

/* The decision about starting a run now, with the layout check when it is due. why gets the reason.
 * *ret_pending: the check is under way, nothing is decided (it decides when it is done). */
static bool may_start(Manager *m, const IdleConfig *ic, IdleInputs *in, char *why, size_t n, bool *ret_pending) {
        *ret_pending = m->idle.quality_checking || (quality_check_due(m, ic, in) && check_quality(m));
        if (*ret_pending)
                return false;
        in->worst_profile = m->idle.quality_worst_profile;
        in->worst_loss_percent = m->idle.quality_worst_percent;
        if (idle_decide(ic, in, why, n) != IDLE_GO)
                return false;
        if (m->recording.boot) {
                snprintf(why, n, "the boot is being recorded");
                return false;
        }
        return true;
}

/* The watched filesystems relocation is allowed on; NULL-terminated. */
static char **allowed_mounts(Manager *m) {
        char **l = calloc(m->filesystems.n + 1, sizeof *l);
        size_t k = 0;

        for (size_t i = 0; l && i < m->filesystems.n; i++) {
                char why[128];
                if (!manager_relocation_refusal(m, &m->filesystems.items[i], why, sizeof why))
                        l[k++] = strdup(m->filesystems.items[i].mount);
        }
        return l;
}

/* The run that just started is the policy's: it pauses when the machine gets busy. */
_printf_(2, 3)
static void set_running(Manager *m, const char *format, ...) {
        va_list ap;

        m->idle.auto_run = true;
        va_start(ap, format);
        (void) vsnprintf(m->idle.auto_run_why, sizeof m->idle.auto_run_why, format, ap);
        va_end(ap);
        snprintf(m->idle.status, sizeof m->idle.status, "optimizing (%s)", m->idle.auto_run_why);
}

static void on_idle_started(Manager *m, int r, uint64_t id, Plan *plan, void *userdata) {
        _cleanup_free_ char *lifted = userdata;

        if (r == -ECANCELED)
                return;   /* stopping */
        if (r < 0) {
                log_warning_errno(r, "Idle: failed to start an optimization: %m");
                m->idle.last_noop_realtime_usec = now_usec(CLOCK_REALTIME);
                return;
        }
        if (id == 0) {
                /* nothing to move: don't plan again before MinIntervalHours= or new profiles */
                m->idle.last_noop_realtime_usec = now_usec(CLOCK_REALTIME);
                return;
        }
        if (lifted) {
                set_running(m, "started when idle: %s", lifted);
                log_info("Idle: started optimization %" PRIu64 " (%s)", id, lifted);
        } else {
                set_running(m, "started when idle");
                log_info("Idle: started optimization %" PRIu64, id);
        }
        schedule_next(m, IDLE_CHECK_RUNNING_USEC);
}

/* why: idle_check()'s text, "idle for 6 min" with what lifted MinIntervalHours= after a "; ". */
static void start_when_idle(Manager *m, const char *why) {
        _cleanup_strv_free_ char **mounts = NULL;
        const char *lifted = strstr(why, "; ");
        char *what = NULL;
        int r;

        r = manager_resume_runs(m);
        if (r > 0) {
                set_running(m, "resumed when idle");
                log_info("Idle: resuming the interrupted optimization");
                return;
        }
        mounts = allowed_mounts(m);
        if (!mounts || !mounts[0])
                return;
        if (lifted && !(what = strdup(lifted + 2)))
                return;
        r = manager_optimize(m, mounts, on_idle_started, what);
        if (r < 0) {
                free(what);
                log_warning_errno(r, "Idle: failed to start an optimization: %m");
                m->idle.last_noop_realtime_usec = now_usec(CLOCK_REALTIME);
        }
}

/* "every watched filesystem" or "/, /home". */
static const char *mounts_text(char *const *mounts, char *buf, size_t n) {
        size_t k = 0;

        if (!mounts || !mounts[0])
                return "every watched filesystem";
        buf[0] = '\0';
        for (size_t i = 0; mounts[i] && k < n; i++)
                k += (size_t) snprintf(buf + k, n - k, "%s%s", i > 0 ? ", " : "", mounts[i]);
        return buf;
}

static void request_clear(Manager *m) {
        m->idle.request_realtime_usec = 0;
        strv_free(m->idle.request_mounts);
        m->idle.request_mounts = NULL;
}

typedef struct RequestCall {
        ManagerQueueDone done;
        void *userdata;
} RequestCall;

static void on_request_started(Manager *m, int r, uint64_t id, Plan *plan, void *userdata) {
        _cleanup_free_ RequestCall *c = userdata;

        if (r < 0 && r != -ECANCELED)
                log_warning_errno(r, "Idle: failed to start the queued optimization, dropping it: %m");
        else if (r >= 0 && id == 0)
                log_info("Idle: the queued optimization found nothing to move");
        else if (r >= 0) {
                set_running(m, "queued by an administrator, started when idle");
                log_info("Idle: started the queued optimization %" PRIu64, id);
        }
        if (m->runs.optimizer)
                schedule_next(m, IDLE_CHECK_RUNNING_USEC);
        if (c->done)
                c->done(m, r, id, c->userdata);
}

/* The queued request's turn: run it as an administrator's optimize would, but pausable. done (may be NULL)
 * is called once it started. */
static int start_request(Manager *m, ManagerQueueDone done, void *userdata) {
        _cleanup_strv_free_ char **mounts = TAKE_PTR(m->idle.request_mounts);
        RequestCall *c;
        int r;

        request_clear(m);
        c = calloc(1, sizeof *c);
        if (c)
                *c = (RequestCall) { .done = done, .userdata = userdata };
        r = c ? manager_optimize(m, mounts, on_request_started, c) : -ENOMEM;
        if (r < 0) {
                free(c);
                return log_warning_errno(r, "Idle: failed to start the queued optimization, dropping it: %m");
        }
        return 0;
}

static void schedule_next(Manager *m, uint64_t usec) {
        if (!m->idle.source)
                return;
        (void) sd_event_source_set_time_relative(m->idle.source, usec);
        (void) sd_event_source_set_enabled(m->idle.source, SD_EVENT_ONESHOT);
}

static void idle_tick(Manager *m) {
        IdleConfig ic;
        IdleInputs in;
        char why[384], busy[160];
        bool is_busy, pending;

        idle_config_from_config(&ic, &m->config);
        is_busy = observe(m, &ic, &in, busy, sizeof busy);

        /* being planned, or its "after" snapshot being taken: nothing to pause or start */
        if (m->runs.preparing || m->runs.finishing)
                return;
        if (m->runs.optimizer) {
                if (!m->idle.auto_run)
                        snprintf(m->idle.status, sizeof m->idle.status,
                                 "optimizing (started by an administrator)");
                else if (is_busy && !optimizer_pausing(m->runs.optimizer)) {
                        /* pause: stop between files, leave the run to be resumed when idle again */
                        log_info("Idle: pausing the optimization: %s", busy);
                        optimizer_pause(m->runs.optimizer);
                        snprintf(m->idle.status, sizeof m->idle.status, "pausing: %s", busy);
                } else if (!optimizer_pausing(m->runs.optimizer))
                        snprintf(m->idle.status, sizeof m->idle.status, "optimizing (%s)",
                                 m->idle.auto_run_why);
                return;
        }

        m->idle.auto_run = false;
        if (!may_start(m, &ic, &in, why, sizeof why, &pending)) {
                if (!pending)
                        snprintf(m->idle.status, sizeof m->idle.status, "waiting: %s", why);
                return;
        }
        snprintf(m->idle.status, sizeof m->idle.status, "idle: %s", why);
        if (in.requested)
                (void) start_request(m, NULL, NULL);
        else
                start_when_idle(m, why);
}

static int on_idle_check(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        idle_tick(m);
        schedule_next(m, m->runs.optimizer && m->idle.auto_run ? IDLE_CHECK_RUNNING_USEC : IDLE_CHECK_USEC);
        manager_properties_announce(m);
        return 0;
}

int manager_idle_queue(Manager *m, char **mounts, ManagerQueueDone done, void *userdata) {
        IdleConfig ic;
        IdleInputs in;
        char why[384], busy[160], text[256];
        bool pending;
        int r;

        strv_free(m->idle.request_mounts);
        m->idle.request_mounts = mounts;
        m->idle.request_realtime_usec = now_usec(CLOCK_REALTIME);
        log_info("Queued an optimization of %s for when the machine is idle",
                 mounts_text(m->idle.request_mounts, text, sizeof text));

        if (m->runs.optimizer || m->runs.preparing)
                return 0;   /* after this one, when idle; status says what runs now */

        idle_config_from_config(&ic, &m->config);
        (void) observe(m, &ic, &in, busy, sizeof busy);
        if (!may_start(m, &ic, &in, why, sizeof why, &pending)) {
                if (!pending)
                        snprintf(m->idle.status, sizeof m->idle.status, "waiting: %s", why);
                return 0;
        }
        snprintf(m->idle.status, sizeof m->idle.status, "idle: %s", why);
        r = start_request(m, done, userdata);
        if (r < 0)
                return r;
        return 1;
}

bool manager_idle_drop(Manager *m) {
        DbRunInfo *runs = NULL;
        size_t n = 0;
        bool dropped = false;

        if (m->idle.request_realtime_usec != 0) {
                request_clear(m);
                log_info("Dropped the queued optimization");
                dropped = true;
        }
        /* Paused runs would resume by themselves. While a run is going there are none: Cancel stops it. */
        if (!m->runs.optimizer && db_runs_unfinished(m->db, &runs, &n) >= 0) {
                for (size_t i = 0; i < n; i++) {
                        (void) db_run_finish(m->db, runs[i].id, RUN_CANCELLED, runs[i].donor_runs,
                                             runs[i].moved_files, runs[i].moved_bytes);
                        log_info("Closed paused run %" PRIi64 " on %s", runs[i].id, runs[i].mount);
                        dropped = true;
                }
                db_run_infos_free(runs, n);
        }
        if (dropped)
                schedule_next(m, 0);   /* status says what happens now */
        return dropped;
}

int manager_idle_start(Manager *m) {
        int r;

        m->idle.busy_since_usec = now_usec(CLOCK_MONOTONIC);
        /* the first layout check may come as soon as only MinIntervalHours= holds a run back */
        m->idle.quality_last_run = last_run_realtime(m);
        m->idle.quality_checked_usec = 0;
        snprintf(m->idle.status, sizeof m->idle.status, "starting");
        r = sd_event_add_time_relative(m->event, &m->idle.source, CLOCK_MONOTONIC, IDLE_CHECK_RUNNING_USEC, 0,
                                       on_idle_check, m);
        if (r < 0)
                return r;
        /* below the recorder's sources: reading fanotify always comes first */
        return sd_event_source_set_priority(m->idle.source, SD_EVENT_PRIORITY_IDLE);
}

void manager_idle_done(Manager *m) {
        m->idle.source = sd_event_source_disable_unref(m->idle.source);
        request_clear(m);
        quality_forget(m);
}
