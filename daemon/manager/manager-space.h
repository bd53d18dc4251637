/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

typedef struct Manager Manager;

/* The database's free pages handed back (manager-space.c). */
typedef struct ManagerSpace {
        sd_event_source *source;
        bool vacuum;                    /* steps to go; then the WAL is truncated */
        unsigned tries;                 /* WAL truncations refused (a reader) so far */
        uint64_t freed;                 /* bytes handed back by these steps */
} ManagerSpace;

/* After deletes, hand the database's free pages back at idle (if they are many). */
void manager_space_check(Manager *m);
void manager_space_done(Manager *m);
