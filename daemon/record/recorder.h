/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/fanotify.h>
#include <sys/types.h>

#include "fid.h"
#include "macro.h"
#include "mounts.h"
#include "page-reader.h"

/* The two fanotify groups behind recording.
 *
 * 1. The open group reports reads (FAN_ACCESS, see recorder.c) in FID mode (FAN_REPORT_FID: fsid + file
 *    handle, no fd): the fd mode saturates far earlier, because the kernel opens a file per event and the
 *    reader must readlink and close it, and loses events to queue overflow under busy readers, where FID
 *    mode keeps up (figures in doc/kernel.md §3). FID mode also hands us the stable identity we store (the
 *    handle encodes inode and generation), and paths are resolved once per file per session, not once per
 *    event.
 *    Its marks exist only while a window (boot or launch) is open: an idle mark would make every
 *    open on the system queue an event we then throw away, costing far more than the ≤2% budget.
 *
 * 2. The exec group holds FAN_OPEN_EXEC_PERM marks all the time. A dedicated thread answers each
 *    permission event, and *before* allowing the exec it arms the marks of the open group, so not
 *    even the first library a freshly launched program maps is missed. The thread never blocks on anything
 *    but fanotify itself; if it dies, the exec group is closed, which makes the kernel allow every pending
 *    and future exec (a stuck daemon must never stall the system's execs). The exec'd file's fd is passed
 *    to the main loop through a pipe as an ExecRecord. */

/* No file descriptors travel through the pipe: a backlog of fds could exhaust RLIMIT_NOFILE, and then
 * the kernel *denies* execs whose permission event it cannot give us an fd for. The thread resolves the
 * key and path itself (a name_to_handle_at, an fstatfs and a readlink: microseconds). A record fits in
 * PIPE_BUF, so writes are atomic; when the pipe is full the exec is allowed and simply not recorded. */
#define EXEC_PATH_MAX 3800
typedef struct ExecRecord {
        pid_t pid;
        uint64_t timestamp_usec; /* CLOCK_MONOTONIC when the exec was seen */
        uint64_t seq;
        uid_t uid;               /* the exec'ing process's real uid, UID_INVALID if it could not be read */
        FileKey key;
        char path[EXEC_PATH_MAX]; /* "" if it could not be resolved */
} ExecRecord;

typedef struct Recorder {
        int open_fd;            /* group 1 */
        int exec_fd;            /* group 2, -1 once closed */
        int pipe_fd[2];         /* exec thread -> main loop */
        int stop_fd;            /* eventfd: stop the thread */
        pthread_t thread;
        bool thread_started;

        /* Two locks so that nothing that walks paths (which can block) is ever held by the exec thread
         * before it answers a permission event: */
        pthread_mutex_t lock;       /* fast state: open_marked, launches_enabled, exec_seq */
        pthread_mutex_t mark_lock;  /* mounts[], and path-based marking */
        char **mounts;          /* mount points of the filesystems we mark */
        size_t n_mounts;
        bool open_marked;       /* read marks armed (on some or all filesystems) */
        bool ignores;           /* inode ignore marks may exist */
        bool launches_enabled;  /* arm on exec and forward execs */
        uint64_t exec_seq;      /* exec records queued to the main loop */
        PageReader *pages;      /* page-cache recording, switched with the read marks; NULL: none */
} Recorder;

int recorder_new(bool launches_enabled, Recorder **ret);
Recorder *recorder_free(Recorder *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(Recorder *, recorder_free);

int recorder_start(Recorder *r);

/* Mark these filesystems (re-marking existing ones is harmless: marks are idempotent and new superblocks
 * behind an old mount point get theirs). Returns the number of filesystems that could not be marked. */
int recorder_set_filesystems(Recorder *r, const FilesystemList *l);

/* Page events, switched on and off with the read marks (the exec thread switches them on before it
 * allows an exec, as it arms the marks). Set before the first window opens; the caller keeps ownership. */
void recorder_set_pages(Recorder *r, PageReader *pages);

/* Arm the read marks on every filesystem. */
int recorder_arm(Recorder *r);
/* Disarm the read marks (one FAN_MARK_FLUSH, no path walk) and switch the page events off, unless an exec record newer than `seen_seq`
 * was queued (its launch needs them): returns 1 if disarmed, 0 if kept, negative errno on error. */
int recorder_disarm(Recorder *r, uint64_t seen_seq);

/* Stop reporting reads of this open file (an evictable inode ignore mark), unless an exec record newer
 * than `seen_seq` is queued: a new launch must see every read. Returns 1 if placed, 0 if not now, negative
 * errno on error. The exec thread removes all such marks before it allows any exec, and disarming removes
 * them too. Used while only the boot session records: its first read of a file is all it needs. */
int recorder_ignore_file(Recorder *r, int fd, uint64_t seen_seq);

