/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/alloc-util.h"
#include "common/macro.h"
#include "fs/mounts.h"

void filesystem_list_clear(FilesystemList *l) {
        for (size_t i = 0; i < l->n; i++) {
                free(l->items[i].mount);
                free(l->items[i].fstype);
        }
        free(l->items);
        l->items = NULL;
        l->n = l->allocated = 0;
}

int filesystem_list_copy(const FilesystemList *l, FilesystemList *ret) {
        FilesystemList c = { .items = calloc(l->n + 1, sizeof *c.items) };

        if (!c.items)
                return -ENOMEM;
        for (; c.n < l->n; c.n++) {
                c.items[c.n] = l->items[c.n];
                c.items[c.n].mount = strdup(l->items[c.n].mount);
                c.items[c.n].fstype = l->items[c.n].fstype ? strdup(l->items[c.n].fstype) : NULL;
                if (!c.items[c.n].mount || (l->items[c.n].fstype && !c.items[c.n].fstype)) {
                        c.n++;
                        filesystem_list_clear(&c);
                        return -ENOMEM;
                }
        }
        *ret = c;
        return 0;
}

const Filesystem *filesystem_list_find_fsid(const FilesystemList *l, uint64_t fsid) {
        for (size_t i = 0; i < l->n; i++)
                if (l->items[i].fsid == fsid)
                        return &l->items[i];
        return NULL;
}

const Filesystem *filesystem_list_find_dev(const FilesystemList *l, dev_t dev) {
        for (size_t i = 0; i < l->n; i++)
                if (l->items[i].dev == dev)
                        return &l->items[i];
        return NULL;
}

int fsid_of_fd(int fd, uint64_t *ret) {
        struct statfs sfs;

        if (fstatfs(fd, &sfs) < 0)
                return -errno;
        memcpy(ret, &sfs.f_fsid, sizeof *ret);
        return 0;
}

int fsid_of_path(const char *path, uint64_t *ret) {
        struct statfs sfs;

        if (statfs(path, &sfs) < 0)
                return -errno;
        memcpy(ret, &sfs.f_fsid, sizeof *ret);
        return 0;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo */
static void unescape_octal(char *s) {
        char *w = s;

        for (char *r = s; *r; ) {
                if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' &&
                    r[3] >= '0' && r[3] <= '7') {
                        *w++ = (char) (((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
                        r += 4;
                } else
                        *w++ = *r++;
        }
        *w = 0;
}

static bool option_present(const char *opts, const char *opt) {
        size_t l = strlen(opt);

        for (const char *p = opts; p; p = strchr(p, ',')) {
                if (*p == ',')
                        p++;
                if (strncmp(p, opt, l) == 0 && (p[l] == ',' || p[l] == 0))
                        return true;
        }
        return false;
}

int filesystem_pins_make(char *const *paths, FilesystemPins *ret, const char **ret_failed) {
        FilesystemPins p = {};
        size_t n = 0;
        int r;

        while (paths && paths[n])
                n++;
        p.fsid = calloc(n + 1, sizeof *p.fsid);
        if (!p.fsid)
                return -ENOMEM;
        for (; p.n < n; p.n++) {
                r = fsid_of_path(paths[p.n], &p.fsid[p.n]);
                if (r < 0) {
                        *ret_failed = paths[p.n];
                        filesystem_pins_clear(&p);
                        return r;
                }
        }
        *ret = p;
        return 0;
}

void filesystem_pins_clear(FilesystemPins *p) {
        p->fsid = mfree(p->fsid);
        p->n = 0;
}

static bool pinned(const FilesystemPins *only, uint64_t fsid) {
        if (!only)
                return true;
        for (size_t i = 0; i < only->n; i++)
                if (only->fsid[i] == fsid)
                        return true;
        return false;
}

static const char *const unwatched_table[_UNWATCHED_MAX] = {
        [UNWATCHED_NOT_EXT4] = "not ext4",
        [UNWATCHED_READ_ONLY] = "mounted read-only",
        [UNWATCHED_NOT_GIVEN] = "not given with --filesystem=",
        [UNWATCHED_SAME_UUID] = "same UUID as a watched filesystem",
};

DEFINE_STRING_TABLE_TO_STRING(unwatched, Unwatched, )

static Filesystem *list_find_dev(FilesystemList *l, dev_t dev) {
        for (size_t i = 0; l && i < l->n; i++)
                if (l->items[i].dev == dev)
                        return &l->items[i];
        return NULL;
}

/* Appends fs with copies of mount and fstype. */
static int list_add(FilesystemList *l, Filesystem fs, const char *mount, const char *fstype) {
        if (GREEDY_REALLOC(l->items, l->allocated, l->n + 1) < 0)
                return -ENOMEM;
        fs.mount = strdup(mount);
        fs.fstype = strdup(fstype);
        if (!fs.mount || !fs.fstype) {
                free(fs.mount);
                free(fs.fstype);
                return -ENOMEM;
        }
        l->items[l->n++] = fs;
        return 0;
}

int mounts_scan(const char *mountinfo, const FilesystemPins *only, FilesystemList *ret,
                FilesystemList *ret_unwatched) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        FilesystemList l = {}, u = {};
        size_t sz = 0;
        int r = 0;

        f = fopen(mountinfo, "re");
        if (!f)
                return -errno;

        while (r >= 0 && getline(&line, &sz, f) > 0) {
                unsigned maj, min;
                char root[4096], mnt[4096], mnt_opts[1024], fstype[64], source[4096], sb_opts[1024];
                const char *sep;
                Filesystem *dup, fs;
                bool ext4;

                /* "36 35 98:0 /root /mnt rw,noatime master:1 - ext3 /dev/root rw,errors=continue" */
                if (sscanf(line, "%*u %*u %u:%u %4095s %4095s %1023s", &maj, &min, root, mnt, mnt_opts) != 5)
                        continue;
                sep = strstr(line, " - ");
                if (!sep || sscanf(sep + 3, "%63s %4095s %1023s", fstype, source, sb_opts) != 3)
                        continue;
                ext4 = streq(fstype, "ext4");
                if (!ext4 && (!ret_unwatched || !startswith(source, "/dev/")))
                        continue;
                unescape_octal(mnt);
                fs = (Filesystem) {
                        .dev = makedev(maj, min),
                        .whole = streq(root, "/"),
                        .read_only = option_present(mnt_opts, "ro") || option_present(sb_opts, "ro"),
                };
                /* Prefer a mount of the filesystem's root over a bind mount of a subdirectory: file
                 * handles resolve to paths relative to the mount we use. */
                dup = list_find_dev(&l, fs.dev) ?: list_find_dev(&u, fs.dev);
                if (dup) {
                        char *m2;

                        if (fs.whole && !dup->whole && (m2 = strdup(mnt))) {
                                free(dup->mount);
                                dup->mount = m2;
                                dup->whole = true;
                        }
                        continue;
                }
                if (fsid_of_path(mnt, &fs.fsid) < 0)
                        continue;   /* mount point not reachable from here (other namespace, gone) */

                /* A read-only superblock can't be optimized; a read-only mount of a read-write
                 * superblock is still recorded: reads through it are real. Only skip ro superblocks.
                 * Of the reasons, the one a configuration cannot change comes first. */
                fs.unwatched = !ext4 ? UNWATCHED_NOT_EXT4 :
                               option_present(sb_opts, "ro") ? UNWATCHED_READ_ONLY :
                               !pinned(only, fs.fsid) ? UNWATCHED_NOT_GIVEN :
                               /* fanotify names a file by fsid and handle: a second filesystem with the
                                * fsid would share every file's key with the first */
                               filesystem_list_find_fsid(&l, fs.fsid) ? UNWATCHED_SAME_UUID :
                               _UNWATCHED_INVALID;
                if (fs.unwatched < 0)
                        r = list_add(&l, fs, mnt, fstype);
                else if (ret_unwatched)
                        r = list_add(&u, fs, mnt, fstype);
        }
        if (r < 0) {
                filesystem_list_clear(&l);
                filesystem_list_clear(&u);
                return r;
        }

        *ret = l;
        if (ret_unwatched)
                *ret_unwatched = u;
        return 0;
}

int mount_path_normalize(char *path) {
        char *o = path;

        if (path[0] != '/')
                return -EINVAL;
        for (const char *i = path; *i;) {
                const char *e;

                while (*i == '/')
                        i++;
                if (!*i)
                        break;
                e = strchrnul(i, '/');
                if (e - i == 1 && i[0] == '.') {
                        i = e;
                        continue;
                }
                if (e - i == 2 && i[0] == '.' && i[1] == '.')
                        return -EINVAL;
                *o++ = '/';
                memmove(o, i, (size_t) (e - i));
                o += e - i;
                i = e;
        }
        if (o == path)
                *o++ = '/';
        *o = 0;
        return 0;
}

char *ext4_sysfs_dir(dev_t dev) {
        char link[64], target[PATH_MAX], *p = NULL;
        ssize_t n;

        snprintf(link, sizeof link, "/sys/dev/block/%u:%u", major(dev), minor(dev));
        n = readlink(link, target, sizeof target - 1);
        if (n < 0)
                return NULL;
        target[n] = 0;
        if (asprintf(&p, "/sys/fs/ext4/%s", basename(target)) < 0)
                return NULL;
        if (access(p, F_OK) < 0) {
                free(p);
                return NULL;
        }
        return p;
}

int block_device_bytes(dev_t dev, uint64_t *ret) {
        _cleanup_fclose_ FILE *f = NULL;
        char path[64];
        uint64_t sectors;
        char c;

        /* "size" counts 512-byte sectors whatever the device's logical block size. */
        snprintf(path, sizeof path, "/sys/dev/block/%u:%u/size", major(dev), minor(dev));
        f = fopen(path, "re");
        if (!f)
                return -errno;
        if (fscanf(f, "%" SCNu64 "%c", &sectors, &c) != 2 || c != '\n' || sectors == 0 ||
            sectors > UINT64_MAX / 512)
                return -EBADMSG;
        *ret = sectors * 512;
        return 0;
}
