/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <sys/types.h>

/* Fork notifications from the kernel's process-events connector (netlink, NETLINK_CONNECTOR/CN_IDX_PROC,
 * needs CAP_NET_ADMIN). A launched program's short-lived children often exit before we read their
 * fanotify events, and then /proc can no longer tell whose child they were; the connector tells us at
 * fork time. It tells uid changes too (a login or cron forks as root, then takes the user's uid), before
 * the process runs on. */
int proc_events_open(void);   /* returns a non-blocking socket fd subscribed to process events */

/* What to call for each event; NULL: not wanted. */
typedef struct ProcEventHandlers {
        void (*fork)(pid_t child, pid_t parent, void *userdata);        /* a new process */
        void (*thread)(pid_t tid, pid_t tgid, void *userdata);          /* a new thread */
        void (*uid)(pid_t tgid, uid_t ruid, void *userdata);            /* a process changed its real uid
                                                                         * (any setuid call: the kernel
                                                                         * tells, changed or not) */
        void (*lost)(void *userdata);   /* the kernel dropped events (a full socket buffer) */
} ProcEventHandlers;

/* Read what is queued and call the handlers. Returns the number of forks seen, or a negative errno. */
int proc_events_drain(int fd, const ProcEventHandlers *h, void *userdata);
