/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* A small streaming JSON writer. Values go straight to a FILE* as they are added; the writer only keeps a
 * stack of open containers so it can place commas, indentation and catch misuse (a value where a key is
 * due, a mismatched end, ...), which is reported as -EINVAL.
 *
 * Strings are written as valid JSON whatever the input bytes: '"', '\\' and control characters are escaped
 * (\n, \t, ... or \u00XX), DEL becomes \u007f, and every byte that is not part of a well-formed UTF-8
 * sequence (stray continuation bytes, truncated or overlong sequences, surrogates, code points above
 * U+10FFFF) becomes \ufffd, one per byte. Well-formed multi-byte UTF-8 is copied unchanged.
 *
 * Doubles that JSON cannot represent (NaN, infinities) are written as null.
 *
 * The top-level value ends with a newline in both formats. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/macro.h"

typedef enum JsonFormat {
        JSON_OFF,     /* no JSON: callers print human output instead */
        JSON_SHORT,   /* everything on one line, no spaces */
        JSON_PRETTY,  /* one member per line, two-space indent */
        _JSON_FORMAT_MAX,
        _JSON_FORMAT_INVALID = -EINVAL,
} JsonFormat;

/* "off", "short", "pretty" <-> JsonFormat. */
const char *json_format_to_string(JsonFormat f);
JsonFormat json_format_from_string(const char *s);

typedef struct JsonWriter JsonWriter;

/* The writer does not own f. format must be JSON_SHORT or JSON_PRETTY. Returns NULL on OOM/bad format. */
JsonWriter *json_writer_new(FILE *f, JsonFormat format);
JsonWriter *json_writer_free(JsonWriter *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(JsonWriter *, json_writer_free);

int json_begin_object(JsonWriter *w);
int json_end_object(JsonWriter *w);
int json_begin_array(JsonWriter *w);
int json_end_array(JsonWriter *w);

/* Inside an object, every value is preceded by exactly one json_key(). */
int json_key(JsonWriter *w, const char *key);

int json_string(JsonWriter *w, const char *s); /* NULL writes null */
int json_string_len(JsonWriter *w, const char *s, size_t n);
int json_int(JsonWriter *w, int64_t i);
int json_uint(JsonWriter *w, uint64_t u);
int json_double(JsonWriter *w, double d);
int json_bool(JsonWriter *w, bool b);
int json_null(JsonWriter *w);

/* key + value shorthands for objects. */
int json_key_string(JsonWriter *w, const char *key, const char *s);
int json_key_uint(JsonWriter *w, const char *key, uint64_t u);
int json_key_double(JsonWriter *w, const char *key, double d);
int json_key_bool(JsonWriter *w, const char *key, bool b);
int json_key_null(JsonWriter *w, const char *key);

/* Check that exactly one complete top-level value was written and flush the stream. Returns -EINVAL if
 * containers are still open or nothing was written, -EIO (or the stream's errno) if writing failed. */
int json_writer_finish(JsonWriter *w);

/* Write s (n bytes) as a quoted, escaped JSON string. Exposed for tests and one-off use. */
int json_write_escaped(FILE *f, const char *s, size_t n);

/* The length of the well-formed UTF-8 sequence at s (at most left > 0 bytes), or 0 if the byte at s does
 * not start one. What the string escaping above (and seeklessctl's SVG writer) rely on. */
size_t utf8_sequence_len(const char *s, size_t left);
