/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <sys/types.h>

/* What kind a profile is: the boot's or a program's, the system's or a user's. Apart from db.h, so that the
 * recorder's sessions (and the boot collector, which has no SQLite) say it without the store's interface. */

/* The strings are what the store keeps (profiles.kind): never change one. */
typedef enum ProfileKind {
        PROFILE_BOOT,
        PROFILE_APP,
        _PROFILE_KIND_MAX,
        _PROFILE_KIND_INVALID = -EINVAL,
} ProfileKind;

const char *profile_kind_to_string(ProfileKind k);      /* "boot", "app" */
ProfileKind profile_kind_from_string(const char *s);

/* A profile is the system's when the lowest real uid that recorded it is at most this (root and the
 * system accounts, by Debian's convention: users' accounts start at 1000), else a user's. A profile
 * whose uid is unknown (UID_INVALID: recorded by an older seekless, or the launcher's uid could not be
 * read) counts as a user's. The system's profiles come first in the layout and are evicted last. */
#define SYSTEM_UID_MAX 999
#define UID_INVALID ((uid_t) -1)

static inline bool uid_is_system(uid_t uid) {
        return uid <= SYSTEM_UID_MAX;
}
