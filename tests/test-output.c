/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>

#include "cli/output.h"
#include "test-util.h"

/* A two-row table of every cell type, with a text-only and a JSON-only column. */
static Table *sample(void) {
        static const TableColumn columns[] = {
                { "POS",  NULL,       TABLE_ALIGN_RIGHT },
                { NULL,   "hidden"                      },
                { "NAME", "name"                        },
                { "SIZE", "bytes",    TABLE_ALIGN_RIGHT },
                { "WHEN", "when_usec"                   },
                { "TOOK", "took_usec", TABLE_ALIGN_RIGHT },
                { "OK",   "ok"                          },
                { "SCORE", "score",   TABLE_ALIGN_RIGHT },
                { "BOOT", "boot"                        },
                {}
        };
        Table *t = table_new_columns(columns);

        ASSERT_TRUE(t);
        ASSERT_OK(table_add_uint(t, 1));
        ASSERT_OK(table_add_string(t, "h1"));
        ASSERT_OK(table_add_string(t, "a\nb"));
        ASSERT_OK(table_add_bytes(t, 1536));
        ASSERT_OK(table_add_timestamp(t, 0));
        ASSERT_OK(table_add_timespan(t, 4200000));
        ASSERT_OK(table_add_bool(t, true));
        ASSERT_OK(table_add_double(t, 0.1234, 3));
        ASSERT_OK(table_add_string(t, "0123456789abcdef"));
        ASSERT_OK(table_set_textf(t, "%.8s", "0123456789abcdef"));

        ASSERT_OK(table_add_uint(t, 2));
        ASSERT_OK(table_add_string(t, "h2"));
        ASSERT_OK(table_add_string(t, "文字"));
        ASSERT_OK(table_add_bytes(t, 3));
        ASSERT_OK(table_add_timestamp(t, 0));
        ASSERT_OK(table_add_timespan(t, 0));
        ASSERT_OK(table_add_bool(t, false));
        ASSERT_OK(table_add_double(t, 12.5, 1));
        ASSERT_OK(table_add_cell(t, "-"));
        return t;
}

static char *capture_text(const Table *t, bool header) {
        TestCapture c;

        ASSERT_OK(table_print(t, test_capture_begin(&c), header));
        return test_capture_end(&c);
}

static char *capture_json(const Table *t, JsonFormat format) {
        TestCapture c;
        JsonWriter *w = json_writer_new(test_capture_begin(&c), format);

        ASSERT_TRUE(w);
        ASSERT_OK(table_write_json(t, w));
        ASSERT_OK(json_writer_finish(w));
        json_writer_free(w);
        return test_capture_end(&c);
}

TEST(text) {
        Table *t = sample();
        char *s;

        ASSERT_EQ(table_get_rows(t), 2);

        /* hidden column left out, escaped newline, wide characters two columns each, last column unpadded */
        s = capture_text(t, true);
        ASSERT_STREQ(s,
                     "POS NAME   SIZE WHEN TOOK OK  SCORE BOOT\n"
                     "  1 a\\x0ab 1.5K n/a  4.2s yes 0.123 01234567\n"
                     "  2 文字     3B n/a     0 no   12.5 -\n");
        free(s);

        s = capture_text(t, false);
        ASSERT_STREQ(s,
                     "1 a\\x0ab 1.5K n/a 4.2s yes 0.123 01234567\n"
                     "2 文字     3B n/a    0 no   12.5 -\n");
        free(s);
        table_free(t);
}

TEST(json) {
        Table *t = sample();
        char *s;

        /* the value, not the text: raw string, numbers, full boot id, text-only column left out */
        s = capture_json(t, JSON_SHORT);
        ASSERT_STREQ(s,
                     "[{\"hidden\":\"h1\",\"name\":\"a\\nb\",\"bytes\":1536,\"when_usec\":0,\"took_usec\":4200000,"
                     "\"ok\":true,\"score\":0.1234,\"boot\":\"0123456789abcdef\"},"
                     "{\"hidden\":\"h2\",\"name\":\"文字\",\"bytes\":3,\"when_usec\":0,\"took_usec\":0,"
                     "\"ok\":false,\"score\":12.5,\"boot\":\"-\"}]\n");
        free(s);
        table_free(t);
}

TEST(empty_and_incomplete) {
        static const TableColumn columns[] = { { "A", "a" }, { "B", "b" }, {} };
        Table *t = table_new_columns(columns);
        char *s;

        ASSERT_TRUE(t);
        ASSERT_ERROR(table_set_textf(t, "x"), EINVAL);
        s = capture_json(t, JSON_PRETTY);
        ASSERT_STREQ(s, "[]\n");
        free(s);

        ASSERT_OK(table_add_uint(t, 1));
        ASSERT_ERROR(table_print(t, stdout, true), EINVAL);
        table_free(t);
}

int main(void) {
        RUN(text);
        RUN(json);
        RUN(empty_and_incomplete);
        return EXIT_SUCCESS;
}
