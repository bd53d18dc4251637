/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Test program: open, read and close the given files in the given order.
 *   open-files [--child] [--sleep-ms=N] FILE...
 * --child: a forked child does the opens (tests attribution to descendants); the parent waits for it.
 * --sleep-ms: pause between files. Exits non-zero if any file can't be read. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int read_all(int argc, char **argv, int first, long sleep_ms) {
        char buf[65536];

        for (int i = first; i < argc; i++) {
                int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
                ssize_t n;

                if (fd < 0) {
                        perror(argv[i]);
                        return 1;
                }
                while ((n = read(fd, buf, sizeof buf)) > 0)
                        ;
                close(fd);
                if (sleep_ms > 0)
                        nanosleep(&(struct timespec) { sleep_ms / 1000, (sleep_ms % 1000) * 1000000L }, NULL);
        }
        return 0;
}

int main(int argc, char **argv) {
        int first = 1, child = 0, status;
        long sleep_ms = 0;
        pid_t pid;

        for (; first < argc && strncmp(argv[first], "--", 2) == 0; first++)
                if (strcmp(argv[first], "--child") == 0)
                        child = 1;
                else if (strncmp(argv[first], "--sleep-ms=", 11) == 0)
                        sleep_ms = atol(argv[first] + 11);
        if (!child)
                return read_all(argc, argv, first, sleep_ms);
        pid = fork();
        if (pid < 0)
                return 1;
        if (pid == 0)
                _exit(read_all(argc, argv, first, sleep_ms));
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
                return 1;
        return WEXITSTATUS(status);
}
