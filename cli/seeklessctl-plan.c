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

#include "cli/document.h"
#include "common/log.h"
#include "common/macro.h"
#include "cli/output.h"
#include "cli/seeklessctl.h"

DocNode *quality_object(const Quality *q) {
        DocNode *o = doc_new();

        doc_add_uint(o, NULL, "files", q->files);
        doc_add_uint(o, NULL, "extents", q->extents);
        doc_add_uint(o, NULL, "discontinuities", q->discontinuities);
        doc_add_uint(o, NULL, "span", q->span);
        doc_add_double(o, NULL, "modeled_read_ms", q->modeled_read_ms, 1);
        return o;
}

typedef struct SkippedList {
        bool with_retry;
        Skipped *items;
        size_t n, allocated;
} SkippedList;

static int read_one_skipped(sd_bus_message *m, void *userdata) {
        SkippedList *l = userdata;
        Skipped k = {};
        int r;

        r = l->with_retry ? sd_bus_message_read(m, "(ssb)", &k.path, &k.reason, &k.retry)
                          : sd_bus_message_read(m, "(ss)", &k.path, &k.reason);
        if (r < 0)
                return r;
        if (GREEDY_REALLOC(l->items, l->allocated, l->n + 1) < 0)
                return -ENOMEM;
        l->items[l->n++] = k;
        return 0;
}

int read_skipped(sd_bus_message *m, bool with_retry, Skipped **ret, size_t *ret_n) {
        SkippedList l = { .with_retry = with_retry };
        int r;

        r = bus_read_array(m, false, with_retry ? "(ssb)" : "(ss)", read_one_skipped, &l);
        if (r < 0) {
                free(l.items);
                return r;
        }
        *ret = l.items;
        *ret_n = l.n;
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


/* Per filesystem "MOUNT: N files, SIZE to move" or "MOUNT: already in place"; the rest only in JSON. */
static const TableColumn plan_filesystem_columns[] = {
        { "FILESYSTEM", "mount"    },
        { NULL,         "in_place" },
        { NULL,         "files"    },
        { NULL,         "bytes"    },
        {}
};

/* The files to move: a POS column for the text, the mount point for JSON. */
static const TableColumn plan_file_columns[] = {
        { "POS",     NULL,      TABLE_ALIGN_RIGHT },
        { NULL,      "mount"                      },
        { "PATH",    "path"                       },
        { "PROFILE", "profile"                    },
        { "SIZE",    "size",    TABLE_ALIGN_RIGHT },
        {}
};

/* Per profile its layout quality now and as expected: "NOW → EXPECTED" in the text, two objects in JSON. */
static const TableColumn plan_profile_columns[] = {
        { "NAME",    "name"                         },
        { "FILES",   NULL,       TABLE_ALIGN_RIGHT  },
        { "EXTENTS", NULL,       TABLE_ALIGN_RIGHT  },
        { "DISCONT", NULL,       TABLE_ALIGN_RIGHT  },
        { "SPAN",    NULL,       TABLE_ALIGN_RIGHT  },
        { "MODELED", NULL,       TABLE_ALIGN_RIGHT  },
        { NULL,      "now"                          },
        { NULL,      "expected"                     },
        {}
};

typedef struct Plan {
        Table *filesystems, *files, *skipped, *profiles;
        const char *arrow;
} Plan;

static void plan_done(Plan *p) {
        table_free(p->filesystems);
        table_free(p->files);
        table_free(p->skipped);
        table_free(p->profiles);
}

static int read_plan_filesystem(sd_bus_message *m, void *userdata) {
        Table *t = ((Plan *) userdata)->filesystems;
        char size[FORMAT_BYTES_MAX];
        const char *mount;
        uint64_t files, bytes;
        int in_place, r;

        r = sd_bus_message_read(m, "(sbtt)", &mount, &in_place, &files, &bytes);
        if (r < 0)
                return r;
        if (table_add_string(t, mount) < 0 ||
            (in_place ? table_set_textf(t, "%s: already in place", mount)
                      : table_set_textf(t, "%s: %" PRIu64 " file%s, %s to move", mount, files, files == 1 ? "" : "s",
                                        format_bytes(size, sizeof size, bytes))) < 0 ||
            table_add_bool(t, in_place) < 0 || table_add_uint(t, files) < 0 || table_add_bytes(t, bytes) < 0)
                return -ENOMEM;
        return 0;
}

static int read_plan_file(sd_bus_message *m, void *userdata) {
        Table *t = ((Plan *) userdata)->files;
        const char *mount, *path, *profile;
        uint64_t size;
        int r;

        r = sd_bus_message_read(m, "(ssst)", &mount, &path, &profile, &size);
        if (r < 0)
                return r;
        if (table_add_uint(t, table_get_rows(t) + 1) < 0 || table_add_string(t, mount) < 0 ||
            table_add_string(t, path) < 0 || table_add_string(t, profile) < 0 || table_add_bytes(t, size) < 0)
                return -ENOMEM;
        return 0;
}

static int read_plan_profile(sd_bus_message *m, void *userdata) {
        Plan *p = userdata;
        Table *t = p->profiles;
        char span_a[FORMAT_BYTES_MAX], span_b[FORMAT_BYTES_MAX];
        const char *name;
        Quality a, b;
        int r;

        r = sd_bus_message_read(m, "(s" QUALITY_TYPES QUALITY_TYPES ")", &name, QUALITY_ARGS(&a), QUALITY_ARGS(&b));
        if (r < 0)
                return r;
        if (table_add_string(t, name) < 0 || table_add_uint(t, a.files) < 0 ||
            table_add_cellf(t, "%" PRIu64 " %s %" PRIu64, a.extents, p->arrow, b.extents) < 0 ||
            table_add_cellf(t, "%" PRIu64 " %s %" PRIu64, a.discontinuities, p->arrow, b.discontinuities) < 0 ||
            table_add_cellf(t, "%s %s %s", format_bytes(span_a, sizeof span_a, a.span), p->arrow,
                            format_bytes(span_b, sizeof span_b, b.span)) < 0 ||
            table_add_cellf(t, "%.1f ms %s %.1f ms", a.modeled_read_ms, p->arrow, b.modeled_read_ms) < 0 ||
            table_add_object(t, quality_object(&a)) < 0 || table_add_object(t, quality_object(&b)) < 0)
                return -ENOMEM;
        return 0;
}

static int read_plan(sd_bus_message *m, Plan *p) {
        _cleanup_free_ Skipped *skipped = NULL;
        size_t n_skipped;
        int r;

        p->arrow = glyph_arrow();
        p->filesystems = table_new_columns(plan_filesystem_columns);
        p->files = table_new_columns(plan_file_columns);
        p->profiles = table_new_columns(plan_profile_columns);
        if (!p->filesystems || !p->files || !p->profiles)
                return -ENOMEM;

        r = bus_read_array(m, false, "(sbtt)", read_plan_filesystem, p);
        if (r >= 0)
                r = bus_read_array(m, false, "(ssst)", read_plan_file, p);
        if (r >= 0)
                r = read_skipped(m, true, &skipped, &n_skipped);
        if (r >= 0)
                r = skipped_table(skipped, n_skipped, true, &p->skipped);
        if (r >= 0)
                r = bus_read_array(m, false, "(s" QUALITY_TYPES QUALITY_TYPES ")", read_plan_profile, p);
        return r;
}

/* The filesystems' lines; after an empty line each: the files to move, "Skipped:" and the files left out
 * ("(will retry)" after the reasons of files worth retrying), the profiles' layout quality. One JSON object
 * of four arrays: seeklessctl(1), JSON OUTPUT. */
static DocNode *plan_doc(const Plan *p) {
        _cleanup_(doc_freep) DocNode *d = doc_new();

        doc_add_table(d, NULL, "filesystems", p->filesystems, DOC_TABLE_ROWS);
        if (table_get_rows(p->filesystems) == 0) {
                doc_add_linef(d, "No filesystems to optimize.");
                doc_set_flags(d, DOC_LEGEND);
        }
        doc_add_table(d, NULL, "files", p->files, DOC_TABLE_GRID);
        doc_set_flags(d, DOC_BLANK_LINE);
        doc_add_table(d, "Skipped:", "skipped", p->skipped, DOC_TABLE_GRID);
        doc_set_flags(d, DOC_BLANK_LINE);
        doc_add_table(d, NULL, "profiles", p->profiles, DOC_TABLE_GRID);
        doc_set_flags(d, DOC_BLANK_LINE);
        return TAKE_PTR(d);
}

int run_plan(sd_bus *bus, char **mounts, const char *command) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Plan p = {};
        int r;

        r = call_with_mounts(bus, "Plan", command, "plan the optimization", mounts, &reply);
        if (r < 0)
                return r;

        r = read_plan(reply, &p);
        if (r >= 0) {
                _cleanup_(doc_freep) DocNode *d = plan_doc(&p);

                r = print_doc(d);
        } else
                r = log_parse_error(r);
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
