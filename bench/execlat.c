/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * execlat: how long an exec takes, from fork to the child's exit, for a program that exits at once.
 *
 *   execlat [--quiet-pid=PID] LABEL RUNS PROGRAM [ARG...]
 *
 * Runs PROGRAM RUNS times, one after the other, and prints one JSON line: LABEL, the runs, and the median,
 * 90th and 99th percentile and the maximum of the times, in microseconds. With --quiet-pid, before each run
 * it waits (up to 10 s) until the process PID (a seeklessd) holds no fanotify mark but its exec permission
 * marks (mask 40000, read from /proc/PID/fdinfo): each exec is then the first of a quiet daemon, the one
 * that opens a launch window. Needs nothing else; bench/exec-latency.sh runs it.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000 + (uint64_t) ts.tv_nsec;
}

/* fanotify marks of pid's groups other than exec permission marks; -1 if pid is gone */
static int read_marks(pid_t pid) {
        char dir[64], path[600], line[512];
        struct dirent *de;
        DIR *d;
        int n = 0;

        snprintf(dir, sizeof dir, "/proc/%d/fdinfo", (int) pid);
        d = opendir(dir);
        if (!d)
                return -1;
        while ((de = readdir(d))) {
                FILE *f;

                if (de->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
                f = fopen(path, "re");
                if (!f)
                        continue;
                while (fgets(line, sizeof line, f))
                        if (strncmp(line, "fanotify ", 9) == 0 && strstr(line, " mask:") &&
                            !strstr(line, " mask:40000 "))
                                n++;
                fclose(f);
        }
        closedir(d);
        return n;
}

static int wait_quiet(pid_t pid) {
        for (int i = 0; i < 10000; i++) {
                int n = read_marks(pid);

                if (n < 0)
                        return -1;
                if (n == 0)
                        return 0;
                usleep(1000);
        }
        return -1;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
        pid_t quiet = 0;
        uint64_t *t;
        long runs;
        int a = 1;

        if (a < argc && strncmp(argv[a], "--quiet-pid=", 12) == 0)
                quiet = (pid_t) atol(argv[a++] + 12);
        if (argc - a < 3) {
                fprintf(stderr, "usage: execlat [--quiet-pid=PID] LABEL RUNS PROGRAM [ARG...]\n");
                return 2;
        }
        runs = atol(argv[a + 1]);
        if (runs <= 0 || !(t = calloc((size_t) runs, sizeof *t)))
                return 2;
        for (long i = 0; i < runs; i++) {
                uint64_t t0;
                pid_t pid;
                int status;

                if (quiet > 0 && wait_quiet(quiet) < 0) {
                        fprintf(stderr, "execlat: pid %d did not go quiet\n", (int) quiet);
                        return 1;
                }
                t0 = now_ns();
                pid = fork();
                if (pid < 0)
                        return 1;
                if (pid == 0) {
                        execv(argv[a + 2], argv + a + 2);
                        _exit(127);
                }
                if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                        fprintf(stderr, "execlat: %s failed\n", argv[a + 2]);
                        return 1;
                }
                t[i] = (now_ns() - t0) / 1000;
        }
        qsort(t, (size_t) runs, sizeof *t, cmp_u64);
        printf("{\"bench\":\"exec-latency\",\"label\":\"%s\",\"runs\":%ld,\"median_us\":%llu,\"p90_us\":%llu,"
               "\"p99_us\":%llu,\"max_us\":%llu}\n",
               argv[a], runs, (unsigned long long) t[runs / 2], (unsigned long long) t[runs * 9 / 10],
               (unsigned long long) t[runs * 99 / 100], (unsigned long long) t[runs - 1]);
        return 0;
}
