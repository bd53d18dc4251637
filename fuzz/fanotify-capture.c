/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Writes one buffer as read() from a fanotify group, for the fanotify fuzz target's seeds: the group reports
 * reads (FAN_ACCESS) on the whole filesystem of MOUNT with file handles, like seeklessd's; this program
 * reads FILE... itself, and a child process reads the first one again and the others in reverse, so the
 * buffer holds two pids' events.
 *   usage: fanotify-capture fid|dfid-name|pidfd OUT MOUNT FILE...
 * fid: FAN_REPORT_FID, what seeklessd asks for on kernels before 5.9; dfid-name: FAN_REPORT_DFID_NAME as
 * well, what it asks for from 5.9 on (a second info record before the file's, of another type); pidfd: FAN_REPORT_PIDFD as well (an info record of a
 * process fd after the file's). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef FAN_REPORT_PIDFD
#define FAN_REPORT_PIDFD 0x00000080
#endif

static void read_file(const char *path) {
        char buf[4096];
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0) {
                perror(path);
                exit(EXIT_FAILURE);
        }
        while (read(fd, buf, sizeof buf) > 0)
                ;
        close(fd);
}

int main(int argc, char *argv[]) {
        static char buf[64 * 1024] __attribute__((aligned(8)));
        unsigned flags = FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_REPORT_FID;
        ssize_t n, total = 0;
        pid_t child;
        int fan, out;

        if (argc < 5) {
                fprintf(stderr, "usage: %s fid|dfid-name|pidfd OUT MOUNT FILE...\n", argv[0]);
                return EXIT_FAILURE;
        }
        if (strcmp(argv[1], "dfid-name") == 0)
                flags |= FAN_REPORT_DFID_NAME;
        else if (strcmp(argv[1], "pidfd") == 0)
                flags |= FAN_REPORT_PIDFD;
        else if (strcmp(argv[1], "fid") != 0) {
                fprintf(stderr, "unknown mode %s\n", argv[1]);
                return EXIT_FAILURE;
        }
        fan = fanotify_init(flags, O_RDONLY | O_CLOEXEC);
        if (fan < 0 || fanotify_mark(fan, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_ACCESS, AT_FDCWD, argv[3]) < 0) {
                perror("fanotify");
                return EXIT_FAILURE;
        }
        for (int i = 4; i < argc; i++)
                read_file(argv[i]);
        child = fork();
        if (child < 0)
                return EXIT_FAILURE;
        if (child == 0) {
                read_file(argv[4]);
                for (int i = argc - 1; i > 4; i--)
                        read_file(argv[i]);
                _exit(EXIT_SUCCESS);
        }
        if (waitpid(child, NULL, 0) < 0)
                return EXIT_FAILURE;
        /* everything queued so far, in as few reads as it takes, as one buffer */
        for (;;) {
                struct pollfd p = { .fd = fan, .events = POLLIN };

                if (poll(&p, 1, 200) <= 0 || (size_t) total + 4096 > sizeof buf)
                        break;
                n = read(fan, buf + total, sizeof buf - (size_t) total);
                if (n <= 0)
                        break;
                total += n;
        }
        out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (out < 0 || write(out, buf, (size_t) total) != total || close(out) < 0) {
                perror(argv[2]);
                return EXIT_FAILURE;
        }
        fprintf(stderr, "%s: %zd bytes\n", argv[2], total);
        return EXIT_SUCCESS;
}
