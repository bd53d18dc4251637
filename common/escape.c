/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/escape.h"

size_t utf8_sequence(const unsigned char *s, size_t n) {
        size_t len;
        unsigned char lo = 0x80, hi = 0xbf;

        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                len = 2;
        else if (s[0] >= 0xe0 && s[0] <= 0xef) {
                len = 3;
                if (s[0] == 0xe0)
                        lo = 0xa0;      /* overlong */
                else if (s[0] == 0xed)
                        hi = 0x9f;      /* surrogates */
        } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
                len = 4;
                if (s[0] == 0xf0)
                        lo = 0x90;
                else if (s[0] == 0xf4)
                        hi = 0x8f;      /* past U+10FFFF */
        } else
                return 0;
        if (len > n || s[1] < lo || s[1] > hi)
                return 0;
        for (size_t i = 2; i < len; i++)
                if (s[i] < 0x80 || s[i] > 0xbf)
                        return 0;
        return len;
}

static const char hex[] = "0123456789abcdef";

size_t escape_into(const char *in, char *out, size_t size, EscapeFlags flags) {
        const unsigned char *s = (const unsigned char *) in;
        size_t n = strlen(in), i = 0, o = 0;

        if (size == 0)
                return 0;
        while (i < n) {
                size_t l = s[i] >= 0x80 ? utf8_sequence(s + i, n - i) : 0;

                if (l > 0) {
                        if (o + l >= size)
                                break;
                        memcpy(out + o, s + i, l);
                        o += l;
                        i += l;
                        continue;
                }
                if (s[i] == '\\') {
                        if (o + 2 >= size)
                                break;
                        out[o++] = '\\';
                        out[o++] = '\\';
                } else if ((s[i] < 0x20 && !(s[i] == '\t' && (flags & ESCAPE_KEEP_TAB))) || s[i] >= 0x7f) {
                        if (o + 4 >= size)
                                break;
                        out[o++] = '\\';
                        out[o++] = 'x';
                        out[o++] = hex[s[i] >> 4];
                        out[o++] = hex[s[i] & 15];
                } else {
                        if (o + 1 >= size)
                                break;
                        out[o++] = (char) s[i];
                }
                i++;
        }
        out[o] = 0;
        return i;
}

char *path_escape(const char *path) {
        size_t size = 4 * strlen(path) + 1;
        char *out = malloc(size);

        if (!out)
                return NULL;
        escape_into(path, out, size, 0);
        return out;
}

static int unhex(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int path_unescape(const char *escaped, char **ret) {
        size_t n = strlen(escaped), o = 0;
        char *out = malloc(n + 1);

        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                int h, l;

                if (escaped[i] != '\\') {
                        out[o++] = escaped[i];
                        continue;
                }
                if (escaped[i + 1] == '\\') {
                        out[o++] = '\\';
                        i++;
                        continue;
                }
                if (escaped[i + 1] != 'x' || (h = unhex(escaped[i + 2])) < 0 || (l = unhex(escaped[i + 3])) < 0 ||
                    (h == 0 && l == 0)) {
                        free(out);
                        return -EINVAL;
                }
                out[o++] = (char) (h << 4 | l);
                i += 3;
        }
        out[o] = 0;
        *ret = out;
        return 0;
}

bool escape_is_clean(const char *s) {
        const unsigned char *u = (const unsigned char *) s;
        size_t n = strlen(s);

        for (size_t i = 0; i < n;) {
                size_t l;

                if (u[i] < 0x20 || u[i] == 0x7f)
                        return false;
                if (u[i] < 0x80) {
                        i++;
                        continue;
                }
                l = utf8_sequence(u + i, n - i);
                if (l == 0)
                        return false;
                i += l;
        }
        return true;
}

/* The code point of the valid sequence of l bytes at s. */
static uint32_t code_point(const unsigned char *s, size_t l) {
        uint32_t c = s[0] & (l == 2 ? 0x1f : l == 3 ? 0x0f : 0x07);

        for (size_t i = 1; i < l; i++)
                c = c << 6 | (s[i] & 0x3f);
        return c;
}

static unsigned columns_of(uint32_t c) {
        static const struct { uint32_t lo, hi; } zero[] = {
                { 0x0300, 0x036f }, { 0x200b, 0x200f }, { 0x20d0, 0x20ff }, { 0xfe00, 0xfe0f },
                { 0xfe20, 0xfe2f },
        }, wide[] = {
                { 0x1100, 0x115f }, { 0x2e80, 0x303e }, { 0x3041, 0x33ff }, { 0x3400, 0x4dbf },
                { 0x4e00, 0x9fff }, { 0xa000, 0xa4cf }, { 0xac00, 0xd7a3 }, { 0xf900, 0xfaff },
                { 0xfe30, 0xfe4f }, { 0xff00, 0xff60 }, { 0xffe0, 0xffe6 }, { 0x1f300, 0x1f64f },
                { 0x1f900, 0x1f9ff }, { 0x20000, 0x2fffd }, { 0x30000, 0x3fffd },
        };

        for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++)
                if (c >= zero[i].lo && c <= zero[i].hi)
                        return 0;
        for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
                if (c >= wide[i].lo && c <= wide[i].hi)
                        return 2;
        return 1;
}

size_t utf8_columns(const char *s) {
        const unsigned char *u = (const unsigned char *) s;
        size_t n = strlen(s), cols = 0;

        for (size_t i = 0; i < n;) {
                size_t l = u[i] >= 0x80 ? utf8_sequence(u + i, n - i) : 0;

                if (l == 0) {
                        cols++;
                        i++;
                        continue;
                }
                cols += columns_of(code_point(u + i, l));
                i += l;
        }
        return cols;
}
