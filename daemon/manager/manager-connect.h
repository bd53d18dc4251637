/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-event.h>

typedef struct Manager Manager;

/* The system bus is not there (yet): the timer that tries again soon (manager-connect.c). */
typedef struct ManagerBusRetry {
        sd_event_source *source;
        bool waiting_logged;
} ManagerBusRetry;

/* Connect to the system bus without ever waiting for it. Early in the boot the bus does not exist yet;
 * recording goes on meanwhile and the connection is retried every second (also after the bus went away).
 * Fails only for errors that retrying cannot mend. */
int manager_connect_bus(Manager *m);
void manager_bus_retry_done(Manager *m);
