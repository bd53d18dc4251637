/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/macro.h"
#include "record/pagecache.h"

/* The page-cache recording's reader: a thread that owns the PageCache's buffers, poll()s them (woken when a
 * CPU's buffer is PAGE_READER_BUFFER_PERCENT full, and every PAGE_READER_TIMEOUT_MSEC while the event is
 * on), drains them into a queue and tells the main loop through an eventfd. A thread rather than event
 * sources in the main loop: the main loop stores and merges sessions in SQLite, which can take hundreds of
 * milliseconds for a big boot, and 1 MiB per CPU holds about 23,500 events, 0.6 s of a disk that delivers
 * 40,000 pages/s; losses came from the consumer not being scheduled in time, not from its CPU time (40-90
 * ns per event), doc/page-recording.md §3. While the event is off the thread sleeps in poll() without a
 * timeout: nothing runs outside windows. */
#define PAGE_READER_BUFFER_PERCENT 25
#define PAGE_READER_TIMEOUT_MSEC 250

typedef struct PageReader PageReader;

/* Reaps stale instances of the prefix, creates ours (event off, no devices) and starts the thread.
 * o->on_pages is not used (the queue is). -ENOENT: no tracefs there or no such event. */
int page_reader_new(const PageCacheOptions *o, PageReader **ret);
PageReader *page_reader_free(PageReader *r);     /* stops the thread, event off, instance removed */
DEFINE_TRIVIAL_CLEANUP_FUNC(PageReader *, page_reader_free);

/* Readable (an eventfd) when events or lost counts wait to be taken. */
int page_reader_fd(PageReader *r);

/* The filesystems to record (pagecache_set_devices()). With metadata wanted, where a block device's own pages
 * are is learned first, unless known already (pagecache_learn_bdev()): *ret_metadata is what that returned
 * (1 once known; -EBUSY while the event is on and it is not known yet: learned at a later call). */
int page_reader_set_devices(PageReader *r, const dev_t *devs, size_t n, int *ret_metadata);
int page_reader_bdev(PageReader *r, dev_t *ret);       /* pagecache_bdev() */

/* Event on or off; thread-safe (the exec thread switches it on before it allows an exec). Writes to
 * tracefs only when the state changes. Returns 1 if it changed, 0 if not, negative errno. */
int page_reader_enable(PageReader *r, bool on);
bool page_reader_enabled(PageReader *r);

/* Drains the kernel's buffers now, on the caller's thread (before a window closes). */
int page_reader_drain(PageReader *r);

/* Takes what was queued: events sorted by timestamp (the caller frees them) and how many events the kernel
 * lost since the last take. */
int page_reader_take(PageReader *r, PageCacheEvent **ret, size_t *ret_n, uint64_t *ret_lost);
