/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>

#include "common/alloc-util.h"
#include "common/macro.h"
#include "fs/mount-fds.h"

int mount_fds_get(MountFds *c, uint64_t fsid) {
        int fd;

        for (size_t i = 0; i < c->n; i++)
                if (c->fsid[i] == fsid)
                        return c->fd[i];
        if (!c->open)
                return -ENODEV;
        fd = c->open(fsid, c->userdata);
        if (fd < 0)
                return fd;
        if (GREEDY_REALLOC(c->fsid, c->allocated_fsid, c->n + 1) < 0 ||
            GREEDY_REALLOC(c->fd, c->allocated_fd, c->n + 1) < 0) {
                safe_close(fd);
                return -ENOMEM;
        }
        c->fsid[c->n] = fsid;
        c->fd[c->n++] = fd;
        return fd;
}

void mount_fds_done(MountFds *c) {
        for (size_t i = 0; i < c->n; i++)
                safe_close(c->fd[i]);
        free(c->fsid);
        free(c->fd);
        c->fsid = NULL;
        c->fd = NULL;
        c->n = c->allocated_fsid = c->allocated_fd = 0;
}
