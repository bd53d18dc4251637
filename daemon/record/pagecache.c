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
#include <unistd.h>

#include "common/alloc-util.h"
#include "fs/block-device.h"
#include "record/pagecache.h"
#include "record/trace-page.h"

#define EVENT_DIR "events/filemap/mm_filemap_add_to_page_cache"
/* The kernel's dev_t in trace records: major in the bits above 20, minor in the 20 below (doc/kernel.md §5) */
#define KDEV_MINOR_BITS 20
#define KDEV(d) (((uint64_t) major(d) << KDEV_MINOR_BITS) | minor(d))

typedef struct PageCacheCpu {
        int fd;
        unsigned cpu;
} PageCacheCpu;

struct PageCache {
        char *dir;              /* the instance's path, as made (pagecache_instance()) */
        /* Every file of the instance is reached from the tracefs's instances directory held open, never by
         * path: a tracefs unmounted under us (even lazily) keeps its instances, whose event we must still
         * be able to switch off and remove (doc/kernel.md §5). */
        int instances_fd;
        char *name;             /* the instance's name in it; NULL: none made (never removed by us) */
        PageCacheOptions opts;
        TracePageLayout layout;
        unsigned event_id;
        TraceField f_type, f_pid, f_ino, f_index, f_dev, f_order;
        size_t subbuf_size;
        uint8_t *buf;
        int *fds;               /* for pagecache_fds() */
        PageCacheCpu *cpus;
        size_t n_cpus, allocated_cpus;
        dev_t devs[PAGECACHE_MAX_DEVICES];
        uint64_t kdevs[PAGECACHE_MAX_DEVICES];
        size_t n_devs;
        bool enabled;
        /* The block-device pseudo filesystem's device (kernel encoding): a block device's own pages carry it
         * as s_dev. 0 until learned (pagecache_learn_bdev()); until then no metadata is taken. */
        uint64_t bdev_kdev;
        uint64_t learning_ino;  /* while learning: the device read (its KDEV), and by which thread */
        pid_t learning_tid;
};

/* Opens NAME in the instance. */
static int instance_open(PageCache *p, const char *name, int flags) {
        _cleanup_free_ char *path = NULL;
        int fd;

        if (asprintf(&path, "%s/%s", p->name, name) < 0)
                return -ENOMEM;
        fd = openat(p->instances_fd, path, flags | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

static int read_text(PageCache *p, const char *name, char **ret) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t n = 0, allocated = 0;

        fd = instance_open(p, name, O_RDONLY);
        if (fd < 0)
                return fd;
        for (;;) {
                ssize_t k;

                if (allocated - n < 4096) {
                        char *b = realloc(buf, allocated + 8192);
                        if (!b)
                                return -ENOMEM;
                        buf = b;
                        allocated += 8192;
                }
                k = read(fd, buf + n, allocated - n - 1);
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        buf[n] = 0;
        *ret = TAKE_PTR(buf);
        return 0;
}

static int write_text(PageCache *p, const char *name, const char *value) {
        _cleanup_close_ int fd = -EBADF;
        size_t l = strlen(value);
        ssize_t k;

        fd = instance_open(p, name, O_WRONLY | O_TRUNC);
        if (fd < 0)
                return fd;
        k = write(fd, value, l);
        if (k < 0)
                return -errno;
        return (size_t) k == l ? 0 : -EIO;
}

/* Field 22 of /proc/PID/stat: the start time in clock ticks since boot, 0 if the process is gone. */
static unsigned long long process_start_time(pid_t pid) {
        char path[64], buf[1024], *p;
        unsigned long long start = 0;
        _cleanup_close_ int fd = -EBADF;
        ssize_t n;

        snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        n = read(fd, buf, sizeof buf - 1);
        if (n <= 0)
                return 0;
        buf[n] = 0;
        p = strrchr(buf, ')');      /* the command name may hold spaces and parentheses */
        if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                         &start) != 1)
                return 0;
        return start;
}

int pagecache_reap(const char *tracefs, const char *prefix) {
        _cleanup_free_ char *path = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        size_t l = strlen(prefix);
        int n = 0;

        if (asprintf(&path, "%s/instances", tracefs) < 0)
                return -ENOMEM;
        d = opendir(path);
        if (!d)
                return -errno;
        for (struct dirent *de; (de = readdir(d));) {
                unsigned long long start;
                int pid, end = 0;

                if (strncmp(de->d_name, prefix, l) != 0)
                        continue;
                if (sscanf(de->d_name + l, "%d-%llu%n", &pid, &start, &end) != 2 || de->d_name[l + end])
                        continue;       /* not a name we give */
                if (pid > 0 && process_start_time(pid) == start)
                        continue;       /* its owner runs */
                if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) >= 0)
                        n++;
        }
        return n;
}

static int open_cpus(PageCache *p) {
        _cleanup_closedir_ DIR *d = NULL;
        int dfd;

        dfd = instance_open(p, "per_cpu", O_RDONLY | O_DIRECTORY);
        if (dfd < 0)
                return dfd;
        d = fdopendir(dfd);
        if (!d) {
                safe_close(dfd);
                return -errno;
        }
        for (struct dirent *de; (de = readdir(d));) {
                char name[300];
                unsigned cpu;
                int fd;

                if (sscanf(de->d_name, "cpu%u", &cpu) != 1)
                        continue;
                snprintf(name, sizeof name, "%s/trace_pipe_raw", de->d_name);
                fd = openat(dirfd(d), name, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                if (GREEDY_REALLOC(p->cpus, p->allocated_cpus, p->n_cpus + 1) < 0) {
                        safe_close(fd);
                        return -ENOMEM;
                }
                p->cpus[p->n_cpus++] = (PageCacheCpu) { .fd = fd, .cpu = cpu };
        }
        if (p->n_cpus == 0)
                return -ENOENT;
        p->fds = calloc(p->n_cpus, sizeof *p->fds);
        if (!p->fds)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_cpus; i++)
                p->fds[i] = p->cpus[i].fd;
        return 0;
}

static int parse_formats(PageCache *p) {
        _cleanup_free_ char *format = NULL, *header = NULL;
        struct { const char *name; TraceField *f; } fields[] = {
                { "common_type", &p->f_type },
                { "common_pid", &p->f_pid },
                { "i_ino", &p->f_ino },
                { "index", &p->f_index },
                { "s_dev", &p->f_dev },
                { "order", &p->f_order },
        };
        int r;

        r = read_text(p, EVENT_DIR "/format", &format);
        if (r < 0)
                return r;
        r = trace_format_id(format, &p->event_id);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                r = trace_format_field(format, fields[i].name, fields[i].f);
                /* kernels before the page cache held large folios have no order: every insertion is one
                 * page (doc/kernel.md §5); a field of size 0 reads as 0 */
                if (r == -ENOENT && fields[i].f == &p->f_order) {
                        *fields[i].f = (TraceField) {};
                        continue;
                }
                if (r < 0)
                        return r;
        }
        r = read_text(p, "events/header_page", &header);
        if (r < 0)
                return r;
        return trace_page_layout_parse(header, &p->layout);
}

int pagecache_new(const PageCacheOptions *o, PageCache **ret) {
        _cleanup_(pagecache_freep) PageCache *p = NULL;
        _cleanup_free_ char *subbuf = NULL, *instances = NULL, *name = NULL;
        const char *tracefs = o->tracefs ?: "/sys/kernel/tracing", *prefix = o->prefix ?: "seekless-";
        char value[32];
        int r;

        p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        p->opts = *o;
        p->opts.tracefs = p->opts.prefix = NULL;        /* not kept: the caller's strings */
        p->instances_fd = -EBADF;

        r = pagecache_reap(tracefs, prefix);
        if (r < 0)
                return r;
        if (asprintf(&instances, "%s/instances", tracefs) < 0)
                return -ENOMEM;
        p->instances_fd = open(instances, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (p->instances_fd < 0)
                return -errno;
        if (asprintf(&name, "%s%d-%llu", prefix, (int) getpid(), process_start_time(getpid())) < 0 ||
            asprintf(&p->dir, "%s/%s", instances, name) < 0) {
                p->dir = NULL;
                return -ENOMEM;
        }
        if (mkdirat(p->instances_fd, name, 0700) < 0)
                return -errno;  /* not ours: never removed by us */
        p->name = TAKE_PTR(name);

        r = parse_formats(p);
        if (r < 0)
                return r;
        /* Keep the oldest events when the buffer is full (first touches matter most) and count the rest;
         * CLOCK_MONOTONIC timestamps, comparable with the sessions' clock. */
        r = write_text(p, "options/overwrite", "0");
        if (r < 0)
                return r;
        r = write_text(p, "trace_clock", "mono");
        if (r < 0)
                return r;
        snprintf(value, sizeof value, "%u", o->buffer_kib ?: PAGECACHE_BUFFER_KIB_DEFAULT);
        r = write_text(p, "buffer_size_kb", value);
        if (r < 0)
                return r;
        r = pagecache_set_devices(p, NULL, 0);
        if (r < 0)
                return r;

        p->subbuf_size = (size_t) sysconf(_SC_PAGESIZE);
        if (read_text(p, "buffer_subbuf_size_kb", &subbuf) >= 0 && atoi(subbuf) > 0)
                p->subbuf_size = (size_t) atoi(subbuf) * 1024;
        p->buf = malloc(p->subbuf_size);
        if (!p->buf)
                return -ENOMEM;
        r = open_cpus(p);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

PageCache *pagecache_free(PageCache *p) {
        if (!p)
                return NULL;
        if (p->name) {
                if (p->enabled)
                        (void) write_text(p, EVENT_DIR "/enable", "0");
                for (size_t i = 0; i < p->n_cpus; i++)
                        safe_close(p->cpus[i].fd);
                (void) unlinkat(p->instances_fd, p->name, AT_REMOVEDIR);
        }
        safe_close(p->instances_fd);
        free(p->name);
        free(p->cpus);
        free(p->fds);
        free(p->buf);
        free(p->dir);
        free(p);
        return NULL;
}

int pagecache_set_devices(PageCache *p, const dev_t *devs, size_t n) {
        char filter[PAGECACHE_MAX_DEVICES * 64 + 64];
        size_t o = 0;
        int r;

        if (n > PAGECACHE_MAX_DEVICES)
                return -E2BIG;
        if (n == 0)
                snprintf(filter, sizeof filter, "common_pid < 0");      /* never true */
        for (size_t i = 0; i < n; i++)
                o += (size_t) snprintf(filter + o, sizeof filter - o, "%ss_dev == %" PRIu64,
                                       i ? " || " : "", KDEV(devs[i]));
        /* A block device's own pages belong to the block-device pseudo filesystem and carry the device's
         * number as inode number; the pseudo filesystem's own device number tells them from a file of
         * another filesystem with that inode number (a FUSE server chooses its inode numbers). */
        if (n > 0 && p->opts.metadata && p->bdev_kdev != 0) {
                o += (size_t) snprintf(filter + o, sizeof filter - o, " || (s_dev == %" PRIu64 " && (",
                                       p->bdev_kdev);
                for (size_t i = 0; i < n; i++)
                        o += (size_t) snprintf(filter + o, sizeof filter - o, "%si_ino == %" PRIu64,
                                               i ? " || " : "", KDEV(devs[i]));
                o += (size_t) snprintf(filter + o, sizeof filter - o, "))");
        }
        r = write_text(p, EVENT_DIR "/filter", filter);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                p->devs[i] = devs[i];
                p->kdevs[i] = KDEV(devs[i]);
        }
        p->n_devs = n;
        return 0;
}

int pagecache_enable(PageCache *p, bool on) {
        int r = write_text(p, EVENT_DIR "/enable", on ? "1" : "0");
        if (r < 0)
                return r;
        p->enabled = on;
        return 0;
}

/* Reads ahead a page at the end of the device with the event on and filtered to this thread's insertions
 * of that device's pages: the event's s_dev is then the pseudo filesystem's. POSIX_FADV_WILLNEED inserts
 * the page (and raises the event) in this thread and submits its read without waiting for it, so a slow
 * disk costs nothing here (doc/kernel.md §5). A page already cached raises nothing: it is dropped from the
 * cache (a clean page of the device nobody holds) and read again, or the next page before it is tried. */
static int learn_from(PageCache *p, dev_t dev) {
        _cleanup_close_ int fd = -EBADF;
        uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);
        char filter[128];
        off_t size;
        int r, k;

        fd = block_device_open(dev);
        if (fd < 0)
                return fd;
        size = lseek(fd, 0, SEEK_END);
        if (size < 0)
                return -errno;
        if ((uint64_t) size < 8 * page)
                return -ENOSPC;
        snprintf(filter, sizeof filter, "common_pid == %d && i_ino == %" PRIu64, (int) gettid(), KDEV(dev));
        r = write_text(p, EVENT_DIR "/filter", filter);
        if (r < 0)
                return r;
        r = pagecache_enable(p, true);
        if (r < 0)
                return r;
        p->learning_ino = KDEV(dev);
        p->learning_tid = gettid();
        for (unsigned i = 1; i <= 4 && p->bdev_kdev == 0; i++) {
                off_t off = (off_t) (((uint64_t) size / page - i) * page);

                for (unsigned attempt = 0; attempt < 2 && p->bdev_kdev == 0; attempt++) {
                        if (attempt > 0)
                                (void) posix_fadvise(fd, off, (off_t) page, POSIX_FADV_DONTNEED);
                        (void) posix_fadvise(fd, off, (off_t) page, POSIX_FADV_WILLNEED);
                        r = pagecache_read(p);
                        if (r < 0)
                                break;
                }
        }
        p->learning_ino = 0;
        k = pagecache_enable(p, false);
        if (r >= 0)
                r = k;
        if (r < 0)
                return r;
        return p->bdev_kdev != 0 ? 1 : -ENODATA;
}

int pagecache_learn_bdev(PageCache *p, const dev_t *devs, size_t n) {
        int r = -ENODEV, k;

        if (!p->opts.metadata)
                return 0;
        if (p->bdev_kdev != 0)
                return 1;
        if (p->enabled)
                return -EBUSY;
        for (size_t i = 0; i < n && r <= 0; i++)
                r = learn_from(p, devs[i]);
        /* back to the filter of the devices we had */
        k = pagecache_set_devices(p, p->devs, p->n_devs);
        return r < 0 ? r : k < 0 ? k : r;
}

int pagecache_bdev(PageCache *p, dev_t *ret) {
        if (p->bdev_kdev == 0)
                return -ENODATA;
        *ret = makedev((unsigned) (p->bdev_kdev >> KDEV_MINOR_BITS),
                       (unsigned) (p->bdev_kdev & ((1u << KDEV_MINOR_BITS) - 1)));
        return 0;
}

static int on_record(const TraceRecord *rec, void *userdata) {
        PageCache *p = userdata;
        PageCacheEvent e;
        uint64_t s_dev, ino;
        size_t i;

        if (trace_field_get(&p->f_type, rec->data, rec->size) != p->event_id)
                return 0;
        s_dev = trace_field_get(&p->f_dev, rec->data, rec->size);
        ino = trace_field_get(&p->f_ino, rec->data, rec->size);
        /* our own read of a device's page, made to learn where such pages are: an anonymous device of a
         * pseudo filesystem has major 0 */
        if (p->learning_ino != 0 && ino == p->learning_ino && s_dev != 0 && s_dev >> KDEV_MINOR_BITS == 0 &&
            (pid_t) trace_field_get(&p->f_pid, rec->data, rec->size) == p->learning_tid) {
                if (p->bdev_kdev == 0)
                        p->bdev_kdev = s_dev;
                return 0;
        }
        for (i = 0; i < p->n_devs; i++)
                if (p->kdevs[i] == s_dev)
                        break;
        if (i < p->n_devs)
                e.ino = ino;
        else {
                if (!p->opts.metadata || p->bdev_kdev == 0 || s_dev != p->bdev_kdev)
                        return 0;
                for (i = 0; i < p->n_devs; i++)
                        if (p->kdevs[i] == ino)
                                break;
                if (i == p->n_devs)
                        return 0;       /* a device no longer watched, the filter was changing */
                e.ino = 0;
        }
        e.dev = p->devs[i];
        e.index = trace_field_get(&p->f_index, rec->data, rec->size);
        e.n_pages = UINT32_C(1) << MIN(trace_field_get(&p->f_order, rec->data, rec->size), 31);
        e.tid = (pid_t) trace_field_get(&p->f_pid, rec->data, rec->size);
        e.timestamp_nsec = rec->timestamp;
        if (p->opts.on_pages)
                p->opts.on_pages(&e, p->opts.userdata);
        return 0;
}

int pagecache_read(PageCache *p) {
        int total = 0;

        for (size_t i = 0; i < p->n_cpus; i++)
                for (;;) {
                        uint64_t missed;
                        ssize_t n = read(p->cpus[i].fd, p->buf, p->subbuf_size);
                        int r;

                        if (n < 0) {
                                if (errno == EAGAIN)
                                        break;
                                if (errno == EINTR)
                                        continue;
                                return -errno;
                        }
                        if (n == 0)
                                break;
                        r = trace_page_parse(&p->layout, p->buf, (size_t) n, on_record, p, &missed);
                        if (r < 0)
                                return r;
                        total += r;
                }
        return total;
}

size_t pagecache_fds(PageCache *p, const int **ret) {
        *ret = p->fds;
        return p->n_cpus;
}

int pagecache_lost(PageCache *p, uint64_t *ret) {
        uint64_t lost = 0;

        for (size_t i = 0; i < p->n_cpus; i++) {
                _cleanup_free_ char *stats = NULL;
                char name[64];
                int r;

                snprintf(name, sizeof name, "per_cpu/cpu%u/stats", p->cpus[i].cpu);
                r = read_text(p, name, &stats);
                if (r < 0)
                        return r;
                for (char *line = stats, *next; line && *line; line = next) {
                        unsigned long long v;

                        next = strchr(line, '\n');
                        if (next)
                                *next++ = 0;
                        if (sscanf(line, "overrun: %llu", &v) == 1 ||
                            sscanf(line, "dropped events: %llu", &v) == 1)
                                lost += v;
                }
        }
        *ret = lost;
        return 0;
}

const char *pagecache_instance(PageCache *p) {
        return p->dir;
}

int pagecache_set_buffer_percent(PageCache *p, unsigned percent) {
        char v[16];

        snprintf(v, sizeof v, "%u", percent);
        return write_text(p, "buffer_percent", v);
}
