/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Workload and consumer for bench/pagecache.sh (see bench/README.md):
 *
 *   pagecache-bench create DIR N KIB          N files of KIB KiB each
 *   pagecache-bench work read|mmap DIR N SECS cold reads for SECS seconds: per file, drop its pages
 *                                             (POSIX_FADV_DONTNEED), then read() it whole in 64 KiB calls
 *                                             (read) or map it and touch every page (mmap); readahead off
 *                                             (FADV_RANDOM / MADV_RANDOM), so every page is one order-0
 *                                             page-cache insertion. Prints {"pages_s", "cpu_us_page"}
 *                                             (its own CPU time per page) as one JSON line.
 *   pagecache-bench work write DIR SECS       page-cache insertions without reads: create DIR/wPID, write
 *                                             256 KiB in 64 KiB calls, close, unlink, again; prints the same
 *   pagecache-bench trace [--buffer-kib=N] [--interval-ms=N] [--poll-percent=P] [--metadata] [--print] PATH...
 *                                             records the filesystems of PATH... with daemon/record/pagecache.c
 *                                             until SIGTERM/SIGINT, draining every interval (with
 *                                             --poll-percent, also as soon as poll() says a CPU's buffer is
 *                                             P% full: the instance's buffer_percent); at the end, one
 *                                             JSON line on stderr: events, pages, metadata_events, lost,
 *                                             seconds, events_s, cpu_ms (its own CPU time), drains.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "record/pagecache.h"

static double cpu_sec(void) {
        struct rusage ru;

        getrusage(RUSAGE_SELF, &ru);
        return (double) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
               (double) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* The workload's figures: wall-clock throughput, and its own CPU time per page (the tracepoint runs in the
 * context of the task that adds the page, so this is where its cost shows; it is also less sensitive to
 * other load on the machine than the throughput). */
static void report(unsigned long pages, double wall, double cpu) {
        printf("{\"pages_s\":%.0f,\"cpu_us_page\":%.3f}\n", (double) pages / wall, cpu * 1e6 / (double) pages);
}

static double now_sec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static int create(const char *dir, long n, long kib) {
        char *buf = malloc((size_t) kib * 1024);

        if (!buf)
                return 1;
        for (long i = 0; i < (long) kib * 1024; i++)
                buf[i] = (char) (i * 7 + 3);
        for (long i = 0; i < n; i++) {
                char path[4096];
                int fd;

                snprintf(path, sizeof path, "%s/f%06ld", dir, i);
                fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                if (fd < 0 || write(fd, buf, (size_t) kib * 1024) != kib * 1024) {
                        perror(path);
                        return 1;
                }
                close(fd);
        }
        free(buf);
        return 0;
}

static int work_write(const char *dir, double secs) {
        static char buf[65536];
        unsigned long pages = 0;
        double start = now_sec(), cpu0 = cpu_sec(), t;
        char path[4096];

        memset(buf, 'w', sizeof buf);
        snprintf(path, sizeof path, "%s/w%d", dir, (int) getpid());
        do {
                int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

                if (fd < 0) {
                        perror(path);
                        return 1;
                }
                for (int i = 0; i < 4; i++)
                        if (write(fd, buf, sizeof buf) != (ssize_t) sizeof buf) {
                                perror("write");
                                return 1;
                        }
                pages += 4 * sizeof buf / 4096;
                close(fd);
                unlink(path);
                t = now_sec() - start;
        } while (t < secs);
        report(pages, t, cpu_sec() - cpu0);
        return 0;
}

static int work(bool use_mmap, const char *dir, long n, double secs) {
        static char buf[65536];
        volatile unsigned long sum = 0;
        unsigned long pages = 0;
        double start = now_sec(), cpu0 = cpu_sec(), t;
        long i = 0;

        do {
                char path[4096];
                struct stat st;
                int fd;

                snprintf(path, sizeof path, "%s/f%06ld", dir, i);
                i = (i + 1) % n;
                fd = open(path, O_RDONLY);
                if (fd < 0 || fstat(fd, &st) < 0) {
                        perror(path);
                        return 1;
                }
                (void) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
                if (use_mmap) {
                        unsigned char *p = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED, fd, 0);
                        if (p == MAP_FAILED) {
                                perror("mmap");
                                return 1;
                        }
                        (void) madvise(p, (size_t) st.st_size, MADV_RANDOM);
                        for (off_t o = 0; o < st.st_size; o += 4096) {
                                sum += p[o];
                                pages++;
                        }
                        munmap(p, (size_t) st.st_size);
                } else {
                        ssize_t k;

                        (void) posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
                        while ((k = read(fd, buf, sizeof buf)) > 0)
                                pages += ((size_t) k + 4095) / 4096;
                }
                close(fd);
                t = now_sec() - start;
        } while (t < secs);
        report(pages, t, cpu_sec() - cpu0);
        return 0;
}

static volatile sig_atomic_t stop;
static void on_signal(int sig) {
        stop = 1;
}

typedef struct Counts {
        uint64_t events, pages, meta_events;
        bool print;
} Counts;

static void on_pages(const PageCacheEvent *e, void *userdata) {
        Counts *c = userdata;

        c->events++;
        c->pages += e->n_pages;
        if (e->ino == 0)
                c->meta_events++;
        if (c->print)
                printf("%" PRIu64 ".%09" PRIu64 " %d %u:%u %" PRIu64 " %" PRIu64 " %u\n",
                       e->timestamp_nsec / 1000000000, e->timestamp_nsec % 1000000000, (int) e->tid,
                       major(e->dev), minor(e->dev), e->ino, e->index, e->n_pages);
}

static int trace(int argc, char **argv) {
        static const struct option options[] = {
                { "buffer-kib",  required_argument, NULL, 'b' },
                { "interval-ms", required_argument, NULL, 'i' },
                { "metadata",    no_argument,       NULL, 'm' },
                { "print",       no_argument,       NULL, 'p' },
                { "poll-percent", required_argument, NULL, 'P' },
                {}
        };
        Counts counts = {};
        PageCacheOptions o = { .on_pages = on_pages, .userdata = &counts };
        _cleanup_(pagecache_freep) PageCache *p = NULL;
        dev_t devs[PAGECACHE_MAX_DEVICES];
        unsigned interval_ms = 100;
        int poll_percent = -1;
        struct rusage ru;
        uint64_t lost = 0;
        double start, t;
        int c, r, reads = 0;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'b': o.buffer_kib = (unsigned) atoi(optarg); break;
                case 'i': interval_ms = (unsigned) atoi(optarg); break;
                case 'm': o.metadata = true; break;
                case 'p': counts.print = true; break;
                case 'P': poll_percent = atoi(optarg); break;
                default: return 2;
                }
        if (optind >= argc || argc - optind > PAGECACHE_MAX_DEVICES)
                return 2;
        for (int i = optind; i < argc; i++) {
                struct stat st;
                if (stat(argv[i], &st) < 0) {
                        perror(argv[i]);
                        return 1;
                }
                devs[i - optind] = st.st_dev;
        }
        r = pagecache_new(&o, &p);
        if (r < 0) {
                fprintf(stderr, "pagecache_new: %s\n", strerror(-r));
                return 1;
        }
        r = pagecache_set_devices(p, devs, (size_t) (argc - optind));
        if (r >= 0)
                r = pagecache_enable(p, true);
        if (r < 0) {
                fprintf(stderr, "set up: %s\n", strerror(-r));
                return 1;
        }
        signal(SIGTERM, on_signal);
        signal(SIGINT, on_signal);
        fprintf(stderr, "tracing %s\n", pagecache_instance(p));
        start = now_sec();
        if (poll_percent >= 0) {
                char path[4096], v[16];
                int fd;

                snprintf(path, sizeof path, "%s/buffer_percent", pagecache_instance(p));
                snprintf(v, sizeof v, "%d", poll_percent);
                fd = open(path, O_WRONLY);
                if (fd < 0 || write(fd, v, strlen(v)) < 0) {
                        perror(path);
                        return 1;
                }
                close(fd);
        }
        while (!stop) {
                if (poll_percent >= 0) {
                        const int *fds;
                        size_t n = pagecache_fds(p, &fds);
                        struct pollfd pfd[256];

                        for (size_t i = 0; i < n && i < 256; i++)
                                pfd[i] = (struct pollfd) { .fd = fds[i], .events = POLLIN };
                        (void) poll(pfd, MIN(n, 256), (int) interval_ms);
                } else {
                        struct timespec ts = { interval_ms / 1000, (long) (interval_ms % 1000) * 1000000 };
                        nanosleep(&ts, NULL);
                }
                r = pagecache_read(p);
                if (r < 0) {
                        fprintf(stderr, "read: %s\n", strerror(-r));
                        return 1;
                }
                reads++;
        }
        (void) pagecache_enable(p, false);
        r = pagecache_read(p);
        t = now_sec() - start;
        (void) pagecache_lost(p, &lost);
        getrusage(RUSAGE_SELF, &ru);
        fprintf(stderr, "{\"events\":%" PRIu64 ",\"pages\":%" PRIu64 ",\"metadata_events\":%" PRIu64 ",\"lost\":%" PRIu64
                ",\"seconds\":%.2f,\"events_s\":%.0f,\"cpu_ms\":%.0f,\"drains\":%d}\n",
                counts.events, counts.pages, counts.meta_events, lost, t, (double) counts.events / t,
                (double) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                        (double) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3, reads);
        return 0;
}

int main(int argc, char **argv) {
        if (argc >= 5 && streq(argv[1], "create"))
                return create(argv[2], atol(argv[3]), atol(argv[4]));
        if (argc >= 6 && streq(argv[1], "work") && (streq(argv[2], "read") || streq(argv[2], "mmap")))
                return work(streq(argv[2], "mmap"), argv[3], atol(argv[4]), atof(argv[5]));
        if (argc >= 5 && streq(argv[1], "work") && streq(argv[2], "write"))
                return work_write(argv[3], atof(argv[4]));
        if (argc >= 2 && streq(argv[1], "trace"))
                return trace(argc - 1, argv + 1);
        fprintf(stderr, "usage: see the head of bench/pagecache-bench.c\n");
        return 2;
}
