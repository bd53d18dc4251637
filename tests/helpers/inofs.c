/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Test program: a FUSE filesystem of one file whose inode number is chosen (the forged-metadata test of
 * page recording, tests/test-pagecache.c).
 *   inofs INO SIZE MOUNTPOINT
 * runs in the foreground until unmounted (or SIGTERM) and serves MOUNTPOINT/f: SIZE bytes of a pattern
 * (byte i is i % 251), read through the kernel's page cache (no direct_io), with inode number INO (use_ino).
 * A file of a FUSE filesystem whose inode number is a block device's number looks, to the page-cache
 * tracepoint, like that device's own pages but for the filesystem's device number (doc/kernel.md §5). */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static uint64_t arg_ino, arg_size;

static int ino_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
        memset(st, 0, sizeof *st);
        if (strcmp(path, "/") == 0) {
                st->st_mode = S_IFDIR | 0755;
                st->st_nlink = 2;
                st->st_ino = 1;
                return 0;
        }
        if (strcmp(path, "/f") == 0) {
                st->st_mode = S_IFREG | 0644;
                st->st_nlink = 1;
                st->st_ino = (ino_t) arg_ino;
                st->st_size = (off_t) arg_size;
                return 0;
        }
        return -ENOENT;
}

static int ino_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info *fi,
                       enum fuse_readdir_flags flags) {
        if (strcmp(path, "/") != 0)
                return -ENOENT;
        fill(buf, ".", NULL, 0, 0);
        fill(buf, "..", NULL, 0, 0);
        fill(buf, "f", NULL, 0, 0);
        return 0;
}

static int ino_open(const char *path, struct fuse_file_info *fi) {
        if (strcmp(path, "/f") != 0)
                return -ENOENT;
        return (fi->flags & O_ACCMODE) == O_RDONLY ? 0 : -EACCES;
}

static int ino_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
        if (off < 0 || (uint64_t) off >= arg_size)
                return 0;
        if (size > arg_size - (uint64_t) off)
                size = (size_t) (arg_size - (uint64_t) off);
        for (size_t i = 0; i < size; i++)
                buf[i] = (char) (((uint64_t) off + i) % 251);
        return (int) size;
}

static void *ino_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
        cfg->use_ino = 1;
        cfg->kernel_cache = 1;
        return NULL;
}

static const struct fuse_operations ops = {
        .init = ino_init,
        .getattr = ino_getattr,
        .readdir = ino_readdir,
        .open = ino_open,
        .read = ino_read,
};

int main(int argc, char **argv) {
        char *end;

        if (argc != 4) {
                fprintf(stderr, "usage: inofs INO SIZE MOUNTPOINT\n");
                return 2;
        }
        errno = 0;
        arg_ino = strtoull(argv[1], &end, 10);
        if (errno != 0 || *end || arg_ino == 0) {
                fprintf(stderr, "inofs: bad inode number: %s\n", argv[1]);
                return 2;
        }
        arg_size = strtoull(argv[2], &end, 10);
        if (errno != 0 || *end || arg_size > INT64_MAX) {
                fprintf(stderr, "inofs: bad size: %s\n", argv[2]);
                return 2;
        }
        char *fargv[] = { argv[0], "-f", "-o", "fsname=inofs,subtype=inofs", argv[3], NULL };
        return fuse_main(5, fargv, &ops, NULL);
}
