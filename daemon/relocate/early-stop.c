/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "relocate/early-stop.h"
#include "common/macro.h"

struct EarlyStop {
        atomic_bool *cancel;
        atomic_int signal;
        int timer_fd, signal_fd, done_fd;
        pthread_t thread;
        bool started;
};

static void *watch(void *userdata) {
        EarlyStop *s = userdata;
        struct pollfd p[] = {
                { .fd = s->done_fd, .events = POLLIN },
                { .fd = s->signal_fd, .events = POLLIN },
                { .fd = s->timer_fd, .events = POLLIN },
        };

        for (;;) {
                if (poll(p, ELEMENTSOF(p), -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        atomic_store(s->cancel, true);  /* nothing watches the budget any more */
                        return NULL;
                }
                if (p[0].revents)
                        return NULL;
                if (p[1].revents) {
                        struct signalfd_siginfo si;

                        if (read(s->signal_fd, &si, sizeof si) == (ssize_t) sizeof si) {
                                /* the signal first: whoever sees the cancel asks why */
                                atomic_store(&s->signal, (int) si.ssi_signo);
                                atomic_store(s->cancel, true);
                                return NULL;
                        }
                }
                if (p[2].revents) {
                        atomic_store(s->cancel, true);
                        p[2].fd = -1;   /* spent; a signal still ends the pass sooner (no further filesystem) */
                }
        }
}

EarlyStop *early_stop_free(EarlyStop *s) {
        if (!s)
                return NULL;
        if (s->started) {
                (void) eventfd_write(s->done_fd, 1);
                (void) pthread_join(s->thread, NULL);
        }
        safe_close(s->timer_fd);
        safe_close(s->signal_fd);
        safe_close(s->done_fd);
        free(s);
        return NULL;
}

int early_stop_start(uint64_t budget_usec, atomic_bool *cancel, EarlyStop **ret) {
        EarlyStop *s;
        sigset_t mask;
        int r;

        if (budget_usec == 0)
                atomic_store(cancel, true);     /* deterministically nothing, not what fits before a timer */
        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        *s = (EarlyStop) { .cancel = cancel, .timer_fd = -EBADF, .signal_fd = -EBADF, .done_fd = -EBADF };
        atomic_init(&s->signal, 0);

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        r = -pthread_sigmask(SIG_BLOCK, &mask, NULL);
        if (r < 0)
                goto fail;
        s->signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        s->timer_fd = timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK);
        s->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->signal_fd < 0 || s->timer_fd < 0 || s->done_fd < 0) {
                r = -errno;
                goto fail;
        }
        if (budget_usec > 0) {
                struct itimerspec its = {
                        .it_value.tv_sec = (time_t) (budget_usec / USEC_PER_SEC),
                        .it_value.tv_nsec = (long) (budget_usec % USEC_PER_SEC) * 1000,
                };
                if (timerfd_settime(s->timer_fd, 0, &its, NULL) < 0) {
                        r = -errno;
                        goto fail;
                }
        }
        r = -pthread_create(&s->thread, NULL, watch, s);
        if (r < 0)
                goto fail;
        s->started = true;
        /* named, so that one can tell from /proc whether it still watches */
        (void) pthread_setname_np(s->thread, "seekless-stop");
        *ret = s;
        return 0;
fail:
        atomic_store(cancel, true);     /* unwatched, the pass would have no limit: it moves nothing */
        early_stop_free(s);
        return r;
}

int early_stop_signal(EarlyStop *s) {
        return s ? atomic_load(&s->signal) : 0;
}
