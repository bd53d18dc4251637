/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "record/session.h"

/* Attribution of a process to a launch session: a process belongs to session S if it is S's root process,
 * a descendant of it (parent chain in /proc/PID/stat), or lives in S's app-*.scope cgroup. Answers are cached
 * per pid, because one process typically makes many opens; the cache is flushed whenever the set of
 * sessions changes, so a stale answer never outlives the window it was computed for. */
typedef struct PidMap {
        const char *proc;       /* "/proc", or a fixture directory in tests */
        struct PidEntry *entries;
        size_t n_buckets, n_used;
        struct PidEntry *forks;         /* child -> parent, from fork notifications (pid = child) */
        size_t n_fork_buckets, n_forks;
        struct PidEntry *threads;       /* thread -> its process (pid = tid, parent = tgid) */
        size_t n_thread_buckets, n_threads;
        bool track_uids;                /* pidmap_track_uids() */
        struct PidEntry *uids;          /* process -> its real uid (pid = tgid, uid; UID_INVALID: ask /proc) */
        size_t n_uid_buckets, n_uids;
} PidMap;

void pidmap_init(PidMap *m, const char *proc);
void pidmap_flush(PidMap *m);          /* forget cached answers (the set of sessions changed) */

/* Remember that `child` was forked by `parent`, so the child can be attributed even after it exited. */
void pidmap_note_fork(PidMap *m, pid_t child, pid_t parent);
void pidmap_forget_forks(PidMap *m);    /* no launch open: nothing to attribute any more (threads too) */
/* Remember that thread `tid` belongs to process `tgid` (page events name threads, not processes). */
void pidmap_note_thread(PidMap *m, pid_t tid, pid_t tgid);
/* The process of a thread: noted, else /proc/TID/status "Tgid:" (remembered), else tid itself. */
pid_t pidmap_tgid(PidMap *m, pid_t tid);
void pidmap_done(PidMap *m);

/* The real uid of processes, for the boot session's share of users (boot-share.h): kept while on, from
 * the kernel's process events (a fork's child has its parent's, a setuid changes it) and /proc. Off forgets
 * them. */
void pidmap_track_uids(PidMap *m, bool on);
/* Process tgid's real uid is now uid (a uid-change event, or an exec record's). */
void pidmap_note_uid(PidMap *m, pid_t tgid, uid_t uid);
/* Process tgid's real uid: as noted, else /proc/PID/status's (remembered), else, for a process gone
 * already, its nearest ancestor's that is known (through the forks seen), else UID_INVALID. */
uid_t pidmap_uid(PidMap *m, pid_t tgid);

/* Returns the session the pid belongs to, or NULL. `sessions` is the list of open launch sessions. */
Session *pidmap_lookup(PidMap *m, Session *sessions, pid_t pid);

/* Helpers, exported for the unit test. */
int proc_get_ppid(const char *proc, pid_t pid, pid_t *ret);
int proc_get_cgroup(const char *proc, pid_t pid, char **ret);   /* the cgroup v2 path ("0::/...") */
int proc_get_uid(const char *proc, pid_t pid, uid_t *ret);       /* the real uid ("Uid:", first field) */
int proc_get_tgid(const char *proc, pid_t tid, pid_t *ret);      /* "Tgid:" */
/* Number of processes in a cgroup (cgroup.procs under the cgroup2 mount `root`), or a negative errno. */
int cgroup_population(const char *root, const char *cgroup);
/* Returns the cgroup if its last component is an app-*.scope or app-*.service (desktop app units). */
const char *cgroup_app_unit(const char *cgroup);
