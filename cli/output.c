/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "escape.h"
#include "output.h"

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

char *format_timespan(char *buf, size_t l, uint64_t usec) {
        const uint64_t min = 60 * USEC_PER_SEC, hour = 60 * min, day = 24 * hour;

        if (usec == 0)
                (void) snprintf(buf, l, "0");
        else if (usec < USEC_PER_MSEC)
                (void) snprintf(buf, l, "%" PRIu64 "us", usec);
        else if (usec < USEC_PER_SEC)
                (void) snprintf(buf, l, "%" PRIu64 "ms", usec / USEC_PER_MSEC);
        else if (usec < min)
                (void) snprintf(buf, l, "%" PRIu64 ".%" PRIu64 "s",
                                usec / USEC_PER_SEC, usec % USEC_PER_SEC / (USEC_PER_SEC / 10));
        else if (usec < hour)
                (void) snprintf(buf, l, "%" PRIu64 "min %" PRIu64 "s", usec / min, usec % min / USEC_PER_SEC);
        else if (usec < day)
                (void) snprintf(buf, l, "%" PRIu64 "h %" PRIu64 "min", usec / hour, usec % hour / min);
        else
                (void) snprintf(buf, l, "%" PRIu64 "d %" PRIu64 "h", usec / day, usec % day / hour);
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

struct Table {
        size_t n_columns;
        char **cells;           /* n_columns headers first, then the rows */
        size_t n_cells, allocated;
        TableAlign *align;
};

Table *table_free(Table *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_cells; i++)
                free(t->cells[i]);
        free(t->cells);
        free(t->align);
        free(t);
        return NULL;
}

/* A copy of s with control characters written as \xNN. */
static char *cell_escape(const char *s) {
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

static int table_append(Table *t, const char *text) {
        char *c;

        if (t->n_cells >= t->allocated) {
                size_t a = MAX(t->allocated * 2, (size_t) 16);
                char **n = realloc(t->cells, a * sizeof *n);
                if (!n)
                        return -ENOMEM;
                t->cells = n;
                t->allocated = a;
        }

        c = cell_escape(text ?: "");
        if (!c)
                return -ENOMEM;
        t->cells[t->n_cells++] = c;
        return 0;
}

Table *table_new_internal(const char *first_header, ...) {
        _cleanup_(table_freep) Table *t = NULL;
        va_list ap;
        int r = 0;

        t = calloc(1, sizeof *t);
        if (!t)
                return NULL;

        va_start(ap, first_header);
        for (const char *h = first_header; h; h = va_arg(ap, const char *)) {
                r = table_append(t, h);
                if (r < 0)
                        break;
                t->n_columns++;
        }
        va_end(ap);
        if (r < 0 || t->n_columns == 0)
                return NULL;

        t->align = calloc(t->n_columns, sizeof *t->align);
        if (!t->align)
                return NULL;

        return TAKE_PTR(t);
}

int table_set_align(Table *t, size_t column, TableAlign align) {
        if (column >= t->n_columns)
                return -EINVAL;
        t->align[column] = align;
        return 0;
}

int table_add_cell(Table *t, const char *text) {
        return table_append(t, text);
}

int table_add_cellf(Table *t, const char *format, ...) {
        _cleanup_free_ char *s = NULL;
        va_list ap;
        int r;

        va_start(ap, format);
        r = vasprintf(&s, format, ap);
        va_end(ap);
        if (r < 0) {
                s = NULL;
                return -ENOMEM;
        }
        return table_append(t, s);
}

size_t table_get_rows(const Table *t) {
        return t->n_cells / t->n_columns - 1;
}

int table_print(const Table *t, FILE *f, bool header) {
        _cleanup_free_ size_t *width = NULL;
        size_t first;

        if (t->n_cells % t->n_columns != 0)
                return -EINVAL;

        width = calloc(t->n_columns, sizeof *width);
        if (!width)
                return -ENOMEM;

        first = header ? 0 : t->n_columns;
        for (size_t i = first; i < t->n_cells; i++)
                width[i % t->n_columns] = MAX(width[i % t->n_columns], utf8_columns(t->cells[i]));

        for (size_t i = first; i < t->n_cells; i++) {
                size_t col = i % t->n_columns, pad = width[col] - utf8_columns(t->cells[i]);
                bool last = col == t->n_columns - 1;

                if (col > 0)
                        fputc(' ', f);
                if (t->align[col] == TABLE_ALIGN_RIGHT)
                        fprintf(f, "%*s", (int) pad, "");
                fputs(t->cells[i], f);
                if (t->align[col] == TABLE_ALIGN_LEFT && !last)
                        fprintf(f, "%*s", (int) pad, "");
                if (last)
                        fputc('\n', f);
        }

        return ferror(f) ? -EIO : 0;
}
