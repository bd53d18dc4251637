/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "config.h"
#include "common/alloc-util.h"
#include "common/time-util.h"
#include "record-bpf/bpf-pages.h"

static const char *const bpf_page_kind_table[_BPF_PAGE_KIND_MAX] = {
        [BPF_PAGE_ADD] = "add",
        [BPF_PAGE_GET_PAGES] = "get-pages",
        [BPF_PAGE_MAP_PAGES] = "map-pages",
        [BPF_PAGE_FAULT] = "fault",
};

DEFINE_STRING_TABLE(bpf_page_kind, BpfPageKind)

#if HAVE_BPF_RECORDER

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>

#include "record-bpf/pages.skel.h"

#define RING_KIB_DEFAULT 1024u
#define CONSUME_CHECK_EVERY 64u
#define PROC_PID_INIT_INO 0xEFFFFFFCu   /* the initial PID namespace's inode in nsfs */
#define DEDUP_ENTRIES_DEFAULT 16384u

struct BpfPages {
        struct pages_bpf *skel;
        struct ring_buffer *ring;
        struct bpf_link *links[_BPF_PAGE_KIND_MAX];
        struct bpf_link *fork_link, *exit_link;
        unsigned attached;
        void (*on_event)(const BpfPageEvent *e, void *userdata);
        void *userdata;
        uint64_t until_usec;            /* bpf_pages_consume()'s bound; 0: none */
        unsigned since_check;           /* records handed since the clock was read */
};

/* The tracepoint of each kind; the insertion's program takes its record (attached through tracefs), the
 * others, optional, take its arguments (tp_btf, attached by name: the kernel's BTF says whether it has
 * them). */
static const char *const tracepoints[_BPF_PAGE_KIND_MAX] = {
        [BPF_PAGE_ADD] = "mm_filemap_add_to_page_cache",
        [BPF_PAGE_GET_PAGES] = "mm_filemap_get_pages",
        [BPF_PAGE_MAP_PAGES] = "mm_filemap_map_pages",
        [BPF_PAGE_FAULT] = "mm_filemap_fault",
};

static struct bpf_program *program_of(struct pages_bpf *skel, BpfPageKind k) {
        switch (k) {
        case BPF_PAGE_ADD:
                return skel->progs.on_add;
        case BPF_PAGE_GET_PAGES:
                return skel->progs.on_get_pages;
        case BPF_PAGE_MAP_PAGES:
                return skel->progs.on_map_pages;
        case BPF_PAGE_FAULT:
                return skel->progs.on_fault;
        default:
                return NULL;
        }
}

BpfPages *bpf_pages_free(BpfPages *p) {
        if (!p)
                return NULL;
        ring_buffer__free(p->ring);
        for (size_t k = 0; k < _BPF_PAGE_KIND_MAX; k++)
                bpf_link__destroy(p->links[k]);
        bpf_link__destroy(p->fork_link);
        bpf_link__destroy(p->exit_link);
        pages_bpf__destroy(p->skel);
        free(p);
        return NULL;
}

/* The tracepoint's id under tracefs, -ENOENT when the kernel has no such event. */
static int tracepoint_id(const char *tracefs, const char *name) {
        char path[4096], buf[32];
        _cleanup_close_ int fd = -EBADF;
        ssize_t n;
        int id;

        snprintf(path, sizeof path, "%s/events/filemap/%s/id", tracefs, name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, sizeof buf - 1);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        id = atoi(buf);
        return id > 0 ? id : -EBADMSG;
}

/* The program on the tracepoint, through a perf event of it (the tracepoint's id from our tracefs: libbpf's
 * own attach looks for tracefs only where it guesses). One event on CPU 0 is enough: the program hangs on
 * the tracepoint itself and runs for its hits on every CPU. */
static int attach_tracepoint(BpfPages *p, BpfPageKind k, int id) {
        struct perf_event_attr attr = {
                .type = PERF_TYPE_TRACEPOINT,
                .size = sizeof attr,
                .config = (uint64_t) id,
        };
        _cleanup_close_ int fd = -EBADF;

        fd = (int) syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0)
                return -errno;
        p->links[k] = bpf_program__attach_perf_event(program_of(p->skel, k), fd);
        if (!p->links[k])
                return -errno;
        (void) TAKE_FD(fd);     /* the link closes it */
        return 0;
}

static int on_record(void *ctx, void *data, size_t size) {
        const struct pages_record *r = data;
        BpfPages *p = ctx;
        BpfPageEvent e;

        if (size < sizeof *r || r->kind >= _BPF_PAGE_KIND_MAX)
                return 0;
        e = (BpfPageEvent) {
                .tag = r->tag,
                .pid = (pid_t) r->tgid,
                .kind = (BpfPageKind) r->kind,
                .dev = makedev(r->s_dev >> 20, r->s_dev & 0xfffff),
                .ino = r->ino,
                .first = r->first,
                .last = r->last,
                .timestamp_nsec = r->ktime,
        };
        p->on_event(&e, p->userdata);
        /* past the bound: stop here (libbpf takes this record as consumed and returns this error) */
        if (p->until_usec > 0 && ++p->since_check >= CONSUME_CHECK_EVERY) {
                p->since_check = 0;
                if (now_usec(CLOCK_MONOTONIC) >= p->until_usec)
                        return -EAGAIN;
        }
        return 0;
}

/* Whether the running kernel has the tracepoint, from its BTF: each has a typedef btf_trace_NAME. */
static bool kernel_has_tracepoint(const struct btf *vmlinux, const char *name) {
        char type[128];

        snprintf(type, sizeof type, "btf_trace_%s", name);
        return btf__find_by_name_kind(vmlinux, type, BTF_KIND_TYPEDEF) > 0;
}

int bpf_pages_new(const BpfPagesOptions *o, BpfPages **ret) {
        _cleanup_(bpf_pages_freep) BpfPages *p = NULL;
        const char *tracefs = o->tracefs ?: "/sys/kernel/tracing";
        unsigned ring_kib = o->ring_kib ?: RING_KIB_DEFAULT, present = 0;
        struct btf *vmlinux;
        struct stat st;
        int add_id, r;

        if (!o->on_event || ring_kib < 4 || (ring_kib & (ring_kib - 1)))
                return -EINVAL;
        /* the programs report the initial PID namespace's ids (doc/kernel.md §9), which are not this
         * process's pids inside another namespace */
        if (stat("/proc/self/ns/pid", &st) < 0)
                return -errno;
        if (st.st_ino != PROC_PID_INIT_INO)
                return -EXDEV;
        /* No BTF, no CO-RE: say so before libbpf fails on the first relocation. */
        vmlinux = btf__load_vmlinux_btf();
        if (!vmlinux)
                return -ENOENT;
        for (size_t k = 0; k < _BPF_PAGE_KIND_MAX; k++)
                if (kernel_has_tracepoint(vmlinux, tracepoints[k]))
                        present |= 1u << k;
        btf__free(vmlinux);
        add_id = tracepoint_id(tracefs, tracepoints[BPF_PAGE_ADD]);
        if (add_id < 0)
                return add_id;

        p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        p->on_event = o->on_event;
        p->userdata = o->userdata;

        p->skel = pages_bpf__open();
        if (!p->skel)
                return -errno;
        /* A tp_btf program whose tracepoint the kernel lacks would fail the whole object's load. */
        for (size_t k = 0; k < _BPF_PAGE_KIND_MAX; k++) {
                if (k == BPF_PAGE_ADD || (present & (1u << k)))
                        continue;
                r = bpf_program__set_autoload(program_of(p->skel, k), false);
                if (r < 0)
                        return r;
        }
        r = bpf_map__set_max_entries(p->skel->maps.events, ring_kib * 1024);
        if (r < 0)
                return r;
        r = bpf_map__set_max_entries(p->skel->maps.seen, o->dedup_entries ?: DEDUP_ENTRIES_DEFAULT);
        if (r < 0)
                return r;
        r = pages_bpf__load(p->skel);
        if (r < 0)
                return r;

        p->fork_link = bpf_program__attach(p->skel->progs.on_fork);
        if (!p->fork_link)
                return -errno;
        p->exit_link = bpf_program__attach(p->skel->progs.on_exit);
        if (!p->exit_link)
                return -errno;
        r = attach_tracepoint(p, BPF_PAGE_ADD, add_id);
        if (r < 0)
                return r;
        p->attached |= 1u << BPF_PAGE_ADD;
        for (size_t k = 0; k < _BPF_PAGE_KIND_MAX; k++) {
                if (k == BPF_PAGE_ADD || !(present & (1u << k)))
                        continue;
                p->links[k] = bpf_program__attach(program_of(p->skel, k));
                if (!p->links[k])
                        return -errno;
                p->attached |= 1u << k;
        }

        p->ring = ring_buffer__new(bpf_map__fd(p->skel->maps.events), on_record, p, NULL);
        if (!p->ring)
                return -errno;
        *ret = TAKE_PTR(p);
        return 0;
}

unsigned bpf_pages_attached(BpfPages *p) {
        return p->attached;
}

/* The programs' count of watched entries (pages.bpf.c's n_watched), in the mapped .bss: changed with
 * atomics, as the programs change it, and only after an insertion or a deletion that succeeded. */
static void count_watched(BpfPages *p, int64_t delta) {
        __atomic_fetch_add(&p->skel->bss->n_watched, (uint64_t) delta, __ATOMIC_SEQ_CST);
}

int bpf_pages_watch_new(BpfPages *p, pid_t pid, uint32_t tag) {
        uint32_t key = (uint32_t) pid;
        int r;

        if (pid <= 0)
                return -EINVAL;
        r = bpf_map__update_elem(p->skel->maps.watched, &key, sizeof key, &tag, sizeof tag, BPF_NOEXIST);
        if (r < 0)
                return r;
        count_watched(p, 1);
        return 0;
}

int bpf_pages_watch(BpfPages *p, pid_t pid, uint32_t tag) {
        uint32_t key = (uint32_t) pid;
        int r;

        r = bpf_pages_watch_new(p, pid, tag);
        if (r != -EEXIST)
                return r;
        return bpf_map__update_elem(p->skel->maps.watched, &key, sizeof key, &tag, sizeof tag, BPF_EXIST);
}

/* One walk of the map: the keys of tag first (a hash map's walk restarts from its first key when the key
 * it stands on is gone, and the exit program deletes keys any time: at most twice the map's size steps),
 * then their deletion. Returns how many it deleted. */
static int unwatch_tag_once(BpfPages *p, uint32_t tag) {
        _cleanup_free_ uint32_t *keys = NULL;
        size_t n = 0, n_alloc = 0, steps = 2 * (size_t) bpf_map__max_entries(p->skel->maps.watched);
        uint32_t key, next, value;
        const void *prev = NULL;
        int deleted = 0;

        while (steps-- > 0 && bpf_map__get_next_key(p->skel->maps.watched, prev, &next, sizeof next) == 0) {
                key = next;
                prev = &key;
                if (bpf_map__lookup_elem(p->skel->maps.watched, &key, sizeof key, &value, sizeof value, 0) < 0 ||
                    value != tag)
                        continue;
                if (GREEDY_REALLOC(keys, n_alloc, n + 1) < 0)
                        return -ENOMEM;
                keys[n++] = key;
        }
        for (size_t i = 0; i < n; i++)
                if (bpf_map__delete_elem(p->skel->maps.watched, &keys[i], sizeof keys[i], 0) == 0) {
                        count_watched(p, -1);
                        deleted++;
                }
        return deleted;
}

int bpf_pages_unwatch_tag(BpfPages *p, uint32_t tag) {
        int r, deleted = 0;

        /* again while a walk found some: one of them may have forked during it (three walks at most) */
        for (int i = 0; i < 3; i++) {
                r = unwatch_tag_once(p, tag);
                if (r < 0)
                        return r;
                deleted += r;
                if (r == 0)
                        break;
        }
        return deleted;
}

int bpf_pages_unwatch_if(BpfPages *p, pid_t pid, uint32_t tag) {
        uint32_t key = (uint32_t) pid, value;
        int r;

        if (pid <= 0)
                return -EINVAL;
        r = bpf_map__lookup_elem(p->skel->maps.watched, &key, sizeof key, &value, sizeof value, 0);
        if (r < 0)
                return r;
        if (value != tag)
                return -ESRCH;
        return bpf_pages_unwatch(p, pid);
}

int bpf_pages_unwatch(BpfPages *p, pid_t pid) {
        uint32_t key = (uint32_t) pid;
        int r;

        if (pid <= 0)
                return -EINVAL;
        r = bpf_map__delete_elem(p->skel->maps.watched, &key, sizeof key, 0);
        if (r < 0)
                return r;
        count_watched(p, -1);
        return 0;
}

uint64_t bpf_pages_watching(BpfPages *p) {
        return __atomic_load_n(&p->skel->bss->n_watched, __ATOMIC_SEQ_CST);
}

void bpf_pages_watch_all(BpfPages *p, uint32_t tag) {
        __atomic_store_n(&p->skel->bss->self_tgid, (uint32_t) getpid(), __ATOMIC_SEQ_CST);
        __atomic_store_n(&p->skel->bss->all_tag, tag, __ATOMIC_SEQ_CST);
}

static uint32_t kdev(dev_t d) {
        return (uint32_t) (major(d) << 20 | minor(d));
}

static bool kdev_in(uint32_t key, const dev_t *devs, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (kdev(devs[i]) == key)
                        return true;
        return false;
}

int bpf_pages_set_devices(BpfPages *p, const dev_t *devs, size_t n, dev_t bdev) {
        struct bpf_map *map = p->skel->maps.devices;
        uint32_t key, old[64];
        size_t n_old = 0;
        uint8_t one = 1;
        int r;

        /* every device while the map changes (a program may have read the flag before this store), and if
         * it does not hold them all; a device in both sets stays in the map throughout */
        __atomic_store_n(&p->skel->data->all_devices, 1, __ATOMIC_SEQ_CST);
        if (!devs)
                return 0;
        if (n > bpf_map__max_entries(map) || bpf_map__max_entries(map) > ELEMENTSOF(old))
                return -E2BIG;
        for (r = bpf_map__get_next_key(map, NULL, &key, sizeof key); r == 0 && n_old < ELEMENTSOF(old);
             r = bpf_map__get_next_key(map, &old[n_old - 1], &key, sizeof key))
                old[n_old++] = key;
        for (size_t i = 0; i < n_old; i++)
                if (!kdev_in(old[i], devs, n) && bpf_map__delete_elem(map, &old[i], sizeof old[i], 0) < 0)
                        return -errno;
        for (size_t i = 0; i < n; i++) {
                key = kdev(devs[i]);
                r = bpf_map__update_elem(map, &key, sizeof key, &one, sizeof one, BPF_ANY);
                if (r < 0)
                        return r;
        }
        __atomic_store_n(&p->skel->bss->bdev_dev, bdev == 0 ? 0 : kdev(bdev), __ATOMIC_SEQ_CST);
        __atomic_store_n(&p->skel->bss->n_devices, (uint32_t) n, __ATOMIC_SEQ_CST);
        __atomic_store_n(&p->skel->data->all_devices, 0, __ATOMIC_SEQ_CST);
        return 0;
}

int bpf_pages_fd(BpfPages *p) {
        return ring_buffer__epoll_fd(p->ring);
}

int bpf_pages_consume(BpfPages *p, uint64_t until_usec) {
        int r;

        p->until_usec = until_usec;
        p->since_check = 0;
        r = ring_buffer__consume(p->ring);
        p->until_usec = 0;
        return r;
}

int bpf_pages_lost(BpfPages *p, uint64_t *ret) {
        uint32_t key = 0;
        uint64_t v;
        int r;

        r = bpf_map__lookup_elem(p->skel->maps.lost, &key, sizeof key, &v, sizeof v, 0);
        if (r < 0)
                return r;
        *ret = v;
        return 0;
}

#else

BpfPages *bpf_pages_free(BpfPages *p) {
        return NULL;
}

int bpf_pages_new(const BpfPagesOptions *o, BpfPages **ret) {
        return -EOPNOTSUPP;
}

unsigned bpf_pages_attached(BpfPages *p) {
        return 0;
}

uint64_t bpf_pages_watching(BpfPages *p) {
        return 0;
}

int bpf_pages_watch(BpfPages *p, pid_t pid, uint32_t tag) {
        return -EOPNOTSUPP;
}

int bpf_pages_watch_new(BpfPages *p, pid_t pid, uint32_t tag) {
        return -EOPNOTSUPP;
}

int bpf_pages_unwatch_tag(BpfPages *p, uint32_t tag) {
        return -EOPNOTSUPP;
}

int bpf_pages_unwatch_if(BpfPages *p, pid_t pid, uint32_t tag) {
        return -EOPNOTSUPP;
}

void bpf_pages_watch_all(BpfPages *p, uint32_t tag) {
}

int bpf_pages_set_devices(BpfPages *p, const dev_t *devs, size_t n, dev_t bdev) {
        return -EOPNOTSUPP;
}

int bpf_pages_unwatch(BpfPages *p, pid_t pid) {
        return -EOPNOTSUPP;
}

int bpf_pages_fd(BpfPages *p) {
        return -EOPNOTSUPP;
}

int bpf_pages_consume(BpfPages *p, uint64_t until_usec) {
        return -EOPNOTSUPP;
}

int bpf_pages_lost(BpfPages *p, uint64_t *ret) {
        return -EOPNOTSUPP;
}

#endif
