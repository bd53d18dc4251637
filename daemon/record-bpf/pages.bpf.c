/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The BPF side of the page recorder (loaded by bpf-pages.c): the pages that watched processes read from
 * the disk (page-cache insertions) and the pages they use (reads, faults and fault-around, cached or
 * not), as records in a ring buffer. Which processes: the thread groups in `watched` (set by user
 * space, each with its session's tag) and the new processes they fork, which inherit the tag; a group
 * leaves the map when its last thread exits. Everything else returns after one hash lookup.
 *
 * A session's page is reported once per class of event (inserted; used), remembered in an LRU map of
 * 256 KiB chunks with a bit per page: a hot loop over the same pages costs a lookup, not a record; the
 * pages of an evicted chunk are reported again. Records that find the buffer full are counted in `lost`. */

#include "record-bpf/pages-kernel.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "record-bpf/pages-event.h"

char LICENSE[] SEC("license") = "GPL";

/* A range longer than this many chunks (32 MiB) is reported without looking at its chunks: a long read
 * is worth its record. */
#define MAX_CHUNKS 128

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, 16384);
        __type(key, __u32);             /* tgid */
        __type(value, __u32);           /* tag */
} watched SEC(".maps");

/* How many entries `watched` has: kept by whoever inserts or deletes one, after an insertion or deletion
 * that succeeded (the kernel's fork and exit programs, the loader through the mapped .bss), so exact.
 * While it is 0 every program returns at its first load: what a machine with nobody watched pays is the
 * tracepoints' call of the programs and that load. */
__u64 n_watched = 0;

/* While all_tag is not 0 (the boot), every process's pages are reported under it: but seekless's own
 * (self_tgid) and a watched process's, which keep their tag. Set by user space. */
__u32 all_tag = 0;
__u32 self_tgid = 0;

/* Unless all_devices is set, only the pages of these devices' filesystems (s_dev, the kernel's encoding)
 * are reported, and of the block devices' own pseudo filesystem (bdev_dev) the pages of these devices
 * (a device's own page has the device's number as its inode's); none while n_devices is 0. Set by user
 * space; every device's until it does. */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, 64);
        __type(key, __u32);
        __type(value, __u8);
} devices SEC(".maps");
__u32 all_devices = 1;
__u32 n_devices = 0;
__u32 bdev_dev = 0;

struct seen_key {
        __u32 tag;
        __u32 dev;
        __u64 ino;
        __u64 chunk;                    /* index / PAGES_CHUNK << 1 | inserted */
};

struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, 16384);     /* the loader may change it before the load */
        __type(key, struct seen_key);
        __type(value, __u64);           /* the chunk's pages reported: bit index % PAGES_CHUNK */
} seen SEC(".maps");

/* The chunk this CPU looked up last, and its bits as they were then: a loop over the same pages finds
 * them here, without hashing a key into the LRU map (and touching its shared lists). Can only say "seen"
 * for pages that were reported. */
struct recent {
        struct seen_key key;
        __u64 bits;
};

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct recent);
} recent SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, 1 << 20);   /* bytes; the loader may change it before the load */
} events SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, __u64);
} lost SEC(".maps");

/* The pages lo..hi of a chunk as its bits. */
static __always_inline __u64 chunk_mask(__u64 lo, __u64 hi) {
        return hi - lo == PAGES_CHUNK - 1 ? ~0ULL : ((1ULL << (hi - lo + 1)) - 1) << lo;
}

/* A walk over the chunks of a range, for bpf_loop(). */
struct chunk_walk {
        struct seen_key k;
        __u64 first, last, c, end;
        __u64 now;                      /* the last chunk's bits after it was marked */
        __u32 inserted;
        bool fresh;                     /* a page not reported before */
};

/* Marks the pages of the walk's chunk c + i reported. A callback of bpf_loop(): the verifier checks it
 * once, where a loop in the program was checked once per iteration and state (more than half of its
 * 1,000,000 instructions' budget for 32 chunks on 6.18). */
static long mark_chunk(__u32 i, void *ctx) {
        struct chunk_walk *w = ctx;
        __u64 chunk = w->c + i, lo = 0, hi = PAGES_CHUNK - 1, mask, *bits;

        if (chunk == w->c)
                lo = w->first & (PAGES_CHUNK - 1);
        if (chunk == w->end)
                hi = w->last & (PAGES_CHUNK - 1);
        mask = chunk_mask(lo, hi);
        w->k.chunk = chunk << 1 | w->inserted;
        bits = bpf_map_lookup_elem(&seen, &w->k);
        if (bits) {
                w->now = *bits | mask;
                if (w->now == *bits)
                        return 0;
                *bits = w->now;
        } else {
                w->now = mask;
                bpf_map_update_elem(&seen, &w->k, &mask, BPF_ANY);
        }
        w->fresh = true;
        return 0;
}

/* True when every page of [first, last] was reported for this tag and class of event already; marks
 * them reported. A chunk's pages are bits of its value: a page is reported once, not once per chunk. Two
 * CPUs may both report a page, or a bit set by one be overwritten by the other: then a page is reported
 * twice, which costs a record and nothing else. */
static __always_inline bool seen_before(__u32 tag, __u32 dev, __u64 ino, __u64 first, __u64 last,
                                        __u32 inserted) {
        struct chunk_walk w = {
                .k = {
                        .tag = tag,
                        .dev = dev,
                        .ino = ino,
                },
                .first = first,
                .last = last,
                .c = first >> PAGES_CHUNK_SHIFT,
                .end = last >> PAGES_CHUNK_SHIFT,
                .inserted = inserted,
        };
        struct recent *rc;
        __u32 zero = 0;

        if (w.end < w.c || w.end - w.c >= MAX_CHUNKS)
                return false;
        rc = bpf_map_lookup_elem(&recent, &zero);
        if (!rc)
                return false;
        /* a range within one chunk (most are) is looked for in the CPU's recent chunk first */
        if (w.c == w.end && rc->key.chunk == (w.c << 1 | inserted) && rc->key.ino == ino &&
            rc->key.dev == dev && rc->key.tag == tag &&
            (rc->bits & chunk_mask(first & (PAGES_CHUNK - 1), last & (PAGES_CHUNK - 1))) ==
            chunk_mask(first & (PAGES_CHUNK - 1), last & (PAGES_CHUNK - 1)))
                return true;
        bpf_loop((__u32) (w.end - w.c + 1), mark_chunk, &w, 0);
        if (w.c == w.end) {
                rc->key = w.k;
                rc->bits = w.now;
        }
        return !w.fresh;
}

/* The current process's tag, NULL when nobody watches it. */
static __always_inline __u32 *watched_tag(void) {
        __u32 tgid, *t = NULL;

        if (!*(volatile __u64 *) &n_watched && !*(volatile __u32 *) &all_tag)
                return NULL;
        tgid = bpf_get_current_pid_tgid() >> 32;
        if (*(volatile __u64 *) &n_watched)
                t = bpf_map_lookup_elem(&watched, &tgid);
        if (!t && *(volatile __u32 *) &all_tag && tgid != self_tgid)
                t = &all_tag;
        return t;
}

/* Whether pages of dev (and ino, for the block devices' pseudo filesystem) are reported. */
static __always_inline bool device_wanted(__u32 dev, __u64 ino) {
        __u32 d = dev;

        if (*(volatile __u32 *) &all_devices)
                return true;
        if (!*(volatile __u32 *) &n_devices)
                return false;
        if (dev == *(volatile __u32 *) &bdev_dev)
                d = (__u32) ino;
        return bpf_map_lookup_elem(&devices, &d) != NULL;
}

/* A record of pages of a watched process's, unless its session reported them already. */
static __always_inline int emit(__u32 tag, __u32 kind, __u32 dev, __u64 ino, __u64 first, __u64 last) {
        struct pages_record *r;
        __u32 zero = 0;
        __u64 *n;

        if (!device_wanted(dev, ino) || seen_before(tag, dev, ino, first, last, kind == PAGES_KIND_ADD))
                return 0;

        r = bpf_ringbuf_reserve(&events, sizeof *r, 0);
        if (!r) {
                n = bpf_map_lookup_elem(&lost, &zero);
                if (n)
                        __sync_fetch_and_add(n, 1);
                return 0;
        }
        r->tag = tag;
        r->tgid = bpf_get_current_pid_tgid() >> 32;
        r->kind = kind;
        r->s_dev = dev;
        r->ino = ino;
        r->first = first;
        r->last = last;
        r->ktime = bpf_ktime_get_ns();
        bpf_ringbuf_submit(r, 0);
        return 0;
}

/* Insertions are rare next to uses (each is a read from the disk), and the record has the folio's order,
 * which the folio itself keeps differently from kernel to kernel: a "tracepoint/" program. */
SEC("tracepoint/filemap/mm_filemap_add_to_page_cache")
int on_add(struct trace_event_raw_mm_filemap_op_page_cache *ctx) {
        __u64 index = ctx->index, pages = 1;
        __u32 *t = watched_tag();

        if (!t)
                return 0;
        if (bpf_core_field_exists(ctx->order))
                pages = 1ULL << (ctx->order & 31);
        return emit(*t, PAGES_KIND_ADD, ctx->s_dev, ctx->i_ino, index, index + pages - 1);
}

/* The use tracepoints are tp_btf programs, which get the tracepoint's arguments as they are: they run on
 * every read and fault of every process, and a "tracepoint/" program would have the kernel build the
 * whole record (the inode's number and device read through the mapping) before the program could tell
 * that nobody watches the process. Here that is read only for a watched one. */
static __always_inline int emit_mapping(__u32 kind, struct address_space *mapping, __u64 first, __u64 last) {
        __u32 *t = watched_tag();
        struct inode *host;

        if (!t)
                return 0;
        host = mapping->host;
        return emit(*t, kind, host->i_sb->s_dev, host->i_ino, first, last);
}

SEC("tp_btf/mm_filemap_get_pages")
int BPF_PROG(on_get_pages, struct address_space *mapping, unsigned long index, unsigned long last_index) {
        return emit_mapping(PAGES_KIND_GET_PAGES, mapping, index, last_index);
}

SEC("tp_btf/mm_filemap_map_pages")
int BPF_PROG(on_map_pages, struct address_space *mapping, unsigned long index, unsigned long last_index) {
        return emit_mapping(PAGES_KIND_MAP_PAGES, mapping, index, last_index);
}

SEC("tp_btf/mm_filemap_fault")
int BPF_PROG(on_fault, struct address_space *mapping, unsigned long index) {
        return emit_mapping(PAGES_KIND_FAULT, mapping, index, index);
}

/* A new process of a watched one's is watched under the same tag (a new thread is no new process). Runs
 * in the parent, before the child can run. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child) {
        __u32 ptgid = parent->tgid, ctgid = child->tgid, tag;
        __u32 *t;

        if (ptgid == ctgid || !*(volatile __u64 *) &n_watched)
                return 0;
        t = bpf_map_lookup_elem(&watched, &ptgid);
        if (!t)
                return 0;
        tag = *t;
        if (bpf_map_update_elem(&watched, &ctgid, &tag, BPF_NOEXIST) == 0)
                __sync_fetch_and_add(&n_watched, 1);
        return 0;
}

/* The last thread of a group is past its count (signal->live): the group's number may be reused. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p) {
        __u32 tgid = p->tgid;

        if (!*(volatile __u64 *) &n_watched || p->signal->live.counter != 0)
                return 0;
        if (bpf_map_delete_elem(&watched, &tgid) == 0)
                __sync_fetch_and_add(&n_watched, -1);
        return 0;
}
