/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "fid-util.h"
#include "pidmap.h"
#include "recorder.h"

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
        r->open_fd = r->exec_fd = r->stop_fd = r->pipe_fd[0] = r->pipe_fd[1] = -EBADF;
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
        if (r->thread_started) {
                uint64_t one = 1;
                (void) !write(r->stop_fd, &one, sizeof one);
                pthread_join(r->thread, NULL);
        }
        close_exec_group_locked(r);
        safe_close(r->open_fd);
        safe_close(r->stop_fd);
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

static void handle_exec_event(Recorder *r, const struct fanotify_event_metadata *m, pid_t self) {
        struct fanotify_response resp = { .fd = m->fd, .response = FAN_ALLOW };
        ExecRecord rec = { .pid = m->pid, .timestamp_usec = now_mono() };
        bool forward = false, queued = false, arm_others = false;
        _cleanup_free_ char *path = NULL;

        if (m->pid != self) {
                pthread_mutex_lock(&r->lock);
                forward = r->launches_enabled;
                pthread_mutex_unlock(&r->lock);
        }

        if (forward && file_key_from_fd(m->fd, &rec.key) >= 0) {
                if (fd_get_path(m->fd, &path) >= 0 && strlen(path) < sizeof rec.path)
                        strcpy(rec.path, path);
                /* Who launches it, read while the process waits in execve() for our answer, so it is still
                 * there (a short-lived program could be gone by the time the main loop looks). procfs
                 * only: /proc/PID/status takes no lock the exec holds. */
                if (proc_get_uid("/proc", m->pid, &rec.uid) < 0)
                        rec.uid = UID_INVALID;

                pthread_mutex_lock(&r->lock);
                /* A launch must see every read, also of files the boot session already has and told
                 * the kernel to stop reporting: drop those ignore marks (one call, no path walk). */
                if (r->ignores &&
                    fanotify_mark(r->open_fd, FAN_MARK_FLUSH, 0, AT_FDCWD, NULL) >= 0)
                        r->ignores = false;
                /* Arm the exec'd file's own filesystem through its fd (no path walk), and queue the
                 * record, both *before* allowing the exec: once allowed, the program runs and its reads
                 * can only be attributed if its exec is already queued. */
                if (fanotify_mark(r->open_fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, RECORD_MASK, m->fd, NULL) >= 0) {
                        arm_others = !r->open_marked;
                        r->open_marked = true;
                }
                /* the program's page reads too (0.4-0.5 ms, only if no window had them on already) */
                if (r->pages)
                        (void) page_reader_enable(r->pages, true);
                rec.seq = r->exec_seq + 1;
                if (write(r->pipe_fd[1], &rec, sizeof rec) == (ssize_t) sizeof rec) {
                        r->exec_seq = rec.seq;
                        queued = true;
                }
                pthread_mutex_unlock(&r->lock);
        }

        /* Always allow, whatever happened above: we observe, we never deny. */
        (void) !write(r->exec_fd, &resp, sizeof resp);
        safe_close(m->fd);

        /* The program may also read from the other watched filesystems: arm them too, now that nothing
         * waits on us. Reads there in the first moments of the launch may be missed. */
        if (queued && arm_others) {
                pthread_mutex_lock(&r->mark_lock);
                (void) mark_all_paths(r);
                pthread_mutex_unlock(&r->mark_lock);
        }
}

static void *exec_thread(void *userdata) {
        Recorder *r = userdata;
        pid_t self = getpid();
        union {
                struct fanotify_event_metadata m;
                char buf[4096];
        } u;

        for (;;) {
                struct pollfd p[2] = {
                        { .fd = r->exec_fd, .events = POLLIN },
                        { .fd = r->stop_fd, .events = POLLIN },
                };
                ssize_t n;

                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (p[1].revents)
                        return NULL;
                n = read(r->exec_fd, u.buf, sizeof u.buf);
                if (n < 0) {
                        /* EMFILE/ENFILE: the kernel could not give us an fd for an event; it has already
                         * answered that event itself. Keep serving the others. */
                        if (errno == EAGAIN || errno == EINTR || errno == EMFILE || errno == ENFILE)
                                continue;
                        break;
                }
                for (struct fanotify_event_metadata *m = &u.m; FAN_EVENT_OK(m, n); m = FAN_EVENT_NEXT(m, n)) {
                        if (m->fd < 0)
                                continue;
                        if (m->mask & FAN_OPEN_EXEC_PERM)
                                handle_exec_event(r, m, self);
                        else
                                safe_close(m->fd);
                }
        }

        /* Unexpected failure: give up on launch recording rather than risk blocking execs. */
        pthread_mutex_lock(&r->lock);
        close_exec_group_locked(r);
        r->launches_enabled = false;
        pthread_mutex_unlock(&r->lock);
        return NULL;
}

int recorder_start(Recorder *r) {
        int k;

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
