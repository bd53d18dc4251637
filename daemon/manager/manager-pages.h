/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "fs/mount-fds.h"

#include "record/page-reader.h"
#include "record/recorder.h"
#include "record/session.h"
#include "record-bpf/bpf-pages.h"

typedef struct Manager Manager;

/* Page-cache recording's state (manager-pages.c). */
typedef struct ManagerPages {
        PageReader *reader;     /* page-cache events; NULL: none (whole files, as fanotify sees them) */
        sd_event_source *source;
        sd_event_source *defer;         /* gives pending to the sessions a slice at a time */
        PageCacheEvent *pending;        /* taken from the reader: [pending_next, n_pending) wait */
        size_t n_pending, pending_next;
        uint64_t received, lost, unresolved;
        int metadata;                   /* the last pagecache_learn_bdev() result told, 0: none yet */
        BpfPages *bpf;                  /* launches' pages with BPF (manager-pages-bpf.c); NULL: none */
        sd_event_source *bpf_source;
        uint64_t bpf_lost;              /* the recorder's count of lost records, as last read */
        MountFds *bpf_fds;              /* while records are given to the sessions */
        dev_t bpf_bdev;                 /* and the block devices' pseudo filesystem's device, 0: unknown */
} ManagerPages;

/* Page-cache recording (none, logged once, without tracefs or the event). */
int manager_pages_start(Manager *m);
void manager_pages_stop(Manager *m);
void manager_pages_set_filesystems(Manager *m);
/* A page event given to a session (s is the boot session or a launch's); user: the reader is a user's
 * process and s the boot session (boot-share.h). */
void manager_session_take_page(Manager *m, Session *s, bool user, const PageCacheEvent *e, uint64_t t,
                               MountFds *fds);

/* Launches' pages recorded with BPF, where it loads and [Record] Recorder= asks for it: the page events
 * of launches come from it, no longer from the tracefs reader (which still records the boot). */
int manager_pages_bpf_start(Manager *m);
void manager_pages_bpf_stop(Manager *m);
/* Gives what the BPF recorder holds to the sessions now (before windows close), until until_usec
 * (CLOCK_MONOTONIC). Returns whether records were left at that bound. */
bool manager_pages_bpf_drain(Manager *m, uint64_t until_usec);
/* Whether launches are recorded with the pages they use (BPF, and the kernel's use tracepoints). */
bool manager_pages_bpf_uses(Manager *m);
/* A launch session begins (its root process was watched by the exec thread under rec's seq), or an exec
 * forwarded became no session of its own (owner: the launch it belongs to, else NULL). */
void manager_pages_bpf_launch(Manager *m, Session *s, const ExecRecord *rec);
void manager_pages_bpf_not_launch(Manager *m, const ExecRecord *rec, Session *owner);
/* The boot session begins: recorded with BPF too, everyone's pages under the boot's tag. */
void manager_pages_bpf_boot(Manager *m, Session *boot);
/* The boot window closed: nobody's pages but the launches' from now on. */
void manager_pages_bpf_boot_over(Manager *m);
/* The watched filesystems changed: the kernel reports theirs only. */
void manager_pages_bpf_set_filesystems(Manager *m, const dev_t *devs, size_t n, dev_t bdev);
/* A launch session ends: its processes are no longer watched. */
void manager_pages_bpf_end(Manager *m, Session *s);

/* Takes what the kernel buffered now, before windows close, and gives it to the sessions, for at most a
 * quarter of a second: returns how many events still wait (they count as lost for a window closing now;
 * records left in the BPF ring count as one). */
size_t manager_pages_drain(Manager *m);
