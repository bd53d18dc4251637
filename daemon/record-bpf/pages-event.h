/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* One record of the ring buffer, as pages.bpf.c writes it and bpf-pages.c reads it. No includes: the
 * BPF side has its __u32/__u64 from record-bpf/pages-kernel.h, user space from <linux/types.h>. */

/* What a record says happened (BpfPageKind in record-bpf/bpf-pages.h names the same numbers). */
#define PAGES_KIND_ADD 0        /* pages inserted into the page cache: read from the disk */
#define PAGES_KIND_GET_PAGES 1  /* pages a read() took from the page cache, cached before or not */
#define PAGES_KIND_MAP_PAGES 2  /* cached pages mapped around a fault (fault-around's window) */
#define PAGES_KIND_FAULT 3      /* a page fault on a file's mapping */
#define PAGES_KIND_MAX 4

/* The kernel remembers the pages it reported per tag in chunks of PAGES_CHUNK pages (256 KiB), a bit
 * each: one 64-bit word. */
#define PAGES_CHUNK_SHIFT 6
#define PAGES_CHUNK (1 << PAGES_CHUNK_SHIFT)

struct pages_record {
        __u32 tag;              /* the session's tag, from the watched process or its ancestor */
        __u32 tgid;             /* the process */
        __u32 kind;             /* PAGES_KIND_* */
        __u32 s_dev;            /* the kernel's dev_t: major << 20 | minor */
        __u64 ino;
        __u64 first;            /* first and last page (PAGE_SIZE units), both included */
        __u64 last;
        __u64 ktime;            /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
};
