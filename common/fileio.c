/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/macro.h"

ssize_t read_small_file_at(int dfd, const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;
        size_t n = 0;

        fd = openat(dfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();

        for (;;) {
                ssize_t k;

                if (n >= size - 1)
                        return -EFBIG;
                k = read(fd, buf + n, size - 1 - n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }

        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
                n--;
        buf[n] = '\0';
        return (ssize_t) n;
}

ssize_t read_small_file(const char *path, char *buf, size_t size) {
        return read_small_file_at(AT_FDCWD, path, buf, size);
}
