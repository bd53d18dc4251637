/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/macro.h"
#include "record/proc-events.h"

int proc_events_open(void) {
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_nl sa = {
                .nl_family = AF_NETLINK,
                .nl_groups = CN_IDX_PROC,
        };
        struct {
                struct nlmsghdr nl;
                struct cn_msg cn;
                enum proc_cn_mcast_op op;
        } __attribute__((packed)) req = {
                .nl.nlmsg_len = sizeof req,
                .nl.nlmsg_type = NLMSG_DONE,
                .cn.id = { .idx = CN_IDX_PROC, .val = CN_VAL_PROC },
                .cn.len = sizeof(enum proc_cn_mcast_op),
                .op = PROC_CN_MCAST_LISTEN,
        };
        int sz = 4 * 1024 * 1024;

        fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
        if (fd < 0)
                return -errno;
        /* fork storms at boot: give the kernel room before it drops messages (ENOBUFS) */
        (void) setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof sz);
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                return -errno;
        if (send(fd, &req, sizeof req, 0) != (ssize_t) sizeof req)
                return -errno;
        return TAKE_FD(fd);
}

int proc_events_drain(int fd, const ProcEventHandlers *handlers, void *userdata) {
        union {
                struct nlmsghdr nl;
                char buf[8192];
        } u;
        int n_forks = 0;

        for (;;) {
                ssize_t n = recv(fd, u.buf, sizeof u.buf, 0);

                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return n_forks;
                        if (errno == ENOBUFS) {
                                /* some were lost; attribution falls back to /proc */
                                if (handlers->lost)
                                        handlers->lost(userdata);
                                continue;
                        }
                        return -errno;
                }
                for (struct nlmsghdr *h = &u.nl; NLMSG_OK(h, (size_t) n); h = NLMSG_NEXT(h, n)) {
                        const struct cn_msg *cn = NLMSG_DATA(h);
                        struct proc_event ev;

                        if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_NOOP)
                                continue;
                        if (h->nlmsg_len < NLMSG_LENGTH(sizeof *cn + sizeof ev))
                                continue;
                        if (cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC)
                                continue;
                        /* copied out: the event lies 4 bytes past an 8-byte boundary (after the 16-byte
                         * netlink and 20-byte connector headers) and holds a 64-bit timestamp */
                        memcpy(&ev, cn->data, sizeof ev);
                        if (ev.what == PROC_EVENT_UID) {
                                if (handlers->uid)
                                        handlers->uid(ev.event_data.id.process_tgid, ev.event_data.id.r.ruid,
                                                      userdata);
                                continue;
                        }
                        if (ev.what != PROC_EVENT_FORK)
                                continue;
                        /* new threads share the parent's tgid: page events name threads */
                        if (ev.event_data.fork.child_pid != ev.event_data.fork.child_tgid) {
                                if (handlers->thread)
                                        handlers->thread(ev.event_data.fork.child_pid,
                                                         ev.event_data.fork.child_tgid, userdata);
                                continue;
                        }
                        if (handlers->fork)
                                handlers->fork(ev.event_data.fork.child_tgid, ev.event_data.fork.parent_tgid,
                                               userdata);
                        n_forks++;
                }
        }
}
