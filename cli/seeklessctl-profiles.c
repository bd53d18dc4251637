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

static const TableColumn profile_columns[] = {
        { "NAME",     "name"                            },
        { "KIND",     "kind"                            },
        { "SESSIONS", "sessions",     TABLE_ALIGN_RIGHT },
        { "FILES",    "files",        TABLE_ALIGN_RIGHT },
        { "SIZE",     "bytes",        TABLE_ALIGN_RIGHT },
        { "UPDATED",  "updated_usec"                    },
        {}
};

int verb_profiles(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(table_freep) Table *t = NULL;
        const char *name, *kind;
        uint32_t sessions, files;
        uint64_t bytes, updated_usec;
        int r;

        r = acquire_bus(&bus);
        if (r < 0)
                return r;

        r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "ListProfiles", argv[0], "list profiles", NULL, &reply,
                        NULL);
        if (r < 0)
                return r;

        t = table_new_columns(profile_columns);
        if (!t)
                return log_oom();
        r = sd_bus_message_enter_container(reply, 'a', "(ssuutt)");
        if (r < 0)
                return log_parse_error(r);
        while ((r = sd_bus_message_read(reply, "(ssuutt)", &name, &kind, &sessions, &files, &bytes,
                                        &updated_usec)) > 0)
                if (table_add_string(t, name) < 0 || table_add_string(t, kind) < 0 ||
                    table_add_uint(t, sessions) < 0 || table_add_uint(t, files) < 0 ||
                    table_add_bytes(t, bytes) < 0 || table_add_timestamp(t, updated_usec) < 0)
                        return log_oom();
        if (r < 0)
                return log_parse_error(r);
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return log_parse_error(r);

        return print_list(t, "profile");
}

/* ---------------------------------------------------------------------------------------------------- */
/* show NAME */

static const TableColumn file_columns[] = {
        { "POS",   NULL,    TABLE_ALIGN_RIGHT },
        { "PATH",  "path"                     },
        { "SIZE",  "size",  TABLE_ALIGN_RIGHT },
        { "SEEN",  "seen",  TABLE_ALIGN_RIGHT },
        { "SCORE", "score", TABLE_ALIGN_RIGHT },
        {}
};

/* {"name": ..., "kind": ..., "files": [the table]} */
static int show_json(const char *name, const char *kind, const Table *files) {
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;
        int r;

        r = json_writer_new_stdout(&w);
        if (r < 0)
                return r;

        if ((r = json_begin_object(w)) >= 0 &&
            (r = json_key_string(w, "name", name)) >= 0 &&
            (r = json_key_string(w, "kind", kind)) >= 0 &&
            (r = json_key(w, "files")) >= 0 &&
            (r = table_write_json(files, w)) >= 0)
                r = json_end_object(w);

        return json_done(w, r);
}

/* "NAME (KIND), N files, SIZE" and the table. */
static int show_human(const char *name, const char *kind, const Table *files, uint64_t total) {
        size_t n = table_get_rows(files);
        char size[FORMAT_BYTES_MAX];

        if (arg_legend)
                printf("%s (%s), %zu file%s, %s\n", name, kind, n, n == 1 ? "" : "s",
                       format_bytes(size, sizeof size, total));
        if (n == 0)
                return 0;
        return print_table(files);
}

int verb_show(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(table_freep) Table *t = NULL;
        _cleanup_free_ char *what = NULL, *name = arg_to_bus(argv[1]);
        const char *kind, *path;
        uint64_t size, total = 0;
        uint32_t seen;
        double score;
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

        t = table_new_columns(file_columns);
        if (!t)
                return log_oom();
        r = sd_bus_message_read(reply, "s", &kind);
        if (r < 0)
                return log_parse_error(r);
        r = sd_bus_message_enter_container(reply, 'a', "(stud)");
        if (r < 0)
                return log_parse_error(r);
        while ((r = sd_bus_message_read(reply, "(stud)", &path, &size, &seen, &score)) > 0) {
                if (table_add_uint(t, table_get_rows(t) + 1) < 0 || table_add_string(t, path) < 0 ||
                    table_add_bytes(t, size) < 0 || table_add_uint(t, seen) < 0 || table_add_double(t, score, 3) < 0)
                        return log_oom();
                total += size;
        }
        if (r < 0)
                return log_parse_error(r);
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return log_parse_error(r);

        return arg_json != JSON_OFF ? show_json(name, kind, t) : show_human(name, kind, t, total);
}

/* ---------------------------------------------------------------------------------------------------- */
/* sessions */

static const TableColumn session_columns[] = {
        { "ID",       "id",            TABLE_ALIGN_RIGHT },
        { "PROFILE",  "profile"                          },
        { "KIND",     "kind"                             },
        { "BOOT",     "boot_id"                          },
        { "STARTED",  "started_usec"                     },
        { "DURATION", "duration_usec", TABLE_ALIGN_RIGHT },
        { "FILES",    "files",         TABLE_ALIGN_RIGHT },
        { "COMPLETE", "complete"                         },
        {}
};

int verb_sessions(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(table_freep) Table *t = NULL;
        const char *profile, *kind, *boot_id;
        uint64_t id, started_usec, duration_usec;
        uint32_t files;
        int complete;
        int r;

        r = acquire_bus(&bus);
        if (r < 0)
                return r;

        r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "ListSessions", argv[0], "list sessions", NULL, &reply,
                        NULL);
        if (r < 0)
                return r;

        t = table_new_columns(session_columns);
        if (!t)
                return log_oom();
        r = sd_bus_message_enter_container(reply, 'a', "(tsssttub)");
        if (r < 0)
                return log_parse_error(r);
        while ((r = sd_bus_message_read(reply, "(tsssttub)", &id, &profile, &kind, &boot_id, &started_usec,
                                        &duration_usec, &files, &complete)) > 0)
                /* the boot ID in full in JSON, its first 8 characters in the table */
                if (table_add_uint(t, id) < 0 || table_add_string(t, profile) < 0 || table_add_string(t, kind) < 0 ||
                    table_add_string(t, boot_id) < 0 || table_set_textf(t, "%.8s", boot_id) < 0 ||
                    table_add_timestamp(t, started_usec) < 0 || table_add_timespan(t, duration_usec) < 0 ||
                    table_add_uint(t, files) < 0 || table_add_bool(t, complete) < 0)
                        return log_oom();
        if (r < 0)
                return log_parse_error(r);
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return log_parse_error(r);

        return print_list(t, "session");
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
