/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seeklessctl plan (and optimize --dry-run): what an optimization would move and the layout quality
 * expected after it; the layout quality and skipped-file pieces optimize and report share. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-bus.h>

#include "json.h"
#include "log.h"
#include "macro.h"
#include "output.h"
#include "seeklessctl.h"

int json_quality(JsonWriter *w, const Quality *q) {
        int r;

        if ((r = json_begin_object(w)) >= 0 &&
            (r = json_key_uint(w, "files", q->files)) >= 0 &&
            (r = json_key_uint(w, "extents", q->extents)) >= 0 &&
            (r = json_key_uint(w, "discontinuities", q->discontinuities)) >= 0 &&
            (r = json_key_uint(w, "span", q->span)) >= 0 &&
            (r = json_key_double(w, "modeled_read_ms", q->modeled_read_ms)) >= 0)
                r = json_end_object(w);
        return r;
}

int read_skipped(sd_bus_message *m, bool with_retry, Skipped **ret, size_t *ret_n) {
        _cleanup_free_ Skipped *skipped = NULL;
        size_t n = 0, allocated = 0;
        Skipped k = {};
        int r;

        r = sd_bus_message_enter_container(m, 'a', with_retry ? "(ssb)" : "(ss)");
        if (r < 0)
                return r;
        while ((r = with_retry ? sd_bus_message_read(m, "(ssb)", &k.path, &k.reason, &k.retry)
                               : sd_bus_message_read(m, "(ss)", &k.path, &k.reason)) > 0) {
                if (GREEDY_REALLOC(skipped, allocated, n + 1) < 0)
                        return -ENOMEM;
                skipped[n++] = k;
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(skipped);
        *ret_n = n;
        return 0;
}

int skipped_table(const Skipped *k, size_t n, bool with_retry, Table **ret) {
        const TableColumn columns[] = {
                { "PATH",   "path"                       },
                { "REASON", "reason"                     },
                { NULL,     with_retry ? "retry" : NULL  },
                {}
        };
        _cleanup_(table_freep) Table *t = NULL;

        t = table_new_columns(columns);
        if (!t)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (table_add_string(t, k[i].path) < 0 || table_add_string(t, k[i].reason) < 0)
                        return -ENOMEM;
                if (k[i].retry && table_set_textf(t, "%s (will retry)", k[i].reason) < 0)
                        return -ENOMEM;
                if (with_retry && table_add_bool(t, k[i].retry) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(t);
        return 0;
}

/* "→" where the locale can show it, "->" otherwise. seeklessctl never calls setlocale(), so look at the
 * environment the way setlocale() would. */
static const char *glyph_arrow(void) {
        const char *l = getenv("LC_ALL");

        if (isempty(l))
                l = getenv("LC_CTYPE");
        if (isempty(l))
                l = getenv("LANG");
        if (l && (strcasestr(l, "UTF-8") || strcasestr(l, "utf8")))
                return "\u2192";
        return "->";
}


typedef struct PlanFilesystem {
        const char *mount;
        int in_place;
        uint64_t files, bytes;
} PlanFilesystem;

typedef struct PlanProfile {
        const char *name;
        Quality now, expected;
} PlanProfile;

/* The files to move: a POS column for the text, the mount point for JSON. */
static const TableColumn plan_file_columns[] = {
        { "POS",     NULL,      TABLE_ALIGN_RIGHT },
        { NULL,      "mount"                      },
        { "PATH",    "path"                       },
        { "PROFILE", "profile"                    },
        { "SIZE",    "size",    TABLE_ALIGN_RIGHT },
        {}
};

/* Arrays own nothing but themselves: strings point into the reply. */
typedef struct Plan {
        PlanFilesystem *filesystems;
        Table *files, *skipped;
        PlanProfile *profiles;
        size_t n_filesystems, n_profiles;
} Plan;

static void plan_done(Plan *p) {
        free(p->filesystems);
        table_free(p->files);
        table_free(p->skipped);
        free(p->profiles);
}

static int read_plan(sd_bus_message *m, Plan *p) {
        _cleanup_free_ Skipped *skipped = NULL;
        const char *mount, *path, *profile;
        size_t allocated, n_skipped;
        uint64_t size;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(sbtt)");
        if (r < 0)
                return r;
        allocated = 0;
        for (PlanFilesystem f;
             (r = sd_bus_message_read(m, "(sbtt)", &f.mount, &f.in_place, &f.files, &f.bytes)) > 0;) {
                if (GREEDY_REALLOC(p->filesystems, allocated, p->n_filesystems + 1) < 0)
                        return -ENOMEM;
                p->filesystems[p->n_filesystems++] = f;
        }
        if (r < 0 || (r = sd_bus_message_exit_container(m)) < 0)
                return r;

        r = sd_bus_message_enter_container(m, 'a', "(ssst)");
        if (r < 0)
                return r;
        p->files = table_new_columns(plan_file_columns);
        if (!p->files)
                return -ENOMEM;
        while ((r = sd_bus_message_read(m, "(ssst)", &mount, &path, &profile, &size)) > 0)
                if (table_add_uint(p->files, table_get_rows(p->files) + 1) < 0 || table_add_string(p->files, mount) < 0 ||
                    table_add_string(p->files, path) < 0 || table_add_string(p->files, profile) < 0 ||
                    table_add_bytes(p->files, size) < 0)
                        return -ENOMEM;
        if (r < 0 || (r = sd_bus_message_exit_container(m)) < 0)
                return r;

        r = read_skipped(m, true, &skipped, &n_skipped);
        if (r >= 0)
                r = skipped_table(skipped, n_skipped, true, &p->skipped);
        if (r < 0)
                return r;

        r = sd_bus_message_enter_container(m, 'a', "(s" QUALITY_TYPES QUALITY_TYPES ")");
        if (r < 0)
                return r;
        allocated = 0;
        for (PlanProfile q;
             (r = sd_bus_message_read(m, "(s" QUALITY_TYPES QUALITY_TYPES ")", &q.name, QUALITY_ARGS(&q.now),
                                      QUALITY_ARGS(&q.expected))) > 0;) {
                if (GREEDY_REALLOC(p->profiles, allocated, p->n_profiles + 1) < 0)
                        return -ENOMEM;
                p->profiles[p->n_profiles++] = q;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int plan_json(const Plan *p) {
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;
        int r;

        r = json_writer_new_stdout(&w);
        if (r < 0)
                return r;

        if ((r = json_begin_object(w)) < 0 || (r = json_key(w, "filesystems")) < 0 ||
            (r = json_begin_array(w)) < 0)
                return json_done(w, r);
        for (size_t i = 0; r >= 0 && i < p->n_filesystems; i++)
                if ((r = json_begin_object(w)) >= 0 &&
                    (r = json_key_string(w, "mount", p->filesystems[i].mount)) >= 0 &&
                    (r = json_key_bool(w, "in_place", p->filesystems[i].in_place)) >= 0 &&
                    (r = json_key_uint(w, "files", p->filesystems[i].files)) >= 0 &&
                    (r = json_key_uint(w, "bytes", p->filesystems[i].bytes)) >= 0)
                        r = json_end_object(w);
        if (r < 0 || (r = json_end_array(w)) < 0 ||
            (r = json_key(w, "files")) < 0 || (r = table_write_json(p->files, w)) < 0 ||
            (r = json_key(w, "skipped")) < 0 || (r = table_write_json(p->skipped, w)) < 0 ||
            (r = json_key(w, "profiles")) < 0 || (r = json_begin_array(w)) < 0)
                return json_done(w, r);
        for (size_t i = 0; r >= 0 && i < p->n_profiles; i++)
                if ((r = json_begin_object(w)) >= 0 &&
                    (r = json_key_string(w, "name", p->profiles[i].name)) >= 0 &&
                    (r = json_key(w, "now")) >= 0 &&
                    (r = json_quality(w, &p->profiles[i].now)) >= 0 &&
                    (r = json_key(w, "expected")) >= 0 &&
                    (r = json_quality(w, &p->profiles[i].expected)) >= 0)
                        r = json_end_object(w);
        if (r >= 0 && (r = json_end_array(w)) >= 0)
                r = json_end_object(w);

        return json_done(w, r);
}

/* "Skipped:" and a PATH REASON table; "(will retry)" after the reasons of files worth retrying. */
static int skipped_human(const Table *skipped) {
        if (table_get_rows(skipped) == 0)
                return 0;

        if (arg_legend)
                puts("\nSkipped:");
        else
                putchar('\n');
        return print_table(skipped);
}

static int plan_human(const Plan *p) {
        _cleanup_(table_freep) Table *quality = NULL;
        const char *arrow = glyph_arrow();
        char size[FORMAT_BYTES_MAX];
        int r = 0;

        if (p->n_filesystems == 0 && arg_legend)
                puts("No filesystems to optimize.");
        for (size_t i = 0; i < p->n_filesystems; i++)
                if (p->filesystems[i].in_place)
                        printf("%s: already in place\n", p->filesystems[i].mount);
                else
                        printf("%s: %" PRIu64 " file%s, %s to move\n", p->filesystems[i].mount,
                               p->filesystems[i].files, p->filesystems[i].files == 1 ? "" : "s",
                               format_bytes(size, sizeof size, p->filesystems[i].bytes));

        if (table_get_rows(p->files) > 0) {
                putchar('\n');
                r = print_table(p->files);
                if (r < 0)
                        return r;
        }

        r = skipped_human(p->skipped);
        if (r < 0 || p->n_profiles == 0)
                return r;

        quality = table_new("NAME", "FILES", "EXTENTS", "DISCONT", "SPAN", "MODELED");
        if (!quality)
                return log_oom();
        for (size_t c = 1; c <= 5; c++)
                (void) table_set_align(quality, c, TABLE_ALIGN_RIGHT);
        for (size_t i = 0; r >= 0 && i < p->n_profiles; i++) {
                const Quality *a = &p->profiles[i].now, *b = &p->profiles[i].expected;
                char span_a[FORMAT_BYTES_MAX], span_b[FORMAT_BYTES_MAX];

                if ((r = table_add_cell(quality, p->profiles[i].name)) >= 0 &&
                    (r = table_add_cellf(quality, "%" PRIu64, a->files)) >= 0 &&
                    (r = table_add_cellf(quality, "%" PRIu64 " %s %" PRIu64, a->extents, arrow, b->extents)) >= 0 &&
                    (r = table_add_cellf(quality, "%" PRIu64 " %s %" PRIu64, a->discontinuities, arrow,
                                         b->discontinuities)) >= 0 &&
                    (r = table_add_cellf(quality, "%s %s %s", format_bytes(span_a, sizeof span_a, a->span), arrow,
                                         format_bytes(span_b, sizeof span_b, b->span))) >= 0)
                        r = table_add_cellf(quality, "%.1f ms %s %.1f ms", a->modeled_read_ms, arrow,
                                            b->modeled_read_ms);
        }
        if (r >= 0) {
                putchar('\n');
                r = table_print(quality, stdout, arg_legend);
        }
        return r < 0 ? log_table_error(r) : 0;
}

int run_plan(sd_bus *bus, char **mounts, const char *command) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Plan p = {};
        int r;

        r = call_with_mounts(bus, "Plan", command, "plan the optimization", mounts, &reply);
        if (r < 0)
                return r;

        r = read_plan(reply, &p);
        if (r < 0)
                r = r == -ENOMEM ? log_oom() : log_parse_error(r);
        else
                r = arg_json != JSON_OFF ? plan_json(&p) : plan_human(&p);
        plan_done(&p);
        return r;
}

int verb_plan(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_strv_free_ char **mounts = NULL;
        int r;

        r = mounts_from_args(argv + 1, argv[0], &mounts);
        if (r < 0)
                return r;

        r = acquire_bus(&bus);
        if (r < 0)
                return r;

        return run_plan(bus, mounts, argv[0]);
}
