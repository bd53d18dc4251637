/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The Manager's life: its start (the database, the filesystems, the recorder and the page reader, the
 * bus), its configuration reloads, its stop and free; storing an ended session and the counts the bus
 * shows. What each part does runs in its own manager-*.c: recording in manager-record.c, the bus in
 * manager-bus.c, runs in manager-optimize.c, the idle policy in manager-idle.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <systemd/sd-daemon.h>

#include "common/log.h"
#include "manager/manager.h"
#include "profile/profile.h"

int manager_new(Manager **ret) {
        Manager *m = calloc(1, sizeof *m);

        if (!m)
                return -ENOMEM;
        config_set_defaults(&m->config);
        pidmap_init(&m->recording.pidmap, "/proc");
        *ret = m;
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        /* first: what it still has to say goes to the bus and the database */
        plan_worker_free(m->plan_worker);
        plan_worker_free(m->prefetch_worker);
        manager_launch_prefetch_done(m);
        manager_runs_done(m);
        for (size_t i = 0; i < _PROP_MAX; i++)
                free(m->announced[i]);
        manager_pending_free(m);
        sd_event_source_disable_unref(m->mountinfo_source);
        sd_event_source_disable_unref(m->exit_source);
        manager_idle_done(m);
        manager_space_done(m);
        manager_boot_watch_done(m);
        manager_bus_retry_done(m);
        /* the recorder's exec thread switches the page events: it goes first */
        manager_record_done(m);
        manager_pages_bpf_stop(m);
        manager_pages_stop(m);
        filesystem_list_clear(&m->filesystems);
        filesystem_list_clear(&m->unwatched);
        sd_bus_flush_close_unref(m->bus);
        db_free(m->db);
        sd_event_unref(m->event);
        free(m->config_path);
        free(m->config_dropins);
        free(m->state_dir);
        free(m->run_dir);
        free(m->db_path);
        free(m->tracefs);
        if (m->only_filesystems)
                filesystem_pins_clear(m->only_filesystems);
        free(m->only_filesystems);
        free(m);
        return NULL;
}

int manager_open_mount_fd(Manager *m, uint64_t fsid) {
        const Filesystem *fs = filesystem_list_find_fsid(&m->filesystems, fsid);
        int fd;

        if (!fs)
                return -ENODEV;
        /* Opened per use and closed again: holding it would keep the filesystem busy for umount. */
        fd = open(fs->mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

static int open_mount(uint64_t fsid, void *userdata) {
        return manager_open_mount_fd(userdata, fsid);
}

/* What happened to single files on their way into a profile (profile.c tells, the Manager logs). */
static void on_profile_note(const ProfileNote *n, void *userdata) {
        switch (n->kind) {
        case PROFILE_NOTE_UNREACHABLE:
                log_debug_errno(n->error, "Session file on filesystem %" PRIx64 " not reachable: %m", n->fsid);
                break;
        case PROFILE_NOTE_LEFT_OUT:
                log_debug_errno(n->error, "Session file %zu not stored (%s): %m", n->index,
                                n->error < 0 ? "unresolvable" : "no trusted path");
                break;
        case PROFILE_NOTE_DROPPED:
                log_debug("%s: gone or replaced since it was recorded, dropping it from profiles", n->path);
                break;
        case PROFILE_NOTE_DROP_FAILED:
                log_warning_errno(n->error, "Failed to delete file %s from the database, ignoring: %m", n->path);
                break;
        case PROFILE_NOTE_UPDATE_FAILED:
                log_warning_errno(n->error, "Failed to update file %s in the database, ignoring: %m", n->path);
                break;
        default:
                break;
        }
}

ProfileOptions manager_profile_options(Manager *m) {
        return (ProfileOptions) {
                .keep_boots = m->config.keep_boots,
                .keep_launches = m->config.keep_launches,
                .min_launch_files = m->config.min_launch_files,
                .boot_id = m->boot_id,
                .open_mount = open_mount,
                .note = on_profile_note,
                .userdata = m,
        };
}


int manager_refresh_counts(Manager *m) {
        int r;

        manager_boot_counts_reload(m);
        r = db_counts(m->db, &m->n_profiles, &m->n_sessions, &m->n_files);
        manager_properties_announce(m);
        return r;
}

/* MaxProfiles= and MaxProfilesPerUser=, after a session of `profile` was stored. Returns whether the
 * profile itself was evicted (a user's, with every other place taken by the system's). */
static bool manager_evict_profiles(Manager *m, const char *profile) {
        DbEvicted *e = NULL;
        bool self = false;
        size_t n = 0;
        int r;

        r = db_evict_profiles(m->db, profile, m->config.max_profiles, m->config.max_profiles_per_user, &e, &n);
        if (r < 0) {
                log_warning_errno(r, "Failed to apply MaxProfiles=%u and MaxProfilesPerUser=%u, ignoring: %m",
                                  m->config.max_profiles, m->config.max_profiles_per_user);
                return false;
        }
        for (size_t i = 0; i < n; i++) {
                char uid[32] = "unknown";

                if (e[i].uid != UID_INVALID)
                        (void) snprintf(uid, sizeof uid, "%u", (unsigned) e[i].uid);
                if (e[i].reason == EVICT_PER_USER)
                        log_info("Evicted profile %s, the least recently updated of uid %s's (MaxProfilesPerUser=%u)",
                                 e[i].name, uid, m->config.max_profiles_per_user);
                else
                        log_info("Evicted profile %s, the least recently updated %s profile (uid %s, MaxProfiles=%u)",
                                 e[i].name, uid_is_system(e[i].uid) ? "system" : "user", uid,
                                 m->config.max_profiles);
                self = self || streq(e[i].name, profile);
        }
        db_evicted_free(e, n);
        return self;
}

/* Each stored page range at debug level: the recording's evidence, one line per range. */
static void log_session_ranges(const Session *s, const ProfileSessionFiles *f) {
        size_t n = 0;

        for (size_t i = 0; i < s->n_touches; i++) {
                const SessionRange *t = &s->touches[i];
                size_t k = f->index ? f->index[t->file] : SIZE_MAX;

                if (k == SIZE_MAX || (f->warm && f->warm[t->file]))
                        continue;
                n++;
                log_debug("Page range %zu of %s: %s pages %" PRIu64 "-%" PRIu64 " at +%" PRIu64 " us", n,
                          s->profile, f->paths[k], t->first_page, t->first_page + t->n_pages - 1, t->offset_usec);
        }
        for (size_t i = 0; i < s->n_meta; i++)
                log_debug("Metadata range %zu of %s: filesystem %016" PRIx64 " pages %" PRIu64 "-%" PRIu64
                          " at +%" PRIu64 " us", i + 1, s->profile, s->meta[i].fsid, s->meta[i].first_page,
                          s->meta[i].first_page + s->meta[i].n_pages - 1, s->meta[i].offset_usec);
        log_info("The %s session of %s holds %zu page range%s (%" PRIu64 " page event%s lost, %zu range%s of "
                 "filesystem metadata, %" PRIu64 " more metadata event%s not kept, %zu file%s partly cached "
                 "before: counted as cached)",
                 profile_kind_to_string(s->kind), s->profile, n, n == 1 ? "" : "s", s->lost_pages,
                 s->lost_pages == 1 ? "" : "s", s->n_meta, s->n_meta == 1 ? "" : "s", s->skipped_metadata,
                 s->skipped_metadata == 1 ? "" : "s", f->n_warm, f->n_warm == 1 ? "" : "s");
        log_info("The %s session of %s took %" PRIu64 " page-cache event%s", profile_kind_to_string(s->kind),
                 s->profile, s->page_events, s->page_events == 1 ? "" : "s");
        if (s->prefetched)
                log_info("The %s session of %s was prefetched: its metadata is not stored, and the profile keeps "
                         "its newest session that was not", profile_kind_to_string(s->kind), s->profile);
}

/* Resolve a session's files (path, size, type) and store it. Files that vanished before we got to them
 * (temporary files) and non-regular files are left out. Returns 1 and the session's id when its profile is
 * to be merged, 0 when there is nothing to merge, -EBUSY (not logged) when the database is locked. */
int manager_save_session(Manager *m, Session *s, uint64_t end_usec, int64_t *ret_id) {
        _cleanup_(profile_session_files_done) ProfileSessionFiles files = {};
        ProfileOptions o = manager_profile_options(m);
        int64_t id;
        int r;

        r = profile_resolve_session(s, &o, &files);
        if (r < 0)
                return r;
        r = profile_store_session(m->db, s, &files, end_usec, &o, &id);
        if (r == 0 && s->kind == PROFILE_APP) {
                log_debug("Launch of %s touched %zu file(s), fewer than MinLaunchFiles=%u: not stored",
                          s->profile, files.n, m->config.min_launch_files);
                return 0;
        }
        if (r == 0) {
                log_info("Boot session recorded no files: not stored");
                return 0;
        }
        if (r == -EBUSY)
                return r;
        if (r < 0)
                return log_error_errno(r, "Failed to store the %s session of %s (%zu files): %m",
                                       profile_kind_to_string(s->kind), s->profile, files.n);
        log_info("Recorded %s session of %s: %zu files%s", profile_kind_to_string(s->kind), s->profile, files.n,
                 s->incomplete ? " (incomplete)" : "");
        if (s->pages)
                log_session_ranges(s, &files);
        if (s->full)
                log_info("The %s session of %s reached MaxSessionFiles=%zu: later files were left out, stored as incomplete",
                         profile_kind_to_string(s->kind), s->profile, s->max_files);
        if (s->ranges_full)
                log_info("The %s session of %s reached its limit of page ranges (%zu, %d of one file): %" PRIu64
                         " page%s of later ranges left out, stored as incomplete",
                         profile_kind_to_string(s->kind), s->profile, s->max_ranges, SESSION_MAX_FILE_RANGES,
                         s->skipped_pages, s->skipped_pages == 1 ? "" : "s");
        if (s->kind == PROFILE_APP) {
                manager_launch_count_bump(m, s->profile);
                manager_launch_prefetch_forget(m, s->profile);
        }
        /* nothing to merge when the profile itself went */
        r = manager_evict_profiles(m, s->profile) ? 0 : 1;
        (void) manager_refresh_counts(m);
        manager_emit_session_recorded(m, id, s->kind, (unsigned) files.n);
        *ret_id = id;
        return r;
}


static int manager_scan_filesystems(Manager *m) {
        FilesystemList l = {}, u = {};
        int r;

        r = mounts_scan("/proc/self/mountinfo", m->only_filesystems, &l, &u);
        if (r < 0)
                return log_error_errno(r, "Failed to enumerate filesystems: %m");
        for (size_t i = 0; i < l.n; i++)
                if (!filesystem_list_find_fsid(&m->filesystems, l.items[i].fsid))
                        log_info("Watching %s (%u:%u, %s)", l.items[i].mount, major(l.items[i].dev),
                                 minor(l.items[i].dev), l.items[i].fstype);
        for (size_t i = 0; i < u.n; i++) {
                const Filesystem *f = &u.items[i], *was = filesystem_list_find_dev(&m->unwatched, f->dev),
                                 *first = filesystem_list_find_fsid(&l, f->fsid);

                if (f->unwatched == UNWATCHED_SAME_UUID && first && (!was || was->unwatched != f->unwatched))
                        log_warning("Not watching %s (%u:%u): same UUID as %s (%u:%u), which is watched; files of "
                                    "both would have the same keys (give the copy a UUID of its own: tune2fs -U)",
                                    f->mount, major(f->dev), minor(f->dev), first->mount, major(first->dev),
                                    minor(first->dev));
        }
        filesystem_list_clear(&m->filesystems);
        m->filesystems = l;
        filesystem_list_clear(&m->unwatched);
        m->unwatched = u;
        r = recorder_set_filesystems(m->recording.recorder, &m->filesystems);
        if (r > 0)
                log_warning("Failed to place fanotify marks on %i filesystem(s)", r);
        manager_pages_set_filesystems(m);
        manager_properties_announce(m);
        return 0;
}

static int on_mountinfo(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;

        (void) manager_scan_filesystems(m);
        return 0;
}

int manager_reload_config(Manager *m) {
        Config c;
        int r;

        (void) sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, now_usec(CLOCK_MONOTONIC));
        config_set_defaults(&c);
        r = config_load(&c, m->config_path, m->config_dropins);
        if (r >= 0) {
                m->config = c;
                log_info("Configuration reloaded from %s and %s", m->config_path, m->config_dropins);
        }
        (void) sd_notify(false, "READY=1");
        manager_notify_status(m);
        return r;
}

static int manager_open_db(Manager *m) {
        int r;

        r = db_open(m->db_path, &m->db);
        if (r == -EBADMSG) {
                char aside[4096];
                snprintf(aside, sizeof aside, "%s.corrupt-%" PRIu64, m->db_path, now_usec(CLOCK_REALTIME) / USEC_PER_SEC);
                log_error("Database %s is corrupt or not seekless's; moving it aside to %s and starting a fresh one",
                          m->db_path, aside);
                if (rename(m->db_path, aside) < 0)
                        return log_error_errno(-errno, "Failed to move %s aside: %m", m->db_path);
                for (const char *suffix = "-wal"; suffix; suffix = streq(suffix, "-wal") ? "-shm" : NULL) {
                        char from[4096], to[4200];
                        snprintf(from, sizeof from, "%s%s", m->db_path, suffix);
                        snprintf(to, sizeof to, "%s%s", aside, suffix);
                        (void) rename(from, to);
                }
                r = db_open(m->db_path, &m->db);
        }
        if (r == -EPROTO)
                return log_error_errno(r, "Database %s was written by a newer version of seekless (schema newer than %i); refusing to use or modify it",
                                       m->db_path, db_schema_version());
        if (r < 0)
                return log_error_errno(r, "Failed to open database %s: %m", m->db_path);
        return 0;
}


static int read_boot_id(char ret[static 33]) {
        _cleanup_fclose_ FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
        char buf[64];
        size_t k = 0;

        if (!f)
                return -errno;
        if (!fgets(buf, sizeof buf, f))
                return -EIO;
        for (char *p = buf; *p && k < 32; p++)
                if (*p != '-' && *p != '\n')
                        ret[k++] = *p;
        ret[k] = 0;
        return k == 32 ? 0 : -EBADMSG;
}

/* Plans asked for are cancelled; a run's "after" snapshot gets as long as the mover does. */
static void stop_plans(Manager *m) {
        if (m->prefetch_worker)
                plan_worker_stop(m->prefetch_worker, 0);
        if (m->plan_worker)
                plan_worker_stop(m->plan_worker, 10 * USEC_PER_SEC);
}

static int on_loop_exit(sd_event_source *s, void *userdata) {
        stop_plans(userdata);
        return 0;
}

int manager_start(Manager *m) {
        int r, mfd;

        if (!m->boot_id[0]) {
                r = read_boot_id(m->boot_id);
                if (r < 0)
                        return log_error_errno(r, "Failed to read the boot id: %m");
        }

        r = manager_open_db(m);
        if (r < 0)
                return r;
        (void) manager_refresh_counts(m);
        {
                _cleanup_free_ char *p = NULL;

                if (asprintf(&p, "%s/initramfs.status", m->run_dir) < 0) {
                        p = NULL;       /* undefined after a failure */
                        m->initramfs_r = -ENOMEM;
                } else
                        m->initramfs_r = initramfs_status_read(p, &m->initramfs);
                if (m->initramfs_r < 0 && m->initramfs_r != -ENOENT)
                        log_warning_errno(m->initramfs_r, "Cannot read %s: %m", p ?: "the initramfs stage's status");
        }

        r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate event loop: %m");
        (void) sd_event_set_watchdog(m->event, true);

        r = plan_worker_new(m->event, m->db_path, &m->plan_worker);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the plan worker: %m");
        r = plan_worker_new(m->event, m->db_path, &m->prefetch_worker);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the prefetch worker: %m");
        /* before the bus's own exit source flushes and closes it: the replies of cancelled plans, and a
         * run's end, still reach their callers */
        r = sd_event_add_exit(m->event, &m->exit_source, on_loop_exit, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the exit handler: %m");
        (void) sd_event_source_set_priority(m->exit_source, SD_EVENT_PRIORITY_IMPORTANT);

        r = recorder_new(m->config.max_launches_per_boot > 0, &m->recording.recorder);
        if (r < 0)
                return log_error_errno(r, "Failed to set up fanotify (needs CAP_SYS_ADMIN and a kernel with fanotify permission events): %m");
        /* The thread that answers exec permission events must exist before the first exec mark does. */
        r = recorder_start(m->recording.recorder);
        if (r < 0)
                return log_error_errno(r, "Failed to start exec watcher thread: %m");
        r = manager_scan_filesystems(m);
        if (r < 0)
                return r;
        if (m->filesystems.n == 0)
                log_warning("No read-write ext4 filesystem to watch%s; waiting for one to be mounted",
                            m->only_filesystems ? " among those given with --filesystem=" : "");

        r = manager_pages_start(m);
        if (r < 0)
                return r;
        r = manager_pages_bpf_start(m);
        if (r < 0)
                return r;

        r = manager_record_start(m);
        if (r < 0)
                return r;

        mfd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
        if (mfd < 0)
                return log_error_errno(-errno, "Failed to open /proc/self/mountinfo: %m");
        r = sd_event_add_io(m->event, &m->mountinfo_source, mfd, EPOLLPRI, on_mountinfo, m);
        if (r < 0) {
                safe_close(mfd);
                return log_error_errno(r, "Failed to watch mounts: %m");
        }
        (void) sd_event_source_set_io_fd_own(m->mountinfo_source, true);

        r = manager_start_boot_session(m);
        if (r < 0)
                return r;

        r = manager_connect_bus(m);
        if (r < 0)
                return r;

        {
                _cleanup_free_ char *state_file = NULL;
                if (asprintf(&state_file, "%s/mb_stream_req.saved", m->state_dir) >= 0) {
                        r = mover_restore_tunables(state_file);
                        if (r < 0)
                                log_warning_errno(r, "Failed to restore mb_stream_req saved in %s: %m", state_file);
                }
        }
        /* A run interrupted by a crash, a shutdown or a busy machine is not resumed here, at start (often
         * during the boot, the worst moment), but by the idle policy once the machine is idle. */
        r = manager_idle_start(m);
        if (r < 0)
                return log_error_errno(r, "Failed to start the idle policy: %m");
        return 0;
}

void manager_flush(Manager *m) {
        manager_record_flush(m);
        /* and the sessions the database could not take yet */
        manager_pending_flush(m);
        /* after the sessions are safe: the mover may need a moment to stop */
        if (m->runs.optimizer && !m->runs.finishing)
                optimizer_shutdown(m->runs.optimizer);
        /* already done when the loop ran to its end (on_loop_exit) */
        stop_plans(m);
}

char *manager_status_text(Manager *m) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        unsigned n = 0;
        char *s = NULL;
        char boot[128] = "", pending[96] = "";

        for (Session *l = m->recording.launches; l; l = l->next)
                n++;
        if (m->recording.boot) {
                uint64_t deadline = m->recording.boot->deadline_usec;

                snprintf(boot, sizeof boot, "recording boot (%" PRIu64 " s left), ",
                         deadline > now ? (deadline - now + USEC_PER_SEC - 1) / USEC_PER_SEC : 0);
        }
        if (m->pending.n_sessions > 0)
                snprintf(pending, sizeof pending, ", %zu session%s waiting for the database (locked)",
                         m->pending.n_sessions, m->pending.n_sessions == 1 ? "" : "s");
        if (asprintf(&s, "%s%s%u launch%s being recorded, watching %zu filesystem%s%s", boot,
                     m->recording.boot || n ? "" : "idle: ", n, n == 1 ? "" : "es", m->filesystems.n,
                     m->filesystems.n == 1 ? "" : "s", pending) < 0)
                return NULL;
        return s;
}

void manager_notify_status(Manager *m) {
        _cleanup_free_ char *s = manager_status_text(m);

        if (s)
                (void) sd_notifyf(false, "STATUS=%s", s);
        manager_properties_announce(m);
}
