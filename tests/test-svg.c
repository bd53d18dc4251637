/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>

#include "svg.h"
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

TEST(empty_before) {
        const SvgExtent now[] = { { 0, 4096, 4096 } };
        char *s;

        s = capture_layout("boot", 1ULL << 30, 0,
                           &(SvgPanel) { "before", NULL, "no 'before' layout recorded", NULL, 0 },
                           &(SvgPanel) { "after (now)", NULL, "no layout data", now, 1 });
        ASSERT_TRUE(strstr(s, "no &apos;before&apos; layout recorded"));
        ASSERT_EQ(count(s, "class=\"extent\""), 1);
        ASSERT_TRUE(strstr(s, "file 1 to 1)")); /* n_files 0 widened to the extents */
        free(s);
}

int main(void) {
        RUN(escape);
        RUN(panels);
        RUN(empty_before);
        return EXIT_SUCCESS;
}
