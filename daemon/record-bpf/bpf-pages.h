/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/macro.h"
#include "record-bpf/pages-event.h"

/* Page recording in the kernel, with BPF (pages.bpf.c): the pages that watched processes and the new
 * processes they fork read from the disk (filemap:mm_filemap_add_to_page_cache) and, where the kernel has
 * the tracepoints (not 6.1: doc/kernel.md §9), the pages they use whether cached or not (mm_filemap_get_pages,
 * mm_filemap_map_pages, mm_filemap_fault): a warm start is seen like a cold one. Only watched processes
 * make records; the others pay for a hash lookup per event, and nothing but the programs' call while
 * nobody is watched. A session (tag) reports a page once as
 * inserted and once as used, while the kernel's LRU map of 256 KiB chunks remembers it (a record's range
 * holds at least one page new to its session; pages of a chunk the map evicted are reported again).
 * doc/kernel.md §9 has what this relies on.
 *
 * An engine: options and a callback, no knowledge of sessions. Built only with libbpf, clang and bpftool
 * (HAVE_BPF_RECORDER); without them every function fails with -EOPNOTSUPP. Needs root (which
 * capabilities exactly is not measured yet: CAP_BPF and CAP_PERFMON at least), the kernel's BTF
 * (/sys/kernel/btf/vmlinux) and tracefs (the insertion tracepoint's id). */

typedef enum BpfPageKind {
        BPF_PAGE_ADD = PAGES_KIND_ADD,                  /* inserted into the page cache: read from the disk */
        BPF_PAGE_GET_PAGES = PAGES_KIND_GET_PAGES,      /* taken by a read(), cached or not */
        BPF_PAGE_MAP_PAGES = PAGES_KIND_MAP_PAGES,      /* mapped around a fault (the window considered) */
        BPF_PAGE_FAULT = PAGES_KIND_FAULT,              /* a page fault on a file mapping */
        _BPF_PAGE_KIND_MAX = PAGES_KIND_MAX,
        _BPF_PAGE_KIND_INVALID = -EINVAL,
} BpfPageKind;

const char *bpf_page_kind_to_string(BpfPageKind k);
BpfPageKind bpf_page_kind_from_string(const char *s);

typedef struct BpfPageEvent {
        uint32_t tag;           /* the watched process's tag, inherited by the processes it forks */
        pid_t pid;              /* the process (thread group) */
        BpfPageKind kind;
        dev_t dev;              /* the filesystem (st_dev of its files); major 0 and the device's own
                                 * number as ino: a page of a block device (doc/kernel.md §5) */
        uint64_t ino;
        uint64_t first, last;   /* pages (PAGE_SIZE units), both included */
        uint64_t timestamp_nsec; /* CLOCK_MONOTONIC */
} BpfPageEvent;

typedef struct BpfPagesOptions {
        const char *tracefs;    /* NULL: /sys/kernel/tracing */
        unsigned ring_kib;      /* the ring buffer, a power of two of at least a page; 0: 1024 */
        unsigned dedup_entries; /* chunks remembered (the LRU map, 256 KiB each); 0: 16384 */
        /* Called by bpf_pages_consume() for each record, in the order the kernel committed them. */
        void (*on_event)(const BpfPageEvent *e, void *userdata);
        void *userdata;
} BpfPagesOptions;

typedef struct BpfPages BpfPages;

/* Loads the programs and attaches them. The use tracepoints are attached where the kernel has them
 * (bpf_pages_attached() says which); missing ones are no error. -EOPNOTSUPP: built without BPF; -EPERM:
 * not privileged (or lockdown); -EXDEV: this process is not in the initial PID namespace (the programs
 * report that namespace's process ids); -ENOENT: no kernel BTF, no tracefs at o->tracefs or no page-cache
 * insertion event; else the error libbpf gave (the verifier's: -EINVAL, -EACCES). libbpf's own messages
 * go to whatever libbpf_set_print() was given (this engine does not set it). */
int bpf_pages_new(const BpfPagesOptions *o, BpfPages **ret);
BpfPages *bpf_pages_free(BpfPages *p);    /* detaches and unloads */
DEFINE_TRIVIAL_CLEANUP_FUNC(BpfPages *, bpf_pages_free);

/* The kinds of event attached: bit 1 << BpfPageKind. */
unsigned bpf_pages_attached(BpfPages *p);

/* Records the thread group pid (and what it forks from now on) under tag; a tag names one session and is
 * not reused while its chunks may still be remembered. Replaces pid's tag if it had one. */
int bpf_pages_watch(BpfPages *p, pid_t pid, uint32_t tag);
/* The same, for a process not watched yet: -EEXIST if it is (it keeps the tag it has, its parent's when
 * a watched process forked it). Safe from any thread, as every call here but consume. */
int bpf_pages_watch_new(BpfPages *p, pid_t pid, uint32_t tag);
/* Stops recording every process watched under tag (those forked under it included): walks of the map,
 * bounded. Returns how many. */
int bpf_pages_unwatch_tag(BpfPages *p, uint32_t tag);
/* Stops recording pid if it is watched under tag: -ESRCH if under another one, -ENOENT if not at all. */
int bpf_pages_unwatch_if(BpfPages *p, pid_t pid, uint32_t tag);
/* Stops recording pid (not what it forked). -ENOENT: not watched (also: exited). */
int bpf_pages_unwatch(BpfPages *p, pid_t pid);
/* How many processes are watched, those the watched ones forked included (a process leaves when its last
 * thread exits). While none is, every program returns at once. */
uint64_t bpf_pages_watching(BpfPages *p);

/* Every process's pages under tag while it is not 0 (a boot's recording): but this process's own, and
 * those of processes watched under a tag of their own. 0: off again. */
void bpf_pages_watch_all(BpfPages *p, uint32_t tag);
/* Only the pages of the filesystems on these devices (st_dev of their files), and of bdev (the block
 * devices' pseudo filesystem, 0: not known) the pages of these devices (their metadata); n == 0: no
 * device's; devs NULL: every device's (as before the first call). -E2BIG: more than 64 (every device's
 * then). */
int bpf_pages_set_devices(BpfPages *p, const dev_t *devs, size_t n, dev_t bdev);

/* The ring buffer's epoll fd: readable when records wait. */
int bpf_pages_fd(BpfPages *p);
/* Hands the waiting records to on_event, until CLOCK_MONOTONIC reaches until_usec (0: no bound; the clock
 * is read every 64 records): records the kernel keeps adding cannot keep the caller here. Returns how
 * many when none waits any more, -EAGAIN when it stopped at the bound (the fd stays readable while
 * records wait). */
int bpf_pages_consume(BpfPages *p, uint64_t until_usec);
/* Records the kernel could not store (the ring buffer was full) since bpf_pages_new(). */
int bpf_pages_lost(BpfPages *p, uint64_t *ret);
