/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The idle policy in the main loop: every 10 s (every second while a run it started is going) read the
 * machine's state, decide with idle.c whether an optimization may start, start or resume one, and pause
 * it (leaving it resumable) as soon as the machine gets busy. An administrator's `seeklessctl optimize`
 * is not paused: it runs regardless of idleness. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-login.h>
#include <time.h>
#include <unistd.h>

#include "idle.h"
#include "log.h"
#include "manager.h"

#define IDLE_CHECK_USEC (10 * USEC_PER_SEC)
#define IDLE_CHECK_RUNNING_USEC (1 * USEC_PER_SEC)

const char *manager_relocation_refusal(Manager *m, const Filesystem *fs, char *buf, size_t n) {
        IdleConfig ic;
        bool rot = true;
        int r;

        idle_config_from_config(&ic, &m->config);
        r = block_device_rotational("/sys", fs->dev, &rot);
        if (idle_device_allowed(&ic, r < 0 ? r : (int) rot, buf, n))
                return NULL;
        return buf;
}

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
                m->logind_idle = b;
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
        uint64_t last = m->last_noop_realtime_usec;

        for (size_t i = 0; i < m->filesystems.n; i++) {
                DbRunInfo r = {};
                if (db_run_last(m->db, m->filesystems.items[i].fsid, &r) >= 0) {
                        last = MAX(last, r.finished);
                        free(r.mount);
                        free(r.state);
                }
        }
        return last;
}

static bool profiles_changed_since(Manager *m, uint64_t since) {
        DbProfileInfo *p = NULL;
        size_t n = 0;
        bool changed = false;

        if (db_list_profiles(m->db, &p, &n) < 0)
                return false;
        for (size_t i = 0; i < n; i++)
                if (p[i].updated_realtime_usec > since)
                        changed = true;
        db_profile_infos_free(p, n);
        return changed;
}

static void gather(Manager *m, IdleInputs *in) {
        struct timespec ts;
        long n_cpus = sysconf(_SC_NPROCESSORS_ONLN);

        *in = (IdleInputs) {
                .on_ac = true,
                .n_cpus = n_cpus > 0 ? (unsigned) n_cpus : 1,
                .now_usec = now_usec(CLOCK_MONOTONIC),
                .now_realtime_usec = now_usec(CLOCK_REALTIME),
                .busy_since_usec = m->busy_since_usec,
        };
        (void) power_on_ac("/sys/class/power_supply", &in->on_ac);
        (void) psi_read_some_avg10("/proc/pressure/io", &in->io_some_avg10);
        (void) loadavg_read("/proc/loadavg", &in->load1);
        clock_gettime(CLOCK_BOOTTIME, &ts);
        in->uptime_usec = (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
        in->graphical_sessions = graphical_sessions();
        if (in->graphical_sessions)
                ask_logind(m);
        in->seats_idle = m->logind_idle;
        in->last_run_realtime_usec = last_run_realtime(m);
        in->profiles_changed = profiles_changed_since(m, in->last_run_realtime_usec);
        /* Degradation of an optimized layout is only noticed at the next MinIntervalHours= check. */
        in->quality_degraded = false;
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

static void start_when_idle(Manager *m) {
        _cleanup_strv_free_ char **mounts = NULL;
        Plan plan = {};
        uint64_t id = 0;
        int r;

        if (m->boot)
                return;   /* recording the boot: not now */
        r = manager_resume_runs(m);
        if (r > 0) {
                m->auto_run = true;
                log_info("Idle: resuming the interrupted optimization");
                return;
        }
        mounts = allowed_mounts(m);
        if (!mounts || !mounts[0])
                return;
        r = manager_optimize(m, mounts, &id, &plan);
        plan_done(&plan);
        if (r < 0) {
                log_warning_errno(r, "Idle: failed to start an optimization: %m");
                m->last_noop_realtime_usec = now_usec(CLOCK_REALTIME);
                return;
        }
        if (id == 0) {
                /* nothing to move: don't plan again before MinIntervalHours= or new profiles */
                m->last_noop_realtime_usec = now_usec(CLOCK_REALTIME);
                return;
        }
        m->auto_run = true;
        log_info("Idle: started optimization %" PRIu64, id);
}

static int on_idle_check(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        IdleConfig ic;
        IdleInputs in;
        char why[160], busy[160];
        bool is_busy;

        idle_config_from_config(&ic, &m->config);
        gather(m, &in);
        is_busy = idle_inputs_busy(&ic, &in, busy, sizeof busy);
        if (is_busy) {
                m->busy_since_usec = in.now_usec;
                in.busy_since_usec = in.now_usec;
        }

        if (m->optimizer) {
                if (!m->auto_run)
                        snprintf(m->idle_status, sizeof m->idle_status, "optimizing (started by an administrator)");
                else if (is_busy && !m->optimizer->shutdown) {
                        /* pause: stop between files, leave the run to be resumed when idle again */
                        log_info("Idle: pausing the optimization: %s", busy);
                        m->optimizer->shutdown = true;
                        optimizer_cancel(m->optimizer);
                        snprintf(m->idle_status, sizeof m->idle_status, "pausing: %s", busy);
                } else if (!m->optimizer->shutdown)
                        snprintf(m->idle_status, sizeof m->idle_status, "optimizing (started when idle)");
        } else {
                m->auto_run = false;
                if (idle_decide(&ic, &in, why, sizeof why) == IDLE_GO) {
                        snprintf(m->idle_status, sizeof m->idle_status, "idle: %s", why);
                        start_when_idle(m);
                } else
                        snprintf(m->idle_status, sizeof m->idle_status, "waiting: %s", why);
        }

        (void) sd_event_source_set_time_relative(s, m->optimizer && m->auto_run ? IDLE_CHECK_RUNNING_USEC
                                                                                : IDLE_CHECK_USEC);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

int manager_idle_start(Manager *m) {
        int r;

        m->busy_since_usec = now_usec(CLOCK_MONOTONIC);
        snprintf(m->idle_status, sizeof m->idle_status, "starting");
        r = sd_event_add_time_relative(m->event, &m->idle_source, CLOCK_MONOTONIC, IDLE_CHECK_RUNNING_USEC, 0,
                                       on_idle_check, m);
        if (r < 0)
                return r;
        /* below the recorder's sources: reading fanotify always comes first */
        return sd_event_source_set_priority(m->idle_source, SD_EVENT_PRIORITY_IDLE);
}
