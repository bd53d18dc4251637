/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc-util.h"
#include "common/macro.h"
#include "initramfs/initramfs-status.h"

typedef enum Field {
        FIELD_TEXT,
        FIELD_NUMBER,
} Field;

typedef struct Key {
        const char *name;
        Field type;
        size_t offset, size;
} Key;

#define TEXT(n, f) { n, FIELD_TEXT, offsetof(InitramfsStatus, f), sizeof(((InitramfsStatus *) 0)->f) }
#define NUMBER(n, f) { n, FIELD_NUMBER, offsetof(InitramfsStatus, f), sizeof(uint64_t) }
static const Key keys[] = {
        TEXT("OUTCOME", outcome),
        TEXT("SUMMARY", summary),
        TEXT("EARLY_OUTCOME", early_outcome),
        TEXT("EARLY_SUMMARY", early_summary),
        NUMBER("PREFETCH_BYTES", prefetch_bytes),
        NUMBER("PREFETCH_CACHED_BYTES", prefetch_cached_bytes),
        NUMBER("PREFETCH_USEC", prefetch_usec),
        NUMBER("EARLY_QUEUED", early_queued),
        NUMBER("EARLY_MOVED", early_moved),
        NUMBER("EARLY_USEC", early_usec),
        NUMBER("TOTAL_USEC", total_usec),
        NUMBER("ROOT_FSID", root_fsid),
};
#undef TEXT
#undef NUMBER

int initramfs_status_format(const InitramfsStatus *s, char *buf, size_t size) {
        size_t n = 0;

        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                const char *field = (const char *) s + keys[i].offset;
                int k;

                if (keys[i].type == FIELD_NUMBER)
                        k = snprintf(buf + n, size - n, "%s=%" PRIu64 "\n", keys[i].name,
                                     *(const uint64_t *) (const void *) field);
                else {
                        char v[sizeof s->summary];

                        /* one line, whatever the text holds */
                        snprintf(v, sizeof v, "%.*s", (int) keys[i].size, field);
                        for (char *c = v; *c; c++)
                                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                                        *c = ' ';
                        k = snprintf(buf + n, size - n, "%s=%s\n", keys[i].name, v);
                }
                if (k < 0 || (size_t) k >= size - n)
                        return -ENOBUFS;
                n += (size_t) k;
        }
        return (int) n;
}

int initramfs_status_parse(const char *text, size_t n, InitramfsStatus *ret) {
        const char *p = text, *end = text + n;
        bool any = false;

        *ret = (InitramfsStatus) {};
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p)), *eq;
                size_t len = nl ? (size_t) (nl - p) : (size_t) (end - p);

                eq = memchr(p, '=', len);
                for (size_t i = 0; eq && i < ELEMENTSOF(keys); i++) {
                        char *field = (char *) ret + keys[i].offset;
                        size_t kl = strlen(keys[i].name), vl = len - (size_t) (eq - p) - 1;

                        if ((size_t) (eq - p) != kl || memcmp(p, keys[i].name, kl) != 0)
                                continue;
                        if (keys[i].type == FIELD_NUMBER) {
                                char v[24];
                                char *e;

                                if (vl == 0 || vl >= sizeof v)
                                        break;
                                memcpy(v, eq + 1, vl);
                                v[vl] = 0;
                                errno = 0;
                                *(uint64_t *) (void *) field = strtoull(v, &e, 10);
                                if (errno != 0 || *e)
                                        *(uint64_t *) (void *) field = 0;
                        } else {
                                vl = MIN(vl, keys[i].size - 1);
                                memcpy(field, eq + 1, vl);
                                field[vl] = 0;
                                for (size_t c = 0; c < vl; c++)
                                        if ((unsigned char) field[c] < 0x20 || field[c] == 0x7f)
                                                field[c] = ' ';
                                any = any || i == 0;
                        }
                        break;
                }
                p += len + 1;
        }
        return any && ret->outcome[0] ? 0 : -EBADMSG;
}

int initramfs_status_write(const char *path, const InitramfsStatus *s) {
        _cleanup_free_ char *dir = strdup(path), *tmp = NULL;
        _cleanup_close_ int fd = -EBADF;
        char buf[2048], *slash;
        int n;

        if (!dir || asprintf(&tmp, "%s.tmp", path) < 0)
                return -ENOMEM;
        slash = strrchr(dir, '/');
        if (slash && slash != dir) {
                *slash = 0;
                if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                        return -errno;
        }
        n = initramfs_status_format(s, buf, sizeof buf);
        if (n < 0)
                return n;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return -errno;
        if (write(fd, buf, (size_t) n) != n)
                return errno > 0 ? -errno : -EIO;
        fd = safe_close(fd);
        if (rename(tmp, path) < 0)
                return -errno;
        return 0;
}

int initramfs_status_read(const char *path, InitramfsStatus *ret) {
        _cleanup_close_ int fd = -EBADF;
        char buf[4096];
        ssize_t n;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, sizeof buf);
        if (n < 0)
                return -errno;
        return initramfs_status_parse(buf, (size_t) n, ret);
}
