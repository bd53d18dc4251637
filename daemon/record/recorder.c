/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc-util.h"
#include "common/macro.h"
#include "fs/fid-util.h"
#include "record/pidmap.h"
#include "record/recorder.h"

/* FAN_ACCESS, not FAN_OPEN: we want the files that are *read*, in the order of their first read. An open
 * for writing (a log, a file being created) raises FAN_OPEN but no FAN_ACCESS, and a read() that hits EOF
 * raises nothing. Repeated reads of one file by one process merge into one queued event. ELF objects
 * are read() (header) before they are mapped, so libraries are seen too.
 * FAN_CLOSE_NOWRITE too, for files that are only mapped (opened, mmap()ed, closed, then read through page
 * faults, which raise no fanotify event): a close of a file opened read-only. Not FAN_OPEN, which also
 * fires for files opened for writing only (logs, files being created) and would put them in profiles;
 * a close is at most one more event per open, merged like the reads while it waits in the queue. */
#define RECORD_MASK (FAN_ACCESS | FAN_CLOSE_NOWRITE)

_Static_assert(sizeof(ExecRecord) <= PIPE_BUF, "exec records must be written atomically");

static uint64_t now_mono(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

int recorder_new(bool launches_enabled, Recorder **ret) {
        _cleanup_(recorder_freep) Recorder *r = NULL;

        r = calloc(1, sizeof *r);
        if (!r)
                return -ENOMEM;
        r->open_fd = r->exec_fd = r->stop_fd = r->wake_fd = r->arm_fd = r->pipe_fd[0] = r->pipe_fd[1] = -EBADF;
        pthread_mutex_init(&r->lock, NULL);
        pthread_mutex_init(&r->mark_lock, NULL);
        r->launches_enabled = launches_enabled;

        /* With the directory and name of each read (5.9): a file whose dentry the kernel evicts before
         * the file is named can still be named through its directory. */
        r->open_fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_FID |
                                   FAN_REPORT_DFID_NAME, O_RDONLY | O_CLOEXEC | O_LARGEFILE);
        if (r->open_fd < 0 && errno == EINVAL)
                r->open_fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_FID,
                                           O_RDONLY | O_CLOEXEC | O_LARGEFILE);
        if (r->open_fd < 0)
                return -errno;
        r->exec_fd = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC | FAN_NONBLOCK,
                                   O_RDONLY | O_CLOEXEC | O_LARGEFILE);
        if (r->exec_fd < 0)
                return -errno;
        if (pipe2(r->pipe_fd, O_CLOEXEC | O_NONBLOCK) < 0)
                return -errno;
        /* room for a few hundred execs while the main loop is busy (saving a big session, say) */
        (void) fcntl(r->pipe_fd[1], F_SETPIPE_SZ, 1024 * 1024);
        r->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (r->stop_fd < 0)
                return -errno;
        r->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (r->wake_fd < 0)
                return -errno;
        r->arm_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (r->arm_fd < 0)
                return -errno;
        r->holds = calloc(1, sizeof *r->holds);
        if (!r->holds)
                return -ENOMEM;

        *ret = TAKE_PTR(r);
        return 0;
}

static void close_exec_group_locked(Recorder *r) {
        /* Closing the group allows every pending permission event. */
        r->exec_fd = safe_close(r->exec_fd);
}

Recorder *recorder_free(Recorder *r) {
        if (!r)
                return NULL;
        if (r->thread_started || r->armer_started) {
                uint64_t one = 1;
                (void) !write(r->stop_fd, &one, sizeof one);
        }
        if (r->thread_started)
                pthread_join(r->thread, NULL);
        if (r->armer_started)
                pthread_join(r->armer, NULL);
        close_exec_group_locked(r);
        for (size_t i = 0; i < r->n_pending; i++)
                safe_close(r->pending[i].fd);
        free(r->pending);
        free(r->holds);
        safe_close(r->open_fd);
        safe_close(r->stop_fd);
        safe_close(r->wake_fd);
        safe_close(r->arm_fd);
        safe_close(r->pipe_fd[0]);
        safe_close(r->pipe_fd[1]);
        for (size_t i = 0; i < r->n_mounts; i++)
                free(r->mounts[i]);
        free(r->mounts);
        pthread_mutex_destroy(&r->lock);
        pthread_mutex_destroy(&r->mark_lock);
        free(r);
        return NULL;
}

/* Path-based: call with mark_lock held, never from the exec thread before it answered an event. */
static int mark_all_paths(Recorder *r) {
        int failed = 0;

        for (size_t i = 0; i < r->n_mounts; i++)
                if (fanotify_mark(r->open_fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, RECORD_MASK, AT_FDCWD,
                                  r->mounts[i]) < 0)
                        failed++;
        return failed;
}

static void eventfd_kick(int fd) {
        uint64_t one = 1;

        (void) !write(fd, &one, sizeof one);
}

static void eventfd_drain(int fd) {
        uint64_t v;

        (void) !read(fd, &v, sizeof v);
}

/* The process's executable (what /proc/PID/exe leads to): a procfs lookup and the inode behind it, no
 * walk of any other filesystem. */
static int proc_exe(pid_t pid, dev_t *ret_dev, ino_t *ret_ino) {
        char p[64];
        struct stat st;

        (void) snprintf(p, sizeof p, "/proc/%i/exe", (int) pid);
        if (stat(p, &st) < 0)
                return -errno;
        *ret_dev = st.st_dev;
        *ret_ino = st.st_ino;
        return 0;
}

/* Let the exec go on. Called with r->lock held: a gated exec is noted before it can go on, so that
 * recorder_hold_execs() sees every exec allowed before its hold. */
static void allow_locked(Recorder *r, PendingExec *p, uint64_t now) {
        struct fanotify_response resp = { .fd = p->fd, .response = FAN_ALLOW };

        if ((r->launches_enabled || r->gating) && p->key.handle_len > 0)
                exec_holds_note_allowed(r->holds, &(RecentExec) {
                        .key = p->key, .pid = p->pid, .exe_dev = p->exe_dev, .exe_ino = p->exe_ino, .usec = now });
        /* Always allow, whatever happened: we observe, we never deny. */
        (void) !write(r->exec_fd, &resp, sizeof resp);
        p->fd = safe_close(p->fd);
}

/* Must the exec still wait? (r->lock held) */
static bool must_wait_locked(Recorder *r, const PendingExec *p, uint64_t now) {
        if (p->arm_seq > r->armed_seq && now < p->usec + RECORDER_ARM_WAIT_USEC)
                return true;
        return p->key.handle_len > 0 && exec_holds_has(r->holds, &p->key) && now < p->usec + RECORDER_HOLD_WAIT_USEC;
}

static void count_late_locked(Recorder *r, const PendingExec *p) {
        if (p->arm_seq > r->armed_seq)
                r->stats.execs_arm_late++;
        if (p->key.handle_len > 0 && exec_holds_has(r->holds, &p->key))
                r->stats.execs_hold_late++;
}

/* Answer the waiting events whose wait is over; returns when the next one's ends (UINT64_MAX: none waits). */
static uint64_t answer_pending(Recorder *r, uint64_t now) {
        uint64_t next = UINT64_MAX;
        size_t k = 0;

        pthread_mutex_lock(&r->lock);
        for (size_t i = 0; i < r->n_pending; i++) {
                PendingExec *p = &r->pending[i];

                if (must_wait_locked(r, p, now)) {
                        if (p->arm_seq > r->armed_seq)
                                next = MIN(next, p->usec + RECORDER_ARM_WAIT_USEC);
                        else
                                next = MIN(next, p->usec + RECORDER_HOLD_WAIT_USEC);
                        r->pending[k++] = *p;
                        continue;
                }
                count_late_locked(r, p);
                allow_locked(r, p, now);
        }
        r->n_pending = k;
        pthread_mutex_unlock(&r->lock);
        return next;
}

static void handle_exec_event(Recorder *r, const struct fanotify_event_metadata *m, pid_t self) {
        ExecRecord rec = { .pid = m->pid, .timestamp_usec = now_mono() };
        PendingExec p = { .fd = m->fd, .pid = m->pid, .usec = rec.timestamp_usec };
        bool forward, noting, gating, held, queued = false;
        _cleanup_free_ char *path = NULL;

        pthread_mutex_lock(&r->lock);
        forward = m->pid != self && r->launches_enabled;
        noting = r->launches_enabled || r->gating;
        gating = r->gating;
        pthread_mutex_unlock(&r->lock);

        if ((forward || noting) && file_key_from_fd(m->fd, &rec.key) >= 0)
                p.key = rec.key;
        else
                forward = false;
        /* the process's executable as the exec starts, for a hold of it later (recorder_hold_execs()):
         * only while a gate is up (a stat through procfs, in every exec's path); noted otherwise, an exec
         * allowed just before a gate goes up counts as not yet past its write denial */
        if (gating && proc_exe(m->pid, &p.exe_dev, &p.exe_ino) < 0)
                p.exe_dev = 0, p.exe_ino = 0;

        if (forward) {
                if (fd_get_path(m->fd, &path) >= 0 && strlen(path) < sizeof rec.path)
                        strcpy(rec.path, path);
                /* Who launches it, read while the process waits in execve() for our answer, so it is still
                 * there (a short-lived program could be gone by the time the main loop looks). procfs
                 * only: /proc/PID/status takes no lock the exec holds. */
                if (proc_get_uid("/proc", m->pid, &rec.uid) < 0)
                        rec.uid = UID_INVALID;
        }

        pthread_mutex_lock(&r->lock);
        if (forward) {
                /* A launch must see every read, also of files the boot session already has and told
                 * the kernel to stop reporting: drop those ignore marks (one call, no path walk). */
                if (r->ignores &&
                    fanotify_mark(r->open_fd, FAN_MARK_FLUSH, 0, AT_FDCWD, NULL) >= 0)
                        r->ignores = false;
                /* Arm the exec'd file's own filesystem through its fd (no path walk), the others through the
                 * armer, and queue the record, all *before* allowing the exec: once allowed, the program
                 * runs, and its reads can only be attributed if its exec is already queued and the marks
                 * are up. */
                if (fanotify_mark(r->open_fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, RECORD_MASK, m->fd, NULL) >= 0 &&
                    !r->open_marked) {
                        r->open_marked = true;
                        r->arm_seq++;
                        eventfd_kick(r->arm_fd);
                }
                /* the program's page reads too (0.4-0.5 ms, only if no window had them on already) */
                if (r->pages)
                        (void) page_reader_enable(r->pages, true);
                rec.seq = r->exec_seq + 1;
                if (r->watch)
                        rec.unwatched = r->watch(m->pid, rec.seq, true, r->watch_userdata) < 0;
                if (write(r->pipe_fd[1], &rec, sizeof rec) == (ssize_t) sizeof rec) {
                        r->exec_seq = rec.seq;
                        queued = true;
                } else if (r->watch && !rec.unwatched)
                        /* the next exec gets this seq: its tag must not already be this process's */
                        (void) r->watch(m->pid, rec.seq, false, r->watch_userdata);
                if (queued && r->armed_seq < r->arm_seq)
                        p.arm_seq = r->arm_seq;
        }
        held = p.key.handle_len > 0 && exec_holds_has(r->holds, &p.key);
        if (!held && p.arm_seq == 0)
                allow_locked(r, &p, rec.timestamp_usec);
        else if (r->n_pending >= RECORDER_MAX_PENDING ||
                 GREEDY_REALLOC(r->pending, r->allocated_pending, r->n_pending + 1) < 0) {
                r->stats.execs_not_deferred++;
                allow_locked(r, &p, rec.timestamp_usec);
        } else {
                if (held)
                        r->stats.execs_held++;
                if (p.arm_seq > 0)
                        r->stats.execs_armed++;
                r->pending[r->n_pending++] = p;
        }
        pthread_mutex_unlock(&r->lock);
}

static void *exec_thread(void *userdata) {
        Recorder *r = userdata;
        pid_t self = getpid();
        uint64_t next = UINT64_MAX;
        union {
                struct fanotify_event_metadata m;
                char buf[4096];
        } u;

        for (;;) {
                struct pollfd p[3] = {
                        { .fd = r->exec_fd, .events = POLLIN },
                        { .fd = r->stop_fd, .events = POLLIN },
                        { .fd = r->wake_fd, .events = POLLIN },
                };
                uint64_t now = now_mono();
                int timeout = next == UINT64_MAX ? -1 :
                              next <= now ? 0 : (int) MIN((next - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC, (uint64_t) INT_MAX);
                ssize_t n;

                if (poll(p, 3, timeout) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (p[1].revents)
                        break;
                if (p[2].revents)
                        eventfd_drain(r->wake_fd);
                if (p[0].revents) {
                        n = read(r->exec_fd, u.buf, sizeof u.buf);
                        if (n < 0) {
                                /* EMFILE/ENFILE: the kernel could not give us an fd for an event; it has
                                 * already answered that event itself. Keep serving the others. */
                                if (errno != EAGAIN && errno != EINTR && errno != EMFILE && errno != ENFILE)
                                        goto fail;
                        } else
                                for (struct fanotify_event_metadata *m = &u.m; FAN_EVENT_OK(m, n);
                                     m = FAN_EVENT_NEXT(m, n)) {
                                        if (m->fd < 0)
                                                continue;
                                        if (m->mask & FAN_OPEN_EXEC_PERM)
                                                handle_exec_event(r, m, self);
                                        else
                                                safe_close(m->fd);
                                }
                }
                next = answer_pending(r, now_mono());
        }
        /* stopping: nobody waits for us any more */
        pthread_mutex_lock(&r->lock);
        for (size_t i = 0; i < r->n_pending; i++)
                allow_locked(r, &r->pending[i], now_mono());
        r->n_pending = 0;
        pthread_mutex_unlock(&r->lock);
        return NULL;

fail:
        /* Unexpected failure: give up on launch recording rather than risk blocking execs. Closing the group
         * allows the waiting events too. */
        pthread_mutex_lock(&r->lock);
        close_exec_group_locked(r);
        for (size_t i = 0; i < r->n_pending; i++)
                r->pending[i].fd = safe_close(r->pending[i].fd);
        r->n_pending = 0;
        r->launches_enabled = false;
        pthread_mutex_unlock(&r->lock);
        return NULL;
}

/* Arms every filesystem by its mount point when the exec thread asks: the path walks the exec thread must
 * not do. An exec that opened a window waits for this (RECORDER_ARM_WAIT_USEC at most). */
static void *armer_thread(void *userdata) {
        Recorder *r = userdata;

        for (;;) {
                struct pollfd p[2] = {
                        { .fd = r->arm_fd, .events = POLLIN },
                        { .fd = r->stop_fd, .events = POLLIN },
                };
                uint64_t target, disarms;

                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return NULL;
                }
                if (p[1].revents)
                        return NULL;
                eventfd_drain(r->arm_fd);

                pthread_mutex_lock(&r->lock);
                target = r->arm_seq;
                disarms = r->disarms;
                pthread_mutex_unlock(&r->lock);

                pthread_mutex_lock(&r->mark_lock);
                (void) mark_all_paths(r);
                pthread_mutex_unlock(&r->mark_lock);

                pthread_mutex_lock(&r->lock);
                /* disarmed meanwhile, and no launch since: what we marked is not wanted any more */
                if (r->disarms != disarms && !r->open_marked)
                        (void) fanotify_mark(r->open_fd, FAN_MARK_FLUSH | FAN_MARK_FILESYSTEM, 0, AT_FDCWD, NULL);
                r->armed_seq = MAX(r->armed_seq, target);
                pthread_mutex_unlock(&r->lock);
                eventfd_kick(r->wake_fd);
        }
}

int recorder_start(Recorder *r) {
        int k;

        k = pthread_create(&r->armer, NULL, armer_thread, r);
        if (k != 0)
                return -k;
        r->armer_started = true;
        r->started_usec = now_mono();
        k = pthread_create(&r->thread, NULL, exec_thread, r);
        if (k != 0)
                return -k;
        r->thread_started = true;
        return 0;
}

int recorder_set_filesystems(Recorder *r, const FilesystemList *l) {
        char **mounts;
        bool armed, launches;
        int failed = 0;

        mounts = calloc(l->n + 1, sizeof *mounts);
        if (!mounts)
                return -ENOMEM;
        for (size_t i = 0; i < l->n; i++) {
                mounts[i] = strdup(l->items[i].mount);
                if (!mounts[i]) {
                        strv_free(mounts);
                        return -ENOMEM;
                }
        }

        pthread_mutex_lock(&r->lock);
        armed = r->open_marked;
        launches = r->launches_enabled;
        pthread_mutex_unlock(&r->lock);

        pthread_mutex_lock(&r->mark_lock);
        for (size_t i = 0; i < r->n_mounts; i++)
                free(r->mounts[i]);
        free(r->mounts);
        r->mounts = mounts;
        r->n_mounts = l->n;
        /* No launch recording, no exec mark: an idle daemon then holds no mark at all (the mark alone
         * costs a hot open/read loop 2-3%, bench/record.sh part h). */
        for (size_t i = 0; launches && i < r->n_mounts; i++)
                if (r->exec_fd >= 0 &&
                    fanotify_mark(r->exec_fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_OPEN_EXEC_PERM,
                                  AT_FDCWD, r->mounts[i]) < 0)
                        failed++;
        if (armed) {
                /* drop read marks of filesystems that left the list (e.g. remounted read-only) */
                (void) fanotify_mark(r->open_fd, FAN_MARK_FLUSH | FAN_MARK_FILESYSTEM, 0, AT_FDCWD, NULL);
                failed += mark_all_paths(r);
        }
        pthread_mutex_unlock(&r->mark_lock);
        return failed;
}

void recorder_set_pages(Recorder *r, PageReader *pages) {
        pthread_mutex_lock(&r->lock);
        r->pages = pages;
        pthread_mutex_unlock(&r->lock);
}

void recorder_set_watch(Recorder *r, int (*watch)(pid_t pid, uint64_t seq, bool on, void *userdata),
                        void *userdata) {
        pthread_mutex_lock(&r->lock);
        r->watch = watch;
        r->watch_userdata = userdata;
        pthread_mutex_unlock(&r->lock);
}

int recorder_arm(Recorder *r) {
        int failed;

        pthread_mutex_lock(&r->mark_lock);
        failed = mark_all_paths(r);
        pthread_mutex_unlock(&r->mark_lock);
        pthread_mutex_lock(&r->lock);
        r->open_marked = true;
        if (r->pages)
                (void) page_reader_enable(r->pages, true);
        pthread_mutex_unlock(&r->lock);
        return failed > 0 ? -EIO : 0;
}

int recorder_disarm(Recorder *r, uint64_t seen_seq) {
        int ret = 0;

        pthread_mutex_lock(&r->lock);
        /* the page events too, even where the marks could not be placed */
        if (r->pages && r->exec_seq == seen_seq)
                (void) page_reader_enable(r->pages, false);
        if (r->open_marked && r->exec_seq == seen_seq) {
                if (fanotify_mark(r->open_fd, FAN_MARK_FLUSH | FAN_MARK_FILESYSTEM, 0, AT_FDCWD, NULL) < 0)
                        ret = -errno;
                else {
                        r->open_marked = false;
                        r->disarms++;
                        ret = 1;
                }
                if (r->ignores && fanotify_mark(r->open_fd, FAN_MARK_FLUSH, 0, AT_FDCWD, NULL) >= 0)
                        r->ignores = false;
        }
        pthread_mutex_unlock(&r->lock);
        return ret;
}

int recorder_ignore_file(Recorder *r, int fd, uint64_t seen_seq) {
        int ret = 0;

        pthread_mutex_lock(&r->lock);
        if (r->exec_seq == seen_seq) {
                /* Evictable: the mark does not pin the inode in memory; if the inode is evicted, the next
                 * read is reported again, which costs one more event, nothing else. */
                if (fanotify_mark(r->open_fd, FAN_MARK_ADD | FAN_MARK_IGNORED_MASK | FAN_MARK_EVICTABLE,
                                  RECORD_MASK, fd, NULL) < 0)
                        ret = -errno;
                else {
                        r->ignores = true;
                        ret = 1;
                }
        }
        pthread_mutex_unlock(&r->lock);
        return ret;
}

void recorder_gate_begin(Recorder *r) {
        pthread_mutex_lock(&r->lock);
        r->gating = true;
        pthread_mutex_unlock(&r->lock);
}

void recorder_gate_end(Recorder *r) {
        pthread_mutex_lock(&r->lock);
        r->gating = false;
        if (r->n_hold_marks > 0 && r->exec_fd >= 0 && r->holds->n_held == 0) {
                /* launch recording is off: no exec mark is wanted outside runs */
                (void) fanotify_mark(r->exec_fd, FAN_MARK_FLUSH | FAN_MARK_FILESYSTEM, 0, AT_FDCWD, NULL);
                r->n_hold_marks = 0;
        }
        pthread_mutex_unlock(&r->lock);
}

static void sleep_until(uint64_t t) {
        uint64_t now = now_mono();

        if (now < t) {
                uint64_t d = t - now;
                struct timespec ts = { .tv_sec = (time_t) (d / USEC_PER_SEC), .tv_nsec = (long) (d % USEC_PER_SEC * NSEC_PER_USEC) };

                (void) nanosleep(&ts, NULL);
        }
}

/* Since when the exec thread has seen and noted every exec of the file's filesystem (r->lock held). Without
 * launch recording no exec mark is held: one is placed on the file's filesystem for the run (through fd),
 * and execs that opened the file before it existed were never seen: they get RECORDER_MARK_SETTLE_USEC. */
static int noted_since_locked(Recorder *r, const FileKey *key, int fd, uint64_t *ret) {
        if (r->launches_enabled) {
                /* every exec is noted from the start on; ones before it had long settled by then */
                *ret = r->started_usec + RECORDER_EXEC_SETTLE_USEC;
                return 0;
        }
        for (size_t i = 0; i < r->n_hold_marks; i++)
                if (r->hold_marks[i].fsid == key->fsid) {
                        *ret = r->hold_marks[i].usec + RECORDER_MARK_SETTLE_USEC;
                        return 0;
                }
        if (r->n_hold_marks >= ELEMENTSOF(r->hold_marks))
                return -ENOSPC;
        if (fanotify_mark(r->exec_fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_OPEN_EXEC_PERM, fd, NULL) < 0)
                return -errno;
        r->hold_marks[r->n_hold_marks++] = (HoldMark) { .fsid = key->fsid, .usec = now_mono() };
        *ret = now_mono() + RECORDER_MARK_SETTLE_USEC;
        return 0;
}

int recorder_hold_execs(Recorder *r, const FileKey *key, int fd) {
        _cleanup_free_ RecentExec *recent = malloc(EXEC_RECENT_MAX * sizeof *recent);
        uint64_t settled = 0;
        int n, k;

        if (!recent)
                return -ENOMEM;
        pthread_mutex_lock(&r->lock);
        if (r->exec_fd < 0 || !r->thread_started || !r->gating)
                k = -ENOTCONN;
        else
                k = noted_since_locked(r, key, fd, &settled);
        pthread_mutex_unlock(&r->lock);
        if (k < 0)
                return k;
        sleep_until(settled);

        pthread_mutex_lock(&r->lock);
        k = exec_holds_add(r->holds, key);
        n = k < 0 ? k : exec_holds_recent(r->holds, key, now_mono() - RECORDER_EXEC_SETTLE_USEC, recent,
                                          EXEC_RECENT_MAX);
        pthread_mutex_unlock(&r->lock);
        if (k < 0)
                return k;

        /* From here on its execs wait. One allowed before may still be on its way to denying writes: it has
         * got past that once the process runs another executable (the exec replaced it) or is gone. */
        for (int i = 0; n >= 0 && i < n; i++) {
                dev_t dev = 0;
                ino_t ino = 0;
                int q = proc_exe(recent[i].pid, &dev, &ino);

                if (q == -ENOENT || q == -ESRCH)
                        continue;
                if (q >= 0 && recent[i].exe_ino != 0 && (dev != recent[i].exe_dev || ino != recent[i].exe_ino))
                        continue;
                n = -EBUSY;
        }
        if (n < 0) {
                recorder_release_execs(r, key);
                return -EBUSY;
        }
        return 0;
}

bool recorder_execs_waiting(Recorder *r, const FileKey *key) {
        bool waiting = false;

        pthread_mutex_lock(&r->lock);
        for (size_t i = 0; i < r->n_pending && !waiting; i++)
                waiting = r->pending[i].key.handle_len > 0 && file_key_equal(&r->pending[i].key, key);
        pthread_mutex_unlock(&r->lock);
        return waiting;
}

void recorder_release_execs(Recorder *r, const FileKey *key) {
        pthread_mutex_lock(&r->lock);
        (void) exec_holds_remove(r->holds, key);
        pthread_mutex_unlock(&r->lock);
        eventfd_kick(r->wake_fd);
}

RecorderStats recorder_get_stats(Recorder *r) {
        RecorderStats s;

        pthread_mutex_lock(&r->lock);
        s = r->stats;
        pthread_mutex_unlock(&r->lock);
        return s;
}
