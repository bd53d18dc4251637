/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

/* Deep enough for anything seeklessctl writes; deeper nesting is a bug in the caller. */
#define JSON_DEPTH_MAX 32U

typedef struct JsonLevel {
        bool object;       /* object or array */
        bool key_pending;  /* object: a key was written, its value is due */
        size_t n;          /* members/elements written so far */
} JsonLevel;

struct JsonWriter {
        FILE *f;
        JsonFormat format;
        bool top_done;     /* the one top-level value is complete */
        unsigned depth;
        JsonLevel stack[JSON_DEPTH_MAX];
};

static const char *const json_format_table[_JSON_FORMAT_MAX] = {
        [JSON_OFF] = "off",
        [JSON_SHORT] = "short",
        [JSON_PRETTY] = "pretty",
};

const char *json_format_to_string(JsonFormat f) {
        if (f < 0 || f >= _JSON_FORMAT_MAX)
                return NULL;
        return json_format_table[f];
}

JsonFormat json_format_from_string(const char *s) {
        if (!s)
                return _JSON_FORMAT_INVALID;
        for (size_t i = 0; i < _JSON_FORMAT_MAX; i++)
                if (streq(s, json_format_table[i]))
                        return (JsonFormat) i;
        return _JSON_FORMAT_INVALID;
}

JsonWriter *json_writer_new(FILE *f, JsonFormat format) {
        JsonWriter *w;

        if (!f || (format != JSON_SHORT && format != JSON_PRETTY))
                return NULL;

        w = calloc(1, sizeof *w);
        if (!w)
                return NULL;
        w->f = f;
        w->format = format;
        return w;
}

JsonWriter *json_writer_free(JsonWriter *w) {
        free(w);
        return NULL;
}

static bool pretty(const JsonWriter *w) {
        return w->format == JSON_PRETTY;
}

static void newline_indent(JsonWriter *w, unsigned depth) {
        fputc('\n', w->f);
        for (unsigned i = 0; i < depth; i++)
                fputs("  ", w->f);
}

/* Follows the table in Unicode 15, section 3.9 (D92). */
size_t utf8_sequence_len(const char *s, size_t left) {
        const unsigned char *p = (const unsigned char *) s;
        unsigned char c = p[0], lo = 0x80, hi = 0xBF;
        size_t len;

        if (c < 0x80)
                return 1;
        if (c >= 0xC2 && c <= 0xDF)
                len = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
                len = 3;
                if (c == 0xE0)
                        lo = 0xA0;      /* overlong */
                else if (c == 0xED)
                        hi = 0x9F;      /* UTF-16 surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
                len = 4;
                if (c == 0xF0)
                        lo = 0x90;      /* overlong */
                else if (c == 0xF4)
                        hi = 0x8F;      /* above U+10FFFF */
        } else
                return 0;               /* continuation byte, C0, C1, F5..FF */

        if (left < len)
                return 0;
        if (p[1] < lo || p[1] > hi)
                return 0;
        for (size_t i = 2; i < len; i++)
                if (p[i] < 0x80 || p[i] > 0xBF)
                        return 0;
        return len;
}

int json_write_escaped(FILE *f, const char *s, size_t n) {
        const unsigned char *p = (const unsigned char *) s;

        fputc('"', f);
        for (size_t i = 0; i < n;) {
                unsigned char c = p[i];
                size_t len;

                switch (c) {
                case '"':  fputs("\\\"", f); i++; continue;
                case '\\': fputs("\\\\", f); i++; continue;
                case '\b': fputs("\\b", f);  i++; continue;
                case '\f': fputs("\\f", f);  i++; continue;
                case '\n': fputs("\\n", f);  i++; continue;
                case '\r': fputs("\\r", f);  i++; continue;
                case '\t': fputs("\\t", f);  i++; continue;
                }

                if (c < 0x20 || c == 0x7F) {
                        fprintf(f, "\\u%04x", c);
                        i++;
                        continue;
                }

                len = utf8_sequence_len(s + i, n - i);
                if (len == 0) {
                        /* Replace one byte and resynchronise on the next one. */
                        fputs("\\ufffd", f);
                        i++;
                        continue;
                }
                fwrite(p + i, 1, len, f);
                i += len;
        }
        fputc('"', f);

        return ferror(f) ? -EIO : 0;
}

/* Everything that precedes a value: checks the state, then writes separator and indentation. */
static int value_begin(JsonWriter *w) {
        JsonLevel *l;

        if (w->depth == 0) {
                if (w->top_done)
                        return -EINVAL;
                return 0;
        }

        l = &w->stack[w->depth - 1];
        if (l->object) {
                if (!l->key_pending)
                        return -EINVAL;
                l->key_pending = false;
                return 0;
        }

        if (l->n > 0)
                fputc(',', w->f);
        if (pretty(w))
                newline_indent(w, w->depth);
        l->n++;
        return 0;
}

static void value_end(JsonWriter *w) {
        if (w->depth == 0)
                w->top_done = true;
}

static int container_begin(JsonWriter *w, bool object) {
        int r;

        if (w->depth >= JSON_DEPTH_MAX)
                return -E2BIG;
        r = value_begin(w);
        if (r < 0)
                return r;

        fputc(object ? '{' : '[', w->f);
        w->stack[w->depth++] = (JsonLevel) { .object = object };
        return 0;
}

static int container_end(JsonWriter *w, bool object) {
        JsonLevel *l;

        if (w->depth == 0)
                return -EINVAL;
        l = &w->stack[w->depth - 1];
        if (l->object != object || l->key_pending)
                return -EINVAL;

        w->depth--;
        if (l->n > 0 && pretty(w))
                newline_indent(w, w->depth);
        fputc(object ? '}' : ']', w->f);
        value_end(w);
        return 0;
}

int json_begin_object(JsonWriter *w) {
        return container_begin(w, true);
}

int json_end_object(JsonWriter *w) {
        return container_end(w, true);
}

int json_begin_array(JsonWriter *w) {
        return container_begin(w, false);
}

int json_end_array(JsonWriter *w) {
        return container_end(w, false);
}

int json_key(JsonWriter *w, const char *key) {
        JsonLevel *l;
        int r;

        if (!key || w->depth == 0)
                return -EINVAL;
        l = &w->stack[w->depth - 1];
        if (!l->object || l->key_pending)
                return -EINVAL;

        if (l->n > 0)
                fputc(',', w->f);
        if (pretty(w))
                newline_indent(w, w->depth);
        r = json_write_escaped(w->f, key, strlen(key));
        if (r < 0)
                return r;
        fputs(pretty(w) ? ": " : ":", w->f);

        l->n++;
        l->key_pending = true;
        return 0;
}

/* Write a scalar whose text is already valid JSON. */
static int scalar(JsonWriter *w, const char *text) {
        int r;

        r = value_begin(w);
        if (r < 0)
                return r;
        fputs(text, w->f);
        value_end(w);
        return 0;
}

int json_string_len(JsonWriter *w, const char *s, size_t n) {
        int r;

        if (!s)
                return json_null(w);

        r = value_begin(w);
        if (r < 0)
                return r;
        r = json_write_escaped(w->f, s, n);
        value_end(w);
        return r;
}

int json_string(JsonWriter *w, const char *s) {
        return json_string_len(w, s, s ? strlen(s) : 0);
}

int json_int(JsonWriter *w, int64_t i) {
        char buf[32];

        (void) snprintf(buf, sizeof buf, "%" PRId64, i);
        return scalar(w, buf);
}

int json_uint(JsonWriter *w, uint64_t u) {
        char buf[32];

        (void) snprintf(buf, sizeof buf, "%" PRIu64, u);
        return scalar(w, buf);
}

int json_double(JsonWriter *w, double d) {
        char buf[64];

        if (!isfinite(d))
                return json_null(w);

        /* The shortest form that reads back as the same double: 0.1 stays "0.1", not "0.10000000000000001". */
        for (int prec = 1; prec <= 17; prec++) {
                (void) snprintf(buf, sizeof buf, "%.*g", prec, d);
                if (strtod(buf, NULL) == d)
                        break;
        }

        /* A locale with a decimal comma must not leak into JSON. */
        for (char *p = buf; *p; p++)
                if (*p == ',')
                        *p = '.';

        return scalar(w, buf);
}

int json_bool(JsonWriter *w, bool b) {
        return scalar(w, b ? "true" : "false");
}

int json_null(JsonWriter *w) {
        return scalar(w, "null");
}

int json_key_string(JsonWriter *w, const char *key, const char *s) {
        int r = json_key(w, key);
        return r < 0 ? r : json_string(w, s);
}

int json_key_uint(JsonWriter *w, const char *key, uint64_t u) {
        int r = json_key(w, key);
        return r < 0 ? r : json_uint(w, u);
}

int json_key_double(JsonWriter *w, const char *key, double d) {
        int r = json_key(w, key);
        return r < 0 ? r : json_double(w, d);
}

int json_key_bool(JsonWriter *w, const char *key, bool b) {
        int r = json_key(w, key);
        return r < 0 ? r : json_bool(w, b);
}

int json_key_null(JsonWriter *w, const char *key) {
        int r = json_key(w, key);
        return r < 0 ? r : json_null(w);
}

int json_writer_finish(JsonWriter *w) {
        if (w->depth > 0 || !w->top_done)
                return -EINVAL;

        fputc('\n', w->f);
        if (fflush(w->f) != 0)
                return negative_errno();
        if (ferror(w->f))
                return -EIO;
        return 0;
}
