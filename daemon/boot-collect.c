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

#include "boot-collect.h"
#include "macro.h"

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

static int unhex(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

int boot_collect_parse_line(const char *line, FileKey *ret) {
        FileKey k = {};
        const char *hex;
        uint64_t fsid;
        int type, pos = 0;
        size_t l;

        if (sscanf(line, "%16" SCNx64 " %d %n", &fsid, &type, &pos) != 2 || pos == 0)
                return -EBADMSG;
        hex = line + pos;
        l = strcspn(hex, "\n");
        if (l == 0 || l % 2 != 0 || l / 2 > FID_HANDLE_MAX || (hex[l] != '\n' && hex[l] != 0))
                return -EBADMSG;
        for (size_t i = 0; i < l / 2; i++) {
                int hi = unhex(hex[2 * i]), lo = unhex(hex[2 * i + 1]);

                if (hi < 0 || lo < 0)
                        return -EBADMSG;
                k.handle[i] = (uint8_t) (hi << 4 | lo);
        }
        k.fsid = fsid;
        k.handle_type = type;
        k.handle_len = (uint32_t) (l / 2);
        *ret = k;
        return 0;
}

/* Reads the whole file before adding anything: a file that is not complete adds nothing. */
static int read_keys(FILE *f, FileKey **ret, size_t *ret_n) {
        _cleanup_free_ char *line = NULL;
        _cleanup_free_ FileKey *keys = NULL;
        size_t size = 0, n = 0, allocated = 0;
        unsigned long end_n;
        char c;

        if (getline(&line, &size, f) <= 0 || !streq(line, BOOT_COLLECT_MAGIC))
                return -EBADMSG;
        while (getline(&line, &size, f) > 0) {
                if (startswith(line, "end ")) {
                        if (sscanf(line, "end %lu%c", &end_n, &c) != 2 || c != '\n' || end_n != n ||
                            getline(&line, &size, f) > 0)
                                return -EBADMSG;
                        *ret = TAKE_PTR(keys);
                        *ret_n = n;
                        return 0;
                }
                if (n == allocated) {
                        size_t na = allocated ? allocated * 2 : 256;
                        FileKey *p = reallocarray(keys, na, sizeof *p);

                        if (!p)
                                return -ENOMEM;
                        keys = p;
                        allocated = na;
                }
                if (boot_collect_parse_line(line, &keys[n]) < 0)
                        return -EBADMSG;
                n++;
        }
        return -EBADMSG;        /* no "end" line */
}

int boot_collect_take(const char *run_dir, Session *s, const FilesystemList *watched, uint64_t now_usec) {
        _cleanup_free_ char *path = NULL;
        _cleanup_free_ FileKey *keys = NULL;
        _cleanup_fclose_ FILE *f = NULL;
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
                if (!filesystem_list_find_fsid(watched, keys[i].fsid))
                        continue;
                r = session_add(s, &keys[i], now_usec);
                if (r < 0)
                        return r;
                added += r;
        }
        return added;
}
