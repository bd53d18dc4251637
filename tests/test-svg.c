/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <math.h>
#include <stdint.h>

#include "cli/svg.h"
#include "test-util.h"

/* Runs f on a memory stream and returns what it wrote (free() it). */
static char *capture_layout(const char *profile, uint64_t device, uint32_t n_files, const SvgPanel *before,
                            const SvgPanel *now) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        ASSERT_TRUE(f);
        ASSERT_OK(svg_write_layout(f, profile, device, n_files, before, now));
        ASSERT_TRUE(fclose(f) == 0);
        return buf;
}

static char *capture_escaped(const char *s) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        ASSERT_TRUE(f);
        svg_write_escaped(f, s);
        ASSERT_TRUE(fclose(f) == 0);
        return buf;
}

static size_t count(const char *haystack, const char *needle) {
        size_t n = 0;

        for (const char *p = haystack; (p = strstr(p, needle)); p += strlen(needle))
                n++;
        return n;
}

/* The panel with this id: from its <g> to the next "</g>\n<g class=\"panel\"" or the end (a copy). */
static char *panel(const char *svg, const char *id) {
        char open[64], *start, *end;

        snprintf(open, sizeof open, "<g class=\"panel\" id=\"%s\">", id);
        start = strstr(svg, open);
        ASSERT_TRUE(start);
        end = strstr(start + 1, "<g class=\"panel\"");
        return strndup(start, end ? (size_t) (end - start) : strlen(start));
}

/* The value of attribute attr of the first element that starts with prefix in s. */
static double attr(const char *s, const char *prefix, const char *attr) {
        char key[32];
        const char *e = strstr(s, prefix), *a, *close;

        ASSERT_TRUE(e);
        close = strchr(e, '>');
        snprintf(key, sizeof key, " %s=\"", attr);
        a = strstr(e, key);
        ASSERT_TRUE(a && a < close);
        return strtod(a + strlen(key), NULL);
}

/* The tick lines of a panel (y and label), for comparing scales: "y label;" each. */
static char *ticks(const char *p) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        ASSERT_TRUE(f);
        for (const char *t = p; (t = strstr(t, "class=\"tick\">")); t++) {
                const char *y = t, *end = strchr(t, '<');

                while (y > p && strncmp(y, " y=\"", 4) != 0)
                        y--;
                fprintf(f, "%g %.*s;", strtod(y + 4, NULL), (int) (end - t - 13), t + 13);
        }
        ASSERT_TRUE(fclose(f) == 0);
        return buf;
}

#define MiB (1024.0 * 1024)
#define ASSERT_NEAR(a, b, eps) ASSERT_TRUE(fabs((double) (a) - (double) (b)) <= (eps))

TEST(escape) {
        char *s;

        s = capture_escaped("a<b>&\"c'");
        ASSERT_STREQ(s, "a&lt;b&gt;&amp;&quot;c&apos;");
        free(s);

        /* Control characters and broken UTF-8 become U+FFFD; good UTF-8, tab and newline stay. */
        s = capture_escaped("x\x01y\xffz\t\xc3\xa9\n");
        ASSERT_STREQ(s, "x\xef\xbf\xbdy\xef\xbf\xbdz\t\xc3\xa9\n");
        free(s);
}

TEST(panels) {
        const SvgExtent before[] = {
                { 1, 900 << 20, 4 << 20 },
                { 0, 100 << 20, 1 << 20 },
                { 0, 500 << 20, 1 << 20 },  /* second extent of file 0: stays after the first */
        };
        const SvgExtent now[] = {
                { 0, 10 << 20, 2 << 20 },
                { 1, 12 << 20, 4 << 20 },
        };
        char *s;

        s = capture_layout("/usr/bin/a<b", 1ULL << 30, 2,
                           &(SvgPanel) { "before", "3 extents", "no 'before' layout recorded", before, 3 },
                           &(SvgPanel) { "after (now)", NULL, "no layout data", now, 2 });
        ASSERT_TRUE(strncmp(s, "<?xml", 5) == 0);
        ASSERT_TRUE(strstr(s, "</svg>\n"));
        ASSERT_TRUE(strstr(s, "/usr/bin/a&lt;b"));
        ASSERT_TRUE(!strstr(s, "/usr/bin/a<b"));
        ASSERT_EQ(count(s, "class=\"extent\""), 5);
        ASSERT_EQ(count(s, "<polyline"), 2);
        ASSERT_TRUE(!strstr(s, "no &apos;before&apos; layout recorded"));
        ASSERT_TRUE(!strstr(s, "href")); /* self-contained */
        ASSERT_TRUE(strstr(s, "MiB"));   /* tick labels */
        free(s);
}

/* Both panels on one scale: the same ticks at the same heights, and each hot region as tall as its bytes
 * at the same pixels per byte, so "now" (6 MiB) is much shorter than "before" (804 MiB). The whole-device
 * strip shows where each hot region lies in the 1 GiB. */
TEST(one_scale) {
        const SvgExtent before[] = {
                { 1, 900 << 20, 4 << 20 },
                { 0, 100 << 20, 1 << 20 },
        };
        const SvgExtent now[] = {
                { 0, 10 << 20, 2 << 20 },
                { 1, 12 << 20, 4 << 20 },
        };
        char *s, *b, *n, *tb, *tn;
        double hb, hn, yb, yn;

        s = capture_layout("p", 1ULL << 30, 2,
                           &(SvgPanel) { "before", NULL, NULL, before, 2 },
                           &(SvgPanel) { "after (now)", NULL, NULL, now, 2 });
        b = panel(s, "before");
        n = panel(s, "now");

        tb = ticks(b);
        tn = ticks(n);
        ASSERT_TRUE(strlen(tb) > 0);
        ASSERT_STREQ(tb, tn);

        hb = attr(b, "<rect class=\"hot\"", "height");
        hn = attr(n, "<rect class=\"hot\"", "height");
        ASSERT_NEAR(hb / (804 * MiB), hn / (6 * MiB), 0.02 / (6 * MiB));
        ASSERT_TRUE(hn < hb / 100);
        /* the now band's bottom edge is lower on the plot: 10 MiB is below 100 MiB */
        yb = attr(b, "<rect class=\"hot\"", "y") + hb;
        yn = attr(n, "<rect class=\"hot\"", "y") + hn;
        ASSERT_NEAR(yn - yb, hb / (804 * MiB) * 90 * MiB, 0.05);
        ASSERT_TRUE(strstr(b, ">hot region 804 MiB, at 100 MiB to 904 MiB<"));
        ASSERT_TRUE(strstr(n, ">hot region 6 MiB, at 10 MiB to 16 MiB<"));

        /* the strips: the whole 1 GiB over the plot's 420 px, the hot region where it lies in it */
        ASSERT_TRUE(strstr(b, "<title>whole device: 1 GiB (1073741824 bytes)</title>"));
        ASSERT_TRUE(strstr(n, "<title>whole device: 1 GiB (1073741824 bytes)</title>"));
        ASSERT_NEAR(attr(b, "<rect class=\"device-strip\"", "height"), 420, 0);
        ASSERT_NEAR(attr(b, "<rect class=\"device-hot\"", "height"), 804.0 / 1024 * 420, 0.01);
        ASSERT_NEAR(attr(b, "<rect class=\"device-hot\"", "y"), 90 + (1024.0 - 904) / 1024 * 420, 0.01);
        ASSERT_NEAR(attr(n, "<rect class=\"device-hot\"", "height"), 6.0 / 1024 * 420, 0.01);
        /* and the part both plots show: 10 MiB to 904 MiB and 2 % of that above (none below 0) */
        ASSERT_NEAR(attr(n, "<rect class=\"device-view\"", "height"), (904 + 894 * 0.02) / 1024 * 420, 0.01);

        free(tb);
        free(tn);
        free(b);
        free(n);
        free(s);
}

/* No device size: no strips, the header says so. A device size short of the extents (it can only be the
 * daemon's mistake) is stretched to their end. */
TEST(device_size) {
        const SvgExtent now[] = { { 0, 600 << 20, 1 << 20 } };
        char *s;

        s = capture_layout("p", 0, 1, &(SvgPanel) { "before", NULL, NULL, NULL, 0 },
                           &(SvgPanel) { "after (now)", NULL, NULL, now, 1 });
        ASSERT_TRUE(!strstr(s, "class=\"device"));
        ASSERT_TRUE(strstr(s, "device size unknown;"));
        free(s);

        s = capture_layout("p", 512 << 20, 1, &(SvgPanel) { "before", NULL, NULL, NULL, 0 },
                           &(SvgPanel) { "after (now)", NULL, NULL, now, 1 });
        ASSERT_TRUE(strstr(s, "device 512 MiB;"));
        ASSERT_EQ(count(s, "<title>whole device: 601 MiB (630194176 bytes)</title>"), 2);
        free(s);
}

TEST(empty_before) {
        const SvgExtent now[] = { { 0, 4096, 4096 } };
        char *s;

        s = capture_layout("boot", 1ULL << 30, 0,
                           &(SvgPanel) { "before", NULL, "no 'before' layout recorded", NULL, 0 },
                           &(SvgPanel) { "after (now)", NULL, "no layout data", now, 1 });
        ASSERT_TRUE(strstr(s, "no &apos;before&apos; layout recorded"));
        ASSERT_EQ(count(s, "class=\"extent\""), 1);
        ASSERT_TRUE(strstr(s, "file 1 to 1)")); /* n_files 0 widened to the extents */
        ASSERT_EQ(count(s, "class=\"device-strip\""), 2);  /* the whole device in both panels */
        ASSERT_EQ(count(s, "class=\"device-hot\""), 1);    /* a hot region only where there is data */
        ASSERT_EQ(count(s, "<rect class=\"hot\""), 1);
        free(s);
}

/* A stream that fails half way (more than a buffer's worth: the write fails before the end) says why. */
TEST(write_error) {
        SvgExtent now[200];
        FILE *f = fopen("/dev/full", "we");

        if (!f) {
                printf("   no /dev/full, skipped\n");
                return;
        }
        for (uint32_t i = 0; i < TEST_ELEMENTSOF(now); i++)
                now[i] = (SvgExtent) { i, (uint64_t) i << 20, 4096 };
        ASSERT_ERROR(svg_write_layout(f, "p", 1ULL << 30, 200, &(SvgPanel) { "before", NULL, NULL, NULL, 0 },
                                      &(SvgPanel) { "after (now)", NULL, NULL, now, TEST_ELEMENTSOF(now) }), ENOSPC);
        (void) fclose(f);
}

int main(void) {
        RUN(escape);
        RUN(panels);
        RUN(one_scale);
        RUN(device_size);
        RUN(empty_before);
        RUN(write_error);
        return EXIT_SUCCESS;
}
