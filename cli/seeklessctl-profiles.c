/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seeklessctl profiles, show NAME, sessions, forget: what the daemon has recorded. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-bus.h>

#include "common/alloc-util.h"
#include "common/bus-names.h"
#include "cli/document.h"
#include "common/json.h"
#include "common/log.h"
#include "common/macro.h"
#include "cli/output.h"
#include "cli/seeklessctl.h"
#include "cli/verbs.h"

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
        { "POS",    NULL,     TABLE_ALIGN_RIGHT },
        { "PATH",   "path"                      },
        { "SIZE",   "size",   TABLE_ALIGN_RIGHT },
        { "SEEN",   "seen",   TABLE_ALIGN_RIGHT },
        { "SCORE",  "score",  TABLE_ALIGN_RIGHT },
        { "HOT",    NULL,     TABLE_ALIGN_RIGHT },
        { "RANGES", "ranges"                    },
        {}
};

static const TableColumn range_columns[] = {
        { "OFFSET", "offset" },
        { "LENGTH", "length" },
        {}
};

static const TableColumn metadata_columns[] = {
        { "FILESYSTEM", "filesystem" },
        { "OFFSET",     "offset"     },
        { "LENGTH",     "length"     },
        {}
};

/* Ranges shown per file in the text; the rest are counted ("+N"). */
#define SHOW_RANGES_MAX 3

typedef struct ShowRange {
        uint64_t offset, length;
} ShowRange;

typedef struct ShowFile {
        const char *path;       /* in the reply */
        uint64_t size;
        uint32_t seen;
        double score;
        ShowRange *ranges;
        size_t n_ranges, allocated_ranges;
} ShowFile;

/* A profile's files and their ranges, as GetProfileRanges returned them. */
typedef struct ShowProfile {
        ShowFile *files;
        size_t n_files, allocated_files;
        uint64_t total, hot;
        size_t n_ranges;
} ShowProfile;

static void show_profile_done(ShowProfile *p) {
        for (size_t i = 0; i < p->n_files; i++)
                free(p->files[i].ranges);
        free(p->files);
        *p = (ShowProfile) {};
}

static int read_profile_file(sd_bus_message *m, void *userdata) {
        ShowProfile *p = userdata;
        ShowFile f = {};
        int r;

        r = sd_bus_message_read(m, "(stud)", &f.path, &f.size, &f.seen, &f.score);
        if (r < 0)
                return r;
        if (greedy_realloc((void **) &p->files, &p->allocated_files, p->n_files + 1, sizeof f) < 0)
                return -ENOMEM;
        p->files[p->n_files++] = f;
        p->total += f.size;
        return 0;
}

static int read_profile_range(sd_bus_message *m, void *userdata) {
        ShowProfile *p = userdata;
        ShowFile *f;
        uint32_t file;
        uint64_t offset, length;
        int r;

        r = sd_bus_message_read(m, "(utt)", &file, &offset, &length);
        if (r < 0)
                return r;
        if (file >= p->n_files)
                return -EBADMSG;
        f = p->files + file;
        if (greedy_realloc((void **) &f->ranges, &f->allocated_ranges, f->n_ranges + 1, sizeof(ShowRange)) < 0)
                return -ENOMEM;
        f->ranges[f->n_ranges++] = (ShowRange) { offset, length };
        p->hot += length;
        p->n_ranges++;
        return 0;
}

/* "whole" for one range over the whole file, else the first ranges as "START-END" and how many more. */
static int range_text(const ShowFile *f, char **ret) {
        _cleanup_free_ char *s = NULL;
        size_t len = 0;
        FILE *o;

        if (f->n_ranges == 1 && f->ranges[0].offset == 0 && f->ranges[0].length == f->size) {
                s = strdup("whole");
                if (!s)
                        return -ENOMEM;
                *ret = TAKE_PTR(s);
                return 0;
        }
        o = open_memstream(&s, &len);
        if (!o)
                return -ENOMEM;
        for (size_t i = 0; i < MIN(f->n_ranges, (size_t) SHOW_RANGES_MAX); i++) {
                char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX];

                fprintf(o, "%s%s-%s", i > 0 ? ", " : "", format_bytes(a, sizeof a, f->ranges[i].offset),
                        format_bytes(b, sizeof b, f->ranges[i].offset + f->ranges[i].length));
        }
        if (f->n_ranges > SHOW_RANGES_MAX)
                fprintf(o, ", +%zu", f->n_ranges - SHOW_RANGES_MAX);
        if (fclose(o) != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(s);
        return 0;
}

static int add_file_row(Table *t, const ShowFile *f) {
        _cleanup_(table_freep) Table *ranges = table_new_columns(range_columns);
        _cleanup_free_ char *text = NULL;
        uint64_t hot = 0;

        if (!ranges)
                return -ENOMEM;
        for (size_t i = 0; i < f->n_ranges; i++) {
                if (table_add_uint(ranges, f->ranges[i].offset) < 0 || table_add_uint(ranges, f->ranges[i].length) < 0)
                        return -ENOMEM;
                hot += f->ranges[i].length;
        }
        if (range_text(f, &text) < 0)
                return -ENOMEM;
        if (table_add_uint(t, table_get_rows(t) + 1) < 0 || table_add_string(t, f->path) < 0 ||
            table_add_bytes(t, f->size) < 0 || table_add_uint(t, f->seen) < 0 ||
            table_add_double(t, f->score, 3) < 0 || table_add_bytes(t, hot) < 0 ||
            table_add_rows(t, TAKE_PTR(ranges)) < 0 || table_set_textf(t, "%s", text) < 0)
                return -ENOMEM;
        return 0;
}

/* GetProfileMetadata's rows into the table; *bytes adds up their lengths. */
typedef struct ShowMetadata {
        Table *t;
        uint64_t bytes;
} ShowMetadata;

static int read_metadata_range(sd_bus_message *m, void *userdata) {
        ShowMetadata *md = userdata;
        const char *mount;
        uint64_t offset, length;
        int r;

        r = sd_bus_message_read(m, "(stt)", &mount, &offset, &length);
        if (r < 0)
                return r;
        if (table_add_string(md->t, mount) < 0 || table_add_uint(md->t, offset) < 0 ||
            table_add_uint(md->t, length) < 0)
                return -ENOMEM;
        md->bytes += length;
        return 0;
}

/* The legend "NAME (KIND), N files, SIZE, R ranges, HOT hot" (and a line on the filesystem metadata, if
 * any) and the table; {"name", "kind", "files": [the table], "metadata": [the metadata ranges]}. */
static DocNode *profile_doc(const char *name, const char *kind, const ShowProfile *p, Table *files,
                            const ShowMetadata *md) {
        _cleanup_(doc_freep) DocNode *d = doc_new();
        char size[FORMAT_BYTES_MAX], hot[FORMAT_BYTES_MAX], meta[FORMAT_BYTES_MAX];
        size_t n_meta = table_get_rows(md->t);

        doc_add_string(d, NULL, "name", name);
        doc_add_string(d, NULL, "kind", kind);
        doc_add_linef(d, "%s (%s), %zu file%s, %s, %zu range%s, %s hot", name, kind, p->n_files,
                      p->n_files == 1 ? "" : "s", format_bytes(size, sizeof size, p->total), p->n_ranges,
                      p->n_ranges == 1 ? "" : "s", format_bytes(hot, sizeof hot, p->hot));
        doc_set_flags(d, DOC_LEGEND);
        if (n_meta > 0) {
                doc_add_linef(d, "Filesystem metadata read (newest session, never moved): %zu range%s, %s",
                              n_meta, n_meta == 1 ? "" : "s", format_bytes(meta, sizeof meta, md->bytes));
                doc_set_flags(d, DOC_LEGEND);
        }
        doc_add_table(d, NULL, "files", files, DOC_TABLE_GRID);
        doc_add_table(d, NULL, "metadata", md->t, DOC_TABLE_HIDDEN);
        return TAKE_PTR(d);
}

int verb_show(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(doc_freep) DocNode *d = NULL;
        _cleanup_(table_freep) Table *files = NULL, *metadata = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *meta_reply = NULL;
        _cleanup_(show_profile_done) ShowProfile p = {};
        ShowMetadata md = {};
        _cleanup_free_ char *what = NULL, *name = arg_to_bus(argv[1]);
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

        r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "GetProfileRanges", argv[0], what, name, &reply, "s", name);
        if (r < 0)
                return r;

        r = sd_bus_message_read(reply, "s", &kind);
        if (r >= 0)
                r = bus_read_array(reply, false, "(stud)", read_profile_file, &p);
        if (r >= 0)
                r = bus_read_array(reply, false, "(utt)", read_profile_range, &p);
        if (r < 0)
                return log_parse_error(r);

        /* a seeklessd not restarted since an upgrade may not know it yet: the profile without its metadata */
        r = call_daemon_optional(bus, SEEKLESS_BUS_INTERFACE, "GetProfileMetadata", argv[0], what, name,
                                 &meta_reply, "s", name);
        if (r < 0)
                return r;
        metadata = md.t = table_new_columns(metadata_columns);
        if (!metadata)
                return log_oom();
        r = meta_reply ? bus_read_array(meta_reply, false, "(stt)", read_metadata_range, &md) : 0;
        if (r < 0)
                return log_parse_error(r);

        files = table_new_columns(file_columns);
        if (!files)
                return log_oom();
        for (size_t i = 0; i < p.n_files; i++)
                if (add_file_row(files, p.files + i) < 0)
                        return log_oom();
        d = profile_doc(name, kind, &p, files, &md);
        return print_doc(d);
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
