/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "record/boot-share.h"
#include "policy/conf.h"
#include "store/db.h"
#include "fs/mounts.h"
#include "record/pidmap.h"
#include "relocate/optimizer.h"
#include "record/page-reader.h"
#include "plan/plan-worker.h"
#include "plan/planner.h"
#include "profile/profile.h"
#include "record/recorder.h"
#include "record/session.h"
#include "common/time-util.h"
#include "manager/manager-boot.h"
#include "manager/manager-connect.h"
#include "manager/manager-idle.h"
#include "manager/manager-optimize.h"
#include "manager/manager-pages.h"
#include "manager/manager-prefetch-launch.h"
#include "manager/manager-pending.h"
#include "manager/manager-record.h"
#include "initramfs/initramfs-status.h"
#include "manager/manager-signals.h"
#include "manager/manager-space.h"

typedef struct Manager {
        sd_event *event;
        sd_bus *bus;
        Db *db;
        Config config;

        char *config_path;              /* the main file and the drop-in directory, for SIGHUP */
        char *config_dropins;
        char *state_dir;
        char *run_dir;                  /* the boot collector's records (--run-dir=, default /run/seekless) */
        char *db_path;
        char *tracefs;                  /* --tracefs=, NULL: /sys/kernel/tracing */
        FilesystemPins *only_filesystems; /* --filesystem=, pinned at start; NULL = every rw ext4 */
        char boot_id[33];
        /* what the initramfs stage did this boot (RUN_DIR/initramfs.status, read at start);
         * initramfs_r < 0: the file's error (-ENOENT: the stage did not run) */
        InitramfsStatus initramfs;
        int initramfs_r;

        FilesystemList filesystems;
        FilesystemList unwatched;       /* the other filesystems on a device, each with why not */
        sd_event_source *mountinfo_source;
        /* plans, reports, layouts and the "after" snapshots: walks of every profile file, on a thread */
        PlanWorker *plan_worker;
        /* prefetches (manager-prefetch.c), on a thread of their own: a launch's never waits behind a plan */
        PlanWorker *prefetch_worker;
        sd_event_source *exit_source;   /* stops them while the bus is still there */

        /* each part's own state, declared next to the file that owns it */
        ManagerRecording recording;     /* manager-record.c */
        ManagerPages pages;             /* manager-pages.c */
        ManagerPending pending;         /* manager-pending.c */
        ManagerRuns runs;               /* manager-optimize.c */
        ManagerIdle idle;               /* manager-idle.c */
        ManagerSpace space;             /* manager-space.c */
        ManagerLaunchPrefetch launch_prefetch; /* manager-prefetch-launch.c */
        ManagerBootWatch boot_watch;    /* manager-boot.c */
        ManagerBusRetry bus_retry;      /* manager-connect.c */

        unsigned n_profiles, n_sessions, n_files;
        char *announced[_PROP_MAX];     /* each property's value when last announced, as text */
} Manager;

int manager_new(Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* Open the database (moving a corrupt one aside), find the filesystems, start fanotify and the boot
 * session, connect to the bus. */
int manager_start(Manager *m);
/* End every open session (as incomplete) and store it: used on SIGTERM. */
void manager_flush(Manager *m);

int manager_refresh_counts(Manager *m);
/* profile.c's options from the configuration, with the watched filesystems and the Manager's log. */
ProfileOptions manager_profile_options(Manager *m);
char *manager_status_text(Manager *m);
void manager_notify_status(Manager *m);

/* SIGHUP: read the configuration again (same files, same warnings). The new values apply from the next
 * time each is read: a window or a run under way keeps what it started with. */
int manager_reload_config(Manager *m);
int manager_open_mount_fd(Manager *m, uint64_t fsid);

/* manager.c, for manager-pending.c: resolves and stores an ended session (its window closed at end_usec,
 * CLOCK_MONOTONIC); 1 and its id when its profile is to be merged, 0 when not, -EBUSY (not logged) when the
 * database's write lock stayed taken, another negative errno (logged) when it failed. */
int manager_save_session(Manager *m, Session *s, uint64_t end_usec, int64_t *ret_id);

/* manager-bus.c */
int manager_bus_add_objects(Manager *m, sd_bus *bus);
