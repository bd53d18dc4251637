/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* A launch's prefetch, started at its exec (manager-prefetch-launch.c). */

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct Manager Manager;

/* What was prefetched or found to have no profile lately, so that a program exec'd again and again (a
 * shell loop) is asked for once: the oldest entry makes room. */
#define LAUNCH_PREFETCH_RECENT 64

typedef struct LaunchPrefetchRecent {
        char *name;
        uint64_t usec;          /* CLOCK_MONOTONIC of the request */
        bool none;              /* no such profile */
} LaunchPrefetchRecent;

typedef struct ManagerLaunchPrefetch {
        LaunchPrefetchRecent recent[LAUNCH_PREFETCH_RECENT];
        unsigned running;       /* jobs queued or running */
        uint64_t started, skipped;
        atomic_bool boot_abandon;       /* the boot profile's prefetch is no longer wanted */
} ManagerLaunchPrefetch;

/* The exec of path, no part of a launch open: its profile is prefetched on the prefetch worker, unless
 * launches are not prefetched (Prefetch=no, PrefetchLaunches=no, or no BPF recorder: a launch whose pages
 * the tracepoint recorder cannot see would be recorded without them), it was asked for within the last
 * minute (ten minutes when it had no profile), two prefetches are under way already, or the guard vetoes
 * it. Never waits: returns whether a prefetch was queued. */
bool manager_launch_prefetch(Manager *m, const char *path);
void manager_launch_prefetch_done(Manager *m);
/* The boot profile's prefetch, as the boot session begins (PrefetchBoot=); once it asked for any page the
 * boot session is marked prefetched (profile.c: where the pages it uses are not seen, it keeps the
 * profile's ranges). Never waits. */
void manager_boot_prefetch(Manager *m);
/* Whether the initramfs stage read any of the boot profile ahead this boot (its status, read at start):
 * the boot session is prefetched then, whatever the daemon's own prefetch finds. */
bool manager_initramfs_read_ahead(Manager *m);
/* A profile was stored under name: it is no longer "none" for the next exec. */
void manager_launch_prefetch_forget(Manager *m, const char *name);
