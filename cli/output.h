/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Human-readable formatting for seeklessctl: sizes, times, "Key: value" blocks and aligned tables. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "macro.h"

#define FORMAT_BYTES_MAX 16
#define FORMAT_TIMESPAN_MAX 32
#define FORMAT_TIMESTAMP_MAX 32

/* 1024-based: "0B", "1023B", "96.0K", "1.5M", "12.3G", ... One decimal from K upwards. */
char *format_bytes(char *buf, size_t l, uint64_t bytes);

/* A duration: "0", "250us", "850ms", "4.2s", "3min 5s", "2h 10min", "3d 4h". */
char *format_timespan(char *buf, size_t l, uint64_t usec);

/* CLOCK_REALTIME usec as local time "YYYY-MM-DD HH:MM:SS"; "n/a" for 0 or unrepresentable values. */
char *format_timestamp(char *buf, size_t l, uint64_t usec);

/* "%*s: value\n", the key right-aligned to width, as in hostnamectl's status block. A NULL key prints only
 * the indentation, for continuation lines. */
void print_field(FILE *f, int width, const char *key, const char *format, ...) _printf_(4, 5) __attribute__((nonnull(4)));

typedef enum TableAlign {
        TABLE_ALIGN_LEFT,
        TABLE_ALIGN_RIGHT,
} TableAlign;

typedef struct Table Table;

/* A table with one column per header (NULL-terminated list). Cells are added left to right, top to
 * bottom; a row is complete when it has a cell for every column. */
Table *table_new_internal(const char *first_header, ...) __attribute__((sentinel));
#define table_new(...) table_new_internal(__VA_ARGS__, NULL)
Table *table_free(Table *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Table *, table_free);

int table_set_align(Table *t, size_t column, TableAlign align);

/* The text is copied; control characters are shown as \xNN so one cell stays on one line. */
int table_add_cell(Table *t, const char *text);
int table_add_cellf(Table *t, const char *format, ...) _printf_(2, 3);

size_t table_get_rows(const Table *t);

/* Columns are separated by one space, the last column is not padded. Returns -EINVAL if the last row is
 * incomplete. */
int table_print(const Table *t, FILE *f, bool header);
