/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The database's free space handed back to the filesystem. Deleted rows (a forgotten or evicted profile,
 * sessions pruned by KeepBoots=/KeepLaunches=, a profile merged again) leave free pages that SQLite reuses
 * but never gives back. After such deletes, once the free pages are a quarter of the file or more (and at
 * least SPACE_MIN_FREE_BYTES), they are handed back SPACE_STEP_PAGES at a time, each step an iteration of
 * the main loop at idle priority, and then the WAL is checkpointed and truncated (retried while another
 * connection still reads an older state). A database made before seekless did this is converted by its
 * first step: one VACUUM, which rewrites its live pages. */
#include <errno.h>
#include <inttypes.h>

#include "common/log.h"
#include "manager/manager.h"

#define SPACE_STEP_PAGES 1024
#define SPACE_MIN_FREE_BYTES (1024 * 1024)
#define SPACE_RETRY_USEC (1 * USEC_PER_SEC)
#define SPACE_CHECKPOINT_TRIES 60

static int space_schedule(Manager *m, uint64_t usec) {
        int r;

        r = sd_event_source_set_time_relative(m->space.source, usec);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(m->space.source, SD_EVENT_ONESHOT);
}

static int on_space(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        int64_t left;
        int r;

        if (!m->db)
                return 0;
        if (m->space.vacuum) {
                DbSpace before = {};

                (void) db_space(m->db, &before);
                left = db_vacuum_step(m->db, SPACE_STEP_PAGES);
                if (left < 0) {
                        log_warning_errno((int) left, "Failed to hand free database pages back, keeping them: %m");
                        m->space.vacuum = false;
                        return 0;
                }
                if (!before.incremental)
                        log_info("Database converted to hand free pages back (auto_vacuum=incremental)");
                m->space.freed += before.free_pages > (uint64_t) left ?
                        (before.free_pages - (uint64_t) left) * before.page_size : 0;
                if (left > 0)
                        return space_schedule(m, 0);
                m->space.vacuum = false;
                m->space.tries = 0;
        }
        r = db_checkpoint_truncate(m->db);
        if (r == -EBUSY && ++m->space.tries < SPACE_CHECKPOINT_TRIES)
                return space_schedule(m, SPACE_RETRY_USEC);
        if (r < 0)
                log_warning_errno(r, "Failed to truncate the database's WAL, leaving it: %m");
        if (m->space.freed > 0)
                log_info("Handed %" PRIu64 " KiB of free database pages back to the filesystem", m->space.freed / 1024);
        m->space.freed = 0;
        return 0;
}

void manager_space_check(Manager *m) {
        DbSpace sp;
        int r;

        if (!m->db || m->space.vacuum || db_space(m->db, &sp) < 0)
                return;
        if (sp.free_pages * sp.page_size < SPACE_MIN_FREE_BYTES || sp.free_pages * 4 < sp.pages)
                return;
        if (!m->space.source) {
                r = sd_event_add_time_relative(m->event, &m->space.source, CLOCK_MONOTONIC, 0, 0, on_space, m);
                if (r >= 0)
                        r = sd_event_source_set_priority(m->space.source, SD_EVENT_PRIORITY_IDLE);
                if (r < 0) {
                        m->space.source = sd_event_source_disable_unref(m->space.source);
                        return (void) log_warning_errno(r, "Failed to schedule handing free database pages back: %m");
                }
        } else if (space_schedule(m, 0) < 0)
                return;
        m->space.vacuum = true;
        m->space.tries = 0;
}

void manager_space_done(Manager *m) {
        m->space.source = sd_event_source_disable_unref(m->space.source);
}
