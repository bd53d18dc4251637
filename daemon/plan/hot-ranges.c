/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>

#include "plan/hot-ranges.h"
#include "common/macro.h"

static uint64_t round_up(uint64_t v, uint64_t unit) {
        return v > UINT64_MAX - (unit - 1) ? UINT64_MAX / unit * unit : (v + unit - 1) / unit * unit;
}

int hot_ranges_glue(const DbProfileRange *ranges, size_t n, const uint64_t *sizes, size_t n_files, uint64_t unit,
                    HotRange **ret, size_t *ret_n) {
        _cleanup_free_ HotRange *out = NULL;
        size_t k = 0;

        if (unit == 0 || (unit & (unit - 1)) != 0)
                return -EINVAL;
        *ret = NULL;
        *ret_n = 0;
        if (n == 0)
                return 0;
        out = calloc(n, sizeof *out);
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const DbProfileRange *r = &ranges[i];
                uint64_t start, end, size;

                if (r->file >= n_files)
                        return -EINVAL;
                size = round_up(sizes[r->file], unit);
                start = r->offset / unit * unit;
                end = MIN(round_up(r->offset + MIN(r->length, UINT64_MAX - r->offset), unit), size);
                if (start >= end)
                        continue;       /* empty, or past the end of the file now */
                if (k > 0) {
                        HotRange *prev = &out[k - 1];
                        uint64_t prev_end = prev->offset + prev->length;

                        if (prev->file == r->file && start >= prev->offset && start - MIN(start, prev_end) < HOT_RANGE_GAP) {
                                prev->length = MAX(prev_end, end) - prev->offset;
                                continue;
                        }
                }
                out[k++] = (HotRange) { .file = r->file, .offset = start, .length = end - start };
        }
        if (k == 0)
                return 0;
        *ret = TAKE_PTR(out);
        *ret_n = k;
        return 0;
}

uint64_t hot_ranges_file_bytes(const HotRange *r, size_t n, size_t file, uint64_t unit) {
        uint64_t sum = 0;

        for (size_t i = 0; i < n; i++)
                if (r[i].file == file)
                        sum += round_up(r[i].length, unit);
        return sum;
}

HotAdmit hot_ranges_admit(uint64_t hot_bytes, uint64_t max_file, uint64_t slices, uint64_t cap) {
        if (hot_bytes > max_file)
                return HOT_TOO_LARGE;
        if (slices > cap || hot_bytes > cap - slices)
                return HOT_SET_FULL;
        return HOT_ADMIT;
}

int hot_ranges_whole(const DbProfileFile *files, size_t n_files, DbProfileRange **ret, size_t *ret_n) {
        DbProfileRange *r = calloc(n_files + 1, sizeof *r);

        if (!r)
                return -ENOMEM;
        for (size_t i = 0; i < n_files; i++)
                r[i] = (DbProfileRange) { .file = i, .offset = 0, .length = files[i].file.size };
        *ret = r;
        *ret_n = n_files;
        return 0;
}

int hot_ranges_clip_extents(const Extent *e, size_t n, uint64_t offset, uint64_t length, Extent **ret, size_t *ret_n) {
        _cleanup_free_ Extent *out = NULL;
        uint64_t end = offset + MIN(length, UINT64_MAX - offset);
        size_t k = 0;

        *ret = NULL;
        *ret_n = 0;
        if (n == 0)
                return 0;
        out = calloc(n, sizeof *out);
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                uint64_t s = MAX(e[i].logical, offset), t = MIN(e[i].logical + e[i].length, end);

                if (s >= t)
                        continue;
                out[k++] = (Extent) {
                        .logical = s,
                        .physical = e[i].physical + (s - e[i].logical),
                        .length = t - s,
                        .flags = e[i].flags,
                };
        }
        if (k == 0)
                return 0;
        *ret = TAKE_PTR(out);
        *ret_n = k;
        return 0;
}
