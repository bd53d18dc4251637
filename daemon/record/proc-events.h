/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <sys/types.h>

/* Fork notifications from the kernel's process-events connector (netlink, NETLINK_CONNECTOR/CN_IDX_PROC,
 * needs CAP_NET_ADMIN). A launched program's short-lived children often exit before we read their
 * fanotify events, and then /proc can no longer tell whose child they were; the connector tells us at
 * fork time. */
int proc_events_open(void);   /* returns a non-blocking socket fd subscribed to process events */

/* Read what is queued; call fork_cb(child, parent, userdata) for each new process, and thread_cb(tid,
 * tgid, userdata) (if not NULL) for each new thread. Returns the number of forks seen, or a negative errno. */
int proc_events_drain(int fd, void (*fork_cb)(pid_t child, pid_t parent, void *userdata),
                      void (*thread_cb)(pid_t tid, pid_t tgid, void *userdata), void *userdata);
