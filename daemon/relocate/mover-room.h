/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "relocate/donor.h"
#include "relocate/mover.h"

/* Clear a window for a donor of `blocks` blocks below where the one-range donor would go (see room.h): plan
 * it, move the files that hold it elsewhere with a nested mover_run() (a donor the allocator places itself,
 * never aimed low), commit, and fill *ret's start and floor (for donor_allocate()), and its pilot (made
 * before the window is chosen, see donor_pilot_create(): donor_allocate() takes it over). The
 * files in items[] are never moved out (their cells are not used). Fills st->room_* for what was moved.
 * Returns 1 with *ret set when the window is clear, 0 when
 * there is none worth clearing or clearing it failed (nothing was lost: files moved out stay moved, whole),
 * or a negative errno for failures that should stop the run (cancelled: -ECANCELED). */
int mover_make_room(const MoverOptions *o, const MoveItem *items, size_t n, uint64_t blocks, uint64_t bsize,
                    DonorWindow *ret, MoverStats *st);
