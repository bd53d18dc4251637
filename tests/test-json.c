/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <math.h>
#include <stdint.h>

#include "common/json.h"
#include "test-util.h"

/* Collects what a writer prints, via open_memstream(). */
typedef struct Capture {
        FILE *f;
        char *buf;
        size_t size;
} Capture;

static void capture_open(Capture *c) {
        *c = (Capture) {};
        c->f = open_memstream(&c->buf, &c->size);
        ASSERT_TRUE(c->f);
}

/* Closes the stream; the text stays in c->buf until capture_free(). */
static const char *capture_text(Capture *c) {
        if (c->f) {
                ASSERT_TRUE(fclose(c->f) == 0);
                c->f = NULL;
        }
        return c->buf;
}

static void capture_free(Capture *c) {
        if (c->f)
                (void) fclose(c->f);
        free(c->buf);
        *c = (Capture) {};
}

/* The JSON string that json_write_escaped() makes of n bytes of s. */
static void assert_escaped(const char *s, size_t n, const char *expected) {
        Capture c;

        capture_open(&c);
        ASSERT_OK(json_write_escaped(c.f, s, n));
        ASSERT_STREQ(capture_text(&c), expected);
        capture_free(&c);
}
#define ASSERT_ESCAPED(lit, expected) assert_escaped((lit), sizeof(lit) - 1, (expected))

TEST(escape_basic) {
        ASSERT_ESCAPED("", "\"\"");
        ASSERT_ESCAPED("plain /path/to file", "\"plain /path/to file\"");
        ASSERT_ESCAPED("a\"b\\c", "\"a\\\"b\\\\c\"");
        ASSERT_ESCAPED("\b\f\n\r\t", "\"\\b\\f\\n\\r\\t\"");
}

TEST(escape_control) {
        ASSERT_ESCAPED("\x01", "\"\\u0001\"");
        ASSERT_ESCAPED("x\x1fy", "\"x\\u001fy\"");
        ASSERT_ESCAPED("\x7f", "\"\\u007f\"");
        ASSERT_ESCAPED("\x0b", "\"\\u000b\"");
        /* an embedded NUL is data too when the length is given */
        ASSERT_ESCAPED("a\0b", "\"a\\u0000b\"");
}

TEST(escape_utf8_valid) {
        ASSERT_ESCAPED("caf\xc3\xa9", "\"caf\xc3\xa9\"");                    /* é, 2 bytes */
        ASSERT_ESCAPED("\xe2\x82\xac", "\"\xe2\x82\xac\"");                  /* €, 3 bytes */
        ASSERT_ESCAPED("\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"");          /* 😀, 4 bytes */
        ASSERT_ESCAPED("\xef\xbf\xbd", "\"\xef\xbf\xbd\"");                  /* U+FFFD itself */
        ASSERT_ESCAPED("\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\"");          /* U+10FFFF */
        ASSERT_ESCAPED("\xed\x9f\xbf", "\"\xed\x9f\xbf\"");                  /* U+D7FF */
}

TEST(escape_utf8_invalid) {
        /* every byte outside a well-formed sequence becomes one \ufffd */
        ASSERT_ESCAPED("\xff", "\"\\ufffd\"");
        ASSERT_ESCAPED("a\x80z", "\"a\\ufffdz\"");                           /* stray continuation */
        ASSERT_ESCAPED("\xc3", "\"\\ufffd\"");                               /* truncated at end */
        ASSERT_ESCAPED("\xc3(", "\"\\ufffd(\"");                             /* bad continuation */
        ASSERT_ESCAPED("\xc0\x80", "\"\\ufffd\\ufffd\"");                    /* overlong NUL */
        ASSERT_ESCAPED("\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"");         /* overlong '/' */
        ASSERT_ESCAPED("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");         /* surrogate D800 */
        ASSERT_ESCAPED("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* > U+10FFFF */
        ASSERT_ESCAPED("\xe2\x82", "\"\\ufffd\\ufffd\"");                    /* truncated 3-byte */
        /* resynchronises: a valid sequence right after a bad byte survives */
        ASSERT_ESCAPED("\xfe\xc3\xa9", "\"\\ufffd\xc3\xa9\"");
}

TEST(format_names) {
        ASSERT_EQ(json_format_from_string("off"), JSON_OFF);
        ASSERT_EQ(json_format_from_string("short"), JSON_SHORT);
        ASSERT_EQ(json_format_from_string("pretty"), JSON_PRETTY);
        ASSERT_EQ(json_format_from_string("Pretty"), _JSON_FORMAT_INVALID);
        ASSERT_EQ(json_format_from_string(""), _JSON_FORMAT_INVALID);
        ASSERT_EQ(json_format_from_string(NULL), _JSON_FORMAT_INVALID);
        ASSERT_STREQ(json_format_to_string(JSON_SHORT), "short");
        ASSERT_TRUE(json_format_to_string(_JSON_FORMAT_MAX) == NULL);
        ASSERT_TRUE(json_writer_new(stdout, JSON_OFF) == NULL);
}

/* The same document in both formats. */
static void write_document(JsonWriter *w) {
        ASSERT_OK(json_begin_object(w));
        ASSERT_OK(json_key_string(w, "name", "boot"));
        ASSERT_OK(json_key_uint(w, "files", 3));
        ASSERT_OK(json_key_bool(w, "complete", true));
        ASSERT_OK(json_key_null(w, "none"));
        ASSERT_OK(json_key(w, "list"));
        ASSERT_OK(json_begin_array(w));
        ASSERT_OK(json_int(w, -1));
        ASSERT_OK(json_begin_object(w));
        ASSERT_OK(json_key_double(w, "score", 0.5));
        ASSERT_OK(json_end_object(w));
        ASSERT_OK(json_begin_array(w));
        ASSERT_OK(json_end_array(w));
        ASSERT_OK(json_end_array(w));
        ASSERT_OK(json_key(w, "empty"));
        ASSERT_OK(json_begin_object(w));
        ASSERT_OK(json_end_object(w));
        ASSERT_OK(json_end_object(w));
        ASSERT_OK(json_writer_finish(w));
}

TEST(nesting_short) {
        Capture c;
        JsonWriter *w;

        capture_open(&c);
        ASSERT_TRUE(w = json_writer_new(c.f, JSON_SHORT));
        write_document(w);
        json_writer_free(w);
        ASSERT_STREQ(capture_text(&c),
                     "{\"name\":\"boot\",\"files\":3,\"complete\":true,\"none\":null,"
                     "\"list\":[-1,{\"score\":0.5},[]],\"empty\":{}}\n");
        capture_free(&c);
}

TEST(nesting_pretty) {
        Capture c;
        JsonWriter *w;

        capture_open(&c);
        ASSERT_TRUE(w = json_writer_new(c.f, JSON_PRETTY));
        write_document(w);
        json_writer_free(w);
        ASSERT_STREQ(capture_text(&c),
                     "{\n"
                     "  \"name\": \"boot\",\n"
                     "  \"files\": 3,\n"
                     "  \"complete\": true,\n"
                     "  \"none\": null,\n"
                     "  \"list\": [\n"
                     "    -1,\n"
                     "    {\n"
                     "      \"score\": 0.5\n"
                     "    },\n"
                     "    []\n"
                     "  ],\n"
                     "  \"empty\": {}\n"
                     "}\n");
        capture_free(&c);
}

TEST(top_level_array_and_scalars) {
        Capture c;
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;

        capture_open(&c);
        ASSERT_TRUE(w = json_writer_new(c.f, JSON_PRETTY));
        ASSERT_OK(json_begin_array(w));
        ASSERT_OK(json_end_array(w));
        ASSERT_OK(json_writer_finish(w));
        ASSERT_STREQ(capture_text(&c), "[]\n");
        capture_free(&c);

        w = json_writer_free(w);
        capture_open(&c);
        ASSERT_TRUE(w = json_writer_new(c.f, JSON_SHORT));
        ASSERT_OK(json_string(w, "x\ny"));
        ASSERT_OK(json_writer_finish(w));
        ASSERT_STREQ(capture_text(&c), "\"x\\ny\"\n");
        capture_free(&c);
}

/* One number written alone at top level, in short mode. */
static void assert_number(int kind, int64_t i, uint64_t u, double d, const char *expected) {
        Capture c;
        JsonWriter *w;

        capture_open(&c);
        ASSERT_TRUE(w = json_writer_new(c.f, JSON_SHORT));
        if (kind == 'i')
                ASSERT_OK(json_int(w, i));
        else if (kind == 'u')
                ASSERT_OK(json_uint(w, u));
        else
                ASSERT_OK(json_double(w, d));
        ASSERT_OK(json_writer_finish(w));
        json_writer_free(w);
        capture_text(&c);
        c.buf[strcspn(c.buf, "\n")] = 0;
        ASSERT_STREQ(c.buf, expected);
        capture_free(&c);
}

TEST(numbers) {
        assert_number('i', 0, 0, 0, "0");
        assert_number('i', -42, 0, 0, "-42");
        assert_number('i', INT64_MAX, 0, 0, "9223372036854775807");
        assert_number('i', INT64_MIN, 0, 0, "-9223372036854775808");
        assert_number('u', 0, UINT64_MAX, 0, "18446744073709551615");
        assert_number('u', 0, 1234, 0, "1234");

        assert_number('d', 0, 0, 0.5, "0.5");
        assert_number('d', 0, 0, 0.1, "0.1");
        assert_number('d', 0, 0, 1.0, "1");
        assert_number('d', 0, 0, -2.25, "-2.25");
        assert_number('d', 0, 0, 1e300, "1e+300");
        assert_number('d', 0, 0, 1.0 / 3.0, "0.3333333333333333");
        assert_number('d', 0, 0, NAN, "null");
        assert_number('d', 0, 0, INFINITY, "null");
        assert_number('d', 0, 0, -INFINITY, "null");
}

TEST(misuse) {
        Capture c;
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;

        capture_open(&c);
        ASSERT_TRUE(w = json_writer_new(c.f, JSON_SHORT));

        /* nothing written yet */
        ASSERT_ERROR(json_writer_finish(w), EINVAL);
        ASSERT_ERROR(json_key(w, "k"), EINVAL);
        ASSERT_ERROR(json_end_object(w), EINVAL);

        ASSERT_OK(json_begin_object(w));
        ASSERT_ERROR(json_uint(w, 1), EINVAL);            /* value without key */
        ASSERT_ERROR(json_end_array(w), EINVAL);          /* wrong closer */
        ASSERT_ERROR(json_key(w, NULL), EINVAL);
        ASSERT_OK(json_key(w, "a"));
        ASSERT_ERROR(json_key(w, "b"), EINVAL);           /* two keys in a row */
        ASSERT_ERROR(json_end_object(w), EINVAL);         /* key without value */
        ASSERT_OK(json_begin_array(w));
        ASSERT_ERROR(json_key(w, "c"), EINVAL);           /* key in an array */
        ASSERT_ERROR(json_writer_finish(w), EINVAL);      /* still open */
        ASSERT_OK(json_end_array(w));
        ASSERT_OK(json_end_object(w));
        ASSERT_ERROR(json_null(w), EINVAL);               /* a second top-level value */
        ASSERT_OK(json_writer_finish(w));

        /* the failed calls left no trace */
        ASSERT_STREQ(capture_text(&c), "{\"a\":[]}\n");
        capture_free(&c);
}

TEST(depth_limit) {
        Capture c;
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;
        unsigned n = 0;
        int r;

        capture_open(&c);
        ASSERT_TRUE(w = json_writer_new(c.f, JSON_SHORT));
        while ((r = json_begin_array(w)) >= 0)
                n++;
        ASSERT_EQ(r, -E2BIG);
        ASSERT_TRUE(n >= 8);
        while (n-- > 0)
                ASSERT_OK(json_end_array(w));
        ASSERT_OK(json_writer_finish(w));
        capture_free(&c);
}

TEST(string_null_and_len) {
        Capture c;
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;

        capture_open(&c);
        ASSERT_TRUE(w = json_writer_new(c.f, JSON_SHORT));
        ASSERT_OK(json_begin_array(w));
        ASSERT_OK(json_string(w, NULL));
        ASSERT_OK(json_string_len(w, "abcdef", 3));
        ASSERT_OK(json_string(w, "\xff"));
        ASSERT_OK(json_end_array(w));
        ASSERT_OK(json_writer_finish(w));
        ASSERT_STREQ(capture_text(&c), "[null,\"abc\",\"\\ufffd\"]\n");
        capture_free(&c);
}

int main(void) {
        RUN(escape_basic);
        RUN(escape_control);
        RUN(escape_utf8_valid);
        RUN(escape_utf8_invalid);
        RUN(format_names);
        RUN(nesting_short);
        RUN(nesting_pretty);
        RUN(top_level_array_and_scalars);
        RUN(numbers);
        RUN(misuse);
        RUN(depth_limit);
        RUN(string_null_and_len);
        return EXIT_SUCCESS;
}
