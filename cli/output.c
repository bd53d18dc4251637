/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/alloc-util.h"
#include "common/escape.h"
#include "common/time-util.h"
#include "cli/output.h"

char *format_bytes(char *buf, size_t l, uint64_t bytes) {
        static const char suffixes[] = "KMGTPE";
        double v = (double) bytes;

        if (bytes < 1024) {
                (void) snprintf(buf, l, "%" PRIu64 "B", bytes);
                return buf;
        }

        /* Move up while the value would round to 1024.0 or more in the current unit. */
        size_t i = 0;
        v /= 1024.0;
        while (v >= 1023.95 && i + 1 < sizeof suffixes - 1) {
                v /= 1024.0;
                i++;
        }
        (void) snprintf(buf, l, "%.1f%c", v, suffixes[i]);
        return buf;
}

char *format_timestamp(char *buf, size_t l, uint64_t usec) {
        time_t sec = (time_t) (usec / USEC_PER_SEC);
        struct tm tm;

        if (usec == 0 || !localtime_r(&sec, &tm) || strftime(buf, l, "%Y-%m-%d %H:%M:%S", &tm) == 0)
                (void) snprintf(buf, l, "n/a");
        return buf;
}

void print_field(FILE *f, int width, const char *key, const char *format, ...) {
        va_list ap;

        if (key)
                fprintf(f, "%*s: ", width, key);
        else
                fprintf(f, "%*s  ", width, "");

        va_start(ap, format);
        vfprintf(f, format, ap);
        va_end(ap);
        fputc('\n', f);
}

/* vasprintf() that returns the string, NULL on failure. */
static char *vformat(const char *format, va_list ap) {
        char *s;

        return vasprintf(&s, format, ap) < 0 ? NULL : s;
}

char *text_escape(const char *s) {
        size_t n = 0;
        char *ret, *p;

        for (const char *i = s; *i; i++)
                n += ((unsigned char) *i < 0x20 || *i == 0x7f) ? 4 : 1;

        ret = malloc(n + 1);
        if (!ret)
                return NULL;
        p = ret;
        for (const char *i = s; *i; i++) {
                unsigned char c = (unsigned char) *i;
                if (c < 0x20 || c == 0x7f)
                        p += sprintf(p, "\\x%02x", c);
                else
                        *p++ = (char) c;
        }
        *p = 0;
        return ret;
}

/* ---------------------------------------------------------------------------------------------------- */
/* typed values */

void cell_done(Cell *c) {
        free(c->text);
        if (c->type == TABLE_STRING)
                free(c->string);
        else if (c->type == TABLE_NESTED && c->nested_free)
                c->nested_free(c->nested);
        *c = (Cell) {};
}

/* *ret := cell, with text (as shown, not yet escaped). On failure, cell's nested value is freed (what it
 * owns besides is the caller's). */
static int cell_make(Cell *ret, Cell cell, const char *text) {
        cell.text = text_escape(text);
        if (!cell.text) {
                cell_done(&cell);
                return -ENOMEM;
        }
        *ret = cell;
        return 0;
}

int cell_string(Cell *ret, const char *s) {
        char *copy = strdup(s ?: "");

        if (!copy)
                return -ENOMEM;
        return cell_make(ret, (Cell) { .type = TABLE_STRING, .string = copy }, copy);
}

int cell_uint(Cell *ret, uint64_t u) {
        char buf[sizeof "18446744073709551615"];

        (void) snprintf(buf, sizeof buf, "%" PRIu64, u);
        return cell_make(ret, (Cell) { .type = TABLE_UINT, .uint = u }, buf);
}

int cell_bytes(Cell *ret, uint64_t bytes) {
        char buf[FORMAT_BYTES_MAX];

        return cell_make(ret, (Cell) { .type = TABLE_BYTES, .uint = bytes }, format_bytes(buf, sizeof buf, bytes));
}

int cell_timestamp(Cell *ret, uint64_t usec) {
        char buf[FORMAT_TIMESTAMP_MAX];

        return cell_make(ret, (Cell) { .type = TABLE_TIMESTAMP, .uint = usec },
                         format_timestamp(buf, sizeof buf, usec));
}

int cell_timespan(Cell *ret, uint64_t usec) {
        char buf[FORMAT_TIMESPAN_MAX];

        return cell_make(ret, (Cell) { .type = TABLE_TIMESPAN, .uint = usec },
                         format_timespan(buf, sizeof buf, usec, TIMESPAN_TWO_UNITS));
}

int cell_bool(Cell *ret, bool b) {
        return cell_make(ret, (Cell) { .type = TABLE_BOOL, .boolean = b }, b ? "yes" : "no");
}

int cell_double(Cell *ret, double d, unsigned decimals) {
        _cleanup_free_ char *s = NULL;

        if (asprintf(&s, "%.*f", (int) MIN(decimals, 17u), d) < 0) {
                s = NULL;
                return -ENOMEM;
        }
        return cell_make(ret, (Cell) { .type = TABLE_DOUBLE, .number = d }, s);
}

int cell_null(Cell *ret) {
        return cell_make(ret, (Cell) { .type = TABLE_NULL }, "");
}

int cell_nested(Cell *ret, void *nested, int (*nested_write_json)(const void *nested, JsonWriter *w),
                void (*nested_free)(void *nested)) {
        Cell c = {
                .type = TABLE_NESTED,
                .nested = nested,
                .nested_write_json = nested_write_json,
                .nested_free = nested_free,
        };

        return cell_make(ret, c, "");
}

int cell_set_text(Cell *c, const char *text) {
        char *e = text_escape(text);

        if (!e)
                return -ENOMEM;
        free(c->text);
        c->text = e;
        return 0;
}

int cell_write_json(const Cell *c, JsonWriter *w) {
        switch (c->type) {
        case TABLE_STRING:
                return json_string(w, c->string);
        case TABLE_UINT:
        case TABLE_BYTES:
        case TABLE_TIMESTAMP:
        case TABLE_TIMESPAN:
                return json_uint(w, c->uint);
        case TABLE_BOOL:
                return json_bool(w, c->boolean);
        case TABLE_DOUBLE:
                return json_double(w, c->number);
        case TABLE_NULL:
                return json_null(w);
        case TABLE_NESTED:
                return c->nested_write_json(c->nested, w);
        default:
                return -EINVAL;
        }
}

/* ---------------------------------------------------------------------------------------------------- */
/* tables */

typedef struct TableHeader {
        char *header;           /* escaped; NULL: not shown */
        const char *json_key;
        TableAlign align;
} TableHeader;

struct Table {
        unsigned n_ref;
        size_t n_columns;
        TableHeader *columns;
        Cell *cells;            /* the rows, left to right, top to bottom */
        size_t n_cells, allocated;
};

Table *table_ref(Table *t) {
        t->n_ref++;
        return t;
}

Table *table_free(Table *t) {
        if (!t || --t->n_ref > 0)
                return NULL;
        for (size_t i = 0; i < t->n_columns; i++)
                free(t->columns[i].header);
        free(t->columns);
        for (size_t i = 0; i < t->n_cells; i++)
                cell_done(&t->cells[i]);
        free(t->cells);
        free(t);
        return NULL;
}

static Table *table_new_n(size_t n_columns) {
        _cleanup_(table_freep) Table *t = NULL;

        if (n_columns == 0)
                return NULL;
        t = calloc(1, sizeof *t);
        if (!t)
                return NULL;
        t->n_ref = 1;
        t->columns = calloc(n_columns, sizeof *t->columns);
        if (!t->columns)
                return NULL;
        t->n_columns = n_columns;
        return TAKE_PTR(t);
}

Table *table_new_columns(const TableColumn *columns) {
        _cleanup_(table_freep) Table *t = NULL;
        size_t n = 0;

        while (columns[n].header || columns[n].json_key)
                n++;
        t = table_new_n(n);
        if (!t)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                if (columns[i].header && !(t->columns[i].header = text_escape(columns[i].header)))
                        return NULL;
                t->columns[i].json_key = columns[i].json_key;
                t->columns[i].align = columns[i].align;
        }
        return TAKE_PTR(t);
}

Table *table_new_internal(const char *first_header, ...) {
        _cleanup_(table_freep) Table *t = NULL;
        size_t n = 0, i = 0;
        va_list ap;

        va_start(ap, first_header);
        for (const char *h = first_header; h; h = va_arg(ap, const char *))
                n++;
        va_end(ap);

        t = table_new_n(n);
        if (!t)
                return NULL;

        va_start(ap, first_header);
        for (const char *h = first_header; h; h = va_arg(ap, const char *))
                if (!(t->columns[i++].header = text_escape(h)))
                        break;
        va_end(ap);
        if (!t->columns[n - 1].header)
                return NULL;

        return TAKE_PTR(t);
}

int table_add(Table *t, Cell *cell) {
        if (GREEDY_REALLOC(t->cells, t->allocated, t->n_cells + 1) < 0) {
                cell_done(cell);
                return -ENOMEM;
        }
        t->cells[t->n_cells++] = *cell;
        *cell = (Cell) {};
        return 0;
}

/* Adds the cell a cell_*() call made, if it made one. */
static int table_add_made(Table *t, Cell *cell, int r) {
        return r < 0 ? r : table_add(t, cell);
}

int table_add_cell(Table *t, const char *text) {
        return table_add_string(t, text);
}

int table_add_cellf(Table *t, const char *format, ...) {
        _cleanup_free_ char *s = NULL;
        va_list ap;

        va_start(ap, format);
        s = vformat(format, ap);
        va_end(ap);
        return s ? table_add_cell(t, s) : -ENOMEM;
}

int table_add_string(Table *t, const char *s) {
        Cell c;
        return table_add_made(t, &c, cell_string(&c, s));
}

int table_add_uint(Table *t, uint64_t u) {
        Cell c;
        return table_add_made(t, &c, cell_uint(&c, u));
}

int table_add_bytes(Table *t, uint64_t bytes) {
        Cell c;
        return table_add_made(t, &c, cell_bytes(&c, bytes));
}

int table_add_timestamp(Table *t, uint64_t usec) {
        Cell c;
        return table_add_made(t, &c, cell_timestamp(&c, usec));
}

int table_add_timespan(Table *t, uint64_t usec) {
        Cell c;
        return table_add_made(t, &c, cell_timespan(&c, usec));
}

int table_add_bool(Table *t, bool b) {
        Cell c;
        return table_add_made(t, &c, cell_bool(&c, b));
}

int table_add_double(Table *t, double d, unsigned decimals) {
        Cell c;
        return table_add_made(t, &c, cell_double(&c, d, decimals));
}

int table_add_null(Table *t) {
        Cell c;
        return table_add_made(t, &c, cell_null(&c));
}

int table_set_textf(Table *t, const char *format, ...) {
        _cleanup_free_ char *s = NULL;
        va_list ap;

        if (t->n_cells == 0)
                return -EINVAL;

        va_start(ap, format);
        s = vformat(format, ap);
        va_end(ap);
        if (!s)
                return -ENOMEM;
        return cell_set_text(&t->cells[t->n_cells - 1], s);
}

size_t table_get_rows(const Table *t) {
        return t->n_cells / t->n_columns;
}

/* The rows (and the header first, with header), each line starting with first (the first) or next (the
 * others). */
static int table_print_lines(const Table *t, FILE *f, bool header, const char *first, const char *next) {
        _cleanup_free_ size_t *width = NULL;
        size_t last = 0;

        if (t->n_cells % t->n_columns != 0)
                return -EINVAL;

        width = calloc(t->n_columns, sizeof *width);
        if (!width)
                return -ENOMEM;

        for (size_t col = 0; col < t->n_columns; col++)
                if (t->columns[col].header) {
                        last = col;
                        if (header)
                                width[col] = utf8_columns(t->columns[col].header);
                }
        for (size_t i = 0; i < t->n_cells; i++)
                width[i % t->n_columns] = MAX(width[i % t->n_columns], utf8_columns(t->cells[i].text));

        /* row -1 is the header */
        for (ssize_t row = header ? -1 : 0; row < (ssize_t) table_get_rows(t); row++) {
                bool first_col = true;

                fputs(row == (header ? -1 : 0) ? first : next, f);
                for (size_t col = 0; col < t->n_columns; col++) {
                        const char *text;
                        size_t pad;

                        if (!t->columns[col].header)
                                continue;
                        text = row < 0 ? t->columns[col].header : t->cells[row * t->n_columns + col].text;
                        pad = width[col] - utf8_columns(text);

                        if (!first_col)
                                fputc(' ', f);
                        first_col = false;
                        if (t->columns[col].align == TABLE_ALIGN_RIGHT)
                                fprintf(f, "%*s", (int) pad, "");
                        fputs(text, f);
                        if (t->columns[col].align == TABLE_ALIGN_LEFT && col != last)
                                fprintf(f, "%*s", (int) pad, "");
                        if (col == last)
                                fputc('\n', f);
                }
        }

        return ferror(f) ? -EIO : 0;
}

int table_print(const Table *t, FILE *f, bool header) {
        return table_print_lines(t, f, header, "", "");
}

int table_print_indented(const Table *t, FILE *f, const char *first, const char *next) {
        return table_print_lines(t, f, false, first, next);
}

int table_write_json(const Table *t, JsonWriter *w) {
        int r;

        if (t->n_cells % t->n_columns != 0)
                return -EINVAL;

        r = json_begin_array(w);
        for (size_t row = 0; r >= 0 && row < table_get_rows(t); row++) {
                r = json_begin_object(w);
                for (size_t col = 0; r >= 0 && col < t->n_columns; col++)
                        if (t->columns[col].json_key && (r = json_key(w, t->columns[col].json_key)) >= 0)
                                r = cell_write_json(&t->cells[row * t->n_columns + col], w);
                if (r >= 0)
                        r = json_end_object(w);
        }
        return r < 0 ? r : json_end_array(w);
}
