/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/alloc-util.h"
#include "record/boot-seed.h"
#include "fs/fid-util.h"
#include "common/macro.h"

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

        return (x > y) - (x < y);
}

/* The pids under proc, ascending. */
static int list_pids(const char *proc, pid_t **ret, size_t *ret_n) {
        _cleanup_closedir_ DIR *d = opendir(proc);
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0, allocated = 0;
        struct dirent *de;

        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                char *end;
                long v;

                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                errno = 0;
                v = strtol(de->d_name, &end, 10);
                if (errno != 0 || *end || v <= 0)
                        continue;
                if (GREEDY_REALLOC(pids, allocated, n + 1) < 0)
                        return -ENOMEM;
                pids[n++] = (pid_t) v;
        }
        qsort_safe(pids, n, sizeof *pids, cmp_pid);
        *ret = TAKE_PTR(pids);
        *ret_n = n;
        return 0;
}

/* One maps line: "START-END PERMS OFFSET MAJ:MIN INODE   PATH". Returns the path (inside line) of a file
 * mapped to be read, else NULL. Shared writable mappings are files being written (journal files, SQLite's
 * -shm, our own database's included), not what the boot reads. */
static const char *parse_maps_line(char *line, dev_t *ret_dev, uint64_t *ret_ino) {
        unsigned maj, min;
        uint64_t ino;
        char perms[5], *path;
        size_t l;
        int pos = 0;

        if (sscanf(line, "%*s %4s %*s %x:%x %" SCNu64 " %n", perms, &maj, &min, &ino, &pos) != 4 || pos == 0 ||
            ino == 0)
                return NULL;
        if (perms[1] == 'w' && perms[3] == 's')
                return NULL;
        path = line + pos;
        l = strlen(path);
        if (l > 0 && path[l - 1] == '\n')
                path[--l] = 0;
        if (path[0] != '/' || (l > 10 && streq(path + l - 10, " (deleted)")))
                return NULL;
        *ret_dev = makedev(maj, min);
        *ret_ino = ino;
        return path;
}

/* Adds the files one process maps; returns how many were new to the session. */
static int seed_one(Session *s, const FilesystemList *watched, const char *proc, pid_t pid, uint64_t now_usec) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL, *last = NULL;
        char maps[4096];
        size_t size = 0;
        int added = 0;

        snprintf(maps, sizeof maps, "%s/%i/maps", proc, (int) pid);
        f = fopen(maps, "re");
        if (!f)
                return 0;       /* exited meanwhile, or a kernel thread we may not look at */
        while (getline(&line, &size, f) > 0) {
                _cleanup_close_ int fd = -EBADF;
                const char *path;
                struct stat st;
                FileKey key;
                uint64_t ino;
                dev_t dev;

                path = parse_maps_line(line, &dev, &ino);
                /* a file is mapped in several pieces, one after the other */
                if (!path || (last && streq(last, path)))
                        continue;
                free(last);
                last = strdup(path);
                if (!last)
                        return -ENOMEM;

                fd = open(path, O_PATH | O_CLOEXEC);
                if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                        continue;
                /* the path is read in our mount namespace: it must still name the inode the process maps */
                if (st.st_dev != dev || (uint64_t) st.st_ino != ino)
                        continue;
                if (file_key_from_fd(fd, &key) < 0 || !filesystem_list_find_fsid(watched, key.fsid))
                        continue;
                if (session_add(s, &key, now_usec) > 0)
                        added++;
        }
        return added;
}

int boot_seed_from_maps(Session *s, const FilesystemList *watched, const char *proc, pid_t only_pid, uint64_t now_usec) {
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0;
        int r, added = 0;

        if (only_pid > 0)
                return seed_one(s, watched, proc, only_pid, now_usec);
        r = list_pids(proc, &pids, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                r = seed_one(s, watched, proc, pids[i], now_usec);
                if (r < 0)
                        return r;
                added += r;
        }
        return added;
}
