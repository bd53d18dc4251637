/* SPDX-License-Identifier: GPL-2.0-or-later */

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/macro.h"
#include "prefetch/prefetch-guard.h"

static const char *const prefetch_veto_table[_PREFETCH_VETO_MAX] = {
        [PREFETCH_VETO_NONE] = "none",
        [PREFETCH_VETO_OFF_FILE] = "off for this boot",
        [PREFETCH_VETO_LOW_MEMORY] = "low memory",
        [PREFETCH_VETO_PRESSURE] = "memory pressure",
        [PREFETCH_VETO_ABANDONED] = "no longer wanted",
};

DEFINE_STRING_TABLE(prefetch_veto, PrefetchVeto);

/* MemAvailable in bytes, UINT64_MAX if it cannot be read. */
static uint64_t mem_available(const char *path) {
        _cleanup_fclose_ FILE *f = fopen(path ?: "/proc/meminfo", "re");
        char line[256];

        while (f && fgets(line, sizeof line, f)) {
                unsigned long long kib;

                if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
                        return (uint64_t) kib * 1024;
        }
        return UINT64_MAX;
}

/* "some avg10=" of a PSI file, -1 if it cannot be read. */
static double pressure_some_avg10(const char *path) {
        _cleanup_fclose_ FILE *f = fopen(path ?: "/proc/pressure/memory", "re");
        char line[256];

        while (f && fgets(line, sizeof line, f)) {
                double v;

                if (sscanf(line, "some avg10=%lf", &v) == 1)
                        return v;
        }
        return -1;
}

PrefetchVeto prefetch_guard_check(const PrefetchGuard *g, uint64_t *ret_available, double *ret_pressure) {
        uint64_t avail = UINT64_MAX;
        double pressure = -1;
        PrefetchVeto v = PREFETCH_VETO_NONE;

        if (g->abandon && atomic_load(g->abandon))
                v = PREFETCH_VETO_ABANDONED;
        else if (g->off_file && access(g->off_file, F_OK) == 0)
                v = PREFETCH_VETO_OFF_FILE;
        if (v == PREFETCH_VETO_NONE && g->min_available_bytes > 0) {
                avail = mem_available(g->meminfo_path);
                if (avail != UINT64_MAX && avail < g->min_available_bytes)
                        v = PREFETCH_VETO_LOW_MEMORY;
        }
        if (v == PREFETCH_VETO_NONE && g->max_pressure > 0) {
                pressure = pressure_some_avg10(g->pressure_path);
                if (pressure > g->max_pressure)
                        v = PREFETCH_VETO_PRESSURE;
        }
        if (ret_available)
                *ret_available = avail;
        if (ret_pressure)
                *ret_pressure = pressure;
        return v;
}

bool prefetch_guard_should_stop(void *userdata) {
        return prefetch_guard_check(userdata, NULL, NULL) != PREFETCH_VETO_NONE;
}
