/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/alloc-util.h"
#include "record/page-reader.h"

/* Bounds the queue if the main loop stops taking (a stuck loop must not eat the machine's memory): what
 * does not fit is counted as lost. 1 M events are 40 MiB, 25 s of a rotating disk's 40,000 pages/s. */
#define PAGE_READER_QUEUE_MAX (1024u * 1024)

struct PageReader {
        PageCache *cache;
        pthread_mutex_t lock;           /* cache's buffers and devices, the queue, lost counts */
        pthread_mutex_t enable_lock;    /* the event switch (never held while draining) */
        bool on;
        int wake_fd;                    /* eventfd: the thread looks at `on` again, or stops */
        bool stop;
        int notify_fd;                  /* eventfd: the main loop has something to take */
        pthread_t thread;
        bool thread_started;

        PageCacheEvent *queue;
        size_t n_queue, allocated_queue;
        uint64_t lost_seen;             /* the kernel's count at the last drain */
        uint64_t lost_new;              /* growth not taken yet */
};

static void on_pages(const PageCacheEvent *e, void *userdata) {
        PageReader *r = userdata;

        if (r->n_queue >= PAGE_READER_QUEUE_MAX ||
            GREEDY_REALLOC(r->queue, r->allocated_queue, r->n_queue + 1) < 0) {
                r->lost_new++;
                return;
        }
        r->queue[r->n_queue++] = *e;
}

/* With lock held. Returns whether anything new is there for the main loop. */
static bool drain_locked(PageReader *r) {
        size_t before = r->n_queue;
        uint64_t lost = 0, grown = r->lost_new;

        (void) pagecache_read(r->cache);
        if (pagecache_lost(r->cache, &lost) >= 0 && lost > r->lost_seen) {
                r->lost_new += lost - r->lost_seen;
                r->lost_seen = lost;
        }
        return r->n_queue > before || r->lost_new > grown;
}

static void notify(PageReader *r) {
        uint64_t one = 1;

        (void) !write(r->notify_fd, &one, sizeof one);
}

static void *reader_thread(void *userdata) {
        PageReader *r = userdata;
        const int *fds;
        size_t n = pagecache_fds(r->cache, &fds);
        _cleanup_free_ struct pollfd *p = calloc(n + 1, sizeof *p);

        if (!p)
                return NULL;
        for (size_t i = 0; i < n; i++)
                p[i] = (struct pollfd) { .fd = fds[i], .events = POLLIN };
        p[n] = (struct pollfd) { .fd = r->wake_fd, .events = POLLIN };

        for (;;) {
                bool on, more;
                uint64_t v;

                pthread_mutex_lock(&r->enable_lock);
                on = r->on;
                pthread_mutex_unlock(&r->enable_lock);
                /* off: sleep until switched on (the buffers may still hold the last events of a window,
                 * drained by the main loop or left to be dropped as older than any later session) */
                if (poll(on ? p : p + n, on ? n + 1 : 1, on ? PAGE_READER_TIMEOUT_MSEC : -1) < 0 && errno != EINTR)
                        break;
                if (p[n].revents & POLLIN)
                        (void) !read(r->wake_fd, &v, sizeof v);
                pthread_mutex_lock(&r->lock);
                if (r->stop) {
                        pthread_mutex_unlock(&r->lock);
                        break;
                }
                more = on && drain_locked(r);
                pthread_mutex_unlock(&r->lock);
                if (more)
                        notify(r);
        }
        return NULL;
}

static void wake(PageReader *r) {
        uint64_t one = 1;

        (void) !write(r->wake_fd, &one, sizeof one);
}

int page_reader_new(const PageCacheOptions *o, PageReader **ret) {
        _cleanup_(page_reader_freep) PageReader *r = NULL;
        PageCacheOptions opts = *o;
        int k;

        r = calloc(1, sizeof *r);
        if (!r)
                return -ENOMEM;
        pthread_mutex_init(&r->lock, NULL);
        pthread_mutex_init(&r->enable_lock, NULL);
        r->wake_fd = r->notify_fd = -EBADF;
        if (!opts.tracefs)
                opts.tracefs = "/sys/kernel/tracing";
        if (!opts.prefix)
                opts.prefix = "seekless-";
        (void) pagecache_reap(opts.tracefs, opts.prefix);
        opts.on_pages = on_pages;
        opts.userdata = r;
        k = pagecache_new(&opts, &r->cache);
        if (k < 0)
                return k;
        k = pagecache_set_buffer_percent(r->cache, PAGE_READER_BUFFER_PERCENT);
        if (k < 0)
                return k;
        (void) pagecache_lost(r->cache, &r->lost_seen);
        r->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        r->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (r->wake_fd < 0 || r->notify_fd < 0)
                return -errno;
        k = pthread_create(&r->thread, NULL, reader_thread, r);
        if (k != 0)
                return -k;
        r->thread_started = true;
        *ret = TAKE_PTR(r);
        return 0;
}

PageReader *page_reader_free(PageReader *r) {
        if (!r)
                return NULL;
        if (r->thread_started) {
                pthread_mutex_lock(&r->lock);
                r->stop = true;
                pthread_mutex_unlock(&r->lock);
                wake(r);
                pthread_join(r->thread, NULL);
        }
        pagecache_free(r->cache);
        safe_close(r->wake_fd);
        safe_close(r->notify_fd);
        free(r->queue);
        pthread_mutex_destroy(&r->lock);
        pthread_mutex_destroy(&r->enable_lock);
        free(r);
        return NULL;
}

int page_reader_fd(PageReader *r) {
        return r->notify_fd;
}

int page_reader_set_devices(PageReader *r, const dev_t *devs, size_t n, int *ret_metadata) {
        int k, m;

        pthread_mutex_lock(&r->lock);
        /* learning switches the event on for a moment (only while it is off: -EBUSY else): nobody else may
         * switch it meanwhile (the exec thread waits the few milliseconds it takes, once) */
        pthread_mutex_lock(&r->enable_lock);
        m = pagecache_learn_bdev(r->cache, devs, n);
        pthread_mutex_unlock(&r->enable_lock);
        k = pagecache_set_devices(r->cache, devs, n);
        pthread_mutex_unlock(&r->lock);
        if (ret_metadata)
                *ret_metadata = m;
        return k;
}

int page_reader_bdev(PageReader *r, dev_t *ret) {
        int k;

        pthread_mutex_lock(&r->lock);
        k = pagecache_bdev(r->cache, ret);
        pthread_mutex_unlock(&r->lock);
        return k;
}

int page_reader_enable(PageReader *r, bool on) {
        int k = 0;

        pthread_mutex_lock(&r->enable_lock);
        if (r->on != on) {
                k = pagecache_enable(r->cache, on);
                if (k >= 0) {
                        r->on = on;
                        k = 1;
                }
        }
        pthread_mutex_unlock(&r->enable_lock);
        if (k > 0)
                wake(r);
        return k;
}

bool page_reader_enabled(PageReader *r) {
        bool on;

        pthread_mutex_lock(&r->enable_lock);
        on = r->on;
        pthread_mutex_unlock(&r->enable_lock);
        return on;
}

int page_reader_drain(PageReader *r) {
        pthread_mutex_lock(&r->lock);
        (void) drain_locked(r);
        pthread_mutex_unlock(&r->lock);
        return 0;
}

static int cmp_event(const void *a, const void *b) {
        const PageCacheEvent *x = a, *y = b;

        return x->timestamp_nsec < y->timestamp_nsec ? -1 : x->timestamp_nsec > y->timestamp_nsec;
}

int page_reader_take(PageReader *r, PageCacheEvent **ret, size_t *ret_n, uint64_t *ret_lost) {
        uint64_t v;

        (void) !read(r->notify_fd, &v, sizeof v);
        pthread_mutex_lock(&r->lock);
        *ret = TAKE_PTR(r->queue);
        *ret_n = r->n_queue;
        *ret_lost = r->lost_new;
        r->n_queue = r->allocated_queue = 0;
        r->lost_new = 0;
        pthread_mutex_unlock(&r->lock);
        /* per CPU each is in order: a stable merge would do, a sort is simpler and n log n of a drain */
        if (*ret_n > 1)
                qsort(*ret, *ret_n, sizeof **ret, cmp_event);
        return 0;
}
