/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seeklessctl profiles, show NAME, sessions, forget: what the daemon has recorded. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <systemd/sd-bus.h>

#include "bus-names.h"
#include "json.h"
#include "log.h"
#include "macro.h"
#include "output.h"
#include "seeklessctl.h"
#include "verbs.h"

typedef struct ProfileInfo {
        const char *name, *kind;
        uint32_t sessions, files;
        uint64_t bytes, updated_usec;
} ProfileInfo;

static int profiles_json(const ProfileInfo *p, size_t n) {
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;
        int r;

        r = json_writer_new_stdout(&w);
        if (r < 0)
                return r;

        r = json_begin_array(w);
        for (size_t i = 0; r >= 0 && i < n; i++)
                if ((r = json_begin_object(w)) >= 0 &&
                    (r = json_key_string(w, "name", p[i].name)) >= 0 &&
                    (r = json_key_string(w, "kind", p[i].kind)) >= 0 &&
                    (r = json_key_uint(w, "sessions", p[i].sessions)) >= 0 &&
                    (r = json_key_uint(w, "files", p[i].files)) >= 0 &&
                    (r = json_key_uint(w, "bytes", p[i].bytes)) >= 0 &&
                    (r = json_key_uint(w, "updated_usec", p[i].updated_usec)) >= 0)
                        r = json_end_object(w);
        if (r >= 0)
                r = json_end_array(w);

        return json_done(w, r);
}

static int profiles_human(const ProfileInfo *p, size_t n) {
        _cleanup_(table_freep) Table *t = NULL;
        int r = 0;

        if (n == 0) {
                if (arg_legend)
                        puts("No profiles recorded yet.");
                return 0;
        }

        t = table_new("NAME", "KIND", "SESSIONS", "FILES", "SIZE", "UPDATED");
        if (!t)
                return log_oom();
        for (size_t c = 2; c <= 4; c++)
                (void) table_set_align(t, c, TABLE_ALIGN_RIGHT);

        for (size_t i = 0; r >= 0 && i < n; i++) {
                char size[FORMAT_BYTES_MAX], updated[FORMAT_TIMESTAMP_MAX];

                if ((r = table_add_cell(t, p[i].name)) >= 0 &&
                    (r = table_add_cell(t, p[i].kind)) >= 0 &&
                    (r = table_add_cellf(t, "%" PRIu32, p[i].sessions)) >= 0 &&
                    (r = table_add_cellf(t, "%" PRIu32, p[i].files)) >= 0 &&
                    (r = table_add_cell(t, format_bytes(size, sizeof size, p[i].bytes))) >= 0)
                        r = table_add_cell(t, format_timestamp(updated, sizeof updated, p[i].updated_usec));
        }
        if (r >= 0)
                r = table_print(t, stdout, arg_legend);
        if (r < 0)
                return log_table_error(r);

        if (arg_legend)
                printf("\n%zu profile%s listed.\n", n, n == 1 ? "" : "s");
        return 0;
}

int verb_profiles(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ ProfileInfo *profiles = NULL;
        size_t n = 0, allocated = 0;
        ProfileInfo p;
        int r;

        r = acquire_bus(&bus);
        if (r < 0)
                return r;

        r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "ListProfiles", argv[0], "list profiles", NULL, &reply,
                        NULL);
        if (r < 0)
                return r;

        r = sd_bus_message_enter_container(reply, 'a', "(ssuutt)");
        if (r < 0)
                return log_parse_error(r);
        while ((r = sd_bus_message_read(reply, "(ssuutt)", &p.name, &p.kind, &p.sessions, &p.files,
                                        &p.bytes, &p.updated_usec)) > 0) {
                if (grow_array(&profiles, &allocated, n + 1, sizeof *profiles) < 0)
                        return log_oom();
                profiles[n++] = p;
        }
        if (r < 0)
                return log_parse_error(r);
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return log_parse_error(r);

        return arg_json != JSON_OFF ? profiles_json(profiles, n) : profiles_human(profiles, n);
}

/* ---------------------------------------------------------------------------------------------------- */
/* show NAME */

typedef struct FileInfo {
        const char *path;
        uint64_t size;
        uint32_t seen;
        double score;
} FileInfo;

static int show_json(const char *name, const char *kind, const FileInfo *f, size_t n) {
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;
        int r;

        r = json_writer_new_stdout(&w);
        if (r < 0)
                return r;

        if ((r = json_begin_object(w)) >= 0 &&
            (r = json_key_string(w, "name", name)) >= 0 &&
            (r = json_key_string(w, "kind", kind)) >= 0 &&
            (r = json_key(w, "files")) >= 0 &&
            (r = json_begin_array(w)) >= 0) {
                for (size_t i = 0; r >= 0 && i < n; i++)
                        if ((r = json_begin_object(w)) >= 0 &&
                            (r = json_key_string(w, "path", f[i].path)) >= 0 &&
                            (r = json_key_uint(w, "size", f[i].size)) >= 0 &&
                            (r = json_key_uint(w, "seen", f[i].seen)) >= 0 &&
                            (r = json_key_double(w, "score", f[i].score)) >= 0)
                                r = json_end_object(w);
                if (r >= 0 && (r = json_end_array(w)) >= 0)
                        r = json_end_object(w);
        }

        return json_done(w, r);
}

static int show_human(const char *name, const char *kind, const FileInfo *f, size_t n) {
        _cleanup_(table_freep) Table *t = NULL;
        char size[FORMAT_BYTES_MAX];
        uint64_t total = 0;
        int r = 0;

        for (size_t i = 0; i < n; i++)
                total += f[i].size;

        if (arg_legend)
                printf("%s (%s), %zu file%s, %s\n", name, kind, n, n == 1 ? "" : "s",
                       format_bytes(size, sizeof size, total));
        if (n == 0)
                return 0;

        t = table_new("POS", "PATH", "SIZE", "SEEN", "SCORE");
        if (!t)
                return log_oom();
        (void) table_set_align(t, 0, TABLE_ALIGN_RIGHT);
        for (size_t c = 2; c <= 4; c++)
                (void) table_set_align(t, c, TABLE_ALIGN_RIGHT);

        for (size_t i = 0; r >= 0 && i < n; i++)
                if ((r = table_add_cellf(t, "%zu", i + 1)) >= 0 &&
                    (r = table_add_cell(t, f[i].path)) >= 0 &&
                    (r = table_add_cell(t, format_bytes(size, sizeof size, f[i].size))) >= 0 &&
                    (r = table_add_cellf(t, "%" PRIu32, f[i].seen)) >= 0)
                        r = table_add_cellf(t, "%.3f", f[i].score);
        if (r >= 0)
                r = table_print(t, stdout, arg_legend);
        if (r < 0)
                return log_table_error(r);
        return 0;
}

int verb_show(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ FileInfo *files = NULL;
        _cleanup_free_ char *what = NULL, *name = arg_to_bus(argv[1]);
        const char *kind;
        size_t n = 0, allocated = 0;
        FileInfo f;
        int r;

        if (!name)
                return log_oom();
        r = acquire_bus(&bus);
        if (r < 0)
                return r;

        if (asprintf(&what, "get profile '%s'", name) < 0) {
                what = NULL;
                return log_oom();
        }

        r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "GetProfile", argv[0], what, name, &reply, "s", name);
        if (r < 0)
                return r;

        r = sd_bus_message_read(reply, "s", &kind);
        if (r < 0)
                return log_parse_error(r);
        r = sd_bus_message_enter_container(reply, 'a', "(stud)");
        if (r < 0)
                return log_parse_error(r);
        while ((r = sd_bus_message_read(reply, "(stud)", &f.path, &f.size, &f.seen, &f.score)) > 0) {
                if (grow_array(&files, &allocated, n + 1, sizeof *files) < 0)
                        return log_oom();
                files[n++] = f;
        }
        if (r < 0)
                return log_parse_error(r);
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return log_parse_error(r);

        return arg_json != JSON_OFF ? show_json(name, kind, files, n) : show_human(name, kind, files, n);
}

/* ---------------------------------------------------------------------------------------------------- */
/* sessions */

typedef struct SessionInfo {
        uint64_t id;
        const char *profile, *kind, *boot_id;
        uint64_t started_usec, duration_usec;
        uint32_t files;
        int complete;
} SessionInfo;

static int sessions_json(const SessionInfo *s, size_t n) {
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;
        int r;

        r = json_writer_new_stdout(&w);
        if (r < 0)
                return r;

        r = json_begin_array(w);
        for (size_t i = 0; r >= 0 && i < n; i++)
                if ((r = json_begin_object(w)) >= 0 &&
                    (r = json_key_uint(w, "id", s[i].id)) >= 0 &&
                    (r = json_key_string(w, "profile", s[i].profile)) >= 0 &&
                    (r = json_key_string(w, "kind", s[i].kind)) >= 0 &&
                    (r = json_key_string(w, "boot_id", s[i].boot_id)) >= 0 &&
                    (r = json_key_uint(w, "started_usec", s[i].started_usec)) >= 0 &&
                    (r = json_key_uint(w, "duration_usec", s[i].duration_usec)) >= 0 &&
                    (r = json_key_uint(w, "files", s[i].files)) >= 0 &&
                    (r = json_key_bool(w, "complete", s[i].complete)) >= 0)
                        r = json_end_object(w);
        if (r >= 0)
                r = json_end_array(w);

        return json_done(w, r);
}

static int sessions_human(const SessionInfo *s, size_t n) {
        _cleanup_(table_freep) Table *t = NULL;
        int r = 0;

        if (n == 0) {
                if (arg_legend)
                        puts("No sessions recorded yet.");
                return 0;
        }

        t = table_new("ID", "PROFILE", "KIND", "BOOT", "STARTED", "DURATION", "FILES", "COMPLETE");
        if (!t)
                return log_oom();
        (void) table_set_align(t, 0, TABLE_ALIGN_RIGHT);
        (void) table_set_align(t, 5, TABLE_ALIGN_RIGHT);
        (void) table_set_align(t, 6, TABLE_ALIGN_RIGHT);

        for (size_t i = 0; r >= 0 && i < n; i++) {
                char started[FORMAT_TIMESTAMP_MAX], duration[FORMAT_TIMESPAN_MAX];

                if ((r = table_add_cellf(t, "%" PRIu64, s[i].id)) >= 0 &&
                    (r = table_add_cell(t, s[i].profile)) >= 0 &&
                    (r = table_add_cell(t, s[i].kind)) >= 0 &&
                    (r = table_add_cellf(t, "%.8s", s[i].boot_id)) >= 0 &&
                    (r = table_add_cell(t, format_timestamp(started, sizeof started, s[i].started_usec))) >= 0 &&
                    (r = table_add_cell(t, format_timespan(duration, sizeof duration, s[i].duration_usec))) >= 0 &&
                    (r = table_add_cellf(t, "%" PRIu32, s[i].files)) >= 0)
                        r = table_add_cell(t, s[i].complete ? "yes" : "no");
        }
        if (r >= 0)
                r = table_print(t, stdout, arg_legend);
        if (r < 0)
                return log_table_error(r);

        if (arg_legend)
                printf("\n%zu session%s listed.\n", n, n == 1 ? "" : "s");
        return 0;
}

int verb_sessions(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ SessionInfo *sessions = NULL;
        size_t n = 0, allocated = 0;
        SessionInfo s;
        int r;

        r = acquire_bus(&bus);
        if (r < 0)
                return r;

        r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "ListSessions", argv[0], "list sessions", NULL, &reply,
                        NULL);
        if (r < 0)
                return r;

        r = sd_bus_message_enter_container(reply, 'a', "(tsssttub)");
        if (r < 0)
                return log_parse_error(r);
        while ((r = sd_bus_message_read(reply, "(tsssttub)", &s.id, &s.profile, &s.kind, &s.boot_id,
                                        &s.started_usec, &s.duration_usec, &s.files, &s.complete)) > 0) {
                if (grow_array(&sessions, &allocated, n + 1, sizeof *sessions) < 0)
                        return log_oom();
                sessions[n++] = s;
        }
        if (r < 0)
                return log_parse_error(r);
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return log_parse_error(r);

        return arg_json != JSON_OFF ? sessions_json(sessions, n) : sessions_human(sessions, n);
}

/* ---------------------------------------------------------------------------------------------------- */
/* forget NAME | forget --all */

static int forget_print(uint32_t n, const char *name) {
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;
        int r;

        if (arg_json == JSON_OFF) {
                if (name)
                        printf("Forgot profile '%s'.\n", name);
                else
                        printf("Forgot %" PRIu32 " profile%s.\n", n, n == 1 ? "" : "s");
                return 0;
        }

        r = json_writer_new_stdout(&w);
        if (r < 0)
                return r;
        if ((r = json_begin_object(w)) >= 0 && (r = json_key_uint(w, "forgotten", n)) >= 0)
                r = json_end_object(w);
        return json_done(w, r);
}

int verb_forget(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *what = NULL, *name = NULL;
        uint32_t n;
        int r;

        if (arg_all && argc > 1) {
                log_error("Specify either a profile NAME or --all, not both.");
                verb_usage_hint();
                return -EUSAGE;
        }
        if (!arg_all && argc < 2) {
                log_error("'forget' needs a profile NAME or --all.");
                verb_usage_hint();
                return -EUSAGE;
        }

        r = acquire_bus(&bus);
        if (r < 0)
                return r;

        if (arg_all) {
                r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "ForgetAll", argv[0], "forget all profiles", NULL,
                                &reply, NULL);
                if (r < 0)
                        return r;
                r = sd_bus_message_read(reply, "u", &n);
                if (r < 0)
                        return log_parse_error(r);
                return forget_print(n, NULL);
        }

        name = arg_to_bus(argv[1]);
        if (!name || asprintf(&what, "forget profile '%s'", name) < 0) {
                what = NULL;
                return log_oom();
        }
        r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "ForgetProfile", argv[0], what, name, NULL, "s", name);
        if (r < 0)
                return r;
        return forget_print(1, name);
}
