/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

typedef struct Manager Manager;

/* Watching systemd for the boot's end (manager-boot.c). */
typedef struct ManagerBootWatch {
        sd_bus_slot *startup_finished_slot;
        sd_event_source *poll_source;   /* asks systemd for FinishTimestampMonotonic until it is set */
        bool finish_known, subscribed;
        unsigned poll_failures;
} ManagerBootWatch;

/* Once connected: the StartupFinished signal, and a poll of FinishTimestampMonotonic while the boot
 * session is open. The first to see the boot's end calls manager_boot_finished(), once. */
int manager_watch_boot(Manager *m);
void manager_boot_watch_done(Manager *m);
