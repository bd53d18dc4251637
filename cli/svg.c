/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "macro.h"
#include "svg.h"

/* Geometry, in SVG user units (pixels). */
#define SVG_WIDTH 1100
#define SVG_HEIGHT 580
#define PANEL_WIDTH 550         /* each panel's share of the width */
#define PLOT_LEFT 90            /* left edge of the plot within the panel: room for tick labels */
#define PLOT_WIDTH 430
#define PLOT_TOP 90
#define PLOT_HEIGHT 420
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

/* "512 MiB", "1.5 GiB", "64 KiB", "0": a position on the device for a tick label. */
static void format_position(char *buf, size_t l, double bytes, double unit, const char *suffix) {
        if (bytes == 0)
                (void) snprintf(buf, l, "0");
        else
                (void) snprintf(buf, l, "%.4g %s", bytes / unit, suffix);
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

static int write_panel(FILE *f, double x0, const SvgPanel *p, uint32_t n_files) {
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
        _cleanup_free_ Sorted *s = NULL;
        double lo, hi, range, step, first, unit = 1, col, bar;
        const char *suffix = "B";
        const double left = x0 + PLOT_LEFT, bottom = PLOT_TOP + PLOT_HEIGHT;
        uint64_t min = UINT64_MAX, max = 0;

        fprintf(f, "<g>\n<text x=\"%.1f\" y=\"62\" class=\"title\">", left + PLOT_WIDTH / 2.0);
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
                left + PLOT_WIDTH / 2.0, PLOT_TOP + PLOT_HEIGHT + 36, n_files);
        fprintf(f, "<text transform=\"translate(%.1f %.1f) rotate(-90)\" class=\"axis\">position on the device</text>\n",
                x0 + 18, PLOT_TOP + PLOT_HEIGHT / 2.0);

        if (p->n == 0) {
                fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"empty\">", left + PLOT_WIDTH / 2.0,
                        PLOT_TOP + PLOT_HEIGHT / 2.0);
                svg_write_escaped(f, p->empty ?: "no data");
                fputs("</text>\n</g>\n", f);
                return 0;
        }

        s = malloc(p->n * sizeof *s);
        if (!s)
                return -ENOMEM;
        for (size_t i = 0; i < p->n; i++) {
                s[i] = (Sorted) { p->extents[i], i };
                min = MIN(min, p->extents[i].offset);
                max = MAX(max, p->extents[i].offset + MAX(p->extents[i].length, (uint64_t) 1));
        }
        qsort_safe(s, p->n, sizeof *s, sorted_compare);

        /* Zoom to the extents shown, with a little room above and below. */
        range = (double) (max - min);
        lo = (double) min - range * 0.02;
        hi = (double) max + range * 0.02;
        if (lo < 0)
                lo = 0;
        range = hi - lo;

        /* Ticks: a 1, 2 or 5 times power-of-ten step in the largest binary unit that fits. */
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (range >= units[i].unit || i == ELEMENTSOF(units) - 1) {
                        unit = units[i].unit;
                        suffix = units[i].suffix;
                        break;
                }
        {
                double raw = range / unit / Y_TICKS, mag = 1;

                while (mag * 10 <= raw)
                        mag *= 10;
                while (mag > raw)
                        mag /= 10;
                step = raw / mag < 1.5 ? mag : raw / mag < 3.5 ? 2 * mag : raw / mag < 7.5 ? 5 * mag : 10 * mag;
                step *= unit;
        }
        first = (double) (uint64_t) (lo / step) * step;
        if (first < lo)
                first += step;
        for (double t = first; t <= hi; t += step) {
                double y = bottom - (t - lo) / range * PLOT_HEIGHT;
                char label[32];

                format_position(label, sizeof label, t, unit, suffix);
                fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>\n",
                        left, y, left + PLOT_WIDTH, y);
                fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\">%s</text>\n", left - 6, y + 4, label);
        }

        /* One column per file; bars take most of it but stay visible when there are many files. */
        col = (double) PLOT_WIDTH / MAX(n_files, (uint32_t) 1);
        bar = MAX(col * 0.6, 1.0);

#define X(e) (left + ((e).file + 0.5) * col)
#define Y(b) (bottom - ((double) (b) - lo) / range * PLOT_HEIGHT)

        /* The path the head takes: end of one extent to the start of the next. */
        fputs("<polyline class=\"seek\" points=\"", f);
        for (size_t i = 0; i < p->n; i++)
                fprintf(f, "%s%.1f,%.1f %.1f,%.1f", i > 0 ? " " : "",
                        X(s[i].e), Y(s[i].e.offset), X(s[i].e), Y(s[i].e.offset + s[i].e.length));
        fputs("\"/>\n", f);

        for (size_t i = 0; i < p->n; i++) {
                double y_top = Y(s[i].e.offset + s[i].e.length), y_bottom = Y(s[i].e.offset);

                fprintf(f, "<rect class=\"extent\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"/>\n",
                        X(s[i].e) - bar / 2, y_top, bar, MAX(y_bottom - y_top, 1.0));
        }
#undef X
#undef Y

        fputs("</g>\n", f);
        return 0;
}

int svg_write_layout(FILE *f, const char *profile, uint64_t device, uint32_t n_files,
                     const SvgPanel *before, const SvgPanel *now) {
        char size[32];
        int r;

        /* Never narrower than the extents need, whatever the caller says. */
        for (size_t i = 0; i < before->n; i++)
                n_files = MAX(n_files, before->extents[i].file + 1);
        for (size_t i = 0; i < now->n; i++)
                n_files = MAX(n_files, now->extents[i].file + 1);

        format_position(size, sizeof size, (double) device, 1024.0 * 1024 * 1024, "GiB");

        fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n"
                "<style>\n"
                "text { font-family: sans-serif; font-size: 12px; fill: #222; text-anchor: middle; }\n"
                ".head { font-size: 16px; font-weight: bold; }\n"
                ".title { font-size: 14px; font-weight: bold; }\n"
                ".sub { fill: #555; }\n"
                ".tick { font-size: 10px; text-anchor: end; fill: #555; }\n"
                ".empty { font-style: italic; fill: #888; }\n"
                ".frame { fill: #fafafa; stroke: #999; stroke-width: 1; }\n"
                ".grid { stroke: #e0e0e0; stroke-width: 1; }\n"
                ".seek { fill: none; stroke: #d62728; stroke-width: 0.6; stroke-opacity: 0.7; }\n"
                ".extent { fill: #1f77b4; }\n"
                "</style>\n"
                "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                "<text x=\"%d\" y=\"26\" class=\"head\">",
                SVG_WIDTH, SVG_HEIGHT, SVG_WIDTH, SVG_HEIGHT, SVG_WIDTH / 2);
        svg_write_escaped(f, profile);
        fprintf(f, "</text>\n<text x=\"%d\" y=\"44\" class=\"sub\">%" PRIu32 " file%s; device %s; "
                "y: physical position (zoomed to the extents shown)</text>\n",
                SVG_WIDTH / 2, n_files, n_files == 1 ? "" : "s", size);

        r = write_panel(f, 0, before, n_files);
        if (r >= 0)
                r = write_panel(f, PANEL_WIDTH, now, n_files);
        if (r < 0)
                return r;

        fputs("</svg>\n", f);
        return ferror(f) ? -EIO : 0;
}
