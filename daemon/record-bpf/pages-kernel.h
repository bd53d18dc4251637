/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The kernel's types that pages.bpf.c uses, and nothing else: the BPF side is built without a vmlinux.h
 * generated from the build machine's kernel (a distribution's build host may have no BTF, or another
 * kernel than the one the daemon will run on). Each struct names only the fields read, and carries
 * preserve_access_index: the compiler records every field access as a CO-RE relocation, and libbpf moves
 * it to the field's offset in the running kernel's BTF at load time (doc/kernel.md §9). A field that the
 * running kernel lacks fails the load, unless the program tests it with bpf_core_field_exists() first.
 * The integer types and the UAPI constants below are the stable ABI of <linux/bpf.h>. */

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef int pid_t;
typedef __u32 dev_t;
typedef _Bool bool;
#define true 1
#define false 0

enum {
        BPF_MAP_TYPE_HASH = 1,
        BPF_MAP_TYPE_ARRAY = 2,
        BPF_MAP_TYPE_PERCPU_ARRAY = 6,
        BPF_MAP_TYPE_LRU_HASH = 9,
        BPF_MAP_TYPE_RINGBUF = 27,
};

enum {
        BPF_ANY = 0,
        BPF_NOEXIST = 1,
};

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

/* The insertion tracepoint's record (include/trace/events/filemap.h): what a "tracepoint/" program gets
 * as its context. The common header is not read. */
struct trace_entry {
        unsigned short type;
};

/* filemap:mm_filemap_add_to_page_cache. No order before the kernels whose page cache took large folios:
 * then one page. */
struct trace_event_raw_mm_filemap_op_page_cache {
        struct trace_entry ent;
        unsigned long i_ino;
        unsigned long index;
        dev_t s_dev;
        unsigned char order;
};

/* What the use programs (tp_btf: mm_filemap_get_pages, map_pages and fault take the mapping) read. */
struct super_block {
        dev_t s_dev;
};

struct inode {
        unsigned long i_ino;
        struct super_block *i_sb;
};

struct address_space {
        struct inode *host;
};

/* What the fork and exit programs ("tp_btf/": the tracepoint's arguments, typed by the kernel's BTF)
 * read of a task: the tracepoints' records carry thread ids only, and a thread is no new process. */
typedef struct {
        int counter;
} atomic_t;

struct signal_struct {
        atomic_t live;          /* threads not yet past do_exit()'s count: 0 once the last one is */
};

struct task_struct {
        pid_t pid;
        pid_t tgid;
        struct signal_struct *signal;
};

#pragma clang attribute pop
