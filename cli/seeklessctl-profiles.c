/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seeklessctl profiles, show NAME, sessions, forget: what the daemon has recorded. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <systemd/sd-bus.h>

#include "bus-names.h"
#include "document.h"
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

static int read_profile(sd_bus_message *m, void *userdata) {
        const char *name, *kind;
        uint32_t sessions, files;
        uint64_t bytes, updated_usec;
        Table *t = userdata;
        int r;

        r = sd_bus_message_read(m, "(ssuutt)", &name, &kind, &sessions, &files, &bytes, &updated_usec);
        if (r < 0)
                return r;
        if (table_add_string(t, name) < 0 || table_add_string(t, kind) < 0 || table_add_uint(t, sessions) < 0 ||
            table_add_uint(t, files) < 0 || table_add_bytes(t, bytes) < 0 || table_add_timestamp(t, updated_usec) < 0)
                return -ENOMEM;
        return 0;
}

/* A list the daemon's method member (without arguments) returns, an array of contents, as a table of the
 * columns, a row of each element read by element(), shown as print_list() shows a list of nouns. */
static int list_verb(const char *command, const char *member, const char *what, const TableColumn *columns,
                     const char *contents, int (*element)(sd_bus_message *m, void *userdata), const char *noun) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(table_freep) Table *t = NULL;
        int r;

        r = acquire_bus(&bus);
        if (r < 0)
                return r;
        r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, member, command, what, NULL, &reply, NULL);
        if (r < 0)
                return r;

        t = table_new_columns(columns);
        if (!t)
                return log_oom();
        r = bus_read_array(reply, false, contents, element, t);
        if (r < 0)
                return log_parse_error(r);
        return print_list(t, noun);
}

int verb_profiles(int argc, char *argv[], void *userdata) {
        return list_verb(argv[0], "ListProfiles", "list profiles", profile_columns, "(ssuutt)", read_profile,
                         "profile");
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

/* A profile's files, and their total size. */
typedef struct ProfileFiles {
        Table *table;
        uint64_t total;
} ProfileFiles;

static int read_profile_file(sd_bus_message *m, void *userdata) {
        ProfileFiles *p = userdata;
        Table *t = p->table;
        const char *path;
        uint64_t size;
        uint32_t seen;
        double score;
        int r;

        r = sd_bus_message_read(m, "(stud)", &path, &size, &seen, &score);
        if (r < 0)
                return r;
        if (table_add_uint(t, table_get_rows(t) + 1) < 0 || table_add_string(t, path) < 0 ||
            table_add_bytes(t, size) < 0 || table_add_uint(t, seen) < 0 || table_add_double(t, score, 3) < 0)
                return -ENOMEM;
        p->total += size;
        return 0;
}

/* The legend "NAME (KIND), N files, SIZE" and the table; {"name", "kind", "files": [the table]}. */
static DocNode *profile_doc(const char *name, const char *kind, const ProfileFiles *files) {
        _cleanup_(doc_freep) DocNode *d = doc_new();
        size_t n = table_get_rows(files->table);
        char size[FORMAT_BYTES_MAX];

        doc_add_string(d, NULL, "name", name);
        doc_add_string(d, NULL, "kind", kind);
        doc_add_linef(d, "%s (%s), %zu file%s, %s", name, kind, n, n == 1 ? "" : "s",
                      format_bytes(size, sizeof size, files->total));
        doc_set_flags(d, DOC_LEGEND);
        doc_add_table(d, NULL, "files", files->table, DOC_TABLE_GRID);
        return TAKE_PTR(d);
}

int verb_show(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(doc_freep) DocNode *d = NULL;
        _cleanup_free_ char *what = NULL, *name = arg_to_bus(argv[1]);
        ProfileFiles files = {};
        const char *kind;
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

        files.table = table_new_columns(file_columns);
        if (!files.table)
                return log_oom();
        r = sd_bus_message_read(reply, "s", &kind);
        if (r >= 0)
                r = bus_read_array(reply, false, "(stud)", read_profile_file, &files);
        if (r >= 0) {
                d = profile_doc(name, kind, &files);
                r = print_doc(d);
        } else
                r = log_parse_error(r);
        table_free(files.table);
        return r;
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

static int read_session(sd_bus_message *m, void *userdata) {
        const char *profile, *kind, *boot_id;
        uint64_t id, started_usec, duration_usec;
        uint32_t files;
        Table *t = userdata;
        int complete, r;

        r = sd_bus_message_read(m, "(tsssttub)", &id, &profile, &kind, &boot_id, &started_usec, &duration_usec,
                                &files, &complete);
        if (r < 0)
                return r;
        /* the boot ID in full in JSON, its first 8 characters in the table */
        if (table_add_uint(t, id) < 0 || table_add_string(t, profile) < 0 || table_add_string(t, kind) < 0 ||
            table_add_string(t, boot_id) < 0 || table_set_textf(t, "%.8s", boot_id) < 0 ||
            table_add_timestamp(t, started_usec) < 0 || table_add_timespan(t, duration_usec) < 0 ||
            table_add_uint(t, files) < 0 || table_add_bool(t, complete) < 0)
                return -ENOMEM;
        return 0;
}

int verb_sessions(int argc, char *argv[], void *userdata) {
        return list_verb(argv[0], "ListSessions", "list sessions", session_columns, "(tsssttub)", read_session,
                         "session");
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
