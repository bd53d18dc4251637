/* SPDX-License-Identifier: GPL-2.0-or-later */

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/macro.h"
#include "fs/block-device.h"

int block_device_open(dev_t dev) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        _cleanup_close_ int fd = -EBADF;
        char path[128];
        size_t sz = 0;
        struct stat st;

        snprintf(path, sizeof path, "/sys/dev/block/%u:%u/uevent", major(dev), minor(dev));
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (getline(&line, &sz, f) > 0) {
                const char *name;

                if (!startswith(line, "DEVNAME="))
                        continue;
                name = line + strlen("DEVNAME=");
                line[strcspn(line, "\n")] = 0;
                if (!*name || strstr(name, "..") ||
                    (size_t) snprintf(path, sizeof path, "/dev/%s", name) >= sizeof path)
                        return -EBADMSG;
                fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                if (fstat(fd, &st) < 0)
                        return -errno;
                if (!S_ISBLK(st.st_mode) || st.st_rdev != dev)
                        return -ENODEV;
                return TAKE_FD(fd);
        }
        return -ENOENT;
}
