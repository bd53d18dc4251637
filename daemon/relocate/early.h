/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "policy/conf.h"
#include "fs/mounts.h"

/* The early-boot pass (seeklessd --early-pass, from seekless-early.service): right after the root
 * filesystem becomes writable and before most services start, move the files earlier runs had to leave
 * because they were running executables, within EarlyBudgetSec=. No fanotify, no D-Bus: just the database
 * and the mover. Returns 0 (also when there was nothing to do or the budget ran out), or a negative errno. */
int early_pass_run(const Config *c, const char *db_path, const char *state_dir, const FilesystemPins *only_filesystems);
