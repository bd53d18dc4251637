/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seeklessctl's output: a JSON document on stdout, and a table or a document (document.h) as text (with its
 * legend) or as JSON. */
#include <errno.h>
#include <stdio.h>

#include "cli/document.h"
#include "common/json.h"
#include "common/log.h"
#include "cli/output.h"
#include "cli/seeklessctl.h"

int json_writer_new_stdout(JsonWriter **ret) {
        *ret = json_writer_new(stdout, arg_json);
        return *ret ? 0 : log_error_errno(SYNTHETIC_ERRNO(ENOMEM), "Out of memory.");
}

int json_done(JsonWriter *w, int r) {
        if (r >= 0)
                r = json_writer_finish(w);
        if (r < 0)
                return log_error_errno(r, "Failed to write JSON: %m");
        return 0;
}

int log_table_error(int r) {
        return r == -ENOMEM ? log_oom() : log_error_errno(r, "Failed to print table: %m");
}

int print_table_json(const Table *t) {
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;
        int r;

        r = json_writer_new_stdout(&w);
        if (r < 0)
                return r;
        return json_done(w, table_write_json(t, w));
}

int print_table(const Table *t) {
        int r;

        r = table_print(t, stdout, arg_legend);
        return r < 0 ? log_table_error(r) : 0;
}

int print_list(const Table *t, const char *noun) {
        size_t n = table_get_rows(t);
        int r;

        if (arg_json != JSON_OFF)
                return print_table_json(t);

        if (n == 0) {
                if (arg_legend)
                        printf("No %ss recorded yet.\n", noun);
                return 0;
        }
        r = print_table(t);
        if (r < 0)
                return r;
        if (arg_legend)
                printf("\n%zu %s%s listed.\n", n, noun, n == 1 ? "" : "s");
        return 0;
}

int print_doc(const DocNode *d) {
        _cleanup_(json_writer_freep) JsonWriter *w = NULL;
        int r;

        if (!d)
                return log_oom();
        if (arg_json == JSON_OFF) {
                r = doc_print(d, stdout, arg_legend);
                return r < 0 ? log_table_error(r) : 0;
        }
        r = json_writer_new_stdout(&w);
        if (r < 0)
                return r;
        r = doc_write_json(d, w);
        return r == -ENOMEM ? log_oom() : json_done(w, r);
}
