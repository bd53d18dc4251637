/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf-pages: what the BPF page recorder (daemon/record-bpf/) costs a process nobody watches, and one
 * that is watched, on a hot loop of 4 KiB pread()s of a cached file (every pread raises
 * mm_filemap_get_pages, where the kernel has it).
 *
 *   bpf-pages [PREADS [ROUNDS [DIR]]]          (defaults: 1000000 5 /var/tmp)
 *
 * A 1 MiB file in DIR, read once (cached), then ROUNDS rounds of three loops of PREADS preads each, side
 * by side: programs not attached; attached with nobody watched; attached with this process watched (the
 * same 256 pages again and again: after the first pass, each pread is an event the kernel drops as seen).
 * Odd rounds run them in that order, even rounds in the other (a drift within a round cancels out).
 * Prints CPU ns per pread and the ratios to "not attached" per round, and their medians. Needs root (BPF; tracefs
 * is mounted in a mount namespace of its own if the system has none).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

#include "record-bpf/bpf-pages.h"

#define TRACEFS "/sys/kernel/tracing"
#define FILE_PAGES 256
#define MAX_ROUNDS 64

enum { OFF, IDLE, WATCHED, _MODES };
static const char *const mode_names[_MODES] = { "not attached", "attached, nobody watched",
                                                "attached, this process watched" };

static unsigned long events;

static void on_event(const BpfPageEvent *e, void *userdata) {
        events++;
}

/* The CPU time this thread used (user and system): on a loaded machine the wall clock also counts the
 * time the loop waited for a CPU, which has nothing to do with what a pread costs. */
static double now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* ns per pread */
static double loop(int fd, long preads) {
        char buf[4096];
        double t = now_ns();

        for (long i = 0; i < preads; i++)
                if (pread(fd, buf, sizeof buf, (off_t) (i % FILE_PAGES) * 4096) != (ssize_t) sizeof buf) {
                        perror("pread");
                        exit(1);
                }
        return (now_ns() - t) / (double) preads;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
        qsort(v, (size_t) n, sizeof *v, cmp_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
        long preads = argc > 1 ? atol(argv[1]) : 1000000;
        int rounds = argc > 2 ? atoi(argv[2]) : 5;
        const char *dir = argc > 3 ? argv[3] : "/var/tmp";
        BpfPagesOptions o = { .tracefs = TRACEFS, .on_event = on_event };
        double ns[_MODES][MAX_ROUNDS], ratio[_MODES][MAX_ROUNDS];
        char path[4096], buf[4096];
        unsigned attached = 0;
        uint64_t lost = 0;
        int fd, r;

        if (preads <= 0 || rounds <= 0 || rounds > MAX_ROUNDS) {
                fprintf(stderr, "usage: bpf-pages [PREADS [ROUNDS (1-%d) [DIR]]]\n", MAX_ROUNDS);
                return 2;
        }
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                perror("bpf-pages: a mount namespace of our own (root?)");
                return 1;
        }
        if (access(TRACEFS "/events", F_OK) < 0 && mount("tracefs", TRACEFS, "tracefs", 0, NULL) < 0) {
                perror("bpf-pages: tracefs");
                return 1;
        }

        snprintf(path, sizeof path, "%s/seekless-bench-bpf-pages.XXXXXX", dir);
        fd = mkstemp(path);
        if (fd < 0) {
                perror("bpf-pages: mkstemp");
                return 1;
        }
        (void) unlink(path);
        memset(buf, 'x', sizeof buf);
        for (int i = 0; i < FILE_PAGES; i++)
                if (write(fd, buf, sizeof buf) != (ssize_t) sizeof buf) {
                        perror("bpf-pages: write");
                        return 1;
                }
        (void) loop(fd, FILE_PAGES);      /* cached */

        printf("%ld preads of 4 KiB over a cached 1 MiB file, %d rounds of the three modes, in one order and\n"
               "then the other: CPU ns per pread (%s / %s / %s)\n", preads, rounds, mode_names[OFF],
               mode_names[IDLE], mode_names[WATCHED]);
        for (int round = 0; round < rounds; round++) {
                bool forward = round % 2 == 0;
                BpfPages *p = NULL;

                if (forward)
                        ns[OFF][round] = loop(fd, preads);
                r = bpf_pages_new(&o, &p);
                if (r < 0) {
                        fprintf(stderr, "bpf-pages: bpf_pages_new: %s\n", strerror(-r));
                        return 1;
                }
                attached = bpf_pages_attached(p);
                if (forward)
                        ns[IDLE][round] = loop(fd, preads);
                r = bpf_pages_watch(p, getpid(), (uint32_t) round + 1);
                if (r < 0) {
                        fprintf(stderr, "bpf-pages: bpf_pages_watch: %s\n", strerror(-r));
                        return 1;
                }
                ns[WATCHED][round] = loop(fd, preads);
                r = bpf_pages_unwatch(p, getpid());
                if (r < 0) {
                        fprintf(stderr, "bpf-pages: bpf_pages_unwatch: %s\n", strerror(-r));
                        return 1;
                }
                if (!forward)
                        ns[IDLE][round] = loop(fd, preads);
                while (bpf_pages_consume(p, 0) > 0)
                        ;
                if (bpf_pages_lost(p, &lost) < 0)
                        lost = UINT64_MAX;
                bpf_pages_free(p);
                if (!forward)
                        ns[OFF][round] = loop(fd, preads);
                ratio[IDLE][round] = ns[IDLE][round] / ns[OFF][round];
                ratio[WATCHED][round] = ns[WATCHED][round] / ns[OFF][round];
                printf("round %d (%s): %.1f / %.1f / %.1f; ratios %.3f / %.3f; %lu records, %llu lost\n",
                       round + 1, forward ? "forward" : "backward", ns[OFF][round], ns[IDLE][round],
                       ns[WATCHED][round], ratio[IDLE][round], ratio[WATCHED][round], events,
                       (unsigned long long) lost);
                events = 0;
        }
        close(fd);

        printf("use tracepoints attached: %s\n",
               attached & (1u << BPF_PAGE_GET_PAGES) ? "yes (get_pages raised by every pread)" :
               "no (this kernel has none: only insertions, which a cached file does not raise)");
        for (int m = 0; m < _MODES; m++)
                printf("%-32s median %.1f CPU ns per pread, median ratio to not attached %.3f\n", mode_names[m],
                       median(ns[m], rounds), m == OFF ? 1.0 : median(ratio[m], rounds));
        return 0;
}
