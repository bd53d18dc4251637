/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Launches' pages recorded with BPF (record-bpf/bpf-pages.h), wired to the sessions: the exec thread
 * watches each process it lets exec under the exec's seq, before it allows it; a launch session takes the
 * records of its tag, the pages its processes read from the disk and, where the kernel has the
 * tracepoints, the pages they used that were cached already (a warm start, a prefetched one); an exec
 * that starts no session of its own leaves the recorder or joins its launch's tag. The boot session stays
 * with the tracefs reader (manager-pages.c), which records every process. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sysmacros.h>

#include "common/log.h"
#include "common/time-util.h"
#include "manager/manager.h"
#include "manager/manager-pages.h"

static int open_mount(uint64_t fsid, void *userdata) {
        return manager_open_mount_fd(userdata, fsid);
}

/* An exec record's seq as a tag: never 0 (a session's "not watched"), the same on both threads */
static uint32_t tag_of(uint64_t seq) {
        return (uint32_t) (1 + (seq - 1) % UINT32_MAX);
}

static Session *session_of_tag(Manager *m, uint32_t tag) {
        for (Session *s = m->recording.launches; s; s = s->next)
                if (s->watch_tag != 0 && s->watch_tag == tag)
                        return s;
        return NULL;
}

/* A record: a block device's own page (the pseudo filesystem the tracefs reader learned, the device's
 * number as the inode) is the metadata of the filesystem on it; pages of filesystems not watched are
 * left out. */
static void on_event(const BpfPageEvent *e, void *userdata) {
        Manager *m = userdata;
        Session *s = session_of_tag(m, e->tag);
        PageCacheEvent pe = {
                .dev = e->dev,
                .ino = e->ino,
                .index = e->first,
                .tid = e->pid,
                .timestamp_nsec = e->timestamp_nsec,
        };
        uint64_t n = e->last - e->first + 1;

        if (!s || !m->pages.bpf_fds)
                return;
        if (m->pages.bpf_bdev != 0 && e->dev == m->pages.bpf_bdev) {
                pe.dev = makedev((unsigned) (e->ino >> 20), (unsigned) (e->ino & 0xfffff));
                pe.ino = 0;
        }
        if (!filesystem_list_find_dev(&m->filesystems, pe.dev))
                return;
        /* the files' pages only: the metadata has no use to count */
        if (pe.ino != 0 && e->kind == BPF_PAGE_ADD)
                s->pages_read += n;
        else if (pe.ino != 0)
                s->pages_used += n;
        pe.n_pages = (uint32_t) MIN(n, (uint64_t) UINT32_MAX);
        manager_session_take_page(m, s, false, &pe, e->timestamp_nsec / NSEC_PER_USEC, m->pages.bpf_fds);
}

static void bpf_lost(Manager *m) {
        uint64_t lost;

        if (bpf_pages_lost(m->pages.bpf, &lost) < 0 || lost <= m->pages.bpf_lost)
                return;
        log_warning("%" PRIu64 " BPF page record(s) lost (the ring buffer was full): launches open now are "
                    "marked incomplete", lost - m->pages.bpf_lost);
        for (Session *s = m->recording.launches; s; s = s->next) {
                s->incomplete = true;
                s->lost_pages += lost - m->pages.bpf_lost;
        }
        m->pages.lost += lost - m->pages.bpf_lost;
        m->pages.bpf_lost = lost;
}

void manager_pages_bpf_drain(Manager *m) {
        _cleanup_(mount_fds_done) MountFds fds = { .open = open_mount, .userdata = m };

        if (!m->pages.bpf)
                return;
        /* the launches whose records may wait in the ring buffer first: records without a session are
         * dropped */
        manager_record_drain_execs(m);
        /* which device's pages are block devices' own: learned by the tracefs reader, asked once a drain
         * (under its lock), not once a record */
        if (!m->pages.reader || page_reader_bdev(m->pages.reader, &m->pages.bpf_bdev) < 0)
                m->pages.bpf_bdev = 0;
        m->pages.bpf_fds = &fds;
        (void) bpf_pages_consume(m->pages.bpf);
        m->pages.bpf_fds = NULL;
        bpf_lost(m);
}

static int on_bpf(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        manager_pages_bpf_drain(userdata);
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
                .on_event = on_event,
                .userdata = m,
        };
        unsigned attached;
        int r;

        if (m->config.recorder == RECORDER_FANOTIFY)
                return 0;
        r = bpf_pages_new(&o, &m->pages.bpf);
        if (r < 0) {
                log_full_errno(m->config.recorder == RECORDER_BPF ? LOG_WARNING : LOG_INFO, r,
                               "No BPF page recorder (%s%m): launches' pages are recorded from page-cache events",
                               r == -EOPNOTSUPP ? "not built in: " : "");
                return 0;
        }
        r = sd_event_add_io(m->event, &m->pages.bpf_source, bpf_pages_fd(m->pages.bpf), EPOLLIN, on_bpf, m);
        if (r < 0) {
                m->pages.bpf = bpf_pages_free(m->pages.bpf);
                return log_error_errno(r, "Failed to watch the BPF page recorder: %m");
        }
        recorder_set_watch(m->recording.recorder, watch_exec, m->pages.bpf);
        attached = bpf_pages_attached(m->pages.bpf);
        log_info("Recording launches' pages with BPF: pages read from the disk%s",
                 attached & (1u << BPF_PAGE_GET_PAGES) ? ", and pages used that were cached" :
                 " (this kernel has no tracepoint for pages used)");
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

void manager_pages_bpf_boot_over(Manager *m) {
        if (!m->pages.bpf || !m->pages.reader || !m->recording.recorder)
                return;
        /* launches have their pages from BPF: the tracepoint is no longer switched on at execs */
        recorder_set_pages(m->recording.recorder, NULL);
        (void) page_reader_enable(m->pages.reader, false);
}

void manager_pages_bpf_end(Manager *m, Session *s) {
        int n;

        if (!m->pages.bpf || s->watch_tag == 0)
                return;
        n = bpf_pages_unwatch_tag(m->pages.bpf, s->watch_tag);
        /* the metadata a prefetched launch read is only what the prefetch did not: the profile keeps its
         * newest session's, which must stay a cold one's */
        if (s->prefetched)
                s->n_meta = 0;
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
