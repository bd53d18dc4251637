/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the Manager tells its clients unasked: the SessionRecorded, Progress and RunFinished signals, and
 * PropertiesChanged for the properties that emit it. Nothing is sent while the bus is not there; the
 * values announced are still noted, so that a change is told once it is. */
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "common/bus-names.h"
#include "common/log.h"
#include "manager/manager.h"
#include "manager/manager-prefetch.h"

/* A signal of the Manager's interface; a failure to send it is logged (at LEVEL) and otherwise ignored. */
static void emit(Manager *m, int level, const char *member, const char *types, ...) {
        va_list ap;
        int r;

        if (!m->bus)
                return;
        va_start(ap, types);
        r = sd_bus_emit_signalv(m->bus, SEEKLESS_BUS_PATH, SEEKLESS_BUS_INTERFACE, member, types, ap);
        va_end(ap);
        if (r < 0)
                log_full_errno(level, r, "Failed to emit %s, ignoring: %m", member);
}

void manager_emit_session_recorded(Manager *m, int64_t session_id, ProfileKind kind, unsigned n_files) {
        /* no profile name: signals reach every user; root asks ListSessions for the session's profile */
        emit(m, LOG_DEBUG, "SessionRecorded", "tsu", (uint64_t) session_id, profile_kind_to_string(kind),
             n_files);
}

void manager_emit_progress_signal(Manager *m, uint64_t id, uint64_t files_done, uint64_t files_total,
                                  uint64_t bytes_done, uint64_t bytes_total) {
        emit(m, LOG_DEBUG, "Progress", "ttttt", id, files_done, files_total, bytes_done, bytes_total);
}

void manager_emit_run_finished(Manager *m, uint64_t id, RunState state, uint64_t moved_files,
                               uint64_t moved_bytes, size_t n_skipped) {
        /* the number of skipped files only: their paths are for root, through GetRunSkipped */
        emit(m, LOG_WARNING, "RunFinished", "tsttu", id, run_state_to_string(state), moved_files, moved_bytes,
             (uint32_t) MIN(n_skipped, (size_t) UINT32_MAX));
}

/* Each announced property's value as text, to tell a change. */
static char *property_text(Manager *m, AnnouncedProperty p) {
        _cleanup_free_ char *l = NULL;
        char *s = NULL;
        unsigned n = 0;

        switch (p) {
        case PROP_STATUS:
                return manager_status_text(m);
        case PROP_BOOT_RECORDING:
                return strdup(m->recording.boot ? "1" : "0");
        case PROP_ACTIVE_LAUNCHES:
                for (Session *x = m->recording.launches; x; x = x->next)
                        n++;
                return asprintf(&s, "%u", n) < 0 ? NULL : s;
        case PROP_PROFILES:
                return asprintf(&s, "%u", m->n_profiles) < 0 ? NULL : s;
        case PROP_SESSIONS:
                return asprintf(&s, "%u", m->n_sessions) < 0 ? NULL : s;
        case PROP_FILES:
                return asprintf(&s, "%u", m->n_files) < 0 ? NULL : s;
        case PROP_OPTIMIZING:
                return strdup(m->runs.optimizer ? "1" : "0");
        case PROP_OPTIMIZATION_ID:
                return asprintf(&s, "%" PRIu64, m->runs.optimizer ? m->runs.optimizer->id : (uint64_t) 0) < 0 ?
                       NULL : s;
        case PROP_IDLE_STATUS:
                return strdup(m->idle.status);
        case PROP_FILESYSTEMS:
        case PROP_RELOCATION_OFF:
        case PROP_PREFETCH_OFF:
                l = strdup("");
                for (size_t i = 0; l && i < m->filesystems.n; i++) {
                        const Filesystem *fs = &m->filesystems.items[i];
                        char why[PATH_MAX + 64] = "";

                        if (p == PROP_RELOCATION_OFF && !manager_relocation_refusal(m, fs, why, sizeof why))
                                continue;
                        if (p == PROP_PREFETCH_OFF && !manager_prefetch_refusal(m, fs, why, sizeof why))
                                continue;
                        if (asprintf(&s, "%s%s\n%u:%u\n%s\n%s\n", l, fs->mount, major(fs->dev), minor(fs->dev),
                                     fs->fstype, why) < 0)
                                return NULL;
                        free(l);
                        l = TAKE_PTR(s);
                }
                return TAKE_PTR(l);
        case PROP_UNWATCHED_FILESYSTEMS:
                l = strdup("");
                for (size_t i = 0; l && i < m->unwatched.n; i++) {
                        const Filesystem *fs = &m->unwatched.items[i];

                        if (asprintf(&s, "%s%s\n%u:%u\n%s\n%s\n", l, fs->mount, major(fs->dev), minor(fs->dev),
                                     fs->fstype, unwatched_to_string(fs->unwatched)) < 0)
                                return NULL;
                        free(l);
                        l = TAKE_PTR(s);
                }
                return TAKE_PTR(l);
        case PROP_QUEUED_OPTIMIZATION:
                if (asprintf(&l, "%" PRIu64, m->idle.request_realtime_usec) < 0)
                        return NULL;
                for (size_t i = 0; m->idle.request_mounts && m->idle.request_mounts[i]; i++) {
                        if (asprintf(&s, "%s\n%s", l, m->idle.request_mounts[i]) < 0)
                                return NULL;
                        free(l);
                        l = TAKE_PTR(s);
                }
                return TAKE_PTR(l);
        default:
                return NULL;
        }
}

static const char *const announced_property_table[_PROP_MAX] = {
        [PROP_STATUS] = "Status",
        [PROP_BOOT_RECORDING] = "BootRecording",
        [PROP_ACTIVE_LAUNCHES] = "ActiveLaunches",
        [PROP_PROFILES] = "Profiles",
        [PROP_SESSIONS] = "Sessions",
        [PROP_FILES] = "Files",
        [PROP_FILESYSTEMS] = "Filesystems",
        [PROP_OPTIMIZING] = "Optimizing",
        [PROP_OPTIMIZATION_ID] = "OptimizationId",
        [PROP_IDLE_STATUS] = "IdleStatus",
        [PROP_RELOCATION_OFF] = "RelocationOff",
        [PROP_PREFETCH_OFF] = "PrefetchOff",
        [PROP_QUEUED_OPTIMIZATION] = "QueuedOptimization",
        [PROP_UNWATCHED_FILESYSTEMS] = "UnwatchedFilesystems",
};

DEFINE_STRING_TABLE_TO_STRING(announced_property, AnnouncedProperty, static)

void manager_properties_announce(Manager *m) {
        const char *changed[_PROP_MAX + 1] = {};
        size_t n = 0;
        int r;

        for (AnnouncedProperty p = 0; p < _PROP_MAX; p++) {
                _cleanup_free_ char *now = property_text(m, p);

                if (!now || (m->announced[p] && streq(now, m->announced[p])))
                        continue;
                /* the first look only sets the baseline: clients read the properties when they start */
                if (m->announced[p])
                        changed[n++] = announced_property_to_string(p);
                free(m->announced[p]);
                m->announced[p] = TAKE_PTR(now);
        }
        if (n == 0 || !m->bus)
                return;
        r = sd_bus_emit_properties_changed_strv(m->bus, SEEKLESS_BUS_PATH, SEEKLESS_BUS_INTERFACE, (char **) changed);
        if (r < 0)
                log_debug_errno(r, "Failed to emit PropertiesChanged, ignoring: %m");
}
