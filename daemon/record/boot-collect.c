/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/alloc-util.h"
#include "record/boot-collect.h"
#include "fs/fid-util.h"
#include "common/macro.h"

static int read_pid_file(const char *path, pid_t *ret) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        long v;
        char c;

        if (!f)
                return -errno;
        if (fscanf(f, "%ld%c", &v, &c) != 2 || c != '\n' || v <= 1 || v > INT32_MAX)
                return -EBADMSG;
        *ret = (pid_t) v;
        return 0;
}

/* The pid file may be stale (the collector died without removing it, and its pid was reused): only a
 * process that still has the collector's name is signalled. */
static bool is_collector(pid_t pid) {
        _cleanup_fclose_ FILE *f = NULL;
        char path[64], comm[32];

        snprintf(path, sizeof path, "/proc/%i/comm", (int) pid);
        f = fopen(path, "re");
        if (!f || !fgets(comm, sizeof comm, f))
                return false;
        comm[strcspn(comm, "\n")] = 0;
        return streq(comm, BOOT_COLLECT_COMM);
}

int boot_collect_stop(const char *run_dir, uint64_t timeout_usec) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int pidfd = -EBADF;
        struct pollfd p;
        pid_t pid = 0;
        int r;

        if (asprintf(&path, "%s/" BOOT_COLLECT_PID_FILE, run_dir) < 0)
                return -ENOMEM;
        r = read_pid_file(path, &pid);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0)
                return errno == ESRCH ? 0 : -errno;
        /* checked after the pidfd is held: the pid can't be reused for another process now */
        if (!is_collector(pid))
                return 0;
        if (syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0) < 0)
                return errno == ESRCH ? 0 : -errno;
        p = (struct pollfd) { .fd = pidfd, .events = POLLIN };
        r = poll(&p, 1, (int) (timeout_usec / 1000));
        if (r < 0)
                return -errno;
        return r == 0 ? -ETIMEDOUT : 1;
}

int boot_collect_exclude_self(const char *run_dir) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        char line[24];
        int n;

        if (asprintf(&path, "%s/" BOOT_COLLECT_EXCLUDE_FILE, run_dir) < 0)
                return -ENOMEM;
        fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        n = snprintf(line, sizeof line, "%i\n", (int) getpid());
        /* one short write to an O_APPEND file: lines of processes starting together don't mix */
        if (write(fd, line, (size_t) n) != n)
                return errno > 0 ? -errno : -EIO;
        return 1;
}

bool boot_collect_pid_listed(int fd, pid_t pid) {
        char buf[4096];
        off_t off = 0;

        for (;;) {
                ssize_t n = pread(fd, buf, sizeof buf - 1, off);
                char *end, *p;

                if (n <= 0)
                        return false;
                buf[n] = 0;
                end = strrchr(buf, '\n');
                if (!end)
                        return false;
                *end = 0;
                for (p = buf; p; ) {
                        char *nl = strchr(p, '\n'), *e;
                        long v;

                        if (nl)
                                *nl = 0;
                        errno = 0;
                        v = strtol(p, &e, 10);
                        if (errno == 0 && e != p && *e == 0 && v == (long) pid)
                                return true;
                        p = nl ? nl + 1 : NULL;
                }
                off += end - buf + 1;
        }
}

static int unhex(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

/* The path is the rest of the line, with "\\n" for a newline and "\\\\" for a backslash. */
static int unescape_path(const char *s, size_t l, char **ret) {
        _cleanup_free_ char *p = malloc(l + 1);
        size_t k = 0;

        if (!p)
                return -ENOMEM;
        for (size_t i = 0; i < l; i++) {
                if (s[i] != '\\') {
                        p[k++] = s[i];
                        continue;
                }
                if (++i == l || (s[i] != 'n' && s[i] != '\\'))
                        return -EBADMSG;
                p[k++] = s[i] == 'n' ? '\n' : '\\';
        }
        p[k] = 0;
        if (p[0] != '/')
                return -EBADMSG;
        *ret = TAKE_PTR(p);
        return 0;
}

char *boot_collect_escape_path(const char *path) {
        char *e = malloc(2 * strlen(path) + 1), *p = e;

        if (!e)
                return NULL;
        for (; *path; path++)
                if (*path == '\n' || *path == '\\') {
                        *p++ = '\\';
                        *p++ = *path == '\n' ? 'n' : '\\';
                } else
                        *p++ = *path;
        *p = 0;
        return e;
}

int boot_collect_parse_line(const char *line, FileKey *ret, char **ret_path) {
        _cleanup_free_ char *path = NULL;
        FileKey k = {};
        const char *hex;
        uint64_t fsid;
        int type, pos = 0, r;
        size_t l, hl, end;

        if (sscanf(line, "%16" SCNx64 " %d %n", &fsid, &type, &pos) != 2 || pos == 0)
                return -EBADMSG;
        hex = line + pos;
        l = hl = strcspn(hex, " \n");
        if (hl == 0 || hl % 2 != 0 || hl / 2 > FID_HANDLE_MAX)
                return -EBADMSG;
        for (size_t i = 0; i < hl / 2; i++) {
                int hi = unhex(hex[2 * i]), lo = unhex(hex[2 * i + 1]);

                if (hi < 0 || lo < 0)
                        return -EBADMSG;
                k.handle[i] = (uint8_t) (hi << 4 | lo);
        }
        if (hex[l] == ' ') {
                end = strcspn(hex + l + 1, "\n");
                r = unescape_path(hex + l + 1, end, &path);
                if (r < 0)
                        return r;
                l += 1 + end;
        }
        if (hex[l] != '\n' && hex[l] != 0)
                return -EBADMSG;
        k.fsid = fsid;
        k.handle_type = type;
        k.handle_len = (uint32_t) (hl / 2);
        *ret = k;
        if (ret_path)
                *ret_path = TAKE_PTR(path);
        return 0;
}

typedef struct Collected {
        FileKey key;
        char *path;
} Collected;

static void collected_free_many(Collected *c, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(c[i].path);
        free(c);
}

/* Reads the whole file before adding anything: a file that is not complete adds nothing. */
static int read_keys(FILE *f, Collected **ret, size_t *ret_n) {
        _cleanup_free_ char *line = NULL;
        Collected *keys = NULL;
        size_t size = 0, n = 0, allocated = 0;
        unsigned long end_n;
        int r = -EBADMSG;       /* no "end" line */
        char c;

        if (getline(&line, &size, f) <= 0 || !streq(line, BOOT_COLLECT_MAGIC))
                return -EBADMSG;
        while (getline(&line, &size, f) > 0) {
                if (startswith(line, "end ")) {
                        if (sscanf(line, "end %lu%c", &end_n, &c) != 2 || c != '\n' || end_n != n ||
                            getline(&line, &size, f) > 0)
                                break;
                        *ret = keys;
                        *ret_n = n;
                        return 0;
                }
                r = GREEDY_REALLOC(keys, allocated, n + 1);
                if (r < 0)
                        break;
                keys[n].path = NULL;
                r = boot_collect_parse_line(line, &keys[n].key, &keys[n].path);
                if (r < 0)
                        break;
                n++;
                r = -EBADMSG;
        }
        collected_free_many(keys, n);
        return r;
}

/* The collector named each file right after its first read. Kept only if the path still leads to the
 * very file of the key (same handle, same generation); else the daemon's resolver tries later. */
static char *checked_path(const Collected *c) {
        _cleanup_close_ int fd = -EBADF;
        FileKey k;

        if (!c->path)
                return NULL;
        fd = open(c->path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || file_key_from_fd(fd, &k) < 0 || !file_key_equal(&k, &c->key))
                return NULL;
        return strdup(c->path);
}

int boot_collect_take(const char *run_dir, Session *s, const FilesystemList *watched, uint64_t now_usec) {
        _cleanup_free_ char *path = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        Collected *keys = NULL;
        size_t n = 0;
        int r, added = 0;

        if (asprintf(&path, "%s/" BOOT_COLLECT_KEYS_FILE, run_dir) < 0)
                return -ENOMEM;
        f = fopen(path, "re");
        if (!f)
                return errno == ENOENT ? 0 : -errno;
        r = read_keys(f, &keys, &n);
        (void) unlink(path);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                if (!filesystem_list_find_fsid(watched, keys[i].key.fsid))
                        continue;
                r = session_add(s, &keys[i].key, now_usec);
                if (r < 0)
                        break;
                if (r > 0) {
                        _cleanup_free_ char *named = checked_path(&keys[i]);

                        r = session_set_path(s, s->n_files - 1, named);
                        if (r < 0)
                                break;
                        added++;
                }
        }
        collected_free_many(keys, n);
        return r < 0 ? r : added;
}
