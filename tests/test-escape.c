/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Paths cross the bus and reach terminals escaped: the escaping must be lossless for any byte string,
 * its output valid UTF-8 without control characters, and its inverse must refuse what it never writes. */
#include <stdlib.h>
#include <string.h>

#include "common/escape.h"
#include "test-util.h"

static void round_trip(const char *raw, const char *want) {
        char *e = path_escape(raw), *back = NULL;

        ASSERT_TRUE(e);
        ASSERT_STREQ(e, want);
        ASSERT_TRUE(escape_is_clean(e));
        ASSERT_OK(path_unescape(e, &back));
        ASSERT_STREQ(back, raw);
        free(e);
        free(back);
}

TEST(round_trips) {
        round_trip("/usr/bin/python3.11", "/usr/bin/python3.11");
        round_trip("/tmp/bad\xff\xfe", "/tmp/bad\\xff\\xfe");
        round_trip("/tmp/new\nline\ttab\x7f", "/tmp/new\\x0aline\\x09tab\\x7f");
        round_trip("/tmp/back\\slash\\x41", "/tmp/back\\\\slash\\\\x41");
        round_trip("/tmp/caf\xc3\xa9 \xe6\x96\x87", "/tmp/caf\xc3\xa9 \xe6\x96\x87");
        round_trip("/tmp/cut\xc3", "/tmp/cut\\xc3");
        round_trip("/tmp/overlong\xc0\xaf surrogate\xed\xa0\x80", "/tmp/overlong\\xc0\\xaf surrogate\\xed\\xa0\\x80");
}

/* Every byte from 1 to 255, in one name: all come back. */
TEST(every_byte) {
        char raw[256], *e, *back = NULL;

        for (int i = 1; i < 256; i++)
                raw[i - 1] = (char) i;
        raw[255] = 0;
        e = path_escape(raw);
        ASSERT_TRUE(e && escape_is_clean(e));
        ASSERT_OK(path_unescape(e, &back));
        ASSERT_TRUE(memcmp(back, raw, 256) == 0);
        free(e);
        free(back);
}

TEST(unescape_refuses) {
        char *out = NULL;

        ASSERT_ERROR(path_unescape("/tmp/a\\b", &out), EINVAL);
        ASSERT_ERROR(path_unescape("/tmp/a\\x4", &out), EINVAL);
        ASSERT_ERROR(path_unescape("/tmp/a\\xzz", &out), EINVAL);
        ASSERT_ERROR(path_unescape("/tmp/a\\x00", &out), EINVAL);
        ASSERT_ERROR(path_unescape("/tmp/a\\", &out), EINVAL);
        ASSERT_TRUE(!out);
        ASSERT_OK(path_unescape("/tmp/\\x41\\xFF", &out));
        ASSERT_STREQ(out, "/tmp/A\xff");
        free(out);
}

TEST(clean) {
        ASSERT_TRUE(escape_is_clean("/tmp/caf\xc3\xa9"));
        ASSERT_TRUE(!escape_is_clean("/tmp/\xff"));
        ASSERT_TRUE(!escape_is_clean("/tmp/a\nb"));
        ASSERT_TRUE(!escape_is_clean("/tmp/a\tb"));
}

/* A cut output ends at a character boundary, never inside an escape or a UTF-8 sequence. */
TEST(cut) {
        char out[8];

        ASSERT_EQ(escape_into("abcd\xff", out, sizeof out, 0), 4u);
        ASSERT_STREQ(out, "abcd");
        ASSERT_EQ(escape_into("abcdef\xc3\xa9", out, sizeof out, 0), 6u);
        ASSERT_STREQ(out, "abcdef");
        ASSERT_EQ(escape_into("a\tb", out, sizeof out, ESCAPE_KEEP_TAB), 3u);
        ASSERT_STREQ(out, "a\tb");
}

TEST(columns) {
        ASSERT_EQ(utf8_columns("/usr/bin/ls"), 11u);
        ASSERT_EQ(utf8_columns("caf\xc3\xa9"), 4u);                     /* é: one column, two bytes */
        ASSERT_EQ(utf8_columns("\xe6\x96\x87\xe5\xad\x97"), 4u);        /* two CJK characters */
        ASSERT_EQ(utf8_columns("e\xcc\x81"), 1u);                       /* e + combining acute */
        ASSERT_EQ(utf8_columns("\\xff"), 4u);
}

int main(void) {
        RUN(round_trips);
        RUN(every_byte);
        RUN(unescape_refuses);
        RUN(clean);
        RUN(cut);
        RUN(columns);
        return 0;
}
