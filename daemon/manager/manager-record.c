/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The recording glue: the recorder's exec pipe and open group, the process events and the pid map, wired to
 * the sessions. An exec starts a launch (or joins one), reads go to the boot session and to the launch of
 * the reading process, new files are named at idle priority, windows close on a timer and their sessions
 * go to manager-pending.c to be stored. Runs in the main loop only. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc-util.h"
#include "common/log.h"
#include "fs/fid-util.h"
#include "fs/mount-fds.h"
#include "fs/resident.h"
#include "manager/manager.h"
#include "record/boot-collect.h"
#include "record/boot-seed.h"
#include "record/fid-event.h"
#include "record/proc-events.h"

#define OPEN_BUFFER_SIZE (64 * 1024)
/* Read at most this many buffers per wakeup, so the bus and timers are never starved during a storm. */
#define OPEN_READS_PER_DISPATCH 16

static int open_mount(uint64_t fsid, void *userdata) {
        return manager_open_mount_fd(userdata, fsid);
}

/* The sessions of this boot per profile, for MaxLaunchesPerBoot=: read again whenever sessions were stored
 * or deleted (the callers of manager_refresh_counts()), so that an exec never waits for the database. */
void manager_boot_counts_reload(Manager *m) {
        DbBootCount *c = NULL;
        size_t n = 0;
        int r;

        r = db_count_sessions_in_boot_all(m->db, m->boot_id, &c, &n);
        if (r < 0) {
                log_warning_errno(r, "Failed to count this boot's sessions, keeping the counts known: %m");
                return;
        }
        db_boot_counts_free(m->recording.boot_counts, m->recording.n_boot_counts);
        m->recording.boot_counts = c;
        m->recording.n_boot_counts = n;
}

static unsigned boot_count_get(Manager *m, const char *profile) {
        for (size_t i = 0; i < m->recording.n_boot_counts; i++)
                if (streq(m->recording.boot_counts[i].profile, profile))
                        return m->recording.boot_counts[i].n;
        return 0;
}

static void manager_update_marks(Manager *m) {
        if (m->recording.launches)
                return;
        pidmap_forget_forks(&m->recording.pidmap);
        if (m->recording.boot)
                return;
        if (recorder_disarm(m->recording.recorder, m->recording.exec_seq_seen) > 0) {
                RecorderStats rs = recorder_get_stats(m->recording.recorder);

                log_debug("No window open: watching execs only (so far %" PRIu64 " exec(s) waited for every "
                          "filesystem to be armed, %" PRIu64 " of them let go unarmed after %" PRIu64 " ms)",
                          rs.execs_armed, rs.execs_arm_late, RECORDER_ARM_WAIT_USEC / USEC_PER_MSEC);
        }
}

static int manager_schedule(Manager *m);

bool manager_boot_user(Manager *m, pid_t tgid) {
        return m->recording.boot && m->recording.boot_share.on &&
               !uid_is_system(pidmap_uid(&m->recording.pidmap, tgid));
}

/* A user's file's hot bytes as the profile will count them (profile_resolve_session()): the pages the
 * session saw read, unless it has none or more of it is cached than that; then the whole file. */
typedef struct UserFileBytes {
        MountFds fds;
        uint64_t walk_budget;   /* file_resident_pages()'s, for the whole session */
} UserFileBytes;

static void user_file_bytes_done(UserFileBytes *u) {
        mount_fds_done(&u->fds);
}

static uint64_t boot_user_file_bytes(const Session *s, size_t file, uint64_t seen_pages, void *userdata) {
        UserFileBytes *u = userdata;
        MountFds *fds = &u->fds;
        const FileKey *key = &s->files[file].key;
        _cleanup_close_ int pfd = -EBADF, fd = -EBADF;
        int mfd = mount_fds_get(fds, key->fsid);
        uint64_t resident;
        struct stat st;

        if (mfd < 0)
                return 0;       /* not reachable: left out when the session is stored */
        pfd = file_key_open(mfd, key, O_PATH);
        if (pfd < 0 || fstat(pfd, &st) < 0 || !S_ISREG(st.st_mode))
                return 0;       /* gone, or not a regular file: left out too */
        if (!s->pages || seen_pages == 0)
                return (uint64_t) st.st_size;
        fd = file_key_open(mfd, key, O_RDONLY | O_NONBLOCK);
        if (fd >= 0 && file_resident_pages(fd, (uint64_t) st.st_size, &u->walk_budget, &resident) >= 0 &&
            resident <= seen_pages)
                return seen_pages * (uint64_t) sysconf(_SC_PAGESIZE);
        return (uint64_t) st.st_size;
}

/* The boot session's window closed: users' reads within their share, after the system's (boot-share.h). */
static void manager_boot_share_finish(Manager *m, Session *s) {
        _cleanup_(user_file_bytes_done) UserFileBytes u = {
                .fds = { .open = open_mount, .userdata = m },
                .walk_budget = RESIDENT_WALK_PAGES,
        };
        BootShare *b = &m->recording.boot_share;
        size_t n_users = b->n_user_files;
        int r;

        pidmap_track_uids(&m->recording.pidmap, false);
        if (!b->on)
                return;
        r = boot_share_finish(b, s, boot_user_file_bytes, &u);
        if (r < 0)
                log_warning_errno(r, "Failed to put the boot session's files read by users' processes after "
                                  "the system's: %m");
        if (n_users > 0 || boot_share_left_out(b))
                log_info("The boot session holds %zu file%s read by users' processes, after the system's "
                         "(BootUserShare=%g%%: %zu files, %" PRIu64 " MiB, %zu metadata ranges); left out: %" PRIu64
                         " read%s of further files, %" PRIu64 " file%s over its hot bytes, %" PRIu64 " page%s, %"
                         PRIu64 " metadata event%s", b->n_user_files, b->n_user_files == 1 ? "" : "s",
                         m->config.boot_user_share, b->max_files,
                         b->max_pages * (uint64_t) sysconf(_SC_PAGESIZE) >> 20, b->max_meta, b->left_reads,
                         b->left_reads == 1 ? "" : "s", b->left_hot_files, b->left_hot_files == 1 ? "" : "s",
                         b->left_pages,
                         b->left_pages == 1 ? "" : "s", b->left_meta, b->left_meta == 1 ? "" : "s");
        if (boot_share_left_out(b))
                s->incomplete = true;
        boot_share_done(b);
}

static void manager_end_session(Manager *m, Session *s) {
        if (s == m->recording.boot)
                m->recording.boot = NULL;
        else
                for (Session **p = &m->recording.launches; *p; p = &(*p)->next)
                        if (*p == s) {
                                *p = s->next;
                                break;
                        }
        pidmap_flush(&m->recording.pidmap);
        manager_pages_bpf_end(m, s);
        if (s->kind == PROFILE_BOOT)
                manager_pages_bpf_boot_over(m);
        /* what only recording used goes before storing makes its own copies */
        session_seal(s);
        if (s->kind == PROFILE_BOOT)
                manager_boot_share_finish(m, s);
        manager_store_session(m, s, now_usec(CLOCK_MONOTONIC));
}

static int on_open_events(sd_event_source *source, int fd, uint32_t revents, void *userdata);

/* Reads made inside a window may still wait in the fanotify queue (a busy or stopped daemon): take them
 * before a window closes or the daemon stops, so they count for it. Bounded: a reader that never stops
 * must not keep the window open. Then the pages read so far, bounded too: returns how many page events
 * still wait. */
static size_t manager_drain_queues(Manager *m) {
        if (m->recording.recorder)
                for (unsigned i = 0; i < 64; i++) {
                        struct pollfd p = { .fd = m->recording.recorder->open_fd, .events = POLLIN };
                        if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN))
                                break;
                        (void) on_open_events(NULL, m->recording.recorder->open_fd, EPOLLIN, m);
                }
        return manager_pages_drain(m);
}

/* A window closes with page events still waiting to be given to the sessions: some may be its own. */
static void session_pages_left(Session *s, size_t left) {
        if (left == 0)
                return;
        s->incomplete = true;
        s->lost_pages += left;
}

static int on_timer(sd_event_source *source, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        size_t left = manager_drain_queues(m);

        if (m->recording.boot && m->recording.boot->deadline_usec <= now) {
                session_pages_left(m->recording.boot, left);
                manager_end_session(m, m->recording.boot);
        }
        for (Session *s = m->recording.launches, *n; s; s = n) {
                n = s->next;
                if (s->deadline_usec <= now) {
                        session_pages_left(s, left);
                        manager_end_session(m, s);
                }
        }
        manager_update_marks(m);
        manager_notify_status(m);
        return manager_schedule(m);
}

static int manager_schedule(Manager *m) {
        uint64_t next = UINT64_MAX;
        int r;

        if (m->recording.boot)
                next = m->recording.boot->deadline_usec;
        for (Session *s = m->recording.launches; s; s = s->next)
                next = MIN(next, s->deadline_usec);

        if (next == UINT64_MAX)
                return m->recording.timer_source ?
                       sd_event_source_set_enabled(m->recording.timer_source, SD_EVENT_OFF) : 0;
        if (!m->recording.timer_source) {
                r = sd_event_add_time(m->event, &m->recording.timer_source, CLOCK_MONOTONIC, next, 0,
                                      on_timer, m);
                if (r < 0)
                        return log_error_errno(r, "Failed to add session timer: %m");
                return 0;
        }
        r = sd_event_source_set_time(m->recording.timer_source, next);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(m->recording.timer_source, SD_EVENT_ONESHOT);
}

typedef struct LaunchCount {
        char *path;
        unsigned n;
} LaunchCount;

static unsigned launch_count_get(Manager *m, const char *path) {
        for (size_t i = 0; i < m->recording.n_launch_counts; i++)
                if (streq(m->recording.launch_counts[i].path, path))
                        return m->recording.launch_counts[i].n;
        return 0;
}


void manager_launch_count_bump(Manager *m, const char *path) {
        ManagerRecording *rec = &m->recording;
        char *p;

        for (size_t i = 0; i < rec->n_launch_counts; i++)
                if (streq(rec->launch_counts[i].path, path)) {
                        rec->launch_counts[i].n++;
                        return;
                }
        p = strdup(path);
        if (!p || GREEDY_REALLOC(rec->launch_counts, rec->allocated_launch_counts, rec->n_launch_counts + 1) < 0) {
                free(p);
                return;
        }
        rec->launch_counts[rec->n_launch_counts++] = (LaunchCount) { .path = p, .n = 1 };
}

static unsigned active_launches_of(Manager *m, const char *profile) {
        unsigned n = 0;

        for (Session *s = m->recording.launches; s; s = s->next)
                if (streq(s->profile, profile))
                        n++;
        return n;
}

/* Starts the launch session of an exec that is no part of a launch open: returns whether it did. */
static bool manager_launch_begin(Manager *m, const ExecRecord *rec) {
        _cleanup_(session_freep) Session *s = NULL;
        _cleanup_free_ char *path = NULL, *cgroup = NULL;
        FileKey key = rec->key;
        unsigned n;
        int r;

        if (m->config.max_launches_per_boot == 0 || !rec->path[0])
                return false;
        path = strdup(rec->path);
        if (!path)
                return false;
        /* The database keeps only KeepLaunches= sessions; what this daemon started counts too. */
        n = MAX(boot_count_get(m, path), launch_count_get(m, path)) + active_launches_of(m, path) +
                manager_pending_count(m, path);
        if (n >= m->config.max_launches_per_boot) {
                log_debug("%s: already %u launches recorded this boot (MaxLaunchesPerBoot=%u)", path, n,
                          m->config.max_launches_per_boot);
                return false;
        }

        r = session_new(PROFILE_APP, path, rec->timestamp_usec, m->config.launch_window_usec, &s);
        if (r < 0) {
                log_error_errno(r, "Failed to start launch session: %m");
                return false;
        }
        s->root_pid = rec->pid;
        s->uid = rec->uid;
        s->pages = m->pages.reader || m->pages.bpf;
        s->max_files = m->config.max_session_files;
        s->max_ranges = session_max_ranges(s->kind, s->max_files);
        /* On desktops an app-*.scope/.service made for this launch holds its D-Bus-activated helpers too;
         * but a scope shared with others (a terminal's, with all its tabs) would swallow unrelated
         * programs: use the cgroup only if the new process is alone in it. */
        if (proc_get_cgroup("/proc", rec->pid, &cgroup) >= 0 && cgroup_app_unit(cgroup) &&
            cgroup_population("/sys/fs/cgroup", cgroup) == 1)
                s->cgroup = TAKE_PTR(cgroup);
        r = session_add(s, &key, rec->timestamp_usec);
        if (r < 0)
                return false;
        log_debug("Recording launch of %s (pid %i, uid %i%s%s)", path, (int) rec->pid, (int) rec->uid,
                  s->cgroup ? ", cgroup " : "", s->cgroup ?: "");
        manager_pages_bpf_launch(m, s, rec);
        s->next = m->recording.launches;
        m->recording.launches = TAKE_PTR(s);
        pidmap_flush(&m->recording.pidmap);
        (void) manager_schedule(m);
        return true;
}

static void manager_handle_exec(Manager *m, const ExecRecord *rec) {
        FileKey key = rec->key;
        Session *owner;

        if (m->recording.boot) {
                if (rec->uid != UID_INVALID)
                        pidmap_note_uid(&m->recording.pidmap, rec->pid, rec->uid);
                (void) boot_share_add_file(&m->recording.boot_share, m->recording.boot,
                                           m->recording.boot_share.on && !uid_is_system(rec->uid), &key,
                                           rec->timestamp_usec, NULL, NULL);
        }

        /* An exec inside a launch (a wrapper script exec'ing the real binary, the ELF interpreter, a
         * helper the program runs) is part of that launch, not a launch of its own. */
        owner = pidmap_lookup(&m->recording.pidmap, m->recording.launches, rec->pid);
        if (owner)
                (void) session_add(owner, &key, rec->timestamp_usec);
        else
                (void) manager_launch_prefetch(m, rec->path);
        if (owner || !manager_launch_begin(m, rec))
                manager_pages_bpf_not_launch(m, rec, owner);
}

void manager_record_drain_execs(Manager *m) {
        ExecRecord rec;

        while (read(m->recording.recorder->pipe_fd[0], &rec, sizeof rec) == (ssize_t) sizeof rec) {
                manager_handle_exec(m, &rec);
                m->recording.exec_seq_seen = rec.seq;
        }
}

static void on_fork(pid_t child, pid_t parent, void *userdata) {
        Manager *m = userdata;

        pidmap_note_fork(&m->recording.pidmap, child, parent);
}

/* Execs first: a fork only matters if its parent's launch is known. */
static void on_thread(pid_t tid, pid_t tgid, void *userdata) {
        Manager *m = userdata;

        if (m->pages.reader)
                pidmap_note_thread(&m->recording.pidmap, tid, tgid);
}

static void on_uid(pid_t tgid, uid_t ruid, void *userdata) {
        Manager *m = userdata;

        pidmap_note_uid(&m->recording.pidmap, tgid, ruid);
}

static void on_events_lost(void *userdata) {
        Manager *m = userdata;

        /* a fork or uid change may be among them: what was noted is read from /proc again */
        if (m->recording.pidmap.track_uids) {
                pidmap_track_uids(&m->recording.pidmap, false);
                pidmap_track_uids(&m->recording.pidmap, true);
        }
}

void manager_drain_forks(Manager *m) {
        int r;

        manager_record_drain_execs(m);
        if (!m->recording.fork_source)
                return;
        /* Forks are always noted (a launch may be queued but not yet seen); without launches the table
         * is emptied once it grows, so a fork storm outside windows costs a bounded amount. */
        if (!m->recording.launches && m->recording.pidmap.n_forks > 4096)
                pidmap_forget_forks(&m->recording.pidmap);
        r = proc_events_drain(sd_event_source_get_io_fd(m->recording.fork_source),
                              &(const ProcEventHandlers) {
                                        .fork = on_fork, .thread = on_thread, .uid = on_uid,
                                        .lost = on_events_lost }, m);
        if (r < 0)
                log_debug_errno(r, "Failed to read process events, ignoring: %m");
}

static int on_forks(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        manager_drain_forks(userdata);
        return 0;
}

static int on_exec(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;

        manager_record_drain_execs(m);
        manager_update_marks(m);
        return 0;
}

/* Naming new session files, off the event path. A file handle opened after the file's dentry was evicted
 * can't be named any more ("disconnected"), so files are named shortly after their first read rather than
 * when the session ends; and while only the boot session records, each gets an evictable inode ignore
 * mark, since its further reads are of no use (every process reads libc). This runs at idle priority, a
 * chunk at a time, so reading the fanotify queue always comes first and a burst of new files never makes
 * the queue overflow. */
#define RESOLVE_CHUNK 256

static bool session_resolve_some(Manager *m, Session *s, MountFds *fds, size_t *budget) {
        for (; s->n_resolved < s->n_files && *budget > 0; s->n_resolved++, (*budget)--) {
                SessionFile *sf = &s->files[s->n_resolved];
                _cleanup_close_ int pfd = -EBADF, fd = -EBADF;
                int mfd = mount_fds_get(fds, sf->key.fsid);
                struct stat st;
                char proc[64];

                if (mfd < 0)
                        continue;
                pfd = file_key_open(mfd, &sf->key, O_PATH);
                if (pfd < 0 || fstat(pfd, &st) < 0 || !S_ISREG(st.st_mode))
                        continue;
                if (!sf->path && st.st_nlink > 0) {     /* the boot collector's files come named */
                        _cleanup_free_ char *path = NULL;

                        (void) fd_get_verified_path(pfd, &path);
                        /* its dentry evicted already (a burst read faster than we name, memory pressure) */
                        if (!path && sf->where)
                                (void) file_key_name_in_dir(mfd, &sf->where->dir, sf->where->name, &st, &path);
                        if (path)
                                (void) session_set_path(s, s->n_resolved, path);
                }
                if (sf->path)
                        sf->where = mfree(sf->where);
                /* a user's file: a system process's read may still make it the system's (boot-share.h) */
                if (s->kind != PROFILE_BOOT || m->recording.launches || m->recording.ignore_failures >= 16 ||
                    boot_share_user_file(&m->recording.boot_share, s->n_resolved))
                        continue;
                /* a real (not O_PATH) fd for fanotify_mark; regular files only, so opening is harmless */
                snprintf(proc, sizeof proc, "/proc/self/fd/%i", pfd);
                fd = open(proc, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
                if (fd >= 0 &&
                    recorder_ignore_file(m->recording.recorder, fd, m->recording.exec_seq_seen) < 0 &&
                    ++m->recording.ignore_failures == 16)
                        log_warning("Failed to place ignore marks, every read is reported from now on");
        }
        return s->n_resolved < s->n_files;
}

static int on_resolve(sd_event_source *source, void *userdata) {
        Manager *m = userdata;
        _cleanup_(mount_fds_done) MountFds fds = { .open = open_mount, .userdata = m };
        size_t budget = RESOLVE_CHUNK;
        bool more = false;

        if (m->recording.boot)
                more = session_resolve_some(m, m->recording.boot, &fds, &budget) || more;
        for (Session *s = m->recording.launches; s; s = s->next)
                more = session_resolve_some(m, s, &fds, &budget) || more;
        if (!more)
                (void) sd_event_source_set_enabled(source, SD_EVENT_OFF);
        return 0;
}

void manager_want_resolve(Manager *m) {
        if (!m->recording.resolve_source)
                return;
        if (sd_event_source_set_enabled(m->recording.resolve_source, SD_EVENT_ON) < 0)
                log_debug("Failed to enable the resolver, files are named when their session ends");
}

static void mark_incomplete(Manager *m) {
        if (m->recording.boot)
                m->recording.boot->incomplete = true;
        for (Session *s = m->recording.launches; s; s = s->next)
                s->incomplete = true;
}

/* One buffer read from the open group (see manager.h). */
void manager_take_open_events(Manager *m, const void *buf, size_t n, uint64_t now) {
        pid_t self = getpid();
        FanotifyEvent ev;

        for (size_t off = 0; fanotify_event_next(buf, n, &off, &ev);) {
                const struct fanotify_event_metadata *e = &ev.meta;
                FileKey key, dir;
                const char *name = NULL;
                bool named;
                Session *s;

                m->recording.events_received++;
                if (e->mask & FAN_Q_OVERFLOW) {
                        m->recording.overflows++;
                        log_warning("fanotify queue overflowed: events were lost, sessions open now are marked incomplete");
                        mark_incomplete(m);
                        continue;
                }
                if (e->pid == self)
                        continue;
                if (fanotify_event_file_key(&ev, &key) <= 0)
                        continue;
                named = fanotify_event_dir_name(&ev, &dir, &name) > 0;
                if (m->recording.boot &&
                    boot_share_add_file(&m->recording.boot_share, m->recording.boot,
                                        manager_boot_user(m, e->pid), &key, now, named ? &dir : NULL,
                                        name) > 0)
                        manager_want_resolve(m);
                if (m->recording.launches) {
                        s = pidmap_lookup(&m->recording.pidmap, m->recording.launches, e->pid);
                        if (s && session_add_where(s, &key, now, named ? &dir : NULL, name) > 0)
                                manager_want_resolve(m);
                }
        }
}

static int on_open_events(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        static union {
                struct fanotify_event_metadata m;
                char buf[OPEN_BUFFER_SIZE];
        } u;
        Manager *m = userdata;

        for (unsigned i = 0; i < OPEN_READS_PER_DISPATCH; i++) {
                ssize_t n = read(fd, u.buf, sizeof u.buf);

                if (n < 0) {
                        if (errno != EAGAIN && errno != EINTR)
                                log_warning_errno(-errno, "Failed to read fanotify events, ignoring: %m");
                        break;
                }
                /* Execs are queued by the exec thread before the exec'd program runs, and forks are
                 * announced before the child runs, so for every read in this buffer the exec and fork
                 * records it depends on are already waiting: take those first. */
                manager_drain_forks(m);
                manager_take_open_events(m, u.buf, (size_t) n, now_usec(CLOCK_MONOTONIC));
                if ((size_t) n < sizeof u.buf - 4096)
                        break;
        }
        return 0;
}

/* The boot collector (a generator, see boot-collect.h) watched the boot from before PID 1 loaded its units:
 * stop it and put what it saw at the head of the boot session. */
static void manager_take_collected(Manager *m) {
        int r;

        r = boot_collect_stop(m->run_dir, 2 * USEC_PER_SEC);
        if (r < 0)
                log_warning_errno(r, "Failed to stop the boot collector: %m");
        if (!m->recording.boot)
                return;
        r = boot_collect_take(m->run_dir, m->recording.boot, &m->filesystems, now_usec(CLOCK_MONOTONIC));
        if (r == -EBADMSG)
                log_warning("%s/" BOOT_COLLECT_KEYS_FILE " is not a complete boot collector file, ignored", m->run_dir);
        else if (r < 0)
                log_warning_errno(r, "Failed to read the boot collector's files, ignored: %m");
        else if (r > 0)
                log_info("Boot session starts with %i file%s the boot read before seeklessd started", r,
                         r == 1 ? "" : "s");
}

int manager_start_boot_session(Manager *m) {
        unsigned n = 0;
        int r;

        r = db_count_sessions_in_boot(m->db, "boot", m->boot_id, &n);
        if (r < 0)
                return log_error_errno(r, "Failed to look up boot sessions: %m");
        if (n > 0) {
                log_info("This boot (%s) is already recorded; not recording it again", m->boot_id);
                manager_take_collected(m);
                return 0;
        }
        r = session_new(PROFILE_BOOT, "boot", now_usec(CLOCK_MONOTONIC), m->config.boot_window_usec,
                        &m->recording.boot);
        if (r < 0)
                return log_error_errno(r, "Failed to start boot session: %m");
        m->recording.boot->max_files = m->config.max_session_files;
        m->recording.boot->max_ranges = session_max_ranges(PROFILE_BOOT, m->recording.boot->max_files);
        m->recording.boot->pages = m->pages.reader || m->pages.bpf;
        manager_pages_bpf_boot(m, m->recording.boot);
        manager_boot_prefetch(m);
        /* what the initramfs stage read ahead before the switch was read for this boot too */
        if (manager_initramfs_read_ahead(m)) {
                m->recording.boot->prefetched = true;
                log_info("The initramfs stage read %.1f MiB of the boot profile ahead: the boot session counts as prefetched",
                         m->initramfs.prefetch_bytes / 1048576.0);
        }
        boot_share_init(&m->recording.boot_share, m->config.boot_user_share, m->config.max_session_files,
                        (uint64_t) m->config.max_hot_set_mib << 20);
        pidmap_track_uids(&m->recording.pidmap, m->recording.boot_share.on);
        r = recorder_arm(m->recording.recorder);
        if (r < 0)
                log_warning_errno(r, "Failed to arm fanotify on every filesystem, recording what we can: %m");
        /* Before the first event is read, what was read before we watched comes first: PID 1's program and
         * libraries (loaded before anything could watch), then the collector's record, then what the other
         * running processes map. */
        r = boot_seed_from_maps(m->recording.boot, &m->filesystems, "/proc", 1, now_usec(CLOCK_MONOTONIC));
        manager_take_collected(m);
        if (r >= 0) {
                int k = boot_seed_from_maps(m->recording.boot, &m->filesystems, "/proc", 0,
                                            now_usec(CLOCK_MONOTONIC));
                r = k < 0 ? k : r + k;
        }
        if (r < 0)
                log_warning_errno(r, "Failed to list the files running processes map: %m");
        else if (r > 0)
                log_info("Boot session adds %i file%s mapped by processes started before seeklessd", r,
                         r == 1 ? "" : "s");
        if (m->recording.boot->n_files > 0)
                manager_want_resolve(m);
        return manager_schedule(m);
}

void manager_boot_finished(Manager *m, uint64_t finish_usec) {
        uint64_t now = now_usec(CLOCK_MONOTONIC), end;

        if (!m->recording.boot)
                return;
        end = MIN(finish_usec + m->config.boot_tail_usec, m->recording.boot->deadline_usec);
        /* Started after the boot had finished (installed or started by hand then, or restarted after a
         * crash): none of the boot was watched, and BootTailSec= is the tail of a boot watched from its
         * start, not a window of its own. What the collector holds then is not the boot's either: a
         * daemon-reload (the one an install makes) runs the generators again. */
        if (finish_usec < m->recording.boot->start_usec) {
                log_info("Boot had finished before seeklessd started: no boot session this time, and no "
                         "prefetch of the boot profile");
                /* nor a boot's reads: the prefetch queued at start stops, BPF stops recording everyone */
                atomic_store(&m->launch_prefetch.boot_abandon, true);
                manager_pages_bpf_boot_over(m);
                m->recording.boot = session_free(m->recording.boot);
                boot_share_done(&m->recording.boot_share);
                pidmap_track_uids(&m->recording.pidmap, false);
                manager_update_marks(m);
        } else if (end <= now)
                manager_end_session(m, m->recording.boot);
        else {
                log_info("Boot finished; recording %" PRIu64 " s more", (end - now) / USEC_PER_SEC);
                m->recording.boot->deadline_usec = end;
        }
        (void) manager_schedule(m);
        manager_notify_status(m);
}

int manager_record_start(Manager *m) {
        int r;

        r = sd_event_add_io(m->event, &m->recording.open_source, m->recording.recorder->open_fd, EPOLLIN,
                            on_open_events, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch fanotify: %m");
        r = sd_event_add_io(m->event, &m->recording.exec_source, m->recording.recorder->pipe_fd[0], EPOLLIN,
                            on_exec, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch exec queue: %m");
        /* handle execs before opens so a new launch exists before its opens are attributed */
        (void) sd_event_source_set_priority(m->recording.exec_source, SD_EVENT_PRIORITY_IMPORTANT);

        r = proc_events_open();
        if (r < 0)
                log_warning_errno(r, "Failed to subscribe to process events, children that exit quickly may be missed from launches: %m");
        else {
                int pfd = r;
                r = sd_event_add_io(m->event, &m->recording.fork_source, pfd, EPOLLIN, on_forks, m);
                if (r < 0) {
                        safe_close(pfd);
                        return log_error_errno(r, "Failed to watch process events: %m");
                }
                (void) sd_event_source_set_io_fd_own(m->recording.fork_source, true);
                (void) sd_event_source_set_priority(m->recording.fork_source, SD_EVENT_PRIORITY_IMPORTANT);
        }

        r = sd_event_add_defer(m->event, &m->recording.resolve_source, on_resolve, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the resolver: %m");
        (void) sd_event_source_set_priority(m->recording.resolve_source, SD_EVENT_PRIORITY_IDLE);
        (void) sd_event_source_set_enabled(m->recording.resolve_source, SD_EVENT_OFF);
        return 0;
}

void manager_record_flush(Manager *m) {
        size_t left = manager_drain_queues(m);

        if (m->recording.boot) {
                m->recording.boot->incomplete = true;
                session_pages_left(m->recording.boot, left);
                manager_end_session(m, m->recording.boot);
        }
        while (m->recording.launches) {
                m->recording.launches->incomplete = true;
                session_pages_left(m->recording.launches, left);
                manager_end_session(m, m->recording.launches);
        }
}

void manager_record_done(Manager *m) {
        session_free(m->recording.boot);
        boot_share_done(&m->recording.boot_share);
        while (m->recording.launches) {
                Session *n = m->recording.launches->next;
                session_free(m->recording.launches);
                m->recording.launches = n;
        }
        pidmap_done(&m->recording.pidmap);
        sd_event_source_disable_unref(m->recording.open_source);
        sd_event_source_disable_unref(m->recording.exec_source);
        sd_event_source_disable_unref(m->recording.fork_source);
        sd_event_source_disable_unref(m->recording.timer_source);
        sd_event_source_disable_unref(m->recording.resolve_source);
        m->recording.recorder = recorder_free(m->recording.recorder);
        for (size_t i = 0; i < m->recording.n_launch_counts; i++)
                free(m->recording.launch_counts[i].path);
        free(m->recording.launch_counts);
        db_boot_counts_free(m->recording.boot_counts, m->recording.n_boot_counts);
}
