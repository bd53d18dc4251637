/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/escape.h"
#include "common/log.h"

/* What /dev/kmsg takes of one write at most (the kernel's printk line limit, 1024 less its prefix). */
#define KMSG_RECORD_MAX 976

static int max_level = LOG_INFO;
static bool prefix = false;
static int kmsg_fd = -1, kmsg_max_level = LOG_DEBUG;
static const char *kmsg_ident;
static FILE *log_file;

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
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

int log_open_kmsg(const char *ident, int kmsg_level) {
        /* the kernel's device only: never a file made in its place */
        int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        struct stat st;

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode)) {
                close(fd);
                return -ENODEV;
        }
        kmsg_fd = fd;
        kmsg_ident = ident;
        kmsg_max_level = kmsg_level;
        return 0;
}

int log_open_file(const char *path) {
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);

        if (fd < 0)
                return -errno;
        log_file = fdopen(fd, "a");
        if (!log_file) {
                close(fd);
                return -ENOMEM;
        }
        setvbuf(log_file, NULL, _IOLBF, 0);
        return 0;
}

void log_escape(const char *in, char *out, size_t size) {
        (void) escape_into(in, out, size, ESCAPE_KEEP_TAB);
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
        if (log_file)
                fprintf(log_file, "<%d>%s\n", level, out);
        if (kmsg_fd >= 0) {
                /* one record a write; the facility is user (1 << 3) */
                char rec[sizeof out + 96];
                int k;

                if (level > kmsg_max_level)
                        return;
                k = snprintf(rec, sizeof rec, "<%d>%s: %s\n", LOG_USER | level, kmsg_ident, out);
                /* the kernel refuses a longer record whole */
                if (k > KMSG_RECORD_MAX) {
                        memcpy(rec + KMSG_RECORD_MAX - 4, "...\n", 4);
                        k = KMSG_RECORD_MAX;
                }
                if (k > 0)
                        (void) !write(kmsg_fd, rec, (size_t) k);
        } else if (log_file)
                return;
        else if (prefix)
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
