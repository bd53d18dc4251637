/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdlib.h>

#include "common/macro.h"

/* Makes *p, an array of *allocated elements of size bytes, hold at least need elements: doubling, at least
 * 16 at a time. 0, or -ENOMEM with *p and *allocated unchanged. */
static inline int greedy_realloc(void **p, size_t *allocated, size_t need, size_t size) {
        size_t a;
        void *q;

        if (need <= *allocated)
                return 0;
        a = MAX(need, MAX(*allocated * 2, (size_t) 16));
        q = reallocarray(*p, a, size);
        if (!q)
                return -ENOMEM;
        *p = q;
        *allocated = a;
        return 0;
}

#define GREEDY_REALLOC(array, allocated, need) \
        greedy_realloc((void **) &(array), &(allocated), (need), sizeof((array)[0]))
