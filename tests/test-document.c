/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>
#include <stdlib.h>

#include "cli/document.h"
#include "test-util.h"

static char *capture_text(const DocNode *d, bool legend) {
        TestCapture c;

        ASSERT_OK(doc_print(d, test_capture_begin(&c), legend));
        return test_capture_end(&c);
}

static char *capture_json(const DocNode *d, JsonFormat format) {
        TestCapture c;
        JsonWriter *w = json_writer_new(test_capture_begin(&c), format);

        ASSERT_TRUE(w);
        ASSERT_OK(doc_write_json(d, w));
        ASSERT_OK(json_writer_finish(w));
        json_writer_free(w);
        return test_capture_end(&c);
}

static void assert_renders(const DocNode *d, bool legend, const char *text, const char *json) {
        char *s = capture_text(d, legend);

        ASSERT_STREQ(s, text);
        free(s);
        s = capture_json(d, JSON_SHORT);
        ASSERT_STREQ(s, json);
        free(s);
}

/* A status-like "Key: value" block: every type, text-only and JSON-only fields, a text set instead of the
 * type's, a nested object and a list, rows continuing the block (also under the label ""), a table shown
 * in the text at one place and in JSON at another, an empty one. */
TEST(block) {
        static const TableColumn mount_columns[] = {
                { "MOUNT", "mount" },
                { NULL,    "type"  },
                {}
        };
        static const char *const mounts[] = { "/", "/home" };
        DocNode *d = doc_new(), *o;
        Table *fs = table_new_columns(mount_columns), *none = table_new_columns(mount_columns);

        ASSERT_TRUE(d && fs && none);
        ASSERT_OK(table_add_string(fs, "/"));
        ASSERT_OK(table_set_textf(fs, "%s (%s)", "/", "ext4"));
        ASSERT_OK(table_add_string(fs, "ext4"));
        ASSERT_OK(table_add_string(fs, "/a\nb"));
        ASSERT_OK(table_add_string(fs, "vfat"));

        ASSERT_OK(doc_add_string(d, "Name", "name", "x\ty"));
        ASSERT_OK(doc_add_uint(d, "Count", "count", 42));
        ASSERT_OK(doc_add_bytes(d, "Size", "bytes", 1536));
        ASSERT_OK(doc_add_timestamp(d, "When", "when_usec", 0));
        ASSERT_OK(doc_add_timespan(d, "Took", "took_usec", 4200000));
        ASSERT_OK(doc_add_bool(d, "Busy", "busy", true));
        ASSERT_OK(doc_set_textf(d, "yes (run %d)", 7));
        ASSERT_OK(doc_add_uint(d, NULL, "run", 7));
        ASSERT_OK(doc_add_double(d, "Score", "score", 0.1234, 2));
        ASSERT_OK(doc_add_string(d, "Wide 文字", NULL, "text only"));
        ASSERT_OK(doc_add_table(d, "Filesystems", NULL, fs, DOC_TABLE_ROWS));
        ASSERT_OK(doc_add_table(d, "", NULL, fs, DOC_TABLE_ROWS));
        ASSERT_OK(doc_add_string(d, "", NULL, "and more"));
        ASSERT_OK(doc_add_null(d, NULL, "nothing"));
        o = doc_add_object(d, "Queued", "queued");
        ASSERT_TRUE(o);
        ASSERT_OK(doc_set_textf(d, "since %s", "then"));
        ASSERT_OK(doc_add_uint(o, "Hidden", "usec", 5));
        ASSERT_OK(doc_add_strv(o, NULL, "mounts", mounts, 2));
        ASSERT_OK(doc_add_strv(d, "Mounts", "list", mounts, 2));
        ASSERT_OK(doc_add_table(d, "Empty", "empty", none, DOC_TABLE_ROWS));
        ASSERT_OK(doc_add_table(d, NULL, "filesystems", fs, DOC_TABLE_HIDDEN));
        table_free(fs);
        table_free(none);

        /* labels right-aligned to the widest ("Filesystems", and "Wide 文字" is 9 columns), escaped text */
        assert_renders(d, true,
                       "       Name: x\\x09y\n"
                       "      Count: 42\n"
                       "       Size: 1.5K\n"
                       "       When: n/a\n"
                       "       Took: 4.2s\n"
                       "       Busy: yes (run 7)\n"
                       "      Score: 0.12\n"
                       "  Wide 文字: text only\n"
                       "Filesystems: / (ext4)\n"
                       "             /a\\x0ab\n"
                       "             / (ext4)\n"
                       "             /a\\x0ab\n"
                       "             and more\n"
                       "     Queued: since then\n"
                       "     Mounts: /, /home\n",
                       "{\"name\":\"x\\ty\",\"count\":42,\"bytes\":1536,\"when_usec\":0,\"took_usec\":4200000,"
                       "\"busy\":true,\"run\":7,\"score\":0.1234,\"nothing\":null,"
                       "\"queued\":{\"usec\":5,\"mounts\":[\"/\",\"/home\"]},\"list\":[\"/\",\"/home\"],"
                       "\"empty\":[],\"filesystems\":[{\"mount\":\"/\",\"type\":\"ext4\"},"
                       "{\"mount\":\"/a\\nb\",\"type\":\"vfat\"}]}\n");
        doc_free(d);
}

/* A plan-like document: lines, grid tables with a title and empty lines before them, the legend's parts,
 * and table cells holding objects. */
TEST(sections) {
        static const TableColumn file_columns[] = {
                { "POS",  NULL,   TABLE_ALIGN_RIGHT },
                { "PATH", "path"                    },
                {}
        };
        static const TableColumn quality_columns[] = {
                { "NAME",   "name"                      },
                { "BEFORE", "before", TABLE_ALIGN_RIGHT },
                {}
        };
        DocNode *d = doc_new(), *q;
        Table *files = table_new_columns(file_columns), *quality = table_new_columns(quality_columns),
              *skipped = table_new_columns(file_columns);

        ASSERT_TRUE(d && files && quality && skipped);
        ASSERT_OK(table_add_uint(files, 1));
        ASSERT_OK(table_add_string(files, "/a"));
        ASSERT_OK(table_add_uint(files, 2));
        ASSERT_OK(table_add_string(files, "/bb"));
        ASSERT_OK(table_add_string(quality, "boot"));
        q = doc_new();
        ASSERT_TRUE(q);
        ASSERT_OK(doc_add_uint(q, NULL, "files", 3));
        ASSERT_OK(doc_add_double(q, NULL, "ms", 1.25, 1));
        ASSERT_OK(table_add_object(quality, q));
        ASSERT_OK(table_set_textf(quality, "%.1f", 1.25));
        ASSERT_OK(table_add_string(quality, "app"));
        ASSERT_OK(table_add_null(quality));
        ASSERT_OK(table_set_textf(quality, "-"));
        ASSERT_ERROR(table_add_object(quality, NULL), ENOMEM);

        ASSERT_OK(doc_add_linef(d, "%s: %d files", "/", 2));
        ASSERT_OK(doc_add_linef(d, "Legend only."));
        ASSERT_OK(doc_set_flags(d, DOC_LEGEND));
        ASSERT_OK(doc_add_table(d, NULL, "files", files, DOC_TABLE_GRID));
        ASSERT_OK(doc_set_flags(d, DOC_BLANK_LINE));
        ASSERT_OK(doc_add_table(d, "Skipped:", "skipped", skipped, DOC_TABLE_GRID));
        ASSERT_OK(doc_set_flags(d, DOC_BLANK_LINE));
        ASSERT_OK(doc_add_table(d, "Quality:", "profiles", quality, DOC_TABLE_GRID));
        ASSERT_OK(doc_set_flags(d, DOC_BLANK_LINE));
        table_free(files);
        table_free(quality);
        table_free(skipped);

        /* the empty table shows nothing, not even its blank line and title */
        assert_renders(d, true,
                       "/: 2 files\n"
                       "Legend only.\n"
                       "\n"
                       "POS PATH\n"
                       "  1 /a\n"
                       "  2 /bb\n"
                       "\n"
                       "Quality:\n"
                       "NAME BEFORE\n"
                       "boot    1.2\n"
                       "app       -\n",
                       "{\"files\":[{\"path\":\"/a\"},{\"path\":\"/bb\"}],\"skipped\":[],"
                       "\"profiles\":[{\"name\":\"boot\",\"before\":{\"files\":3,\"ms\":1.25}},"
                       "{\"name\":\"app\",\"before\":null}]}\n");
        /* without the legend: no legend line, title or header; the blank lines stay */
        assert_renders(d, false,
                       "/: 2 files\n"
                       "\n"
                       "1 /a\n"
                       "2 /bb\n"
                       "\n"
                       "boot 1.2\n"
                       "app    -\n",
                       "{\"files\":[{\"path\":\"/a\"},{\"path\":\"/bb\"}],\"skipped\":[],"
                       "\"profiles\":[{\"name\":\"boot\",\"before\":{\"files\":3,\"ms\":1.25}},"
                       "{\"name\":\"app\",\"before\":null}]}\n");
        doc_free(d);
}

TEST(pretty) {
        DocNode *d = doc_new(), *o;
        char *s;

        ASSERT_TRUE(d);
        o = doc_add_object(d, NULL, "o");
        ASSERT_OK(doc_add_bool(o, NULL, "b", false));
        s = capture_json(d, JSON_PRETTY);
        ASSERT_STREQ(s, "{\n  \"o\": {\n    \"b\": false\n  }\n}\n");
        free(s);
        /* an object without a label is only in JSON */
        s = capture_text(d, true);
        ASSERT_STREQ(s, "");
        free(s);
        doc_free(d);
}

/* A failure while building is remembered and returned by both renderings; later calls do no harm. */
TEST(errors) {
        static const TableColumn columns[] = { { "A", "a" }, {} };
        DocNode *d = doc_new();
        Table *t = table_new_columns(columns);
        JsonWriter *w = json_writer_new(stdout, JSON_SHORT);

        ASSERT_TRUE(d && t && w);
        ASSERT_ERROR(doc_set_textf(d, "no node yet"), EINVAL);
        ASSERT_OK(doc_add_uint(d, "A", "a", 1));
        ASSERT_ERROR(doc_print(d, stdout, true), EINVAL);
        ASSERT_ERROR(doc_write_json(d, w), EINVAL);
        doc_free(d);

        d = doc_new();
        ASSERT_TRUE(d);
        ASSERT_ERROR(doc_add_table(d, NULL, "t", t, _DOC_TABLE_TEXT_MAX), EINVAL);
        ASSERT_ERROR(doc_write_json(d, w), EINVAL);
        doc_free(d);

        /* what doc_add_object() returns on failure (NULL) is accepted everywhere */
        ASSERT_ERROR(doc_add_uint(NULL, "A", "a", 1), ENOMEM);
        ASSERT_ERROR(doc_add_string(NULL, "A", "a", "x"), ENOMEM);
        ASSERT_ERROR(doc_add_strv(NULL, "A", "a", NULL, 0), ENOMEM);
        ASSERT_ERROR(doc_add_table(NULL, "A", "a", t, DOC_TABLE_GRID), ENOMEM);
        ASSERT_ERROR(doc_add_linef(NULL, "x"), ENOMEM);
        ASSERT_ERROR(doc_set_flags(NULL, DOC_LEGEND), ENOMEM);
        ASSERT_TRUE(!doc_add_object(NULL, "A", "a"));
        table_free(t);
        json_writer_free(w);
}

int main(void) {
        RUN(block);
        RUN(sections);
        RUN(pretty);
        RUN(errors);
        return EXIT_SUCCESS;
}
