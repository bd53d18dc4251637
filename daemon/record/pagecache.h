/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/macro.h"

/* Page-cache recording: every page the kernel adds to the page cache for a file of the given filesystems
 * (a read(), a page fault on a mapping, readahead, an exec), and optionally every page of their block
 * devices (ext4's metadata: inode tables, directories, extent blocks), through the tracepoint
 * filemap:mm_filemap_add_to_page_cache in a tracefs instance of our own with an in-kernel filter on the
 * devices (doc/kernel.md §5, doc/page-recording.md). Pages already cached are not added, so they are not
 * seen: what is recorded is what had to be read (and what was written without being cached first: a
 * write inserts a page like a read).
 *
 * Cost, measured on the development machine (doc/page-recording.md, bench/pagecache.sh): nothing for a page
 * already cached and nothing while off; while on, 0.1-0.3 us per page (or large folio) inserted for a
 * recorded filesystem (4.3-5.4% of the CPU time of a cold read() from a RAM-backed device) and 0.05-0.17 us
 * per page the filter drops (another filesystem); the reader 40-90 ns per event. Drained when poll() says a
 * CPU's buffer is 25% full, 1 MiB per CPU took 89,000-351,000 events/s without loss in 4 of 5 runs on a
 * loaded 2-CPU machine.
 *
 * An engine: options and a callback, no knowledge of sessions. The instance is named PREFIX + "PID-START"
 * (our pid and its start time); creating one first removes the instances of that prefix whose process is
 * gone, so a killed daemon leaves the tracepoint on only until the next start. */

typedef struct PageCacheEvent {
        dev_t dev;              /* the filesystem (st_dev of its files) */
        uint64_t ino;           /* the file's inode; 0: a page of the filesystem's block device (metadata) */
        uint64_t index;         /* first page (in PAGE_SIZE units: a block-device page is a block when
                                 * the block size is the page size) */
        uint32_t n_pages;       /* the folio's pages: 1 << order */
        pid_t tid;              /* the thread that caused the read (not the process id) */
        uint64_t timestamp_nsec; /* CLOCK_MONOTONIC */
} PageCacheEvent;

typedef struct PageCacheOptions {
        const char *tracefs;    /* NULL: /sys/kernel/tracing */
        const char *prefix;     /* instance name prefix, NULL: "seekless-" */
        unsigned buffer_kib;    /* ring buffer per CPU, 0: PAGECACHE_BUFFER_KIB_DEFAULT */
        bool metadata;          /* also the pages of the devices themselves */
        /* Called for each event, per CPU in the order it happened there: consumers that need one global
         * order sort by timestamp (CPUs' events interleave by at most one drain's span). */
        void (*on_pages)(const PageCacheEvent *e, void *userdata);
        void *userdata;
} PageCacheOptions;

#define PAGECACHE_BUFFER_KIB_DEFAULT 1024
#define PAGECACHE_MAX_DEVICES 64

typedef struct PageCache PageCache;

/* Removes instances named PREFIX* whose owner (PID and start time in the name) is gone. Returns how many. */
int pagecache_reap(const char *tracefs, const char *prefix);

/* Creates the instance (event off). -ENOENT: no tracefs at that path, or no such event (old kernel). */
int pagecache_new(const PageCacheOptions *o, PageCache **ret);
PageCache *pagecache_free(PageCache *p);    /* event off, instance removed */
DEFINE_TRIVIAL_CLEANUP_FUNC(PageCache *, pagecache_free);

/* The filesystems to record (st_dev of a file on each, at most PAGECACHE_MAX_DEVICES); takes effect at
 * once (the filter is replaced atomically). No devices: the event is filtered out entirely. */
int pagecache_set_devices(PageCache *p, const dev_t *devs, size_t n);

/* The metadata (o->metadata) needs the device number of the kernel's block-device pseudo filesystem, whose
 * pages a block device's own are (doc/kernel.md §5): learned here, once, from a page of one of devs that this
 * thread reads, with the event on for the moment; until then pagecache_set_devices() leaves metadata out.
 * Needs the event off, and nobody switching it meanwhile. Returns 1 once known, 0 when metadata is not
 * wanted, -EBUSY while the event is on, else the error of the last device tried (-ENODATA: no event came). */
int pagecache_learn_bdev(PageCache *p, const dev_t *devs, size_t n);
/* The device number learned, or -ENODATA. */
int pagecache_bdev(PageCache *p, dev_t *ret);

/* Event on or off. Off is silent: the tracepoint costs nothing while no instance enables it. */
int pagecache_enable(PageCache *p, bool on);

/* Reads what the kernel buffered, on every CPU, and hands it to on_pages. Returns the number of events. */
int pagecache_read(PageCache *p);

/* The per-CPU buffers' fds, for poll() (POLLIN once the buffer is buffer_percent full; 0 wakes on any event). */
size_t pagecache_fds(PageCache *p, const int **ret);

/* Events the kernel could not store (the buffer was full) since the instance was created: from the
 * per-CPU statistics, so it counts also what was lost after the last read. */
int pagecache_lost(PageCache *p, uint64_t *ret);

/* The instance's directory as it was made (for tests and messages: the engine itself never walks it again,
 * the tracefs may have been unmounted since). */
const char *pagecache_instance(PageCache *p);
/* The instance's buffer_percent: poll() on a CPU's buffer wakes when it is that full (0: on any event). */
int pagecache_set_buffer_percent(PageCache *p, unsigned percent);
