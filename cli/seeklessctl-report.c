/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seeklessctl report [NAME] [--svg=FILE]: the layout quality of profiles, and the picture of one. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "common/bus-names.h"
#include "cli/document.h"
#include "common/log.h"
#include "common/macro.h"
#include "cli/output.h"
#include "cli/seeklessctl.h"
#include "cli/svg.h"
#include "cli/verbs.h"

typedef struct ReportInfo {
        const char *name;
        Quality now, before;
        uint64_t before_usec;   /* when "before" was taken; 0: never optimized, before is meaningless */
} ReportInfo;

/* The quality now (in JSON the object's own fields), the modeled read time of "before" and when it was
 * taken ("-" for a profile never optimized: null and 0 in JSON, where "before" is the whole quality). */
static const TableColumn report_columns[] = {
        { "NAME",       "name"                                 },
        { "FILES",      "files",             TABLE_ALIGN_RIGHT },
        { "EXTENTS",    "extents",           TABLE_ALIGN_RIGHT },
        { "DISCONT",    "discontinuities",   TABLE_ALIGN_RIGHT },
        { "SPAN",       "span",              TABLE_ALIGN_RIGHT },
        { "MODELED-MS", "modeled_read_ms",   TABLE_ALIGN_RIGHT },
        { "BEFORE-MS",  "before",            TABLE_ALIGN_RIGHT },
        { "CHANGED",    "before_taken_usec"                    },
        {}
};

/* The rows, and the first profile's figures for the picture. */
typedef struct Report {
        Table *table;
        ReportInfo first;
} Report;

static int report_row(Table *t, const ReportInfo *p) {
        if (table_add_string(t, p->name) < 0 || table_add_uint(t, p->now.files) < 0 ||
            table_add_uint(t, p->now.extents) < 0 || table_add_uint(t, p->now.discontinuities) < 0 ||
            table_add_bytes(t, p->now.span) < 0 || table_add_double(t, p->now.modeled_read_ms, 1) < 0)
                return -ENOMEM;
        if (p->before_usec == 0)
                return table_add_null(t) < 0 || table_set_textf(t, "-") < 0 ||
                       table_add_timestamp(t, 0) < 0 || table_set_textf(t, "-") < 0 ? -ENOMEM : 0;
        return table_add_object(t, quality_object(&p->before)) < 0 ||
               table_set_textf(t, "%.1f", p->before.modeled_read_ms) < 0 ||
               table_add_timestamp(t, p->before_usec) < 0 ? -ENOMEM : 0;
}

static int read_report_row(sd_bus_message *m, void *userdata) {
        Report *report = userdata;
        ReportInfo p;
        int r;

        r = sd_bus_message_read(m, "(s" QUALITY_TYPES QUALITY_TYPES "t)", &p.name, QUALITY_ARGS(&p.now),
                                QUALITY_ARGS(&p.before), &p.before_usec);
        if (r < 0)
                return r;
        if (table_get_rows(report->table) == 0)
                report->first = p;
        return report_row(report->table, &p);
}

typedef struct ExtentList {
        SvgExtent *items;
        size_t n, allocated;
} ExtentList;

static int read_extent(sd_bus_message *m, void *userdata) {
        ExtentList *l = userdata;
        SvgExtent x;
        int r;

        r = sd_bus_message_read(m, "(utt)", &x.file, &x.offset, &x.length);
        if (r < 0)
                return r;
        if (GREEDY_REALLOC(l->items, l->allocated, l->n + 1) < 0)
                return -ENOMEM;
        l->items[l->n++] = x;
        return 0;
}

/* Logs nothing. */
static int read_extents(sd_bus_message *m, SvgExtent **ret, size_t *ret_n) {
        ExtentList l = {};
        int r;

        r = bus_read_array(m, false, "(utt)", read_extent, &l);
        if (r < 0) {
                free(l.items);
                return r;
        }
        *ret = l.items;
        *ret_n = l.n;
        return 0;
}

/* Writes the picture to f (and fsyncs it when it is a regular file); logs nothing. */
static int svg_write_to(FILE *f, bool regular, const char *name, uint64_t device, uint32_t n_files,
                        const SvgPanel *before, const SvgPanel *now) {
        int r;

        r = svg_write_layout(f, name, device, n_files, before, now);
        if (r >= 0 && fflush(f) != 0)
                r = negative_errno();
        if (r >= 0 && regular && fsync(fileno(f)) < 0)
                r = negative_errno();
        return r;
}

/* A path that is not there yet, or a regular file: written whole or not at all, into a temporary file
 * next to it that is renamed over it when complete, with the replaced file's owner and mode (written in
 * place instead, a failed or interrupted write would leave neither the old file nor a whole picture).
 * Anything else, a symbolic link included, is never renamed over (a device node, a FIFO or /dev/stdout
 * must stay what it is, and a link must not lead a rename elsewhere): it is opened for writing and
 * written into, as a shell redirection would, a regular file at the end of a link truncated first. */
static int write_svg_file(const char *path, const char *name, uint64_t device, uint32_t n_files,
                          const SvgPanel *before, const SvgPanel *now) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        struct stat st;
        bool exists = true;
        mode_t mask, mode;
        int fd, r;

        if (lstat(path, &st) < 0) {
                if (errno != ENOENT)
                        return log_error_errno(errno, "Failed to look at %s: %m", path);
                exists = false;
        } else if (!S_ISREG(st.st_mode)) {
                fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
                if (fd < 0)
                        return log_error_errno(errno, "Failed to open %s: %m", path);
                if (fstat(fd, &st) < 0 || (S_ISREG(st.st_mode) && ftruncate(fd, 0) < 0)) {
                        r = log_error_errno(errno, "Failed to prepare %s for writing: %m", path);
                        (void) close(fd);
                        return r;
                }
                f = fdopen(fd, "w");
                if (!f) {
                        r = log_error_errno(errno, "Failed to open %s: %m", path);
                        (void) close(fd);
                        return r;
                }
                r = svg_write_to(f, S_ISREG(st.st_mode), name, device, n_files, before, now);
                if (r >= 0 && fclose(TAKE_PTR(f)) != 0)
                        r = negative_errno();
                if (r < 0)
                        return r == -ENOMEM ? log_oom() : log_error_errno(r, "Failed to write %s: %m", path);
                return 0;
        }

        if (asprintf(&tmp, "%s.XXXXXX", path) < 0) {
                tmp = NULL;
                return log_oom();
        }
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno, "Failed to create %s: %m", tmp);

        /* mkostemp() creates 0600, ours. A file that was there keeps its owner and permission bits (a
         * private one stays private: the picture names a profile and programs); set-id bits, meaningless
         * on a picture, are not carried over. A new one gets the mode a plain fopen() would. Set before
         * anything is written, so that a file whose owner cannot be kept is left as it was. */
        if (exists) {
                struct stat tst;

                if (fstat(fd, &tst) < 0 ||
                    ((tst.st_uid != st.st_uid || tst.st_gid != st.st_gid) && fchown(fd, st.st_uid, st.st_gid) < 0)) {
                        r = log_error_errno(errno, "Failed to give the new %s the owner of the old one (uid %u, gid %u), left it as it was: %m",
                                            path, (unsigned) st.st_uid, (unsigned) st.st_gid);
                        (void) close(fd);
                        goto fail;
                }
                mode = st.st_mode & 0777;
        } else {
                mask = umask(0);
                (void) umask(mask);
                mode = 0666 & ~mask;
        }
        if (fchmod(fd, mode) < 0) {
                r = log_error_errno(errno, "Failed to set the mode of %s: %m", tmp);
                (void) close(fd);
                goto fail;
        }

        f = fdopen(fd, "w");
        if (!f) {
                r = log_error_errno(errno, "Failed to open %s: %m", tmp);
                (void) close(fd);
                goto fail;
        }

        r = svg_write_to(f, true, name, device, n_files, before, now);
        if (r < 0) {
                r = r == -ENOMEM ? log_oom() : log_error_errno(r, "Failed to write %s: %m", tmp);
                goto fail;
        }
        r = fclose(TAKE_PTR(f));
        if (r != 0) {
                r = log_error_errno(errno, "Failed to write %s: %m", tmp);
                goto fail;
        }

        /* RENAME_NOREPLACE when nothing was there: what appeared meanwhile is not replaced */
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, exists ? 0 : RENAME_NOREPLACE) < 0) {
                r = log_error_errno(errno, "Failed to rename %s to %s: %m", tmp, path);
                goto fail;
        }
        return 0;

fail:
        (void) unlink(tmp);
        return r;
}

static int report_svg(sd_bus *bus, const char *command, const char *what, const ReportInfo *info) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ SvgExtent *before = NULL, *now = NULL;
        _cleanup_free_ char *before_sub = NULL, *now_sub = NULL;
        size_t n_before = 0, n_now = 0;
        uint64_t device;
        int r;

        r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "GetLayout", command, what, info->name, &reply, "s",
                        info->name);
        if (r < 0)
                return r;

        r = sd_bus_message_read(reply, "t", &device);
        if (r >= 0)
                r = read_extents(reply, &before, &n_before);
        if (r >= 0)
                r = read_extents(reply, &now, &n_now);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return log_parse_error(r);

        /* The numbers from Report for the subtitles; the "before" ones only if they belong to a layout. */
        if (asprintf(&now_sub, "%zu extents, %" PRIu64 " discontinuities, %.1f ms modeled", n_now,
                     info->now.discontinuities, info->now.modeled_read_ms) < 0)
                now_sub = NULL;
        if (info->before_usec > 0 && n_before > 0 &&
            asprintf(&before_sub, "%zu extents, %" PRIu64 " discontinuities, %.1f ms modeled", n_before,
                     info->before.discontinuities, info->before.modeled_read_ms) < 0)
                before_sub = NULL;
        else if (info->before_usec == 0 && n_before > 0 && asprintf(&before_sub, "%zu extents", n_before) < 0)
                before_sub = NULL;

        r = write_svg_file(arg_svg, info->name, device, (uint32_t) MIN(info->now.files, (uint64_t) UINT32_MAX),
                           &(SvgPanel) { "before", before_sub, "no 'before' layout recorded", before, n_before },
                           &(SvgPanel) { "after (now)", now_sub, "no layout data", now, n_now });
        if (r < 0)
                return r;

        if (arg_json == JSON_OFF)
                printf("Wrote %s.\n", arg_svg);
        return 0;
}

int verb_report(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(table_freep) Table *t = NULL;
        _cleanup_free_ char *what = NULL, *layout_what = NULL, *name = NULL;
        Report report = {};
        int r;

        if (argc > 1 && !(name = arg_to_bus(argv[1])))
                return log_oom();

        if (arg_svg && !name) {
                log_error("--svg needs a profile NAME: 'report NAME --svg FILE'.");
                verb_usage_hint();
                return -EUSAGE;
        }

        r = acquire_bus(&bus);
        if (r < 0)
                return r;

        if (name && (asprintf(&what, "get the layout report of profile '%s'", name) < 0 ||
                     asprintf(&layout_what, "get the layout of profile '%s'", name) < 0))
                return log_oom();

        r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "Report", argv[0], what ?: "get the layout report", name,
                        &reply, "s", name ?: "");
        if (r < 0)
                return r;

        report.table = t = table_new_columns(report_columns);
        if (!t)
                return log_oom();
        r = bus_read_array(reply, false, "(s" QUALITY_TYPES QUALITY_TYPES "t)", read_report_row, &report);
        if (r < 0)
                return log_parse_error(r);

        if (arg_svg) {
                if (table_get_rows(t) == 0)
                        return log_error_errno(SYNTHETIC_ERRNO(ENOENT), "No profile named '%s'.", name);
                r = report_svg(bus, argv[0], layout_what, &report.first);
                if (r < 0 || arg_json == JSON_OFF)
                        return r;
        }

        return print_list(t, "profile");
}
