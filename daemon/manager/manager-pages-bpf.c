/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The boot's and launches' pages recorded with BPF (record-bpf/bpf-pages.h), wired to the sessions: the
 * exec thread watches each process it lets exec under the exec's seq, before it allows it; a launch
 * session takes the records of its tag, the pages its processes read from the disk and, where the kernel
 * has the tracepoints, the pages they used that were cached already (a warm start, a prefetched one); an
 * exec that starts no session of its own leaves the recorder or joins its launch's tag. While the boot is
 * recorded every other process is watched under the boot's tag, and the boot takes every record. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sysmacros.h>

#include "common/log.h"
#include "common/time-util.h"
#include "manager/manager.h"
#include "manager/manager-pages.h"
#include "fs/resident.h"
#include "record/page-files.h"

static int open_mount(uint64_t fsid, void *userdata) {
        return manager_open_mount_fd(userdata, fsid);
}

/* The boot session's tag: no launch's */
#define BOOT_TAG UINT32_MAX
#define BPF_TURN_USEC (50 * USEC_PER_MSEC)

/* An exec record's seq as a tag: never 0 (a session's "not watched") nor the boot's, the same on both
 * threads */
static uint32_t tag_of(uint64_t seq) {
        return (uint32_t) (1 + (seq - 1) % (UINT32_MAX - 1));
}

static Session *session_of_tag(Manager *m, uint32_t tag) {
        for (Session *s = m->recording.launches; s; s = s->next)
                if (s->watch_tag != 0 && s->watch_tag == tag)
                        return s;
        return NULL;
}

/* Pages [first, first + n) of the record, to the boot (which takes every record, a launch's too, as it
 * takes every process's page events) and to the launch s. */
static void take(Manager *m, Session *boot, Session *s, const BpfPageEvent *e, PageCacheEvent *pe, uint64_t first,
                 uint64_t n) {
        pe->index = first;
        pe->n_pages = (uint32_t) MIN(n, (uint64_t) UINT32_MAX);
        if (boot)
                manager_session_take_page(m, boot, manager_boot_user(m, e->pid), pe,
                                          e->timestamp_nsec / NSEC_PER_USEC, m->pages.bpf_fds);
        if (!s)
                return;
        /* the files' pages only: the metadata has no use to count */
        if (pe->ino != 0 && e->kind == BPF_PAGE_ADD)
                s->pages_read += n;
        else if (pe->ino != 0)
                s->pages_used += n;
        manager_session_take_page(m, s, false, pe, e->timestamp_nsec / NSEC_PER_USEC, m->pages.bpf_fds);
}

/* Fault-around's window (map_pages) says which pages it looked at, not which it mapped: it maps the cached
 * ones only. Of a window the pages cached now are taken (those it mapped, and any read since, which a
 * record of their own brings anyway); a window longer than this, or whose file cannot be looked at, is
 * taken whole. Returns whether it took the window. */
#define MAP_WINDOW_MAX 1024

static bool take_mapped(Manager *m, Session *boot, Session *s, const BpfPageEvent *e, PageCacheEvent *pe,
                        const Filesystem *fs) {
        unsigned char vec[MAP_WINDOW_MAX];
        uint64_t n = e->last - e->first + 1, run = 0;
        _cleanup_close_ int fd = -EBADF;
        int mfd;

        if (n > MAP_WINDOW_MAX)
                return false;
        mfd = mount_fds_get(m->pages.bpf_fds, fs->fsid);
        if (mfd < 0)
                return false;
        fd = page_file_open(mfd, pe->ino, O_RDONLY | O_CLOEXEC | O_NOATIME);
        if (fd < 0 || range_resident(fd, e->first, (size_t) n, vec) < 0)
                return false;
        for (uint64_t i = 0; i <= n; i++) {
                if (i < n && (vec[i] & 1)) {
                        run++;
                        continue;
                }
                if (run > 0)
                        take(m, boot, s, e, pe, e->first + i - run, run);
                run = 0;
        }
        return true;
}

/* A record: a block device's own page (the pseudo filesystem the tracefs reader learned, the device's
 * number as the inode) is the metadata of the filesystem on it; pages of filesystems not watched are
 * left out. */
static void on_event(const BpfPageEvent *e, void *userdata) {
        Manager *m = userdata;
        Session *boot = m->recording.boot && m->recording.boot->watch_tag == BOOT_TAG ? m->recording.boot : NULL;
        Session *s = e->tag == BOOT_TAG ? NULL : session_of_tag(m, e->tag);
        PageCacheEvent pe = {
                .dev = e->dev,
                .ino = e->ino,
                .index = e->first,
                .tid = e->pid,
                .timestamp_nsec = e->timestamp_nsec,
        };
        const Filesystem *fs;

        if ((!s && !boot) || !m->pages.bpf_fds)
                return;
        if (m->pages.bpf_bdev != 0 && e->dev == m->pages.bpf_bdev) {
                pe.dev = makedev((unsigned) (e->ino >> 20), (unsigned) (e->ino & 0xfffff));
                pe.ino = 0;
        }
        fs = filesystem_list_find_dev(&m->filesystems, pe.dev);
        if (!fs)
                return;
        if (e->kind == BPF_PAGE_MAP_PAGES && pe.ino != 0 && take_mapped(m, boot, s, e, &pe, fs))
                return;
        take(m, boot, s, e, &pe, e->first, e->last - e->first + 1);
}

static void bpf_lost(Manager *m) {
        uint64_t lost;

        if (bpf_pages_lost(m->pages.bpf, &lost) < 0 || lost <= m->pages.bpf_lost)
                return;
        log_warning("%" PRIu64 " BPF page record(s) lost (the ring buffer was full): the sessions open now are "
                    "marked incomplete", lost - m->pages.bpf_lost);
        for (Session *s = m->recording.launches; s; s = s->next) {
                s->incomplete = true;
                s->lost_pages += lost - m->pages.bpf_lost;
        }
        /* the boot's too, where BPF records it */
        if (m->recording.boot && m->recording.boot->watch_tag == BOOT_TAG) {
                m->recording.boot->incomplete = true;
                m->recording.boot->lost_pages += lost - m->pages.bpf_lost;
        }
        m->pages.lost += lost - m->pages.bpf_lost;
        m->pages.bpf_lost = lost;
}

bool manager_pages_bpf_drain(Manager *m, uint64_t until_usec) {
        _cleanup_(mount_fds_done) MountFds fds = { .open = open_mount, .userdata = m };
        int r;

        if (!m->pages.bpf)
                return false;
        /* the launches whose records may wait in the ring buffer first: records without a session are
         * dropped */
        manager_record_drain_execs(m);
        /* which device's pages are block devices' own: learned by the tracefs reader, asked once a drain
         * (under its lock), not once a record */
        if (!m->pages.reader || page_reader_bdev(m->pages.reader, &m->pages.bpf_bdev) < 0)
                m->pages.bpf_bdev = 0;
        m->pages.bpf_fds = &fds;
        r = bpf_pages_consume(m->pages.bpf, until_usec);
        m->pages.bpf_fds = NULL;
        bpf_lost(m);
        return r == -EAGAIN;
}

/* A turn of the event loop takes the ring's records for BPF_TURN_USEC at most: the rest wait for the next
 * turn (the fd stays readable), after the bus and the timers had theirs. */
static int on_bpf(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        (void) manager_pages_bpf_drain(userdata, now_usec(CLOCK_MONOTONIC) + BPF_TURN_USEC);
        return 0;
}

/* The exec thread's call, before it allows the exec: a process already watched (forked by a launch's)
 * keeps its tag. Undone (!on) when the exec's record could not be queued. */
static int watch_exec(pid_t pid, uint64_t seq, bool on, void *userdata) {
        int r;

        if (!on)
                return bpf_pages_unwatch_if(userdata, pid, tag_of(seq));
        r = bpf_pages_watch_new(userdata, pid, tag_of(seq));
        return r == -EEXIST ? 0 : r;
}

int manager_pages_bpf_start(Manager *m) {
        BpfPagesOptions o = {
                .tracefs = m->tracefs,
                /* 1 MiB: the ring is mapped into this process twice over (its data pages count twice in
                 * its RSS), and the main loop takes its records as they come */
                .ring_kib = 1024,
                .on_event = on_event,
                .userdata = m,
        };
        unsigned attached;
        int r;

        if (m->config.recorder == RECORDER_FANOTIFY)
                return 0;
        r = bpf_pages_new(&o, &m->pages.bpf);
        if (r < 0) {
                int level = m->config.recorder == RECORDER_BPF ? LOG_WARNING : LOG_INFO;

                if (r == -EXDEV)
                        log_full(level, "No BPF page recorder (seeklessd is not in the initial PID namespace, whose process ids the programs report): the boot's and launches' pages are recorded from page-cache events");
                else
                        log_full_errno(level, r,
                                       "No BPF page recorder (%s%m): the boot's and launches' pages are recorded from page-cache events",
                                       r == -EOPNOTSUPP ? "not built in: " : "");
                return 0;
        }
        r = sd_event_add_io(m->event, &m->pages.bpf_source, bpf_pages_fd(m->pages.bpf), EPOLLIN, on_bpf, m);
        if (r < 0) {
                m->pages.bpf = bpf_pages_free(m->pages.bpf);
                return log_error_errno(r, "Failed to watch the BPF page recorder: %m");
        }
        recorder_set_watch(m->recording.recorder, watch_exec, m->pages.bpf);
        /* the page events of the tracepoint are no longer switched on: BPF records the boot and the
         * launches (the reader stays, to learn which device's pages are block devices' own) */
        if (m->pages.reader) {
                recorder_set_pages(m->recording.recorder, NULL);
                (void) page_reader_enable(m->pages.reader, false);
        }
        manager_pages_set_filesystems(m);
        attached = bpf_pages_attached(m->pages.bpf);
        log_info("Recording pages with BPF (the boot's and the launches'): pages read from the disk%s; a ring "
                 "buffer of %u KiB",
                 attached & (1u << BPF_PAGE_GET_PAGES) ? ", and pages used that were cached" :
                 " (this kernel has no tracepoint for pages used)", o.ring_kib);
        return 0;
}

void manager_pages_bpf_stop(Manager *m) {
        if (m->pages.bpf)
                log_info("BPF page recorder: %" PRIu64 " process(es) still watched at stop",
                         bpf_pages_watching(m->pages.bpf));
        if (m->recording.recorder)
                recorder_set_watch(m->recording.recorder, NULL, NULL);
        m->pages.bpf_source = sd_event_source_disable_unref(m->pages.bpf_source);
        m->pages.bpf = bpf_pages_free(m->pages.bpf);
}

bool manager_pages_bpf_uses(Manager *m) {
        return m->pages.bpf && (bpf_pages_attached(m->pages.bpf) & (1u << BPF_PAGE_GET_PAGES));
}

void manager_pages_bpf_launch(Manager *m, Session *s, const ExecRecord *rec) {
        if (!m->pages.bpf)
                return;
        s->watch_tag = tag_of(rec->seq);
        s->uses = manager_pages_bpf_uses(m);
        if (rec->unwatched) {
                /* the map was full (processes of launches still running): no pages of this one */
                log_warning("Launch of %s: its pages are not recorded (the BPF recorder's map of watched "
                            "processes is full): stored as incomplete", s->profile);
                s->incomplete = true;
        }
        /* watched already under another tag (forked by a process watched before): this session's now */
        (void) bpf_pages_watch(m->pages.bpf, s->root_pid, s->watch_tag);
}

void manager_pages_bpf_not_launch(Manager *m, const ExecRecord *rec, Session *owner) {
        if (!m->pages.bpf)
                return;
        if (owner && owner->watch_tag != 0)
                (void) bpf_pages_watch(m->pages.bpf, rec->pid, owner->watch_tag);
        else
                /* what it forked since (a few ms) stays watched until it exits: its records find no
                 * session */
                (void) bpf_pages_unwatch_if(m->pages.bpf, rec->pid, tag_of(rec->seq));
}

void manager_pages_bpf_boot(Manager *m, Session *boot) {
        if (!m->pages.bpf)
                return;
        boot->watch_tag = BOOT_TAG;
        boot->uses = manager_pages_bpf_uses(m);
        bpf_pages_watch_all(m->pages.bpf, BOOT_TAG);
}

void manager_pages_bpf_boot_over(Manager *m) {
        if (m->pages.bpf)
                bpf_pages_watch_all(m->pages.bpf, 0);
}

void manager_pages_bpf_set_filesystems(Manager *m, const dev_t *devs, size_t n, dev_t bdev) {
        int r;

        if (!m->pages.bpf)
                return;
        r = bpf_pages_set_devices(m->pages.bpf, devs, n, bdev);
        if (r < 0)
                log_warning_errno(r, "Failed to give the BPF recorder the watched filesystems, it reports every "
                                  "filesystem's pages: %m");
}

void manager_pages_bpf_end(Manager *m, Session *s) {
        int n;

        if (!m->pages.bpf || s->watch_tag == 0 || s->watch_tag == BOOT_TAG)
                return;
        n = bpf_pages_unwatch_tag(m->pages.bpf, s->watch_tag);
        if (s->prefetched && s->uses && s->pages_used > 0)
                /* pages it used that it did not read itself (a lower bound: pages it read ahead and did not
                 * use count against it) */
                log_info("Launch of %s, prefetched: %" PRIu64 " page(s) used, %" PRIu64 " read from the disk by "
                         "the launch itself: hit ratio %" PRIu64 "%% at least", s->profile, s->pages_used, s->pages_read,
                         s->pages_used > s->pages_read ? (s->pages_used - s->pages_read) * 100 / s->pages_used : 0);
        log_debug("Launch of %s: %" PRIu64 " page(s) read from the disk, %" PRIu64 " used (BPF; %d process(es) "
                  "still running no longer watched)", s->profile, s->pages_read, s->pages_used, MAX(n, 0));
        s->watch_tag = 0;
}
