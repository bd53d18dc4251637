/* SPDX-License-Identifier: GPL-2.0-or-later */

#include <linux/fiemap.h>
#include <math.h>
#include <stdbool.h>

#include "plan/layout.h"
#include "common/macro.h"

/* The disk of the model (see layout.h). */
#define LAYOUT_SETTLE_MS 1.0
#define LAYOUT_FULL_STROKE_MS 15.0
#define LAYOUT_ROTATION_MS 4.17         /* half a turn at 7200 rpm */

double layout_seek_ms(uint64_t distance, uint64_t device_bytes) {
        double ratio;

        /* An unknown device size makes every real jump a full stroke rather than a division by zero. */
        if (distance == 0)
                ratio = 0;
        else if (device_bytes == 0 || distance >= device_bytes)
                ratio = 1;
        else
                ratio = (double) distance / (double) device_bytes;

        return LAYOUT_SETTLE_MS + LAYOUT_FULL_STROKE_MS * sqrt(ratio) + LAYOUT_ROTATION_MS;
}

static double transfer_ms(uint64_t bytes) {
        return (double) bytes * 1000.0 / LAYOUT_TRANSFER_BPS;
}

void layout_walker_init(LayoutWalker *w, uint64_t device_bytes) {
        *w = (LayoutWalker) {
                .device_bytes = device_bytes,
        };
}

/* One physical run read after the previous one: the model's single step, shared by files and traces. */
static void walker_step(LayoutWalker *w, uint64_t physical, uint64_t length) {
        uint64_t end = physical + length;

        if (!w->started) {
                w->q.modeled_read_ms += layout_seek_ms(0, w->device_bytes);
                w->lo = physical;
                w->hi = end;
                w->started = 1;
        } else {
                /* Starting where the previous run ended costs nothing: the head is already there. */
                if (physical > w->next && physical - w->next <= LAYOUT_SHORT_GAP) {
                        /* Reading over a short gap is cheaper than a seek. */
                        w->q.discontinuities++;
                        w->q.modeled_read_ms += transfer_ms(physical - w->next);
                } else if (physical != w->next) {
                        uint64_t distance = physical > w->next ? physical - w->next : w->next - physical;

                        w->q.discontinuities++;
                        w->q.modeled_read_ms += layout_seek_ms(distance, w->device_bytes);
                }
                w->lo = MIN(w->lo, physical);
                w->hi = MAX(w->hi, end);
        }

        w->q.modeled_read_ms += transfer_ms(length);
        w->next = end;
}

bool layout_extent_has_blocks(const Extent *e) {
        return e->length > 0 && !(e->flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DATA_INLINE));
}

void layout_walker_add_file(LayoutWalker *w, const Extent *extents, size_t n) {
        bool any = false;

        for (size_t i = 0; i < n; i++) {
                const Extent *e = &extents[i];

                if (!layout_extent_has_blocks(e))
                        continue;

                walker_step(w, e->physical, e->length);
                w->q.extents++;
                w->q.bytes += e->length;
                any = true;
        }

        if (any)
                w->q.files++;
}

void layout_walker_finish(LayoutWalker *w, LayoutQuality *ret) {
        LayoutQuality q = w->q;

        q.span = w->started ? w->hi - w->lo : 0;
        *ret = q;
}

double layout_model_requests_ms(const uint64_t *offsets, const uint64_t *lengths, size_t n, uint64_t device_bytes) {
        LayoutWalker w;

        layout_walker_init(&w, device_bytes);
        for (size_t i = 0; i < n; i++) {
                if (lengths[i] == 0)
                        continue;
                walker_step(&w, offsets[i], lengths[i]);
        }

        return w.q.modeled_read_ms;
}
