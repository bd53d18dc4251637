/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "store/db.h"
#include "store/profile-kind.h"

typedef struct Manager Manager;

/* The properties that emit PropertiesChanged (manager_properties_announce()). */
typedef enum AnnouncedProperty {
        PROP_STATUS,
        PROP_BOOT_RECORDING,
        PROP_ACTIVE_LAUNCHES,
        PROP_PROFILES,
        PROP_SESSIONS,
        PROP_FILES,
        PROP_FILESYSTEMS,
        PROP_OPTIMIZING,
        PROP_OPTIMIZATION_ID,
        PROP_IDLE_STATUS,
        PROP_RELOCATION_OFF,
        PROP_PREFETCH_OFF,
        PROP_QUEUED_OPTIMIZATION,
        PROP_UNWATCHED_FILESYSTEMS,
        _PROP_MAX,
} AnnouncedProperty;

/* What the Manager sends unasked (manager-signals.c). */

/* Emits PropertiesChanged for the properties whose value changed since the last call. Called wherever
 * they may change: after a session, at a window's end, when runs start and end, at each idle check,
 * when mounts change, after methods that change the queue or the counts. */
void manager_properties_announce(Manager *m);
void manager_emit_session_recorded(Manager *m, int64_t session_id, ProfileKind kind, unsigned n_files);
void manager_emit_progress_signal(Manager *m, uint64_t id, uint64_t files_done, uint64_t files_total,
                                  uint64_t bytes_done, uint64_t bytes_total);
void manager_emit_run_finished(Manager *m, uint64_t id, RunState state, uint64_t moved_files,
                               uint64_t moved_bytes, size_t n_skipped);
