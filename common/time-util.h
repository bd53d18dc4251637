/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/macro.h"

/* The time of a clock in microseconds. */
static inline uint64_t now_usec(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

/* Three ways to write a duration, one for each kind of reader. */
typedef enum TimespanStyle {
        TIMESPAN_TWO_UNITS,     /* "0", "250us", "850ms", "4.2s", "3min 5s", "2h 10min", "3d 4h": seeklessctl */
        TIMESPAN_ONE_UNIT,      /* "45 s", "4 min", "3 h" (up to 48 h), "5 d", rounded down: status texts */
        TIMESPAN_EXACT,         /* "30s", "1d", "500ms": the largest unit dividing it, as the config writes it */
} TimespanStyle;

#define FORMAT_TIMESPAN_MAX 32

/* usec written in the given style into buf (l bytes, truncated to fit). Returns buf. */
char *format_timespan(char *buf, size_t l, uint64_t usec, TimespanStyle style);
