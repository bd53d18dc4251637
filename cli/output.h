/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Human-readable formatting for seeklessctl: sizes, times, "Key: value" lines, typed values and aligned tables
 * that are also JSON. document.h builds documents of them. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/json.h"
#include "common/macro.h"

#define FORMAT_BYTES_MAX 16
#define FORMAT_TIMESTAMP_MAX 32

/* 1024-based: "0B", "1023B", "96.0K", "1.5M", "12.3G", ... One decimal from K upwards. */
char *format_bytes(char *buf, size_t l, uint64_t bytes);

/* CLOCK_REALTIME usec as local time "YYYY-MM-DD HH:MM:SS"; "n/a" for 0 or unrepresentable values. */
char *format_timestamp(char *buf, size_t l, uint64_t usec);

/* "%*s: value\n", the key right-aligned to width, as in hostnamectl's status block. A NULL key prints only
 * the indentation, for continuation lines. */
void print_field(FILE *f, int width, const char *key, const char *format, ...) _printf_(4, 5) __attribute__((nonnull(4)));

/* A copy of s with control characters as \xNN, as tables and documents show text; NULL on OOM. */
char *text_escape(const char *s);

typedef enum TableAlign {
        TABLE_ALIGN_LEFT,
        TABLE_ALIGN_RIGHT,
} TableAlign;

/* What a cell holds: how it is shown as text, and what it is in JSON. */
typedef enum TableDataType {
        TABLE_STRING,           /* as given, control characters as \xNN; JSON: the string */
        TABLE_UINT,             /* decimal; JSON: the number */
        TABLE_BYTES,            /* format_bytes(), "1.5M"; JSON: the number of bytes */
        TABLE_TIMESTAMP,        /* format_timestamp() of CLOCK_REALTIME usec; JSON: the usec */
        TABLE_TIMESPAN,         /* format_timespan(TIMESPAN_TWO_UNITS) of usec; JSON: the usec */
        TABLE_BOOL,             /* "yes" or "no"; JSON: true or false */
        TABLE_DOUBLE,           /* with the decimals given; JSON: the number, all its digits */
        TABLE_NULL,             /* ""; JSON: null */
        TABLE_NESTED,           /* ""; JSON: what the caller's function writes (document.h: an object) */
        _TABLE_DATA_TYPE_MAX,
        _TABLE_DATA_TYPE_INVALID = -EINVAL,
} TableDataType;

/* One typed value, as shown and as JSON: a table cell, or a field of a document (document.h). */
typedef struct Cell {
        TableDataType type;
        char *text;             /* as shown: escaped */
        union {
                char *string;
                uint64_t uint;
                double number;
                bool boolean;
                struct {
                        void *nested;
                        int (*nested_write_json)(const void *nested, JsonWriter *w);
                        void (*nested_free)(void *nested);
                };
        };
} Cell;

/* Each makes *ret hold the value (a string copied), its text the type's (see TableDataType). 0 or -ENOMEM,
 * *ret untouched then. */
int cell_string(Cell *ret, const char *s);
int cell_uint(Cell *ret, uint64_t u);
int cell_bytes(Cell *ret, uint64_t bytes);
int cell_timestamp(Cell *ret, uint64_t usec);
int cell_timespan(Cell *ret, uint64_t usec);
int cell_bool(Cell *ret, bool b);
int cell_double(Cell *ret, double d, unsigned decimals);
int cell_null(Cell *ret);
/* Takes nested, which nested_free() frees (also on failure). */
int cell_nested(Cell *ret, void *nested, int (*nested_write_json)(const void *nested, JsonWriter *w),
                void (*nested_free)(void *nested));
void cell_done(Cell *c);
/* Shows the value as text instead, escaped; its JSON value stays. */
int cell_set_text(Cell *c, const char *text);
int cell_write_json(const Cell *c, JsonWriter *w);

/* A column: its header in the text table, its key in each JSON object. */
typedef struct TableColumn {
        const char *header;     /* NULL: only in JSON */
        const char *json_key;   /* NULL: only in the text table */
        TableAlign align;
} TableColumn;

typedef struct Table Table;

/* A table with one column per header (NULL-terminated list), text only. Cells are added left to right, top
 * to bottom; a row is complete when it has a cell for every column. */
Table *table_new_internal(const char *first_header, ...) __attribute__((sentinel));
#define table_new(...) table_new_internal(__VA_ARGS__, NULL)
/* A table of the columns given, up to the first entry with neither header nor key; the strings must
 * outlive the table. */
Table *table_new_columns(const TableColumn *columns);
/* A table is counted: table_ref() takes one more reference, table_free() drops one and frees the table
 * with the last. */
Table *table_ref(Table *t);
Table *table_free(Table *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Table *, table_free);

/* The text is copied; control characters are shown as \xNN so one cell stays on one line. In JSON these
 * cells are strings. */
int table_add_cell(Table *t, const char *text);
int table_add_cellf(Table *t, const char *format, ...) _printf_(2, 3);

/* Typed cells (see TableDataType). */
int table_add_string(Table *t, const char *s);
int table_add_uint(Table *t, uint64_t u);
int table_add_bytes(Table *t, uint64_t bytes);
int table_add_timestamp(Table *t, uint64_t usec);
int table_add_timespan(Table *t, uint64_t usec);
int table_add_bool(Table *t, bool b);
int table_add_double(Table *t, double d, unsigned decimals);
int table_add_null(Table *t);
/* Adds the cell and takes it over (cell_done() it on failure too). */
int table_add(Table *t, Cell *cell);

/* Shows the cell added last as this text instead (escaped as table_add_cell() does); its JSON value stays.
 * -EINVAL if there is no cell. */
int table_set_textf(Table *t, const char *format, ...) _printf_(2, 3);

size_t table_get_rows(const Table *t);

/* Columns are separated by one space, the last column is not padded; columns without a header are not
 * shown. Returns -EINVAL if the last row is incomplete. */
int table_print(const Table *t, FILE *f, bool header);
/* The rows without the header, as table_print() shows them, the first line starting with first, the next
 * ones with next. */
int table_print_indented(const Table *t, FILE *f, const char *first, const char *next);

/* The rows as a JSON array of objects, one member per column with a key, in column order. Returns -EINVAL
 * if the last row is incomplete, or what the writer returns. */
int table_write_json(const Table *t, JsonWriter *w);
