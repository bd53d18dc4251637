/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"

static int max_level = LOG_INFO;
static bool prefix = false;

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

void log_set_prefix(bool b) {
        prefix = b;
}

/* Use journald's priority prefixes only when our stderr really is the journal stream. */
void log_open(void) {
        const char *e = getenv("JOURNAL_STREAM");
        struct stat st;
        unsigned long long dev, ino;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
                return;
        if (fstat(STDERR_FILENO, &st) < 0)
                return;
        prefix = (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
}

/* Length of the valid UTF-8 sequence of more than one byte at s (at most n bytes there), or 0. */
static size_t utf8_sequence(const unsigned char *s, size_t n) {
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

void log_escape(const char *in, char *out, size_t size) {
        const unsigned char *s = (const unsigned char *) in;
        size_t n = strlen(in), o = 0;

        for (size_t i = 0; i < n && o + 5 <= size;) {
                size_t l = s[i] >= 0x80 ? utf8_sequence(s + i, n - i) : 0;

                if (l > 0 && o + l < size) {
                        memcpy(out + o, s + i, l);
                        o += l;
                        i += l;
                        continue;
                }
                if (s[i] == '\\') {
                        out[o++] = '\\';
                        out[o++] = '\\';
                } else if ((s[i] < 0x20 && s[i] != '\t') || s[i] >= 0x7f)
                        o += (size_t) snprintf(out + o, size - o, "\\x%02x", s[i]);
                else
                        out[o++] = (char) s[i];
                i++;
        }
        out[o] = 0;
}

static void log_write(int level, int error, const char *format, va_list ap) {
        char buf[LOG_LINE_MAX + 1], out[4 * LOG_LINE_MAX + 8];
        int saved = errno, n;

        /* make %m print the error we were given, not whatever errno happens to be */
        errno = abs(error);
        n = vsnprintf(buf, sizeof buf, format, ap);
        errno = saved;

        /* one line, whatever a file name or a configuration value holds */
        log_escape(buf, out, sizeof out);
        if (n > LOG_LINE_MAX)
                strcat(out, "...");
        if (prefix)
                fprintf(stderr, "<%d>%s\n", level, out);
        else
                fprintf(stderr, "%s\n", out);
}

int log_internal(int level, int error, const char *file, int line, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        log_write(level, error, format, ap);
        va_end(ap);
        return -abs(error);
}

int log_syntax_internal(const char *file, unsigned line, const char *format, ...) {
        char buf[LOG_LINE_MAX + 1];
        va_list ap;

        va_start(ap, format);
        vsnprintf(buf, sizeof buf, format, ap);
        va_end(ap);
        (void) log_internal(LOG_WARNING, 0, __FILE__, __LINE__, "%s:%u: %s", file, line, buf);
        return 0;
}
