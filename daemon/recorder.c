/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "recorder.h"

/* FAN_ACCESS, not FAN_OPEN: we want the files that are *read*, in the order of their first read. An open
 * for writing (a log, a file being created) raises FAN_OPEN but no FAN_ACCESS, and a read() that hits EOF
 * raises nothing. Repeated reads of one file by one process merge into one queued event. ELF objects
 * are read() (header) before they are mapped, so libraries are seen too. */
#define RECORD_MASK FAN_ACCESS

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
        r->launches_enabled = launches_enabled;

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
        /* drain records the main loop never took, closing their fds */
        if (r->pipe_fd[0] >= 0) {
                ExecRecord rec;
                while (read(r->pipe_fd[0], &rec, sizeof rec) == sizeof rec)
                        safe_close(rec.fd);
        }
        safe_close(r->pipe_fd[0]);
        safe_close(r->pipe_fd[1]);
        for (size_t i = 0; i < r->n_mounts; i++)
                free(r->mounts[i]);
        free(r->mounts);
        pthread_mutex_destroy(&r->lock);
        free(r);
        return NULL;
}

static int mark_all_locked(Recorder *r, bool add) {
        int failed = 0;

        for (size_t i = 0; i < r->n_mounts; i++)
                if (fanotify_mark(r->open_fd, (add ? FAN_MARK_ADD : FAN_MARK_REMOVE) | FAN_MARK_FILESYSTEM,
                                  RECORD_MASK, AT_FDCWD, r->mounts[i]) < 0 &&
                    !(errno == ENOENT && !add))
                        failed++;
        r->open_marked = add;
        return failed;
}

static void handle_exec_event(Recorder *r, const struct fanotify_event_metadata *m, pid_t self) {
        struct fanotify_response resp = { .fd = m->fd, .response = FAN_ALLOW };
        ExecRecord rec = { .pid = m->pid, .fd = -EBADF, .timestamp_usec = now_mono() };
        bool forward = false;

        if (m->pid != self) {
                pthread_mutex_lock(&r->lock);
                rec.seq = ++r->exec_seq;
                forward = r->launches_enabled;
                if (forward && !r->open_marked)
                        (void) mark_all_locked(r, true);
                pthread_mutex_unlock(&r->lock);
        }

        /* Queue the record *before* allowing the exec: once allowed, the program runs and its reads may
         * reach the main loop at once, and they can only be attributed if its exec is already queued.
         * The main loop gets its own fd (a dup) so it can never close the fd this response refers to. */
        if (forward) {
                rec.fd = fcntl(m->fd, F_DUPFD_CLOEXEC, 3);
                if (rec.fd >= 0 && write(r->pipe_fd[1], &rec, sizeof rec) != (ssize_t) sizeof rec)
                        rec.fd = safe_close(rec.fd);   /* main loop far behind: drop this exec */
        }

        /* Always allow, whatever happened above: we observe, we never deny. */
        (void) !write(r->exec_fd, &resp, sizeof resp);
        safe_close(m->fd);
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
                        if (errno == EAGAIN || errno == EINTR)
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
        for (size_t i = 0; i < r->n_mounts; i++)
                free(r->mounts[i]);
        free(r->mounts);
        r->mounts = mounts;
        r->n_mounts = l->n;
        for (size_t i = 0; i < r->n_mounts; i++) {
                if (r->exec_fd >= 0 &&
                    fanotify_mark(r->exec_fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_OPEN_EXEC_PERM,
                                  AT_FDCWD, r->mounts[i]) < 0)
                        failed++;
                if (r->open_marked &&
                    fanotify_mark(r->open_fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, RECORD_MASK,
                                  AT_FDCWD, r->mounts[i]) < 0)
                        failed++;
        }
        pthread_mutex_unlock(&r->lock);
        return failed;
}

int recorder_arm(Recorder *r) {
        int failed;

        pthread_mutex_lock(&r->lock);
        failed = mark_all_locked(r, true);
        pthread_mutex_unlock(&r->lock);
        return failed > 0 ? -EIO : 0;
}

int recorder_disarm(Recorder *r, uint64_t seen_seq) {
        int ret = 0;

        pthread_mutex_lock(&r->lock);
        if (r->open_marked && r->exec_seq == seen_seq) {
                (void) mark_all_locked(r, false);
                ret = 1;
        }
        pthread_mutex_unlock(&r->lock);
        return ret;
}

bool recorder_armed(Recorder *r) {
        bool b;

        pthread_mutex_lock(&r->lock);
        b = r->open_marked;
        pthread_mutex_unlock(&r->lock);
        return b;
}

int recorder_parse_fid(const struct fanotify_event_metadata *m, FileKey *ret) {
        const char *p = (const char *) m + m->metadata_len, *end = (const char *) m + m->event_len;

        while (p + sizeof(struct fanotify_event_info_header) <= end) {
                const struct fanotify_event_info_header *h = (const void *) p;
                const struct fanotify_event_info_fid *fid;
                const struct file_handle *fh;

                if (h->len < sizeof *h || p + h->len > end)
                        return -EBADMSG;
                if (h->info_type != FAN_EVENT_INFO_TYPE_FID) {
                        p += h->len;
                        continue;
                }
                if (h->len < sizeof *fid + sizeof *fh)
                        return -EBADMSG;
                fid = (const void *) p;
                fh = (const struct file_handle *) fid->handle;
                if (sizeof *fid + sizeof *fh + fh->handle_bytes > h->len)
                        return -EBADMSG;
                if (fh->handle_bytes > FID_HANDLE_MAX)
                        return 0;     /* not an ext4-sized handle; we don't record such filesystems */
                FileKey k = { .handle_type = fh->handle_type, .handle_len = fh->handle_bytes };
                memcpy(&k.fsid, &fid->fsid, sizeof k.fsid);
                memcpy(k.handle, fh->f_handle, fh->handle_bytes);
                *ret = k;
                return 1;
        }
        return 0;
}
