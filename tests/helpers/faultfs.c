/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Test program: a FUSE filesystem of two files that puts a failing disk under a loop device (the fault
 * tests: tests/test-faults.sh, doc/kernel.md §6), or a slow one that turns (the benches' emulated 7200 rpm
 * disk: bench/spindisk.sh).
 *   faultfs IMAGE MOUNTPOINT
 * runs in the foreground until unmounted (or SIGTERM) and serves
 *   MOUNTPOINT/disk   IMAGE, read and written through (pread/pwrite), every request sent to us (direct_io:
 *                     no page cache of FUSE's own), unless a fault rule below says otherwise;
 *   MOUNTPOINT/ctl    write a command to change the rules, read it for the rules and the counters.
 * Commands, one per write (bytes; END 0 or left out: to the end of the disk); the ranges add up, to 64:
 *   ok                      no faults (the device is healed)
 *   read-error [START END]  reads of [START, END) fail with EIO (a request that touches the range fails)
 *   write-error [START END] writes of [START, END) fail with EIO; without a range flushes (fsync) fail too
 *   spin                    every request waits, one at a time, what the layout model's disk takes for it
 *                           (plan/layout.h: a seek from where the last request ended, or the transfer of a
 *                           short forward gap, then the transfer) before it is served; counted in ctl
 *   spin-off                requests are served at once again
 * `losetup` on MOUNTPOINT/disk (direct I/O off) turns these into failed bios: what ext4 gets from a disk
 * with bad sectors, or one that stops taking writes. The process asks to be an I/O flusher
 * (PR_SET_IO_FLUSHER: its allocations do not wait for the writeback that waits for it). */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "plan/layout.h"

#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#endif

typedef struct Range {
        uint64_t start, end;    /* end 0: to the end */
} Range;

#define MAX_RANGES 64

typedef struct Rules {
        Range r[MAX_RANGES];
        size_t n;
} Rules;

static struct {
        pthread_mutex_t lock;
        int fd;
        Rules read_fail, write_fail;
        bool flush_fail;
        uint64_t reads, writes, flushes, read_errors, write_errors, flush_errors;
        uint64_t bytes_read, bytes_written;
        /* spin: the head, where the last request ended (UINT64_MAX: none yet); one request at a time */
        pthread_mutex_t head_lock;
        bool spin;
        uint64_t head, size, spin_requests, spin_seeks;
        double spin_ms;
} S = { .lock = PTHREAD_MUTEX_INITIALIZER, .head_lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1, .head = UINT64_MAX };

static bool hits(const Rules *rules, uint64_t off, uint64_t len) {
        for (size_t i = 0; i < rules->n; i++) {
                const Range *r = &rules->r[i];
                if (off + len > r->start && (r->end == 0 || off < r->end))
                        return true;
        }
        return false;
}

static int add_range(const char *args, Rules *rules) {
        unsigned long long a = 0, b = 0;
        int n = sscanf(args, "%llu %llu", &a, &b);

        if (n != EOF && n != 0 && n != 2)
                return -EINVAL;
        if (n == 2 && b != 0 && b <= a)
                return -EINVAL;
        if (rules->n >= MAX_RANGES)
                return -ENOSPC;
        rules->r[rules->n++] = (Range) { .start = n == 2 ? a : 0, .end = n == 2 ? b : 0 };
        return 0;
}

static int command(const char *line) {
        if (strcmp(line, "spin") == 0 || strcmp(line, "spin-off") == 0) {
                S.spin = line[4] == 0;
                S.head = UINT64_MAX;
                S.spin_requests = S.spin_seeks = 0;
                S.spin_ms = 0;
                return 0;
        }
        if (strcmp(line, "ok") == 0) {
                S.read_fail = S.write_fail = (Rules) {};
                S.flush_fail = false;
                return 0;
        }
        if (strncmp(line, "read-error", 10) == 0 && (line[10] == 0 || line[10] == ' '))
                return add_range(line + 10, &S.read_fail);
        if (strncmp(line, "write-error", 11) == 0 && (line[11] == 0 || line[11] == ' ')) {
                int r = add_range(line + 11, &S.write_fail);
                if (r == 0 && S.write_fail.r[S.write_fail.n - 1].start == 0 && S.write_fail.r[S.write_fail.n - 1].end == 0)
                        S.flush_fail = true;
                return r;
        }
        return -EINVAL;
}

static bool is_disk(const char *path) {
        return strcmp(path, "/disk") == 0;
}

static bool is_ctl(const char *path) {
        return strcmp(path, "/ctl") == 0;
}

static int status_text(char *buf, size_t size) {
        return snprintf(buf, size,
                        "read-ranges %zu\nwrite-ranges %zu\nflush-error %d\n"
                        "reads %" PRIu64 "\nwrites %" PRIu64 "\nflushes %" PRIu64 "\n"
                        "read_errors %" PRIu64 "\nwrite_errors %" PRIu64 "\nflush_errors %" PRIu64 "\n"
                        "bytes_read %" PRIu64 "\nbytes_written %" PRIu64 "\n"
                        "spin %d\nspin_requests %" PRIu64 "\nspin_seeks %" PRIu64 "\nspin_ms %.3f\n",
                        S.read_fail.n, S.write_fail.n, S.flush_fail, S.reads, S.writes, S.flushes,
                        S.read_errors, S.write_errors, S.flush_errors, S.bytes_read, S.bytes_written,
                        S.spin, S.spin_requests, S.spin_seeks, S.spin_ms);
}

static int ff_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
        memset(st, 0, sizeof *st);
        if (strcmp(path, "/") == 0) {
                st->st_mode = S_IFDIR | 0755;
                st->st_nlink = 2;
                return 0;
        }
        if (is_disk(path)) {
                struct stat img;

                if (fstat(S.fd, &img) < 0)
                        return -errno;
                st->st_mode = S_IFREG | 0600;
                st->st_nlink = 1;
                st->st_size = img.st_size;
                st->st_blocks = img.st_blocks;
                return 0;
        }
        if (is_ctl(path)) {
                st->st_mode = S_IFREG | 0600;
                st->st_nlink = 1;
                st->st_size = 4096;
                return 0;
        }
        return -ENOENT;
}

static int ff_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info *fi,
                      enum fuse_readdir_flags flags) {
        if (strcmp(path, "/") != 0)
                return -ENOENT;
        fill(buf, ".", NULL, 0, 0);
        fill(buf, "..", NULL, 0, 0);
        fill(buf, "disk", NULL, 0, 0);
        fill(buf, "ctl", NULL, 0, 0);
        return 0;
}

static int ff_open(const char *path, struct fuse_file_info *fi) {
        if (!is_disk(path) && !is_ctl(path))
                return -ENOENT;
        fi->direct_io = 1;
        fi->keep_cache = 0;
        return 0;
}

static int ff_truncate(const char *path, off_t size, struct fuse_file_info *fi) {
        return is_ctl(path) ? 0 : -EPERM;       /* "echo > ctl" truncates first */
}

/* spin: what the model's disk takes for [off, off + len) after the last request, waited for while holding
 * the head (the caller unlocks it after serving the request). */
static void spin_wait(uint64_t off, uint64_t len) {
        double ms = (double) len * 1000.0 / LAYOUT_TRANSFER_BPS;
        struct timespec ts;
        bool seek = false;

        pthread_mutex_lock(&S.head_lock);
        if (S.head == UINT64_MAX || (off != S.head && !(off > S.head && off - S.head <= LAYOUT_SHORT_GAP))) {
                ms += layout_seek_ms(S.head == UINT64_MAX ? 0 : (off > S.head ? off - S.head : S.head - off),
                                     S.size);
                seek = true;
        } else if (off > S.head)
                ms += (double) (off - S.head) * 1000.0 / LAYOUT_TRANSFER_BPS;
        S.head = off + len;
        pthread_mutex_lock(&S.lock);
        S.spin_requests++;
        S.spin_seeks += seek;
        S.spin_ms += ms;
        pthread_mutex_unlock(&S.lock);
        ts.tv_sec = (time_t) (ms / 1000);
        ts.tv_nsec = (long) ((ms - (double) ts.tv_sec * 1000) * 1e6);
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static int ff_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
        bool spin;
        ssize_t n;
        int e;

        if (is_ctl(path)) {
                char text[1024];
                int len;

                pthread_mutex_lock(&S.lock);
                len = status_text(text, sizeof text);
                pthread_mutex_unlock(&S.lock);
                if (off >= len)
                        return 0;
                n = (ssize_t) size < len - off ? (ssize_t) size : len - off;
                memcpy(buf, text + off, (size_t) n);
                return (int) n;
        }
        pthread_mutex_lock(&S.lock);
        S.reads++;
        if (hits(&S.read_fail, (uint64_t) off, size)) {
                S.read_errors++;
                pthread_mutex_unlock(&S.lock);
                return -EIO;
        }
        spin = S.spin;
        pthread_mutex_unlock(&S.lock);
        if (spin)
                spin_wait((uint64_t) off, size);
        n = pread(S.fd, buf, size, off);
        e = errno;
        if (spin)
                pthread_mutex_unlock(&S.head_lock);
        if (n < 0)
                return -e;
        pthread_mutex_lock(&S.lock);
        S.bytes_read += (uint64_t) n;
        pthread_mutex_unlock(&S.lock);
        return (int) n;
}

static int ff_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
        bool spin;
        ssize_t n;
        int e;

        if (is_ctl(path)) {
                char line[256];
                size_t len = size < sizeof line - 1 ? size : sizeof line - 1;
                int r;

                memcpy(line, buf, len);
                line[len] = 0;
                line[strcspn(line, "\n")] = 0;
                pthread_mutex_lock(&S.lock);
                r = command(line);
                pthread_mutex_unlock(&S.lock);
                if (r < 0)
                        fprintf(stderr, "faultfs: bad command: %s\n", line);
                return r < 0 ? r : (int) size;
        }
        pthread_mutex_lock(&S.lock);
        S.writes++;
        if (hits(&S.write_fail, (uint64_t) off, size)) {
                S.write_errors++;
                pthread_mutex_unlock(&S.lock);
                return -EIO;
        }
        spin = S.spin;
        pthread_mutex_unlock(&S.lock);
        if (spin)
                spin_wait((uint64_t) off, size);
        n = pwrite(S.fd, buf, size, off);
        e = errno;
        if (spin)
                pthread_mutex_unlock(&S.head_lock);
        if (n < 0)
                return -e;
        pthread_mutex_lock(&S.lock);
        S.bytes_written += (uint64_t) n;
        pthread_mutex_unlock(&S.lock);
        return (int) n;
}

static int ff_fsync(const char *path, int datasync, struct fuse_file_info *fi) {
        bool fail;

        if (!is_disk(path))
                return 0;
        pthread_mutex_lock(&S.lock);
        S.flushes++;
        fail = S.flush_fail;
        if (fail)
                S.flush_errors++;
        pthread_mutex_unlock(&S.lock);
        if (fail)
                return -EIO;
        return fdatasync(S.fd) < 0 ? -errno : 0;
}

static void *ff_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
        cfg->direct_io = 1;
        cfg->kernel_cache = 0;
        cfg->attr_timeout = 0;
        cfg->entry_timeout = 0;
        return NULL;
}

static const struct fuse_operations ops = {
        .init = ff_init,
        .getattr = ff_getattr,
        .readdir = ff_readdir,
        .open = ff_open,
        .truncate = ff_truncate,
        .read = ff_read,
        .write = ff_write,
        .fsync = ff_fsync,
};

int main(int argc, char **argv) {
        if (argc != 3) {
                fprintf(stderr, "usage: faultfs IMAGE MOUNTPOINT\n");
                return 2;
        }
        S.fd = open(argv[1], O_RDWR | O_CLOEXEC);
        if (S.fd < 0) {
                perror(argv[1]);
                return 1;
        }
        {
                struct stat img;

                if (fstat(S.fd, &img) == 0)
                        S.size = (uint64_t) img.st_size;
        }
        if (prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0) < 0)
                perror("PR_SET_IO_FLUSHER (ignored)");
        /* foreground, multi-threaded; default_permissions: the kernel checks the modes above */
        char *fargv[] = { argv[0], "-f", "-o", "default_permissions,fsname=faultfs,subtype=faultfs", argv[2], NULL };
        return fuse_main(5, fargv, &ops, NULL);
}
