/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>

#include "fs/mounts.h"
#include "record/session.h"

/* The boot reads files before seeklessd can watch it: PID 1 loads its program and libraries, journald and
 * udevd start, seeklessd itself is loaded. Whatever those processes still map when the boot session opens
 * is added to the session first, in pid order (the order they started in) and within a process in the
 * order of /proc/PID/maps. Only files on the watched filesystems count, and only if the path still names
 * the mapped inode. `proc` is "/proc" (a parameter for tests). `only_pid` > 0 seeds that process alone
 * (0 for all). Returns the number of files added, or a negative errno if `proc` can't be listed (or
 * -ENOMEM). */
int boot_seed_from_maps(Session *s, const FilesystemList *watched, const char *proc, pid_t only_pid, uint64_t now_usec);
