/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>

#include "common/macro.h"
#include "fs/mount-fds.h"

int mount_fds_get(MountFds *c, uint64_t fsid) {
        uint64_t *nf;
        int *nd, fd;

        for (size_t i = 0; i < c->n; i++)
                if (c->fsid[i] == fsid)
                        return c->fd[i];
        if (!c->open)
                return -ENODEV;
        fd = c->open(fsid, c->userdata);
        if (fd < 0)
                return fd;
        nf = reallocarray(c->fsid, c->n + 1, sizeof *nf);
        if (nf)
                c->fsid = nf;
        nd = reallocarray(c->fd, c->n + 1, sizeof *nd);
        if (nd)
                c->fd = nd;
        if (!nf || !nd) {
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
        c->n = 0;
}
