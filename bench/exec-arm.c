/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * exec-arm: what launch recording would miss if seeklessd learned of execs from the kernel's
 * process-events connector (which costs nothing on open and read) instead of holding a
 * FAN_OPEN_EXEC_PERM mark (which costs every open and read of the filesystem, bench/record.sh part h).
 *
 *   exec-arm MOUNT RUNS PROGRAM [ARG...]
 *
 * Per run: a fanotify group marks MOUNT's filesystem for FAN_OPEN before PROGRAM is started (the
 * truth: what a permission mark, answered before the exec goes on, sees), and a second group is marked
 * only once the connector reports the exec of PROGRAM's process: the best a daemon could do, as this
 * process does nothing else meanwhile. Prints per run the opens of PROGRAM's process on MOUNT's
 * filesystem that each group saw, and how many the late one missed (they are its first opens:
 * ld.so.cache and the libraries). Needs root (fanotify, the connector).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int fail(const char *what) {
        fprintf(stderr, "exec-arm: %s: %s\n", what, strerror(errno));
        return 1;
}

/* FAN_OPEN events of pid still queued in the group */
static unsigned opens_of(int fan, pid_t pid) {
        static char buf[65536];
        unsigned n = 0;
        ssize_t len;

        while ((len = read(fan, buf, sizeof buf)) > 0)
                for (struct fanotify_event_metadata *m = (void *) buf; FAN_EVENT_OK(m, len);
                     m = FAN_EVENT_NEXT(m, len))
                        if (m->pid == pid && (m->mask & FAN_OPEN))
                                n++;
        return n;
}

static int connector_open(void) {
        struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC, .nl_pid = (__u32) getpid() };
        struct {
                struct nlmsghdr h;
                struct cn_msg c;
                enum proc_cn_mcast_op op;
        } __attribute__((packed)) req = {
                .h = { .nlmsg_len = sizeof req, .nlmsg_type = NLMSG_DONE, .nlmsg_pid = (__u32) getpid() },
                .c = { .id = { .idx = CN_IDX_PROC, .val = CN_VAL_PROC }, .len = sizeof(enum proc_cn_mcast_op) },
                .op = PROC_CN_MCAST_LISTEN,
        };
        int fd = socket(PF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_CONNECTOR);

        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0 || send(fd, &req, sizeof req, 0) < 0)
                return -1;
        return fd;
}

/* blocks until the connector reports the exec of pid's process */
static int wait_exec(int nl, pid_t pid) {
        char buf[4096] __attribute__((aligned(NLMSG_ALIGNTO)));

        for (;;) {
                ssize_t len = recv(nl, buf, sizeof buf, 0);
                const struct proc_event *e;

                if (len < 0 && errno == EINTR)
                        continue;
                if (len < (ssize_t) (NLMSG_HDRLEN + sizeof(struct cn_msg) + sizeof(struct proc_event)))
                        return -1;
                e = (const void *) ((const struct cn_msg *) NLMSG_DATA((struct nlmsghdr *) buf))->data;
                if (e->what == PROC_EVENT_EXEC && e->event_data.exec.process_tgid == pid)
                        return 0;
        }
}

int main(int argc, char **argv) {
        int runs, nl;

        if (argc < 4 || (runs = atoi(argv[2])) < 1) {
                fprintf(stderr, "usage: exec-arm MOUNT RUNS PROGRAM [ARG...]\n");
                return 2;
        }
        nl = connector_open();
        if (nl < 0)
                return fail("process-events connector");
        for (int r = 0; r < runs; r++) {
                int truth = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_FID, O_RDONLY);
                int late = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_FID, O_RDONLY);
                unsigned n_truth, n_late;
                pid_t pid;

                if (truth < 0 || late < 0 ||
                    fanotify_mark(truth, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_OPEN, AT_FDCWD, argv[1]) < 0)
                        return fail("fanotify");
                pid = fork();
                if (pid < 0)
                        return fail("fork");
                if (pid == 0) {
                        int null = open("/dev/null", O_WRONLY);

                        if (null >= 0)
                                dup2(null, STDOUT_FILENO);
                        execv(argv[3], argv + 3);
                        _exit(127);
                }
                if (wait_exec(nl, pid) < 0)
                        return fail("connector message");
                if (fanotify_mark(late, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_OPEN, AT_FDCWD, argv[1]) < 0)
                        return fail("fanotify_mark");
                waitpid(pid, NULL, 0);
                n_truth = opens_of(truth, pid);
                n_late = opens_of(late, pid);
                printf("run %d: opens %u, seen by the mark placed at the connector's exec event %u, missed %u\n",
                       r + 1, n_truth, n_late, n_truth - n_late);
                close(truth);
                close(late);
        }
        return 0;
}
