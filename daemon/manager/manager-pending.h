/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "record/session.h"

typedef struct Manager Manager;

/* Sessions ended while another process held the database's write lock, oldest first, and the time they
 * wait, in memory, for it (manager-pending.c). */
typedef struct ManagerPending {
        struct PendingSession *sessions;
        size_t n_sessions, allocated, bytes;
        sd_event_source *source;
} ManagerPending;

/* An ended session (sealed, taken over) stored and its profile merged, now, or when the database's write
 * lock is free again if another process holds it (kept in memory meanwhile, in order, bounded: see
 * manager-pending.c). */
void manager_store_session(Manager *m, Session *s, uint64_t end_usec);
/* Sessions of that profile waiting for the database. */
unsigned manager_pending_count(Manager *m, const char *profile);
/* At exit: what waits is stored, the lock waited for a bounded time; what stays is logged as lost. */
void manager_pending_flush(Manager *m);
void manager_pending_free(Manager *m);
