/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "record/boot-share.h"
#include "record/pidmap.h"
#include "record/recorder.h"
#include "record/session.h"
#include "store/db.h"

typedef struct Manager Manager;

/* The recording's state (manager-record.c). */
typedef struct ManagerRecording {
        Recorder *recorder;
        sd_event_source *open_source, *exec_source, *fork_source, *timer_source;
        sd_event_source *resolve_source;        /* idle priority: names new session files in small chunks */
        Session *boot;                  /* the boot session while its window is open */
        BootShare boot_share;           /* its share for users' processes (BootUserShare=) */
        Session *launches;              /* open launch sessions */
        PidMap pidmap;
        uint64_t exec_seq_seen;
        /* launches stored this boot, per executable: the database keeps only KeepLaunches= of them */
        struct LaunchCount *launch_counts;
        size_t n_launch_counts, allocated_launch_counts;
        /* sessions of this boot in the database, per profile (manager_refresh_counts() reads them) */
        DbBootCount *boot_counts;
        size_t n_boot_counts;
        uint64_t events_received, overflows;
        unsigned ignore_failures;
} ManagerRecording;

/* The recorder's sources on the loop: its exec pipe, its open group, the process events, the resolver. */
int manager_record_start(Manager *m);
/* The boot session, with what was read before seeklessd watched; or none if this boot is recorded. */
int manager_start_boot_session(Manager *m);
/* Boot end as learned from systemd (manager-boot.c, once). finish_usec is CLOCK_MONOTONIC. */
void manager_boot_finished(Manager *m, uint64_t finish_usec);
/* One buffer read from the fanotify group that reports reads (buf[0..n), as read() filled it): each file
 * read goes to the boot session and to the launch its process belongs to; an overflow marks the open
 * sessions incomplete. now is CLOCK_MONOTONIC. */
void manager_take_open_events(Manager *m, const void *buf, size_t n, uint64_t now);
/* For manager-pages.c: whether a read by process tgid counts for the boot session's share of users (a
 * user's real uid). */
bool manager_boot_user(Manager *m, pid_t tgid);
void manager_drain_forks(Manager *m);
/* The execs the exec thread queued, handled now (launches begun, or joined). */
void manager_record_drain_execs(Manager *m);
void manager_want_resolve(Manager *m);
/* For manager_refresh_counts(): this boot's sessions per profile, read again. */
void manager_boot_counts_reload(Manager *m);
/* For manager_save_session(): a launch of path was stored. */
void manager_launch_count_bump(Manager *m, const char *path);
/* Every open session ended (as incomplete) and stored: at exit. */
void manager_record_flush(Manager *m);
/* Frees the sessions, the sources and the recorder (its threads stop). */
void manager_record_done(Manager *m);
