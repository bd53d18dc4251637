/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>

#include "relocate/mover.h"

/* A file's hot ranges are items of their own, so a run's counts of files group its items by file (the
 * same FileKey). ret_slot[i] is item i's file, numbered 0..*ret_n_files-1 in the order of each file's
 * first item. Returns 0 or -ENOMEM; n 0 gives a NULL array and 0 files. */
int move_items_files(const MoveItem *items, size_t n, size_t **ret_slot, size_t *ret_n_files);
