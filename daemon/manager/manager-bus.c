/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The org.seekless.Seekless1.Manager interface: one vtable, its handlers and property getters; the
 * marshalling they share is manager-bus-message.c's. The contract is dbus/org.seekless.Seekless1.xml. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <inttypes.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "config.h"

#include "common/bus-names.h"
#include "common/escape.h"
#include "common/log.h"
#include "plan/layout-extents.h"
#include "manager/manager.h"
#include "manager/manager-bus-message.h"
#include "manager/manager-prefetch.h"

static int method_list_profiles(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Manager *m = userdata;
        DbProfileInfo *p = NULL;
        size_t n = 0;
        int r;

        r = bus_check_root(message, "list profiles", error);
        if (r != 0)
                return r;
        r = db_list_profiles(m->db, &p, &n);
        if (r < 0)
                return bus_reply_db_error(error, r, "list profiles");
        r = sd_bus_message_new_method_return(message, &reply);
        if (r >= 0)
                r = bus_open_rows(reply, "psuutt");
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = bus_append_row(reply, "psuutt", p[i].name, profile_kind_to_string(p[i].kind),
                                   p[i].n_sessions, p[i].n_files, p[i].bytes, p[i].updated_realtime_usec);
        r = bus_send_rows(reply, r);
        db_profile_infos_free(p, n);
        return r;
}

/* GetProfile, and GetProfileRanges with the profile's ranges as a third argument. */
static int get_profile(sd_bus_message *message, Manager *m, bool ranges, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ DbProfileRange *rg = NULL;
        ProfileOptions o = manager_profile_options(m);
        DbProfileFile *f = NULL;
        ProfileKind kind;
        _cleanup_free_ char *name = NULL;
        const char *shown;
        size_t n = 0, n_rg = 0;
        int r;

        r = bus_read_profile_name(message, "show profiles", &shown, &name, error);
        if (r != 0)
                return r;
        r = db_get_profile(m->db, name, &kind, &f, &n);
        if (r >= 0 && ranges) {
                r = db_get_profile_ranges(m->db, name, f, n, &rg, &n_rg);
                if (r < 0)
                        db_profile_files_free(f, n);
        }
        if (r == -ENOENT)
                return sd_bus_error_setf(error, SEEKLESS_ERROR_NO_SUCH_PROFILE, "No profile named '%s'.", shown);
        if (r < 0)
                return bus_reply_db_error(error, r, "read profile");
        profile_refresh_paths(f, n, &o);

        r = sd_bus_message_new_method_return(message, &reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "s", profile_kind_to_string(kind));
        if (r >= 0)
                r = bus_open_rows(reply, "ptud");
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = bus_append_row(reply, "ptud", f[i].file.path, f[i].file.size, f[i].seen, f[i].score);
        if (ranges) {
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
                if (r >= 0)
                        r = bus_open_rows(reply, "utt");
                for (size_t i = 0; r >= 0 && i < n_rg; i++)
                        r = bus_append_row(reply, "utt", (uint32_t) rg[i].file, rg[i].offset, rg[i].length);
        }
        r = bus_send_rows(reply, r);
        db_profile_files_free(f, n);
        return r;
}

static int method_get_profile(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return get_profile(message, userdata, false, error);
}

static int method_get_profile_ranges(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return get_profile(message, userdata, true, error);
}

static int method_get_profile_metadata(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ DbMetaRange *meta = NULL;
        _cleanup_free_ char *name = NULL;
        Manager *m = userdata;
        const char *shown;
        size_t n = 0;
        int r;

        r = bus_read_profile_name(message, "show profiles", &shown, &name, error);
        if (r != 0)
                return r;
        r = db_get_profile_metadata(m->db, name, &meta, &n);
        if (r == -ENOENT)
                return sd_bus_error_setf(error, SEEKLESS_ERROR_NO_SUCH_PROFILE, "No profile named '%s'.", shown);
        if (r < 0)
                return bus_reply_db_error(error, r, "read profile");

        r = sd_bus_message_new_method_return(message, &reply);
        if (r >= 0)
                r = bus_open_rows(reply, "ptt");
        for (size_t i = 0; r >= 0 && i < n; i++) {
                const Filesystem *fs = filesystem_list_find_fsid(&m->filesystems, meta[i].fsid);

                r = bus_append_row(reply, "ptt", fs ? fs->mount : "", meta[i].offset, meta[i].length);
        }
        return bus_send_rows(reply, r);
}

static int method_list_sessions(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Manager *m = userdata;
        DbSessionInfo *s = NULL;
        size_t n = 0;
        int r;

        r = bus_check_root(message, "list sessions", error);
        if (r != 0)
                return r;
        r = db_list_sessions(m->db, &s, &n);
        if (r < 0)
                return bus_reply_db_error(error, r, "list sessions");
        r = sd_bus_message_new_method_return(message, &reply);
        if (r >= 0)
                r = bus_open_rows(reply, "tpssttub");
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = bus_append_row(reply, "tpssttub", (uint64_t) s[i].id, s[i].profile,
                                   profile_kind_to_string(s[i].kind), s[i].boot_id, s[i].started_realtime_usec,
                                   s[i].duration_usec, s[i].n_files, (int) s[i].complete);
        r = bus_send_rows(reply, r);
        db_session_infos_free(s, n);
        return r;
}

static int method_forget_profile(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        _cleanup_free_ char *name = NULL;
        const char *shown;
        int r;

        r = bus_read_profile_name(message, "forget profiles", &shown, &name, error);
        if (r != 0)
                return r;
        r = db_forget_profile(m->db, name);
        if (r == -ENOENT)
                return sd_bus_error_setf(error, SEEKLESS_ERROR_NO_SUCH_PROFILE, "No profile named '%s'.", shown);
        if (r < 0)
                return bus_reply_db_error(error, r, "forget profile");
        log_info("Forgot profile %s", name);
        (void) manager_refresh_counts(m);
        manager_space_check(m);
        return sd_bus_reply_method_return(message, NULL);
}

static int method_forget_all(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        unsigned n = 0;
        int r;

        r = bus_check_root(message, "forget profiles", error);
        if (r != 0)
                return r;
        r = db_forget_all(m->db, &n);
        if (r < 0)
                return bus_reply_db_error(error, r, "forget profiles");
        log_info("Forgot all %u profiles", n);
        (void) manager_refresh_counts(m);
        manager_space_check(m);
        return sd_bus_reply_method_return(message, "u", n);
}

static int plan_error(sd_bus_error *error, int r) {
        if (r == -ECANCELED)
                return r;   /* the daemon is stopping: bus_call_reply_error() says so */
        if (r == -ENODEV)
                return sd_bus_error_setf(error, SEEKLESS_ERROR_NOT_WATCHED,
                                         "Not a watched read-write ext4 filesystem (see seeklessctl status).");
        if (r == -EBUSY)
                return sd_bus_error_setf(error, SEEKLESS_ERROR_BUSY, "An optimization is already running.");
        return bus_reply_db_error(error, r, "plan");
}

/* A layout quality in a row: its fields, and its values for bus_append_row(). */
#define QUALITY_FIELDS "ttttd"
#define QUALITY_VALUES(q) (q).files, (q).extents, (q).discontinuities, (q).span, (q).modeled_read_ms

static int append_skipped(sd_bus_message *reply, const Plan *p) {
        int r;

        r = bus_open_rows(reply, "ppb");
        for (size_t i = 0; r >= 0 && i < p->n_skipped; i++)
                r = bus_append_row(reply, "ppb", p->skipped[i].path, p->skipped[i].reason,
                                   (int) p->skipped[i].retry);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

static int reply_plan(sd_bus_message *message, char *const *mounts, const Plan *p) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(message, &reply);
        if (r >= 0)
                r = bus_open_rows(reply, "pbtt");
        for (size_t i = 0; r >= 0 && i < p->n_fs; i++)
                if (!mounts || p->fs[i].n_files > 0 || strv_contains(mounts, p->fs[i].mount))
                        r = bus_append_row(reply, "pbtt", p->fs[i].mount, (int) p->fs[i].in_place,
                                           (uint64_t) p->fs[i].n_files, p->fs[i].bytes);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = bus_open_rows(reply, "pppt");
        for (size_t i = 0; r >= 0 && i < p->n_fs; i++)
                for (size_t k = 0; r >= 0 && k < p->fs[i].n_files; k++)
                        r = bus_append_row(reply, "pppt", p->fs[i].mount, p->fs[i].files[k].path,
                                           p->fs[i].files[k].profile, plan_file_bytes(&p->fs[i].files[k]));
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = append_skipped(reply, p);
        if (r >= 0)
                r = bus_open_rows(reply, "p" QUALITY_FIELDS QUALITY_FIELDS);
        for (size_t i = 0; r >= 0 && i < p->n_profiles; i++)
                r = bus_append_row(reply, "p" QUALITY_FIELDS QUALITY_FIELDS, p->profiles[i].name,
                                   QUALITY_VALUES(p->profiles[i].before),
                                   QUALITY_VALUES(p->profiles[i].expected));
        return bus_send_rows(reply, r);
}

static void on_plan_built(int r, Plan *plan, void *userdata) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        BusCall *c = userdata;

        if (r < 0)
                r = plan_error(&error, r);
        else
                r = reply_plan(c->message, c->mounts, plan);
        bus_call_finish(c, r, &error);
}

/* The plan walks every profile file: the worker builds it, the reply goes from on_plan_built(). */
static int method_plan(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        _cleanup_(bus_call_freep) BusCall *c = NULL;
        Manager *m = userdata;
        int r;

        r = bus_check_root(message, "plan", error);
        if (r != 0)
                return r;
        r = bus_call_new(m, message, &c);
        if (r < 0)
                return r;
        r = bus_read_mounts(message, &c->mounts, error);
        if (r != 0)
                return r;
        r = manager_plan(m, c->mounts, false, on_plan_built, c);
        if (r < 0)
                return plan_error(error, r);
        TAKE_PTR(c);
        return 1;
}

static void on_optimize_started(Manager *m, int r, uint64_t id, Plan *p, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        BusCall *c = userdata;
        uint64_t files = 0, bytes = 0;

        if (r < 0) {
                bus_call_finish(c, plan_error(&error, r), &error);
                return;
        }
        /* done now what a queued request would have done later */
        if (m->idle.request_realtime_usec != 0) {
                log_info("Optimize supersedes the queued optimization");
                (void) manager_idle_drop(m);
        }
        manager_properties_announce(m);
        if (m->runs.optimizer) {
                files = m->runs.optimizer->files_total;
                bytes = m->runs.optimizer->bytes_total;
        }
        r = sd_bus_message_new_method_return(c->message, &reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "tut", id, (uint32_t) files, bytes);
        if (r >= 0)
                r = append_skipped(reply, p);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        bus_call_finish(c, r, &error);
}

/* Planned on the worker; the reply comes from on_optimize_started(). */
static int method_optimize(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        _cleanup_(bus_call_freep) BusCall *c = NULL;
        Manager *m = userdata;
        int r;

        r = bus_check_root(message, "optimize", error);
        if (r != 0)
                return r;
        r = bus_call_new(m, message, &c);
        if (r < 0)
                return r;
        r = bus_read_mounts(message, &c->mounts, error);
        if (r != 0)
                return r;
        r = manager_optimize(m, c->mounts, on_optimize_started, c);
        if (r < 0)
                return plan_error(error, r);
        TAKE_PTR(c);
        return 1;
}

static void on_queued_started(Manager *m, int r, uint64_t id, void *userdata) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        BusCall *c = userdata;

        if (r < 0)
                r = plan_error(&error, r);
        else
                r = sd_bus_reply_method_return(c->message, "bts", 0, id, m->idle.status);
        bus_call_finish(c, r, &error);
}

static int method_optimize_when_idle(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        _cleanup_(bus_call_freep) BusCall *c = NULL;
        _cleanup_strv_free_ char **mounts = NULL;
        Manager *m = userdata;
        uint64_t id = 0;
        int r;

        r = bus_check_root(message, "optimize", error);
        if (r != 0)
                return r;
        r = bus_read_mounts(message, &mounts, error);
        if (r != 0)
                return r;
        /* checked now: the admin is there to read the error, later nobody is */
        const char *unwatched = manager_unwatched_mount(m, mounts);
        if (unwatched) {
                _cleanup_free_ char *e = path_escape(unwatched);
                if (!e)
                        return -ENOMEM;
                return sd_bus_error_setf(error, SEEKLESS_ERROR_NOT_WATCHED,
                                         "'%s' is not a watched read-write ext4 filesystem (see seeklessctl status).", e);
        }
        r = bus_call_new(m, message, &c);
        if (r < 0)
                return r;
        r = manager_idle_queue(m, TAKE_PTR(mounts), on_queued_started, c);
        if (r < 0)
                return plan_error(error, r);
        manager_properties_announce(m);
        if (r > 0) {
                /* being started: the reply comes from on_queued_started() */
                TAKE_PTR(c);
                return 1;
        }
        return sd_bus_reply_method_return(message, "bts", (int) (r == 0), id, m->idle.status);
}

static int method_cancel_queued(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        int r;

        r = bus_check_root(message, "cancel", error);
        if (r != 0)
                return r;
        bool dropped = manager_idle_drop(m);
        manager_properties_announce(m);
        return sd_bus_reply_method_return(message, "b", (int) dropped);
}

static int method_cancel(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        int r;

        r = bus_check_root(message, "cancel", error);
        if (r != 0)
                return r;
        if (m->runs.optimizer) {
                log_info("Cancelling optimization %" PRIu64, m->runs.optimizer->id);
                /* also an idle-policy pause under way: the run must not resume later */
                optimizer_cancel(m->runs.optimizer);
        } else if (m->runs.preparing)
                /* being planned: cancelled as soon as it starts */
                m->runs.cancel_pending = true;
        return sd_bus_reply_method_return(message, "b", (int) (m->runs.optimizer || m->runs.preparing));
}

static int method_get_run_skipped(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Manager *m = userdata;
        const FinishedRun *f = NULL;
        uint64_t id;
        int r;

        r = bus_check_root(message, "list skipped files", error);
        if (r != 0)
                return r;
        r = sd_bus_message_read(message, "t", &id);
        if (r < 0)
                return r;
        for (size_t i = 0; i < FINISHED_RUNS_KEPT && !f; i++)
                if (id != 0 && m->runs.finished[i].id == id)
                        f = &m->runs.finished[i];
        if (!f)
                return sd_bus_error_setf(error, SEEKLESS_ERROR_NO_SUCH_RUN,
                                         "No finished run %" PRIu64 " (the last %u runs since the daemon started are kept).",
                                         id, FINISHED_RUNS_KEPT);
        r = sd_bus_message_new_method_return(message, &reply);
        if (r >= 0)
                r = bus_open_rows(reply, "pp");
        for (size_t i = 0; r >= 0 && i < f->n_skipped; i++)
                r = bus_append_row(reply, "pp", f->skipped[i].path, f->skipped[i].reason);
        return bus_send_rows(reply, r);
}

static void on_report_planned(int r, Plan *plan, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        BusCall *c = userdata;
        bool found = false;

        if (r < 0) {
                bus_call_finish(c, plan_error(&error, r), &error);
                return;
        }
        r = sd_bus_message_new_method_return(c->message, &reply);
        if (r >= 0)
                r = bus_open_rows(reply, "p" QUALITY_FIELDS "ttttdt");
        for (size_t i = 0; r >= 0 && i < plan->n_profiles; i++) {
                DbQuality b = {};
                if (c->name && !streq(c->name, plan->profiles[i].name))
                        continue;
                found = true;
                (void) db_quality_get(c->m->db, plan->profiles[i].name, QUALITY_BEFORE, &b);
                r = bus_append_row(reply, "p" QUALITY_FIELDS "ttttdt", plan->profiles[i].name,
                                   QUALITY_VALUES(plan->profiles[i].before), b.files, b.extents,
                                   b.discontinuities, b.span, b.modeled_ms, b.taken);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0 && c->name && !found)
                r = sd_bus_error_setf(&error, SEEKLESS_ERROR_NO_SUCH_PROFILE, "No profile named '%s'.", c->shown);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        bus_call_finish(c, r, &error);
}

/* The layout now is a plan's "before": built on the worker, the reply comes from on_report_planned(). */
static int method_report(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        _cleanup_(bus_call_freep) BusCall *c = NULL;
        Manager *m = userdata;
        const char *shown;
        int r;

        r = bus_check_root(message, "report", error);
        if (r != 0)
                return r;
        r = sd_bus_message_read(message, "s", &shown);
        if (r < 0)
                return r;
        r = bus_call_new(m, message, &c);
        if (r < 0)
                return r;
        if (!isempty(shown)) {
                r = bus_unescape_name(shown, &c->name, error);
                if (r != 0)
                        return r;
                c->shown = strdup(shown);
                if (!c->shown)
                        return -ENOMEM;
        }
        r = manager_plan(m, NULL, false, on_report_planned, c);
        if (r < 0)
                return plan_error(error, r);
        TAKE_PTR(c);
        return 1;
}

/* GetLayout's data, gathered on the worker (layout-extents.h): the profile's files, where each was before
 * the last run and where it is now. */
typedef struct LayoutCall {
        BusCall *call;
        FilesystemList filesystems;
        LayoutExtents extents;
} LayoutCall;

static LayoutCall *layout_call_free(LayoutCall *l) {
        if (!l)
                return NULL;
        bus_call_free(l->call);
        filesystem_list_clear(&l->filesystems);
        layout_extents_done(&l->extents);
        free(l);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(LayoutCall *, layout_call_free);

/* On the worker thread, with its connection. */
static int layout_work(Db *db, const atomic_bool *cancel, void *userdata) {
        LayoutCall *l = userdata;

        return layout_extents_get(db, l->call->name, &l->filesystems, cancel, &l->extents);
}

static int append_layout(sd_bus_message *reply, const LayoutExtent *l, size_t n) {
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(utt)");
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_append(reply, "(utt)", l[i].index, l[i].physical, l[i].length);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

static void on_layout_done(int r, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(layout_call_freep) LayoutCall *l = userdata;

        if (r == -ENOENT)
                r = sd_bus_error_setf(&error, SEEKLESS_ERROR_NO_SUCH_PROFILE, "No profile named '%s'.", l->call->shown);
        else if (r < 0 && r != -ECANCELED)
                r = bus_reply_db_error(&error, r, "read profile");
        if (r >= 0)
                r = sd_bus_message_new_method_return(l->call->message, &reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "t", l->extents.device);
        if (r >= 0)
                r = append_layout(reply, l->extents.before, l->extents.n_before);
        if (r >= 0)
                r = append_layout(reply, l->extents.now, l->extents.n_now);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        if (r < 0)
                bus_call_reply_error(l->call, r, &error);
}

/* FIEMAP of every file of the profile: on the worker, the reply comes from on_layout_done(). */
static int method_get_layout(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        _cleanup_(layout_call_freep) LayoutCall *l = NULL;
        Manager *m = userdata;
        const char *shown;
        int r;

        l = calloc(1, sizeof *l);
        if (!l)
                return -ENOMEM;
        r = bus_call_new(m, message, &l->call);
        if (r < 0)
                return r;
        r = bus_read_profile_name(message, "show layouts", &shown, &l->call->name, error);
        if (r != 0)
                return r;
        l->call->shown = strdup(shown);
        if (!l->call->shown)
                return -ENOMEM;
        r = filesystem_list_copy(&m->filesystems, &l->filesystems);
        if (r < 0)
                return r;
        r = plan_worker_submit(m->plan_worker, layout_work, on_layout_done, l, false);
        if (r < 0)
                return r;
        TAKE_PTR(l);
        return 1;
}

static int property_get_idle_status(sd_bus *bus, const char *path, const char *interface, const char *property,
                                    sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "s", m->idle.status);
}

/* What records launches' pages: "bpf" where the BPF recorder loaded, else "fanotify" (manager-pages-bpf.c). */
static int property_get_recorder(sd_bus *bus, const char *path, const char *interface, const char *property,
                                 sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "s", m->pages.bpf ? "bpf" : "fanotify");
}

static int property_get_initramfs_stage(sd_bus *bus, const char *path, const char *interface, const char *property,
                                       sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const InitramfsStatus *s = &m->initramfs;
        char why[128];

        if (m->initramfs_r == -ENOENT)
                return sd_bus_message_append(reply, "(ssss)", "none", "did not run this boot", "", "");
        if (m->initramfs_r < 0) {
                errno = -m->initramfs_r;
                snprintf(why, sizeof why, "its status cannot be read (%m)");
                return sd_bus_message_append(reply, "(ssss)", "unknown", why, "", "");
        }
        return sd_bus_message_append(reply, "(ssss)", s->outcome, s->summary, s->early_outcome, s->early_summary);
}

static int property_get_queued_optimization(sd_bus *bus, const char *path, const char *interface,
                                           const char *property, sd_bus_message *reply, void *userdata,
                                           sd_bus_error *error) {
        Manager *m = userdata;
        int r;

        r = sd_bus_message_open_container(reply, 'r', "tas");
        if (r >= 0)
                r = sd_bus_message_append(reply, "t", m->idle.request_realtime_usec);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "s");
        for (size_t i = 0; r >= 0 && m->idle.request_mounts && m->idle.request_mounts[i]; i++)
                r = bus_append_path(reply, m->idle.request_mounts[i]);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

/* (mount, why) of each watched filesystem refusal() names a reason for: RelocationOff, PrefetchOff */
static int append_refusals(sd_bus_message *reply, Manager *m,
                           const char *(*refusal)(Manager *m, const Filesystem *fs, char *buf, size_t n)) {
        int r;

        r = bus_open_rows(reply, "ps");
        for (size_t i = 0; r >= 0 && i < m->filesystems.n; i++) {
                char why[PATH_MAX + 64];
                if (refusal(m, &m->filesystems.items[i], why, sizeof why))
                        r = bus_append_row(reply, "ps", m->filesystems.items[i].mount, why);
        }
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

static int property_get_relocation_off(sd_bus *bus, const char *path, const char *interface, const char *property,
                                       sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return append_refusals(reply, userdata, manager_relocation_refusal);
}

static int property_get_prefetch_off(sd_bus *bus, const char *path, const char *interface, const char *property,
                                     sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return append_refusals(reply, userdata, manager_prefetch_refusal);
}

static int property_get_optimizing(sd_bus *bus, const char *path, const char *interface, const char *property,
                                   sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "b", (int) !!m->runs.optimizer);
}

static int property_get_optimization_id(sd_bus *bus, const char *path, const char *interface, const char *property,
                                        sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "t", m->runs.optimizer ? m->runs.optimizer->id : (uint64_t) 0);
}

static int property_get_status(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        _cleanup_free_ char *s = manager_status_text(userdata);

        if (!s)
                return -ENOMEM;
        return sd_bus_message_append(reply, "s", s);
}

static int property_get_boot_recording(sd_bus *bus, const char *path, const char *interface, const char *property,
                                       sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "b", (int) !!m->recording.boot);
}

static int property_get_active_launches(sd_bus *bus, const char *path, const char *interface, const char *property,
                                        sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        unsigned n = 0;

        for (Session *s = m->recording.launches; s; s = s->next)
                n++;
        return sd_bus_message_append(reply, "u", n);
}

/* (mount, "MAJ:MIN", fstype) of each filesystem of l, and with why, why it is not watched. */
static int append_filesystems(sd_bus_message *reply, const FilesystemList *l, bool why) {
        int r;

        r = bus_open_rows(reply, why ? "psss" : "pss");
        for (size_t i = 0; r >= 0 && i < l->n; i++) {
                const Filesystem *fs = &l->items[i];
                char dev[32];
                snprintf(dev, sizeof dev, "%u:%u", major(fs->dev), minor(fs->dev));
                if (why)
                        r = bus_append_row(reply, "psss", fs->mount, dev, fs->fstype,
                                           unwatched_to_string(fs->unwatched));
                else
                        r = bus_append_row(reply, "pss", fs->mount, dev, fs->fstype);
        }
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

static int property_get_filesystems(sd_bus *bus, const char *path, const char *interface, const char *property,
                                    sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return append_filesystems(reply, &m->filesystems, false);
}

static int property_get_unwatched_filesystems(sd_bus *bus, const char *path, const char *interface,
                                              const char *property, sd_bus_message *reply, void *userdata,
                                              sd_bus_error *error) {
        Manager *m = userdata;
        return append_filesystems(reply, &m->unwatched, true);
}

static int property_get_database_size(sd_bus *bus, const char *path, const char *interface, const char *property,
                                      sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        uint64_t total = 0;
        char wal[4096];
        struct stat st;

        if (stat(m->db_path, &st) >= 0)
                total += st.st_size;
        snprintf(wal, sizeof wal, "%s-wal", m->db_path);
        if (stat(wal, &st) >= 0)
                total += st.st_size;
        return sd_bus_message_append(reply, "t", total);
}

static int property_get_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", PACKAGE_VERSION);
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        /* PropertiesChanged: see manager_properties_announce(); the three counters that move with every
         * event or write do not emit it */
        SD_BUS_PROPERTY("Status", "s", property_get_status, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("BootRecording", "b", property_get_boot_recording, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ActiveLaunches", "u", property_get_active_launches, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Profiles", "u", NULL, offsetof(Manager, n_profiles), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Sessions", "u", NULL, offsetof(Manager, n_sessions), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Files", "u", NULL, offsetof(Manager, n_files), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Filesystems", "a(sss)", property_get_filesystems, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("EventsReceived", "t", NULL, offsetof(Manager, recording.events_received), 0),
        SD_BUS_PROPERTY("Overflows", "t", NULL, offsetof(Manager, recording.overflows), 0),
        SD_BUS_PROPERTY("DatabaseSize", "t", property_get_database_size, 0, 0),
        SD_BUS_PROPERTY("Optimizing", "b", property_get_optimizing, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("OptimizationId", "t", property_get_optimization_id, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("IdleStatus", "s", property_get_idle_status, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Recorder", "s", property_get_recorder, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("InitramfsStage", "(ssss)", property_get_initramfs_stage, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("RelocationOff", "a(ss)", property_get_relocation_off, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("PrefetchOff", "a(ss)", property_get_prefetch_off, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("UnwatchedFilesystems", "a(ssss)", property_get_unwatched_filesystems, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("QueuedOptimization", "(tas)", property_get_queued_optimization, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),

        SD_BUS_METHOD_WITH_ARGS("ListProfiles", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(ssuutt)", profiles),
                                method_list_profiles, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetProfile", SD_BUS_ARGS("s", name), SD_BUS_RESULT("s", kind, "a(stud)", files),
                                method_get_profile, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetProfileRanges", SD_BUS_ARGS("s", name),
                                SD_BUS_RESULT("s", kind, "a(stud)", files, "a(utt)", ranges),
                                method_get_profile_ranges, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetProfileMetadata", SD_BUS_ARGS("s", name), SD_BUS_RESULT("a(stt)", metadata),
                                method_get_profile_metadata, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListSessions", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(tsssttub)", sessions),
                                method_list_sessions, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ForgetProfile", SD_BUS_ARGS("s", name), SD_BUS_NO_RESULT,
                                method_forget_profile, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ForgetAll", SD_BUS_NO_ARGS, SD_BUS_RESULT("u", profiles),
                                method_forget_all, SD_BUS_VTABLE_UNPRIVILEGED),

        SD_BUS_METHOD_WITH_ARGS("Plan", SD_BUS_ARGS("as", mounts),
                                SD_BUS_RESULT("a(sbtt)", filesystems, "a(ssst)", files, "a(ssb)", skipped,
                                              "a(sttttdttttd)", profiles),
                                method_plan, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Optimize", SD_BUS_ARGS("as", mounts),
                                SD_BUS_RESULT("t", id, "u", files, "t", bytes, "a(ssb)", skipped),
                                method_optimize, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("OptimizeWhenIdle", SD_BUS_ARGS("as", mounts),
                                SD_BUS_RESULT("b", queued, "t", id, "s", idle),
                                method_optimize_when_idle, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Cancel", SD_BUS_NO_ARGS, SD_BUS_RESULT("b", cancelled),
                                method_cancel, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("CancelQueued", SD_BUS_NO_ARGS, SD_BUS_RESULT("b", dropped),
                                method_cancel_queued, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetRunSkipped", SD_BUS_ARGS("t", id), SD_BUS_RESULT("a(ss)", skipped),
                                method_get_run_skipped, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Report", SD_BUS_ARGS("s", name), SD_BUS_RESULT("a(sttttdttttdt)", profiles),
                                method_report, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetLayout", SD_BUS_ARGS("s", name),
                                SD_BUS_RESULT("t", device, "a(utt)", before, "a(utt)", now),
                                method_get_layout, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Prefetch", SD_BUS_ARGS("s", name), SD_BUS_RESULT("a(ssttttu)", filesystems),
                                manager_method_prefetch, SD_BUS_VTABLE_UNPRIVILEGED),

        SD_BUS_SIGNAL_WITH_ARGS("Progress", SD_BUS_ARGS("t", id, "t", files_done, "t", files_total,
                                                        "t", bytes_done, "t", bytes_total), 0),
        SD_BUS_SIGNAL_WITH_ARGS("RunFinished", SD_BUS_ARGS("t", id, "s", state, "t", moved_files,
                                                           "t", moved_bytes, "u", skipped), 0),
        SD_BUS_SIGNAL_WITH_ARGS("SessionRecorded", SD_BUS_ARGS("t", session, "s", kind, "u", files), 0),
        SD_BUS_VTABLE_END
};

int manager_bus_add_objects(Manager *m, sd_bus *bus) {
        return sd_bus_add_object_vtable(bus, NULL, SEEKLESS_BUS_PATH, SEEKLESS_BUS_INTERFACE, manager_vtable, m);
}
