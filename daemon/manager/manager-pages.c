/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Page-cache recording wired to the sessions: the PageReader's events, in timestamp order, become page
 * ranges of the open sessions (doc/page-recording.md §5). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/log.h"
#include "manager/manager.h"
#include "fs/mount-fds.h"
#include "record/page-files.h"

static int open_mount(uint64_t fsid, void *userdata) {
        return manager_open_mount_fd(userdata, fsid);
}

/* The session's file for a page event's inode: cached per session, else opened by its inode number. user: the
 * reader is a user's process and s the boot session (boot-share.h). */
static int session_file_of(Manager *m, Session *s, bool user, const PageCacheEvent *e, uint64_t t,
                           MountFds *fds, uint32_t *ret) {
        const Filesystem *fs = filesystem_list_find_dev(&m->filesystems, e->dev);
        uint32_t file = SESSION_INODE_LEFT_OUT;
        FileKey key;
        ssize_t i;
        int r, mfd;

        if (session_inode_get(s, e->dev, e->ino, ret) >= 0) {
                /* left out at the users' share: for users; a system process's read takes it */
                if (*ret != SESSION_INODE_USERS_FULL)
                        return 0;
                if (user) {
                        *ret = SESSION_INODE_LEFT_OUT;
                        return 0;
                }
        }
        mfd = fs ? mount_fds_get(fds, fs->fsid) : -ENODEV;
        r = mfd < 0 ? mfd : page_file_key(mfd, e->ino, s->start_realtime_usec, &key);
        if (r > 0) {
                /* a file fanotify reported already keeps its place; else it takes the page's */
                r = s == m->recording.boot ?
                        boot_share_add_file(&m->recording.boot_share, s, user, &key, t, NULL, NULL) :
                        session_add(s, &key, t);
                if (r > 0)
                        manager_want_resolve(m);
                i = session_index(s, &key);
                if (i >= 0)
                        file = (uint32_t) i;
                else if (user && !s->full)
                        file = SESSION_INODE_USERS_FULL;
        } else if (r < 0)
                m->pages.unresolved++;
        r = session_inode_put(s, e->dev, e->ino, file);
        if (r < 0 && r != -EOVERFLOW)   /* -EOVERFLOW: not cached (no 32-bit inode number) */
                return r;
        *ret = file == SESSION_INODE_USERS_FULL ? SESSION_INODE_LEFT_OUT : file;
        return 0;
}

void manager_session_take_page(Manager *m, Session *s, bool user, const PageCacheEvent *e, uint64_t t,
                               MountFds *fds) {
        bool boot = s == m->recording.boot;
        uint32_t file;

        /* still in the buffer from before this session began (the event stays on between windows only
         * while one is open, but the last drain of the previous one may have left some) */
        if (t < s->start_usec)
                return;
        s->page_events++;
        /* a page of a block device: the filesystem's metadata (directories, inode tables), kept apart */
        if (e->ino == 0) {
                const Filesystem *fs = filesystem_list_find_dev(&m->filesystems, e->dev);

                if (fs && (boot ? boot_share_add_metadata(&m->recording.boot_share, s, user, fs->fsid,
                                                          e->index, e->n_pages, t) :
                                  session_add_metadata(s, fs->fsid, e->index, e->n_pages, t)) < 0)
                        s->incomplete = true;
                return;
        }
        if (session_file_of(m, s, user, e, t, fds, &file) < 0 || file == SESSION_INODE_LEFT_OUT)
                return;
        if ((boot ? boot_share_add_pages(&m->recording.boot_share, s, user, file, e->index, e->n_pages, t) :
                    session_add_pages(s, file, e->index, e->n_pages, t)) < 0)
                s->incomplete = true;
}

/* The main loop gives the page events at most this long at a time before it serves the rest (the bus,
 * fanotify, signals) and goes on with them: a flood of page events, or of files new to a session (each
 * opened by its handle), never keeps it busy. The clock is read every PAGES_CLOCK_EVERY events. */
#define PAGES_SLICE_USEC (50 * USEC_PER_MSEC)
/* Before a window closes, what waits is given this long at most: events of the closing window still
 * waiting then count as lost for it. */
#define PAGES_DRAIN_USEC (250 * USEC_PER_MSEC)
#define PAGES_CLOCK_EVERY 64

static void manager_pages_lost(Manager *m, uint64_t lost) {
        if (lost == 0)
                return;
        log_warning("%" PRIu64 " page-cache event(s) lost (the buffer was full): sessions open now are marked incomplete",
                    lost);
        m->pages.lost += lost;
        if (m->recording.boot) {
                m->recording.boot->incomplete = true;
                m->recording.boot->lost_pages += lost;
        }
        for (Session *s = m->recording.launches; s; s = s->next) {
                s->incomplete = true;
                s->lost_pages += lost;
        }
}

/* Gives the events taken to the sessions, in order, until stop_usec (CLOCK_MONOTONIC). Returns how many
 * are left. */
static size_t manager_pages_work(Manager *m, uint64_t stop_usec) {
        _cleanup_(mount_fds_done) MountFds fds = { .open = open_mount, .userdata = m };
        pid_t self = getpid();
        size_t i;

        /* forks and execs queued since the events were taken: attributing them needs no less */
        manager_drain_forks(m);
        for (i = m->pages.pending_next; i < m->pages.n_pending; i++) {
                const PageCacheEvent *e = &m->pages.pending[i];
                uint64_t t = e->timestamp_nsec / NSEC_PER_USEC;
                pid_t tgid;

                if ((i - m->pages.pending_next) % PAGES_CLOCK_EVERY == PAGES_CLOCK_EVERY - 1 &&
                    now_usec(CLOCK_MONOTONIC) >= stop_usec)
                        break;
                m->pages.received++;
                if (!m->recording.boot && !m->recording.launches)
                        continue;
                tgid = pidmap_tgid(&m->recording.pidmap, e->tid);
                if (tgid == self)       /* our own reads (the mover, the resolver) */
                        continue;
                if (m->recording.boot)
                        manager_session_take_page(m, m->recording.boot, manager_boot_user(m, tgid), e, t, &fds);
                /* with BPF, the launches' pages come from it */
                if (m->recording.launches && !m->pages.bpf) {
                        Session *s = pidmap_lookup(&m->recording.pidmap, m->recording.launches, tgid);
                        if (s)
                                manager_session_take_page(m, s, false, e, t, &fds);
                }
        }
        m->pages.pending_next = i;
        if (i < m->pages.n_pending)
                return m->pages.n_pending - i;
        m->pages.pending = mfree(m->pages.pending);
        m->pages.n_pending = m->pages.pending_next = 0;
        return 0;
}

/* Takes what the reader queued, once the events taken before are all given to the sessions (so the
 * reader's bounded queue is all the memory a backlog takes). */
static void manager_pages_take(Manager *m) {
        uint64_t lost = 0;

        if (m->pages.n_pending > 0)
                return;
        if (page_reader_take(m->pages.reader, &m->pages.pending, &m->pages.n_pending, &lost) < 0)
                return;
        m->pages.pending_next = 0;
        manager_pages_lost(m, lost);
}

/* One slice: take, give. While events wait, the reader's fd is left alone and a defer source goes on. */
static void manager_pages_step(Manager *m) {
        size_t left;

        manager_pages_take(m);
        left = manager_pages_work(m, now_usec(CLOCK_MONOTONIC) + PAGES_SLICE_USEC);
        (void) sd_event_source_set_enabled(m->pages.defer, left > 0 ? SD_EVENT_ON : SD_EVENT_OFF);
        (void) sd_event_source_set_enabled(m->pages.source, left > 0 ? SD_EVENT_OFF : SD_EVENT_ON);
}

static int on_pages(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        manager_pages_step(userdata);
        return 0;
}

static int on_pages_defer(sd_event_source *source, void *userdata) {
        manager_pages_step(userdata);
        return 0;
}

size_t manager_pages_drain(Manager *m) {
        uint64_t stop = now_usec(CLOCK_MONOTONIC) + PAGES_DRAIN_USEC;
        size_t left, bpf_left;

        /* records left in the BPF ring at the bound: how many is not known, one is counted */
        bpf_left = manager_pages_bpf_drain(m, stop) ? 1 : 0;
        if (!m->pages.reader)
                return bpf_left;
        left = manager_pages_work(m, stop);
        if (left == 0 && page_reader_enabled(m->pages.reader)) {
                (void) page_reader_drain(m->pages.reader);
                manager_pages_take(m);
                left = manager_pages_work(m, stop);
        }
        (void) sd_event_source_set_enabled(m->pages.defer, left > 0 ? SD_EVENT_ON : SD_EVENT_OFF);
        (void) sd_event_source_set_enabled(m->pages.source, left > 0 ? SD_EVENT_OFF : SD_EVENT_ON);
        return left + bpf_left;
}

void manager_pages_set_filesystems(Manager *m) {
        _cleanup_free_ dev_t *devs = NULL;
        size_t n = MIN(m->filesystems.n, (size_t) PAGECACHE_MAX_DEVICES);
        int r, metadata = 0;
        dev_t bdev = 0;

        if (!m->pages.reader && !m->pages.bpf)
                return;
        devs = calloc(n + 1, sizeof *devs);
        if (!devs)
                return;
        for (size_t i = 0; i < n; i++)
                devs[i] = m->filesystems.items[i].dev;
        /* the BPF recorder's filter is all of them or every device (NULL): never a part */
        if (!m->pages.reader) {
                manager_pages_bpf_set_filesystems(m, m->filesystems.n > n ? NULL : devs, n, 0);
                return;
        }
        r = page_reader_set_devices(m->pages.reader, devs, n, &metadata);
        manager_pages_bpf_set_filesystems(m, m->filesystems.n > n ? NULL : devs, n,
                                          page_reader_bdev(m->pages.reader, &bdev) >= 0 ? bdev : 0);
        if (r < 0)
                log_warning_errno(r, "Failed to set the page-cache event's filter, page events may be missed: %m");
        if (n == 0 || metadata == m->pages.metadata)
                return;
        /* once per change: learned, or why not (tried again at the next change of the filesystems) */
        m->pages.metadata = metadata;
        if (metadata > 0 && page_reader_bdev(m->pages.reader, &bdev) >= 0)
                log_debug("Block devices' own pages are those of device %u:%u in page events", major(bdev),
                          minor(bdev));
        else if (metadata < 0)
                log_info_errno(metadata, "Filesystem metadata not recorded for now: could not learn which page "
                               "events are a block device's own (%s%m), trying again when the filesystems change",
                               metadata == -EBUSY ? "a window was open, " : "");
}

int manager_pages_start(Manager *m) {
        PageCacheOptions o = {
                .tracefs = m->tracefs,
                .buffer_kib = MIN(1024u, 16u * 1024 / MAX(1u, (unsigned) sysconf(_SC_NPROCESSORS_CONF))),
                /* counted per session for now; the prefetch step is to keep them */
                .metadata = true,
        };
        int r;

        r = page_reader_new(&o, &m->pages.reader);
        if (r < 0) {
                log_info_errno(r, "No page-cache events (%s, tracepoint filemap:mm_filemap_add_to_page_cache): recording whole files only: %m",
                               m->tracefs ?: "/sys/kernel/tracing");
                return 0;
        }
        manager_pages_set_filesystems(m);
        r = sd_event_add_io(m->event, &m->pages.source, page_reader_fd(m->pages.reader), EPOLLIN, on_pages, m);
        if (r >= 0)
                r = sd_event_add_defer(m->event, &m->pages.defer, on_pages_defer, m);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->pages.defer, SD_EVENT_OFF);
        if (r < 0) {
                m->pages.source = sd_event_source_disable_unref(m->pages.source);
                m->pages.defer = sd_event_source_disable_unref(m->pages.defer);
                m->pages.reader = page_reader_free(m->pages.reader);
                return log_error_errno(r, "Failed to watch the page-cache reader: %m");
        }
        recorder_set_pages(m->recording.recorder, m->pages.reader);
        log_info("Recording page-cache events in %s", m->tracefs ?: "/sys/kernel/tracing");
        return 0;
}

void manager_pages_stop(Manager *m) {
        m->pages.source = sd_event_source_disable_unref(m->pages.source);
        m->pages.defer = sd_event_source_disable_unref(m->pages.defer);
        m->pages.pending = mfree(m->pages.pending);
        m->pages.n_pending = m->pages.pending_next = 0;
        if (m->recording.recorder)
                recorder_set_pages(m->recording.recorder, NULL);
        m->pages.reader = page_reader_free(m->pages.reader);
}
