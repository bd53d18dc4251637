/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "record/page-reader.h"

typedef struct Manager Manager;

/* Page-cache recording's state (manager-pages.c). */
typedef struct ManagerPages {
        PageReader *reader;     /* page-cache events; NULL: none (whole files, as fanotify sees them) */
        sd_event_source *source;
        sd_event_source *defer;         /* gives pending to the sessions a slice at a time */
        PageCacheEvent *pending;        /* taken from the reader: [pending_next, n_pending) wait */
        size_t n_pending, pending_next;
        uint64_t received, lost, unresolved;
        int metadata;                   /* the last pagecache_learn_bdev() result told, 0: none yet */
} ManagerPages;

/* Page-cache recording (none, logged once, without tracefs or the event). */
int manager_pages_start(Manager *m);
void manager_pages_stop(Manager *m);
void manager_pages_set_filesystems(Manager *m);
/* Takes what the kernel buffered now, before windows close, and gives it to the sessions, for at most a
 * quarter of a second: returns how many events still wait (they count as lost for a window closing now). */
size_t manager_pages_drain(Manager *m);
