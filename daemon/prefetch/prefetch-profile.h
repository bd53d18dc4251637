/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* What a stored profile gives a prefetch, for one filesystem: its files there (by handle, with their size
 * as recorded), its merged ranges in layout order (the order its starts read them), and the metadata its
 * newest session that recorded any read on that filesystem's device. The input of prefetch_plan_build(). */

#include <stdint.h>

#include "prefetch/prefetch-plan.h"
#include "store/db.h"

typedef struct PrefetchProfile {
        PrefetchInput input;            /* points into the arrays below */
        PrefetchFile *files;
        PrefetchSpan *data, *metadata;
} PrefetchProfile;

/* Loads profile name's input for the filesystem fsid. -ENOENT: no such profile; a profile with nothing
 * on that filesystem gives an empty input. */
int prefetch_profile_load(Db *db, const char *name, uint64_t fsid, PrefetchProfile *ret);
void prefetch_profile_done(PrefetchProfile *p);
