/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stddef.h>
#include <string.h>

#include "common/macro.h"
#include "store/profile-kind.h"

static const char *const profile_kind_table[_PROFILE_KIND_MAX] = {
        [PROFILE_BOOT] = "boot",
        [PROFILE_APP] = "app",
};

DEFINE_STRING_TABLE(profile_kind, ProfileKind)
