/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/fanotify.h>
#include <sys/types.h>

#include "fs/fid.h"
#include "common/macro.h"
#include "fs/mounts.h"
#include "record/exec-holds.h"
#include "record/page-reader.h"

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
 * 2. The exec group holds FAN_OPEN_EXEC_PERM marks all the time. A dedicated thread (the exec thread)
 *    answers each permission event. Before it allows an exec that opens a window, every watched
 *    filesystem is armed in the open group, so not even the first read a launched program makes, on any
 *    of them, is missed: the exec'd file's own filesystem at once, through the event's fd; the others by
 *    a second thread (the armer), which marks them by their mount points while the exec waits, at most
 *    RECORDER_ARM_WAIT_USEC. The exec thread itself never walks a path: it blocks on nothing but fanotify
 *    and its own eventfds, answering events that have to wait later rather than waiting for them. If it
 *    dies, the exec group is closed, which makes the kernel allow every pending and future exec (a stuck
 *    daemon must never stall the system's execs). The exec'd file is passed to the main loop through a
 *    pipe as an ExecRecord.
 *
 * Holding execs. A file open for writing cannot be exec'd (ETXTBSY), and the mover opens the files it
 * moves for writing. Around the move of a file that can be exec'd, the mover holds its execs
 * (recorder_hold_execs()): their permission events wait until the move lets the file go, at most
 * RECORDER_HOLD_WAIT_USEC, so an exec of it waits for the move instead of failing. An exec allowed just
 * before the hold may still be on its way to the point where the kernel denies writing (it takes that a
 * moment after our answer): such a file is not opened for writing then (-EBUSY: moved in a later run). */

/* How long an exec that opens a window waits for the other filesystems to be armed (normally microseconds),
 * and one of a file being moved for the move to let it go (the mover lets go within one chunk of it). */
#define RECORDER_ARM_WAIT_USEC (250 * USEC_PER_MSEC)
#define RECORDER_HOLD_WAIT_USEC USEC_PER_SEC
/* An exec allowed this long ago has long passed the point where it denies writing; one that opened its file
 * before an exec mark existed, this long after the mark was placed (it goes there in the same system call). */
#define RECORDER_EXEC_SETTLE_USEC (2 * USEC_PER_SEC)
#define RECORDER_MARK_SETTLE_USEC (100 * USEC_PER_MSEC)
/* Permission events answered later, at most: past that, new ones are allowed at once (each keeps an fd). */
#define RECORDER_MAX_PENDING 256

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
        bool unwatched;          /* the page recorder's watch callback failed for it (its map was full) */
        FileKey key;
        char path[EXEC_PATH_MAX]; /* "" if it could not be resolved */
} ExecRecord;

/* A permission event the exec thread answers later: its exec waits until then. */
typedef struct PendingExec {
        int fd;                 /* the event's fd: answering it lets the exec go on */
        pid_t pid;
        uint64_t usec;          /* CLOCK_MONOTONIC when it came */
        uint64_t arm_seq;       /* waits for the arming of every filesystem asked for by this request (0: none) */
        FileKey key;            /* the file exec'd (handle_len 0: unknown), waits while its execs are held */
        dev_t exe_dev;          /* the process's executable then (RecentExec) */
        ino_t exe_ino;
} PendingExec;

/* An exec mark placed on a filesystem for holding execs, while launch recording is off. */
typedef struct HoldMark {
        uint64_t fsid;
        uint64_t usec;          /* CLOCK_MONOTONIC when placed */
} HoldMark;

/* What the exec thread did, for the log. */
typedef struct RecorderStats {
        uint64_t execs_armed;           /* execs that waited for every filesystem to be armed */
        uint64_t execs_arm_late;        /* ... and were allowed after RECORDER_ARM_WAIT_USEC all the same */
        uint64_t execs_held;            /* execs of a file being moved that waited for the move */
        uint64_t execs_hold_late;       /* ... and were allowed after RECORDER_HOLD_WAIT_USEC all the same */
        uint64_t execs_not_deferred;    /* answered at once although they should have waited (too many waiting) */
} RecorderStats;

typedef struct Recorder {
        int open_fd;            /* group 1 */
        int exec_fd;            /* group 2, -1 once closed */
        int pipe_fd[2];         /* exec thread -> main loop */
        int stop_fd;            /* eventfd: stop the threads */
        int wake_fd;            /* eventfd: wake the exec thread (an arming done, a hold let go) */
        int arm_fd;             /* eventfd: ask the armer thread for an arming of every filesystem */
        pthread_t thread, armer;
        bool thread_started, armer_started;

        /* Two locks so that nothing that walks paths (which can block) is ever held by the exec thread
         * before it answers a permission event: */
        pthread_mutex_t lock;       /* fast state: everything below but mounts[] */
        pthread_mutex_t mark_lock;  /* mounts[], and path-based marking */
        char **mounts;          /* mount points of the filesystems we mark */
        size_t n_mounts;
        bool open_marked;       /* read marks armed (on some or all filesystems) */
        bool ignores;           /* inode ignore marks may exist */
        bool launches_enabled;  /* arm on exec and forward execs */
        uint64_t exec_seq;      /* exec records queued to the main loop */
        uint64_t arm_seq;       /* armings of every filesystem asked for */
        uint64_t armed_seq;     /* ... and done */
        uint64_t disarms;       /* recorder_disarm()s that took the read marks down */
        PageReader *pages;      /* page-cache recording, switched with the read marks; NULL: none */
        /* Called by the exec thread for each exec it forwards, before it allows it, with the exec
         * record's seq: a recorder of the process's own pages starts watching it (on), or stops again when
         * the record could not be queued (!on) (recorder_set_watch()) */
        int (*watch)(pid_t pid, uint64_t seq, bool on, void *userdata);
        void *watch_userdata;
        uint64_t started_usec;  /* CLOCK_MONOTONIC when the exec thread started */
        bool gating;            /* between recorder_gate_begin() and _end() */
        HoldMark hold_marks[16];        /* exec marks placed for holds only (launches off), taken down at */
        size_t n_hold_marks;            /* recorder_gate_end() */
        ExecHolds *holds;
        RecorderStats stats;

        /* the exec thread's own */
        PendingExec *pending;
        size_t n_pending, allocated_pending;
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

/* A recorder of each launched process's pages: watch(pid, seq, true) is called from the exec thread for
 * each exec it forwards, before it allows it, and watch(pid, seq, false) if its record could not be queued
 * after all (so it must not block: a map update, no more; < 0: not watched, said in the record); NULL:
 * none. */
void recorder_set_watch(Recorder *r, int (*watch)(pid_t pid, uint64_t seq, bool on, void *userdata),
                        void *userdata);

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


/* Holding execs (see the top), between recorder_gate_begin() and recorder_gate_end() (a run): the exec
 * thread notes the execs it allows (it always does with launch recording on), which recorder_hold_execs()
 * needs; recorder_gate_end() takes down the exec marks placed for holds while launch recording is off. */
void recorder_gate_begin(Recorder *r);
void recorder_gate_end(Recorder *r);
/* Hold the execs of the file key (fd: the file, open) until recorder_release_execs(): their permission
 * events wait, at most RECORDER_HOLD_WAIT_USEC each. May first wait RECORDER_MARK_SETTLE_USEC after
 * placing an exec mark (launch recording off), or until RECORDER_EXEC_SETTLE_USEC after the exec thread
 * started. Returns 0 when held, -EBUSY when an exec of it allowed just before may not yet have
 * got as far as denying writes (not held: try later), -ENOTCONN without the exec thread or
 * recorder_gate_begin(), -ENOSPC when EXEC_HOLDS_MAX are held, or another negative errno. */
int recorder_hold_execs(Recorder *r, const FileKey *key, int fd);
/* Does an exec of key wait for the hold now? */
bool recorder_execs_waiting(Recorder *r, const FileKey *key);
void recorder_release_execs(Recorder *r, const FileKey *key);

RecorderStats recorder_get_stats(Recorder *r);
