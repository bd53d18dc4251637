/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

typedef struct Manager Manager;

/* The idle policy's state (manager-idle.c). */
typedef struct ManagerIdle {
        sd_event_source *source;
        uint64_t busy_since_usec;       /* CLOCK_MONOTONIC: the last time the machine was busy */
        uint64_t last_noop_realtime_usec; /* an idle check found nothing to move */
        bool auto_run;                  /* the running optimization was started by the idle policy */
        bool logind_idle;               /* logind's IdleHint, when there are graphical sessions */
        char status[512];               /* why a run would (not) start now, for status */
        char auto_run_why[384];         /* why the idle policy started the running optimization */
        /* an administrator's `optimize --when-idle`, until its run starts (in memory only) */
        uint64_t request_realtime_usec; /* when it was queued; 0 = nothing queued */
        char **request_mounts;          /* NULL = every watched filesystem */
        /* MaxQualityLossPercent=: the last layout check (a FIEMAP of every profile file, so at most
         * hourly) */
        uint64_t quality_checked_usec;  /* CLOCK_MONOTONIC; 0 = not since the daemon started */
        uint64_t quality_last_run;      /* the last run (realtime) the check is against */
        char *quality_worst_profile;    /* the profile that degraded most, NULL if none did */
        double quality_worst_percent;
        bool quality_checking;          /* the check is on the worker: the decision waits for it */
} ManagerIdle;

int manager_idle_start(Manager *m);
void manager_idle_done(Manager *m);
/* How a queued request that is being dealt with at once went: r < 0 (the request is dropped then), else
 * id the run started, 0 when there was nothing to move. */
typedef void (*ManagerQueueDone)(Manager *m, int r, uint64_t id, void *userdata);
/* Queue an administrator's run of mounts (taken over; NULL = every watched filesystem) for when the machine
 * is idle, replacing one already queued, and decide at once. Returns 0 if it stays queued, 1 if it is being
 * dealt with at once (done is called when it started), or a negative errno (the request is dropped then). */
int manager_idle_queue(Manager *m, char **mounts, ManagerQueueDone done, void *userdata);
/* Drop the queued request and close paused runs, so that nothing the administrator started or queued
 * starts or resumes by itself. Returns whether there was anything to drop. */
bool manager_idle_drop(Manager *m);
