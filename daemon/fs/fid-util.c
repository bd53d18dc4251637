/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fid-util.h"
#include "common/macro.h"
#include "fs/mounts.h"

/* ext4 encodes FILEID_INO32_GEN (type 1) as { u32 ino; u32 gen; } */
#define FILEID_INO32_GEN 1

int file_key_from_fd(int fd, FileKey *ret) {
        union {
                struct file_handle fh;
                uint8_t buf[sizeof(struct file_handle) + MAX_HANDLE_SZ];
        } u = { .fh.handle_bytes = MAX_HANDLE_SZ };
        FileKey k = {};
        int mount_id, r;

        if (name_to_handle_at(fd, "", &u.fh, &mount_id, AT_EMPTY_PATH) < 0)
                return -errno;
        if (u.fh.handle_bytes > FID_HANDLE_MAX)
                return -EOVERFLOW;
        r = fsid_of_fd(fd, &k.fsid);
        if (r < 0)
                return r;
        k.handle_type = u.fh.handle_type;
        k.handle_len = u.fh.handle_bytes;
        memcpy(k.handle, u.fh.f_handle, u.fh.handle_bytes);
        *ret = k;
        return 0;
}

void file_key_ino_gen(const FileKey *key, uint64_t *ret_ino, uint32_t *ret_gen) {
        uint32_t v[2] = {};

        if (key->handle_type == FILEID_INO32_GEN && key->handle_len >= sizeof v)
                memcpy(v, key->handle, sizeof v);
        *ret_ino = v[0];
        *ret_gen = v[1];
}

int fd_get_path(int fd, char **ret) {
        char proc[64], buf[PATH_MAX + 16];
        ssize_t n;

        snprintf(proc, sizeof proc, "/proc/self/fd/%i", fd);
        n = readlink(proc, buf, sizeof buf - 1);
        if (n < 0)
                return -errno;
        if ((size_t) n >= sizeof buf - 1)
                return -ENAMETOOLONG;
        buf[n] = 0;
        if (buf[0] != '/')
                return -ENOENT;   /* anon inode, pipe, ... */
        if (n > 10 && streq(buf + n - 10, " (deleted)"))
                return -ENOENT;
        *ret = strdup(buf);
        return *ret ? 0 : -ENOMEM;
}

int fd_get_verified_path(int fd, char **ret) {
        _cleanup_free_ char *p = NULL;
        struct stat st, pst;
        int r;

        if (fstat(fd, &st) < 0)
                return -errno;
        /* A handle opened while the file's dentry is not cached gives a "disconnected" dentry, which
         * /proc/self/fd shows as "/" (or a path that is not this file). Only trust a path that leads back
         * to this very inode; otherwise report none. */
        r = fd_get_path(fd, &p);
        if (r < 0)
                return r;
        if (stat(p, &pst) < 0 || pst.st_dev != st.st_dev || pst.st_ino != st.st_ino)
                p = mfree(p);
        *ret = TAKE_PTR(p);
        return 0;
}

int file_key_resolve(int mount_fd, const FileKey *key, struct stat *ret_st, char **ret_path) {
        union {
                struct file_handle fh;
                uint8_t buf[sizeof(struct file_handle) + FID_HANDLE_MAX];
        } u;
        _cleanup_close_ int fd = -EBADF;

        u.fh.handle_bytes = key->handle_len;
        u.fh.handle_type = key->handle_type;
        memcpy(u.fh.f_handle, key->handle, key->handle_len);

        fd = open_by_handle_at(mount_fd, &u.fh, O_PATH | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESTALE : -errno;
        return file_key_check_fd(fd, ret_st, ret_path);
}

int file_key_check_fd(int fd, struct stat *ret_st, char **ret_path) {
        struct stat st;
        int r;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADE;
        if (st.st_nlink == 0)
                return -ESTALE;
        if (ret_path) {
                r = fd_get_verified_path(fd, ret_path);
                if (r == -ENOENT)
                        return -ESTALE;
                if (r < 0)
                        return r;
        }
        if (ret_st)
                *ret_st = st;
        return 0;
}

int file_key_name_in_dir(int mount_fd, const FileKey *dir, const char *name, const struct stat *st, char **ret) {
        _cleanup_free_ char *d = NULL;
        _cleanup_close_ int dfd = -EBADF;
        struct stat fst;
        char *p;
        int r;

        *ret = NULL;
        if (!name[0] || strchr(name, '/') || streq(name, ".") || streq(name, ".."))
                return -EINVAL;
        /* a directory's handle is always reconnected to the tree: /proc/self/fd names it */
        dfd = file_key_open(mount_fd, dir, O_PATH | O_DIRECTORY);
        if (dfd < 0)
                return dfd;
        if (fstatat(dfd, name, &fst, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? -ESTALE : -errno;
        /* renamed, or the name now belongs to another file */
        if (fst.st_dev != st->st_dev || fst.st_ino != st->st_ino)
                return -ESTALE;
        r = fd_get_verified_path(dfd, &d);
        if (r < 0)
                return r;
        if (!d)
                return -ENOENT;
        if (asprintf(&p, "%s/%s", streq(d, "/") ? "" : d, name) < 0)
                return -ENOMEM;
        *ret = p;
        return 0;
}

int file_key_open(int mount_fd, const FileKey *key, int flags) {
        union {
                struct file_handle fh;
                uint8_t buf[sizeof(struct file_handle) + FID_HANDLE_MAX];
        } u;
        int fd;

        u.fh.handle_bytes = key->handle_len;
        u.fh.handle_type = key->handle_type;
        memcpy(u.fh.f_handle, key->handle, key->handle_len);
        /* O_NOATIME: looking must not change what we look at (needs ownership or CAP_FOWNER) */
        fd = open_by_handle_at(mount_fd, &u.fh, flags | O_CLOEXEC | O_NOATIME);
        if (fd < 0 && errno == EPERM)
                fd = open_by_handle_at(mount_fd, &u.fh, flags | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESTALE : -errno;
        return fd;
}
