/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/macro.h"
#include "cli/svg.h"

/* Geometry, in SVG user units (pixels). */
#define SVG_WIDTH 1100
#define SVG_HEIGHT 590
#define PANEL_WIDTH 550         /* each panel's share of the width */
#define PLOT_LEFT 90            /* left edge of the plot within the panel: room for tick labels */
#define PLOT_WIDTH 390
#define PLOT_TOP 90
#define PLOT_HEIGHT 420
#define PLOT_BOTTOM (PLOT_TOP + PLOT_HEIGHT)
#define STRIP_LEFT 504          /* the whole-device strip, right of the plot */
#define STRIP_WIDTH 12
#define Y_TICKS 5

void svg_write_escaped(FILE *f, const char *s) {
        size_t n = strlen(s);

        for (size_t i = 0; i < n;) {
                unsigned char c = (unsigned char) s[i];
                size_t len;

                switch (c) {
                case '&':  fputs("&amp;", f);  i++; continue;
                case '<':  fputs("&lt;", f);   i++; continue;
                case '>':  fputs("&gt;", f);   i++; continue;
                case '"':  fputs("&quot;", f); i++; continue;
                case '\'': fputs("&apos;", f); i++; continue;
                case '\t': case '\n': case '\r':
                        fputc(c, f);
                        i++;
                        continue;
                }
                len = utf8_sequence_len(s + i, n - i);
                if (c < 0x20 || c == 0x7F || len == 0) {
                        fputs("\xef\xbf\xbd", f); /* U+FFFD */
                        i++;
                        continue;
                }
                fwrite(s + i, 1, len, f);
                i += len;
        }
}

static const struct {
        double unit;
        const char *suffix;
} units[] = {
        { 1024.0 * 1024 * 1024 * 1024, "TiB" },
        { 1024.0 * 1024 * 1024,        "GiB" },
        { 1024.0 * 1024,               "MiB" },
        { 1024.0,                      "KiB" },
        { 1,                           "B"   },
};

/* The largest binary unit that bytes is at least one of ("B" below one KiB). */
static size_t unit_for(double bytes) {
        size_t i = 0;

        while (i < ELEMENTSOF(units) - 1 && bytes < units[i].unit)
                i++;
        return i;
}

/* "512 MiB", "1.5 GiB", "64 KiB", "0": a position or size on the device, in the given unit. */
static void format_position(char *buf, size_t l, double bytes, size_t unit) {
        if (bytes == 0)
                (void) snprintf(buf, l, "0");
        else
                (void) snprintf(buf, l, "%.4g %s", bytes / units[unit].unit, units[unit].suffix);
}

static void format_bytes(char *buf, size_t l, double bytes) {
        format_position(buf, l, bytes, unit_for(bytes));
}

/* The part of the device both panels show, mapped to the plots' height: one scale for both, so the same
 * byte range is the same height in either. */
typedef struct Scale {
        double lo, hi;          /* device offsets at the bottom and the top of a plot */
        double step;            /* between ticks, bytes */
        size_t unit;            /* of the tick labels */
        uint64_t device;        /* the whole device, bytes, at least the end of every extent; 0: unknown */
} Scale;

/* The lowest and highest byte a panel's extents cover; false if it has none. */
static bool panel_extremes(const SvgPanel *p, uint64_t *ret_min, uint64_t *ret_max) {
        uint64_t min = UINT64_MAX, max = 0;

        for (size_t i = 0; i < p->n; i++) {
                min = MIN(min, p->extents[i].offset);
                max = MAX(max, p->extents[i].offset + MAX(p->extents[i].length, (uint64_t) 1));
        }
        *ret_min = min;
        *ret_max = max;
        return p->n > 0;
}

/* Zoom to the extents of both panels, with a little room above and below; ticks at a 1, 2 or 5 times
 * power-of-ten step in the largest binary unit that fits. */
static void scale_init(Scale *s, uint64_t device, const SvgPanel *before, const SvgPanel *now) {
        uint64_t min = UINT64_MAX, max = 0, a, b;
        double range, raw, mag = 1, unit;

        if (panel_extremes(before, &a, &b)) {
                min = MIN(min, a);
                max = MAX(max, b);
        }
        if (panel_extremes(now, &a, &b)) {
                min = MIN(min, a);
                max = MAX(max, b);
        }
        *s = (Scale) { .device = device > 0 ? MAX(device, max) : 0 };
        if (max == 0)
                return;

        range = (double) (max - min);
        s->lo = MAX((double) min - range * 0.02, 0.0);
        s->hi = (double) max + range * 0.02;
        range = s->hi - s->lo;

        s->unit = unit_for(range);
        unit = units[s->unit].unit;
        raw = range / unit / Y_TICKS;
        while (mag * 10 <= raw)
                mag *= 10;
        while (mag > raw)
                mag /= 10;
        s->step = raw / mag < 1.5 ? mag : raw / mag < 3.5 ? 2 * mag : raw / mag < 7.5 ? 5 * mag : 10 * mag;
        s->step *= unit;
}

static double scale_y(const Scale *s, double bytes) {
        return PLOT_BOTTOM - (bytes - s->lo) / (s->hi - s->lo) * PLOT_HEIGHT;
}

/* On the whole-device strip. */
static double device_y(const Scale *s, double bytes) {
        return PLOT_BOTTOM - MIN(bytes, (double) s->device) / (double) s->device * PLOT_HEIGHT;
}

static void write_ticks(FILE *f, double left, const Scale *s) {
        double first = (double) (uint64_t) (s->lo / s->step) * s->step;

        if (first < s->lo)
                first += s->step;
        for (double t = first; t <= s->hi; t += s->step) {
                double y = scale_y(s, t);
                char label[32];

                format_position(label, sizeof label, t, s->unit);
                fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>\n",
                        left, y, left + PLOT_WIDTH, y);
                fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\">%s</text>\n", left - 6, y + 4, label);
        }
}

/* The band the panel's data occupies, across the plot, and its size under the plot. */
static void write_hot(FILE *f, double left, const Scale *s, uint64_t min, uint64_t max) {
        char size[32], from[32], to[32];
        double top = scale_y(s, (double) max), bottom = scale_y(s, (double) min);

        format_bytes(size, sizeof size, (double) (max - min));
        format_bytes(from, sizeof from, (double) min);
        format_bytes(to, sizeof to, (double) max);
        fprintf(f, "<g class=\"hot\"><title>hot region: %s (%" PRIu64 " bytes), %s to %s</title>\n"
                "<rect class=\"hot\" x=\"%.1f\" y=\"%.2f\" width=\"%d\" height=\"%.2f\"/>\n"
                "<text x=\"%.1f\" y=\"%d\" class=\"hot-label\">hot region %s, at %s to %s</text></g>\n",
                size, max - min, from, to, left, top, PLOT_WIDTH, MAX(bottom - top, 1.0),
                left + PLOT_WIDTH / 2.0, PLOT_BOTTOM + 56, size, from, to);
}

/* The whole device as a thin strip right of the plot, 0 at the bottom: where the hot region (if any) lies
 * in it, and which part of it the plot shows, joined to the plot's corners. */
static void write_device_strip(FILE *f, double x0, const Scale *s, bool hot, uint64_t min, uint64_t max) {
        const double x = x0 + STRIP_LEFT, right = x0 + PLOT_LEFT + PLOT_WIDTH;
        char size[32];

        if (s->device == 0)
                return;

        format_bytes(size, sizeof size, (double) s->device);
        fprintf(f, "<g class=\"device\"><title>whole device: %s (%" PRIu64 " bytes)</title>\n", size, s->device);
        if (s->hi > s->lo)
                fprintf(f, "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%d\" class=\"zoom\"/>\n"
                        "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%d\" class=\"zoom\"/>\n",
                        x, device_y(s, s->hi), right, PLOT_TOP, x, device_y(s, s->lo), right, PLOT_BOTTOM);
        fprintf(f, "<rect class=\"device-strip\" x=\"%.1f\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n",
                x, PLOT_TOP, STRIP_WIDTH, PLOT_HEIGHT);
        if (hot) {
                double top = device_y(s, (double) max);

                fprintf(f, "<rect class=\"device-hot\" x=\"%.1f\" y=\"%.2f\" width=\"%d\" height=\"%.2f\"/>\n",
                        x, top, STRIP_WIDTH, MAX(device_y(s, (double) min) - top, 1.5));
        }
        if (s->hi > s->lo)
                fprintf(f, "<rect class=\"device-view\" x=\"%.1f\" y=\"%.2f\" width=\"%d\" height=\"%.2f\"/>\n",
                        x - 2, device_y(s, s->hi), STRIP_WIDTH + 4,
                        MAX(device_y(s, s->lo) - device_y(s, s->hi), 1.0));
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"strip\">%s</text>\n"
                "<text x=\"%.1f\" y=\"%d\" class=\"strip\">0</text></g>\n",
                x + STRIP_WIDTH / 2.0, PLOT_TOP - 4, size, x + STRIP_WIDTH / 2.0, PLOT_BOTTOM + 14);
}

typedef struct Sorted {
        SvgExtent e;
        size_t input;           /* position in the input: keeps extents of one file in the given order */
} Sorted;

static int sorted_compare(const void *a, const void *b) {
        const Sorted *x = a, *y = b;

        if (x->e.file != y->e.file)
                return x->e.file < y->e.file ? -1 : 1;
        return x->input < y->input ? -1 : x->input > y->input;
}

/* Every extent a bar at its file's column, and the path the head takes between them: the end of one
 * extent to the start of the next. */
static int write_extents(FILE *f, double left, const Scale *s, const SvgPanel *p, uint32_t n_files) {
        _cleanup_free_ Sorted *e = NULL;
        double col, bar;

        e = malloc(p->n * sizeof *e);
        if (!e)
                return -ENOMEM;
        for (size_t i = 0; i < p->n; i++)
                e[i] = (Sorted) { p->extents[i], i };
        qsort_safe(e, p->n, sizeof *e, sorted_compare);

        /* One column per file; bars take most of it but stay visible when there are many files. */
        col = (double) PLOT_WIDTH / MAX(n_files, (uint32_t) 1);
        bar = MAX(col * 0.6, 1.0);

#define X(x) (left + ((x).file + 0.5) * col)
        fputs("<polyline class=\"seek\" points=\"", f);
        for (size_t i = 0; i < p->n; i++)
                fprintf(f, "%s%.1f,%.1f %.1f,%.1f", i > 0 ? " " : "", X(e[i].e), scale_y(s, e[i].e.offset),
                        X(e[i].e), scale_y(s, e[i].e.offset + e[i].e.length));
        fputs("\"/>\n", f);

        for (size_t i = 0; i < p->n; i++) {
                double y_top = scale_y(s, e[i].e.offset + e[i].e.length), y_bottom = scale_y(s, e[i].e.offset);

                fprintf(f, "<rect class=\"extent\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"/>\n",
                        X(e[i].e) - bar / 2, y_top, bar, MAX(y_bottom - y_top, 1.0));
        }
#undef X
        return 0;
}

static int write_panel(FILE *f, double x0, const char *id, const Scale *s, const SvgPanel *p, uint32_t n_files) {
        const double left = x0 + PLOT_LEFT;
        uint64_t min, max;
        bool hot;
        int r = 0;

        fprintf(f, "<g class=\"panel\" id=\"%s\">\n<text x=\"%.1f\" y=\"62\" class=\"title\">", id,
                left + PLOT_WIDTH / 2.0);
        svg_write_escaped(f, p->title ?: "");
        fputs("</text>\n", f);
        if (p->subtitle) {
                fprintf(f, "<text x=\"%.1f\" y=\"80\" class=\"sub\">", left + PLOT_WIDTH / 2.0);
                svg_write_escaped(f, p->subtitle);
                fputs("</text>\n", f);
        }
        fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%d\" height=\"%d\" class=\"frame\"/>\n",
                left, PLOT_TOP, PLOT_WIDTH, PLOT_HEIGHT);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"axis\">access order (file 1 to %" PRIu32 ")</text>\n",
                left + PLOT_WIDTH / 2.0, PLOT_BOTTOM + 36, n_files);
        fprintf(f, "<text transform=\"translate(%.1f %.1f) rotate(-90)\" class=\"axis\">position on the device</text>\n",
                x0 + 18, PLOT_TOP + PLOT_HEIGHT / 2.0);

        hot = panel_extremes(p, &min, &max);
        write_device_strip(f, x0, s, hot, min, max);
        if (hot) {
                write_ticks(f, left, s);
                write_hot(f, left, s, min, max);
                r = write_extents(f, left, s, p, n_files);
        } else {
                fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"empty\">", left + PLOT_WIDTH / 2.0,
                        PLOT_TOP + PLOT_HEIGHT / 2.0);
                svg_write_escaped(f, p->empty ?: "no data");
                fputs("</text>\n", f);
        }

        fputs("</g>\n", f);
        return r;
}

int svg_write_layout(FILE *f, const char *profile, uint64_t device, uint32_t n_files,
                     const SvgPanel *before, const SvgPanel *now) {
        char size[32];
        Scale s;
        int r;

        /* Never narrower than the extents need, whatever the caller says. */
        for (size_t i = 0; i < before->n; i++)
                n_files = MAX(n_files, before->extents[i].file + 1);
        for (size_t i = 0; i < now->n; i++)
                n_files = MAX(n_files, now->extents[i].file + 1);

        scale_init(&s, device, before, now);
        if (device > 0)
                format_bytes(size, sizeof size, (double) device);
        else
                (void) snprintf(size, sizeof size, "size unknown");

        fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n"
                "<style>\n"
                "text { font-family: sans-serif; font-size: 12px; fill: #222; text-anchor: middle; }\n"
                ".head { font-size: 16px; font-weight: bold; }\n"
                ".title { font-size: 14px; font-weight: bold; }\n"
                ".sub { fill: #555; }\n"
                ".tick { font-size: 10px; text-anchor: end; fill: #555; }\n"
                ".strip { font-size: 10px; fill: #555; }\n"
                ".hot-label { fill: #a05000; }\n"
                ".empty { font-style: italic; fill: #888; }\n"
                ".frame { fill: #fafafa; stroke: #999; stroke-width: 1; }\n"
                ".grid { stroke: #e0e0e0; stroke-width: 1; }\n"
                "rect.hot { fill: #ff7f0e; fill-opacity: 0.12; stroke: #ff7f0e; stroke-opacity: 0.6; stroke-width: 0.8; }\n"
                ".device-strip { fill: #eee; stroke: #999; stroke-width: 1; }\n"
                ".device-hot { fill: #ff7f0e; }\n"
                ".device-view { fill: none; stroke: #555; stroke-width: 1; }\n"
                ".zoom { stroke: #999; stroke-width: 0.6; stroke-dasharray: 3 2; }\n"
                ".seek { fill: none; stroke: #d62728; stroke-width: 0.6; stroke-opacity: 0.7; }\n"
                ".extent { fill: #1f77b4; }\n"
                "</style>\n"
                "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                "<text x=\"%d\" y=\"26\" class=\"head\">",
                SVG_WIDTH, SVG_HEIGHT, SVG_WIDTH, SVG_HEIGHT, SVG_WIDTH / 2);
        svg_write_escaped(f, profile);
        fprintf(f, "</text>\n<text x=\"%d\" y=\"44\" class=\"sub\">%" PRIu32 " file%s; device %s; "
                "y: position on the device, one scale for both panels; right of each: the whole device</text>\n",
                SVG_WIDTH / 2, n_files, n_files == 1 ? "" : "s", size);

        r = write_panel(f, 0, "before", &s, before, n_files);
        if (r >= 0)
                r = write_panel(f, PANEL_WIDTH, "now", &s, now, n_files);
        if (r < 0)
                return r;

        fputs("</svg>\n", f);
        /* A write that failed on the way (a full disk) leaves only the error flag; flushing what is left
         * tries again and says why. */
        if (fflush(f) != 0)
                return negative_errno();
        return ferror(f) ? -EIO : 0;
}
