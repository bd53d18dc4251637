/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The prefetch of a profile on the daemon's watched filesystems (manager-prefetch.c). */

#include <stdint.h>
#include <systemd/sd-bus.h>

#include "fs/mounts.h"
#include "prefetch/prefetch-guard.h"
#include "prefetch/prefetch.h"

/* The file in the run directory (--run-dir=, /run/seekless) that turns the prefetch off for this boot
 * (seekless.conf(5)). */
#define PREFETCH_OFF_FILE "no-prefetch"

#define PREFETCH_OFF_NON_ROTATIONAL "non-rotational (PrefetchNonRotational=no)"

typedef struct Manager Manager;

/* One filesystem's part of a profile's prefetch. */
typedef struct PrefetchFsResult {
        char *mount;
        const char *skipped;            /* why it was not prefetched (static text), NULL if it was */
        int r;                          /* < 0: it failed (the plan or the device) */
        PrefetchStats st;
} PrefetchFsResult;

typedef struct PrefetchResult {
        char *profile;
        PrefetchFsResult *fs;
        size_t n_fs;
} PrefetchResult;

/* On the loop: r < 0 the prefetch failed as a whole (-ENOENT: no such profile), else res says what each
 * watched filesystem got (also logged). */
typedef void (*ManagerPrefetchDone)(Manager *m, int r, const PrefetchResult *res, void *userdata);

/* Prefetch profile on every watched filesystem that holds some of it, on the prefetch worker (the plans open
 * every file by handle and read its extents); done runs on the loop. Refused at once (done not called):
 * -EOPNOTSUPP with Prefetch=no, -EAGAIN when the guard vetoes it (the off file, the memory floor, memory
 * pressure), the reason in why; -ENOMEM. start_by_usec (CLOCK_MONOTONIC, 0: none): a job whose turn comes
 * later skips every filesystem ("started too late for its launch"). abandon (NULL: none): set, the job stops
 * or does not start (the guard's "no longer wanted"); it must outlive the job. */
int manager_prefetch(Manager *m, const char *profile, uint64_t start_by_usec, const atomic_bool *abandon,
                     ManagerPrefetchDone done, void *userdata, char *why, size_t why_size);

/* Why the watched filesystem fs gets no prefetch, as the property PrefetchOff says it (written to buf, which
 * is returned): "Prefetch=no", "off for this boot (RUN_DIR/no-prefetch)" or "non-rotational
 * (PrefetchNonRotational=no)"; NULL if it gets one. What stops a prefetch only for a while (the memory floor,
 * memory pressure) is not said here: a prefetch refused for it says so. */
const char *manager_prefetch_refusal(Manager *m, const Filesystem *fs, char *buf, size_t n);

/* The D-Bus method Prefetch (dbus/org.seekless.Seekless1.xml): root only, the reply once the prefetch ran. */
int manager_method_prefetch(sd_bus_message *message, void *userdata, sd_bus_error *error);
