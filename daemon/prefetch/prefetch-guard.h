/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Whether a prefetch may start, and go on: never when the administrator switched it off for this boot (a
 * file, as systemd's readahead had its "noreplay"), never below a floor of available memory (a prefetch
 * that pushes out pages someone needs costs more than it saves), and it stops when the kernel reports memory
 * pressure (PSI). Asked before a run and, through prefetch_guard_should_stop(), during it. */

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum PrefetchVeto {
        PREFETCH_VETO_NONE,
        PREFETCH_VETO_OFF_FILE,         /* the off file exists */
        PREFETCH_VETO_LOW_MEMORY,       /* MemAvailable below the floor */
        PREFETCH_VETO_PRESSURE,         /* memory pressure ("some", avg10) above the limit */
        PREFETCH_VETO_ABANDONED,        /* its caller no longer wants it (the boot it was for is over) */
        _PREFETCH_VETO_MAX,
        _PREFETCH_VETO_INVALID = -EINVAL,
} PrefetchVeto;

const char *prefetch_veto_to_string(PrefetchVeto v);     /* "none", "off for this boot", "low memory", ... */
PrefetchVeto prefetch_veto_from_string(const char *s);

typedef struct PrefetchGuard {
        const atomic_bool *abandon;     /* NULL: none; true: the prefetch is no longer wanted */
        const char *off_file;           /* NULL: none */
        uint64_t min_available_bytes;   /* 0: no floor */
        double max_pressure;            /* percent of the last 10 s; 0: not looked at */
        const char *meminfo_path;       /* NULL: /proc/meminfo */
        const char *pressure_path;      /* NULL: /proc/pressure/memory (absent without PSI: never a veto) */
} PrefetchGuard;

/* What stops a prefetch now, PREFETCH_VETO_NONE if nothing does; *ret_available (bytes, UINT64_MAX when
 * it could not be read: then no floor applies) and *ret_pressure (-1 when not read) say what was seen. */
PrefetchVeto prefetch_guard_check(const PrefetchGuard *g, uint64_t *ret_available, double *ret_pressure);

/* PrefetchOptions.should_stop for a const PrefetchGuard *userdata: any veto stops a run under way. */
bool prefetch_guard_should_stop(void *userdata);
