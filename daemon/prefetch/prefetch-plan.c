/* SPDX-License-Identifier: GPL-2.0-or-later */

#include <fcntl.h>
#include <linux/fiemap.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc-util.h"
#include "common/macro.h"
#include "common/time-util.h"
#include "fs/fid-util.h"
#include "fs/fiemap.h"
#include "prefetch/prefetch-plan.h"

static const char *const prefetch_order_table[_PREFETCH_ORDER_MAX] = {
        [PREFETCH_ORDER_DISK] = "disk",
        [PREFETCH_ORDER_METADATA_FIRST] = "metadata-first",
        [PREFETCH_ORDER_RECORDED] = "recorded",
};

DEFINE_STRING_TABLE(prefetch_order, PrefetchOrder);

PrefetchPlan *prefetch_plan_free(PrefetchPlan *p) {
        if (!p)
                return NULL;
        free(p->files);
        free(p->ranges);
        free(p->stale);
        free(p);
        return NULL;
}

static int add_range(PrefetchPlan *p, size_t *allocated, PrefetchRange r) {
        if (GREEDY_REALLOC(p->ranges, *allocated, p->n_ranges + 1) < 0)
                return -ENOMEM;
        p->ranges[p->n_ranges++] = r;
        return 0;
}

/* The file's data spans cut to its extents, each piece with its place on the device. The extents are those
 * of FIEMAP now; a span over a hole gives nothing for the hole. */
static int add_file_spans(PrefetchPlan *p, size_t *allocated, uint32_t file, const Extent *ext, size_t n_ext,
                          const PrefetchSpan *span) {
        uint64_t start = span->offset, end = span->offset + span->length;

        for (size_t i = 0; i < n_ext && start < end; i++) {
                uint64_t e_start = ext[i].logical, e_end = ext[i].logical + ext[i].length, a, b;
                bool unknown = ext[i].flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC);
                int r;

                if (e_end <= start || e_start >= end)
                        continue;
                a = MAX(start, e_start);
                b = MIN(end, e_end);
                r = add_range(p, allocated, (PrefetchRange) {
                                .kind = PREFETCH_DATA,
                                .file = file,
                                .offset = a,
                                .length = b - a,
                                .physical = unknown ? UINT64_MAX : ext[i].physical + (a - e_start),
                        });
                if (r < 0)
                        return r;
                p->data_bytes += b - a;
        }
        return 0;
}

static int cmp_physical(const void *a, const void *b) {
        const PrefetchRange *x = a, *y = b;

        if (x->physical != y->physical)
                return x->physical < y->physical ? -1 : 1;
        return x->kind - y->kind;       /* at one address (never on a sane filesystem): metadata first */
}

static int cmp_kind_physical(const void *a, const void *b) {
        const PrefetchRange *x = a, *y = b;

        if (x->kind != y->kind)
                return x->kind - y->kind;
        return cmp_physical(a, b);
}

/* Ranges next to each other, in the plan's order and on the device, become one (of one file: data of two
 * files is read through two files' page caches, so two calls) */
static void merge_adjacent(PrefetchPlan *p) {
        size_t w = 0;

        for (size_t i = 0; i < p->n_ranges; i++) {
                PrefetchRange *last = w > 0 ? &p->ranges[w - 1] : NULL, *r = &p->ranges[i];

                if (last && last->kind == r->kind && (r->kind == PREFETCH_METADATA || last->file == r->file) &&
                    last->physical != UINT64_MAX && r->physical != UINT64_MAX &&
                    r->offset >= last->offset && r->offset <= last->offset + last->length &&
                    r->physical - r->offset == last->physical - last->offset) {
                        uint64_t end = MAX(last->offset + last->length, r->offset + r->length);

                        last->length = end - last->offset;
                        continue;
                }
                p->ranges[w++] = *r;
        }
        p->n_ranges = w;
}

int prefetch_plan_build(int mount_fd, const PrefetchInput *in, PrefetchOrder order, const atomic_bool *cancel,
                        uint64_t deadline_usec, PrefetchPlan **ret) {
        PrefetchPlan *p;
        Extent **exts = NULL;
        size_t *n_exts = NULL, allocated = 0;
        int r;

        if (order < 0 || order >= _PREFETCH_ORDER_MAX)
                return -EINVAL;
        for (size_t i = 0; i < in->n_data; i++)
                if (in->data[i].file >= in->n_files)
                        return -EINVAL;
        p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        p->n_files = in->n_files;
        p->files = in->n_files > 0 ? calloc(in->n_files, sizeof *p->files) : NULL;
        p->stale = in->n_files > 0 ? calloc(in->n_files, 1) : NULL;
        if (in->n_files > 0 && (!p->files || !p->stale)) {
                prefetch_plan_free(p);
                return -ENOMEM;
        }
        if (in->n_files > 0)
                memcpy(p->files, in->files, in->n_files * sizeof *p->files);

        for (size_t i = 0; i < in->n_metadata; i++) {
                const PrefetchSpan *m = &in->metadata[i];

                if (m->length == 0)
                        continue;
                r = add_range(p, &allocated, (PrefetchRange) {
                                .kind = PREFETCH_METADATA,
                                .offset = m->offset,
                                .length = m->length,
                                .physical = m->offset,
                        });
                if (r < 0)
                        goto fail;
                p->metadata_bytes += m->length;
        }

        /* each file looked at once, then its spans in the order they were read */
        exts = in->n_files > 0 ? calloc(in->n_files, sizeof *exts) : NULL;
        n_exts = in->n_files > 0 ? calloc(in->n_files, sizeof *n_exts) : NULL;
        if (in->n_files > 0 && (!exts || !n_exts)) {
                r = -ENOMEM;
                goto fail;
        }
        for (size_t i = 0; i < in->n_data; i++)
                n_exts[in->data[i].file] = 1;   /* referenced: looked at below */
        for (uint32_t f = 0; f < in->n_files; f++) {
                _cleanup_close_ int fd = -EBADF;
                struct stat st;

                if (n_exts[f] == 0)
                        continue;
                n_exts[f] = 0;
                if (cancel && atomic_load(cancel)) {
                        r = -ECANCELED;
                        goto fail;
                }
                if (deadline_usec > 0 && now_usec(CLOCK_MONOTONIC) >= deadline_usec) {
                        p->files_unplanned++;
                        continue;       /* no extents: its spans add nothing */
                }
                fd = file_key_open(mount_fd, &in->files[f].key, O_RDONLY | O_NONBLOCK);
                if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
                    (uint64_t) st.st_size < in->files[f].size || fiemap_get(fd, &exts[f], &n_exts[f]) < 0) {
                        p->stale[f] = 1;
                        p->files_stale++;
                }
        }
        for (size_t i = 0; i < in->n_data; i++) {
                uint32_t f = in->data[i].file;

                if (p->stale[f])
                        continue;
                r = add_file_spans(p, &allocated, f, exts[f], n_exts[f], &in->data[i]);
                if (r < 0)
                        goto fail;
        }

        switch (p->n_ranges > 1 ? order : PREFETCH_ORDER_RECORDED) {     /* qsort() wants an array */
        case PREFETCH_ORDER_DISK:
                qsort(p->ranges, p->n_ranges, sizeof *p->ranges, cmp_physical);
                break;
        case PREFETCH_ORDER_METADATA_FIRST:
                qsort(p->ranges, p->n_ranges, sizeof *p->ranges, cmp_kind_physical);
                break;
        default:
                break;
        }
        merge_adjacent(p);
        *ret = TAKE_PTR(p);
        r = 0;
fail:
        for (size_t f = 0; exts && f < in->n_files; f++)
                free(exts[f]);
        free(exts);
        free(n_exts);
        prefetch_plan_free(p);
        return r;
}
